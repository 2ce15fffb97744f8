//! A replicated register: a primary applies writes and replicates them to two backups by
//! datagram. The correct register serves reads from the primary; the planted bug serves them
//! from any replica, which can be behind.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_check::{History, Register, RegisterOp, RegisterOutput};
use crashtest_core::{Sim, node, rng, task, time};
use crashtest_net::{TcpListener, TcpStream, UdpSocket};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CLIENT_PORT: u16 = 7000;
const REPLICATION_PORT: u16 = 7001;
const READ: u8 = 0;
const WRITE: u8 = 1;
const REPLICAS: [&str; 3] = ["r0", "r1", "r2"];

/// One replica: serves requests and, on the primary, replicates writes.
async fn replica(index: usize) {
    let value = Rc::new(Cell::new(0u64));
    let updates = UdpSocket::bind(("0.0.0.0", REPLICATION_PORT))
        .await
        .unwrap();
    let applied = value.clone();
    task::spawn_local(async move {
        let mut buf = [0u8; 8];
        loop {
            updates.recv_from(&mut buf).await.unwrap();
            applied.set(u64::from_le_bytes(buf));
        }
    });
    let replicate = Rc::new(UdpSocket::bind(("0.0.0.0", 0)).await.unwrap());
    let listener = TcpListener::bind(("0.0.0.0", CLIENT_PORT)).await.unwrap();
    loop {
        let (mut stream, _) = listener.accept().await.unwrap();
        let (value, replicate) = (value.clone(), replicate.clone());
        task::spawn_local(async move {
            let mut request = [0u8; 9];
            if stream.read_exact(&mut request).await.is_err() {
                return;
            }
            let argument = u64::from_le_bytes(request[1..].try_into().unwrap());
            if request[0] == WRITE {
                assert_eq!(index, 0, "only the primary takes writes");
                value.set(argument);
                for backup in &REPLICAS[1..] {
                    let _ = replicate
                        .send_to(&argument.to_le_bytes(), (*backup, REPLICATION_PORT))
                        .await;
                }
            }
            let _ = stream.write_all(&value.get().to_le_bytes()).await;
        });
    }
}

/// One request to `replica`; `None` when no answer came in time (outcome unknown).
async fn request(replica: &str, op: u8, argument: u64) -> Option<u64> {
    let exchange = async {
        let mut stream = TcpStream::connect((replica, CLIENT_PORT)).await.ok()?;
        let mut request = [op; 9];
        request[1..].copy_from_slice(&argument.to_le_bytes());
        stream.write_all(&request).await.ok()?;
        let mut reply = [0u8; 8];
        stream.read_exact(&mut reply).await.ok()?;
        Some(u64::from_le_bytes(reply))
    };
    time::timeout(Duration::from_secs(1), exchange)
        .await
        .ok()
        .flatten()
}

/// Three clients write unique values and read, recording a history; then it is checked.
async fn workload(stale_reads: bool) {
    for (index, name) in REPLICAS.iter().enumerate() {
        node::create(*name, move || replica(index));
    }
    let history = History::new();
    let clients: Vec<_> = (0..3u64)
        .map(|client| {
            let history = history.clone();
            task::spawn_local(async move {
                for round in 0..8u64 {
                    time::sleep(Duration::from_micros(
                        rng::node_rng().with(|r| r.below_inclusive(900)),
                    ))
                    .await;
                    let write = rng::node_rng().with(|r| r.boolean());
                    if write {
                        let value = 1 + client * 100 + round;
                        let op = history.invoke(client, RegisterOp::Write(value));
                        match request("r0", WRITE, value).await {
                            Some(_) => history.ok(op, RegisterOutput::Written),
                            None => history.unknown(op),
                        }
                    } else {
                        let target = if stale_reads {
                            REPLICAS[rng::node_rng().with(|r| r.index(REPLICAS.len()))]
                        } else {
                            "r0"
                        };
                        let op = history.invoke(client, RegisterOp::Read);
                        match request(target, READ, 0).await {
                            Some(value) => history.ok(op, RegisterOutput::Value(value)),
                            None => history.unknown(op),
                        }
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    if let Err(violation) = history.check(&Register::new(0u64)) {
        panic!("not linearizable:\n{violation}");
    }
}

#[test]
fn a_register_reading_from_the_primary_is_linearizable_on_a_thousand_seeds() {
    for seed in 0..1000 {
        Sim::new(seed)
            .run(workload(false))
            .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

#[test]
fn the_checker_catches_stale_reads_from_backups() {
    let caught = (0..200).find_map(|seed| Sim::new(seed).run(workload(true)).err());
    let failure = caught.expect("a stale read within 200 seeds");
    let report = failure.to_string();
    assert!(report.contains("not linearizable"), "{report}");
}
