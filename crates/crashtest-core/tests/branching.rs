//! Branch paths and fork points: a timeline named by `(seed, path)` replays exactly, and a
//! branch taken at a fork point is the timeline its path names.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crashtest_core::{Config, Sim, node, rng, time};

async fn busy_cluster() {
    for i in 0..3 {
        node::create(format!("n{i}"), || async {
            loop {
                let ms = rng::node_rng().with(|r| r.range_inclusive(1, 50));
                time::sleep(Duration::from_millis(ms)).await;
            }
        });
    }
    time::sleep(Duration::from_secs(3)).await;
}

fn path(points: &[(u64, u64)]) -> Config {
    points.iter().fold(Config::default(), |config, &(ms, sub)| {
        config.explore_from(Duration::from_millis(ms), sub)
    })
}

fn fingerprint(seed: u64, config: Config) -> u64 {
    Sim::with_config(seed, config)
        .run(busy_cluster())
        .unwrap()
        .fingerprint
}

#[test]
fn a_branch_path_replays_exactly_and_each_point_changes_the_future() {
    let two = [(500, 1), (1500, 2)];
    assert_eq!(fingerprint(4, path(&two)), fingerprint(4, path(&two)));
    let prints = [
        fingerprint(4, path(&[])),
        fingerprint(4, path(&two[..1])),
        fingerprint(4, path(&two)),
        fingerprint(4, path(&[(500, 1), (1500, 3)])),
        fingerprint(5, path(&two)),
    ];
    let distinct: std::collections::BTreeSet<u64> = prints.iter().copied().collect();
    assert_eq!(distinct.len(), prints.len(), "{prints:?}");
}

#[test]
fn a_fork_hook_branches_into_the_timeline_its_path_names() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let hooked = path(&[(500, 1)]).fork_at(
        Duration::from_millis(1500),
        Arc::new(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            Some(2)
        }),
    );
    assert_eq!(
        fingerprint(4, hooked),
        fingerprint(4, path(&[(500, 1), (1500, 2)]))
    );
    assert_eq!(calls.load(Ordering::Relaxed), 1, "the hook is called once");
    let declined = path(&[(500, 1)]).fork_at(Duration::from_millis(1500), Arc::new(|| None));
    assert_eq!(fingerprint(4, declined), fingerprint(4, path(&[(500, 1)])));
}

#[test]
#[should_panic(expected = "comes before the fork point")]
fn a_branch_point_after_the_fork_point_is_refused_when_configured() {
    let _ = Config::default()
        .fork_at(Duration::from_millis(10), Arc::new(|| None))
        .explore_from(Duration::from_millis(20), 1);
}
