//! The workloads as madsim programs.
//!
//! Every simulation gets a network whose latency is fixed at 1 ms: madsim draws each
//! message's latency from the half-open range `send_latency` and rejects an empty range, so
//! the range is 1 ms..1 ms + 1 ns, which only ever yields 1 ms. Servers bind before clients
//! connect only by luck of the seeded scheduler, so clients retry a refused connection after
//! 1 ms (as a real client would).

use std::future::Future;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use compare_common::report::Workload;
use compare_common::spec::{
    self, FANOUT_MESSAGES_PER_NODE, FANOUT_NODES, MESSAGE_BYTES, PORT, WorkloadRng, frame,
    frame_number,
};
use madsim::net::{TcpListener, TcpStream};
use madsim::runtime::{Handle, Runtime};
use madsim::time::{self, TimeHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LATENCY_NOTE: &str = "link latency: madsim draws it from the half-open range \
    send_latency and rejects an empty one, so the range is 1 ms..1 ms+1 ns (always 1 ms); \
    madsim applies no latency to connection setup";

/// The workloads, in crashtest-bench's order.
pub(crate) const ALL: [Workload; 7] = [
    Workload {
        name: "pingpong",
        what: "2 nodes, 200000 request/reply round trips of 64 bytes over simulated TCP, \
               1 ms one-way latency",
        units: spec::PINGPONG_ROUND_TRIPS,
        rate_unit: "round trips/s",
        note: Some(LATENCY_NOTE),
        run: || simulate(spec::PINGPONG_SEED, pingpong(spec::PINGPONG_ROUND_TRIPS)),
    },
    Workload {
        name: "timers",
        what: "10000 tasks x 100 seeded sleeps of 1 ms..1 s",
        units: spec::TIMER_TASKS * spec::SLEEPS_PER_TASK,
        rate_unit: "timer events/s",
        note: None,
        run: || simulate(spec::TIMERS_SEED, timers(spec::TIMERS_SEED)),
    },
    Workload {
        name: "spawn",
        what: "spawn and join 1000000 trivial tasks",
        units: spec::SPAWN_TASKS,
        rate_unit: "tasks/s",
        note: None,
        run: || simulate(spec::SPAWN_SEED, spawn_join(spec::SPAWN_TASKS)),
    },
    Workload {
        name: "fanout",
        what: "10 nodes each sending 20000 messages of 64 bytes to random others over \
               simulated TCP, 1 ms one-way latency",
        units: FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
        rate_unit: "messages/s",
        note: Some(
            "link latency as in pingpong (1 ms); madsim's TCP receiver sleeps at least 1 ms \
             per flushed write (its sleep_until has a 1 ms floor), so a stream delivers at \
             most one message per virtual millisecond and the run covers ~2.4 virtual s",
        ),
        run: || simulate(spec::FANOUT_SEED, fanout(spec::FANOUT_SEED, Links::Fixed)),
    },
    Workload {
        name: "fanout-jitter",
        what: "10 nodes each sending 20000 messages of 64 bytes to random others over \
               simulated TCP, one every 1 ms, each message's one-way latency drawn from \
               0.5..1.5 ms",
        units: FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
        rate_unit: "messages/s",
        note: Some("send_latency = 0.5 ms..1.5 ms, drawn uniformly per flushed write"),
        run: || {
            simulate_with_latency(
                spec::FANOUT_JITTER_SEED,
                spec::jitter_min()..spec::jitter_max(),
                fanout(spec::FANOUT_JITTER_SEED, Links::Jittered),
            )
        },
    },
    Workload {
        name: "seeds",
        what: "200 simulations of 2 nodes x 1000 round trips over simulated TCP, one after \
               another",
        units: spec::SEEDS,
        rate_unit: "seeds/s",
        note: Some(LATENCY_NOTE),
        run: || {
            (0..spec::SEEDS)
                .map(|seed| simulate(seed, pingpong(spec::SEED_ROUND_TRIPS)))
                .sum()
        },
    },
    Workload {
        name: "seeds-threads",
        what: "the seeds workload's 200 simulations spread over 2 OS threads of one process",
        units: spec::SEEDS,
        rate_unit: "seeds/s",
        note: Some(LATENCY_NOTE),
        run: || {
            spec::on_threads(spec::SWEEP_THREADS, |seed| {
                simulate(seed, pingpong(spec::SEED_ROUND_TRIPS))
            })
        },
    },
];

/// The links of a fanout run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    /// Exactly 1 ms, every message sent at once.
    Fixed,
    /// 0.5..1.5 ms per message, a message every millisecond: each its own delivery.
    Jittered,
}

/// Runs `body` in a fresh madsim runtime seeded `seed`; returns the virtual time it took.
fn simulate(seed: u64, body: impl Future<Output = ()>) -> Duration {
    simulate_with_latency(
        seed,
        spec::LATENCY..spec::LATENCY + Duration::from_nanos(1),
        body,
    )
}

/// [`simulate`] with each message's latency drawn from `latency`.
fn simulate_with_latency(
    seed: u64,
    latency: std::ops::Range<Duration>,
    body: impl Future<Output = ()>,
) -> Duration {
    let mut config = madsim::Config::default();
    config.net.send_latency = latency;
    let runtime = Runtime::with_seed_and_config(seed, config);
    runtime.block_on(async {
        body.await;
        TimeHandle::current().elapsed()
    })
}

