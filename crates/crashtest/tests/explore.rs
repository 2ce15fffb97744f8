//! Exploring from a point re-draws everything random after it, the network and the disk
//! included: two futures explored from one point differ in when messages arrive, in how long
//! the disk takes and in what it damages, while each future replays exactly.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest::fs::{DiskConfig, Latency};
use crashtest::net::UdpSocket;
use crashtest::rand::Ratio;
use crashtest::time::{self, Instant};
use crashtest::{Config, Sim, node};

/// What a run observed after the explore point.
#[derive(Debug, Default, PartialEq, Eq)]
struct Observed {
    /// When each datagram reached the receiver, in nanoseconds of virtual time.
    arrivals: Vec<u128>,
    /// How long each write and sync took, in nanoseconds of virtual time.
    disk_latencies: Vec<u128>,
    /// For each read back of the log: whether it failed or came back other than written.
    disk_damage: Vec<bool>,
    fingerprint: u64,
}

const EXPLORE_AT: Duration = Duration::from_millis(2);

/// A sender and a receiver of datagrams, and a node appending to a log on a slow, faulty
/// disk; everything they do starts after `EXPLORE_AT`.
fn observe(config: Config) -> Observed {
    let seen = Rc::new(RefCell::new(Observed::default()));
    let out = seen.clone();
    let summary = Sim::with_config(7, config)
        .run(async move {
            crashtest::fs::configure(
                DiskConfig::default()
                    .latency(
                        Latency::new(5_000, 50_000_000)
                            .sync(Duration::from_millis(5), Duration::from_millis(15)),
                    )
                    .read_corruption(Ratio::new(1, 4))
                    .read_error(Ratio::new(1, 8)),
            );
            let start = Instant::now();
            let sink = seen.clone();
            node::create("receiver", move || {
                let sink = sink.clone();
                async move {
                    let socket = UdpSocket::bind("0.0.0.0:9000").await.unwrap();
                    let mut buf = [0; 4];
                    loop {
                        socket.recv_from(&mut buf).await.unwrap();
                        sink.borrow_mut().arrivals.push(start.elapsed().as_nanos());
                    }
                }
            });
            let disk = seen.clone();
            node::create("store", move || {
                let disk = disk.clone();
                async move {
                    time::sleep(EXPLORE_AT * 2).await;
                    for i in 0..16u8 {
                        let before = Instant::now();
                        let written = crashtest::fs::write("/log", [i; 512]).await;
                        let file = crashtest::fs::File::open("/log").await;
                        if let Ok(file) = &file {
                            let _ = file.sync_all().await;
                        }
                        let took = before.elapsed().as_nanos();
                        let read = crashtest::fs::read("/log").await;
                        let damaged = written.is_err() || read.map_or(true, |r| r != [i; 512]);
                        let mut disk = disk.borrow_mut();
                        disk.disk_latencies.push(took);
                        disk.disk_damage.push(damaged);
                    }
                }
            });
            time::sleep(EXPLORE_AT * 2).await;
            let socket = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            for i in 0..16u32 {
                socket
                    .send_to(&i.to_be_bytes(), "receiver:9000")
                    .await
                    .unwrap();
            }
            time::sleep(Duration::from_secs(2)).await;
        })
        .unwrap();
    let mut observed = out.take();
    observed.fingerprint = summary.fingerprint;
    observed
}

fn explored(sub_seed: u64) -> Observed {
    observe(Config::default().explore_from(EXPLORE_AT, sub_seed))
}

#[test]
fn explored_futures_differ_in_network_delivery_times() {
    let (one, two) = (explored(1), explored(2));
    assert_eq!(one.arrivals.len(), 16, "{one:?}");
    assert_eq!(two.arrivals.len(), 16, "{two:?}");
    assert_ne!(one.arrivals, two.arrivals, "the network kept its draws");
    assert_ne!(observe(Config::default()).arrivals, one.arrivals);
}

#[test]
fn explored_futures_differ_in_disk_latency_and_damage() {
    let (one, two) = (explored(1), explored(2));
    assert_eq!(one.disk_latencies.len(), 16, "{one:?}");
    assert_ne!(
        one.disk_latencies, two.disk_latencies,
        "the disk kept its latencies"
    );
    let differ = (3..9).any(|sub| explored(sub).disk_damage != one.disk_damage);
    assert!(differ, "every explored future damaged the disk alike");
}

#[test]
fn an_explored_future_replays_exactly() {
    let (first, again) = (explored(5), explored(5));
    assert_eq!(first, again);
    assert_ne!(first.fingerprint, explored(6).fingerprint);
}
