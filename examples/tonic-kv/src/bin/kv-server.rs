//! The store's server: `kv-server GRPC_ADDR HTTP_ADDR DATA_DIR`, on tokio.

use tonic_kv::{Bug, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: kv-server GRPC_ADDR HTTP_ADDR DATA_DIR";
    let config = Config {
        grpc: args.next().ok_or(usage)?.parse()?,
        http: args.next().ok_or(usage)?.parse()?,
        data: args.next().ok_or(usage)?.into(),
        bug: Bug::from_env(),
    };
    tonic_kv::server::run(config).await
}
