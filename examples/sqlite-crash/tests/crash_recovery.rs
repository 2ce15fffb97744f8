//! SQLite under kills, over many seeds.

use sqlite_crash::{Journal, Ledger, Synchronous, crash_and_recover};

/// With the rollback journal and `synchronous = EXTRA`, every commit that returned survives
/// every kill.
#[crashtest::test(seeds = 100)]
async fn with_extra_every_acknowledged_commit_survives_kills() {
    let ledger = crash_and_recover(Journal::Rollback, Synchronous::Extra).await;
    assert_eq!(
        ledger.lost, None,
        "acknowledged rows: {:?}",
        ledger.acknowledged
    );
    assert!(ledger.checked_boots >= 3);
}

/// With the write-ahead log (its index in SQLite's memory under `locking_mode = EXCLUSIVE`)
/// and `synchronous = FULL`, every commit that returned survives every kill.
#[crashtest::test(seeds = 60)]
async fn with_the_wal_and_full_every_acknowledged_commit_survives_kills() {
    let ledger = crash_and_recover(Journal::WalExclusive, Synchronous::Full).await;
    assert_eq!(
        ledger.lost, None,
        "acknowledged rows: {:?}",
        ledger.acknowledged
    );
    assert!(ledger.checked_boots >= 3);
}

/// What seed `seed` saw, run outside a test's seeds so that a failing one can be looked for.
fn ledger_of(seed: u64, journal: Journal, synchronous: Synchronous) -> Ledger {
    crashtest::on_fresh_thread(move || {
        let out = std::rc::Rc::new(std::cell::RefCell::new(None));
        let keep = out.clone();
        crashtest::Sim::new(seed)
            .run(async move {
                *keep.borrow_mut() = Some(crash_and_recover(journal, synchronous).await);
            })
            .unwrap();
        out.take().unwrap()
    })
}

/// With `synchronous = FULL` in rollback-journal mode, SQLite does not sync the directory
/// after the unlink that commits, as its documentation says: some seed's kill undoes the
/// unlink, the journal comes back hot, and the next boot rolls an acknowledged commit back.
#[test]
fn with_full_a_kill_can_roll_back_an_acknowledged_commit() {
    let lost_at = (0..20).find(|&seed| {
        ledger_of(seed, Journal::Rollback, Synchronous::Full)
            .lost
            .is_some()
    });
    assert!(
        lost_at.is_some(),
        "no seed of 0..20 lost a commit under FULL"
    );
}

/// With the write-ahead log and `synchronous = NORMAL`, SQLite syncs the log only at
/// checkpoints, and its documentation says a power loss may roll back the last commits: some
/// seed's kill does.
#[test]
fn with_the_wal_and_normal_a_kill_can_lose_an_acknowledged_commit() {
    let lost_at = (0..20).find(|&seed| {
        ledger_of(seed, Journal::WalExclusive, Synchronous::Normal)
            .lost
            .is_some()
    });
    assert!(
        lost_at.is_some(),
        "no seed of 0..20 lost a commit under WAL and NORMAL"
    );
}

/// The write-ahead log in the default locking mode maps its `-shm` index, which the simulated
/// disk does not model: the run fails at once, saying how to run SQLite's WAL instead.
#[test]
fn the_wals_shared_index_is_refused_with_what_to_do_instead() {
    let failure = crashtest::on_fresh_thread(|| {
        crashtest::Sim::new(1)
            .run(async {
                crash_and_recover(Journal::Wal, Synchronous::Full).await;
            })
            .expect_err("a mapping of the -shm file fails the run")
    });
    let message = failure.to_string();
    assert!(message.contains("app.db-shm"), "{message}");
    assert!(
        message.contains("PRAGMA locking_mode=EXCLUSIVE"),
        "{message}"
    );
}
