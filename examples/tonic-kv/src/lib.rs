//! A key-value store served over gRPC (tonic) and HTTP (axum), with its clients (tonic's and
//! reqwest's): ordinary tokio code. Nothing here names crashtest: the same code runs in
//! production on tokio (`src/bin/kv-server.rs`) and, unmodified, in crashtest's simulations
//! (`tests/`), where tokio is crashtest's stand-in (`cargo crashtest tokio setup`).
//!
//! - [`store`]: the durable map, an append-only log with checksummed records, synced before a
//!   put is acknowledged.
//! - [`grpc`]: the tonic service and a client.
//! - [`http`]: the axum service (reads) and a reqwest client.
//! - [`server`]: both servers, with timeouts and keep-alives, as the binary runs them.
//!
//! A planted bug, selected by the environment (`TONIC_KV_BUG=unsynced-ack`), acknowledges a
//! put before its record is synced: fine until the process crashes, after which acknowledged
//! data is gone. The simulation's kills find it.

pub mod grpc;
pub mod http;
pub mod server;
pub mod store;

/// The generated gRPC code.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("kv");
}

pub use server::{Bug, Config};
