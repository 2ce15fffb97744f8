//! Guided search: it finds a failure that needs rare events in a row, which independent
//! seeds miss in the same budget; a shallow failure costs it little more than the runs it
//! costs random seeds; it is deterministic; a correct body passes it.

use std::time::Duration;

use crashtest::runner::{TestSpec, guided, hunt};

fn spec() -> TestSpec {
    TestSpec {
        name: "deep",
        module_path: "guided",
        package: "crashtest-runner",
        crate_name: "guided",
        seeds: None,
        seed: None,
        config: crashtest::Config::default,
        env: &[],
    }
}

/// Fails when `needed` one-in-ten draws, 100 ms apart, come up in a row; declares how deep
/// the current streak is.
async fn streak(needed: u32) {
    let mut depth = 0;
    for _ in 0..40 {
        crashtest::time::sleep(Duration::from_millis(100)).await;
        let deep = crashtest::rand::rng().with(|r| r.range_inclusive(0, 9)) == 0;
        depth = if deep { depth + 1 } else { 0 };
        crashtest::explore::state("streak", depth);
        assert!(depth < needed, "{needed} deep draws in a row");
    }
}

#[test]
fn a_guided_search_finds_a_deep_failure_that_random_seeds_miss_in_the_same_budget() {
    let budget = 1500;
    let body = || streak(6);
    assert!(
        hunt::first_failure(&spec(), 0..budget, 2, &body).is_none(),
        "random seeds found it: pick a deeper streak"
    );
    let guide = guided::Guide {
        runs: budget,
        jobs: 2,
        ..Default::default()
    };
    let found = guided::guided(&spec(), &guide, &body);
    let failure = found.failure.expect("the guided search finds it");
    assert!(failure.replayed, "the failure replays fresh");
    assert!(failure.report.detail().contains("6 deep draws in a row"));
    assert!(!failure.path.0.is_empty(), "found by branching");
}

/// Fails on one seed in 40, decided by a draw at time zero: no branch can change it, so
/// every branched run is spent in vain, the worst case for a guided search.
async fn decided_at_start() {
    let doomed = crashtest::rand::rng().with(|r| r.range_inclusive(0, 39)) == 0;
    crashtest::time::sleep(Duration::from_secs(1)).await;
    let late = crashtest::rand::rng().with(|r| r.range_inclusive(0, 3));
    crashtest::explore::state("late", late);
    assert!(!doomed, "doomed from the start");
}

#[test]
fn a_guided_search_finds_a_shallow_failure_within_half_again_the_seeds_random_needs() {
    let body = || decided_at_start();
    for start in [0, 1000, 2000] {
        let random = hunt::first_failure(&spec(), start..start + 1000, 2, &body)
            .expect("one seed in 40 fails");
        let seeds = random.seed - start + 1;
        let guide = guided::Guide {
            runs: 1000,
            start,
            jobs: 2,
            ..Default::default()
        };
        let found = guided::guided(&spec(), &guide, &body);
        assert!(found.failure.is_some(), "found from seed {start}");
        // Up to a batch of fresh seeds past the failing one, and one branch point's futures
        // past the branches' allowance.
        let batch = 8;
        assert!(
            found.runs <= seeds + seeds / 2 + 2 * batch,
            "from seed {start}: random needed {seeds} seeds, guided {} runs",
            found.runs
        );
    }
}

#[test]
fn a_guided_search_is_a_function_of_its_settings() {
    let body = || streak(4);
    let run = |jobs| {
        let guide = guided::Guide {
            runs: 400,
            jobs,
            ..Default::default()
        };
        let found = guided::guided(&spec(), &guide, &body);
        let failure = found.failure.map(|f| (f.seed, f.path));
        (found.runs, found.corpus, found.features, failure)
    };
    assert_eq!(run(1), run(3));
}

#[test]
fn a_correct_body_passes_the_whole_budget() {
    let guide = guided::Guide {
        runs: 120,
        jobs: 2,
        ..Default::default()
    };
    let found = guided::guided(&spec(), &guide, &|| streak(100));
    assert!(found.failure.is_none());
    assert_eq!(found.runs, 120);
    assert!(found.branch_points > 0, "it branched");
}
