//! Each fault of the model shows its documented effect, and ends as documented.

mod common;

use std::cell::RefCell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;

use common::{connect_retrying, echo_server, read_frame, write_frame};
use crashtest_core::rng::Ratio;
use crashtest_core::trace::EventKind;
use crashtest_core::{Config, Sim, node, task, time};
use crashtest_nemesis::nemesis::{Nemesis, RandomClogging, RandomPartitions};
use crashtest_net::{NetConfig, TcpStream, UdpSocket};

fn me() -> node::NodeId {
    node::current().id()
}

/// How long one echo of `frame` takes, or `None` if it takes longer than `limit`.
async fn echo_time(stream: &mut TcpStream, frame: &[u8], limit: Duration) -> Option<Duration> {
    let started = time::Instant::now();
    write_frame(stream, frame).await.unwrap();
    match time::timeout(limit, read_frame(stream)).await {
        Ok(reply) => {
            assert_eq!(reply.unwrap(), frame);
            Some(started.elapsed())
        }
        Err(_) => None,
    }
}

#[test]
fn a_partition_blocks_tcp_and_healing_resumes_it_without_loss() {
    for seed in 1..=4 {
        Sim::new(seed)
            .run(async {
                let server = echo_server("server", 80);
                let mut stream = connect_retrying("server:80").await;
                assert!(
                    echo_time(&mut stream, b"1", Duration::from_secs(1))
                        .await
                        .is_some()
                );
                crashtest_net::partition(me(), server.id());
                write_frame(&mut stream, b"2").await.unwrap();
                let blocked = time::timeout(Duration::from_secs(5), read_frame(&mut stream)).await;
                assert!(blocked.is_err(), "nothing crosses a partition");
                crashtest_net::heal(me(), server.id());
                assert_eq!(read_frame(&mut stream).await.unwrap(), b"2");
                assert!(
                    echo_time(&mut stream, b"3", Duration::from_secs(1))
                        .await
                        .is_some()
                );
            })
            .unwrap();
    }
}

#[test]
fn a_connect_across_a_partition_hangs_until_the_callers_timeout() {
    Sim::new(2)
        .run(async {
            let server = echo_server("server", 80);
            drop(connect_retrying("server:80").await);
            crashtest_net::partition(me(), server.id());
            let attempt = time::timeout(Duration::from_secs(5), TcpStream::connect("server:80"));
            assert!(attempt.await.is_err());
            crashtest_net::heal(me(), server.id());
            let mut stream = TcpStream::connect("server:80").await.unwrap();
            assert!(
                echo_time(&mut stream, b"ok", Duration::from_secs(1))
                    .await
                    .is_some()
            );
        })
        .unwrap();
}

#[test]
fn data_stalled_behind_a_partition_times_out_the_sender() {
    Sim::new(3)
        .run(async {
            crashtest_net::configure(NetConfig {
                tcp_timeout: Duration::from_secs(30),
                ..NetConfig::default()
            });
            let server = echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            crashtest_net::partition(me(), server.id());
            let started = time::Instant::now();
            write_frame(&mut stream, b"lost").await.unwrap();
            let err = read_frame(&mut stream).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            let waited = started.elapsed();
            assert!(waited >= Duration::from_secs(30) && waited < Duration::from_secs(31));
        })
        .unwrap();
}

#[test]
fn a_one_way_partition_cuts_one_direction_only() {
    Sim::new(4)
        .run(async {
            let a = UdpSocket::bind("0.0.0.0:1000").await.unwrap();
            let got_at_b = Rc::new(RefCell::new(Vec::new()));
            let log = got_at_b.clone();
            let b = node::create("b", move || {
                let log = log.clone();
                async move {
                    let socket = UdpSocket::bind("0.0.0.0:2000").await.unwrap();
                    let mut buf = [0; 8];
                    loop {
                        let (n, from) = socket.recv_from(&mut buf).await.unwrap();
                        log.borrow_mut().push(buf[0]);
                        socket.send_to(&buf[..n], from).await.unwrap();
                    }
                }
            });
            time::sleep(Duration::from_millis(1)).await;
            crashtest_net::partition_one_way(b.id(), me());
            a.send_to(&[1], "b:2000").await.unwrap();
            let mut buf = [0; 8];
            let reply = time::timeout(Duration::from_secs(1), a.recv_from(&mut buf)).await;
            assert!(reply.is_err(), "b's replies are cut");
            assert_eq!(*got_at_b.borrow(), [1], "a still reaches b");
            crashtest_net::heal(b.id(), me());
            a.send_to(&[2], "b:2000").await.unwrap();
            let (n, _) = a.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], [2]);
        })
        .unwrap();
}

