//! The stand-in is as deterministic as the core: a seed replays exactly, and seeds differ.

use crashtest_tokio as tokio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tasks spawned through the stand-in that interleave by yielding and sleeping.
async fn interleaving() -> Vec<u32> {
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut set = tokio::task::JoinSet::new();
    for task in 0..6 {
        let order = order.clone();
        set.spawn(async move {
            for step in 0..4 {
                order.lock().unwrap().push(task * 10 + step);
                if step % 2 == 0 {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        });
    }
    while set.join_next().await.is_some() {}
    order.lock().unwrap().clone()
}

#[test]
fn a_seed_replays_the_same_run_through_the_stand_in() {
    let run = crashtest::check_determinism(7, crashtest::Config::default(), || async {
        interleaving().await;
    });
    assert!(run.expect("no divergence").is_ok());
}

#[test]
fn seeds_interleave_stand_in_tasks_differently() {
    let run = |seed| {
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let out = order.clone();
        let summary = crashtest::Sim::new(seed)
            .run(async move {
                *out.borrow_mut() = interleaving().await;
            })
            .unwrap();
        (summary.fingerprint, order.take())
    };
    assert_eq!(run(1), run(1));
    let distinct: std::collections::BTreeSet<_> = (0..8).map(run).collect();
    let orders: std::collections::BTreeSet<_> = distinct.iter().map(|(_, order)| order).collect();
    assert!(orders.len() > 1, "every seed ran the same interleaving");
    assert_eq!(distinct.len(), 8, "two seeds gave one fingerprint");
}

/// Which of two always-ready branches each of 32 unbiased selects picked.
fn select_picks(seed: u64) -> Vec<u8> {
    let picks = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = picks.clone();
    crashtest::Sim::new(seed)
        .run(async move {
            for _ in 0..32 {
                let pick = tokio::select! {
                    _ = std::future::ready(()) => 0,
                    _ = std::future::ready(()) => 1,
                };
                out.borrow_mut().push(pick);
            }
        })
        .unwrap();
    picks.take()
}

#[test]
fn an_unbiased_select_picks_by_the_seed() {
    assert_eq!(select_picks(3), select_picks(3));
    let first = select_picks(3);
    assert!(
        first.contains(&0) && first.contains(&1),
        "one seed varies its picks"
    );
    assert_ne!(select_picks(3), select_picks(4), "seeds pick differently");
}

/// Datagrams from three nodes, awaited through readiness and peeking: what the receiver saw.
async fn datagram_readiness() -> Vec<(String, usize)> {
    for sender in 0..3u8 {
        crashtest::node::create(format!("sender{sender}"), move || async move {
            let socket = tokio::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
            for i in 0..5u64 {
                tokio::time::sleep(Duration::from_millis(1 + (i * 7 + u64::from(sender)) % 5))
                    .await;
                let _ = socket.send_to(&[sender; 8], "receiver:9000").await;
            }
        });
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    crashtest::node::create("receiver", move || {
        let seen = out.clone();
        async move {
            let socket = tokio::net::UdpSocket::bind("0.0.0.0:9000").await.unwrap();
            loop {
                socket.readable().await.unwrap();
                let from = socket.peek_sender().await.unwrap();
                let mut buf = [0; 16];
                let (n, _) = socket.recv_from(&mut buf).await.unwrap();
                seen.lock().unwrap().push((from.ip().to_string(), n));
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    seen.lock().unwrap().clone()
}

/// Requires a cluster's run to replay by seed (seed 3, twice) and seeds 0..6 not all to
/// give one fingerprint; each run must see something.
fn replays_by_seed_and_seeds_differ<T, F>(cluster: fn() -> F)
where
    F: std::future::Future<Output = Vec<T>> + 'static,
{
    let run = crashtest::check_determinism(3, crashtest::Config::default(), move || async move {
        cluster().await;
    });
    assert!(run.expect("no divergence").is_ok());
    let fingerprints: std::collections::BTreeSet<_> = (0..6)
        .map(|seed| {
            crashtest::Sim::new(seed)
                .run(async move {
                    assert!(!cluster().await.is_empty(), "the run saw nothing");
                })
                .unwrap()
                .fingerprint
        })
        .collect();
    assert!(fingerprints.len() > 1, "every seed gave one fingerprint");
}

#[test]
fn datagram_readiness_replays_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(datagram_readiness);
}

/// The order in which six tasks waiting on one `watch` channel see a change, as a graceful
/// shutdown's tasks would.
async fn watch_wake_order() -> Vec<u32> {
    let (tx, rx) = tokio::sync::watch::channel(0u32);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut set = tokio::task::JoinSet::new();
    for task in 0..6 {
        let (mut rx, order) = (rx.clone(), order.clone());
        set.spawn(async move {
            rx.changed().await.unwrap();
            order.lock().unwrap().push(task);
        });
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    tx.send(1).unwrap();
    while set.join_next().await.is_some() {}
    order.lock().unwrap().clone()
}

/// The orders `scenario` gives under seeds 0..8, each seed's checked to replay exactly.
fn orders_by_seed<F>(scenario: fn() -> F) -> std::collections::BTreeSet<Vec<u32>>
where
    F: std::future::Future<Output = Vec<u32>> + 'static,
{
    for seed in 0..8 {
        let run =
            crashtest::check_determinism(seed, crashtest::Config::default(), move || async move {
                scenario().await;
            });
        assert!(run.expect("no divergence").is_ok());
    }
    (0..8)
        .map(|seed| {
            let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
            let out = order.clone();
            crashtest::Sim::new(seed)
                .run(async move { *out.borrow_mut() = scenario().await })
                .unwrap();
            order.take()
        })
        .collect()
}

#[test]
fn watch_receivers_wake_in_an_order_the_seed_decides() {
    let orders = orders_by_seed(watch_wake_order);
    assert!(
        orders.len() > 1,
        "every seed woke the receivers in one order"
    );
}

/// The order in which six tasks released by one `Barrier` go on, and which of them led.
async fn barrier_release_order() -> Vec<u32> {
    let barrier = Arc::new(tokio::sync::Barrier::new(6));
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut set = tokio::task::JoinSet::new();
    for task in 0..6u32 {
        let (barrier, order) = (barrier.clone(), order.clone());
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(u64::from(task))).await;
            let leader = barrier.wait().await.is_leader();
            order.lock().unwrap().push(task * 10 + u32::from(leader));
        });
    }
    while set.join_next().await.is_some() {}
    order.lock().unwrap().clone()
}

#[test]
fn barrier_waiters_go_on_in_an_order_the_seed_decides() {
    let orders = orders_by_seed(barrier_release_order);
    for order in &orders {
        // The last to arrive (task 5, after the longest sleep) leads, and only it.
        assert_eq!(order.iter().filter(|&&t| t % 10 == 1).count(), 1);
        assert!(order.contains(&51), "task 5 did not lead: {order:?}");
    }
    assert!(
        orders.len() > 1,
        "every seed released the waiters in one order"
    );
}

/// Which of twelve producers' `send_timeout`s got into a two-slot channel that a slow
/// consumer drains, in the order it received them.
async fn send_timeout_outcomes() -> Vec<u32> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let mut set = tokio::task::JoinSet::new();
    for producer in 0..12u32 {
        let tx = tx.clone();
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(u64::from(producer % 3))).await;
            let _ = tx.send_timeout(producer, Duration::from_millis(5)).await;
        });
    }
    drop(tx);
    let mut received = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_millis(2)).await;
        match rx.recv().await {
            Some(producer) => received.push(producer),
            None => break,
        }
    }
    while set.join_next().await.is_some() {}
    received
}

