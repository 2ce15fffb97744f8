//! The gRPC service (tonic) over the store, and a client.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

use crate::pb::kv_client::KvClient;
use crate::pb::kv_server::Kv;
use crate::pb::{GetReply, GetRequest, PutReply, PutRequest};
use crate::store::Store;

/// The service: puts and gets on the store.
#[derive(Debug)]
pub struct KvService {
    store: Arc<Store>,
}

impl KvService {
    /// The service over `store`.
    pub fn new(store: Arc<Store>) -> KvService {
        KvService { store }
    }
}

#[tonic::async_trait]
impl Kv for KvService {
    async fn put(&self, request: Request<PutRequest>) -> Result<Response<PutReply>, Status> {
        let PutRequest { key, value } = request.into_inner();
        self.store
            .put(&key, &value)
            .await
            .map_err(|e| Status::unavailable(format!("the write failed: {e}")))?;
        Ok(Response::new(PutReply {}))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetReply>, Status> {
        let value = self.store.get(&request.into_inner().key).await;
        Ok(Response::new(GetReply { value }))
    }
}

/// A client of the service at `url` (`http://host:port`): it connects when first used and
/// reconnects after failures, with timeouts on connecting and on each call.
///
/// # Errors
///
/// If `url` is not a valid URI.
pub fn client(url: &str) -> Result<KvClient<Channel>, tonic::transport::Error> {
    let channel = Endpoint::from_shared(url.to_owned())?
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(2))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5))
        .connect_lazy();
    Ok(KvClient::new(channel))
}

/// Puts `value` under `key` through `client`.
///
/// # Errors
///
/// The call's status: the outcome is unknown unless it is `Ok`.
pub async fn put(client: &mut KvClient<Channel>, key: &str, value: &str) -> Result<(), Status> {
    let request = PutRequest {
        key: key.to_owned(),
        value: value.to_owned(),
    };
    client.put(request).await.map(|_| ())
}

/// The value under `key`, through `client`.
///
/// # Errors
///
/// The call's status.
pub async fn get(client: &mut KvClient<Channel>, key: &str) -> Result<Option<String>, Status> {
    let request = GetRequest {
        key: key.to_owned(),
    };
    Ok(client.get(request).await?.into_inner().value)
}
