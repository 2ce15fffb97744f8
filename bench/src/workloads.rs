//! The workloads, each a real simulation measured from outside.
//!
//! Sizes, seeds, message format and every workload random draw come from the comparison
//! suite's shared spec (`bench/compare/common`), so the madsim and turmoil benchmarks do the
//! same logical work, draw for draw, and their rates compare with these.

use std::cell::Cell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;

use crate::clusters::{Example, process_cpu_time};
use crate::spec::{
    self, FANOUT_MESSAGES_PER_NODE, FANOUT_NODES, MESSAGE_BYTES, PORT, WorkloadRng, frame,
    frame_number,
};
use crashtest::net::{Latency, NetConfig, TcpListener, TcpStream};
use crashtest::rand::Ratio;
use crashtest::runner::{Settings, TestSpec, run_seeds};
use crashtest::{Sim, node, task, time};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A workload the benchmark can run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Workload {
    /// 2 nodes, 200,000 sequential request/reply round trips of 64 bytes over simulated TCP.
    Pingpong,
    /// 10,000 tasks x 100 seeded sleeps of 1 ms..1 s.
    Timers,
    /// Spawn and join 1,000,000 trivial tasks.
    Spawn,
    /// 10 nodes each sending 20,000 messages of 64 bytes to random others over TCP.
    Fanout,
    /// Fanout with each message's latency drawn from 0.5..1.5 ms and a 1 ms pause after
    /// each send, so that every message is its own delivery.
    FanoutJitter,
    /// 200 separate simulations of 2 nodes x 1,000 round trips over TCP.
    Seeds,
    /// The seeds workload spread over 2 OS threads of one process.
    SeedsThreads,
    /// 1,000 tasks sleeping seeded 1 ms..1 s at a time for one hour of virtual time.
    Hour,
    /// The pingpong workload at 10,000 round trips with every event written to a trace
    /// file, as `crashtest replay` and `view` run a seed.
    Traced,
    /// examples/raft-kv's default setup, seed after seed, in seeds per CPU-second.
    RaftKv,
    /// examples/redb-crash under redb's own hardware model, in seeds per CPU-second.
    RedbCrash,
    /// examples/raft-rs-cluster's default plan, in seeds per CPU-second.
    RaftRsCluster,
    /// examples/tonic-kv (tonic, axum and reqwest through the tokio stand-in), in seeds per
    /// CPU-second.
    TonicKv,
}

/// What one run of a workload did and how long it took.
pub(crate) struct Measured {
    pub(crate) wall: Duration,
    /// The process's CPU time during the run, every thread's.
    pub(crate) cpu: Duration,
    pub(crate) virtual_time: Duration,
    pub(crate) units: u64,
    pub(crate) unit: &'static str,
    pub(crate) what: &'static str,
    /// Whether the rate divides by CPU time rather than wall time.
    pub(crate) per_cpu: bool,
    /// For a cluster example, a digest of every seed's fingerprint in seed order: equal
    /// digests before and after a change say it left every run as it was.
    pub(crate) fingerprints: Option<u64>,
    /// The peak resident memory of the process that ran it, when that was not this one.
    pub(crate) peak_rss_mib: Option<f64>,
}

