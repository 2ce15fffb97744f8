//! The Raft paper's Figure 8, played by hand: the schedule that loses a committed entry when a
//! leader commits an earlier term's entry by counting replicas
//! (`RAFT_BUG=commit_by_counting_old_term`), and that the correct store survives.
//!
//! Three servers, no clients but the script's own, and the script decides every crash and
//! partition; only who wins an election between two equal candidates is left to the seed:
//!
//! 1. The first leader `A` (term 2 in the paper) is cut off, takes a put at index 1 that no
//!    one else gets, and is killed.
//! 2. One of the two others, `L`, is elected (term 3), is cut off from the third, `F`, takes
//!    a put at index 1 of its own, and is killed.
//! 3. `A` restarts and, its log ahead of `F`'s, is elected (term 4). It sends its index 1 to
//!    `F`: the entry of term 2 is now on a majority. Under the bug `A` commits and applies it
//!    by counting; the correct `A` first appended a no-op of term 4, and commits both.
//!    The moment `A` has applied something, it is killed.
//! 4. `L` restarts. Its log ends in term 3, `F`'s in term 2: under the bug `F` votes for `L`,
//!    which overwrites index 1 and applies its own put there, where `A` applied another one.
//!    The correct `F` holds the no-op of term 4 and does not vote for `L`.

use std::rc::Rc;
use std::time::Duration;

use crashtest::node::{self, Node};
use crashtest::{Config, Sim, check_determinism, task, time};
use raft_kv::Bug;
use raft_kv::client::Client;
use raft_kv::kv::Command;
use raft_kv::observer::Observer;
use raft_kv::raft::{self, ServerConfig};

/// Waits (in virtual time) until `ready` holds, failing the run after `within`.
async fn until(what: &str, within: Duration, ready: impl Fn() -> bool) {
    let deadline = time::Instant::now() + within;
    while !ready() {
        assert!(
            time::Instant::now() < deadline,
            "waited {within:?} for {what}"
        );
        time::sleep(Duration::from_millis(1)).await;
    }
}

/// Cuts `node` off from `others`, both ways.
fn cut_off(node: &Node, others: &[&Node]) {
    others
        .iter()
        .for_each(|other| crashtest::net::partition(node.id(), other.id()));
}

/// Heals what [`cut_off`] cut.
fn heal(node: &Node, others: &[&Node]) {
    others
        .iter()
        .for_each(|other| crashtest::net::heal(node.id(), other.id()));
}

/// Sends `command` to server `to` only, from a task of its own: the script does not wait for
/// an answer that, cut off, the server cannot give.
fn propose_to(names: &[String], to: usize, command: Command) {
    let mut client = Client::new(names.to_vec(), to);
    task::spawn_local(async move {
        let _ = client.call(&command).await;
    });
}

/// The schedule above, with every server running `bug`.
async fn figure8(bug: Bug) {
    let second = Duration::from_secs(1);
    let observer = Rc::new(Observer::default());
    observer.install();
    let names: Vec<String> = (0..3).map(|id| format!("s{id}")).collect();
    let servers: Vec<Node> = (0..3)
        .map(|id| {
            let config = ServerConfig {
                bug,
                ..ServerConfig::new(id, names.clone())
            };
            let observer = observer.clone();
            node::create(&names[id], move || {
                raft::serve(config.clone(), observer.clone())
            })
        })
        .collect();

    until("a first leader", second, || {
        observer.latest_leader().is_some()
    })
    .await;
    let (first_term, a) = observer.latest_leader().expect("a leader");
    let others: Vec<usize> = (0..3).filter(|id| *id != a).collect();
    let rest = [&servers[others[0]], &servers[others[1]]];
    cut_off(&servers[a], &rest);
    propose_to(&names, a, Command::Put(1, 1));
    time::sleep(Duration::from_millis(30)).await;
    servers[a].kill();
    heal(&servers[a], &rest);

    until("a second leader", second, || {
        observer
            .latest_leader()
            .is_some_and(|(term, _)| term > first_term)
    })
    .await;
    let (second_term, l) = observer.latest_leader().expect("a leader");
    let f = others
        .into_iter()
        .find(|id| *id != l)
        .expect("a third server");
    cut_off(&servers[l], &[&servers[f]]);
    propose_to(&names, l, Command::Put(1, 2));
    time::sleep(Duration::from_millis(30)).await;
    servers[l].kill();
    heal(&servers[l], &[&servers[f]]);

    servers[a].restart();
    until("the first leader to lead again and commit", second, || {
        observer.applied_entries() > 0
    })
    .await;
    let (third_term, leader) = observer.latest_leader().expect("a leader");
    assert!(third_term > second_term && leader == a, "s{a} leads again");
    servers[a].kill();
    servers[l].restart();
    time::sleep(2 * second).await;
}

/// Runs the schedule under `bug` at `seed`.
fn play(seed: u64, bug: Bug) -> Result<crashtest::RunSummary, String> {
    Sim::new(seed)
        .run(figure8(bug))
        .map_err(|failure| failure.to_string())
}

#[test]
fn counting_an_old_terms_replicas_commits_an_entry_a_later_leader_overwrites() {
    for seed in 0..3 {
        let failure = play(seed, Bug::CommitByCountingOldTerm).expect_err("the commit is lost");
        assert!(
            failure.contains("at index 1, where another server applied")
                || failure.contains("would truncate committed entry 1"),
            "seed {seed}: {failure}"
        );
    }
}

#[test]
fn the_correct_store_keeps_the_entry_its_no_op_committed() {
    for seed in 0..3 {
        play(seed, Bug::None).unwrap_or_else(|failure| panic!("seed {seed}: {failure}"));
    }
}

#[test]
fn the_figure8_schedule_replays_event_by_event() {
    let result = check_determinism(1, Config::default(), || {
        figure8(Bug::CommitByCountingOldTerm)
    })
    .expect("two runs of seed 1 agree event by event");
    assert!(result.is_err(), "seed 1 loses the commit");
    let fingerprint = |seed| match Sim::new(seed).run(figure8(Bug::CommitByCountingOldTerm)) {
        Ok(summary) => summary.fingerprint,
        Err(failure) => failure.summary.fingerprint,
    };
    assert_ne!(fingerprint(1), fingerprint(2));
}
