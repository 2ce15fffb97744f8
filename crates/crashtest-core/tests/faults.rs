//! Fault decisions, `buggify!`, coverage probes and the sleep stretch.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::coverage::{CoverageReport, SiteKind};
use crashtest_core::node::NodeId;
use crashtest_core::rng::Ratio;
use crashtest_core::{Config, Sim, buggify, fault, probe, sometimes, time};

/// How many of 20 evaluations of one `buggify!` site fired in the run of `seed`.
fn firings(seed: u64) -> u32 {
    let count = Rc::new(Cell::new(0));
    let seen = count.clone();
    Sim::new(seed)
        .run(async move {
            for _ in 0..20 {
                if buggify!() {
                    seen.set(seen.get() + 1);
                }
            }
        })
        .unwrap();
    count.get()
}

#[test]
fn a_buggify_site_fires_in_some_seeds_only() {
    let per_seed: Vec<u32> = (0..200).map(firings).collect();
    let enabled = per_seed.iter().filter(|n| **n > 0).count();
    // Enabled in about a quarter of runs; an enabled site fires about 5 times in 20.
    assert!(
        (25..80).contains(&enabled),
        "enabled in {enabled} of 200 runs"
    );
    assert!(
        per_seed.iter().all(|n| *n < 20),
        "an enabled site fires on a 1/4 coin"
    );
    assert_eq!(
        per_seed,
        (0..200).map(firings).collect::<Vec<_>>(),
        "same seeds, same firings"
    );
}

#[test]
fn buggify_never_fires_outside_a_simulation() {
    assert!((0..10_000).all(|_| !buggify!(Ratio::ALWAYS)));
}

#[test]
fn buggify_can_be_turned_off_for_a_run() {
    for seed in 0..50 {
        Sim::with_config(seed, Config::default().buggify(false))
            .run(async { assert!(!buggify!(Ratio::ALWAYS)) })
            .unwrap();
    }
}

#[test]
fn the_coverage_report_lists_probes_that_never_fired() {
    let mut report = CoverageReport::new();
    for seed in 0..20 {
        let summary = Sim::new(seed)
            .run(async {
                probe!("always reached");
                let rare = crashtest_core::rng::node_rng().with(|r| r.below_inclusive(3)) == 0;
                sometimes!(rare, "a rare branch");
                sometimes!(false, "an impossible branch");
                if time::Instant::now().as_nanos_since_start() > 1 {
                    probe!("a probe behind a false condition");
                }
            })
            .unwrap();
        report.add(&summary.coverage);
    }
    let never: Vec<&str> = report.never_fired().map(|site| site.name).collect();
    assert!(never.contains(&"an impossible branch"), "{never:?}");
    assert!(
        never.contains(&"a probe behind a false condition"),
        "{never:?}"
    );
    assert!(!never.contains(&"always reached"));
    assert!(!never.contains(&"a rare branch"));
    let unreached = report
        .sites()
        .find(|(site, _)| site.name == "a probe behind a false condition")
        .expect("every linked site is listed, reached or not");
    assert_eq!(
        (unreached.0.kind, unreached.1.reached),
        (SiteKind::Probe, 0)
    );
    let text = report.to_string();
    assert!(text.contains("never fired"), "{text}");
}

/// Draws five fault coins and returns which were applied.
async fn five_coins() -> Vec<bool> {
    let mut applied = Vec::new();
    for _ in 0..5 {
        applied.push(fault::inject(NodeId::SUPERVISOR, Ratio::new(1, 2), || {
            "drop".into()
        }));
    }
    applied
}

#[test]
fn masking_a_fault_keeps_the_rest_of_the_run_aligned() {
    let run = |config: Config| {
        let out = Rc::new(std::cell::RefCell::new(Vec::new()));
        let slot = out.clone();
        let result = Sim::with_config(3, config)
            .run(async move {
                *slot.borrow_mut() = five_coins().await;
                panic!("show the faults");
            })
            .unwrap_err();
        (out.take(), result.faults)
    };
    let (plain, faults) = run(Config::default());
    let ids: Vec<u64> = faults.iter().filter_map(|f| f.id).collect();
    assert!(
        ids.len() >= 2,
        "seed 3 draws at least two faults: {plain:?}"
    );
    let (masked, masked_faults) = run(Config::default().mask_faults([ids[0]]));
    let first = plain.iter().position(|applied| *applied).unwrap();
    let mut expected = plain.clone();
    expected[first] = false;
    assert_eq!(masked, expected, "only the masked fault changes");
    assert_eq!(masked_faults.len(), faults.len() - 1);
    assert!(masked_faults.iter().all(|f| f.id != Some(ids[0])));
}

#[test]
fn stretched_sleeps_are_late_but_deterministic() {
    let config = Config::default().sleep_stretch(Duration::from_secs(10));
    let total = |seed| {
        Sim::with_config(seed, config.clone())
            .run(async {
                for _ in 0..1000 {
                    time::sleep(Duration::from_millis(1)).await;
                }
            })
            .unwrap()
            .elapsed
    };
    assert_eq!(total(1), total(1));
    assert!(
        total(1) > Duration::from_secs(1),
        "some sleeps were stretched"
    );
    assert_ne!(total(1), total(2));
}
