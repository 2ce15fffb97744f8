//! The crash-recovery scenario: one node runs redb on its simulated disk and commits
//! transactions; the supervisor crashes it again and again (a power cut inside a redb call, or
//! a kill between transactions), and every boot checks what survived against the ledger.
//!
//! The ledger lives with the supervisor, outside the node, so it survives the crashes: it
//! knows the last transaction whose `Durability::Immediate` commit *returned* (it must survive
//! any crash) and the last one whose commit was *called* (it may have landed). After a crash
//! the table must equal [`model::after`]`(t)` for one `t` between the two: every returned
//! durable commit is fully there, no transaction is half there, and nothing an aborted or
//! never-committed transaction wrote is visible. `Durability::None` commits, which redb
//! promises only to keep atomic, widen that range without weakening it.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crashtest::fs::DiskConfig;
use crashtest::fs::sync::File;
use crashtest::rand::Ratio;
use crashtest::{node, time};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableError};

use crate::backend::{PowerSwitch, SimBackend};
use crate::model::{self, ABORTED_BASE, COUNTER, TABLE};

/// The database file on the node's disk.
const PATH: &str = "/kv.redb";

/// How a run goes: how many crashes, and how long each boot works.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Boots that end in a crash, before the last one that only checks.
    pub crashes: u32,
    /// Most transactions one boot attempts.
    pub max_transactions: u64,
    /// A power cut, when one is planned, comes before a mutation in `1..=max_cut`.
    pub max_cut: u64,
    /// Whether a torn sector may hold garbage (crashtest's default strong model), or only its
    /// old bytes: redb's own stated hardware model, each byte of a write ends up old or new.
    pub torn_sector_garbage: bool,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            crashes: 3,
            max_transactions: 6,
            max_cut: 60,
            torn_sector_garbage: true,
        }
    }
}

/// What the supervisor knows about the node's commits; it outlives every crash.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The last transaction known durable: an `Immediate` commit returned, or a boot found it.
    durable: u64,
    /// The last transaction whose commit was called.
    attempted: u64,
    /// Boots whose check passed.
    checked_boots: u64,
    /// Whether `create_with_backend` has ever returned: from then on the file must open.
    created: bool,
    /// Files left unopenable by a crash inside redb's first `create_with_backend`.
    unfinished_creations: u64,
    /// Whether the last crash came while redb's header sector had an unsynced write.
    header_at_risk: bool,
    /// Set when a crash tore redb's header sector and the database no longer opens (the
    /// finding in the README); the run stops there.
    torn_header: bool,
    /// How often redb reported it was repairing the file.
    repairs: u64,
    /// Crashes, and of them power cuts inside a redb call.
    crashes: u64,
    power_cuts: u64,
}

impl Ledger {
    /// Boots whose recovery check passed.
    pub fn checked_boots(&self) -> u64 {
        self.checked_boots
    }

    /// How often redb's repair callback ran.
    pub fn repairs(&self) -> u64 {
        self.repairs
    }

    /// Crashes inside redb's first `create_with_backend` that left a file redb refuses to open
    /// (see the README): the harness deletes it and creates the database again.
    pub fn unfinished_creations(&self) -> u64 {
        self.unfinished_creations
    }

    /// Whether a crash tore redb's header sector so that the database no longer opens (see the
    /// README's finding).
    pub fn torn_header(&self) -> bool {
        self.torn_header
    }

    /// Power cuts that landed inside a redb call.
    pub fn power_cuts(&self) -> u64 {
        self.power_cuts
    }

    /// The last transaction found after a crash or known durable.
    pub fn durable(&self) -> u64 {
        self.durable
    }
}

/// What one boot of the node is told to do.
#[derive(Clone, Copy, Debug, Default)]
struct Boot {
    /// Cut the power before this mutation of the disk, if set.
    cut: Option<u64>,
    transactions: u64,
}

#[derive(Debug, Default)]
struct Shared {
    plan: Plan,
    ledger: RefCell<Ledger>,
    boot: Cell<Boot>,
    /// The power switch of the node's current boot.
    power: RefCell<Option<Arc<PowerSwitch>>>,
}