#[test]
fn send_timeouts_replay_by_seed_and_seeds_differ() {
    for seed in 0..4 {
        let run = crashtest::check_determinism(seed, crashtest::Config::default(), || async {
            send_timeout_outcomes().await;
        });
        assert!(run.expect("no divergence").is_ok());
    }
    let runs: std::collections::BTreeSet<(u64, Vec<u32>)> = (0..8)
        .map(|seed| {
            let received = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
            let out = received.clone();
            let summary = crashtest::Sim::new(seed)
                .run(async move { *out.borrow_mut() = send_timeout_outcomes().await })
                .unwrap();
            (summary.fingerprint, received.take())
        })
        .collect();
    assert!(
        runs.iter().all(|(_, received)| received.len() < 12),
        "a full channel timed some sends out: {runs:?}"
    );
    let fingerprints: std::collections::BTreeSet<u64> = runs.iter().map(|(f, _)| *f).collect();
    assert!(fingerprints.len() > 1, "every seed gave one fingerprint");
}

/// Blocking closures and tasks taking turns at one mutex: each closure's `blocking_lock`
/// finds the lock free or fails the run, so which happens depends on the interleaving the
/// seed draws. The order of the values pushed, or the refusal's text.
async fn blocking_lock_turns() -> String {
    let log = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let mut set = tokio::task::JoinSet::new();
    for task in 0..6u32 {
        let log = log.clone();
        if task % 2 == 0 {
            set.spawn_blocking(move || log.blocking_lock().push(task));
        } else {
            set.spawn(async move {
                let mut held = log.lock().await;
                held.push(task);
                tokio::task::yield_now().await;
            });
        }
    }
    while set.join_next().await.is_some() {}
    format!("{:?}", log.lock().await)
}

