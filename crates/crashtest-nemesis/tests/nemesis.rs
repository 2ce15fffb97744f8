//! The nemesis and swarm profiles, as a test would use them.

use std::collections::BTreeSet;
use std::time::Duration;

use crashtest::nemesis::{Nemesis, RandomClogging, RandomPartitions};
use crashtest::node::{self, Node, NodeStatus};
use crashtest::rand::Ratio;
use crashtest::swarm::{FaultKinds, Profile};
use crashtest::{Config, Sim, time};

fn cluster(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| node::create(format!("n{i}"), std::future::pending))
        .collect()
}

async fn attrition() {
    let nodes = cluster(5);
    let watched = nodes.clone();
    crashtest::check::invariant::every("at most 2 down, n0 never", 1, move || {
        let down = watched
            .iter()
            .filter(|n| n.status() != NodeStatus::Running)
            .count();
        if down > 2 {
            return Err(format!("{down} nodes down"));
        }
        if watched[0].status() != NodeStatus::Running {
            return Err("the protected node went down".into());
        }
        Ok(())
    });
    Nemesis::default()
        .every(Duration::from_millis(200), Duration::from_secs(1))
        .lasting(Duration::from_secs(1), Duration::from_secs(5))
        .max_down(2)
        .protect("n0")
        .weights(3, 2, 1, 1, 1, 1)
        .start(&nodes);
    time::sleep(Duration::from_secs(120)).await;
}

#[test]
fn the_nemesis_respects_max_down_and_protected_nodes() {
    for seed in 0..20 {
        Sim::new(seed).run(attrition()).unwrap();
    }
}

#[test]
fn the_nemesis_acts_and_its_faults_are_numbered() {
    let failure = Sim::new(7)
        .run(async {
            attrition().await;
            panic!("list the faults");
        })
        .unwrap_err();
    let actions: Vec<_> = failure
        .faults
        .iter()
        .filter(|f| f.text.starts_with("nemesis"))
        .collect();
    assert!(
        actions.len() > 20,
        "{} nemesis actions in 120 s",
        actions.len()
    );
    assert!(
        actions.iter().all(|f| f.id.is_some()),
        "every action is drawn, so numbered"
    );
    assert!(
        actions
            .iter()
            .all(|f| f.stream.as_deref() == Some("nemesis"))
    );
    let kinds: BTreeSet<String> = actions
        .iter()
        .map(|f| f.text.split_whitespace().nth(1).unwrap().to_owned())
        .collect();
    assert!(
        kinds.contains("Kill") && kinds.contains("Partition"),
        "{kinds:?}"
    );
}

#[test]
fn the_nemesis_is_deterministic_per_seed() {
    let print = |seed| Sim::new(seed).run(attrition()).unwrap().fingerprint;
    assert_eq!(print(3), print(3));
    let prints: BTreeSet<u64> = (0..10).map(print).collect();
    assert_eq!(prints.len(), 10);
}

#[test]
fn masking_a_nemesis_kill_skips_it() {
    let faults = |config: Config| {
        Sim::with_config(7, config)
            .run(async {
                attrition().await;
                panic!("list the faults");
            })
            .unwrap_err()
            .faults
    };
    let all = faults(Config::default());
    let kill = all.iter().find(|f| f.text.contains("Kill")).unwrap();
    let masked = faults(Config::default().mask_faults(kill.id));
    assert!(masked.iter().all(|f| f.id != kill.id));
    let before: Vec<_> = all.iter().take_while(|f| f.id != kill.id).collect();
    assert_eq!(before, masked.iter().take(before.len()).collect::<Vec<_>>());
}

#[test]
fn healing_stops_the_nemesis() {
    let failure = Sim::new(2)
        .run(async {
            let nodes = cluster(3);
            Nemesis::default()
                .every(Duration::from_millis(100), Duration::from_millis(200))
                .start(&nodes);
            time::sleep(Duration::from_secs(10)).await;
            crashtest_core::fault::heal_all();
            let after_heal = time::Instant::now();
            time::sleep(Duration::from_secs(10)).await;
            assert!(nodes.iter().all(|n| n.status() == NodeStatus::Running));
            panic!("healed at {after_heal:?}");
        })
        .unwrap_err();
    let healed_at = Duration::from_secs(10);
    assert!(
        failure.faults.iter().all(|f| f.time <= healed_at),
        "{:?}",
        failure.faults
    );
}

#[test]
fn swarm_profiles_differ_across_seeds_and_appear_in_reports() {
    let profile_of = |seed| {
        let failure = Sim::new(seed)
            .run(async {
                let nodes = cluster(3);
                Profile::draw(FaultKinds::ALL).apply(&nodes);
                time::sleep(Duration::from_secs(5)).await;
                panic!("show the profile");
            })
            .unwrap_err();
        failure
            .context
            .iter()
            .find(|l| l.starts_with("swarm: "))
            .cloned()
            .unwrap()
    };
    let profiles: BTreeSet<String> = (0..30).map(profile_of).collect();
    assert!(profiles.len() > 20, "{profiles:?}");
    assert_eq!(profile_of(4), profile_of(4));
}

