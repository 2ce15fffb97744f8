//! The HTTP service (axum) for reads, and a reqwest client.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;

use crate::store::Store;

/// The routes: `GET /kv/{key}` (the value, or 404) and `GET /health`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/kv/{key}", get(read))
        .route("/health", get(|| async { "ok" }))
        .with_state(store)
}

async fn read(
    State(store): State<Arc<Store>>,
    Path(key): Path<String>,
) -> Result<String, StatusCode> {
    store.get(&key).await.ok_or(StatusCode::NOT_FOUND)
}

/// A reqwest client with a timeout on each request.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(1))
        .build()
        .expect("a client without TLS builds")
}

/// The value under `key` at the service `base` (`http://host:port`): `None` for a 404.
///
/// # Errors
///
/// reqwest's, and an unexpected status.
pub async fn fetch(
    client: &reqwest::Client,
    base: &str,
    key: &str,
) -> Result<Option<String>, reqwest::Error> {
    let response = client.get(format!("{base}/kv/{key}")).send().await?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    Ok(Some(response.error_for_status()?.text().await?))
}
