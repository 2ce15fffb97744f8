//! SQLite under kills, over many seeds.

use sqlite_crash::{Synchronous, crash_and_recover};

/// With `synchronous = EXTRA`, every commit that returned survives every kill.
#[crashtest::test(seeds = 100)]
async fn with_extra_every_acknowledged_commit_survives_kills() {
    let ledger = crash_and_recover(Synchronous::Extra).await;
    assert_eq!(
        ledger.lost, None,
        "acknowledged rows: {:?}",
        ledger.acknowledged
    );
    assert!(ledger.checked_boots >= 3);
}

/// With `synchronous = FULL` in rollback-journal mode, SQLite does not sync the directory
/// after the unlink that commits, as its documentation says: some seed's kill undoes the
/// unlink, the journal comes back hot, and the next boot rolls an acknowledged commit back.
#[test]
fn with_full_a_kill_can_roll_back_an_acknowledged_commit() {
    let lost_at = (0..20).find(|&seed| {
        crashtest::on_fresh_thread(move || {
            let out = std::rc::Rc::new(std::cell::RefCell::new(None));
            let keep = out.clone();
            crashtest::Sim::new(seed)
                .run(async move {
                    *keep.borrow_mut() = Some(crash_and_recover(Synchronous::Full).await);
                })
                .unwrap();
            out.take().unwrap().lost.is_some()
        })
    });
    assert!(
        lost_at.is_some(),
        "no seed of 0..20 lost a commit under FULL"
    );
}
