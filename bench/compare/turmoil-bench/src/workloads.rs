//! The workloads as turmoil simulations.
//!
//! Every simulation's links take exactly 1 ms: turmoil draws a message's latency between
//! its minimum and maximum, and both are set to 1 ms. turmoil advances every host in lock
//! step by a fixed tick (1 ms by default, kept), so a simulation costs a step per virtual
//! millisecond even while nothing is due. A simulation ends when all its clients finish, so
//! workloads without a network run in one client, and fanout's nodes are all clients.

use std::cell::Cell;
use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

use compare_common::report::Workload;
use compare_common::spec::{
    self, FANOUT_MESSAGES_PER_NODE, FANOUT_NODES, MESSAGE_BYTES, PORT, WorkloadRng, frame,
    frame_number,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task;
use turmoil::net::{TcpListener, TcpStream};
use turmoil::{Builder, Sim};

const TICK_NOTE: &str = "turmoil steps every host in fixed 1 ms ticks (its default); \
    min and max message latency are both 1 ms";

/// The workloads, in crashtest-bench's order.
pub(crate) const ALL: [Workload; 7] = [
    Workload {
        name: "pingpong",
        what: "2 nodes, 200000 request/reply round trips of 64 bytes over simulated TCP, \
               1 ms one-way latency",
        units: spec::PINGPONG_ROUND_TRIPS,
        rate_unit: "round trips/s",
        note: Some(TICK_NOTE),
        run: || pingpong(spec::PINGPONG_SEED, spec::PINGPONG_ROUND_TRIPS),
    },
    Workload {
        name: "timers",
        what: "10000 tasks x 100 seeded sleeps of 1 ms..1 s",
        units: spec::TIMER_TASKS * spec::SLEEPS_PER_TASK,
        rate_unit: "timer events/s",
        note: Some(
            "one client runs the tasks on its tokio runtime; turmoil steps it in 1 ms ticks",
        ),
        run: timers,
    },
    Workload {
        name: "spawn",
        what: "spawn and join 1000000 trivial tasks",
        units: spec::SPAWN_TASKS,
        rate_unit: "tasks/s",
        note: Some("one client spawns the tasks with tokio::task::spawn_local"),
        run: spawn_join,
    },
    Workload {
        name: "fanout",
        what: "10 nodes each sending 20000 messages of 64 bytes to random others over \
               simulated TCP, 1 ms one-way latency",
        units: FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
        rate_unit: "messages/s",
        note: Some(
            "the 10 nodes are turmoil clients (a sim runs until its clients finish); \
             turmoil's per-stream flow control (64 segments) paces the senders; \
             1 ms ticks, min and max message latency both 1 ms",
        ),
        run: || fanout(Links::Fixed),
    },
    Workload {
        name: "fanout-jitter",
        what: "10 nodes each sending 20000 messages of 64 bytes to random others over \
               simulated TCP, one every 1 ms, each message's one-way latency drawn from \
               0.5..1.5 ms",
        units: FANOUT_NODES * FANOUT_MESSAGES_PER_NODE,
        rate_unit: "messages/s",
        note: Some(
            "min and max message latency 0.5 ms and 1.5 ms; turmoil draws a latency as the \
             minimum plus whole milliseconds of the span scaled by an exponential curve \
             (its default, Exp(5)), so most messages take 0.5 ms and about 0.7% take 1.5 ms, \
             delivered at its 1 ms ticks",
        ),
        run: || fanout(Links::Jittered),
    },
    Workload {
        name: "seeds",
        what: "200 simulations of 2 nodes x 1000 round trips over simulated TCP, one after \
               another",
        units: spec::SEEDS,
        rate_unit: "seeds/s",
        note: Some("each simulation is a new turmoil::Sim; 1 ms ticks, 1 ms latency"),
        run: || {
            (0..spec::SEEDS)
                .map(|seed| pingpong(seed, spec::SEED_ROUND_TRIPS))
                .sum()
        },
    },
    Workload {
        name: "seeds-threads",
        what: "the seeds workload's 200 simulations spread over 2 OS threads of one process",
        units: spec::SEEDS,
        rate_unit: "seeds/s",
        note: Some("each simulation is a new turmoil::Sim; 1 ms ticks, 1 ms latency"),
        run: || {
            spec::on_threads(spec::SWEEP_THREADS, |seed| {
                pingpong(seed, spec::SEED_ROUND_TRIPS)
            })
        },
    },
];

/// A simulation seeded `seed` with 1 ms links and no time limit the workloads could reach.
fn simulation(seed: u64) -> Sim<'static> {
    Builder::new()
        .rng_seed(seed)
        .min_message_latency(spec::LATENCY)
        .max_message_latency(spec::LATENCY)
        .simulation_duration(spec::VIRTUAL_TIME_LIMIT)
        .build()
}

