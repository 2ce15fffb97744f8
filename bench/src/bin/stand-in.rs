//! The tokio stand-in's cost, in two halves; prints one JSON line per measurement.
//!
//! Inside a simulation: the same workload written against `crashtest::{net, time, task}` and
//! against the stand-in (`tokio::...` as a tokio program writes it), run in the same process
//! in alternating order over several rounds. The figure is the median over rounds of the
//! per-round ratio stand-in / direct, with its minimum and maximum (target: at most 1.10).
//!
//! Outside a simulation: the stand-in's calls against plain tokio's on a current-thread
//! runtime (target: one thread-local check per call, so a few nanoseconds at most).
//!
//! `cargo run --release -p crashtest-bench --bin stand-in [-- --rounds N]`

use std::io::ErrorKind;
use std::time::Duration;

use clap::Parser;
use serde::Serialize;

/// Measure the tokio stand-in against crashtest's own API and against tokio.
#[derive(Debug, Parser)]
struct Args {
    /// Rounds per comparison (each round runs both sides once, alternating which goes first).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Run only this comparison (by its name in the output).
    #[arg(long)]
    only: Option<String>,
    /// Run only one side of it once, unmeasured (for profilers and instruction counters).
    #[arg(long, value_enum, requires = "only")]
    side: Option<Side>,
}

/// One side of a comparison.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Side {
    Baseline,
    StandIn,
}

/// What to run: every comparison, one, or one side of one.
struct Plan {
    rounds: u32,
    only: Option<String>,
    side: Option<Side>,
}

/// One comparison's result line.
#[derive(Debug, Serialize)]
struct Line {
    comparison: &'static str,
    what: &'static str,
    rounds: u32,
    baseline: &'static str,
    baseline_median_s: f64,
    stand_in_median_s: f64,
    /// Median of the per-round ratios stand-in / baseline.
    ratio_median: f64,
    ratio_min: f64,
    ratio_max: f64,
    /// For the calls outside a simulation: nanoseconds per operation, each side.
    baseline_ns_per_op: Option<f64>,
    stand_in_ns_per_op: Option<f64>,
    target: &'static str,
}

/// Times `f`.
fn timed(f: impl FnOnce()) -> Duration {
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark measures real time"
    )]
    let start = std::time::Instant::now();
    f();
    start.elapsed()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs `baseline` and `stand_in` `rounds` times each, alternating their order, and prints the
/// comparison (or, as the plan says, only one of them, or one side once).
#[allow(clippy::too_many_arguments, reason = "one line's fields")]
fn compare(
    plan: &Plan,
    comparison: &'static str,
    what: &'static str,
    baseline_name: &'static str,
    target: &'static str,
    ops: Option<u64>,
    baseline: &dyn Fn(),
    stand_in: &dyn Fn(),
) {
    if plan.only.as_deref().is_some_and(|only| only != comparison) {
        return;
    }
    match plan.side {
        Some(Side::Baseline) => return baseline(),
        Some(Side::StandIn) => return stand_in(),
        None => {}
    }
    let rounds = plan.rounds;
    // One unmeasured run of each: the cold start (allocator, page faults) is not the cost.
    baseline();
    stand_in();
    let (mut base, mut mine, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (b, s) = if round % 2 == 0 {
            let b = timed(baseline);
            (b, timed(stand_in))
        } else {
            let s = timed(stand_in);
            (timed(baseline), s)
        };
        base.push(b.as_secs_f64());
        mine.push(s.as_secs_f64());
        ratios.push(s.as_secs_f64() / b.as_secs_f64());
    }
    let (base_median, mine_median) = (median(&mut base), median(&mut mine));
    let per_op = |seconds: f64| ops.map(|ops| seconds * 1e9 / ops as f64);
    let line = Line {
        comparison,
        what,
        rounds,
        baseline: baseline_name,
        baseline_median_s: base_median,
        stand_in_median_s: mine_median,
        ratio_median: median(&mut ratios),
        ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratio_max: ratios.iter().copied().fold(0.0, f64::max),
        baseline_ns_per_op: per_op(base_median),
        stand_in_ns_per_op: per_op(mine_median),
        target,
    };
    println!(
        "{}",
        serde_json::to_string(&line).expect("a line serializes")
    );
}

/// A workload written once, for crashtest's API (`direct`) and the stand-in (`stand_in`):
/// the same code with `net`, `time` and `spawn_local` taken from either.
macro_rules! both {
    ($name:ident, |$net:ident, $time:ident, $spawn_local:ident| $body:block) => {
        mod $name {
            pub(super) mod direct {
                #[allow(unused_imports, reason = "each workload uses some of them")]
                use crashtest::{net as $net, task::spawn_local as $spawn_local, time as $time};
                pub(crate) async fn run() $body
            }
            pub(super) mod stand_in {
                #[allow(unused_imports, reason = "each workload uses some of them")]
                use crashtest_tokio::{net as $net, task::spawn_local as $spawn_local, time as $time};
                pub(crate) async fn run() $body
            }
        }
    };
}

const ROUND_TRIPS: u64 = 20_000;
const TIMER_TASKS: u64 = 1_000;
const SLEEPS_PER_TASK: u64 = 100;
const SPAWNED: u64 = 200_000;

both!(pingpong, |net, time, spawn_local| {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    crashtest::node::create("server", || async {
        let listener = net::TcpListener::bind("0.0.0.0:7000").await.expect("bind");
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut message = [0; 64];
        while stream.read_exact(&mut message).await.is_ok() {
            stream.write_all(&message).await.expect("reply");
        }
    });
    let mut stream = loop {
        match net::TcpStream::connect("server:7000").await {
            Err(e) if e.kind() == super::super::ErrorKind::ConnectionRefused => {
                time::sleep(std::time::Duration::from_millis(1)).await;
            }
            connected => break connected.expect("connect"),
        }
    };
    let mut message = [7; 64];
    for _ in 0..super::super::ROUND_TRIPS {
        stream.write_all(&message).await.expect("send");
        stream.read_exact(&mut message).await.expect("receive");
    }
});

