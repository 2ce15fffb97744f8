//! crashtest's simulated disk: a per-node file system whose crash model is an adversary.
//!
//! Inside a simulation, every node has its own disk, which survives the node's kills and
//! restarts. The async API mirrors `tokio::fs` ([`File`], [`OpenOptions`], [`read`],
//! [`write()`], [`rename`], [`read_dir`]...) and acts on the calling node's disk; [`sync`] is
//! the same disk shaped like `std::fs`, for blocking code and synchronous storage traits. Outside a
//! simulation the same calls reach the real file system (`tokio::fs`, `std::fs`).
//!
//! Writes land in a page cache. Only a completed `sync_all`/`sync_data` makes a file's data
//! durable, and only a sync of the parent directory makes a new, renamed or removed entry
//! durable. When a node is killed, its disk keeps what was durable and the crash model
//! decides the fate of everything else ([`CrashModel`]): by default the strong model, which
//! sometimes keeps all of it and otherwise keeps, drops or tears it page by page and sector
//! by sector, and keeps or undoes each pending truncate and directory change. Faults may also
//! be injected while the disk runs ([`DiskConfig`]); [`exhaustive`] enumerates every crash
//! point and outcome of a small scope instead of sampling them.
//!
//! ```
//! # mod crashtest { pub use crashtest_core::*; pub use crashtest_fs as fs; }
//! use crashtest::{fs, node, time, Sim};
//! use std::time::Duration;
//! use tokio::io::AsyncWriteExt;
//!
//! Sim::new(7).run(async {
//!     let db = node::create("db", || async {
//!         if fs::try_exists("/state").await.unwrap() {
//!             // Recovery: whatever was synced is here.
//!             assert_eq!(fs::read("/state").await.unwrap(), b"v1");
//!             return;
//!         }
//!         let mut file = fs::File::create("/state").await.unwrap();
//!         file.write_all(b"v1").await.unwrap();
//!         file.flush().await.unwrap(); // a write's error comes here, not from sync_all
//!         file.sync_all().await.unwrap();
//!         fs::sync_dir("/").await.unwrap();
//!         std::future::pending::<()>().await;
//!     });
//!     time::sleep(Duration::from_secs(1)).await;
//!     db.restart(); // a crash: the disk keeps what was synced
//!     time::sleep(Duration::from_secs(1)).await;
//! }).unwrap();
//! ```
//!
//! # The contract: what a correct program may assume
//!
//! A correct program (checksums where the model can tear, fsync discipline, retries) passes
//! every seed; a failure of such a program is a bug in crashtest.
//!
//! 1. **Synced data survives.** Bytes covered by a completed `sync_all`/`sync_data` of their
//!    file are on the disk after any crash, unless a later write or truncate covering them
//!    has also completed its sync, or the read-corruption and misdirection faults below hit
//!    them.
//! 2. **Names need their directory synced.** Creating, renaming or removing an entry is
//!    durable only once its parent directory is synced ([`sync_dir`], or
//!    [`File::open`]`(dir)` then `sync_all`); for a rename across directories, sync either
//!    one. A file created and synced but whose directory was not synced may vanish. A rename
//!    is atomic: after a crash the entry is at its old name or its new one, never both or
//!    neither. A hard link ([`hard_link`]) is a new name like any other: durable once its
//!    directory is synced. Syncing a directory does not sync its parent: a new directory's
//!    own entry needs its parent synced.
//! 3. **Unsynced data is anything the writes could have made it.** After a crash, a byte
//!    written but not synced holds its old value, its new value, or garbage; a crash never
//!    changes a byte no unsynced write or truncate covered ("powersafe overwrite"). A file's
//!    length after a crash lies between what was synced and what was written; a gap reads as
//!    zeros. Checksum records to tell a torn one. ([`DiskConfig::torn_sector_garbage`]
//!    takes garbage out, for software whose stated hardware model is "each byte old or
//!    new".)
//! 4. **Changes of one directory survive in order.** If a later change to a directory
//!    survives a crash, so did every earlier one to the same directory. There is no such
//!    order between files, between a file's data and its entry, or between the writes of
//!    one file.
//! 5. **A failed sync loses data.** When a sync fails (`EIO`), the writes it should have
//!    made durable never will be, although reads may still return them until the node
//!    crashes (Linux's behaviour). Write them again and sync again, or treat the error as
//!    fatal and restart.
//! 6. **Damage to synced data is bounded.** Read corruption (a sector reads back with a bit
//!    flipped, every time, until it is written again) and misdirected writes (a write lands
//!    elsewhere in its zone, leaving its target stale) are off by default. When on, on one
//!    disk at most [`DiskConfig::max_damaged_zones`] zones (default one) hold damage at a
//!    time, and the same zone of the same path is damaged on at most
//!    [`DiskConfig::max_damaged_replicas`] nodes (default one). So checksummed data kept in
//!    two zones of a disk (e.g. two copies a zone apart, or in two files), or replicated on
//!    two nodes, always has an intact copy; writing a damaged sector heals it.
//! 7. **Errors are the real ones.** Injected errors are `EIO` (read, write, sync) and
//!    `ENOSPC` (growth); neither changes what is durable (except 5). Operations of a node
//!    that has been killed, and handles opened before its last crash, fail with `EIO`. A
//!    [`File`] is write-behind, as tokio's: a write returns at once, and its error comes
//!    from the file's next write or flush (a sync does not report it), so `flush` before
//!    relying on a sync. A file never grows past [`DiskConfig::max_file_size`] (default
//!    1 GiB: the simulated disk holds files whole in memory); growing it further fails with
//!    `EFBIG`, as a real file system does past its own limit.
//! 8. **Directory listings have no order** ([`read_dir`] shuffles them from the seed).
//! 9. **Permission bits and times need their entry synced.** [`set_permissions`] (or
//!    [`File::set_permissions`]), [`File::set_modified`], and the times every change stamps
//!    (on the node's wall clock: a file's data or a directory's entries change its
//!    modification time, anything its change time; no access times are kept) are seen at
//!    once and durable once the entry itself is synced (for a directory, [`sync_dir`] of
//!    it). A crash before that keeps the times only with all the unsynced changes that
//!    stamped them, and keeps or loses a chmod on its own, whatever became of the data. New entries get
//!    0o666 for a file and 0o777 for a directory, or the `mode` asked for, under the umask
//!    022. The node's process owns every entry and is no superuser: opening an existing file
//!    to read needs its owner's `r`, to write or truncate its owner's `w`, or the open fails
//!    with `EACCES` (the open that creates a file may write it whatever its mode). Nothing
//!    else checks the bits.
//!
//! Nothing else is promised: unsynced data, an fsync of a file saving its entry, or a
//! listing's order are exactly what the adversary varies.
//!
//! # Determinism
//!
//! Crash outcomes are drawn from the run's `"disk"` stream, running faults from
//! `"disk-faults"`, latencies from `"disk-latency"`, listing orders from `"disk-readdir"`;
//! every disk operation, fault and crash is a trace event, so it feeds the run's
//! fingerprint.
//!
//! A crash's damage is listed as faults with ids, one per file that lost or tore unsynced
//! data and one for undone directory changes (for the weak model, one for its cut). Masking
//! such a fault (`Config::mask_faults`, or `crashtest minimize`) spares that part: its
//! unsynced changes survive whole, and every draw stays as it was, so the rest of the run
//! replays unchanged up to where the spared data is read.
// The crate-level example is written as users write it, with the facade's paths
// (`crashtest::...`). The facade depends on this crate, so depending on it here, even for
// doc tests, would be a cycle: the example's hidden first line maps those paths onto the
// crates the facade re-exports instead.