/// The links of a fanout run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    /// Exactly 1 ms, every message sent at once.
    Fixed,
    /// 0.5..1.5 ms per message, a message every millisecond: each its own delivery.
    Jittered,
}

/// Runs `sim` until its clients finish; returns the virtual time it took.
fn finish(mut sim: Sim<'_>) -> Duration {
    sim.run().expect("the simulation finishes");
    sim.elapsed()
}

fn node_name(index: u64) -> String {
    format!("node{index}")
}

/// Connects to `host`, retrying every millisecond while nothing listens there yet.
async fn connect(host: &str) -> std::io::Result<TcpStream> {
    loop {
        match TcpStream::connect((host, PORT)).await {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            result => return result,
        }
    }
}

/// Sends one message.
async fn send(stream: &mut TcpStream, number: u64) -> std::io::Result<()> {
    stream.write_all(&frame(number)).await?;
    stream.flush().await
}

/// The next message on `stream`, or `None` at the end of the stream.
async fn receive(stream: &mut TcpStream) -> std::io::Result<Option<u64>> {
    let mut message = [0; MESSAGE_BYTES];
    match stream.read_exact(&mut message).await {
        Ok(_) => Ok(Some(frame_number(&message))),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// A server host echoing every request and a client making `round_trips` sequential
/// request/reply round trips over one TCP stream.
fn pingpong(seed: u64, round_trips: u64) -> Duration {
    let mut sim = simulation(seed);
    sim.host("server", || async {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, PORT)).await?;
        let (mut stream, _) = listener.accept().await?;
        while let Some(number) = receive(&mut stream).await? {
            send(&mut stream, number).await?;
        }
        Ok(())
    });
    sim.client("client", async move {
        let mut stream = connect("server").await?;
        for number in 0..round_trips {
            send(&mut stream, number).await?;
            assert_eq!(receive(&mut stream).await?, Some(number));
        }
        Ok(())
    });
    finish(sim)
}

fn timers() -> Duration {
    let mut sim = simulation(spec::TIMERS_SEED);
    sim.client("timers", async {
        let sleepers: Vec<_> = (0..spec::TIMER_TASKS)
            .map(|index| {
                task::spawn_local(async move {
                    let mut rng = WorkloadRng::new(spec::TIMERS_SEED, index);
                    for _ in 0..spec::SLEEPS_PER_TASK {
                        tokio::time::sleep(rng.sleep()).await;
                    }
                })
            })
            .collect();
        for sleeper in sleepers {
            sleeper.await?;
        }
        Ok(())
    });
    finish(sim)
}

fn spawn_join() -> Duration {
    let mut sim = simulation(spec::SPAWN_SEED);
    sim.client("spawner", async {
        let handles: Vec<_> = (0..spec::SPAWN_TASKS)
            .map(|i| task::spawn_local(async move { i }))
            .collect();
        for (i, handle) in (0..spec::SPAWN_TASKS).zip(handles) {
            assert_eq!(handle.await?, i);
        }
        Ok(())
    });
    finish(sim)
}

/// Every node connects to every other one; each sends its messages to seeded random peers,
/// then closes its streams; each counts what arrives until every incoming stream ends.
fn fanout(links: Links) -> Duration {
    let (seed, mut sim) = match links {
        Links::Fixed => (spec::FANOUT_SEED, simulation(spec::FANOUT_SEED)),
        Links::Jittered => (
            spec::FANOUT_JITTER_SEED,
            Builder::new()
                .rng_seed(spec::FANOUT_JITTER_SEED)
                .min_message_latency(spec::jitter_min())
                .max_message_latency(spec::jitter_max())
                .simulation_duration(spec::VIRTUAL_TIME_LIMIT)
                .build(),
        ),
    };
    let received = Rc::new(Cell::new(0));
    for me in 0..FANOUT_NODES {
        let received = Rc::clone(&received);
        sim.client(node_name(me), async move {
            let mine = fanout_node(seed, me, links).await?;
            received.set(received.get() + mine);
            Ok(())
        });
    }
    let elapsed = finish(sim);
    assert_eq!(received.get(), FANOUT_NODES * FANOUT_MESSAGES_PER_NODE);
    elapsed
}

/// One fanout node; returns the messages it received.
async fn fanout_node(seed: u64, me: u64, links: Links) -> std::io::Result<u64> {
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, PORT)).await?;
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
            received += reader.await??;
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
            tokio::time::sleep(spec::FANOUT_JITTER_GAP).await;
        }
    }
    for mut peer in peers {
        peer.shutdown().await?;
    }
    receiving.await?
}
