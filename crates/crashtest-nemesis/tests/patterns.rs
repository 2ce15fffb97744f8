//! The fault patterns random draws rarely combine: each happens when drawn on purpose, is
//! probed, keeps the nemesis's bounds, and replays.

mod common;

use std::time::Duration;

use crashtest::nemesis::{Hint, Nemesis, Patterns, hint};
use crashtest::node::{self, Node, NodeStatus};
use crashtest::rand::Ratio;
use crashtest::{RunSummary, Sim, time};

/// A node that hints recovery at boot, then syncs a log and hints an election and a lease
/// now and then.
async fn replica() {
    hint(Hint::Recovery);
    let log = crashtest::fs::sync::File::create("/log").unwrap();
    let mut offset = 0;
    loop {
        time::sleep(Duration::from_millis(50)).await;
        if log.write_all_at(b"entry", offset).is_ok() && log.sync_all().is_ok() {
            offset += 5;
        }
        hint(Hint::Election);
        hint(Hint::Lease);
    }
}

const NONE: Patterns = Patterns {
    crash_in_recovery: Ratio::NEVER,
    recovery_window: Duration::from_millis(50),
    crash_at_first_sync: Ratio::NEVER,
    partition_in_election: Ratio::NEVER,
    clock_jump_in_lease: Ratio::NEVER,
};

async fn run_with(patterns: Patterns, weights: [u32; 6]) {
    let nodes: Vec<Node> = (0..3)
        .map(|i| node::create(format!("n{i}"), replica))
        .collect();
    common::check_at_most_down(&nodes, 1);
    let [kill, pause, partition, clog, swizzle, jump] = weights;
    Nemesis::default()
        .every(Duration::from_millis(200), Duration::from_secs(1))
        .lasting(Duration::from_millis(200), Duration::from_secs(1))
        .weights(kill, pause, partition, clog, swizzle, jump)
        .patterns(patterns)
        .start(&nodes);
    time::sleep(Duration::from_secs(60)).await;
}

fn summary(seed: u64, patterns: Patterns, weights: [u32; 6]) -> RunSummary {
    Sim::new(seed).run(run_with(patterns, weights)).unwrap()
}

#[test]
fn each_pattern_happens_when_drawn_and_is_probed() {
    let kills = [1, 0, 0, 0, 0, 0];
    let cases = [
        (
            "nemesis: crash during recovery",
            Patterns {
                crash_in_recovery: Ratio::ALWAYS,
                ..NONE
            },
            kills,
        ),
        (
            "nemesis: crash during the first sync after a restart",
            Patterns {
                crash_at_first_sync: Ratio::ALWAYS,
                ..NONE
            },
            kills,
        ),
        (
            "nemesis: partition during an election",
            Patterns {
                partition_in_election: Ratio::new(1, 20),
                ..NONE
            },
            kills,
        ),
        (
            "nemesis: clock jump during a lease",
            Patterns {
                clock_jump_in_lease: Ratio::new(1, 20),
                ..NONE
            },
            kills,
        ),
        ("nemesis: swizzle-clog", NONE, [0, 0, 0, 0, 1, 0]),
    ];
    for (probe, patterns, weights) in cases {
        let on = summary(1, patterns, weights);
        assert!(on.reached(probe) > 0, "{probe} never happened");
        if probe != "nemesis: swizzle-clog" {
            let off = summary(1, NONE, weights);
            assert_eq!(off.reached(probe), 0, "{probe} happened while off");
        }
    }
}

#[test]
fn patterns_keep_the_bound_on_nodes_down() {
    let all = Patterns {
        crash_in_recovery: Ratio::new(1, 2),
        crash_at_first_sync: Ratio::new(1, 2),
        partition_in_election: Ratio::new(1, 20),
        clock_jump_in_lease: Ratio::new(1, 20),
        ..NONE
    };
    for seed in 0..6 {
        summary(seed, all, [2, 1, 1, 1, 1, 1]);
    }
}

#[test]
fn patterns_replay_by_seed_and_differ_across_seeds() {
    let all = Patterns::default();
    let weights = [2, 1, 1, 1, 1, 1];
    let a = summary(3, all, weights);
    assert_eq!(a, summary(3, all, weights));
    let prints: std::collections::BTreeSet<u64> = (0..5)
        .map(|seed| summary(seed, all, weights).fingerprint)
        .collect();
    assert_eq!(prints.len(), 5);
}

#[test]
fn a_restart_the_nemesis_did_not_make_arms_the_recovery_patterns_too() {
    // The nemesis only partitions; the program crashes and restarts a node itself, as a
    // whole-cluster power failure would.
    let in_recovery = Patterns {
        crash_in_recovery: Ratio::ALWAYS,
        ..NONE
    };
    let summary = Sim::new(1)
        .run(async move {
            let nodes: Vec<Node> = (0..3)
                .map(|i| node::create(format!("n{i}"), replica))
                .collect();
            Nemesis::default()
                .weights(0, 0, 1, 0, 0, 0)
                .max_down(1)
                .patterns(in_recovery)
                .start(&nodes);
            time::sleep(Duration::from_secs(1)).await;
            nodes[1].kill();
            time::sleep(Duration::from_millis(100)).await;
            nodes[1].restart();
            // The second kill comes at the node's recovery hint.
            time::sleep(Duration::from_millis(1)).await;
            assert_eq!(
                nodes[1].status(),
                NodeStatus::Dead,
                "killed in its recovery"
            );
            time::sleep(Duration::from_secs(30)).await;
        })
        .unwrap();
    // The pattern restarts the node it killed, and that restart (a restart too) is struck
    // again: every one is, at this ratio.
    assert!(summary.reached("nemesis: crash during recovery") >= 2);
}

#[test]
fn a_restart_by_the_program_frees_the_room_a_first_sync_kill_took() {
    // n1 is killed at its first sync after a restart and counts as the one node down; the
    // program restarts it before the pattern would (and it then stays idle, so no further
    // sync strikes it). The room is free again: n2's first sync after its own restart is
    // struck while the pattern's restart of n1 is still pending.
    let at_first_sync = Patterns {
        crash_at_first_sync: Ratio::ALWAYS,
        ..NONE
    };
    Sim::new(1)
        .run(async move {
            let boots = std::rc::Rc::new(std::cell::Cell::new(0));
            let n1_boots = boots.clone();
            let n1 = node::create("n1", move || {
                n1_boots.set(n1_boots.get() + 1);
                let idle = n1_boots.get() > 2;
                async move {
                    if idle {
                        std::future::pending::<()>().await;
                    }
                    replica().await;
                }
            });
            let nodes = [node::create("n0", replica), n1, node::create("n2", replica)];
            Nemesis::default()
                .weights(0, 0, 1, 0, 0, 0)
                .lasting(Duration::from_secs(10), Duration::from_secs(10))
                .max_down(1)
                .patterns(at_first_sync)
                .start(&nodes);
            time::sleep(Duration::from_secs(1)).await;
            nodes[1].kill();
            nodes[1].restart();
            time::sleep(Duration::from_millis(100)).await;
            assert_eq!(nodes[1].status(), NodeStatus::Dead, "struck at its sync");
            nodes[1].restart();
            assert_eq!(boots.get(), 3);
            nodes[2].kill();
            nodes[2].restart();
            time::sleep(Duration::from_millis(100)).await;
            assert_eq!(
                nodes[2].status(),
                NodeStatus::Dead,
                "n1 still counted as down after the program restarted it"
            );
        })
        .unwrap();
}