both!(timers, |net, time, spawn_local| {
    let sleepers: Vec<_> = (0..super::super::TIMER_TASKS)
        .map(|task| {
            spawn_local(async move {
                for step in 0..super::super::SLEEPS_PER_TASK {
                    let ms = 1 + (task * 7919 + step * 104_729) % 1000;
                    time::sleep(std::time::Duration::from_millis(ms)).await;
                }
            })
        })
        .collect();
    for sleeper in sleepers {
        sleeper.await.expect("a sleeper finishes");
    }
});

both!(spawn_join, |net, time, spawn_local| {
    let handles: Vec<_> = (0..super::super::SPAWNED)
        .map(|i| spawn_local(async move { i }))
        .collect();
    for (i, handle) in (0..super::super::SPAWNED).zip(handles) {
        assert_eq!(handle.await.expect("a trivial task finishes"), i);
    }
});

fn simulate<F: std::future::Future<Output = ()> + 'static>(body: impl FnOnce() -> F) {
    crashtest::Sim::new(1)
        .run(body())
        .unwrap_or_else(|failure| panic!("{failure}"));
}

/// A current-thread tokio runtime, for the calls outside a simulation.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

const OUTSIDE_OPS: u64 = 200_000;

/// Polls `future` once and drops it, asserting it was pending.
async fn poll_once(future: impl Future<Output = ()>) {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        assert!(
            future.as_mut().poll(cx).is_pending(),
            "the sleep is pending"
        );
        std::task::Poll::Ready(())
    })
    .await;
}

fn main() {
    let args = Args::parse();
    let plan = &Plan {
        rounds: args.rounds,
        only: args.only,
        side: args.side,
    };
    let inside = "a simulation through the stand-in at most 1.10x one through crashtest's API";
    compare(
        plan,
        "pingpong",
        "2 nodes, 20000 request/reply round trips of 64 bytes over simulated TCP",
        "crashtest::net",
        inside,
        None,
        &|| simulate(pingpong::direct::run),
        &|| simulate(pingpong::stand_in::run),
    );
    compare(
        plan,
        "timers",
        "1000 tasks x 100 sleeps of 1 ms..1 s",
        "crashtest::time",
        inside,
        None,
        &|| simulate(timers::direct::run),
        &|| simulate(timers::stand_in::run),
    );
    compare(
        plan,
        "spawn",
        "spawn and join 200000 trivial tasks",
        "crashtest::task",
        inside,
        None,
        &|| simulate(spawn_join::direct::run),
        &|| simulate(spawn_join::stand_in::run),
    );

    let outside = "one thread-local check per call over plain tokio";
    let rt = runtime();
    compare(
        plan,
        "outside-spawn",
        "spawn and join a trivial task on a current-thread runtime, outside a simulation",
        "tokio::spawn",
        outside,
        Some(OUTSIDE_OPS),
        &|| {
            rt.block_on(async {
                for i in 0..OUTSIDE_OPS {
                    assert_eq!(tokio::spawn(async move { i }).await.expect("joins"), i);
                }
            });
        },
        &|| {
            rt.block_on(async {
                for i in 0..OUTSIDE_OPS {
                    let joined = crashtest_tokio::spawn(async move { i }).await;
                    assert_eq!(joined.expect("joins"), i);
                }
            });
        },
    );
    compare(
        plan,
        "outside-instant",
        "read the monotonic clock, outside a simulation",
        "tokio::time::Instant::now",
        outside,
        Some(OUTSIDE_OPS * 10),
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS * 10 {
                    std::hint::black_box(tokio::time::Instant::now());
                }
            });
        },
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS * 10 {
                    std::hint::black_box(crashtest_tokio::time::Instant::now());
                }
            });
        },
    );
    compare(
        plan,
        "outside-timeout",
        "wrap a ready future in a one-minute timeout and await it, outside a simulation",
        "tokio::time::timeout",
        outside,
        Some(OUTSIDE_OPS),
        &|| {
            rt.block_on(async {
                for i in 0..OUTSIDE_OPS {
                    let done = tokio::time::timeout(Duration::from_secs(60), async { i }).await;
                    assert_eq!(done.expect("in time"), i);
                }
            });
        },
        &|| {
            rt.block_on(async {
                for i in 0..OUTSIDE_OPS {
                    let wrapped =
                        crashtest_tokio::time::timeout(Duration::from_secs(60), async { i });
                    assert_eq!(wrapped.await.expect("in time"), i);
                }
            });
        },
    );
    compare(
        plan,
        "outside-sleep",
        "make a one-minute sleep, poll it once (which arms its timer) and drop it, as a lost \
         select! branch does, outside a simulation",
        "tokio::time::sleep",
        outside,
        Some(OUTSIDE_OPS),
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS {
                    poll_once(tokio::time::sleep(Duration::from_secs(60))).await;
                }
            });
        },
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS {
                    poll_once(crashtest_tokio::time::sleep(Duration::from_secs(60))).await;
                }
            });
        },
    );
    compare(
        plan,
        "outside-yield",
        "yield to the scheduler, outside a simulation",
        "tokio::task::yield_now",
        outside,
        Some(OUTSIDE_OPS),
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS {
                    tokio::task::yield_now().await;
                }
            });
        },
        &|| {
            rt.block_on(async {
                for _ in 0..OUTSIDE_OPS {
                    crashtest_tokio::task::yield_now().await;
                }
            });
        },
    );
}