#[test]
fn a_clog_delays_traffic_until_it_lifts_and_loses_nothing() {
    Sim::new(5)
        .run(async {
            let server = echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            let before = echo_time(&mut stream, b"a", Duration::from_secs(1))
                .await
                .unwrap();
            assert!(before < Duration::from_millis(200));
            crashtest_net::clog_link(me(), server.id(), Duration::from_secs(2));
            let clogged = echo_time(&mut stream, b"b", Duration::from_secs(10))
                .await
                .unwrap();
            assert!(
                clogged >= Duration::from_secs(2),
                "held for the clog: {clogged:?}"
            );
            assert!(
                clogged < Duration::from_millis(2200),
                "released when it lifts: {clogged:?}"
            );
            let after = echo_time(&mut stream, b"c", Duration::from_secs(1))
                .await
                .unwrap();
            assert!(after < Duration::from_millis(200));
        })
        .unwrap();
}

#[test]
fn heal_all_lifts_a_clog_early() {
    Sim::new(6)
        .run(async {
            let server = echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            crashtest_net::clog_node(server.id(), Duration::from_secs(3600));
            let healer = task::spawn(async {
                time::sleep(Duration::from_secs(1)).await;
                crashtest_net::heal_all();
            });
            let took = echo_time(&mut stream, b"x", Duration::from_secs(60))
                .await
                .unwrap();
            assert!(took >= Duration::from_secs(1) && took < Duration::from_millis(1200));
            healer.await.unwrap();
        })
        .unwrap();
}

#[test]
fn swizzle_clogs_some_nodes_then_unclogs_them_all() {
    for seed in 1..=4 {
        Sim::new(seed)
            .run(async {
                let names = ["s0", "s1", "s2", "s3"];
                let nodes: Vec<_> = names
                    .iter()
                    .map(|name| echo_server(name, 80).id())
                    .collect();
                let mut streams = Vec::new();
                for name in names {
                    streams.push(connect_retrying(&format!("{name}:80")).await);
                }
                let start = time::Instant::now();
                crashtest_net::swizzle(&nodes, Duration::from_secs(4));
                // Ping every node every 50 ms through the swizzle: some pings are held.
                let mut pingers = Vec::new();
                for mut stream in streams {
                    pingers.push(task::spawn(async move {
                        let mut slowest = Duration::ZERO;
                        while start.elapsed() < Duration::from_secs(4) {
                            let took = echo_time(&mut stream, b"p", Duration::from_secs(10))
                                .await
                                .unwrap();
                            slowest = slowest.max(took);
                            time::sleep(Duration::from_millis(50)).await;
                        }
                        (stream, slowest)
                    }));
                }
                let mut slowest = Duration::ZERO;
                let mut streams = Vec::new();
                for pinger in pingers {
                    let (stream, worst) = pinger.await.unwrap();
                    slowest = slowest.max(worst);
                    streams.push(stream);
                }
                assert!(
                    slowest > Duration::from_millis(100),
                    "a node was clogged: {slowest:?}"
                );
                time::sleep_until(start + Duration::from_secs(4)).await;
                for mut stream in streams {
                    let took = echo_time(&mut stream, b"q", Duration::from_secs(1)).await;
                    assert!(
                        took.unwrap() < Duration::from_millis(200),
                        "every clog lifted"
                    );
                }
            })
            .unwrap();
    }
}

