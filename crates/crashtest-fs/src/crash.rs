//! The crash model: what of a disk's unsynced changes reaches the device when its node dies.
//!
//! Synced data is never touched: a crash only decides the fate of the `pending` writes and
//! truncates of each file and of the directory changes in the log, then makes the durable
//! images what the program sees ([`Disk::reboot`]).
//!
//! The strong model follows FoundationDB's `AsyncFileNonDurable::kill` (figures from
//! FoundationDB's `fdbrpc/AsyncFileNonDurable.actor.h`): per file, all pending writes
//! survive with probability 1/10; otherwise the file is either drop-only (each page kept or
//! dropped, 1/2 each) or fully corruptible (each page kept, dropped or corrupted, 1/3 each),
//! and a corrupted page's sectors are kept (1/4), torn (1/2) or dropped (1/4). A torn sector
//! keeps a good prefix or a good suffix or nothing, and its bad part holds either the old
//! bytes or garbage. Pending truncates survive with probability 1/2. Directory changes
//! survive one by one, but in each directory as a prefix: a change to a directory is kept
//! only if every earlier pending change to that directory was, so that (as on a real file
//! system) a directory never shows a later change without an earlier one, and an entry never
//! ends up in two places.
//!
//! The weak model keeps a prefix of all unsynced operations of the disk, each whole.
//!
//! Unsynced attributes settle last ([`settle_attrs`]): times go with the changes that stamped
//! them, and the strong model draws each unsynced chmod on its own (a mask may spare it);
//! the weak model keeps a chmod only inside its prefix, as any other operation.
//!
//! Invariant (asserted after every crash, with the core's verify switch, since it compares
//! whole images): a crash never changes a durable byte that no unsynced write or truncate
//! covered, nor the durable entries of a directory that no unsynced change touched.
//!
//! Every decision goes through [`Choices`], so the same walk is sampled from the seed or
//! enumerated exhaustively ([`crate::exhaustive`]). Once a part of the damage is drawn (a
//! file's, the directory log's, a chmod's, the weak model's cut), a [`Judge`] may spare it:
//! the part's
//! changes then survive whole, and no draw changes, so a masked fault leaves the rest of the
//! run aligned.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crashtest_core::rng::Rng;
use crashtest_core::verify;

use crate::config::{CrashModel, DiskConfig};
use crate::disk::{DataOp, DirChange, Disk, Ino, Kind, Part};
use crate::page::{self, PAGE_SIZE, SECTOR_SIZE};

/// What happens to one page of an unsynced write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageFate {
    Kept,
    Dropped,
    Corrupted,
}

/// What happens to one sector of a corrupted page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SectorFate {
    Kept,
    Dropped,
    Torn(Tear),
}

/// Which bytes of a torn sector are bad, and what they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tear {
    /// The sector's bytes `good` (relative to the sector) were written correctly.
    pub(crate) good: (u64, u64),
    /// The rest holds garbage (else it keeps the old bytes).
    pub(crate) garbage: bool,
}

/// The decisions a crash makes, sampled or enumerated.
pub(crate) trait Choices {
    /// Whether all of a file's pending writes and truncates survive whole.
    fn all_survive(&mut self) -> bool;
    /// Whether the file's pages may only be dropped (never corrupted).
    fn drop_only(&mut self) -> bool;
    fn page(&mut self, drop_only: bool) -> PageFate;
    /// The fate of a sector of `len` bytes in a corrupted page.
    fn sector(&mut self, len: u64) -> SectorFate;
    fn truncate_survives(&mut self) -> bool;
    fn dir_change_survives(&mut self) -> bool;
    /// How many of `pending` operations (in issue order) the weak model keeps.
    fn weak_cut(&mut self, pending: usize) -> usize;
    /// Whether an unsynced chmod reaches the device (the strong model: a file system may
    /// write an inode before, after or without the data around it).
    fn mode_survives(&mut self) -> bool;
    fn garbage(&mut self, bytes: &mut [u8]);
}

/// Choices sampled from the disk's stream with the configured odds.
pub(crate) struct Sampled<'a> {
    pub(crate) rng: &'a mut Rng,
    pub(crate) config: &'a DiskConfig,
}

impl Choices for Sampled<'_> {
    fn all_survive(&mut self) -> bool {
        // A draw of the wrong model would shift every later draw of the stream.
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model walks a file"
        );
        self.rng.chance(self.config.all_survive)
    }

    fn drop_only(&mut self) -> bool {
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model draws how a file's pages fail"
        );
        self.rng.boolean()
    }

    fn page(&mut self, drop_only: bool) -> PageFate {
        if drop_only {
            return if self.rng.boolean() {
                PageFate::Kept
            } else {
                PageFate::Dropped
            };
        }
        let fate = self.rng.index(3);
        assert!(fate < 3, "three fates for a page");
        match fate {
            0 => PageFate::Kept,
            1 => PageFate::Dropped,
            _ => PageFate::Corrupted,
        }
    }

    fn sector(&mut self, len: u64) -> SectorFate {
        assert!(
            (1..=SECTOR_SIZE).contains(&len),
            "a sector piece holds at least one byte and at most a sector"
        );
        match self.rng.index(4) {
            0 => SectorFate::Kept,
            3 => SectorFate::Dropped,
            _ => {
                let tear = match self.rng.index(3) {
                    0 => Tear {
                        good: (0, self.rng.below_inclusive(len - 1)),
                        garbage: self.rng.boolean(),
                    },
                    1 => Tear {
                        good: (self.rng.range_inclusive(1, len), len),
                        garbage: self.rng.boolean(),
                    },
                    _ => Tear {
                        good: (0, 0),
                        garbage: true,
                    },
                };
                assert!(
                    tear.good.0 <= tear.good.1 && tear.good.1 <= len,
                    "a drawn tear's good part lies inside its sector"
                );
                assert!(
                    tear.good.1 - tear.good.0 < len,
                    "a drawn tear leaves at least one bad byte"
                );
                SectorFate::Torn(tear)
            }
        }
    }

    fn truncate_survives(&mut self) -> bool {
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model draws each truncate"
        );
        self.rng.chance(self.config.truncate_survives)
    }

    fn dir_change_survives(&mut self) -> bool {
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model draws each directory change"
        );
        self.rng.chance(self.config.dir_change_survives)
    }

    fn mode_survives(&mut self) -> bool {
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model draws each unsynced chmod"
        );
        self.rng.boolean()
    }

    fn weak_cut(&mut self, pending: usize) -> usize {
        assert_eq!(
            self.config.model,
            CrashModel::Weak,
            "only the weak model cuts the unsynced operations"
        );
        let cut = self.rng.below_inclusive(pending as u64) as usize;
        assert!(
            cut <= pending,
            "the weak model keeps at most every operation"
        );
        cut
    }

    fn garbage(&mut self, bytes: &mut [u8]) {
        assert!(
            (1..=SECTOR_SIZE).contains(&(bytes.len() as u64)),
            "garbage fills one torn sector, not {} bytes",
            bytes.len()
        );
        // The weak model keeps whole operations: it tears nothing.
        assert_eq!(
            self.config.model,
            CrashModel::Strong,
            "only the strong model tears a sector"
        );
        self.rng.fill_bytes(bytes);
    }
}

