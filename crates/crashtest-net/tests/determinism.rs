//! Same seed, same run: the network's every choice comes from the seed and shows in the
//! fingerprint.

mod common;

use std::time::Duration;

use common::{connect_retrying, echo_server, message, read_frame, write_frame};
use crashtest_core::rng::Ratio;
use crashtest_core::{Config, Sim, check_determinism, node, spawn, time};
use crashtest_nemesis::nemesis::{Nemesis, RandomClogging, RandomPartitions};
use crashtest_net::{NetConfig, UdpSocket};

/// A workload that touches every part of the network: TCP through clogs and random faults (a
/// nemesis's random partitions and clogging), lossy UDP, a kill and a restart.
async fn workload() {
    crashtest_net::configure(NetConfig {
        udp_loss: Ratio::new(1, 10),
        udp_duplicate: Ratio::new(1, 10),
        udp_reorder: Ratio::new(1, 10),
        tcp_partial_write: Ratio::new(1, 4),
        ..NetConfig::default()
    });
    let server = echo_server("server", 80);
    let bystander = echo_server("bystander", 80);
    let udp = node::create("udp", || async {
        let socket = UdpSocket::bind("0.0.0.0:53").await.unwrap();
        let mut buf = [0; 64];
        loop {
            let (n, from) = socket.recv_from(&mut buf).await.unwrap();
            socket.send_to(&buf[..n], from).await.unwrap();
        }
    });
    Nemesis::idle()
        .random_partitions(RandomPartitions {
            every: Duration::from_millis(500),
            start: Ratio::new(1, 4),
            heal: Ratio::new(1, 2),
            one_way: Ratio::new(1, 2),
        })
        .random_clogging(RandomClogging {
            every: Duration::from_millis(500),
            max: Duration::from_millis(300),
            swizzle: Ratio::new(1, 3),
        })
        .start(&[server, bystander, udp]);
    let pinger = spawn(async {
        let socket = UdpSocket::bind("0.0.0.0:0").await.unwrap();
        for i in 0..100u32 {
            socket.send_to(&i.to_be_bytes(), "udp:53").await.unwrap();
            time::sleep(Duration::from_millis(3)).await;
        }
    });
    let mut stream = connect_retrying("server:80").await;
    for i in 0..50 {
        write_frame(&mut stream, &message(i)).await.unwrap();
        assert_eq!(read_frame(&mut stream).await.unwrap(), message(i));
    }
    server.restart();
    let mut stream = connect_retrying("server:80").await;
    write_frame(&mut stream, b"after restart").await.unwrap();
    assert_eq!(read_frame(&mut stream).await.unwrap(), b"after restart");
    pinger.await.unwrap();
}

#[test]
fn the_same_seed_gives_the_same_fingerprint() {
    for seed in 1..=5 {
        let first = Sim::new(seed).run(workload()).unwrap();
        let second = Sim::new(seed).run(workload()).unwrap();
        assert_eq!(first.fingerprint, second.fingerprint, "seed {seed}");
        assert_eq!(first.events, second.events, "seed {seed}");
        assert!(check_determinism(seed, Config::default(), workload).is_ok());
    }
}

#[test]
fn different_seeds_give_different_fingerprints() {
    let fingerprints: Vec<u64> = (1..=10)
        .map(|seed| Sim::new(seed).run(workload()).unwrap().fingerprint)
        .collect();
    let mut distinct = fingerprints.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), fingerprints.len(), "{fingerprints:x?}");
}

#[test]
fn network_events_feed_the_fingerprint() {
    // Two runs that differ only in the network's latency must differ in fingerprint.
    let run = |latency_us: u64| {
        Sim::new(1)
            .run(async move {
                crashtest_net::configure(NetConfig {
                    latency: crashtest_net::Latency {
                        min: Duration::from_micros(latency_us),
                        max: Duration::from_micros(latency_us),
                        tail: Ratio::NEVER,
                        tail_max: Duration::from_micros(latency_us),
                    },
                    ..NetConfig::default()
                });
                let socket = UdpSocket::bind("127.0.0.1:5").await.unwrap();
                socket.send_to(b"x", "127.0.0.1:5").await.unwrap();
                let mut buf = [0; 1];
                socket.recv_from(&mut buf).await.unwrap();
            })
            .unwrap()
            .fingerprint
    };
    assert_ne!(run(100), run(200));
}
