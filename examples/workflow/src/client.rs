//! The engine's client of the side-effect service: one request at a time, retried until it
//! is answered.
//!
//! Any error or a reply slower than [`REQUEST_TIMEOUT`] drops the connection (a late reply on
//! it could be mistaken for the next one's), waits a growing, jittered backoff, reconnects
//! and sends the same request again. Resending is safe because the request carries the
//! step's journaled idempotency key: the service applies a key once and answers every repeat
//! with the first answer. [`Bug::KeyPerAttempt`] breaks exactly that.

use std::io;
use std::time::Duration;

use crashtest::net::TcpStream;
use crashtest::time;

use crate::bug::Bug;
use crate::protocol::{self, Connection, PORT, Reply, Request};

/// How long a request (connecting included) may take before it is tried again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// The first backoff; it doubles per failed attempt up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// A connection to the service, made on first use and remade after a failure.
#[derive(Debug)]
pub struct Client {
    connection: Option<Connection>,
    bug: Bug,
}

impl Client {
    /// A client that has not connected yet.
    pub fn new(bug: Bug) -> Client {
        Client {
            connection: None,
            bug,
        }
    }

    /// Sends `request` until the service answers it.
    pub async fn apply(&mut self, mut request: Request) -> Reply {
        let mut backoff = FIRST_BACKOFF;
        loop {
            if self.bug == Bug::KeyPerAttempt {
                request.key = crate::fresh_key();
            }
            match time::timeout(REQUEST_TIMEOUT, self.attempt(&request)).await {
                Ok(Ok(reply)) => return reply,
                Ok(Err(_)) | Err(_) => {
                    self.connection = None;
                    let jitter = crashtest::rand::rng().with(|r| r.below_inclusive(10));
                    time::sleep(backoff + backoff * jitter as u32 / 10).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    async fn attempt(&mut self, request: &Request) -> io::Result<Reply> {
        let connection = match &mut self.connection {
            Some(connection) => connection,
            None => {
                let stream = TcpStream::connect(("service", PORT)).await?;
                self.connection.insert(protocol::framed(stream))
            }
        };
        protocol::send(connection, request).await?;
        let reply: Reply = protocol::receive(connection).await?;
        if reply.key != request.key {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("reply for key {:x} to request {:x}", reply.key, request.key),
            ));
        }
        Ok(reply)
    }
}
