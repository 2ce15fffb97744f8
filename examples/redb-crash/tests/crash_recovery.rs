//! redb under power cuts and kills, over many seeds.

use redb_crash::{Plan, crash_and_recover};

/// Under redb's own hardware model (an interrupted write leaves each byte old or new), every
/// boot opens the database and passes the oracle.
#[crashtest::test(seeds = 1000)]
async fn every_returned_commit_survives_power_cuts_and_nothing_uncommitted_shows() {
    let plan = Plan {
        torn_sector_garbage: false,
        ..Plan::default()
    };
    let ledger = crash_and_recover(plan).await;
    assert!(!ledger.torn_header());
    assert!(ledger.checked_boots() >= 1);
}

/// Under crashtest's harsher default (a torn sector may hold garbage), the only failure
/// allowed is the README's finding: a torn header sector that redb will not open.
#[crashtest::test(seeds = 300)]
async fn with_garbage_tears_only_the_header_finding_fails() {
    let ledger = crash_and_recover(Plan::default()).await;
    assert!(ledger.checked_boots() >= 1 || ledger.torn_header());
}

/// The finding of the README: seed 7's power cut tears redb's header sector with garbage,
/// and the database refuses to open again; with the same draws but old bytes only, it opens.
#[test]
fn a_torn_header_sector_leaves_a_database_redb_will_not_open() {
    let seed_7 = |plan: Plan| {
        crashtest::on_fresh_thread(move || {
            let out = std::rc::Rc::new(std::cell::RefCell::new(None));
            let keep = out.clone();
            crashtest::Sim::new(7)
                .run(async move {
                    *keep.borrow_mut() = Some(crash_and_recover(plan).await);
                })
                .unwrap();
            let ledger = out.take().unwrap();
            (ledger.torn_header(), ledger.power_cuts())
        })
    };
    assert_eq!(seed_7(Plan::default()), (true, 1));
    let old_bytes_only = Plan {
        torn_sector_garbage: false,
        ..Plan::default()
    };
    assert!(!seed_7(old_bytes_only).0);
}
