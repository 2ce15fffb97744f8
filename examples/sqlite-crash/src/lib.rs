//! SQLite, unmodified, on crashtest's simulated disk.
//!
//! SQLite is C: its unix VFS opens, reads, writes, syncs, locks and unlinks files through
//! libc's `open`, `pread64`, `pwrite64`, `fsync`, `fcntl` and `unlink`. Inside a simulation
//! the determinism guards answer each of those calls from the calling node's simulated disk,
//! so SQLite runs on it as it runs on Linux, and a kill keeps, drops or tears what it did not
//! sync. Nothing here adapts SQLite to the simulation.
//!
//! [`crash_and_recover`] boots a node that opens the database in the given [`Journal`] mode,
//! checks that every commit that returned is there, then commits one row at a time until the
//! node is killed; the node is killed three times. [`Ledger::lost`] names the first
//! acknowledged row a boot did not find.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest::{node, time};

/// Where the database lives on each node's disk.
pub const DATABASE: &str = "/var/lib/app/app.db";

/// How SQLite journals a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Journal {
    /// The rollback journal (`journal_mode = DELETE`): a transaction commits when its journal
    /// is unlinked.
    Rollback,
    /// The write-ahead log with `locking_mode = EXCLUSIVE`, set first: a transaction commits
    /// when its frames are in the log, and SQLite keeps the log's index in its own memory.
    WalExclusive,
    /// The write-ahead log in the default locking mode, whose index SQLite shares through a
    /// mapping of the `-shm` file: refused inside a simulation, with what to do instead.
    Wal,
}

impl Journal {
    fn pragmas(self) -> &'static str {
        match self {
            Journal::Rollback => "PRAGMA journal_mode = DELETE;",
            Journal::WalExclusive => "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL;",
            Journal::Wal => "PRAGMA journal_mode = WAL;",
        }
    }
}

/// SQLite's `synchronous` setting for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// `NORMAL`: in WAL mode the log is synced only at checkpoints, so a power loss may roll
    /// back the last commits (SQLite's documentation says so).
    Normal,
    /// `FULL`: syncs at every commit. With the rollback journal it syncs the journal and the
    /// database, but not the directory after the unlink that commits, so a power loss just
    /// after a commit may roll it back (SQLite's documentation says so of `FULL` in this
    /// mode); in WAL mode it syncs the log.
    Full,
    /// `EXTRA`: `FULL`, and with the rollback journal a sync of the directory after the unlink.
    Extra,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
            Synchronous::Extra => "EXTRA",
        }
    }
}

/// What the run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// The rows whose `INSERT` returned, in order.
    pub acknowledged: Vec<i64>,
    /// The first acknowledged row a boot did not find, if any.
    pub lost: Option<i64>,
    /// Boots that checked the database.
    pub checked_boots: u32,
}

/// Runs the workload with `journal` and `synchronous` and returns what it saw.
pub async fn crash_and_recover(journal: Journal, synchronous: Synchronous) -> Ledger {
    let ledger: Rc<RefCell<Ledger>> = Rc::default();
    let shared = ledger.clone();
    let db = node::create("db", move || boot(shared.clone(), journal, synchronous));
    for _ in 0..3 {
        let uptime = crashtest::rand::rng().with(|r| r.range_inclusive(5, 25));
        time::sleep(Duration::from_millis(uptime)).await;
        db.restart();
    }
    time::sleep(Duration::from_millis(5)).await;
    db.kill();
    ledger.take()
}

/// One boot of the node: open, check, then commit until killed.
async fn boot(ledger: Rc<RefCell<Ledger>>, journal: Journal, synchronous: Synchronous) {
    std::fs::create_dir_all("/var/lib/app").unwrap();
    // The directory's own entry must outlive a crash too.
    std::fs::File::open("/var/lib").unwrap().sync_all().unwrap();
    let connection = rusqlite::Connection::open(DATABASE).unwrap();
    connection
        .execute_batch(&format!(
            "{} PRAGMA synchronous = {};
             CREATE TABLE IF NOT EXISTS rows (k INTEGER PRIMARY KEY, v INTEGER NOT NULL);",
            journal.pragmas(),
            synchronous.pragma()
        ))
        .unwrap();
    let acknowledged = ledger.borrow().acknowledged.clone();
    for &k in &acknowledged {
        let found: Option<i64> = connection
            .query_row("SELECT v FROM rows WHERE k = ?1", [k], |row| row.get(0))
            .ok();
        if found != Some(k * 10) {
            ledger.borrow_mut().lost = Some(k);
            return;
        }
    }
    ledger.borrow_mut().checked_boots += 1;
    let first = acknowledged.last().map_or(0, |k| k + 1);
    for k in first.. {
        connection
            .execute("INSERT INTO rows (k, v) VALUES (?1, ?2)", [k, k * 10])
            .unwrap();
        ledger.borrow_mut().acknowledged.push(k);
        time::sleep(Duration::from_millis(1)).await;
    }
}
