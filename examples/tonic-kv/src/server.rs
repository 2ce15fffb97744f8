//! Both servers, as the binary runs them: gRPC with tonic's `Server::builder()...serve(addr)`
//! (request timeout, HTTP/2 and TCP keep-alives) and HTTP with `axum::serve`.

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use crate::grpc::KvService;
use crate::pb::kv_server::KvServer;
use crate::store::Store;

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// Acknowledge a put before its record is synced.
    UnsyncedAck,
}

impl Bug {
    /// The bug `TONIC_KV_BUG` names (`unsynced-ack`), if any.
    ///
    /// # Panics
    ///
    /// Panics on an unknown name.
    pub fn from_env() -> Option<Bug> {
        match std::env::var("TONIC_KV_BUG").ok()?.as_str() {
            "" | "none" => None,
            "unsynced-ack" => Some(Bug::UnsyncedAck),
            other => panic!("TONIC_KV_BUG={other}: the known bug is unsynced-ack"),
        }
    }
}

/// Where the servers listen and keep their data.
#[derive(Clone, Debug)]
pub struct Config {
    /// The gRPC address.
    pub grpc: SocketAddr,
    /// The HTTP address.
    pub http: SocketAddr,
    /// The store's directory.
    pub data: PathBuf,
    /// A planted bug, if any.
    pub bug: Option<Bug>,
}

/// Opens the store and serves it over gRPC and HTTP until an error (or forever).
///
/// # Errors
///
/// Opening the store, binding, or a server's fatal error.
pub async fn run(config: Config) -> Result<(), Box<dyn Error + Send + Sync>> {
    let store = Arc::new(Store::open(&config.data, config.bug).await?);
    // tonic binds the gRPC address itself (std's `TcpListener::bind`, then tokio's
    // `from_std`); axum serves a listener bound with tokio.
    let grpc = Server::builder()
        .tcp_nodelay(true)
        .tcp_keepalive(Some(Duration::from_secs(30)))
        .timeout(Duration::from_secs(3))
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .http2_keepalive_timeout(Some(Duration::from_secs(5)))
        .add_service(KvServer::new(KvService::new(store.clone())))
        .serve(config.grpc);
    let http_listener = tokio::net::TcpListener::bind(config.http).await?;
    let http = axum::serve(http_listener, crate::http::router(store));
    tokio::select! {
        served = grpc => served?,
        served = http => served?,
    }
    Ok(())
}
