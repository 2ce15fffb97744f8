//! The store's client: finds the leader, sends it a command, and says how sure it is of the
//! outcome.
//!
//! A command goes to the server the client believes leads. A server that does not lead
//! answers `NotLeader` (with the leader it knows of) having done nothing, and an unreachable
//! server never got the command, so in both cases the client tries again, elsewhere, with the
//! same command. Once a command has been sent, though, a timeout or a broken connection leaves
//! its fate open: the client does *not* resend it (a second copy could take effect after a
//! later command, which no single execution explains) and reports [`CallError::Unknown`].
//! Only a command that no server ever received is reported as [`CallError::Refused`].

use std::time::Duration;

use crashtest::time;

use crate::kv::{Command, Output};
use crate::wire::{ClientReply, Connection, Reply, Request};

/// How long a client waits to connect to a server.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(100);
/// How long a client waits for a sent command's answer.
const REPLY_TIMEOUT: Duration = Duration::from_millis(500);
/// Tries per call before giving up on finding a leader.
const ATTEMPTS: usize = 20;
/// The pause between two tries.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// Why a call returned no output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No server took the command: it certainly had no effect.
    Refused,
    /// The command was sent but no answer came back: it may or may not take effect.
    Unknown,
}

/// How one try ended.
enum Attempt {
    Done(Output),
    /// Not taken; try the given server, or the next one.
    Elsewhere(Option<usize>),
    Unknown,
}

/// A client of the store.
///
/// ```
/// use raft_kv::{client::Client, kv::{Command, Output}, observer::Observer, raft::{self, ServerConfig}};
/// use std::rc::Rc;
///
/// crashtest::Sim::new(2).run(async {
///     let names: Vec<String> = (0..3).map(|i| format!("s{i}")).collect();
///     let observer = Rc::new(Observer::default());
///     for id in 0..3 {
///         let (config, observer) = (ServerConfig::new(id, names.clone()), observer.clone());
///         crashtest::node::create(&names[id], move || raft::serve(config.clone(), observer.clone()));
///     }
///     let mut client = Client::new(names, 0);
///     while client.call(&Command::Put(1, 7)).await.is_err() {}
///     assert_eq!(client.call(&Command::Get(vec![1])).await, Ok(Output::Values(vec![Some(7)])));
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct Client {
    servers: Vec<String>,
    leader: usize,
}

impl Client {
    /// A client of the cluster `servers` that first tries server `first`.
    pub fn new(servers: Vec<String>, first: usize) -> Client {
        assert!(first < servers.len(), "no server {first} in {servers:?}");
        Client {
            servers,
            leader: first,
        }
    }

    fn next_server(&mut self) {
        self.leader = (self.leader + 1) % self.servers.len();
    }

    /// Runs `command` on the store.
    ///
    /// # Errors
    ///
    /// [`CallError::Refused`] if no leader took it within the tries, [`CallError::Unknown`]
    /// if it was sent and its answer never came.
    pub async fn call(&mut self, command: &Command) -> Result<Output, CallError> {
        for _ in 0..ATTEMPTS {
            match self.attempt(command).await {
                Attempt::Done(output) => return Ok(output),
                Attempt::Elsewhere(Some(leader)) if leader != self.leader => self.leader = leader,
                Attempt::Elsewhere(_) => self.next_server(),
                Attempt::Unknown => {
                    // The server may be dead or cut off: look elsewhere next time.
                    self.next_server();
                    return Err(CallError::Unknown);
                }
            }
            time::sleep(RETRY_PAUSE).await;
        }
        Err(CallError::Refused)
    }

    async fn attempt(&mut self, command: &Command) -> Attempt {
        let server = &self.servers[self.leader];
        let Ok(Ok(mut connection)) =
            time::timeout(CONNECT_TIMEOUT, Connection::connect(server)).await
        else {
            return Attempt::Elsewhere(None);
        };
        // From here on the command may reach the server.
        let exchange = async {
            connection.send(&Request::Client(command.clone())).await?;
            connection.recv::<Reply>().await
        };
        match time::timeout(REPLY_TIMEOUT, exchange).await {
            Ok(Ok(Some(Reply::Client(ClientReply::Done(output))))) => Attempt::Done(output),
            Ok(Ok(Some(Reply::Client(ClientReply::NotLeader(leader))))) => {
                Attempt::Elsewhere(leader)
            }
            _ => Attempt::Unknown,
        }
    }
}