#[test]
fn random_partitions_and_clogs_come_and_go_and_tcp_stays_exact() {
    let config = Config::default().record_trace(true);
    let summary = Sim::with_config(8, config)
        .run(async {
            let nodes: Vec<_> = ["a", "b", "c"].map(|name| echo_server(name, 80)).into();
            Nemesis::idle()
                .random_partitions(RandomPartitions {
                    every: Duration::from_secs(1),
                    start: Ratio::new(1, 3),
                    heal: Ratio::new(1, 2),
                    one_way: Ratio::new(1, 4),
                })
                .random_clogging(RandomClogging {
                    every: Duration::from_secs(1),
                    max: Duration::from_secs(2),
                    swizzle: Ratio::new(1, 4),
                })
                .start(&nodes);
            let mut stream = connect_retrying("a:80").await;
            // The supervisor is never partitioned, so requests to "a" only wait out clogs.
            for i in 0..200u32 {
                let frame = i.to_be_bytes();
                let took = echo_time(&mut stream, &frame, Duration::from_secs(30)).await;
                assert!(took.is_some(), "request {i} lost");
                time::sleep(Duration::from_millis(200)).await;
            }
        })
        .unwrap();
    let sources: Vec<&str> = summary
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Note { source, .. } => Some(*source),
            _ => None,
        })
        .collect();
    for wanted in ["net.partition", "net.heal", "net.clog_node"] {
        assert!(sources.contains(&wanted), "no {wanted} in the trace");
    }
}

#[test]
fn random_resets_break_connections_with_connection_reset() {
    Sim::new(9)
        .run(async {
            crashtest_net::configure(NetConfig {
                tcp_reset: Ratio::new(1, 20),
                ..NetConfig::default()
            });
            echo_server("server", 80);
            let mut resets = 0;
            let mut stream = connect_retrying("server:80").await;
            for i in 0..200u32 {
                let outcome = async {
                    write_frame(&mut stream, &i.to_be_bytes()).await?;
                    read_frame(&mut stream).await
                };
                match outcome.await {
                    Ok(reply) => assert_eq!(reply, i.to_be_bytes()),
                    Err(err) => {
                        assert!(
                            [ErrorKind::ConnectionReset, ErrorKind::UnexpectedEof]
                                .contains(&err.kind()),
                            "{err}"
                        );
                        resets += 1;
                        stream = connect_retrying("server:80").await;
                    }
                }
            }
            assert!(resets > 0, "some connections were reset");
        })
        .unwrap();
}

#[test]
fn injected_faults_are_listed_in_the_failure_report() {
    let failure = Sim::new(10)
        .run(async {
            crashtest_net::configure(NetConfig {
                udp_loss: Ratio::new(1, 2),
                ..NetConfig::default()
            });
            let server = echo_server("server", 80);
            let other = node::create("other", std::future::pending);
            crashtest_net::partition(server.id(), other.id());
            crashtest_net::clog_node(server.id(), Duration::from_millis(10));
            let socket = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            for _ in 0..20 {
                socket.send_to(b"x", "server:9").await.unwrap();
            }
            panic!("the workload found a bug");
        })
        .unwrap_err();
    let report = failure.to_string();
    for expected in [
        "partition server <-/-> other",
        "clog: every link of server held for 10ms",
        "-> 10.0.0.1:9 lost",
    ] {
        assert!(
            report.contains(expected),
            "{expected:?} missing from:\n{report}"
        );
    }
}

#[test]
fn tcp_never_corrupts_reorders_or_duplicates_under_every_fault_at_once() {
    for seed in 1..=6 {
        Sim::new(seed)
            .run(async move {
                crashtest_net::configure(NetConfig {
                    tcp_partial_write: Ratio::new(1, 3),
                    tcp_reset: Ratio::new(1, 100),
                    tcp_buffer: 4000,
                    tcp_timeout: Duration::from_secs(3),
                    connect_timeout: Duration::from_secs(5),
                    ..NetConfig::default()
                });
                let servers: Vec<_> = ["a", "b"].iter().map(|n| echo_server(n, 80)).collect();
                // A client on node "c" talks to "a" and checks every echo; errors make it
                // reconnect, but a wrong byte fails the run.
                let checked = Rc::new(RefCell::new(0u32));
                let count = checked.clone();
                let client = node::create("c", move || {
                    let count = count.clone();
                    async move {
                        let mut n = 0u32;
                        loop {
                            let connect = TcpStream::connect("a:80");
                            let Ok(Ok(mut stream)) =
                                time::timeout(Duration::from_secs(2), connect).await
                            else {
                                continue;
                            };
                            loop {
                                n += 1;
                                let frame: Vec<u8> = (0..n % 3000).map(|x| x as u8).collect();
                                if write_frame(&mut stream, &frame).await.is_err() {
                                    break;
                                }
                                let reply =
                                    time::timeout(Duration::from_secs(4), read_frame(&mut stream));
                                match reply.await {
                                    Ok(Ok(reply)) => assert_eq!(reply, frame, "corrupt echo"),
                                    _ => break,
                                }
                                *count.borrow_mut() += 1;
                            }
                        }
                    }
                });
                Nemesis::idle()
                    .random_partitions(RandomPartitions {
                        every: Duration::from_millis(300),
                        start: Ratio::new(1, 3),
                        heal: Ratio::new(1, 2),
                        one_way: Ratio::new(1, 2),
                    })
                    .random_clogging(RandomClogging {
                        every: Duration::from_millis(300),
                        max: Duration::from_millis(800),
                        swizzle: Ratio::new(1, 3),
                    })
                    .start(&[servers[0], servers[1], client]);
                for step in 0..10u64 {
                    time::sleep(Duration::from_millis(400)).await;
                    let victim = &servers[((seed + step) % 2) as usize];
                    match (seed + step) % 3 {
                        0 => victim.restart(),
                        1 => {
                            victim.pause();
                            time::sleep(Duration::from_millis(200)).await;
                            victim.resume();
                        }
                        _ => crashtest_net::heal_all(),
                    }
                }
                assert!(*checked.borrow() > 10, "the client made progress");
            })
            .unwrap();
    }
}

