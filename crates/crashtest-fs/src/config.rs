//! How the simulated disks of a run behave: the crash model, its odds, the faults injected
//! while running, and the latency of each operation.
//!
//! Every probability is an integer [`Ratio`], never a float, so a decision is exact on every
//! platform. The defaults are FoundationDB's `AsyncFileNonDurable` figures for the crash model
//! (from FoundationDB's `fdbrpc/AsyncFileNonDurable.actor.h`), no running faults, and small
//! latencies. A configuration is installed per run with [`crate::configure`] and applies to
//! every node's disk.

use std::time::Duration;

use crashtest_core::rng::Ratio;

/// The default zone: 1 MiB, a whole number of sectors as every zone must be.
const DEFAULT_ZONE_SIZE: u64 = 1 << 20;
/// The default largest file: a simulated file lives in memory, whole, so a write at a wild
/// offset (or a `set_len` meant for a sparse file) must fail with a clear error rather than
/// ask the host for terabytes. 1 GiB leaves room for several nodes' files on a test machine.
pub(crate) const DEFAULT_MAX_FILE_SIZE: u64 = 1 << 30;
const _: () =
    assert!(DEFAULT_ZONE_SIZE > 0 && DEFAULT_ZONE_SIZE.is_multiple_of(crate::page::SECTOR_SIZE));

/// Which crash model a node kill applies to the writes not yet synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CrashModel {
    /// The adversary (default): sometimes everything survives; otherwise each unsynced write
    /// is walked page by page (kept, dropped or corrupted) and a corrupted page sector by
    /// sector (kept, torn or dropped); pending truncates and directory changes each may or may
    /// not take effect.
    #[default]
    Strong,
    /// The model most tools use, for comparison: the crash happens between two operations, so
    /// the disk keeps a prefix of the unsynced operations, each one whole (no reordering, no
    /// tearing); a chmod is one such operation (the strong model draws each on its own).
    Weak,
}

/// Latency of disk operations, from a serial device with `iops` and `bandwidth`
/// (FoundationDB's `waitUntilDiskReady`): each operation waits for the previous one, then
/// takes `1/iops + bytes/bandwidth` plus a random extra of up to ten times `1/iops`; a sync
/// takes a random time in `sync_min..=sync_max` on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    pub(crate) iops: u64,
    pub(crate) bandwidth: u64,
    pub(crate) sync_min: Duration,
    pub(crate) sync_max: Duration,
}

impl Latency {
    /// No latency at all: operations complete without a scheduling point.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let config = crashtest::fs::DiskConfig::default().latency(crashtest::fs::Latency::ZERO);
    /// # let _ = config;
    /// ```
    pub const ZERO: Latency = Latency {
        iops: 0,
        bandwidth: 0,
        sync_min: Duration::ZERO,
        sync_max: Duration::ZERO,
    };

    /// A device doing `iops` operations and `bandwidth` bytes per second; 0 means unbounded.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// // FoundationDB's simulated disk: 5000 IOPS, 50 MB/s.
    /// let _ = crashtest::fs::Latency::new(5_000, 50_000_000);
    /// ```
    pub fn new(iops: u64, bandwidth: u64) -> Latency {
        Latency {
            iops,
            bandwidth,
            ..Latency::default()
        }
    }

    /// A sync takes `min..=max` more (FoundationDB uses 5 to 15 ms).
    ///
    /// # Panics
    ///
    /// Panics if `min > max`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::time::Duration;
    /// let _ = crashtest::fs::Latency::new(5_000, 50_000_000)
    ///     .sync(Duration::from_millis(5), Duration::from_millis(15));
    /// ```
    pub fn sync(mut self, min: Duration, max: Duration) -> Latency {
        assert!(min <= max, "sync latency range {min:?}..={max:?} is empty");
        assert!(
            u64::try_from(max.as_nanos()).is_ok(),
            "a sync latency of {max:?} is too long: at most 2^64 - 1 ns (about 584 years)"
        );
        self.sync_min = min;
        self.sync_max = max;
        self
    }
}

impl Default for Latency {
    /// 5000 IOPS, 50 MB/s (FoundationDB's figures) and 0.5 to 1.5 ms per sync.
    fn default() -> Latency {
        Latency {
            iops: 5_000,
            bandwidth: 50_000_000,
            sync_min: Duration::from_micros(500),
            sync_max: Duration::from_micros(1_500),
        }
    }
}

