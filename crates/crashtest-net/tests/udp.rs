//! UDP: loss, duplication and reordering each show when switched on and never when off;
//! partitions and full queues drop datagrams.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::rng::Ratio;
use crashtest_core::{Sim, node, time};
use crashtest_net::{Latency, NetConfig, UdpSocket};

const SENT: u32 = 400;

/// Sends `SENT` numbered datagrams, one per millisecond, from the supervisor to a node, and
/// returns the numbers in the order the node received them.
fn received_under(seed: u64, config: NetConfig) -> Vec<u32> {
    let log = Rc::new(RefCell::new(Vec::new()));
    let out = log.clone();
    Sim::new(seed)
        .run(async move {
            crashtest_net::configure(config);
            let sink = log.clone();
            node::create("sink", move || {
                let sink = sink.clone();
                async move {
                    let socket = UdpSocket::bind("0.0.0.0:9000").await.unwrap();
                    let mut buf = [0; 4];
                    loop {
                        let (n, _) = socket.recv_from(&mut buf).await.unwrap();
                        assert_eq!(n, 4);
                        sink.borrow_mut().push(u32::from_be_bytes(buf));
                    }
                }
            });
            time::sleep(Duration::from_millis(1)).await;
            let socket = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            for i in 0..SENT {
                socket.send_to(&i.to_be_bytes(), "sink:9000").await.unwrap();
                time::sleep(Duration::from_millis(1)).await;
            }
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap();
    out.take()
}

/// A network whose latency has no tail, so that datagrams one millisecond apart keep their
/// order unless reordering is switched on.
fn steady() -> NetConfig {
    NetConfig {
        latency: Latency {
            tail: Ratio::NEVER,
            ..Latency::default()
        },
        ..NetConfig::default()
    }
}

fn duplicates(got: &[u32]) -> usize {
    let mut sorted = got.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).filter(|w| w[0] == w[1]).count()
}

fn inversions(got: &[u32]) -> usize {
    got.windows(2).filter(|w| w[0] > w[1]).count()
}

#[test]
fn a_healthy_network_delivers_every_datagram_once_in_order() {
    for seed in 1..=3 {
        let got = received_under(seed, steady());
        assert_eq!(got, (0..SENT).collect::<Vec<_>>());
    }
}

#[test]
fn loss_drops_some_datagrams_only_when_switched_on() {
    let lossy = received_under(
        1,
        NetConfig {
            udp_loss: Ratio::new(1, 5),
            ..steady()
        },
    );
    let lost = SENT as usize - lossy.len();
    assert!((40..=120).contains(&lost), "{lost} of {SENT} lost");
    assert_eq!(duplicates(&lossy), 0);
    assert_eq!(received_under(1, steady()).len(), SENT as usize);
}

#[test]
fn duplication_delivers_some_datagrams_twice_only_when_switched_on() {
    let doubled = received_under(
        2,
        NetConfig {
            udp_duplicate: Ratio::new(1, 5),
            ..steady()
        },
    );
    assert!(
        duplicates(&doubled) > 20,
        "{} duplicates",
        duplicates(&doubled)
    );
    let mut unique = doubled.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique, (0..SENT).collect::<Vec<_>>(), "nothing lost");
    assert_eq!(duplicates(&received_under(2, steady())), 0);
}

#[test]
fn reordering_delivers_some_datagrams_late_only_when_switched_on() {
    let shuffled = received_under(
        3,
        NetConfig {
            udp_reorder: Ratio::new(1, 10),
            ..steady()
        },
    );
    assert!(
        inversions(&shuffled) > 5,
        "{} inversions",
        inversions(&shuffled)
    );
    assert_eq!(shuffled.len(), SENT as usize);
    assert_eq!(inversions(&received_under(3, steady())), 0);
}