/// Sends 20 datagrams over a network that loses half of them; returns how many arrived and
/// the faults the run injected (the run fails on purpose, to report them).
fn lossy_run(config: Config) -> (u32, Vec<crashtest_core::InjectedFault>) {
    let arrived = Rc::new(RefCell::new(0u32));
    let count = arrived.clone();
    let failure = Sim::with_config(11, config)
        .run(async move {
            crashtest_net::configure(NetConfig {
                udp_loss: Ratio::new(1, 2),
                ..NetConfig::default()
            });
            let socket = UdpSocket::bind("127.0.0.1:9").await.unwrap();
            let mut buf = [0; 4];
            for i in 0..20u32 {
                socket
                    .send_to(&i.to_be_bytes(), "127.0.0.1:9")
                    .await
                    .unwrap();
                if let Ok(received) =
                    time::timeout(Duration::from_millis(10), socket.recv_from(&mut buf)).await
                {
                    received.unwrap();
                    *count.borrow_mut() += 1;
                }
            }
            panic!("report the faults");
        })
        .unwrap_err();
    (arrived.take(), failure.faults)
}

#[test]
fn masked_network_faults_are_not_applied_and_the_run_stays_aligned() {
    let (arrived, faults) = lossy_run(Config::default());
    let lost: Vec<u64> = faults
        .iter()
        .filter(|f| f.text.ends_with("lost"))
        .filter_map(|f| f.id)
        .collect();
    assert_eq!(arrived as usize + lost.len(), 20);
    assert!(!lost.is_empty());
    let (arrived, faults) = lossy_run(Config::default().mask_faults(lost));
    assert_eq!(arrived, 20, "every masked loss was delivered");
    assert!(faults.iter().all(|f| !f.text.ends_with("lost")));
}

#[test]
fn the_runs_heal_ends_partitions_and_clogs_and_stops_random_faults() {
    Sim::new(12)
        .run(async {
            crashtest_net::configure(NetConfig {
                udp_loss: Ratio::ALWAYS,
                ..NetConfig::default()
            });
            let server = echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            crashtest_net::partition(me(), server.id());
            crashtest_net::clog_node(server.id(), Duration::from_secs(3600));
            write_frame(&mut stream, b"held").await.unwrap();
            time::sleep(Duration::from_secs(1)).await;
            crashtest_core::fault::heal_all();
            let reply = time::timeout(Duration::from_secs(1), read_frame(&mut stream)).await;
            assert_eq!(reply.unwrap().unwrap(), b"held", "the stalled data arrives");
            let socket = UdpSocket::bind("127.0.0.1:9").await.unwrap();
            socket.send_to(b"kept", "127.0.0.1:9").await.unwrap();
            let mut buf = [0; 4];
            let got = time::timeout(Duration::from_secs(1), socket.recv_from(&mut buf)).await;
            assert!(got.is_ok(), "no datagram is lost once the run has healed");
        })
        .unwrap();
}
