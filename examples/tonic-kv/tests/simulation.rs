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

/// Killed as a machine that loses its power, the server's connections vanish without a
/// word: tonic's and reqwest's timeouts and HTTP/2 keep-alives must notice, or the client
/// waits forever.
#[test]
fn acknowledged_puts_survive_silent_kills() {
    let setup = Setup {
        bug: None,
        silent_kills: true,
        ..Setup::default()
    };
    let run = |seed, setup| {
        crashtest::on_fresh_thread(move || crashtest::Sim::new(seed).run(common::run(setup)))
            .unwrap_or_else(|failure| panic!("seed {seed}: {failure}"))
            .fingerprint
    };
    let resets = Setup {
        silent_kills: false,
        ..setup
    };
    let changed = (0..8)
        .filter(|&seed| run(seed, setup) != run(seed, resets))
        .count();
    assert!(changed > 0, "silent kills changed no run");
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
