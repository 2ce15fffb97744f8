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

use crate::id_map::IdMap;

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