fn node_ip(index: u64) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + index as u8))
}

/// Connects to `addr`, retrying every millisecond while nothing listens there yet.
async fn connect(addr: SocketAddr) -> TcpStream {
    loop {
        match TcpStream::connect(addr).await {
            Ok(stream) => return stream,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                time::sleep(Duration::from_millis(1)).await;
            }
            Err(e) => panic!("connecting to {addr}: {e}"),
        }
    }
}

/// Sends one message and pushes it onto the link (madsim sends what a flush hands it).
async fn send(stream: &mut TcpStream, number: u64) {
    stream
        .write_all(&frame(number))
        .await
        .expect("the peer is up");
    stream.flush().await.expect("the peer is up");
}

/// The next message on `stream`, or `None` at the end of the stream.
async fn receive(stream: &mut TcpStream) -> Option<u64> {
    let mut message = [0; MESSAGE_BYTES];
    match stream.read_exact(&mut message).await {
        Ok(_) => Some(frame_number(&message)),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => None,
        Err(e) => panic!("reading a message: {e}"),
    }
}

/// A server node echoing every request and a client node making `round_trips` sequential
/// request/reply round trips over one TCP stream.
async fn pingpong(round_trips: u64) {
    let handle = Handle::current();
    let server_addr = SocketAddr::new(node_ip(0), PORT);
    let server = handle.create_node().name("server").ip(node_ip(0)).build();
    let client = handle.create_node().name("client").ip(node_ip(1)).build();
    server.spawn(async move {
        let listener = TcpListener::bind(server_addr)
            .await
            .expect("the port is free");
        let (mut stream, _) = listener.accept().await.expect("the client connects");
        while let Some(number) = receive(&mut stream).await {
            send(&mut stream, number).await;
        }
    });
    client
        .spawn(async move {
            let mut stream = connect(server_addr).await;
            for number in 0..round_trips {
                send(&mut stream, number).await;
                assert_eq!(receive(&mut stream).await, Some(number));
            }
        })
        .await
        .expect("the client finishes");
}

async fn timers(seed: u64) {
    let sleepers: Vec<_> = (0..spec::TIMER_TASKS)
        .map(|task| {
            madsim::task::spawn(async move {
                let mut rng = WorkloadRng::new(seed, task);
                for _ in 0..spec::SLEEPS_PER_TASK {
                    time::sleep(rng.sleep()).await;
                }
            })
        })
        .collect();
    for sleeper in sleepers {
        sleeper.await.expect("a sleeper finishes");
    }
}

async fn spawn_join(tasks: u64) {
    let handles: Vec<_> = (0..tasks)
        .map(|i| madsim::task::spawn(async move { i }))
        .collect();
    for (i, handle) in (0..tasks).zip(handles) {
        assert_eq!(handle.await.expect("a trivial task finishes"), i);
    }
}

/// Every node connects to every other one; each sends its messages to seeded random peers,
/// then closes its streams; each counts what arrives until every incoming stream ends.
async fn fanout(seed: u64, links: Links) {
    let handle = Handle::current();
    let nodes: Vec<_> = (0..FANOUT_NODES)
        .map(|index| {
            handle
                .create_node()
                .name(format!("node{index}"))
                .ip(node_ip(index))
                .build()
        })
        .collect();
    let runs: Vec<_> = (0..FANOUT_NODES)
        .zip(&nodes)
        .map(|(index, node)| node.spawn(fanout_node(seed, index, links)))
        .collect();
    let mut received = 0;
    for run in runs {
        received += run.await.expect("a node finishes");
    }
    assert_eq!(received, FANOUT_NODES * FANOUT_MESSAGES_PER_NODE);
}

/// One fanout node; returns the messages it received.
async fn fanout_node(seed: u64, me: u64, links: Links) -> u64 {
    let listener = TcpListener::bind(SocketAddr::new(node_ip(me), PORT))
        .await
        .expect("the port is free");
    let receiving = madsim::task::spawn(async move {
        let mut readers = Vec::new();
        for _ in 1..FANOUT_NODES {
            let (mut stream, _) = listener.accept().await.expect("a peer connects");
            readers.push(madsim::task::spawn(async move {
                let mut count = 0;
                while receive(&mut stream).await.is_some() {
                    count += 1;
                }
                count
            }));
        }
        let mut received = 0;
        for reader in readers {
            received += reader.await.expect("a reader finishes");
        }
        received
    });
    let mut peers = Vec::new();
    for pick in 0..FANOUT_NODES - 1 {
        let peer = spec::fanout_destination(me, pick);
        peers.push(connect(SocketAddr::new(node_ip(peer), PORT)).await);
    }
    let mut rng = WorkloadRng::new(seed, me);
    for number in 0..FANOUT_MESSAGES_PER_NODE {
        let pick = rng.range_inclusive(0, FANOUT_NODES - 2);
        send(&mut peers[pick as usize], number).await;
        if links == Links::Jittered {
            time::sleep(spec::FANOUT_JITTER_GAP).await;
        }
    }
    for mut peer in peers {
        peer.shutdown().await.expect("the stream closes");
    }
    receiving.await.expect("the receiver finishes")
}