#[test]
fn blocking_locks_replay_by_seed_and_seeds_differ() {
    for seed in 0..4 {
        let run = crashtest::check_determinism(seed, crashtest::Config::default(), || async {
            blocking_lock_turns().await;
        });
        // A refused run replays too: its outcome is the seed's either way.
        let _outcome = run.expect("no divergence");
    }
    let outcomes: std::collections::BTreeSet<String> = (0..16)
        .map(|seed| {
            let out = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
            let logged = out.clone();
            match crashtest::Sim::new(seed)
                .run(async move { *logged.borrow_mut() = blocking_lock_turns().await })
            {
                Ok(summary) => format!("{} {}", summary.fingerprint, out.take()),
                Err(failure) => {
                    let text = failure.to_string();
                    assert!(text.contains("blocking_lock on a held lock"), "{text}");
                    "refused".to_owned()
                }
            }
        })
        .collect();
    assert!(outcomes.len() > 1, "every seed ran the same: {outcomes:?}");
    assert!(
        outcomes.contains("refused"),
        "some seed lets a task hold the lock across its yield while a closure asks for it"
    );
}

/// Streams from three nodes, read through `readable` and `try_read` and peeked first: what
/// the receiver saw, in order.
async fn stream_readiness() -> Vec<(String, usize)> {
    for sender in 0..3u8 {
        crashtest::node::create(format!("writer{sender}"), move || async move {
            let stream = tokio::net::TcpStream::connect("reader:9000").await.unwrap();
            for i in 0..4u64 {
                tokio::time::sleep(Duration::from_millis(1 + (i * 5 + u64::from(sender)) % 4))
                    .await;
                stream.writable().await.unwrap();
                let _ = stream.try_write(&[sender; 6]);
            }
        });
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    crashtest::node::create("reader", move || {
        let seen = out.clone();
        async move {
            let listener = tokio::net::TcpListener::bind("0.0.0.0:9000").await.unwrap();
            loop {
                let (stream, peer) = listener.accept().await.unwrap();
                let seen = seen.clone();
                tokio::spawn(async move {
                    loop {
                        stream.readable().await.unwrap();
                        let mut head = [0; 1];
                        if stream.peek(&mut head).await.unwrap() == 0 {
                            return;
                        }
                        let mut buf = [0; 64];
                        match stream.try_read(&mut buf) {
                            Ok(0) => return,
                            Ok(n) => seen.lock().unwrap().push((peer.ip().to_string(), n)),
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    seen.lock().unwrap().clone()
}

#[test]
fn stream_readiness_replays_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(stream_readiness);
}

/// Four tasks writing records through clones of one file, so that each writes at the cursor
/// the others moved: what the file holds depends on the order the tasks ran in.
async fn cloned_file_writers() -> Vec<u8> {
    let file = tokio::fs::File::create("/shared").await.unwrap();
    let mut set = tokio::task::JoinSet::new();
    for task in 0..4u8 {
        let mut clone = file.try_clone().await.unwrap();
        set.spawn(async move {
            use tokio::io::AsyncWriteExt;
            for record in 0..3u8 {
                clone
                    .write_all(&[b'a' + task, b'0' + record])
                    .await
                    .unwrap();
                clone.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    drop(file);
    let written = tokio::fs::read("/shared").await.unwrap();
    assert_eq!(written.len(), 4 * 3 * 2, "no record overwrote another");
    written
}

#[test]
fn cloned_file_writers_replay_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(cloned_file_writers);
}

/// Four tasks setting one file's permission bits in turn: the bits left depend on the order
/// the tasks ran in, and each change is a disk event of the run.
async fn racing_chmods() -> Vec<u32> {
    use std::os::unix::fs::PermissionsExt;
    tokio::fs::write("/shared", b"x").await.unwrap();
    let mut set = tokio::task::JoinSet::new();
    for task in 0..4u32 {
        set.spawn(async move {
            for round in 0..2u32 {
                let mode = 0o600 | (task << 3) | round;
                let permissions = std::fs::Permissions::from_mode(mode);
                tokio::fs::set_permissions("/shared", permissions)
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        });
    }
    let mut seen = Vec::new();
    while set.join_next().await.is_some() {
        let meta = tokio::fs::metadata("/shared").await.unwrap();
        seen.push(meta.permissions().mode() & 0o7777);
    }
    seen
}

#[test]
fn racing_chmods_replay_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(racing_chmods);
}

/// Four tasks racing to link their own file to one name: which task's file the name leads
/// to depends on the order the tasks ran in, and every link is a disk event of the run.
async fn racing_links() -> Vec<u8> {
    let mut set = tokio::task::JoinSet::new();
    for task in 0..4u8 {
        set.spawn(async move {
            let own = format!("/from-{task}");
            tokio::fs::write(&own, [task]).await.unwrap();
            tokio::task::yield_now().await;
            let linked = tokio::fs::hard_link(&own, "/winner").await;
            assert!(
                linked.is_ok() || linked.unwrap_err().kind() == std::io::ErrorKind::AlreadyExists
            );
        });
    }
    while set.join_next().await.is_some() {}
    tokio::fs::read("/winner").await.unwrap()
}

#[test]
fn racing_links_replay_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(racing_links);
}

/// Four tasks writing files at times the disk's seeded latency decides: their modification
/// times, as std's metadata reads them, are part of what a seed replays.
async fn file_times() -> Vec<u128> {
    let mut set = tokio::task::JoinSet::new();
    for task in 0..4u8 {
        set.spawn(async move {
            let path = format!("/file-{task}");
            for round in 0..3u8 {
                tokio::fs::write(&path, [task, round]).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    let mut times = Vec::new();
    for task in 0..4u8 {
        let meta = tokio::fs::metadata(format!("/file-{task}")).await.unwrap();
        let modified = meta.modified().unwrap();
        times.push(
            modified
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos(),
        );
    }
    times
}

#[test]
fn file_times_replay_by_seed_and_seeds_differ() {
    replays_by_seed_and_seeds_differ(file_times);
}