impl Workload {
    pub(crate) const ALL: [Workload; 13] = [
        Workload::Pingpong,
        Workload::Timers,
        Workload::Spawn,
        Workload::Fanout,
        Workload::FanoutJitter,
        Workload::Seeds,
        Workload::SeedsThreads,
        Workload::Hour,
        Workload::Traced,
        Workload::RaftKv,
        Workload::RedbCrash,
        Workload::RaftRsCluster,
        Workload::TonicKv,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Pingpong => "pingpong",
            Workload::Timers => "timers",
            Workload::Spawn => "spawn",
            Workload::Fanout => "fanout",
            Workload::FanoutJitter => "fanout-jitter",
            Workload::Seeds => "seeds",
            Workload::SeedsThreads => "seeds-threads",
            Workload::Hour => "hour",
            Workload::Traced => "traced",
            Workload::RaftKv => "raft-kv",
            Workload::RedbCrash => "redb-crash",
            Workload::RaftRsCluster => "raft-rs-cluster",
            Workload::TonicKv => "tonic-kv",
        }
    }

    pub(crate) fn run(self) -> Measured {
        let (units, unit, what, body): (u64, _, _, fn() -> Duration) = match self {
            Workload::Pingpong => (
                spec::PINGPONG_ROUND_TRIPS,
                "round trips/s",
                "2 nodes, 200000 request/reply round trips of 64 bytes over simulated TCP, \
                 1 ms one-way latency",
                || run_sim(spec::PINGPONG_SEED, pingpong(spec::PINGPONG_ROUND_TRIPS)),
            ),
            Workload::Timers => (
                spec::TIMER_TASKS * spec::SLEEPS_PER_TASK,
                "timer events/s",
                "10000 tasks x 100 seeded sleeps of 1 ms..1 s",
                || run_sim(spec::TIMERS_SEED, timers()),
            ),
            Workload::Spawn => (
                spec::SPAWN_TASKS,
                "tasks/s",
                "spawn and join 1000000 trivial tasks",
                || run_sim(spec::SPAWN_SEED, spawn_join()),
            ),
            Workload::Fanout => (
                FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
                "messages/s",
                "10 nodes each sending 20000 messages of 64 bytes to random others over \
                 simulated TCP, 1 ms one-way latency",
                || run_sim(spec::FANOUT_SEED, fanout(Links::Fixed)),
            ),
            Workload::FanoutJitter => (
                FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
                "messages/s",
                "10 nodes each sending 20000 messages of 64 bytes to random others over \
                 simulated TCP, one every 1 ms, each message's one-way latency drawn from \
                 0.5..1.5 ms",
                || run_sim(spec::FANOUT_JITTER_SEED, fanout(Links::Jittered)),
            ),
            Workload::Seeds => (
                spec::SEEDS,
                "seeds/s",
                "200 simulations of 2 nodes x 1000 round trips over simulated TCP, one after \
                 another",
                || {
                    (0..spec::SEEDS)
                        .map(|seed| run_sim(seed, pingpong(spec::SEED_ROUND_TRIPS)))
                        .sum()
                },
            ),
            Workload::SeedsThreads => (
                spec::SEEDS,
                "seeds/s",
                "the seeds workload's 200 simulations spread over 2 OS threads of one process",
                || {
                    spec::on_threads(spec::SWEEP_THREADS, |seed| {
                        run_sim(seed, pingpong(spec::SEED_ROUND_TRIPS))
                    })
                },
            ),
            Workload::Hour => (
                3600,
                "virtual seconds/s",
                "1000 tasks sleeping seeded 1 ms..1 s for one hour of virtual time",
                || run_sim(4, sleep_for(1_000, Duration::from_secs(3600))),
            ),
            Workload::Traced => (
                TRACED_ROUND_TRIPS,
                "round trips/s",
                "2 nodes, 10000 request/reply round trips of 64 bytes over simulated TCP, every \
                 event written to a trace file",
                traced,
            ),
            Workload::RaftKv => return run_example(Example::RaftKv),
            Workload::RedbCrash => return run_example(Example::RedbCrash),
            Workload::RaftRsCluster => return run_example(Example::RaftRsCluster),
            Workload::TonicKv => return crate::clusters::tonic_kv(),
        };
        let (wall, cpu, virtual_time) = timed(body);
        Measured {
            wall,
            cpu,
            virtual_time,
            units,
            unit,
            what,
            per_cpu: false,
            fingerprints: None,
            peak_rss_mib: None,
        }
    }
}

/// Runs every seed of `example` once, one after another.
fn run_example(example: Example) -> Measured {
    let (wall, cpu, (virtual_time, digest)) = timed(|| {
        (0..example.seeds()).fold((Duration::ZERO, 0u64), |(covered, digest), seed| {
            let (elapsed, fingerprint) = example.run_seed(seed);
            (
                covered + elapsed,
                digest.rotate_left(7) ^ fingerprint.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            )
        })
    });
    Measured {
        wall,
        cpu,
        virtual_time,
        units: example.seeds(),
        unit: "seeds/CPU-s",
        what: example.what(),
        per_cpu: true,
        fingerprints: Some(digest),
        peak_rss_mib: None,
    }
}

