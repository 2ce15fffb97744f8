//! A kill inside a sync reaches the crash point an ordinary kill cannot: between the write
//! and the sync of one synchronous call. It finds a header overwritten in place without a
//! checksum, spares a store that never overwrites its last synced header, keeps the bound on
//! nodes down, and replays.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crashtest::fs::sync::File;
use crashtest::nemesis::Nemesis;
use crashtest::node::{self, Node};
use crashtest::{RunFailure, RunSummary, Sim, time};

/// A store's main, as a node runs it.
type Store = fn() -> Pin<Box<dyn Future<Output = ()>>>;

/// A header slot: a count and its complement, which agree unless the slot was torn.
const SLOT: u64 = 16;

/// The count a slot holds, `None` if its halves disagree; an all-zero slot (never written)
/// holds 0.
fn read_slot(file: &File, slot: u64) -> Option<u64> {
    let mut bytes = [0u8; SLOT as usize];
    let read = file.read_at(&mut bytes, slot * SLOT).unwrap_or(0);
    if read < bytes.len() || bytes == [0; SLOT as usize] {
        return Some(0);
    }
    let half = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let (count, complement) = (half(0), half(8));
    (count == !complement).then_some(count)
}

fn write_slot(file: &File, slot: u64, count: u64) -> std::io::Result<()> {
    let mut bytes = [0u8; SLOT as usize];
    bytes[..8].copy_from_slice(&count.to_le_bytes());
    bytes[8..].copy_from_slice(&(!count).to_le_bytes());
    file.write_all_at(&bytes, slot * SLOT)?;
    file.sync_all()
}

/// Opens the store's file, creating it (durably) on first boot.
fn open() -> std::io::Result<File> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .open("/store")?;
    file.sync_all()?;
    crashtest::fs::sync::sync_dir("/")?;
    Ok(file)
}

/// Counts commits in one header slot, overwritten in place and synced: a crash inside that
/// sync can tear it, and the store then cannot open.
async fn overwriting_store() {
    let Ok(file) = open() else { return };
    let mut count = read_slot(&file, 0).expect("torn header: the store cannot open");
    loop {
        count += 1;
        if write_slot(&file, 0, count).is_err() {
            return;
        }
        time::sleep(Duration::from_millis(10)).await;
    }
}

/// Counts commits in two slots taken in turn, so the one written last and synced is never
/// the one being overwritten; it opens from the newest slot whose halves agree.
async fn alternating_store(every: Duration) {
    let Ok(file) = open() else { return };
    let slots = [read_slot(&file, 0), read_slot(&file, 1)];
    let mut count = slots
        .into_iter()
        .flatten()
        .max()
        .expect("a synced slot survives any crash");
    loop {
        count += 1;
        if write_slot(&file, count % 2, count).is_err() {
            return;
        }
        time::sleep(every).await;
    }
}

/// Three nodes running `store` for 20 s under `nemesis`, never more than one down.
async fn cluster(store: Store, nemesis: Nemesis) {
    let nodes: Vec<Node> = (0..3)
        .map(|i| node::create(format!("n{i}"), store))
        .collect();
    common::check_at_most_down(&nodes, 1);
    nemesis
        .every(Duration::from_millis(100), Duration::from_millis(500))
        .lasting(Duration::from_millis(50), Duration::from_millis(500))
        .start(&nodes);
    time::sleep(Duration::from_secs(20)).await;
}

fn overwriting() -> Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(overwriting_store())
}

fn alternating() -> Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(alternating_store(Duration::from_millis(10)))
}

/// The alternating store committing only every 300 ms: a kill inside a sync waits long for
/// its sync, and is often called off first.
fn alternating_slowly() -> Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(alternating_store(Duration::from_millis(300)))
}

fn in_syncs() -> Nemesis {
    Nemesis::default()
        .kills_in_syncs(1)
        .weights(0, 0, 0, 0, 0, 0)
}

fn run(seed: u64, store: Store, nemesis: Nemesis) -> Result<RunSummary, Box<RunFailure>> {
    Sim::new(seed).run(cluster(store, nemesis))
}

#[test]
fn an_ordinary_kill_never_splits_a_synchronous_write_from_its_sync() {
    for seed in 0..40 {
        if let Err(failure) = run(seed, overwriting, Nemesis::default().kills_only()) {
            panic!("seed {seed}: {failure}");
        }
    }
}

#[test]
fn a_kill_inside_a_sync_tears_a_header_overwritten_in_place() {
    let torn = (0..40)
        .filter_map(|seed| run(seed, overwriting, in_syncs()).err())
        .inspect(|failure| {
            assert!(failure.to_string().contains("torn header"), "{failure}");
            let in_sync = |fault: &crashtest::InjectedFault| fault.text.contains("KillInSync");
            assert!(failure.faults.iter().any(in_sync), "{failure}");
            let landed = |fault: &crashtest::InjectedFault| fault.text == "killed inside a sync";
            assert!(failure.faults.iter().any(landed), "{failure}");
        })
        .count();
    assert!(torn > 0, "no seed of 40 tore the header");
}

#[test]
fn a_store_that_never_overwrites_its_synced_header_survives_kills_inside_syncs() {
    for seed in 0..40 {
        let summary = run(seed, alternating, in_syncs().weights(1, 0, 0, 0, 0, 0))
            .unwrap_or_else(|failure| panic!("seed {seed}: {failure}"));
        assert!(summary.elapsed >= Duration::from_secs(20));
    }
}

#[test]
fn kills_inside_syncs_replay_by_seed_and_differ_across_seeds() {
    let fingerprint = |seed| run(seed, alternating, in_syncs()).unwrap().fingerprint;
    assert_eq!(fingerprint(5), fingerprint(5));
    assert_ne!(fingerprint(5), fingerprint(6));
}

#[test]
fn kills_inside_syncs_mixed_with_kills_and_pauses_keep_the_bound_of_two_down() {
    for seed in 0..20 {
        Sim::new(seed)
            .run(async {
                let nodes: Vec<Node> = (0..4)
                    .map(|i| node::create(format!("n{i}"), alternating_slowly))
                    .collect();
                common::check_at_most_down(&nodes, 2);
                Nemesis::default()
                    .kills_in_syncs(3)
                    .weights(1, 1, 0, 0, 0, 0)
                    .max_down(2)
                    .every(Duration::from_millis(10), Duration::from_millis(50))
                    .lasting(Duration::from_millis(50), Duration::from_millis(400))
                    .start(&nodes);
                time::sleep(Duration::from_secs(20)).await;
            })
            .unwrap_or_else(|failure| panic!("seed {seed}: {failure}"));
    }
}