/// Faults injected while the disk runs (all off by default).
///
/// Faults that damage data already synced (read corruption, misdirected writes) are bounded
/// by zones; see the crate documentation for the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Faults {
    pub(crate) read_error: Ratio,
    pub(crate) write_error: Ratio,
    pub(crate) sync_error: Ratio,
    pub(crate) disk_full: Ratio,
    pub(crate) read_corruption: Ratio,
    pub(crate) misdirected_write: Ratio,
    pub(crate) capacity: Option<u64>,
    pub(crate) zone_size: u64,
    pub(crate) max_damaged_zones: usize,
    pub(crate) max_damaged_replicas: usize,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            read_error: Ratio::NEVER,
            write_error: Ratio::NEVER,
            sync_error: Ratio::NEVER,
            disk_full: Ratio::NEVER,
            read_corruption: Ratio::NEVER,
            misdirected_write: Ratio::NEVER,
            capacity: None,
            zone_size: DEFAULT_ZONE_SIZE,
            max_damaged_zones: 1,
            max_damaged_replicas: 1,
        }
    }
}

/// The behaviour of every simulated disk of a run; install it with [`crate::configure`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::rand::Ratio;
/// use crashtest::fs::{CrashModel, DiskConfig};
///
/// let config = DiskConfig::default()
///     .crash_model(CrashModel::Strong)
///     .sync_error(Ratio::new(1, 100))
///     .read_corruption(Ratio::new(1, 50));
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskConfig {
    pub(crate) model: CrashModel,
    pub(crate) all_survive: Ratio,
    pub(crate) truncate_survives: Ratio,
    pub(crate) dir_change_survives: Ratio,
    pub(crate) torn_garbage: bool,
    pub(crate) latency: Latency,
    pub(crate) faults: Faults,
    pub(crate) max_file_size: u64,
}

impl Default for DiskConfig {
    fn default() -> DiskConfig {
        DiskConfig {
            model: CrashModel::Strong,
            // FoundationDB: on a kill, every pending write survives with probability 0.1.
            all_survive: Ratio::new(1, 10),
            // FoundationDB applies a pending truncate with probability 0.5 otherwise.
            truncate_survives: Ratio::new(1, 2),
            dir_change_survives: Ratio::new(1, 2),
            torn_garbage: true,
            latency: Latency::default(),
            faults: Faults::default(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

impl DiskConfig {
    /// Checks that the settings make sense together (each setter checks its own argument;
    /// this is the configuration's invariant, asserted when it is installed).
    pub(crate) fn validate(&self) {
        let latency = &self.latency;
        assert!(
            latency.sync_min <= latency.sync_max,
            "sync latency range {:?}..={:?} is empty",
            latency.sync_min,
            latency.sync_max
        );
        // The sync's jitter is drawn in whole nanoseconds of a u64.
        assert!(
            u64::try_from(latency.sync_max.as_nanos()).is_ok(),
            "a sync latency of {:?} is too long: at most 2^64 - 1 ns",
            latency.sync_max
        );
        assert!(
            self.max_file_size > 0,
            "a disk whose files can hold nothing is not a disk"
        );
        let faults = &self.faults;
        assert!(
            faults.zone_size > 0 && faults.zone_size.is_multiple_of(crate::page::SECTOR_SIZE),
            "a zone is a non-zero number of 512-byte sectors, not {} bytes",
            faults.zone_size
        );
    }

    /// The crash model a kill applies (default [`CrashModel::Strong`]).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().crash_model(crashtest::fs::CrashModel::Weak);
    /// ```
    pub fn crash_model(mut self, model: CrashModel) -> DiskConfig {
        self.model = model;
        self
    }

    /// Under the strong model, the chance that a file's unsynced writes all survive a kill
    /// (default 1/10).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().all_survive(crashtest::rand::Ratio::new(1, 4));
    /// ```
    pub fn all_survive(mut self, ratio: Ratio) -> DiskConfig {
        self.all_survive = ratio;
        self
    }

    /// Under the strong model, the chance that a pending `set_len` takes effect (default 1/2).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default()
    ///     .truncate_survives(crashtest::rand::Ratio::new(1, 3));
    /// ```
    pub fn truncate_survives(mut self, ratio: Ratio) -> DiskConfig {
        self.truncate_survives = ratio;
        self
    }

    /// Under the strong model, the chance that a directory change not yet synced (create,
    /// rename, remove) takes effect (default 1/2).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default()
    ///     .dir_change_survives(crashtest::rand::Ratio::new(1, 3));
    /// ```
    pub fn dir_change_survives(mut self, ratio: Ratio) -> DiskConfig {
        self.dir_change_survives = ratio;
        self
    }

    /// Under the strong model, whether the bytes of a torn sector that the write did not
    /// reach may hold garbage (the default, as FoundationDB's `AsyncFileNonDurable`), or only
    /// their old contents. Turn it off to test software under the hardware model it states:
    /// redb, for one, assumes that each byte of an interrupted write ends up old or new. The
    /// crash draws the same coins either way, so a seed keeps its other decisions.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().torn_sector_garbage(false);
    /// ```
    pub fn torn_sector_garbage(mut self, on: bool) -> DiskConfig {
        self.torn_garbage = on;
        self
    }

    /// The latency of operations of the async API (the synchronous handle takes none).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().latency(crashtest::fs::Latency::new(100, 0));
    /// ```
    pub fn latency(mut self, latency: Latency) -> DiskConfig {
        self.latency = latency;
        self
    }

    /// The chance that a read fails with `EIO`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().read_error(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn read_error(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.read_error = ratio;
        self
    }

    /// The chance that a write fails with `EIO` (and does nothing).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().write_error(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn write_error(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.write_error = ratio;
        self
    }

    /// The chance that a sync fails with `EIO`. As on Linux, the writes it should have made
    /// durable are then lost for good, though reads may still return them until a crash.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().sync_error(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn sync_error(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.sync_error = ratio;
        self
    }

    /// The chance that a write or `set_len` that grows a file fails with `ENOSPC` although
    /// space is left (a transiently full disk).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().disk_full(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn disk_full(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.disk_full = ratio;
        self
    }