/// Runs `body` and returns the wall time and the process CPU time it took, and its result.
fn timed<T>(body: impl FnOnce() -> T) -> (Duration, Duration, T) {
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark measures real time"
    )]
    let start = std::time::Instant::now();
    let cpu_start = process_cpu_time();
    let result = body();
    (start.elapsed(), process_cpu_time() - cpu_start, result)
}

fn run_sim(seed: u64, body: impl Future<Output = ()> + 'static) -> Duration {
    let summary = Sim::new(seed)
        .run(body)
        .unwrap_or_else(|failure| panic!("{failure}"));
    summary.elapsed
}

const TRACED_ROUND_TRIPS: u64 = 10_000;

/// One pingpong seed through the runner with its trace written to a file.
fn traced() -> Duration {
    let spec = TestSpec {
        name: "traced",
        module_path: "bench",
        package: "crashtest-bench",
        crate_name: "crashtest_bench",
        seeds: None,
        seed: None,
        config: crashtest::Config::default,
        env: &[],
    };
    let path = std::env::temp_dir().join(format!("crashtest-bench-{}.trace", std::process::id()));
    let settings = Settings {
        start: spec::PINGPONG_SEED,
        count: 1,
        check_determinism: false,
        trace: Some(path.clone()),
        ..Settings::default()
    };
    run_seeds(&spec, &settings, &|| pingpong(TRACED_ROUND_TRIPS))
        .unwrap_or_else(|failure| panic!("{failure}"));
    let written = std::fs::metadata(&path).map_or(0, |m| m.len());
    assert!(written > 0, "the trace was written");
    std::fs::remove_file(&path).expect("the trace file is removed");
    // The round trips' virtual time: 2 ms each at the fixed latency.
    spec::LATENCY * 2 * TRACED_ROUND_TRIPS as u32
}

/// Every link 1 ms one way, no tail: the comparison's fixed latency.
fn fixed_latency() {
    crashtest::net::configure(NetConfig {
        latency: Latency {
            min: spec::LATENCY,
            max: spec::LATENCY,
            tail: Ratio::NEVER,
            tail_max: spec::LATENCY,
        },
        ..NetConfig::default()
    });
}

/// Every link's latency drawn per message, uniformly from 0.5 ms to 1.5 ms, no tail.
fn jittered_latency() {
    crashtest::net::configure(NetConfig {
        latency: Latency {
            min: spec::jitter_min(),
            max: spec::jitter_max(),
            tail: Ratio::NEVER,
            tail_max: spec::jitter_max(),
        },
        ..NetConfig::default()
    });
}

/// The links of a fanout run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    /// Exactly 1 ms, every message sent at once: writes due at the same instant merge.
    Fixed,
    /// 0.5..1.5 ms per message, a message every millisecond: each its own delivery.
    Jittered,
}

/// Connects to `host`, retrying every millisecond while nothing listens there yet.
async fn connect(host: &str) -> std::io::Result<TcpStream> {
    loop {
        match TcpStream::connect((host, PORT)).await {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                time::sleep(Duration::from_millis(1)).await;
            }
            result => return result,
        }
    }
}

async fn send(stream: &mut TcpStream, number: u64) -> std::io::Result<()> {
    stream.write_all(&frame(number)).await?;
    stream.flush().await
}