/// What a crash did to one file, for the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileOutcome {
    pub(crate) ino: Ino,
    /// A path that names the file, for the fault line (found only when it lost data).
    pub(crate) path: Option<String>,
    pub(crate) all_survived: bool,
    pub(crate) sectors_kept: u64,
    pub(crate) sectors_dropped: u64,
    pub(crate) sectors_torn: u64,
    pub(crate) truncates_kept: u64,
    pub(crate) truncates_dropped: u64,
}

impl FileOutcome {
    /// True if some unsynced data did not survive whole.
    pub(crate) fn lost_data(&self) -> bool {
        self.sectors_dropped + self.sectors_torn + self.truncates_dropped > 0
    }
}

/// What a crash did to a disk, for the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) files: Vec<FileOutcome>,
    pub(crate) dir_changes_kept: u64,
    pub(crate) dir_changes_dropped: u64,
    /// The directories that lost an unsynced change.
    pub(crate) dirs_broken: BTreeSet<Ino>,
}

/// A part of a crash's damage, offered to the crash's judge once its choices are drawn.
#[derive(Debug)]
pub(crate) enum Damage<'a> {
    /// Some of a file's unsynced writes or truncates did not survive whole.
    File(&'a FileOutcome),
    /// The strong model undoes `dropped` of the disk's unsynced directory changes; `undone`
    /// names the first of them (see [`NAMED_CHANGES`]).
    DirChanges {
        kept: u64,
        dropped: u64,
        undone: Vec<String>,
    },
    /// The strong model loses the unsynced chmod of inode `ino`.
    Mode { ino: Ino },
    /// The weak model keeps only the first `kept` of the disk's `pending` unsynced
    /// operations; the rest would have changed the data of `files` and `dir_changes`
    /// directory entries.
    Cut {
        kept: usize,
        pending: usize,
        files: BTreeSet<Ino>,
        dir_changes: usize,
        chmods: usize,
    },
}

impl Damage<'_> {
    /// What the damage did, for the fault list.
    pub(crate) fn describe(&self) -> String {
        match self {
            Damage::File(file) => format!(
                "crash: {} (inode {}) kept {} sector writes, dropped {}, tore {}; truncates \
                 kept {}, dropped {}",
                file.path.as_deref().unwrap_or("a file no entry names"),
                file.ino,
                file.sectors_kept,
                file.sectors_dropped,
                file.sectors_torn,
                file.truncates_kept,
                file.truncates_dropped
            ),
            Damage::DirChanges {
                kept,
                dropped,
                undone,
            } => {
                let more = *dropped as usize - undone.len();
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                format!(
                    "crash: {dropped} directory changes undone ({}{more}), {kept} kept",
                    undone.join(", ")
                )
            }
            Damage::Mode { ino } => format!("crash: inode {ino} lost its unsynced chmod"),
            Damage::Cut {
                kept,
                pending,
                files,
                dir_changes,
                chmods,
            } => {
                let mut text = format!(
                    "crash: kept the first {kept} of {pending} unsynced operations; lost \
                     changes to inodes {files:?} and {dir_changes} directory changes"
                );
                if *chmods > 0 {
                    text.push_str(&format!(" and {chmods} chmods"));
                }
                text
            }
        }
    }
}

