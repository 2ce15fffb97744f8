//! A client and server written against `tokio_util::codec`, exactly as they would be against
//! tokio's `TcpStream`, run unchanged on the simulated network.

use std::time::Duration;

use crashtest_core::{Sim, node, spawn, time};
use crashtest_net::{TcpListener, TcpStream};
use futures::{SinkExt, StreamExt};
use tokio_util::bytes::Bytes;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// Serves each connection: every frame is answered with the frame reversed.
async fn serve(listener: TcpListener) {
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        spawn(async move {
            let mut frames = Framed::new(stream, LengthDelimitedCodec::new());
            while let Some(frame) = frames.next().await {
                let mut frame = frame.unwrap();
                frame.reverse();
                frames.send(frame.freeze()).await.unwrap();
            }
        });
    }
}

/// Sends `count` frames of growing size and checks each answer.
async fn client(addr: &str, count: usize) -> usize {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let mut frames = Framed::new(stream, LengthDelimitedCodec::new());
    for i in 0..count {
        let payload: Vec<u8> = (0..i * 37).map(|b| (b % 256) as u8).collect();
        frames.send(Bytes::from(payload.clone())).await.unwrap();
        let answer = frames.next().await.unwrap().unwrap();
        let mut expected = payload;
        expected.reverse();
        assert_eq!(answer, expected);
    }
    count
}

#[test]
fn a_length_delimited_client_and_server_run_unchanged() {
    for seed in 1..=5 {
        Sim::new(seed)
            .run(async {
                node::create("server", || async {
                    serve(TcpListener::bind("0.0.0.0:5000").await.unwrap()).await;
                });
                time::sleep(Duration::from_millis(1)).await;
                let clients: Vec<_> = (0..3).map(|_| spawn(client("server:5000", 100))).collect();
                for handle in clients {
                    assert_eq!(handle.await.unwrap(), 100);
                }
            })
            .unwrap();
    }
}