async fn receive(stream: &mut TcpStream) -> std::io::Result<Option<u64>> {
    let mut message = [0; MESSAGE_BYTES];
    match stream.read_exact(&mut message).await {
        Ok(_) => Ok(Some(frame_number(&message))),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// A server node echoing every request, and the test body as a client making sequential
/// request/reply round trips over one TCP stream.
async fn pingpong(round_trips: u64) {
    fixed_latency();
    node::create("server", || async {
        let listener = TcpListener::bind(("0.0.0.0", PORT)).await.expect("bind");
        let (mut stream, _) = listener.accept().await.expect("accept");
        while let Some(number) = receive(&mut stream).await.expect("receive") {
            send(&mut stream, number).await.expect("reply");
        }
    });
    let mut stream = connect("server").await.expect("connect");
    for number in 0..round_trips {
        send(&mut stream, number).await.expect("send");
        assert_eq!(receive(&mut stream).await.expect("receive"), Some(number));
    }
}

async fn timers() {
    let sleepers: Vec<_> = (0..spec::TIMER_TASKS)
        .map(|index| {
            task::spawn_local(async move {
                let mut rng = WorkloadRng::new(spec::TIMERS_SEED, index);
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

async fn spawn_join() {
    let handles: Vec<_> = (0..spec::SPAWN_TASKS)
        .map(|i| task::spawn_local(async move { i }))
        .collect();
    for (i, handle) in (0..spec::SPAWN_TASKS).zip(handles) {
        assert_eq!(handle.await.expect("a trivial task finishes"), i);
    }
}

fn node_name(index: u64) -> String {
    format!("node{index}")
}

/// Every node connects to every other one; each sends its messages to seeded random peers,
/// then closes its streams; each counts what arrives until every incoming stream ends.
async fn fanout(links: Links) {
    match links {
        Links::Fixed => fixed_latency(),
        Links::Jittered => jittered_latency(),
    }
    let seed = match links {
        Links::Fixed => spec::FANOUT_SEED,
        Links::Jittered => spec::FANOUT_JITTER_SEED,
    };
    let received = Rc::new(Cell::new(0u64));
    let finished = Rc::new(Cell::new(0u64));
    for me in 0..FANOUT_NODES {
        let (received, finished) = (received.clone(), finished.clone());
        node::create(node_name(me), move || {
            let (received, finished) = (received.clone(), finished.clone());
            async move {
                let mine = fanout_node(seed, me, links).await.expect("a fanout node");
                received.set(received.get() + mine);
                finished.set(finished.get() + 1);
            }
        });
    }
    while finished.get() < FANOUT_NODES {
        time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(received.get(), FANOUT_NODES * FANOUT_MESSAGES_PER_NODE);
}

/// One fanout node; returns the messages it received.
async fn fanout_node(seed: u64, me: u64, links: Links) -> std::io::Result<u64> {
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    let receiving = task::spawn_local(async move {
        let mut readers = Vec::new();
        for _ in 1..FANOUT_NODES {
            let (mut stream, _) = listener.accept().await?;
            readers.push(task::spawn_local(async move {
                let mut count = 0;
                while receive(&mut stream).await?.is_some() {
                    count += 1;
                }
                Ok::<u64, std::io::Error>(count)
            }));
        }
        let mut received = 0;
        for reader in readers {
            received += reader.await.expect("a reader finishes")?;
        }
        Ok::<u64, std::io::Error>(received)
    });
    let mut peers = Vec::new();
    for pick in 0..FANOUT_NODES - 1 {
        peers.push(connect(&node_name(spec::fanout_destination(me, pick))).await?);
    }
    let mut rng = WorkloadRng::new(seed, me);
    for number in 0..FANOUT_MESSAGES_PER_NODE {
        let pick = rng.range_inclusive(0, FANOUT_NODES - 2);
        send(&mut peers[pick as usize], number).await?;
        if links == Links::Jittered {
            time::sleep(spec::FANOUT_JITTER_GAP).await;
        }
    }
    for mut peer in peers {
        peer.shutdown().await?;
    }
    receiving.await.expect("the receiver finishes")
}

async fn sleep_for(tasks: u64, span: Duration) {
    let end = time::Instant::now() + span;
    let handles: Vec<_> = (0..tasks)
        .map(|index| {
            task::spawn_local(async move {
                let mut rng = WorkloadRng::new(4, index);
                loop {
                    let wake = time::Instant::now() + rng.sleep();
                    if wake > end {
                        break;
                    }
                    time::sleep_until(wake).await;
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.expect("a sleeper finishes");
    }
}
