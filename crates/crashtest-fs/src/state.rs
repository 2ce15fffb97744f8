//! The file system of a run: every node's disk, the configuration, and the operations the
//! public API performs on them, with their faults, latency and trace events (each a
//! `crashtest_protocol::DiskNote`, the type the tool decodes them with).
//!
//! It lives in a `plumbing` extension, so it is per run and survives the kills and restarts
//! of nodes; a node's disk is made on its first use. The first use of the extension also
//! registers the hook that crashes a node's disk when the node is killed.
//!
//! Operations act on the calling node's disk. A handle names its node, its inode and the
//! disk's boot count when it was opened: after the node crashes, the handle is stale and
//! every call on it fails with `EIO` (FoundationDB's detached files), as does every call from
//! a task of a node already killed.
//!
//! Invariant: every handle of a node's current boot is counted once, on its inode's open
//! count (checked with the core's verify switch: the sum of a disk's open counts is the number
//! of handles opened and not yet released since its last crash).
//!
//! Invariant: no borrow of the disks is held while anything outside this module runs (a kill,
//! a hook, user code), because a kill re-enters here through the hook and through the
//! destructors of the dropped tasks' handles.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::fault;
use crashtest_core::node::{NodeId, NodeStatus};
use crashtest_core::plumbing::checks::ExtensionCache;
use crashtest_core::plumbing::{self, life::NodeHook, notes};
use crashtest_core::rng::{Ratio, Stream};
use crashtest_protocol::DiskNote;

use crate::config::{DiskConfig, Faults, Latency};
use crate::crash::{self, Damage, Sampled};
use crate::disk::{Disk, Ino, Kind, Listed, OpenFlags};
use crate::errors;
use crate::exhaustive::Explore;
use crate::faults;
use crate::metadata::Metadata;
use crate::page::SECTOR_SIZE;
use crate::path::Names;

/// An open file or directory of a node's disk. Plain data, so that the synchronous handle
/// built on it is `Send + Sync` like a real file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    /// The run that opened it: a handle kept past its run (in a `static`) names an inode of
    /// that run's disk, which a later run's disk does not have.
    pub(crate) run: RunTag,
    pub(crate) node: NodeId,
    pub(crate) boot: u64,
    pub(crate) ino: Ino,
    pub(crate) flags: OpenFlags,
}

/// The per-run state of the simulated file system.
#[derive(Default)]
pub(crate) struct FsState {
    run: RunTag,
    config: Cell<DiskConfig>,
    disks: RefCell<BTreeMap<NodeId, Disk>>,
    /// Handles of each node's current boot opened and not yet released.
    handles: RefCell<BTreeMap<NodeId, u64>>,
    hooked: Cell<bool>,
    explore: RefCell<Option<Rc<Explore>>>,
    /// Calls armed for a node's next sync (`crate::on_next_sync`), oldest first.
    sync_traps: RefCell<Vec<(NodeId, SyncTrap)>>,
}

/// What a sync trap calls: typically a fault that kills the node inside its sync.
pub(crate) type SyncTrap = Box<dyn FnOnce()>;

/// The run a file system, and each handle, belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunTag(u32);

impl Default for RunTag {
    /// The running simulation's: a file system is made inside its run.
    fn default() -> RunTag {
        RunTag(plumbing::run_tag().expect("a file system is made inside its run"))
    }
}

/// Whether `handle` was opened in another run than the one running (kept in a `static`):
/// then the run is refused, and the caller fails the operation instead of looking at the
/// handle's node or inode, which are another run's.
pub(crate) fn from_another_run(handle: &Handle) -> bool {
    let other = state().is_some_and(|state| state.run != handle.run);
    if other {
        refuse_kept_file();
    }
    other
}

/// Whether `handle` was opened in the run going on (or no run goes on); no refusal.
pub(crate) fn is_of_this_run(handle: &Handle) -> bool {
    state().is_none_or(|state| state.run == handle.run)
}

#[cold]
fn refuse_kept_file() {
    plumbing::checks::refuse(
        "a file of the simulated disk opened in an earlier simulation was used in this one. A \
         file belongs to the run that opened it; something kept it between runs, most likely a \
         `static` (`LazyLock`, `OnceLock`, `lazy_static!`) or a thread-local holding a \
         database or a log. Open it inside the run, in the node that uses it, so that each run \
         has its own."
            .to_owned(),
    );
}

/// Crashes a node's disk when the node is killed.
struct CrashHook;

