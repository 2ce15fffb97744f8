//! The wire protocol: the messages servers and clients exchange, and a framed connection to
//! carry them.
//!
//! Every connection is a sequence of request/reply pairs: the side that connected sends a
//! [`Request`] and waits for its [`Reply`] before sending the next. Messages are encoded with
//! bincode inside length-delimited frames (`tokio_util`'s codec), so a stream of bytes cut
//! anywhere by the network never yields half a message. A frame that does not decode is an
//! `InvalidData` error, and the connection is dropped.

use std::io;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crashtest::net::TcpStream;

use crate::kv::{Command, Output};
use crate::raft::log::Entry;

/// The port every server listens on, for its peers and its clients.
pub const PORT: u16 = 7000;

/// What a connection's opener asks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Request {
    /// A candidate asks for a vote.
    Vote(VoteRequest),
    /// A leader replicates entries (none for a heartbeat).
    Append(AppendRequest),
    /// A client asks for a command to be run.
    Client(Command),
}

/// The answer to a [`Request`], of the same kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Reply {
    /// The answer to [`Request::Vote`].
    Vote(VoteReply),
    /// The answer to [`Request::Append`].
    Append(AppendReply),
    /// The answer to [`Request::Client`].
    Client(ClientReply),
}

/// Raft's RequestVote arguments.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VoteRequest {
    /// The candidate's term.
    pub term: u64,
    /// The candidate's id.
    pub candidate: usize,
    /// The index of the candidate's last log entry.
    pub last_index: u64,
    /// The term of the candidate's last log entry.
    pub last_term: u64,
}

/// Raft's RequestVote results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VoteReply {
    /// The voter's term, for the candidate to catch up.
    pub term: u64,
    /// Whether the voter voted for the candidate.
    pub granted: bool,
}

/// Raft's AppendEntries arguments.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AppendRequest {
    /// The leader's term.
    pub term: u64,
    /// The leader's id, so that followers can send clients to it.
    pub leader: usize,
    /// The index of the entry just before `entries`.
    pub prev_index: u64,
    /// The term of that entry.
    pub prev_term: u64,
    /// Entries to store, from `prev_index + 1` on.
    pub entries: Vec<Entry>,
    /// The leader's commit index.
    pub leader_commit: u64,
}

/// Raft's AppendEntries results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AppendReply {
    /// The follower's term, for the leader to catch up.
    pub term: u64,
    /// Whether the follower's log matched at `prev_index` and now holds the entries.
    pub success: bool,
    /// On success the index of the last entry the request covered; on failure the last index
    /// worth retrying from, so that the leader backs up in one step instead of one per entry.
    pub last_index: u64,
}

/// A server's answer to a client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientReply {
    /// The command was committed and applied; this is what it returned.
    Done(Output),
    /// This server is not the leader and did nothing; the leader it knows of, if any.
    NotLeader(Option<usize>),
}

/// A framed connection carrying bincode-encoded messages.
///
/// ```
/// use raft_kv::wire::{Connection, PORT};
///
/// crashtest::Sim::new(1).run(async {
///     crashtest::node::create("echo", || async {
///         let listener = crashtest::net::TcpListener::bind(("0.0.0.0", PORT)).await.unwrap();
///         let (stream, _) = listener.accept().await.unwrap();
///         let mut connection = Connection::new(stream);
///         let word: String = connection.recv().await.unwrap().unwrap();
///         connection.send(&word.len()).await.unwrap();
///     });
///     crashtest::time::sleep(std::time::Duration::from_millis(1)).await;
///     let mut connection = Connection::connect("echo").await.unwrap();
///     connection.send(&"hello").await.unwrap();
///     assert_eq!(connection.recv::<usize>().await.unwrap(), Some(5));
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct Connection {
    framed: Framed<TcpStream, LengthDelimitedCodec>,
}

impl Connection {
    /// Wraps an accepted or connected stream.
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            framed: Framed::new(stream, LengthDelimitedCodec::new()),
        }
    }

    /// Connects to the server called `name`.
    ///
    /// # Errors
    ///
    /// The connect's error: refused, timed out, unreachable.
    pub async fn connect(name: &str) -> io::Result<Connection> {
        Ok(Connection::new(TcpStream::connect((name, PORT)).await?))
    }

    /// Sends one message.
    ///
    /// # Errors
    ///
    /// The stream's error, if the connection broke.
    pub async fn send(&mut self, message: &impl Serialize) -> io::Result<()> {
        let bytes = bincode::serialize(message).map_err(io::Error::other)?;
        self.framed.send(Bytes::from(bytes)).await
    }

    /// Receives one message; `None` when the other side closed the connection.
    ///
    /// # Errors
    ///
    /// The stream's error, or `InvalidData` for a frame that is not a message.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> io::Result<Option<T>> {
        match self.framed.next().await {
            None => Ok(None),
            Some(frame) => bincode::deserialize(&frame?)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        }
    }
}