#[test]
fn a_partition_drops_datagrams_in_flight_and_healing_lets_new_ones_through() {
    Sim::new(4)
        .run(async {
            let a = UdpSocket::bind("0.0.0.0:1").await.unwrap();
            let b_node = node::create("b", std::future::pending);
            // The supervisor plays both ends: b's socket is bound by a task on node b.
            let b = crashtest_core::plumbing::life::spawn_on(b_node.id(), "bind", async {
                UdpSocket::bind("0.0.0.0:2").await.unwrap()
            })
            .await
            .unwrap();
            a.send_to(b"in flight", "b:2").await.unwrap();
            crashtest_net::partition(node::current().id(), b_node.id());
            let mut buf = [0; 16];
            let nothing = time::timeout(Duration::from_secs(1), b.recv_from(&mut buf)).await;
            assert!(nothing.is_err(), "the datagram in flight was dropped");
            crashtest_net::heal(node::current().id(), b_node.id());
            a.send_to(b"after", "b:2").await.unwrap();
            let (n, _) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"after");
        })
        .unwrap();
}

#[test]
fn a_full_receive_queue_drops_new_datagrams() {
    Sim::new(5)
        .run(async {
            crashtest_net::configure(NetConfig {
                udp_receive_buffer: 1000,
                ..NetConfig::default()
            });
            let receiver = UdpSocket::bind("127.0.0.1:7").await.unwrap();
            let sender = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            for i in 0..20u8 {
                sender.send_to(&[i; 100], "127.0.0.1:7").await.unwrap();
            }
            time::sleep(Duration::from_millis(10)).await;
            let mut buf = [0; 100];
            let mut got = Vec::new();
            while let Ok(Ok((_, _))) =
                time::timeout(Duration::from_millis(1), receiver.recv_from(&mut buf)).await
            {
                got.push(buf[0]);
            }
            assert_eq!(got.len(), 10, "the queue holds 1000 bytes: {got:?}");
        })
        .unwrap();
}

#[test]
fn a_short_buffer_truncates_a_datagram() {
    Sim::new(6)
        .run(async {
            let socket = UdpSocket::bind("127.0.0.1:7").await.unwrap();
            socket.send_to(b"0123456789", "127.0.0.1:7").await.unwrap();
            let mut buf = [0; 4];
            let (n, _) = socket.recv_from(&mut buf).await.unwrap();
            assert_eq!((n, &buf), (4, b"0123"));
        })
        .unwrap();
}

#[test]
fn a_closed_port_on_another_node_refuses_a_connected_sender_but_a_dead_node_stays_silent() {
    Sim::new(1)
        .run(async {
            node::create("idle", std::future::pending);
            let down = node::create("down", std::future::pending);
            down.kill();
            let wait = || time::sleep(Duration::from_millis(50));
            let timeout = Duration::from_millis(500);
            let mut buf = [0; 4];

            // "idle" is up with nothing bound at the port: its ICMP comes back.
            let connected = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            connected.connect("idle:9000").await.unwrap();
            connected.send(b"ping").await.unwrap();
            wait().await;
            let refused = connected.recv(&mut buf).await.unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
            assert_eq!(refused.raw_os_error(), Some(111), "Linux's ECONNREFUSED");
            connected.send(b"ping").await.unwrap();

            // A sender that is not connected never learns of it.
            let unconnected = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            unconnected.send_to(b"ping", "idle:9000").await.unwrap();
            wait().await;
            let heard = time::timeout(timeout, unconnected.recv_from(&mut buf)).await;
            assert!(
                heard.is_err(),
                "no error for an unconnected socket: {heard:?}"
            );

            // A machine that is down answers nothing.
            let silent = UdpSocket::bind("0.0.0.0:0").await.unwrap();
            silent.connect("down:9000").await.unwrap();
            silent.send(b"ping").await.unwrap();
            wait().await;
            assert!(time::timeout(timeout, silent.recv(&mut buf)).await.is_err());
        })
        .unwrap();
}
