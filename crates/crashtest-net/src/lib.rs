//! crashtest's simulated network: tokio-shaped TCP and UDP sockets between simulated nodes,
//! with a fault model drawn from the run's seed.
//!
//! User code is ordinary async Rust: [`TcpListener`], [`TcpStream`] (tokio's `AsyncRead` and
//! `AsyncWrite`, so `tokio::io` helpers and `tokio_util::codec` work unchanged), its
//! [`tcp`] halves, [`UdpSocket`] and [`lookup_host`] have the names, shapes and error kinds of
//! `tokio::net`, and are `Send` and `Sync` like them. Inside a simulation a socket belongs to
//! the node whose task creates it; node `i` has the address `10.0.0.<i>` (see [`ip_of`]) and
//! its name resolves to it. Outside a simulation the same types are tokio's sockets, so one
//! binary runs both in tests and in production.
//!
//! # The contract: what a correct program may assume
//!
//! - TCP delivers each connection's bytes exactly once and in order, or fails the connection
//!   with an error (`ConnectionReset`, `TimedOut`, `BrokenPipe`, end of stream). Faults show
//!   as delay (latency with a long tail, clogs), stalls (partitions: data waits, then arrives
//!   when healed, or the sender times out after `tcp_timeout`), resets (random resets, a
//!   killed or restarted peer, writing to a peer that closed), refused or timed-out
//!   connects, partial writes and backpressure (a full buffer makes writes wait).
//! - UDP may lose, duplicate and reorder datagrams, and drops them across partitions and on
//!   receive-queue overflow; it never corrupts or splits one.
//! - A killed node's connections reset (its peers read `ConnectionReset` once the RST
//!   arrives). With `NetConfig::kill_resets` off it is a machine that lost its power: its
//!   connections vanish without a word, what its peers send it stalls until it restarts
//!   (then its kernel, knowing no such connection, answers with an RST) or their
//!   `tcp_timeout` runs out (`TimedOut`), and a peer that only reads waits, as on a real
//!   network, for its own timeout. A paused node stops reading (its data waits in buffers,
//!   its peers' writes block when the buffers fill) and continues when resumed.
//!
//! # The fault model
//!
//! [`configure`] installs a [`NetConfig`] for the run: a latency distribution, UDP loss,
//! duplication and reordering, partial writes, random resets, buffer sizes and timeouts. The
//! default is a healthy but realistic network.
//! The test body steers faults with [`partition`], [`partition_one_way`], [`heal`],
//! [`heal_all`], [`clog_link`], [`clog_node`] and [`swizzle`]. Every decision draws from the
//! run's `"network"` stream, every packet and fault is an event of the trace (so it feeds the
//! fingerprint), and every fault is listed in a failure report. Drawn faults go through
//! `crashtest::fault::inject`, so a failing run can be replayed with any of them masked;
//! the run's heal (`crashtest::fault::heal_all`, the liveness phase) ends every
//! partition and clog and stops new faults.
//!
//! # Example
//!
//! ```
//! # mod crashtest { pub use crashtest_core::*; pub use crashtest_net as net; }
//! use crashtest::net::{TcpListener, TcpStream};
//! use crashtest::{node, time, Sim};
//! use std::time::Duration;
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! Sim::new(7).run(async {
//!     let server = node::create("server", || async {
//!         let listener = TcpListener::bind("0.0.0.0:4000").await.unwrap();
//!         loop {
//!             let (mut stream, _) = listener.accept().await.unwrap();
//!             crashtest::spawn(async move {
//!                 let mut buf = [0; 4];
//!                 while stream.read_exact(&mut buf).await.is_ok() {
//!                     let n = u32::from_be_bytes(buf) + 1;
//!                     stream.write_all(&n.to_be_bytes()).await.unwrap();
//!                 }
//!             });
//!         }
//!     });
//!     time::sleep(Duration::from_millis(1)).await;
//!     let mut stream = TcpStream::connect("server:4000").await.unwrap();
//!     stream.write_all(&41u32.to_be_bytes()).await.unwrap();
//!     let mut reply = [0; 4];
//!     stream.read_exact(&mut reply).await.unwrap();
//!     assert_eq!(u32::from_be_bytes(reply), 42);
//!
//!     // Cut the client off: the next request stalls until the partition heals.
//!     crashtest::net::partition(node::current().id(), server.id());
//!     stream.write_all(&1u32.to_be_bytes()).await.unwrap();
//!     let stalled = time::timeout(Duration::from_secs(1), stream.read_exact(&mut reply)).await;
//!     assert!(stalled.is_err());
//!     crashtest::net::heal(node::current().id(), server.id());
//!     stream.read_exact(&mut reply).await.unwrap();
//!     assert_eq!(u32::from_be_bytes(reply), 2);
//! }).unwrap();
//! ```
//!
//! Layout: `addr` (addresses, resolution), `config` (the knobs), `links` (partitions and
//! clogs), `ports`, `fabric` (the per-run state and its seam to the core), [`tcp`], `udp`,
//! `control` (the test's API) and `tokio_seam` (this network as the tokio stand-in sees
//! it). Faults on a schedule (a nemesis, random partitions and clogging) are orchestrated
//! from outside, by `crashtest::nemesis`, through `control`.
// The crate-level example is written as users write it, with the facade's paths
// (`crashtest::...`). The facade depends on this crate, so depending on it here, even for
// doc tests, would be a cycle: the example's hidden first line maps those paths onto the
// crates the facade re-exports instead.

mod addr;
mod config;
mod control;
mod errors;
mod fabric;
mod hold;
mod id_map;
mod links;
mod ports;
pub mod tcp;
mod tokio_seam;
mod udp;

pub use addr::{ToSocketAddrs, ip_of, lookup_host, resolve_host};
pub use config::{Latency, NetConfig};
pub use control::{
    clog_link, clog_node, configure, heal, heal_all, partition, partition_one_way, swizzle,
};
pub use hold::{PortHold, hold_port};
pub use tcp::{TcpListener, TcpStream};
pub use tokio_seam::register_tokio_seam;
pub use udp::UdpSocket;
