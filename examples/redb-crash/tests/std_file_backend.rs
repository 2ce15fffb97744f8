//! redb's own file backend (`Database::create`, which writes through `std::fs::File`), with
//! no crashtest code in it: the determinism guards put its file calls on the node's
//! simulated disk, so kills tear and drop what it did not sync.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use redb::{Database, ReadableDatabase, TableDefinition};

const TABLE: TableDefinition<u64, u64> = TableDefinition::new("acknowledged");

/// Commits one key at a time until the node is killed; each boot first checks that every
/// commit that returned is there.
async fn commit_until_killed(acknowledged: Rc<RefCell<Vec<u64>>>, checked: Rc<RefCell<u32>>) {
    std::fs::create_dir_all("/var/lib/app").unwrap();
    let db = Database::create("/var/lib/app/db.redb").unwrap();
    // redb syncs its file, not the directories that name it: a new entry is durable only once
    // its directory is synced.
    std::fs::File::open("/var/lib").unwrap().sync_all().unwrap();
    std::fs::File::open("/var/lib/app")
        .unwrap()
        .sync_all()
        .unwrap();
    match db.begin_read().unwrap().open_table(TABLE) {
        Ok(table) => {
            for &key in acknowledged.borrow().iter() {
                let value = table.get(key).unwrap().map(|value| value.value());
                assert_eq!(value, Some(key * 10), "acknowledged commit {key} lost");
            }
            *checked.borrow_mut() += 1;
        }
        Err(redb::TableError::TableDoesNotExist(_)) => assert!(
            acknowledged.borrow().is_empty(),
            "the table of acknowledged commits is gone"
        ),
        Err(error) => panic!("{error}"),
    }
    let first = acknowledged.borrow().last().map_or(0, |key| key + 1);
    for key in first.. {
        let txn = db.begin_write().unwrap();
        txn.open_table(TABLE)
            .unwrap()
            .insert(key, key * 10)
            .unwrap();
        txn.commit().unwrap();
        acknowledged.borrow_mut().push(key);
        crashtest::time::sleep(Duration::from_millis(1)).await;
    }
}

#[crashtest::test(seeds = 60)]
async fn redb_through_std_fs_keeps_every_acknowledged_commit_across_kills() {
    let acknowledged: Rc<RefCell<Vec<u64>>> = Rc::default();
    let checked = Rc::new(RefCell::new(0));
    let (keys, checks) = (acknowledged.clone(), checked.clone());
    let db = crashtest::node::create("db", move || {
        commit_until_killed(keys.clone(), checks.clone())
    });
    for _ in 0..3 {
        let uptime = crashtest::rand::rng().with(|r| r.range_inclusive(5, 25));
        crashtest::time::sleep(Duration::from_millis(uptime)).await;
        db.restart();
    }
    crashtest::time::sleep(Duration::from_millis(5)).await;
    assert!(*checked.borrow() >= 1, "no boot found a database to check");
    assert!(!acknowledged.borrow().is_empty());
}
