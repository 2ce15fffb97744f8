//! The workloads, each a real simulation measured from outside.

use std::time::Duration;

use crashtest::{Sim, node, task, time};
use tokio::sync::mpsc;

/// A workload the benchmark can run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Workload {
    /// 2 nodes, 200,000 sequential request/reply round trips, 1 ms one-way latency.
    Pingpong,
    /// 10,000 tasks x 100 seeded sleeps of 1 ms..1 s.
    Timers,
    /// Spawn and join 1,000,000 trivial tasks.
    Spawn,
    /// 200 separate simulations of 1,000 round trips each.
    Seeds,
    /// 1,000 tasks sleeping seeded 1 ms..1 s at a time for one hour of virtual time.
    Hour,
}

/// What one run of a workload did and how long it took.
pub(crate) struct Measured {
    pub(crate) wall: Duration,
    pub(crate) virtual_time: Duration,
    pub(crate) units: u64,
    pub(crate) unit: &'static str,
    pub(crate) what: &'static str,
}

impl Workload {
    pub(crate) const ALL: [Workload; 5] = [
        Workload::Pingpong,
        Workload::Timers,
        Workload::Spawn,
        Workload::Seeds,
        Workload::Hour,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Pingpong => "pingpong",
            Workload::Timers => "timers",
            Workload::Spawn => "spawn",
            Workload::Seeds => "seeds",
            Workload::Hour => "hour",
        }
    }

    pub(crate) fn run(self) -> Measured {
        match self {
            Workload::Pingpong => {
                let (wall, virtual_time) = timed(|| run_sim(1, pingpong(200_000)));
                Measured {
                    wall,
                    virtual_time,
                    units: 200_000,
                    unit: "round trips/s",
                    what: "2 nodes, 200000 request/reply round trips, 1 ms one-way latency",
                }
            }
            Workload::Timers => {
                let (wall, virtual_time) = timed(|| run_sim(2, timers(10_000, 100)));
                Measured {
                    wall,
                    virtual_time,
                    units: 1_000_000,
                    unit: "timer events/s",
                    what: "10000 tasks x 100 seeded sleeps of 1 ms..1 s",
                }
            }
            Workload::Spawn => {
                let (wall, virtual_time) = timed(|| run_sim(3, spawn_join(1_000_000)));
                Measured {
                    wall,
                    virtual_time,
                    units: 1_000_000,
                    unit: "tasks/s",
                    what: "spawn and join 1000000 trivial tasks",
                }
            }
            Workload::Seeds => {
                let (wall, virtual_time) = timed(|| {
                    (0..200)
                        .map(|seed| run_sim(seed, pingpong(1_000)))
                        .sum::<Duration>()
                });
                Measured {
                    wall,
                    virtual_time,
                    units: 200,
                    unit: "seeds/s",
                    what: "200 simulations of 2 nodes x 1000 round trips, one after another",
                }
            }
            Workload::Hour => {
                let (wall, virtual_time) =
                    timed(|| run_sim(4, sleep_for(1_000, Duration::from_secs(3600))));
                Measured {
                    wall,
                    virtual_time,
                    units: 3600,
                    unit: "virtual seconds/s",
                    what: "1000 tasks sleeping seeded 1 ms..1 s for one hour of virtual time",
                }
            }
        }
    }
}

fn timed(f: impl FnOnce() -> Duration) -> (Duration, Duration) {
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark measures real time"
    )]
    let start = std::time::Instant::now();
    let virtual_time = f();
    (start.elapsed(), virtual_time)
}

fn run_sim(seed: u64, body: impl Future<Output = ()> + 'static) -> Duration {
    let summary = Sim::new(seed)
        .run(body)
        .unwrap_or_else(|failure| panic!("{failure}"));
    summary.elapsed
}

const LATENCY: Duration = Duration::from_millis(1);

/// A client node and a server node; each message waits out the link latency before it is
/// handed over (an in-simulation channel stands in for the network).
async fn pingpong(round_trips: u32) {
    let (request_tx, request_rx) = mpsc::unbounded_channel::<u32>();
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<u32>();
    let request_rx = std::rc::Rc::new(std::cell::RefCell::new(Some(request_rx)));
    node::create("server", move || {
        let reply_tx = reply_tx.clone();
        let mut requests = request_rx
            .borrow_mut()
            .take()
            .expect("the server starts once");
        async move {
            while let Some(n) = requests.recv().await {
                time::sleep(LATENCY).await;
                reply_tx.send(n).expect("the client waits for every reply");
            }
        }
    });
    let client = task::spawn_local(async move {
        for n in 0..round_trips {
            time::sleep(LATENCY).await;
            request_tx.send(n).expect("the server is up");
            assert_eq!(reply_rx.recv().await, Some(n));
        }
    });
    client.await.expect("the client finishes");
}

async fn timers(tasks: u32, sleeps: u32) {
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            task::spawn_local(async move {
                for _ in 0..sleeps {
                    let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 1000));
                    time::sleep(Duration::from_millis(ms)).await;
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.expect("a sleeper finishes");
    }
}

async fn spawn_join(tasks: u32) {
    let handles: Vec<_> = (0..tasks)
        .map(|i| task::spawn_local(async move { i }))
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(handle.await.expect("a trivial task finishes") as usize, i);
    }
}

async fn sleep_for(tasks: u32, span: Duration) {
    let end = time::Instant::now() + span;
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            task::spawn_local(async move {
                loop {
                    let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 1000));
                    let wake = time::Instant::now() + Duration::from_millis(ms);
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
