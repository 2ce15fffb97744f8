//! The same server binary on real tokio, on loopback, called by the same clients.

use std::time::Duration;

/// A port free on loopback now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_server_binary_serves_grpc_and_http_on_loopback() {
    let (grpc_port, http_port) = (free_port(), free_port());
    let data = std::env::temp_dir().join(format!("tonic-kv-{}", std::process::id()));
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_kv-server"))
        .arg(format!("127.0.0.1:{grpc_port}"))
        .arg(format!("127.0.0.1:{http_port}"))
        .arg(&data)
        .env_remove("TONIC_KV_BUG")
        .spawn()
        .unwrap();
    let http = tonic_kv::http::client();
    let http_url = format!("http://127.0.0.1:{http_port}");
    let mut up = false;
    for _ in 0..100 {
        if http.get(format!("{http_url}/health")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "the server did not come up");
    let mut grpc = tonic_kv::grpc::client(&format!("http://127.0.0.1:{grpc_port}")).unwrap();
    tonic_kv::grpc::put(&mut grpc, "greeting", "hello")
        .await
        .unwrap();
    assert_eq!(
        tonic_kv::grpc::get(&mut grpc, "greeting")
            .await
            .unwrap()
            .as_deref(),
        Some("hello")
    );
    assert_eq!(
        tonic_kv::http::fetch(&http, &http_url, "greeting")
            .await
            .unwrap()
            .as_deref(),
        Some("hello")
    );
    assert_eq!(
        tonic_kv::http::fetch(&http, &http_url, "missing")
            .await
            .unwrap(),
        None
    );
    server.kill().unwrap();
    server.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data);
}