impl NodeHook for CrashHook {
    fn node_killed(&self, node: NodeId) {
        if let Some(state) = plumbing::checks::extension::<FsState>() {
            state.crash(node);
        }
    }
}

/// The file system of the run on this thread, or `None` outside a simulation.
#[inline]
pub(crate) fn state() -> Option<Rc<FsState>> {
    if !plumbing::is_simulation() {
        return None;
    }
    CURRENT.with(|current| {
        current.get(|state| {
            if !state.hooked.replace(true) {
                plumbing::life::add_node_hook(Rc::new(CrashHook));
            }
        })
    })
}

thread_local! {
    /// The file system of the run going on on this thread, cached so that every file call
    /// skips the extension lookup.
    static CURRENT: ExtensionCache<FsState> = const { ExtensionCache::new() };
}

/// The calling node inside a simulation (`None` outside one); `EIO` if it has been killed
/// (a task still running out the poll in which its node died).
pub(crate) fn current_node() -> io::Result<Option<NodeId>> {
    let Some(node) = plumbing::current_node() else {
        return Ok(None);
    };
    if plumbing::life::node_status(node) == Some(NodeStatus::Dead) {
        return Err(errors::io_error());
    }
    Ok(Some(node))
}

/// Runs `f` on the file system of the run; only called inside a simulation.
pub(crate) fn with<R>(f: impl FnOnce(&FsState) -> R) -> R {
    let state = state().expect("the simulated file system is only used inside a simulation");
    f(&state)
}

/// Runs a fallible `f` on the file system of the run; once the run has ended (a handle
/// outliving its simulation, closed by a destructor at teardown) it fails with an I/O error
/// instead of panicking, so that the run's own failure report is what the user sees.
pub(crate) fn with_io<R>(f: impl FnOnce(&FsState) -> io::Result<R>) -> io::Result<R> {
    match state() {
        Some(state) => f(&state),
        None => Err(io::Error::other(
            "the simulation this simulated file belongs to has ended",
        )),
    }
}

/// A crash point before a mutation by the calling node: true if exhaustive mode chose to
/// crash the node here, in which case it has just been killed (its disk crashed) and the
/// operation must not take effect.
pub(crate) fn crash_before_mutation() -> bool {
    let Some(node) = plumbing::current_node() else {
        return false;
    };
    let state = state();
    let crash = state.as_ref().is_some_and(|state| state.crash_point(node));
    if crash {
        let state = state.expect("only the file system of the run offers crash points");
        assert!(
            state.disks.try_borrow_mut().is_ok(),
            "no borrow of the disks is held while a crash point kills its node"
        );
        assert_ne!(
            plumbing::life::node_status(node),
            Some(NodeStatus::Dead),
            "a crash point is offered to a live node only"
        );
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "crash points are only offered to nodes"
        );
        let name = plumbing::life::node_name(node).expect("a node of the run has a name");
        let boot = state.boot(node);
        crashtest_core::node::lookup(&name)
            .expect("the node exists")
            .kill();
        assert_eq!(
            plumbing::life::node_status(node),
            Some(NodeStatus::Dead),
            "a crash point kills its node before the operation"
        );
        assert!(
            state.boot(node) > boot,
            "a crash point's kill crashes its node's disk before the operation"
        );
    }
    crash
}

/// The crash point of an async mutation: if the node was crashed here, never completes (the
/// task is dropped with its node at the end of this poll).
///
/// # Cancel safety
///
/// Cancel safe: the crash point is taken in the first poll, and dropping the future after it
/// changes nothing (a crashed node's task is dropped anyway).
pub(crate) async fn mutation() {
    if crash_before_mutation() {
        std::future::pending::<()>().await;
    }
}

/// Waits for the latency of an operation moving `bytes` on `node`'s disk.
///
/// # Cancel safety
///
/// Cancel safe: it only waits. The device time it booked in its first poll stays booked, as
/// a request already sent to a device is not taken back.
pub(crate) async fn latency(node: NodeId, bytes: u64, sync: bool) {
    let delay = state().and_then(|state| state.delay(node, bytes, sync));
    if let Some(delay) = delay {
        crashtest_core::time::sleep(delay).await;
    }
}

/// Draws a running fault from the `"disk-faults"` stream (drawn always, so that masking one
/// leaves the later draws aligned); noted on `node` if it applies.
fn inject(node: NodeId, ratio: Ratio, describe: impl FnOnce() -> String) -> bool {
    let fired = fault::draw(Stream::DiskFaults, node, ratio, describe);
    assert!(
        !fired || ratio != Ratio::NEVER,
        "a fault configured never to happen fired"
    );
    fired
}