mod config;
mod crash;
mod disk;
mod errors;
pub mod exhaustive;
mod faults;
mod file;
mod metadata;
mod open_options;
mod ops;
mod page;
mod path;
mod state;
pub mod sync;
mod tokio_seam;

pub use config::{CrashModel, DiskConfig, Latency};
pub use file::{File, OpenOptions};
pub use metadata::{FileType, Metadata};
pub use ops::{
    DirEntry, ReadDir, create_dir, create_dir_all, hard_link, metadata, read, read_dir,
    read_to_string, remove_dir, remove_file, rename, set_permissions, sync_dir, try_exists, write,
};
pub use tokio_seam::register_tokio_seam;

/// Installs `config` for every disk of the running simulation (call it at the start of the
/// test body). Outside a simulation it does nothing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::{CrashModel, DiskConfig};
///
/// crashtest::Sim::new(1).run(async {
///     crashtest::fs::configure(DiskConfig::default().crash_model(CrashModel::Weak));
/// }).unwrap();
/// ```
pub fn configure(config: DiskConfig) {
    if let Some(state) = state::state() {
        state.configure(config);
    }
}

/// Calls `trap` when `node` next syncs a file or a directory, before the sync takes effect.
/// A trap that kills the node makes the crash fall *inside* that sync (the sync fails, as any
/// call of a dead process does, and its writes stay unsynced): a fault planned for a moment
/// the disk knows and its caller does not, such as the first sync after a restart. Outside
/// a simulation it does nothing.
///
/// ```
/// use crashtest_core::{node, plumbing};
/// use std::rc::Rc;
///
/// crashtest_core::Sim::new(1).run(async {
///     let db = node::create("db", || async {
///         let file = crashtest_fs::sync::File::create("/log").unwrap();
///         file.write_all_at(b"entry", 0).unwrap();
///         let _ = file.sync_all();
///         std::future::pending::<()>().await;
///     });
///     let id = db.id();
///     crashtest_fs::on_next_sync(id, move || plumbing::life::kill(id));
///     crashtest_core::time::sleep(std::time::Duration::from_millis(10)).await;
///     assert_eq!(db.status(), node::NodeStatus::Dead, "killed inside its sync");
/// }).unwrap();
/// ```
pub fn on_next_sync(node: crashtest_core::node::NodeId, trap: impl FnOnce() + 'static) {
    if let Some(state) = state::state() {
        state.arm_sync_trap(node, Box::new(trap));
    }
}
