//! redb's storage seam on the simulated disk: a [`redb::StorageBackend`] over crashtest's
//! synchronous file, with a power switch that can cut the node at any mutating call.
//!
//! A node can only be killed by the supervisor at an `.await`, and redb never awaits: it is a
//! synchronous library whose commit is one blocking call. So a crash *inside* a commit (after
//! some of its page writes, before its fsync, between its two header writes) has to come from
//! the storage seam itself. [`PowerSwitch`] counts the backend's mutations (writes, length
//! changes, syncs) and, at the one the seed picked, kills the calling node right there: the
//! disk applies its crash model to everything not yet synced, and that call and every later
//! one fails with `EIO`, as the calls of a machine without power would never complete.
//!
//! A dead node's backend touches nothing: when the node is killed from outside, its tasks are
//! dropped and redb's `Drop` tries to close the database; a machine that lost power runs no
//! such code, so every call fails at once.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crashtest::fs::sync::File;
use crashtest::node::{Node, NodeStatus};

/// Cuts the node's power before its `n`th mutation of the disk (shared by the backends of one
/// boot; `Send + Sync` as redb requires).
#[derive(Debug)]
pub struct PowerSwitch {
    /// The node whose power this is (the one that made the switch).
    node: Option<Node>,
    /// Mutations left before the cut; `u64::MAX` means never.
    remaining: AtomicU64,
    /// Whether the file's first sector (redb's header, magic number included) has a write not
    /// yet synced: a crash now may tear it.
    header_unsynced: AtomicBool,
}

impl PowerSwitch {
    /// A switch for the calling node that cuts its power before its `mutation`th mutation
    /// (counting from 1), or never.
    ///
    /// ```
    /// let never = redb_crash::PowerSwitch::new(None);
    /// assert!(!never.is_cut());
    /// ```
    pub fn new(mutation: Option<u64>) -> Arc<PowerSwitch> {
        let remaining = mutation.map_or(u64::MAX, |m| m.max(1));
        Arc::new(PowerSwitch {
            node: crashtest::node::try_current(),
            remaining: AtomicU64::new(remaining),
            header_unsynced: AtomicBool::new(false),
        })
    }

    /// Whether the power has been cut.
    ///
    /// ```
    /// assert!(!redb_crash::PowerSwitch::new(Some(3)).is_cut());
    /// ```
    pub fn is_cut(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) == 0
    }

    /// Whether redb's header sector has been written since the file's last sync.
    ///
    /// ```
    /// assert!(!redb_crash::PowerSwitch::new(None).header_unsynced());
    /// ```
    pub fn header_unsynced(&self) -> bool {
        self.header_unsynced.load(Ordering::Relaxed)
    }

    /// Fails if the node is down (killed, or the simulation is being torn down).
    fn powered(&self) -> io::Result<()> {
        let Some(node) = self.node else {
            return Ok(());
        };
        match node.try_status() {
            Some(NodeStatus::Running | NodeStatus::Paused) if !self.is_cut() => Ok(()),
            _ => Err(power_loss()),
        }
    }

    /// Counts one mutation; at the chosen one, kills the node and fails.
    fn before_mutation(&self) -> io::Result<()> {
        self.powered()?;
        let left = self.remaining.load(Ordering::Relaxed);
        if left == u64::MAX {
            return Ok(());
        }
        if left == 0 {
            return Err(power_loss());
        }
        self.remaining.store(left - 1, Ordering::Relaxed);
        if left == 1 {
            let node = crashtest::node::current();
            assert_eq!(
                Some(node.id()),
                self.node.map(|n| n.id()),
                "only the node itself writes its disk"
            );
            crashtest::fault::note(node.id(), "power cut inside a redb call".to_owned());
            node.kill();
            return Err(power_loss());
        }
        Ok(())
    }
}

/// The smallest unit the disk tears: redb's 320-byte header sits in the first one.
const SECTOR: u64 = 512;

fn power_loss() -> io::Error {
    io::Error::other("power lost")
}

/// redb's [`redb::StorageBackend`] on one file of the calling node's simulated disk.
#[derive(Debug)]
pub struct SimBackend {
    file: File,
    power: Arc<PowerSwitch>,
}

impl SimBackend {
    /// The backend on `file`, whose mutations count against `power`.
    ///
    /// ```
    /// use redb_crash::{PowerSwitch, SimBackend};
    ///
    /// crashtest::Sim::new(1).run(async {
    ///     let file = crashtest::fs::sync::File::create_new("/db").unwrap();
    ///     let backend = SimBackend::new(file, PowerSwitch::new(None));
    ///     let db = redb::Builder::new().create_with_backend(backend).unwrap();
    ///     drop(db);
    /// }).unwrap();
    /// ```
    pub fn new(file: File, power: Arc<PowerSwitch>) -> SimBackend {
        SimBackend { file, power }
    }
}

impl redb::StorageBackend for SimBackend {
    fn len(&self) -> io::Result<u64> {
        self.power.powered()?;
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.power.powered()?;
        self.file.read_exact_at(out, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.power.before_mutation()?;
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.power.before_mutation()?;
        self.file.sync_data()?;
        self.power.header_unsynced.store(false, Ordering::Relaxed);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.power.before_mutation()?;
        if offset < SECTOR {
            self.power.header_unsynced.store(true, Ordering::Relaxed);
        }
        self.file.write_all_at(data, offset)
    }
}
