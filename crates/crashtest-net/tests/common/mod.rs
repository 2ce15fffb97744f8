//! Helpers shared by the integration tests: small servers and framed messages.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses a different part"
)]

use std::time::Duration;

use crashtest_core::node::{self, Node};
use crashtest_core::time;
use crashtest_net::{TcpListener, TcpStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Writes a message as a 4-byte big-endian length and the bytes.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_be_bytes()).await?;
    w.write_all(bytes).await
}

/// Reads one message written by [`write_frame`].
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Vec<u8>> {
    let mut len = [0; 4];
    r.read_exact(&mut len).await?;
    let mut bytes = vec![0; u32::from_be_bytes(len) as usize];
    r.read_exact(&mut bytes).await?;
    Ok(bytes)
}

/// A node called `name` that echoes every frame back on every connection to `port`.
pub fn echo_server(name: &str, port: u16) -> Node {
    node::create(name, move || async move {
        let listener = TcpListener::bind(("0.0.0.0", port)).await.unwrap();
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            crashtest_core::spawn(async move {
                while let Ok(frame) = read_frame(&mut stream).await {
                    if write_frame(&mut stream, &frame).await.is_err() {
                        break;
                    }
                }
            });
        }
    })
}

/// Connects to `addr`, retrying refusals every millisecond (the server may not listen yet).
pub async fn connect_retrying(addr: &str) -> TcpStream {
    loop {
        match TcpStream::connect(addr).await {
            Ok(stream) => return stream,
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
                time::sleep(Duration::from_millis(1)).await;
            }
            Err(err) => panic!("connect to {addr} failed: {err}"),
        }
    }
}

/// Message `i` of a test stream: its number, then a seeded-length filler.
pub fn message(i: u32) -> Vec<u8> {
    let len = 4 + (i as usize * 7919) % 3000;
    let mut bytes = vec![(i % 251) as u8; len];
    bytes[..4].copy_from_slice(&i.to_be_bytes());
    bytes
}
