//! The side-effect service's wire protocol: one JSON message per length-delimited frame.
//!
//! A client sends a [`Request`] and waits for its [`Reply`] before sending the next one on
//! the same connection, so replies need no request ids; the reply echoes the idempotency key
//! so that a client can still tell a stale reply from the one it waits for.

use std::io;

use bytes::Bytes;
use crashtest::net::TcpStream;
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::workflow::Action;

/// The service's port on its node.
pub const PORT: u16 = 7000;

/// Apply one effect, unless an effect with the same idempotency key was applied already.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The idempotency key: the service applies each key at most once.
    pub key: u64,
    /// The workflow the effect belongs to.
    pub workflow: u32,
    /// The step's index in its workflow.
    pub step: u32,
    /// What to do.
    pub action: Action,
    /// The step's input (the previous step's output).
    pub input: u64,
}

/// The outcome of a request: the effect's output, the same for every request with its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The request's idempotency key.
    pub key: u64,
    /// What the effect produced (a receipt, a seat, a message id).
    pub output: u64,
}

/// A TCP connection carrying framed messages.
pub type Connection = Framed<TcpStream, LengthDelimitedCodec>;

/// Frames `stream`.
pub fn framed(stream: TcpStream) -> Connection {
    Framed::new(stream, LengthDelimitedCodec::new())
}

/// Sends one message as a frame.
pub async fn send<T: Serialize>(connection: &mut Connection, message: &T) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    connection.send(Bytes::from(bytes)).await
}

/// Receives one message; the end of the stream is `UnexpectedEof`.
pub async fn receive<T: for<'de> Deserialize<'de>>(connection: &mut Connection) -> io::Result<T> {
    match connection.next().await {
        Some(frame) => serde_json::from_slice(&frame?)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        None => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}
