//! The store in crashtest's simulation, through the tokio stand-in: tonic and axum servers,
//! tonic and reqwest clients, all unmodified, under kills, partitions and clogs.

mod common;

use common::Setup;
use tonic_kv::Bug;

/// `TONIC_KV_BUG=unsynced-ack cargo test` runs it with the planted bug, and it fails.
#[crashtest::test(seeds = 16, env = ["TONIC_KV_BUG"])]
async fn acknowledged_puts_survive_kills_partitions_and_clogs() {
    common::run(Setup::default()).await;
}

#[test]
fn the_planted_unsynced_ack_is_found() {
    let setup = Setup {
        bug: Some(Bug::UnsyncedAck),
        ..Setup::default()
    };
    let failure = (0..32)
        .find_map(|seed| {
            crashtest::on_fresh_thread(move || {
                crashtest::Sim::new(seed).run(common::run(setup)).err()
            })
        })
        .expect("a seed within 32 loses an acknowledged put");
    let text = failure.to_string();
    assert!(text.contains("acknowledged put"), "{text}");
}

#[test]
fn a_seed_replays_exactly_and_seeds_differ() {
    let setup = Setup {
        bug: None,
        ..Setup::default()
    };
    let replayed =
        crashtest::check_determinism(5, crashtest::Config::default(), || common::run(setup))
            .expect("two runs of seed 5 agree event by event")
            .expect("the correct store passes seed 5");
    let other = crashtest::on_fresh_thread(|| crashtest::Sim::new(6).run(common::run(setup)))
        .expect("the correct store passes seed 6");
    assert_ne!(replayed.fingerprint, other.fingerprint);
}
