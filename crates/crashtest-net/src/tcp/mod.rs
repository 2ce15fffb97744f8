//! TCP: listeners, streams and the halves of a stream, shaped like `tokio::net` and
//! `tokio::net::tcp`.
//!
//! A correct program sees TCP's contract: no loss, duplication or reordering. The faults show
//! as delay (latency, clogs), stalls that heal or time out (partitions), resets (random resets,
//! killed peers, writes to a closed peer), refused connects and partial writes.
//!
//! Inside: `conn` holds a connection's two ends and two pipes (the byte-stream state),
//! `transfer` moves bytes (writes, deliveries, reads, closes, resets), `connect` does the
//! handshake, and `listener`, `stream` and `split` are the public types.

mod byte_queue;
mod conn;
mod connect;
mod listener;
mod split;
mod stream;
mod transfer;

use std::collections::{BTreeMap, BTreeSet};
use std::task::Waker;

use crate::id_map::IdMap;

pub(crate) use connect::Connect;
pub use listener::TcpListener;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub(crate) use stream::Shared;
pub use stream::TcpStream;

/// The TCP part of the network's state.
#[derive(Debug, Default)]
pub(crate) struct TcpTables {
    conns: IdMap<conn::Conn>,
    listeners: BTreeMap<u64, listener::ListenerState>,
    connecting: BTreeMap<u64, connect::Connecting>,
    /// Pipes whose delivery is on hold, by (connection, direction): what a heal releases.
    held: BTreeSet<(u64, usize)>,
}

impl TcpTables {
    /// Calls `waiting` with every waker a task left here and what it waits for (a deadlock's
    /// report names them): connections in id order, each end's readers then writers, then
    /// connects and listeners.
    pub(crate) fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
        for (_, conn) in self.conns.iter() {
            for side in 0..2 {
                let (end, peer) = (&conn.ends[side], conn.ends[1 - side].local);
                let reading = format!("reading tcp {} <- {peer}", end.local);
                end.read_waiters.iter().for_each(|w| waiting(w, &reading));
                let writing = format!("writing tcp {} -> {peer}", end.local);
                end.write_waiters.iter().for_each(|w| waiting(w, &writing));
            }
        }
        for connect in self.connecting.values() {
            connect.waits(waiting);
        }
        for listener in self.listeners.values() {
            listener.waits(waiting);
        }
    }
}
