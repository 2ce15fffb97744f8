//! redb under power cuts and kills, over many seeds.

use redb_crash::{Plan, crash_and_recover};

#[crashtest::test(seeds = 1000)]
async fn every_returned_commit_survives_power_cuts_and_nothing_uncommitted_shows() {
    let ledger = crash_and_recover(Plan::default()).await;
    assert!(ledger.checked_boots() >= 1 || ledger.torn_header());
}

/// The finding of the README: seed 7's power cut tears redb's header sector, and the
/// database refuses to open again.
#[test]
fn a_torn_header_sector_leaves_a_database_redb_will_not_open() {
    let ledger = crashtest::on_fresh_thread(|| {
        let out = std::rc::Rc::new(std::cell::RefCell::new(None));
        let keep = out.clone();
        crashtest::Sim::new(7)
            .run(async move {
                *keep.borrow_mut() = Some(crash_and_recover(Plan::default()).await);
            })
            .unwrap();
        let ledger = out.take().unwrap();
        (ledger.torn_header(), ledger.power_cuts())
    });
    assert_eq!(ledger, (true, 1));
}