/// Runs the scenario inside a simulation and returns the ledger: crashes the node
/// `plan.crashes` times, then boots it once more and waits for its recovery check.
///
/// # Panics
///
/// When the recovered database breaks the oracle (the node's panic fails the run).
///
/// ```
/// use redb_crash::{Plan, crash_and_recover};
///
/// crashtest::Sim::new(5).run(async {
///     let ledger = crash_and_recover(Plan { crashes: 1, ..Plan::default() }).await;
///     assert_eq!(ledger.checked_boots(), 2);
/// }).unwrap();
/// ```
pub async fn crash_and_recover(plan: Plan) -> Ledger {
    crashtest::fs::configure(DiskConfig::default().torn_sector_garbage(plan.torn_sector_garbage));
    let shared = Rc::new(Shared {
        plan,
        ..Shared::default()
    });
    let mut rng = crashtest::rand::rng();
    let next_boot = |rng: &mut crashtest::rand::NodeRng| Boot {
        cut: rng
            .with(|r| r.chance(Ratio::new(2, 3)))
            .then(|| rng.with(|r| r.range_inclusive(1, plan.max_cut))),
        transactions: rng.with(|r| r.range_inclusive(1, plan.max_transactions)),
    };
    shared.boot.set(next_boot(&mut rng));
    let factory_state = shared.clone();
    let db = node::create("db", move || run_boot(factory_state.clone()));
    for crash in 0..=plan.crashes {
        let booted = shared.ledger.borrow().checked_boots;
        let settled = || {
            let ledger = shared.ledger.borrow();
            ledger.checked_boots > booted
                || ledger.torn_header
                || db.status() != node::NodeStatus::Running
        };
        while !settled() {
            time::sleep(Duration::from_millis(1)).await;
        }
        if crash == plan.crashes || shared.ledger.borrow().torn_header {
            break;
        }
        let uptime = rng.with(|r| r.range_inclusive(0, 20));
        time::sleep(Duration::from_millis(uptime)).await;
        let mut ledger = shared.ledger.borrow_mut();
        ledger.crashes += 1;
        if db.status() != node::NodeStatus::Running {
            ledger.power_cuts += 1;
        }
        let power = shared.power.borrow_mut().take();
        ledger.header_at_risk = power.is_some_and(|power| power.header_unsynced());
        drop(ledger);
        db.kill();
        let boot = if crash + 1 == plan.crashes {
            Boot::default()
        } else {
            next_boot(&mut rng)
        };
        shared.boot.set(boot);
        db.restart();
    }
    let ledger = shared.ledger.borrow();
    assert!(
        ledger.torn_header || ledger.checked_boots > 0,
        "the last boot did not pass its recovery check"
    );
    drop(ledger);
    let ledger = std::mem::take(&mut *shared.ledger.borrow_mut());
    db.kill();
    ledger
}

/// One boot of the node: open (and, if redb wants, repair) the database, check it against the
/// ledger, then commit transactions until the plan's count or the power cut.
async fn run_boot(shared: Rc<Shared>) {
    let boot = shared.boot.get();
    let power = PowerSwitch::new(boot.cut);
    *shared.power.borrow_mut() = Some(power.clone());
    let Some(db) = open(&shared, &power) else {
        return std::future::pending().await;
    };
    let found = check_recovered(&db, &shared.ledger.borrow());
    {
        let mut ledger = shared.ledger.borrow_mut();
        ledger.durable = found;
        ledger.attempted = found;
        ledger.checked_boots += 1;
    }
    let mut rng = crashtest::rand::rng();
    for t in found + 1..=found + boot.transactions {
        let pause = rng.with(|r| r.range_inclusive(0, 3));
        time::sleep(Duration::from_millis(pause)).await;
        let aborted = if rng.with(|r| r.chance(Ratio::new(1, 4))) {
            abort_one(&db, t)
        } else {
            Ok(())
        };
        let durability = if rng.with(|r| r.chance(Ratio::new(1, 3))) {
            Durability::None
        } else {
            Durability::Immediate
        };
        if let Err(error) = aborted.and_then(|()| commit_one(&db, &shared.ledger, t, durability)) {
            assert!(power.is_cut(), "redb failed without a power cut: {error}");
            break;
        }
    }
    std::future::pending().await
}

