//! Branching a run: each future forked from a point is the timeline its branch path names,
//! whatever the number of processes at once.

use std::time::Duration;

use crashtest::runner::branch;
use crashtest::{Config, node, time};

async fn cluster() {
    for i in 0..3 {
        node::create(format!("n{i}"), || async {
            loop {
                let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 30));
                time::sleep(Duration::from_millis(ms)).await;
            }
        });
    }
    time::sleep(Duration::from_secs(2)).await;
    let roll = crashtest::rand::rng().with(|r| r.range_inclusive(0, 3));
    assert!(roll != 0, "rolled a zero");
}

#[test]
fn forked_futures_are_the_timelines_their_paths_name() {
    let path = [(300_000_000, 5)];
    let subs: Vec<u64> = (1..=6).collect();
    let at = 1_000_000_000;
    let one_at_a_time = branch::branch(3, Config::default(), &path, at, &subs, 1, &cluster);
    let three_at_once = branch::branch(3, Config::default(), &path, at, &subs, 3, &cluster);
    assert_eq!(one_at_a_time, three_at_once);
    for (sub, forked) in subs.iter().zip(&one_at_a_time) {
        let mut full = path.to_vec();
        full.push((at, *sub));
        let replayed = branch::run_one(3, branch::with_path(Config::default(), &full), &cluster);
        assert_eq!(*forked, replayed, "sub-seed {sub}");
    }
    let prints: std::collections::BTreeSet<u64> =
        one_at_a_time.iter().map(|d| d.fingerprint).collect();
    assert_eq!(prints.len(), subs.len(), "each future differs");
    assert!(
        one_at_a_time.iter().any(|d| d.failure.is_some()),
        "some future rolls a zero: {one_at_a_time:?}"
    );
}

#[test]
fn a_run_that_ends_before_the_point_is_every_future() {
    let late = 60_000_000_000;
    let futures = branch::branch(3, Config::default(), &[], late, &[1, 2], 2, &cluster);
    let own = branch::run_one(3, Config::default(), &cluster);
    assert_eq!(futures, [own.clone(), own]);
}