#[test]
fn a_power_failure_takes_every_node_down_at_once_and_back_up() {
    use std::cell::Cell;
    use std::rc::Rc;
    let all_down_seen = Rc::new(Cell::new(false));
    let seen = all_down_seen.clone();
    Sim::new(5)
        .run(async move {
            let nodes = cluster(3);
            let watched = nodes.clone();
            crashtest::check::invariant::every("watch for a blackout", 1, move || {
                if watched.iter().all(|n| n.status() == NodeStatus::Dead) {
                    seen.set(true);
                }
                Ok(())
            });
            Nemesis::default()
                .weights(0, 0, 0, 0, 0, 1)
                .power_failures(4)
                .every(Duration::from_millis(200), Duration::from_millis(500))
                .lasting(Duration::from_millis(100), Duration::from_millis(300))
                .start(&nodes);
            time::sleep(Duration::from_secs(10)).await;
            crashtest_core::fault::heal_all();
            time::sleep(Duration::from_secs(1)).await;
            assert!(nodes.iter().all(|n| n.status() == NodeStatus::Running));
        })
        .unwrap();
    assert!(
        all_down_seen.get(),
        "no power failure in 10 s at weight 4 of 5"
    );
}

#[test]
fn a_protected_node_is_never_taken_down_but_can_be_cut_off() {
    let failure = Sim::new(11)
        .run(async {
            let nodes = cluster(3);
            let guarded = nodes[0];
            crashtest::check::invariant::every("n0 stays up", 1, move || {
                if guarded.status() == NodeStatus::Running {
                    Ok(())
                } else {
                    Err("the protected node went down".into())
                }
            });
            Nemesis::default()
                .weights(2, 2, 2, 0, 0, 0)
                .every(Duration::from_millis(100), Duration::from_millis(300))
                .protect("n0")
                .start(&nodes);
            time::sleep(Duration::from_secs(60)).await;
            panic!("list the faults");
        })
        .unwrap_err();
    let partitions_of_n0 = failure
        .faults
        .iter()
        .filter(|f| f.node == "n0" && f.text.starts_with("nemesis Partition"))
        .count();
    assert!(partitions_of_n0 > 0, "{:#?}", failure.faults);
    assert!(
        failure
            .faults
            .iter()
            .filter(|f| f.node == "n0")
            .all(|f| !f.text.contains("Kill") && !f.text.contains("Pause")),
        "{:#?}",
        failure.faults
    );
}

/// Random partitions and clogging only, over three idle nodes, for a minute.
async fn random_network_faults() {
    let nodes = cluster(3);
    Nemesis::idle()
        .random_partitions(RandomPartitions {
            every: Duration::from_millis(500),
            start: Ratio::new(1, 3),
            heal: Ratio::new(1, 2),
            one_way: Ratio::new(1, 4),
        })
        .random_clogging(RandomClogging {
            every: Duration::from_millis(500),
            max: Duration::from_millis(800),
            swizzle: Ratio::new(1, 4),
        })
        .start(&nodes);
    time::sleep(Duration::from_secs(60)).await;
    panic!("list the faults");
}

#[test]
fn random_partitions_and_clogs_are_numbered_nemesis_faults() {
    let failure = Sim::new(3).run(random_network_faults()).unwrap_err();
    let numbered: Vec<&str> = failure
        .faults
        .iter()
        .filter(|f| f.id.is_some())
        .map(|f| f.text.as_str())
        .collect();
    assert!(numbered.iter().any(|t| t.starts_with("random partition {")));
    assert!(numbered.iter().any(|t| t.starts_with("random clog of ")));
    assert!(
        failure
            .faults
            .iter()
            .filter(|f| f.id.is_some())
            .all(|f| f.stream.as_deref() == Some("nemesis"))
    );
    // A partition is cut through the network's partitions, and healed by the machine.
    assert!(
        failure
            .faults
            .iter()
            .any(|f| f.text.starts_with("partition "))
    );
    assert!(failure.faults.iter().any(|f| f.text.starts_with("heal ")));
}

#[test]
fn masking_a_random_partition_leaves_the_later_draws_as_they_were() {
    let numbered = |config: Config| {
        let failure = Sim::with_config(3, config)
            .run(random_network_faults())
            .unwrap_err();
        failure
            .faults
            .into_iter()
            .filter(|f| f.id.is_some())
            .map(|f| (f.id, f.time, f.text))
            .collect::<Vec<_>>()
    };
    let all = numbered(Config::default());
    let partition = all
        .iter()
        .find(|(_, _, text)| text.starts_with("random partition"))
        .expect("a random partition in a minute")
        .0;
    let masked = numbered(Config::default().mask_faults(partition));
    let without: Vec<_> = all.iter().filter(|f| f.0 != partition).cloned().collect();
    assert_eq!(masked, without);
}
