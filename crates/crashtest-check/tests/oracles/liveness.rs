//! A client that forwards jobs to a server over one TCP connection. A partition breaks the
//! connection; the planted bug never reconnects, so after healing its jobs stay pending and
//! the liveness phase reports no convergence. The fixed client reconnects and converges.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_check::liveness::converge;
use crashtest_core::{FailureKind, Sim, node, time};
use crashtest_net::{NetConfig, TcpListener, TcpStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 7100;
const JOBS: u64 = 50;

async fn server(done: Rc<Cell<u64>>) {
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await.unwrap();
    loop {
        let (mut stream, _) = listener.accept().await.unwrap();
        let done = done.clone();
        crashtest_core::task::spawn_local(async move {
            let mut job = [0u8; 8];
            while stream.read_exact(&mut job).await.is_ok() {
                let number = u64::from_le_bytes(job);
                // Jobs are idempotent: a resent job counts once.
                done.set(done.get().max(number + 1));
                if stream.write_all(&job).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Sends jobs one at a time, each acknowledged, until all are done.
async fn client(retries: bool) {
    let mut next = 0;
    while next < JOBS {
        let Ok(mut stream) = TcpStream::connect(("server", PORT)).await else {
            time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        while next < JOBS {
            let mut ack = [0u8; 8];
            let sent = stream.write_all(&next.to_le_bytes()).await.is_ok()
                && time::timeout(Duration::from_secs(1), stream.read_exact(&mut ack))
                    .await
                    .is_ok_and(|read| read.is_ok());
            if !sent {
                break;
            }
            next += 1;
            time::sleep(Duration::from_millis(50)).await;
        }
        if !retries {
            // The bug: give up on the first broken connection.
            return;
        }
    }
}

async fn scenario(retries: bool) {
    crashtest_net::configure(NetConfig {
        tcp_timeout: Duration::from_secs(2),
        ..NetConfig::default()
    });
    let done = Rc::new(Cell::new(0));
    let counted = done.clone();
    let server = node::create("server", move || server(counted.clone()));
    let client = node::create("client", move || client(retries));
    time::sleep(Duration::from_millis(700)).await;
    crashtest_net::partition(client.id(), server.id());
    time::sleep(Duration::from_secs(5)).await;
    converge(Duration::from_secs(30), || {
        let finished = done.get();
        if finished == JOBS {
            vec![]
        } else {
            vec![format!("{} of {JOBS} jobs", JOBS - finished)]
        }
    })
    .await;
}

#[test]
fn a_client_that_never_retries_fails_the_liveness_phase() {
    for seed in 0..20 {
        let failure = Sim::new(seed).run(scenario(false)).unwrap_err();
        let FailureKind::Check { invariant, message } = &failure.kind else {
            panic!("{failure}")
        };
        assert_eq!(invariant, "liveness", "{failure}");
        assert!(
            message.starts_with("no convergence within 30s"),
            "{message}"
        );
        assert!(message.contains("jobs"), "{message}");
    }
}

#[test]
fn a_client_that_reconnects_converges_after_healing() {
    for seed in 0..20 {
        Sim::new(seed)
            .run(scenario(true))
            .unwrap_or_else(|failure| panic!("{failure}"));
    }
}