    /// Each disk holds at most `bytes` of file data; growing past it fails with `ENOSPC`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().capacity(1 << 30);
    /// ```
    pub fn capacity(mut self, bytes: u64) -> DiskConfig {
        self.faults.capacity = Some(bytes);
        self
    }

    /// The largest a file may grow (default 1 GiB): a write or `set_len` past it fails with
    /// `EFBIG` ("File too large"), as a real file system does past its own limit. The simulated
    /// disk holds every file whole in memory, sparse or not, so raise this only as far as the
    /// machine's memory allows.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().max_file_size(4 << 30);
    /// ```
    pub fn max_file_size(mut self, bytes: u64) -> DiskConfig {
        assert!(
            bytes > 0,
            "a disk whose files can hold nothing is not a disk"
        );
        self.max_file_size = bytes;
        self
    }

    /// The chance that a read marks one sector it covers as corrupt: from then on reads of
    /// that sector return it with one bit flipped, until it is overwritten (TigerBeetle's
    /// sticky read fault). Bounded by zones.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default()
    ///     .read_corruption(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn read_corruption(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.read_corruption = ratio;
        self
    }

    /// The chance that a write lands at another sector-aligned offset of the same zone of the
    /// same file, leaving its target with the old bytes. Bounded by zones.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default()
    ///     .misdirected_write(crashtest::rand::Ratio::new(1, 100));
    /// ```
    pub fn misdirected_write(mut self, ratio: Ratio) -> DiskConfig {
        self.faults.misdirected_write = ratio;
        self
    }

    /// The size of a fault zone (default 1 MiB): zone `k` of a file is its bytes
    /// `k * size .. (k + 1) * size`.
    ///
    /// # Panics
    ///
    /// Panics unless `bytes` is a non-zero multiple of the 512-byte sector.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().zone_size(64 * 1024);
    /// ```
    pub fn zone_size(mut self, bytes: u64) -> DiskConfig {
        assert!(
            bytes > 0 && bytes.is_multiple_of(crate::page::SECTOR_SIZE),
            "a zone is a non-zero number of 512-byte sectors, not {bytes} bytes"
        );
        self.faults.zone_size = bytes;
        self
    }

    /// At most `zones` zones of one disk hold damaged data at once (default 1, so that two
    /// copies in different zones never both go bad).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().max_damaged_zones(2);
    /// ```
    pub fn max_damaged_zones(mut self, zones: usize) -> DiskConfig {
        self.faults.max_damaged_zones = zones;
        self
    }

    /// At most `nodes` nodes hold damaged data in the same zone (same path, same offset range)
    /// at once (default 1, so that replicated data keeps a good copy on every other node).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::DiskConfig::default().max_damaged_replicas(1);
    /// ```
    pub fn max_damaged_replicas(mut self, nodes: usize) -> DiskConfig {
        self.faults.max_damaged_replicas = nodes;
        self
    }
}