/// Opens the database; `None` when the power was cut while opening, or when a crash tore
/// redb's header sector and it no longer opens (the README's finding).
fn open(shared: &Shared, power: &Arc<PowerSwitch>) -> Option<Database> {
    let opened = open_file(power);
    let (created, header_at_risk) = {
        let ledger = shared.ledger.borrow();
        (ledger.created, ledger.header_at_risk)
    };
    let opened = match opened {
        // The README's finding: only a garbage-tearing disk bricks the header.
        Err(_) if header_at_risk && shared.plan.torn_sector_garbage && !power.is_cut() => {
            shared.ledger.borrow_mut().torn_header = true;
            return None;
        }
        Err(error) if !created && !power.is_cut() && is_not_a_database(&error) => {
            // A crash inside the very first create left a header without redb's magic number.
            shared.ledger.borrow_mut().unfinished_creations += 1;
            File::create(PATH)
                .and_then(|file| file.sync_data())
                .expect("the unfinished file empties");
            open_file(power)
        }
        other => other,
    };
    match opened {
        Ok((db, repaired)) => {
            let mut ledger = shared.ledger.borrow_mut();
            ledger.created = true;
            ledger.repairs += u64::from(repaired);
            Some(db)
        }
        Err(_) if power.is_cut() => None,
        Err(error) => panic!("the database does not open after a crash: {error}"),
    }
}

/// Opens or creates the file and the database on it; also says whether redb repaired it.
fn open_file(power: &Arc<PowerSwitch>) -> Result<(Database, bool), redb::DatabaseError> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .open(PATH)
        .expect("the database file opens");
    // The file's directory entry must be durable before any commit claims to be.
    sync_root();
    let repairs = Rc::new(Cell::new(0));
    let counted = repairs.clone();
    let db = redb::Builder::new()
        .set_repair_callback(move |_| counted.set(counted.get() + 1))
        .create_with_backend(SimBackend::new(file, power.clone()))?;
    Ok((db, repairs.get() > 0))
}

fn is_not_a_database(error: &redb::DatabaseError) -> bool {
    error.to_string().contains("Not a redb database")
}

fn sync_root() {
    File::open("/")
        .and_then(|dir| dir.sync_all())
        .expect("the root directory syncs");
}

/// The table's whole content.
fn read_all(db: &Database) -> BTreeMap<u64, Vec<u8>> {
    let read = db.begin_read().expect("a read transaction begins");
    let table = match read.open_table(TABLE) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return BTreeMap::new(),
        Err(error) => panic!("the table does not open: {error}"),
    };
    table
        .iter()
        .expect("the table iterates")
        .map(|entry| {
            let (key, value) = entry.expect("an entry reads");
            (key.value(), value.value().to_vec())
        })
        .collect()
}

/// The oracle: the table is exactly the state after some transaction `t` that the ledger
/// allows; returns `t`.
fn check_recovered(db: &Database, ledger: &Ledger) -> u64 {
    let table = read_all(db);
    let found = table.get(&COUNTER).map_or(0, |bytes| {
        u64::from_le_bytes(bytes.as_slice().try_into().expect("the counter is 8 bytes"))
    });
    if let Some(key) = table.keys().find(|&&k| k >= ABORTED_BASE) {
        panic!("key {key} of an aborted transaction is visible");
    }
    assert!(
        found >= ledger.durable,
        "lost a durable commit: found the state after transaction {found}, but the commit of \
         transaction {} returned with Durability::Immediate",
        ledger.durable
    );
    assert!(
        found <= ledger.attempted,
        "found transaction {found}, but commits were only ever called up to {}",
        ledger.attempted
    );
    let expected = model::after(found);
    if table != expected {
        let wrong: Vec<u64> = expected
            .keys()
            .chain(table.keys())
            .filter(|k| table.get(k) != expected.get(k))
            .copied()
            .collect();
        panic!("the state after transaction {found} is not whole: keys {wrong:?} differ");
    }
    found
}

/// Transaction `t` of the model, committed with `durability`; the ledger learns of the call
/// before it is made and of its return after.
fn commit_one(
    db: &Database,
    ledger: &RefCell<Ledger>,
    t: u64,
    durability: Durability,
) -> Result<(), redb::Error> {
    let mut write = db.begin_write()?;
    write
        .set_durability(durability)
        .expect("no savepoint forbids it");
    {
        let mut table = write.open_table(TABLE)?;
        table.insert(COUNTER, model::counter(t).as_slice())?;
        table.insert(t, model::value(t).as_slice())?;
        if let Some(old) = model::evicted(t) {
            table.remove(old)?;
        }
    }
    ledger.borrow_mut().attempted = t;
    write.commit()?;
    if matches!(durability, Durability::Immediate) {
        ledger.borrow_mut().durable = t;
    }
    Ok(())
}

/// A transaction that writes a key no committed one has, then aborts.
fn abort_one(db: &Database, t: u64) -> Result<(), redb::Error> {
    let write = db.begin_write()?;
    {
        let mut table = write.open_table(TABLE)?;
        table.insert(ABORTED_BASE + t, b"never committed".as_slice())?;
    }
    write.abort()?;
    Ok(())
}