/// `node`'s wall clock, in nanoseconds since the Unix epoch: the time a disk stamps.
fn node_clock_ns(node: NodeId) -> i64 {
    plumbing::timers::wall_clock_ns_of(node).expect("a simulated disk changes inside a simulation")
}

/// Notes a disk event; `text` builds its text in the trace's buffer, not a fresh string:
/// the disk notes every read, write and sync.
fn record(node: NodeId, note: DiskNote, text: impl FnOnce(&mut notes::Text<'_>)) {
    let (source, words) = note.encode();
    assert_eq!(
        DiskNote::decode(source, words),
        Some(note),
        "the tool decodes every note as it was recorded"
    );
    notes::record_for_with(node, source, words, text);
}

impl FsState {
    pub(crate) fn configure(&self, config: DiskConfig) {
        config.validate();
        self.config.set(config);
    }

    /// The configuration in force; exhaustive exploration turns running faults off, so that
    /// every case differs only in its enumerated choices.
    fn config(&self) -> DiskConfig {
        let mut config = self.config.get();
        if self.explore.borrow().is_some() {
            config.faults = Faults::default();
            assert_eq!(
                config.faults.read_corruption,
                Ratio::NEVER,
                "exploration runs without running faults"
            );
        }
        config
    }

    pub(crate) fn set_explore(&self, explore: Rc<Explore>) {
        assert!(
            self.disks.borrow().is_empty(),
            "an exploration is installed before any disk is used, so that every crash of the \
             case is enumerated"
        );
        let previous = self.explore.borrow_mut().replace(explore);
        assert!(previous.is_none(), "a run is one case of one exploration");
    }

    pub(crate) fn explore(&self) -> Option<Rc<Explore>> {
        self.explore.borrow().clone()
    }

    fn disk<R>(&self, node: NodeId, f: impl FnOnce(&mut Disk) -> R) -> R {
        assert!(
            self.hooked.get(),
            "a disk is used only once the crash hook is registered: a kill must crash it"
        );
        f(self.disks.borrow_mut().entry(node).or_default())
    }

    /// As [`FsState::disk`], for an operation that changes the disk: it stamps the node's
    /// wall clock on the disk first, for the times of what it changes.
    fn disk_now<R>(&self, node: NodeId, f: impl FnOnce(&mut Disk) -> R) -> R {
        let clock_ns = node_clock_ns(node);
        self.disk(node, |disk| {
            disk.clock_ns = clock_ns;
            f(disk)
        })
    }

    /// The boot count of `node`'s disk (how many crashes it has been through).
    pub(crate) fn boot(&self, node: NodeId) -> u64 {
        self.disk(node, |disk| disk.boot)
    }

    /// Checks that `handle` belongs to the current boot of a live node.
    fn check(&self, handle: &Handle) -> io::Result<()> {
        if handle.run != self.run {
            refuse_kept_file();
            return Err(errors::io_error());
        }
        if plumbing::life::node_status(handle.node) == Some(NodeStatus::Dead) {
            return Err(errors::io_error());
        }
        let boot = self.boot(handle.node);
        assert!(
            handle.boot <= boot,
            "a handle comes from this boot or an earlier one"
        );
        if boot != handle.boot {
            return Err(errors::io_error());
        }
        assert!(
            handle.flags.check().is_ok(),
            "a handle holds flags that open accepted"
        );
        self.disk(handle.node, |disk| {
            let inode = disk.inodes.get(&handle.ino);
            assert!(
                inode.is_some_and(|inode| inode.open > 0),
                "a handle of the current boot keeps its inode open"
            );
            assert!(
                !(handle.flags.writes()
                    && inode.is_some_and(|inode| matches!(inode.kind, Kind::Dir(_)))),
                "a handle open for writing is a file's"
            );
        });
        Ok(())
    }

    /// Arms `trap` for `node`'s next sync.
    pub(crate) fn arm_sync_trap(&self, node: NodeId, trap: SyncTrap) {
        self.sync_traps.borrow_mut().push((node, trap));
    }

    /// Calls the traps armed for `node`, with no borrow held: a trap may kill the node, and
    /// the sync then fails as any call of a dead process does.
    fn spring_sync_traps(&self, node: NodeId) {
        let sprung: Vec<SyncTrap> = {
            let mut traps = self.sync_traps.borrow_mut();
            if traps.is_empty() {
                return;
            }
            let (mine, others) = std::mem::take(&mut *traps)
                .into_iter()
                .partition(|(armed, _)| *armed == node);
            *traps = others;
            mine.into_iter().map(|(_, trap)| trap).collect()
        };
        let boot = self.boot(node);
        for trap in sprung {
            assert!(
                self.disks.try_borrow_mut().is_ok(),
                "no borrow of the disks is held while a sync trap runs"
            );
            trap();
        }
        // A trap that kills the node must crash its disk now, so that the sync it falls in
        // finds the handle stale.
        assert!(
            plumbing::life::node_status(node) != Some(NodeStatus::Dead) || self.boot(node) > boot,
            "a sync trap that killed its node left the disk uncrashed"
        );
    }

    // ----- exhaustive exploration -----

    /// Whether to crash `node` before its next mutation (only while exploring).
    pub(crate) fn crash_point(&self, node: NodeId) -> bool {
        let explore = self.explore.borrow().clone();
        let boot = self.boot(node);
        explore.is_some_and(|explore| explore.crash_here(node, boot))
    }

    // ----- latency -----

    /// How long an operation moving `bytes` takes on `node`'s disk, queued behind the
    /// operations before it (`None` without latency).
    pub(crate) fn delay(&self, node: NodeId, bytes: u64, sync: bool) -> Option<Duration> {
        let latency = self.config().latency;
        if latency == Latency::ZERO {
            return None;
        }
        let now = plumbing::timers::now_ns()?;
        let per_op = 1_000_000_000u64.checked_div(latency.iops).unwrap_or(0);
        let transfer = bytes
            .saturating_mul(1_000_000_000)
            .checked_div(latency.bandwidth)
            .unwrap_or(0);
        let done = self.disk(node, |disk| {
            let before = disk.busy_until_ns;
            disk.busy_until_ns = disk.busy_until_ns.max(now) + per_op + transfer;
            assert!(
                disk.busy_until_ns >= before,
                "the device finishes its operations in order"
            );
            disk.busy_until_ns
        });
        assert!(
            done >= now + per_op + transfer,
            "an operation takes at least its own time"
        );
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (least, most) = if sync {
            (nanos(latency.sync_min), nanos(latency.sync_max))
        } else {
            (0, per_op.saturating_mul(10))
        };
        let extra = plumbing::with_stream(Stream::DiskLatency, |rng| {
            if sync {
                rng.range_inclusive(least, most)
            } else {
                rng.below_inclusive(most)
            }
        })?;
        assert!(
            (least..=most).contains(&extra),
            "an operation's jitter lies in its configured range"
        );
        Some(Duration::from_nanos(done + extra - now))
    }

    /// The bytes of file data on `node`'s disk, and its capacity if one is set.
    pub(crate) fn space(&self, node: NodeId) -> (u64, Option<u64>) {
        let used = self.disk(node, |disk| disk.used_bytes());
        (used, self.config().faults.capacity)
    }

    // ----- files -----

    pub(crate) fn open(&self, node: NodeId, names: &Names, flags: OpenFlags) -> io::Result<Handle> {
        let result = self.disk_now(node, |disk| {
            let ino = disk.open(names, flags)?;
            disk.retain(ino);
            Ok(Handle {
                run: self.run,
                node,
                boot: disk.boot,
                ino,
                flags,
            })
        });
        if let Ok(handle) = &result {
            assert_eq!(
                handle.boot,
                self.boot(node),
                "a new handle is of the current boot"
            );
            assert_eq!(
                handle.flags, flags,
                "a handle keeps the flags it was opened with"
            );
            *self.handles.borrow_mut().entry(node).or_default() += 1;
            self.verify_handles(node);
            record(node, DiskNote::Open { ino: handle.ino }, |text| {
                let ino = handle.ino;
                text.push("open ").push(&names.display());
                text.push(" as inode ").number(ino);
            });
        }
        result
    }

    /// A second handle on `handle`'s open file, as `dup(2)` makes one: the same inode and
    /// flags, counted as one more open handle. A handle of an earlier boot (or of a dead node)
    /// gets the I/O error its other calls get.
    pub(crate) fn duplicate(&self, handle: &Handle) -> io::Result<Handle> {
        self.check(handle)?;
        self.disk(handle.node, |disk| disk.retain(handle.ino));
        *self.handles.borrow_mut().entry(handle.node).or_default() += 1;
        self.verify_handles(handle.node);
        Ok(*handle)
    }

    /// Drops a handle; a stale handle (or one outliving its run) holds nothing.
    pub(crate) fn release(&self, handle: &Handle) {
        if handle.run != self.run {
            return;
        }
        let current = self.disk(handle.node, |disk| {
            disk.release(handle.ino, handle.boot);
            handle.boot == disk.boot
        });
        if current {
            let mut handles = self.handles.borrow_mut();
            let count = handles
                .get_mut(&handle.node)
                .expect("a handle of the current boot was counted when opened");
            assert!(*count > 0, "a handle is released once");
            *count -= 1;
        }
        self.verify_handles(handle.node);
    }

    /// Checks that `node`'s disk counts on its inodes exactly the handles of its current boot
    /// that are open (with the core's verify switch only: it walks the inodes).
    fn verify_handles(&self, node: NodeId) {
        if !crashtest_core::verify::enabled() {
            return;
        }
        let counted = self.disk(node, |disk| {
            disk.inodes
                .values()
                .map(|inode| u64::from(inode.open))
                .sum::<u64>()
        });
        let open = self.handles.borrow().get(&node).copied().unwrap_or(0);
        assert_eq!(
            counted, open,
            "the inodes of a disk count every open handle of its boot, once"
        );
    }

    pub(crate) fn read(&self, handle: &Handle, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.check(handle)?;
        if !handle.flags.read {
            return Err(errors::bad_descriptor());
        }
        let node = handle.node;
        let ino = handle.ino;
        let faults = self.config().faults;
        let error = inject(node, faults.read_error, || {
            format!("read error (EIO) on inode {ino}")
        });
        let corrupt = inject(node, faults.read_corruption, || {
            format!("read corruption on inode {ino}, zone budget allowing")
        });
        let mut disks = self.disks.borrow_mut();
        let disk = disks.entry(node).or_default();
        let len = disk.len(ino)?;
        if error {
            return Err(errors::io_error());
        }
        let n = disk.read(ino, offset, buf)?;
        assert!(
            n as u64 <= len.saturating_sub(offset),
            "a read returns no byte past the end of the file"
        );
        let read = offset..offset + n as u64;
        let damage = plumbing::with_stream(Stream::DiskFaults, |rng| {
            faults::corrupt_on_read(&mut disks, node, ino, read, corrupt, &faults, rng)
        })
        .flatten();
        assert!(
            damage.is_none() || corrupt,
            "a read corrupts a sector only when its fault fired"
        );
        assert!(n <= buf.len(), "a read fills at most its buffer");
        disks[&node]
            .damage
            .apply_to_read(ino, offset, &mut buf[..n], len);
        if crashtest_core::verify::enabled() && n > 0 {
            // Sticky corruption flips one bit of a sector: a read differs from the page cache
            // by at most one bit per sector it covers.
            let start = usize::try_from(offset).expect("a read inside the file fits in memory");
            let cache = &disks[&node].file(ino)?.cache[start..start + n];
            let flipped: u64 = buf[..n]
                .iter()
                .zip(cache)
                .map(|(got, held)| u64::from((got ^ held).count_ones()))
                .sum();
            let sectors = (offset + n as u64 - 1) / SECTOR_SIZE - offset / SECTOR_SIZE + 1;
            assert!(
                flipped <= sectors,
                "a read of inode {ino} returned {flipped} flipped bits over {sectors} sectors"
            );
        }
        drop(disks);
        if let Some(damage) = damage {
            record(node, DiskNote::Fault { ino, offset }, |text| {
                text.push(&damage);
            });
        }
        record(node, DiskNote::Read { ino, offset }, |text| {
            text.push("read inode ").number(ino).push(": ");
            text.number(n as u64).push(" bytes at ").number(offset);
        });
        Ok(n)
    }

    /// Writes `bytes` at `offset` (at the end for an append handle); returns the offset just
    /// past the bytes written (where the cursor goes).
    pub(crate) fn write(&self, handle: &Handle, offset: u64, bytes: &[u8]) -> io::Result<u64> {
        self.check(handle)?;
        if !handle.flags.writes() {
            return Err(errors::bad_descriptor());
        }
        let node = handle.node;
        let ino = handle.ino;
        let config = self.config();
        let faults = config.faults;
        let error = inject(node, faults.write_error, || {
            format!("write error (EIO) on inode {ino}")
        });
        let full = inject(node, faults.disk_full, || {
            format!("disk full (ENOSPC) if inode {ino} grows")
        });
        let astray = inject(node, faults.misdirected_write, || {
            format!("misdirected write to inode {ino}, zone budget allowing")
        });
        let clock_ns = node_clock_ns(node);
        let mut disks = self.disks.borrow_mut();
        let disk = disks.entry(node).or_default();
        disk.clock_ns = clock_ns;
        let offset = if handle.flags.append {
            disk.len(ino)?
        } else {
            offset
        };
        let end = match offset.checked_add(bytes.len() as u64) {
            Some(end) if end <= config.max_file_size => end,
            _ => return Err(errors::file_too_large()),
        };
        if error {
            return Err(errors::io_error());
        }
        if faults::disk_full(disk, ino, end, full, &faults) {
            return Err(errors::no_space());
        }
        let len_before = disk.len(ino)?;
        disk.damage.heal(ino, offset..end, faults.zone_size);
        let landed = plumbing::with_stream(Stream::DiskFaults, |rng| {
            faults::misdirect(&mut disks, node, ino, offset..end, astray, &faults, rng)
        })
        .flatten();
        let disk = disks.get_mut(&node).expect("the disk exists");
        let misdirected = landed.is_some();
        assert!(
            !misdirected || astray,
            "a write goes astray only when its fault fired"
        );
        // The bytes a misdirected write should have replaced (inside the file, as it only
        // strays from there), to check that they stay stale.
        let stale = if crashtest_core::verify::enabled() && misdirected {
            let meant = usize::try_from(offset).expect("a file offset fits in memory")
                ..usize::try_from(end).expect("a file offset fits in memory");
            Some((disk.file(ino)?.cache[meant.clone()].to_vec(), meant))
        } else {
            None
        };
        let target = match landed {
            Some((landed, text)) => {
                assert_ne!(landed, offset, "a misdirected write lands elsewhere");
                record(
                    node,
                    DiskNote::Fault {
                        ino,
                        offset: landed,
                    },
                    |note| {
                        note.push(&text);
                    },
                );
                landed
            }
            None => offset,
        };
        disk.write(ino, target, bytes)?;
        assert!(
            disk.len(ino)? >= target + bytes.len() as u64,
            "the file holds the bytes written"
        );
        if let Some((stale, meant)) = stale {
            assert!(
                disk.file(ino)?.cache[meant] == stale[..],
                "a misdirected write leaves its target with the old bytes"
            );
        }
        let expected_len = if misdirected {
            len_before
        } else {
            len_before.max(end)
        };
        assert_eq!(
            disk.len(ino)?,
            expected_len,
            "a write grows its file to its end, and a misdirected one (inside the file) never \
             grows it"
        );
        if crashtest_core::verify::enabled()
            && let Some(capacity) = faults.capacity
        {
            assert!(
                expected_len <= len_before || disk.used_bytes() <= capacity,
                "a write grew a file past the disk's capacity"
            );
        }
        drop(disks);
        record(node, DiskNote::Write { ino, offset }, |text| {
            text.push("write inode ").number(ino).push(": ");
            text.number(bytes.len() as u64)
                .push(" bytes at ")
                .number(offset);
        });
        Ok(end)
    }

    pub(crate) fn set_len(&self, handle: &Handle, len: u64) -> io::Result<()> {
        self.check(handle)?;
        if !handle.flags.writes() {
            return Err(errors::invalid_input());
        }
        let node = handle.node;
        let ino = handle.ino;
        let config = self.config();
        let faults = config.faults;
        let full = inject(node, faults.disk_full, || {
            format!("disk full (ENOSPC) if inode {ino} grows")
        });
        let max_file_size = config.max_file_size;
        self.disk_now(node, |disk| {
            disk.file(ino)?;
            if len > max_file_size {
                return Err(errors::file_too_large());
            }
            if faults::disk_full(disk, ino, len, full, &faults) {
                assert!(
                    len > disk.len(ino)?,
                    "only growing a file finds the disk full"
                );
                return Err(errors::no_space());
            }
            let grows = crashtest_core::verify::enabled() && len > disk.len(ino)?;
            disk.set_len(ino, len)?;
            assert_eq!(disk.len(ino)?, len, "set_len sets what reads see");
            if grows && let Some(capacity) = faults.capacity {
                assert!(
                    disk.used_bytes() <= capacity,
                    "set_len grew a file past the disk's capacity"
                );
            }
            Ok(())
        })?;
        record(node, DiskNote::SetLen { ino, len }, |text| {
            text.push("set_len inode ")
                .number(ino)
                .push(" to ")
                .number(len);
        });
        Ok(())
    }

    pub(crate) fn len(&self, handle: &Handle) -> io::Result<u64> {
        self.check(handle)?;
        let len = self.disk(handle.node, |disk| disk.len(handle.ino))?;
        assert!(
            usize::try_from(len).is_ok(),
            "a simulated file fits in memory"
        );
        Ok(len)
    }

    pub(crate) fn handle_metadata(&self, handle: &Handle) -> io::Result<Metadata> {
        self.check(handle)?;
        let metadata = self.disk(handle.node, |disk| disk.metadata(handle.ino));
        assert!(
            !(metadata.is_dir() && handle.flags.writes()),
            "no handle open for writing is a directory"
        );
        Ok(metadata)
    }

    /// Sets the permission bits of the entry `names` leads to, as `chmod(2)`.
    pub(crate) fn set_mode(&self, node: NodeId, names: &Names, mode: u32) -> io::Result<()> {
        let ino = self.disk(node, |disk| disk.resolve(names))?;
        self.set_inode_mode(node, ino, mode);
        Ok(())
    }

    /// Sets the permission bits of an open file, as `fchmod(2)` (which needs no write access).
    pub(crate) fn handle_set_mode(&self, handle: &Handle, mode: u32) -> io::Result<()> {
        self.check(handle)?;
        self.set_inode_mode(handle.node, handle.ino, mode);
        Ok(())
    }

    /// Sets an open file's modification time, as `futimens(2)` with the access time left.
    pub(crate) fn handle_set_modified(&self, handle: &Handle, modified_ns: i64) -> io::Result<()> {
        self.check(handle)?;
        let ino = handle.ino;
        self.disk_now(handle.node, |disk| disk.set_modified(ino, modified_ns));
        let note = DiskNote::SetModified {
            ino,
            ns: u64::from_ne_bytes(modified_ns.to_ne_bytes()),
        };
        record(handle.node, note, |text| {
            text.push("set the modification time of inode ")
                .number(ino)
                .push(" to ")
                .push(&modified_ns.to_string())
                .push(" ns");
        });
        Ok(())
    }

    fn set_inode_mode(&self, node: NodeId, ino: Ino, mode: u32) {
        let mode = mode & crate::disk::MODE_BITS;
        self.disk_now(node, |disk| disk.set_mode(ino, mode));
        let note = DiskNote::SetMode {
            ino,
            mode: u64::from(mode),
        };
        record(node, note, |text| {
            text.push("chmod inode ")
                .number(ino)
                .push(&format!(" to {mode:o}"));
        });
    }

    /// Syncs a file's data, or a directory's entries. A failed sync loses the file's unsynced
    /// writes for good, as on Linux.
    pub(crate) fn sync(&self, handle: &Handle) -> io::Result<()> {
        self.spring_sync_traps(handle.node);
        self.check(handle)?;
        let node = handle.node;
        let ino = handle.ino;
        let faults = self.config().faults;
        let error = inject(node, faults.sync_error, || {
            format!("sync error (EIO) on inode {ino}: its unsynced writes are lost")
        });
        if error {
            self.disk(node, |disk| {
                disk.lose_pending(ino);
                assert!(
                    disk.file(ino).is_err() || disk.file(ino).is_ok_and(|f| f.pending.is_empty()),
                    "a failed sync leaves nothing of the file pending"
                );
            });
            return Err(errors::io_error());
        }
        let is_dir = self.disk(node, |disk| {
            if disk.is_dir(ino) {
                disk.sync_dir(ino);
                assert!(
                    disk.dir_log
                        .iter()
                        .all(|change| !change.dirs().contains(&ino)),
                    "a completed directory sync leaves nothing of it pending"
                );
                true
            } else {
                disk.sync_file(ino);
                assert!(
                    disk.file(ino).is_ok_and(|file| file.pending.is_empty()),
                    "a completed sync leaves nothing of the file pending"
                );
                false
            }
        });
        let what = if is_dir { "directory" } else { "file" };
        record(node, DiskNote::Sync { ino, dir: is_dir }, |text| {
            text.push("sync ").push(what).push(" inode ").number(ino);
        });
        Ok(())
    }

    // ----- namespace -----

    /// Runs a change of the namespace and records it.
    pub(crate) fn namespace(
        &self,
        node: NodeId,
        what: &str,
        f: impl FnOnce(&mut Disk) -> io::Result<()>,
    ) -> io::Result<()> {
        let result = self.disk_now(node, |disk| {
            let logged = disk.dir_log.len();
            let result = f(disk);
            assert!(
                result.is_ok() || disk.dir_log.len() == logged,
                "a failed change of the namespace changes nothing"
            );
            result
        });
        if result.is_ok() {
            record(node, DiskNote::Namespace, |text| {
                text.push(what);
            });
        }
        result
    }

    pub(crate) fn metadata(&self, node: NodeId, names: &Names) -> io::Result<Metadata> {
        let metadata = self.disk(node, |disk| {
            let ino = disk.resolve(names)?;
            Ok::<_, io::Error>(disk.metadata(ino))
        })?;
        assert!(
            metadata.is_file() != metadata.is_dir(),
            "a simulated disk holds files and directories only"
        );
        Ok(metadata)
    }

    /// The entries of a directory, in an order drawn from the seed (real directories list
    /// in no promised order).
    pub(crate) fn read_dir(&self, node: NodeId, names: &Names) -> io::Result<Vec<Listed>> {
        let mut entries = self.disk(node, |disk| disk.read_dir(names))?;
        let listed = entries.len();
        plumbing::with_stream(Stream::DiskReaddir, |rng| rng.shuffle(&mut entries));
        assert_eq!(
            entries.len(),
            listed,
            "shuffling a listing keeps every entry"
        );
        if crashtest_core::verify::enabled() {
            let names: std::collections::BTreeSet<&str> =
                entries.iter().map(|entry| entry.name.as_str()).collect();
            assert_eq!(names.len(), listed, "a directory lists each name once");
        }
        Ok(entries)
    }

    /// Reads a whole file by path.
    pub(crate) fn read_file(&self, node: NodeId, names: &Names) -> io::Result<Vec<u8>> {
        let flags = OpenFlags {
            read: true,
            ..OpenFlags::default()
        };
        let handle = self.open(node, names, flags)?;
        let result = (|| {
            let len = self.len(&handle)?;
            let mut buf = vec![0; usize::try_from(len).expect("a file fits in memory")];
            let n = self.read(&handle, 0, &mut buf)?;
            assert_eq!(n, buf.len(), "a whole-file read returns the whole file");
            Ok(buf)
        })();
        self.release(&handle);
        result
    }

    // ----- crash -----

    /// Applies the crash model to `node`'s disk (its node was just killed).
    ///
    /// Each part of the damage (a file's lost or torn writes, the undone directory changes,
    /// a lost chmod, the weak model's cut) is a fault with an id of its own, which a run may
    /// mask: masked,
    /// what that part would have lost survives whole, and every draw stays as it was.
    /// Exhaustive exploration enumerates the damage instead, and lists it without ids.
    fn crash(&self, node: NodeId) {
        assert!(
            self.disks.try_borrow_mut().is_ok(),
            "no borrow of the disks is held while a kill crashes a disk"
        );
        assert_eq!(
            plumbing::life::node_status(node),
            Some(NodeStatus::Dead),
            "a disk crashes only once its node is dead"
        );
        let boot = self.disks.borrow().get(&node).map(|disk| disk.boot);
        let config = self.config();
        let explore = self.explore.borrow().clone();
        let mut judge = |damage: &Damage<'_>| match &explore {
            Some(_) => {
                fault::note(node, damage.describe());
                true
            }
            None => fault::follow(Stream::Disk, node, || damage.describe()),
        };
        let outcome = plumbing::with_stream(Stream::Disk, |rng| {
            let mut disks = self.disks.borrow_mut();
            let disk = disks.get_mut(&node)?;
            let outcome = match &explore {
                Some(explore) => crash::crash(
                    disk,
                    &config,
                    &mut explore.enumerated(rng, config.torn_garbage),
                    &mut judge,
                ),
                None => {
                    let mut choices = Sampled {
                        rng,
                        config: &config,
                    };
                    crash::crash(disk, &config, &mut choices, &mut judge)
                }
            };
            Some(outcome)
        })
        .flatten();
        let Some(outcome) = outcome else {
            return;
        };
        self.handles.borrow_mut().remove(&node);
        self.verify_handles(node);
        assert!(
            self.disk(node, |disk| disk.dir_log.is_empty()),
            "a crashed disk has nothing pending"
        );
        assert_eq!(
            boot.map(|boot| boot + 1),
            Some(self.boot(node)),
            "a crash makes every handle of the node stale"
        );
        record(
            node,
            DiskNote::Crash {
                files: outcome.files.len() as u64,
                dir_changes_dropped: outcome.dir_changes_dropped,
            },
            |text| {
                text.push("crash settled ")
                    .number(outcome.files.len() as u64);
                text.push(" files and ");
                text.number(outcome.dir_changes_kept + outcome.dir_changes_dropped);
                text.push(" directory changes");
            },
        );
    }
}