/// Decides each part of a crash's damage after its choices are drawn: `true` applies it,
/// `false` spares it (everything that part would have lost survives whole). Sparing draws
/// nothing, so what follows the crash stays aligned with the unspared run.
pub(crate) type Judge<'a> = &'a mut dyn FnMut(&Damage<'_>) -> bool;

/// Crashes `disk`: settles every unsynced change by `model` and `choices`, then reboots it.
/// `judge` may spare each part of the damage.
pub(crate) fn crash(
    disk: &mut Disk,
    config: &DiskConfig,
    choices: &mut dyn Choices,
    judge: Judge<'_>,
) -> Outcome {
    let before = verify::enabled().then(|| Before::of(disk));
    let unsettled = disk.unsettled();
    let pending_files = files_with_pending(disk);
    let pending_changes = disk.dir_log.len() as u64;
    let outcome = match config.model {
        CrashModel::Strong => crash_strong(disk, config.torn_garbage, choices, judge),
        CrashModel::Weak => crash_weak(disk, choices, judge),
    };
    settle_attrs(disk, config.model, &outcome, choices, judge);
    assert!(
        outcome.files.iter().map(|file| file.ino).eq(pending_files),
        "a crash settles every file with unsynced operations, once, in inode order"
    );
    assert_eq!(
        outcome.dir_changes_kept + outcome.dir_changes_dropped,
        pending_changes,
        "a crash settles every unsynced directory change"
    );
    disk.reboot(&unsettled);
    if let Some(before) = before {
        before.check(disk);
    }
    outcome
}

/// Settles each inode's unsynced attributes into its durable ones (the reboot then reverts
/// what the program sees to them). The modification time goes with the changes that stamped
/// it: a file's when all its unsynced data survived whole, a directory's when no change to
/// it was lost (changes another directory's sync forced to the device count as kept); the
/// change time follows it, never earlier. A file's times with no unsynced data to go with
/// (a `set_modified` alone) are lost. A chmod is drawn on its own by the strong model,
/// since a file system may write an inode before, after or without the data around it (a
/// file sealed read-only after unsynced writes may come back sealed and torn), and may be
/// spared by `judge`; the weak model has settled chmods already, inside or outside its
/// prefix.
fn settle_attrs(
    disk: &mut Disk,
    model: CrashModel,
    outcome: &Outcome,
    choices: &mut dyn Choices,
    judge: Judge<'_>,
) {
    let data_whole: BTreeMap<Ino, bool> = outcome
        .files
        .iter()
        .map(|file| (file.ino, !file.lost_data()))
        .collect();
    for (&ino, inode) in &mut disk.inodes {
        let attrs = &mut inode.attrs;
        if attrs.live == attrs.durable {
            continue;
        }
        let times_go_with_changes = match &inode.kind {
            Kind::File(_) => data_whole.get(&ino).copied().unwrap_or(false),
            Kind::Dir(_) => !outcome.dirs_broken.contains(&ino),
        };
        if times_go_with_changes {
            let durable = &mut attrs.durable;
            durable.modified_ns = attrs.live.modified_ns;
            durable.changed_ns = durable.changed_ns.max(attrs.live.modified_ns);
        }
        if attrs.live.mode != attrs.durable.mode {
            let kept = model == CrashModel::Strong
                && (choices.mode_survives() || !judge(&Damage::Mode { ino }));
            if kept {
                attrs.durable.mode = attrs.live.mode;
            }
        }
    }
}

/// What a crash may not change, taken just before it: each file's durable image with the
/// operations that may change it, and the durable entries of each directory no pending change
/// touches.
struct Before {
    files: BTreeMap<Ino, (Vec<u8>, Vec<DataOp>)>,
    untouched_dirs: BTreeMap<Ino, BTreeMap<String, Ino>>,
}

impl Before {
    fn of(disk: &Disk) -> Before {
        assert!(
            verify::enabled(),
            "the O(n) comparison runs behind the verify switch"
        );
        let touched: BTreeSet<Ino> = disk.dir_log.iter().flat_map(DirChange::dirs).collect();
        let mut files = BTreeMap::new();
        let mut untouched_dirs = BTreeMap::new();
        for (&ino, inode) in &disk.inodes {
            match &inode.kind {
                Kind::File(file) => {
                    files.insert(ino, (file.durable.clone(), file.pending.clone()));
                }
                Kind::Dir(dir) if !touched.contains(&ino) => {
                    untouched_dirs.insert(ino, dir.durable.clone());
                }
                Kind::Dir(_) => {}
            }
        }
        Before {
            files,
            untouched_dirs,
        }
    }

    /// Asserts that the crash left alone what it had to.
    fn check(&self, disk: &Disk) {
        for (ino, (old, pending)) in &self.files {
            let Some(Kind::File(file)) = disk.inodes.get(ino).map(|inode| &inode.kind) else {
                continue;
            };
            let new = &file.durable;
            let longest = pending
                .iter()
                .map(|op| match op {
                    DataOp::Write { offset, bytes, .. } => offset + bytes.len() as u64,
                    DataOp::SetLen { len, .. } => *len,
                })
                .fold(old.len() as u64, u64::max);
            assert!(
                new.len() as u64 <= longest,
                "inode {ino}: a crash grew a file past its synced length and every unsynced \
                 write's end and truncate's length"
            );
            assert!(
                new.len() >= old.len()
                    || pending.iter().any(
                        |op| matches!(op, DataOp::SetLen { len, .. } if *len <= new.len() as u64)
                    ),
                "inode {ino}: a crash shortened a file that no unsynced truncate cut"
            );
            if pending.is_empty() {
                assert!(
                    new == old,
                    "inode {ino}: a crash changed a fully synced file"
                );
                continue;
            }
            for (at, byte) in (0u64..).zip(old) {
                if pending.iter().any(|op| op.covers(at)) {
                    continue;
                }
                assert_eq!(
                    new.get(at as usize),
                    Some(byte),
                    "inode {ino}: a crash changed synced byte {at}, which no unsynced write or \
                     truncate covered"
                );
            }
        }
        for (dir, old) in &self.untouched_dirs {
            if let Some(inode) = disk.inodes.get(dir)
                && let Kind::Dir(now) = &inode.kind
            {
                assert!(
                    &now.durable == old,
                    "inode {dir}: a crash changed a directory with no unsynced change"
                );
            }
        }
    }
}

fn files_with_pending(disk: &Disk) -> Vec<Ino> {
    let files: Vec<Ino> = disk
        .inodes
        .iter()
        .filter(|(_, inode)| matches!(&inode.kind, Kind::File(f) if !f.pending.is_empty()))
        .map(|(&ino, _)| ino)
        .collect();
    assert!(
        files.windows(2).all(|w| w[0] < w[1]),
        "files are settled in inode order, the same on every run"
    );
    files
}

fn crash_strong(
    disk: &mut Disk,
    torn_garbage: bool,
    choices: &mut dyn Choices,
    judge: Judge<'_>,
) -> Outcome {
    let mut outcome = Outcome::default();
    for ino in files_with_pending(disk) {
        let file = disk.file_mut(ino).expect("listed as a file");
        let ops = std::mem::take(&mut file.pending);
        assert!(
            !ops.is_empty(),
            "a file listed as pending has operations to settle"
        );
        if choices.all_survive() {
            outcome
                .files
                .push(survive_whole(ino, &ops, &mut file.durable));
            continue;
        }
        let mut result = FileOutcome {
            ino,
            ..FileOutcome::default()
        };
        let drop_only = choices.drop_only();
        for op in &ops {
            match op {
                DataOp::SetLen { len, .. } => {
                    if choices.truncate_survives() {
                        page::set_len(&mut file.durable, *len);
                        result.truncates_kept += 1;
                    } else {
                        result.truncates_dropped += 1;
                    }
                }
                DataOp::Write { offset, bytes, .. } => {
                    settle_write(
                        &mut file.durable,
                        *offset,
                        bytes,
                        (drop_only, torn_garbage),
                        choices,
                        &mut result,
                    );
                }
            }
        }
        let (writes, truncates) = op_counts(&ops);
        assert_eq!(
            result.sectors_kept + result.sectors_dropped + result.sectors_torn,
            writes,
            "every sector of every unsynced write has a fate"
        );
        assert_eq!(
            result.truncates_kept + result.truncates_dropped,
            truncates,
            "every unsynced truncate has a fate"
        );
        if result.lost_data() {
            result.path = disk.path_of(ino);
            if !judge(&Damage::File(&result)) {
                // Replaying every operation over the damaged image gives what they give over
                // the image before the crash: the damage only touched bytes inside a write's
                // range or past a truncate's length, and replaying in order rewrites or cuts
                // every one of them. So sparing needs no copy of the file.
                let file = disk.file_mut(ino).expect("settled above");
                result = survive_whole(ino, &ops, &mut file.durable);
            }
        }
        outcome.files.push(result);
    }
    // Every change's fate is drawn first (a change to a directory survives only if every
    // earlier pending change to that directory did), then the survivors are applied in order.
    let changes = std::mem::take(&mut disk.dir_log);
    let mut broken: BTreeSet<Ino> = BTreeSet::new();
    let mut survives: Vec<bool> = changes
        .iter()
        .map(|change| {
            let dirs = change.dirs();
            let follows_its_dirs = dirs.iter().all(|dir| !broken.contains(dir));
            let kept = follows_its_dirs && choices.dir_change_survives();
            if !kept {
                broken.extend(dirs);
            }
            kept
        })
        .collect();
    assert_prefix_per_dir(&changes, &survives);
    let dropped = survives.iter().filter(|&&kept| !kept).count() as u64;
    if dropped > 0
        && !judge(&Damage::DirChanges {
            kept: changes.len() as u64 - dropped,
            dropped,
            undone: changes
                .iter()
                .zip(&survives)
                .filter(|&(_, &kept)| !kept)
                .take(NAMED_CHANGES)
                .map(|(change, _)| describe_change(disk, change))
                .collect(),
        })
    {
        survives.fill(true);
    }
    for (change, kept) in changes.iter().zip(survives) {
        if kept {
            disk.apply_durably(change);
            outcome.dir_changes_kept += 1;
        } else {
            outcome.dir_changes_dropped += 1;
            outcome.dirs_broken.extend(change.dirs());
        }
    }
    assert!(
        outcome.files.windows(2).all(|w| w[0].ino < w[1].ino),
        "files are settled once each, in inode order"
    );
    assert!(
        outcome.dir_changes_dropped == 0 || outcome.dir_changes_dropped == dropped,
        "a crash undoes the directory changes it drew, or none if they were spared"
    );
    outcome
}

/// How many undone directory changes a crash's fault line names.
const NAMED_CHANGES: usize = 4;

/// A directory change as a report names it: `made /data/wal`, `removed /data/old`,
/// `renamed /data/tmp to /data/state`.
fn describe_change(disk: &Disk, change: &DirChange) -> String {
    let path = |dir: Ino, name: &str| disk.entry_path(dir, name);
    match &change.parts[..] {
        [Part::Link { dir, name, .. }] => format!("made {}", path(*dir, name)),
        [Part::Unlink { dir, name, .. }] => format!("removed {}", path(*dir, name)),
        [
            Part::Unlink {
                dir: from_dir,
                name: from,
                ..
            },
            Part::Link {
                dir: to_dir,
                name: to,
                ..
            },
        ] => format!("renamed {} to {}", path(*from_dir, from), path(*to_dir, to)),
        parts => parts
            .iter()
            .map(|part| match part {
                Part::Link { dir, name, .. } => format!("made {}", path(*dir, name)),
                Part::Unlink { dir, name, .. } => format!("removed {}", path(*dir, name)),
            })
            .collect::<Vec<_>>()
            .join(" and "),
    }
}

/// Asserts that in each directory the surviving changes are a prefix of its changes: no later
/// change survives without every earlier one.
fn assert_prefix_per_dir(changes: &[DirChange], survives: &[bool]) {
    assert_eq!(changes.len(), survives.len(), "one fate per change");
    let mut broken: BTreeSet<Ino> = BTreeSet::new();
    for (change, &kept) in changes.iter().zip(survives) {
        let dirs = change.dirs();
        if kept {
            assert!(
                dirs.iter().all(|dir| !broken.contains(dir)),
                "a directory change survived after an earlier one to its directory was lost"
            );
        } else {
            broken.extend(dirs);
        }
    }
}

/// How many sectors the writes of `ops` cover (walked piece by piece, as a crash walks them),
/// and how many truncates there are.
fn op_counts(ops: &[DataOp]) -> (u64, u64) {
    let mut sectors = 0;
    let mut truncates = 0;
    for op in ops {
        match op {
            DataOp::Write { offset, bytes, .. } => {
                let range = *offset..offset + bytes.len() as u64;
                sectors += page::pieces(range, PAGE_SIZE)
                    .map(|page_range| page::pieces(page_range, SECTOR_SIZE).count() as u64)
                    .sum::<u64>();
            }
            DataOp::SetLen { .. } => truncates += 1,
        }
    }
    assert!(
        truncates <= ops.len() as u64,
        "at most one truncate per operation"
    );
    (sectors, truncates)
}

/// Applies every unsynced operation of a file whole.
fn survive_whole(ino: Ino, ops: &[DataOp], durable: &mut Vec<u8>) -> FileOutcome {
    let mut result = FileOutcome {
        ino,
        all_survived: true,
        ..FileOutcome::default()
    };
    for op in ops {
        op.apply(durable);
        match op {
            DataOp::Write { bytes, .. } => result.sectors_kept += sectors_in(bytes),
            DataOp::SetLen { .. } => result.truncates_kept += 1,
        }
    }
    assert!(
        !result.lost_data(),
        "a file that survives whole lost nothing"
    );
    // The last operation decides the length: a truncate sets it, a write reaches its end.
    assert!(
        ops.last().is_none_or(|op| match op {
            DataOp::SetLen { len, .. } => durable.len() as u64 == *len,
            DataOp::Write { offset, bytes, .. } => {
                durable.len() as u64 >= offset + bytes.len() as u64
            }
        }),
        "inode {ino}: a file that survives whole has the length its last operation gave it"
    );
    assert!(
        result.truncates_kept <= ops.len() as u64,
        "at most one truncate per operation"
    );
    result
}

fn sectors_in(bytes: &[u8]) -> u64 {
    let sectors = (bytes.len() as u64).div_ceil(SECTOR_SIZE);
    assert!(
        sectors * SECTOR_SIZE >= bytes.len() as u64,
        "the sectors counted hold the bytes"
    );
    sectors
}

/// Walks one unsynced write page by page, and a corrupted page sector by sector.
///
/// `drop_only`: the file's pages are only kept or dropped; `torn_garbage`: a torn sector's bad
/// part may hold garbage (else its old bytes, whatever the tear drew).
fn settle_write(
    durable: &mut Vec<u8>,
    offset: u64,
    bytes: &[u8],
    (drop_only, torn_garbage): (bool, bool),
    choices: &mut dyn Choices,
    result: &mut FileOutcome,
) {
    let slice = |range: &Range<u64>| {
        let start = usize::try_from(range.start - offset).expect("fits");
        let end = usize::try_from(range.end - offset).expect("fits");
        &bytes[start..end]
    };
    let end = offset + bytes.len() as u64;
    let before = verify::enabled().then(|| durable.clone());
    for page_range in page::pieces(offset..end, PAGE_SIZE) {
        assert!(
            offset <= page_range.start && page_range.end <= end,
            "a crash settles only the bytes its write covers"
        );
        match choices.page(drop_only) {
            PageFate::Kept => {
                page::write_into(durable, page_range.start, slice(&page_range));
                result.sectors_kept += page::pieces(page_range, SECTOR_SIZE).count() as u64;
            }
            PageFate::Dropped => {
                result.sectors_dropped += page::pieces(page_range, SECTOR_SIZE).count() as u64;
            }
            PageFate::Corrupted => {
                for sector in page::pieces(page_range, SECTOR_SIZE) {
                    let len = sector.end - sector.start;
                    match choices.sector(len) {
                        SectorFate::Kept => {
                            page::write_into(durable, sector.start, slice(&sector));
                            result.sectors_kept += 1;
                        }
                        SectorFate::Dropped => result.sectors_dropped += 1,
                        SectorFate::Torn(tear) => {
                            let data = slice(&sector);
                            tear_sector(durable, sector.start, data, tear, torn_garbage, choices);
                            result.sectors_torn += 1;
                        }
                    }
                }
            }
        }
    }
    if let Some(before) = before {
        let (start, end) = (offset as usize, end as usize);
        assert!(
            durable.len() == before.len() || durable.len() <= end,
            "settling a write grows the image only up to the write's end"
        );
        let kept = start.min(before.len());
        assert!(
            durable.get(..kept) == Some(&before[..kept])
                && durable
                    .get(kept..start.min(durable.len()))
                    .is_none_or(|gap| gap.iter().all(|&byte| byte == 0)),
            "settling a write leaves the bytes before it as they were (a gap reads as zeros)"
        );
        assert!(
            durable.get(end..).unwrap_or_default() == before.get(end..).unwrap_or_default(),
            "settling a write leaves the bytes after it as they were"
        );
    }
}

/// Writes the good part of a torn sector, and garbage over the bad part if the tear has it
/// and the disk allows garbage (the garbage is drawn either way, to keep later draws aligned).
fn tear_sector(
    durable: &mut Vec<u8>,
    start: u64,
    data: &[u8],
    tear: Tear,
    garbage_allowed: bool,
    choices: &mut dyn Choices,
) {
    let len = data.len() as u64;
    assert!(
        len > 0 && start / SECTOR_SIZE == (start + len - 1) / SECTOR_SIZE,
        "a torn piece lies inside one sector"
    );
    let (good_start, good_end) = tear.good;
    assert!(
        good_start <= good_end && good_end <= len,
        "a tear's good part lies inside its sector"
    );
    assert!(
        good_end - good_start < len,
        "a torn sector has at least one bad byte"
    );
    let mut noise = Vec::new();
    if tear.garbage {
        noise.resize(data.len(), 0);
        choices.garbage(&mut noise);
    }
    if tear.garbage && garbage_allowed {
        let mut written = data.to_vec();
        for (i, byte) in written.iter_mut().enumerate() {
            let i = i as u64;
            if i < good_start || i >= good_end {
                *byte = noise[i as usize];
            }
        }
        page::write_into(durable, start, &written);
    } else if good_end > good_start {
        let good = &data[good_start as usize..good_end as usize];
        page::write_into(durable, start + good_start, good);
    }
    let good = (start + good_start) as usize..(start + good_end) as usize;
    assert!(
        good.is_empty() || durable.get(good) == Some(&data[good_start as usize..good_end as usize]),
        "a torn sector holds its good part as written"
    );
}

/// An unsynced operation of the disk, in issue order, for the weak model.
enum Unsynced {
    Data(Ino, DataOp),
    Dir(DirChange),
    /// A chmod of the inode, to its bits as the program sees them.
    Mode(Ino),
}

fn crash_weak(disk: &mut Disk, choices: &mut dyn Choices, judge: Judge<'_>) -> Outcome {
    let mut all: Vec<(u64, Unsynced)> = Vec::new();
    for ino in files_with_pending(disk) {
        let file = disk.file_mut(ino).expect("listed as a file");
        for op in std::mem::take(&mut file.pending) {
            all.push((op.seq(), Unsynced::Data(ino, op)));
        }
    }
    for change in std::mem::take(&mut disk.dir_log) {
        all.push((change.seq, Unsynced::Dir(change)));
    }
    for (&ino, inode) in &disk.inodes {
        if inode.attrs.live.mode != inode.attrs.durable.mode {
            let seq = inode
                .mode_seq
                .expect("an unsynced chmod has its issue number");
            all.push((seq, Unsynced::Mode(ino)));
        }
    }
    all.sort_by_key(|(seq, _)| *seq);
    assert!(
        all.windows(2).all(|w| w[0].0 < w[1].0),
        "unsynced operations have distinct sequence numbers, so the weak model's prefix is one \
         order of issue"
    );
    let mut cut = choices.weak_cut(all.len());
    assert!(cut <= all.len(), "the weak model keeps a prefix");
    if cut < all.len()
        && !judge(&Damage::Cut {
            kept: cut,
            pending: all.len(),
            files: all[cut..]
                .iter()
                .filter_map(|(_, op)| match op {
                    Unsynced::Data(ino, _) => Some(*ino),
                    Unsynced::Dir(_) | Unsynced::Mode(_) => None,
                })
                .collect(),
            dir_changes: all[cut..]
                .iter()
                .filter(|(_, op)| matches!(op, Unsynced::Dir(_)))
                .count(),
            chmods: all[cut..]
                .iter()
                .filter(|(_, op)| matches!(op, Unsynced::Mode(_)))
                .count(),
        })
    {
        cut = all.len();
    }
    let mut outcome = Outcome::default();
    let mut files: Vec<FileOutcome> = Vec::new();
    for (i, (_, op)) in all.into_iter().enumerate() {
        let kept = i < cut;
        match op {
            Unsynced::Dir(change) => {
                if kept {
                    disk.apply_durably(&change);
                    outcome.dir_changes_kept += 1;
                } else {
                    outcome.dir_changes_dropped += 1;
                    outcome.dirs_broken.extend(change.dirs());
                }
            }
            Unsynced::Mode(ino) => {
                if kept {
                    let attrs = &mut disk.inodes.get_mut(&ino).expect("a chmodded inode").attrs;
                    attrs.durable.mode = attrs.live.mode;
                }
            }
            Unsynced::Data(ino, op) => {
                let result = match files.iter_mut().find(|f| f.ino == ino) {
                    Some(result) => result,
                    None => {
                        files.push(FileOutcome {
                            ino,
                            ..FileOutcome::default()
                        });
                        files.last_mut().expect("just pushed")
                    }
                };
                let count = match &op {
                    DataOp::Write { bytes, .. } => sectors_in(bytes),
                    DataOp::SetLen { .. } => 0,
                };
                match (&op, kept) {
                    (DataOp::Write { .. }, true) => result.sectors_kept += count,
                    (DataOp::Write { .. }, false) => result.sectors_dropped += count,
                    (DataOp::SetLen { .. }, true) => result.truncates_kept += 1,
                    (DataOp::SetLen { .. }, false) => result.truncates_dropped += 1,
                }
                if kept {
                    let file = disk.file_mut(ino).expect("a file with pending writes");
                    op.apply(&mut file.durable);
                }
            }
        }
    }
    files.sort_by_key(|f| f.ino);
    assert!(
        files.windows(2).all(|w| w[0].ino < w[1].ino),
        "one outcome per file"
    );
    assert!(
        outcome.dir_changes_kept as usize <= cut,
        "the weak model keeps directory changes only inside its prefix"
    );
    outcome.files = files;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{DIR_MODE, OpenFlags};
    use crate::path::Names;
    use crashtest_core::rng::Ratio;
    use std::path::Path;

    const CREATE: OpenFlags = OpenFlags {
        read: true,
        write: true,
        append: false,
        truncate: false,
        create: true,
        create_new: false,
        mode: None,
    };

    fn disk_with_file() -> (Disk, Ino) {
        let mut disk = Disk::default();
        let ino = disk
            .open(&Names::parse(Path::new("/f")).unwrap(), CREATE)
            .unwrap();
        disk.sync_dir(crate::disk::ROOT);
        (disk, ino)
    }

    fn crash_seed(disk: &mut Disk, model: CrashModel, seed: u64) -> Outcome {
        crash_seed_with(disk, DiskConfig::default().crash_model(model), seed)
    }

    fn crash_seed_with(disk: &mut Disk, config: DiskConfig, seed: u64) -> Outcome {
        crash_judged(disk, config, seed, &mut |_| true).0
    }

    /// Crashes `disk` with `judge` deciding each part of the damage; returns the outcome and
    /// the next draw of the stream (to compare alignment).
    fn crash_judged(
        disk: &mut Disk,
        config: DiskConfig,
        seed: u64,
        judge: Judge<'_>,
    ) -> (Outcome, u64) {
        let mut rng = Rng::seed_from(seed);
        let outcome = crash(
            disk,
            &config,
            &mut Sampled {
                rng: &mut rng,
                config: &config,
            },
            judge,
        );
        (outcome, rng.next_u64())
    }

    #[test]
    fn spared_damage_leaves_every_unsynced_write_whole_and_draws_the_same() {
        let mut spared = 0;
        for model in [CrashModel::Strong, CrashModel::Weak] {
            for seed in 0..100 {
                let setup = || {
                    let (mut disk, ino) = disk_with_file();
                    disk.write(ino, 0, &[7; 8192]).unwrap();
                    disk.sync_file(ino);
                    disk.write(ino, 0, &[1; 5000]).unwrap();
                    disk.write(ino, 9000, &[2; 100]).unwrap();
                    (disk, ino)
                };
                let config = DiskConfig::default().crash_model(model);
                let (mut applied, ino) = setup();
                let mut offered = 0;
                let (_, next_applied) = crash_judged(&mut applied, config, seed, &mut |_| {
                    offered += 1;
                    true
                });
                let (mut kept, _) = setup();
                let (outcome, next_kept) = crash_judged(&mut kept, config, seed, &mut |_| false);
                assert_eq!(
                    next_applied, next_kept,
                    "{model:?} seed {seed}: draws differ"
                );
                let mut expected = vec![1; 5000];
                expected.extend([7; 3192]);
                expected.extend([0; 808]);
                expected.extend([2; 100]);
                assert!(
                    kept.file(ino).unwrap().cache == expected,
                    "{model:?} seed {seed}: a spared crash lost data"
                );
                assert!(outcome.files.iter().all(|f| !f.lost_data()));
                spared += offered;
                let (mut plain, _) = setup();
                crash_seed(&mut plain, model, seed);
                assert!(
                    plain.file(ino).unwrap().cache == applied.file(ino).unwrap().cache,
                    "{model:?} seed {seed}: applied damage differs from unjudged damage"
                );
            }
        }
        assert!(spared > 50, "only {spared} parts of damage were offered");
    }

    #[test]
    fn sparing_some_files_gives_each_spared_file_exactly_its_full_survival() {
        let (mut spared_files, mut damaged_files) = (0, 0);
        for seed in 0..300 {
            let setup = || {
                let mut disk = Disk::default();
                let n = |p: &str| Names::parse(Path::new(p)).unwrap();
                let inos: Vec<Ino> = ["/a", "/b", "/c"]
                    .iter()
                    .map(|p| disk.open(&n(p), CREATE).unwrap())
                    .collect();
                disk.sync_dir(crate::disk::ROOT);
                for (i, &ino) in inos.iter().enumerate() {
                    disk.write(ino, 0, &vec![7; 9000 + i * 1000]).unwrap();
                    disk.sync_file(ino);
                    disk.write(ino, 100, &[1; 5000]).unwrap();
                    disk.set_len(ino, 3000 + i as u64 * 4000).unwrap();
                    disk.write(ino, 2500, &[2; 3000]).unwrap();
                }
                (disk, inos)
            };
            let (mut whole, inos) = setup();
            crash_seed_with(
                &mut whole,
                DiskConfig::default().all_survive(Ratio::ALWAYS),
                seed,
            );
            // Spare the file named by the seed; apply every other file's damage.
            let spare = inos[seed as usize % inos.len()];
            let (mut judged, _) = setup();
            let (outcome, _) = crash_judged(
                &mut judged,
                DiskConfig::default(),
                seed,
                &mut |damage| match damage {
                    Damage::File(file) => file.ino != spare,
                    _ => true,
                },
            );
            assert!(
                judged.file(spare).unwrap().cache == whole.file(spare).unwrap().cache,
                "seed {seed}: a spared file differs from its full survival"
            );
            for file in &outcome.files {
                if file.ino == spare {
                    spared_files += usize::from(!file.lost_data());
                } else {
                    damaged_files += usize::from(file.lost_data());
                }
            }
        }
        assert!(spared_files > 250 && damaged_files > 250);
    }

    #[test]
    fn spared_directory_damage_keeps_every_change() {
        let mut offered_any = false;
        for seed in 0..50 {
            let mut disk = Disk::default();
            let n = |p: &str| Names::parse(Path::new(p)).unwrap();
            disk.create_dir(&n("/a"), DIR_MODE).unwrap();
            disk.create_dir(&n("/a/b"), DIR_MODE).unwrap();
            disk.rename(&n("/a/b"), &n("/c")).unwrap();
            let (outcome, _) = crash_judged(&mut disk, DiskConfig::default(), seed, &mut |_| {
                offered_any = true;
                false
            });
            assert_eq!(outcome.dir_changes_dropped, 0, "seed {seed}");
            assert!(disk.resolve(&n("/a")).is_ok() && disk.resolve(&n("/c")).is_ok());
        }
        assert!(offered_any);
    }

    #[test]
    fn undone_directory_changes_are_named_by_their_paths() {
        let n = |p: &str| Names::parse(Path::new(p)).unwrap();
        let mut described = None;
        for seed in 0..50 {
            let mut disk = Disk::default();
            disk.create_dir(&n("/a"), DIR_MODE).unwrap();
            disk.sync_dir(crate::disk::ROOT);
            disk.create_dir(&n("/a/b"), DIR_MODE).unwrap();
            disk.rename(&n("/a/b"), &n("/a/c")).unwrap();
            crash_judged(&mut disk, DiskConfig::default(), seed, &mut |damage| {
                if let Damage::DirChanges { dropped: 2, .. } = damage {
                    described = Some(damage.describe());
                }
                true
            });
        }
        assert_eq!(
            described.as_deref(),
            Some("crash: 2 directory changes undone (made /a/b, renamed /a/b to /a/c), 0 kept"),
        );
    }

    #[test]
    fn a_damaged_file_is_named_by_its_path() {
        let n = |p: &str| Names::parse(Path::new(p)).unwrap();
        let mut described = None;
        for seed in 0..50 {
            let mut disk = Disk::default();
            disk.create_dir(&n("/d"), DIR_MODE).unwrap();
            let ino = disk.open(&n("/d/f"), CREATE).unwrap();
            disk.sync_dir(crate::disk::ROOT);
            disk.sync_dir(disk.resolve(&n("/d")).unwrap());
            disk.write(ino, 0, &[1; 2000]).unwrap();
            crash_judged(&mut disk, DiskConfig::default(), seed, &mut |damage| {
                if let Damage::File(_) = damage {
                    described = Some(damage.describe());
                }
                true
            });
        }
        let described = described.expect("some seed damages the file");
        assert!(
            described.starts_with("crash: /d/f (inode ") && described.contains("sector writes"),
            "{described}"
        );
    }

    #[test]
    fn a_file_is_named_though_unsynced_moves_loop_live_and_durable_names() {
        let n = |p: &str| Names::parse(Path::new(p)).unwrap();
        let mut disk = Disk::default();
        disk.create_dir(&n("/a"), DIR_MODE).unwrap();
        disk.create_dir(&n("/a/b"), DIR_MODE).unwrap();
        disk.create_dir(&n("/c"), DIR_MODE).unwrap();
        let ino = disk.open(&n("/c/f"), CREATE).unwrap();
        for dir in ["/", "/a", "/c"] {
            disk.sync_dir(disk.resolve(&n(dir)).unwrap());
        }
        disk.write(ino, 0, &[1; 600]).unwrap();
        // Unsynced: /b's live name and /a's durable one now lead into each other.
        disk.rename(&n("/a/b"), &n("/b")).unwrap();
        disk.rename(&n("/a"), &n("/b/a")).unwrap();
        assert_eq!(disk.path_of(ino).as_deref(), Some("/c/f"));
        assert_eq!(
            disk.path_of(disk.resolve(&n("/b/a")).unwrap()).as_deref(),
            Some("/b/a")
        );
    }

    #[test]
    fn synced_bytes_survive_every_crash() {
        for seed in 0..200 {
            let (mut disk, ino) = disk_with_file();
            disk.write(ino, 0, &[7; 5000]).unwrap();
            disk.sync_file(ino);
            disk.write(ino, 5000, &[9; 3000]).unwrap();
            disk.write(ino, 100, &[1; 10]).unwrap();
            crash_seed(&mut disk, CrashModel::Strong, seed);
            let durable = &disk.file(ino).unwrap().cache;
            for (i, &b) in durable.iter().enumerate().take(5000) {
                assert!(
                    b == 7 || (100..110).contains(&i),
                    "seed {seed}: synced byte {i} is {b}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "which no unsynced write or truncate covered")]
    fn the_after_crash_check_catches_a_changed_synced_byte() {
        let (mut disk, ino) = disk_with_file();
        disk.write(ino, 0, &[7; 100]).unwrap();
        disk.sync_file(ino);
        disk.write(ino, 10, &[1; 5]).unwrap();
        let before = Before::of(&disk);
        // What a crash model that broke the contract would leave: byte 50 was synced and no
        // unsynced write covers it.
        disk.file_mut(ino).unwrap().durable[50] = 0;
        before.check(&disk);
    }

    #[test]
    fn the_after_crash_check_allows_changes_the_unsynced_writes_cover() {
        let (mut disk, ino) = disk_with_file();
        disk.write(ino, 0, &[7; 100]).unwrap();
        disk.sync_file(ino);
        disk.write(ino, 10, &[1; 5]).unwrap();
        disk.set_len(ino, 90).unwrap();
        let before = Before::of(&disk);
        let durable = &mut disk.file_mut(ino).unwrap().durable;
        durable[12] = 1;
        durable.truncate(90);
        before.check(&disk);
    }

    #[test]
    fn a_tear_never_touches_bytes_outside_its_write() {
        for seed in 0..300 {
            let (mut disk, ino) = disk_with_file();
            disk.write(ino, 0, &[7; 1024]).unwrap();
            disk.sync_file(ino);
            disk.write(ino, 100, &[1; 50]).unwrap();
            crash_seed(&mut disk, CrashModel::Strong, seed);
            let content = &disk.file(ino).unwrap().cache;
            assert_eq!(content.len(), 1024);
            assert!(content[..100].iter().all(|&b| b == 7), "seed {seed}");
            assert!(content[150..].iter().all(|&b| b == 7), "seed {seed}");
        }
    }

    #[test]
    fn without_torn_garbage_every_byte_ends_old_or_new_with_the_same_draws() {
        let (mut torn, mut garbage_seen) = (0, false);
        for seed in 0..500 {
            let run = |config: DiskConfig| {
                let (mut disk, ino) = disk_with_file();
                disk.write(ino, 0, &[7; 8192]).unwrap();
                disk.sync_file(ino);
                disk.write(ino, 0, &[1; 8192]).unwrap();
                let outcome = crash_seed_with(&mut disk, config, seed);
                (outcome, disk.file(ino).unwrap().cache.clone())
            };
            let (strict, strict_bytes) = run(DiskConfig::default().torn_sector_garbage(false));
            assert!(
                strict_bytes.iter().all(|&b| b == 7 || b == 1),
                "seed {seed}"
            );
            let (harsh, harsh_bytes) = run(DiskConfig::default());
            garbage_seen |= harsh_bytes.iter().any(|&b| b != 7 && b != 1);
            assert_eq!(strict.files.len(), harsh.files.len());
            for (a, b) in strict.files.iter().zip(&harsh.files) {
                assert_eq!(
                    (a.sectors_kept, a.sectors_dropped, a.sectors_torn),
                    (b.sectors_kept, b.sectors_dropped, b.sectors_torn),
                    "seed {seed}: the same draws"
                );
                torn += a.sectors_torn;
            }
        }
        assert!(
            torn > 0 && garbage_seen,
            "{torn} torn sectors, garbage {garbage_seen}"
        );
    }

    #[test]
    fn the_strong_model_keeps_drops_and_tears_across_seeds() {
        let (mut kept, mut dropped, mut torn) = (0, 0, 0);
        for seed in 0..200 {
            let (mut disk, ino) = disk_with_file();
            disk.write(ino, 0, &[5; 4096]).unwrap();
            let outcome = crash_seed(&mut disk, CrashModel::Strong, seed);
            let file = &outcome.files[0];
            kept += file.sectors_kept;
            dropped += file.sectors_dropped;
            torn += file.sectors_torn;
        }
        assert!(
            kept > 0 && dropped > 0 && torn > 0,
            "{kept} {dropped} {torn}"
        );
        // Torn sectors come only from corrupted pages (1/3 of half the files, then 1/2).
        assert!(torn < kept && torn < dropped);
    }

    #[test]
    fn the_weak_model_keeps_a_prefix_of_whole_operations() {
        for seed in 0..100 {
            let (mut disk, ino) = disk_with_file();
            disk.write(ino, 0, &[1; 600]).unwrap();
            disk.write(ino, 600, &[2; 600]).unwrap();
            disk.write(ino, 1200, &[3; 600]).unwrap();
            crash_seed(&mut disk, CrashModel::Weak, seed);
            let content = disk.file(ino).unwrap().cache.clone();
            let expected: Vec<u8> = [[1u8; 600], [2; 600], [3; 600]].concat();
            assert!(
                [0, 600, 1200, 1800].contains(&content.len()),
                "seed {seed}: length {}",
                content.len()
            );
            assert_eq!(content, expected[..content.len()], "seed {seed}");
        }
    }

    #[test]
    fn after_a_crash_reads_see_exactly_the_settled_durable_image() {
        let n = |p: &str| Names::parse(Path::new(p)).unwrap();
        for model in [CrashModel::Strong, CrashModel::Weak] {
            for seed in 0..200 {
                let (mut disk, grown) = disk_with_file();
                let cut = disk.open(&n("/cut"), CREATE).unwrap();
                let untouched = disk.open(&n("/untouched"), CREATE).unwrap();
                let failed = disk.open(&n("/failed"), CREATE).unwrap();
                disk.sync_dir(crate::disk::ROOT);
                for (ino, fill) in [(grown, 1), (cut, 2), (untouched, 3), (failed, 4)] {
                    disk.write(ino, 0, &[fill; 3000]).unwrap();
                    disk.sync_file(ino);
                }
                // Pending: writes inside and past the end, a truncate that shrinks then a
                // write after it, and a failed sync with a write after it.
                disk.write(grown, 100, &[5; 700]).unwrap();
                disk.write(grown, 2900, &[6; 2000]).unwrap();
                disk.set_len(cut, 1000).unwrap();
                disk.write(cut, 500, &[7; 100]).unwrap();
                disk.write(failed, 1000, &[8; 100]).unwrap();
                disk.lose_pending(failed);
                disk.write(failed, 2000, &[9; 100]).unwrap();
                crash_seed(&mut disk, model, seed);
                for ino in [grown, cut, untouched, failed] {
                    let file = disk.file(ino).unwrap();
                    assert!(
                        file.cache == file.durable,
                        "{model:?} seed {seed}: inode {ino} reads other than its durable image"
                    );
                }
                assert_eq!(disk.file(untouched).unwrap().cache, [3; 3000]);
            }
        }
    }

    #[test]
    fn directory_changes_survive_as_a_prefix_per_directory() {
        for seed in 0..100 {
            let mut disk = Disk::default();
            let n = |p: &str| Names::parse(Path::new(p)).unwrap();
            disk.create_dir(&n("/a"), DIR_MODE).unwrap();
            disk.sync_dir(crate::disk::ROOT);
            disk.create_dir(&n("/a/b"), DIR_MODE).unwrap();
            disk.rename(&n("/a/b"), &n("/b")).unwrap();
            disk.rename(&n("/b"), &n("/a/c")).unwrap();
            crash_seed(&mut disk, CrashModel::Strong, seed);
            // The directory created is in exactly one place, or (if its creation was lost)
            // nowhere.
            let places = ["/a/b", "/b", "/a/c"]
                .iter()
                .filter(|p| disk.resolve(&n(p)).is_ok())
                .count();
            assert!(places <= 1, "seed {seed}: in {places} places");
        }
    }
}
