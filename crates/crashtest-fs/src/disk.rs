//! One node's disk: its inodes, what the running program sees of them, and what would
//! survive a crash now.
//!
//! Every file keeps two images: `cache` (the page cache: what reads return) and `durable`
//! (what the device holds after the last completed sync), plus the list of `pending` writes
//! and truncates issued since, in order. Every directory keeps two maps of names: `live` (what
//! the program sees) and `durable`; the directory changes not yet synced wait in `dir_log`,
//! each as one atomic change (a rename is one change touching two directories). A sync moves
//! pending changes into the durable images whole; a crash ([`crate::crash`]) decides, change by
//! change, what reaches them.
//!
//! Invariants:
//! - Without failed syncs, `cache` equals `durable` with the `pending` operations applied in
//!   order (a misdirected write is pending where it landed, as the cache has it). Likewise every directory's `live` names are its `durable`
//!   names with the changes of `dir_log` that touch it applied in order (a directory sync
//!   settles, in each directory, a prefix of the changes to it). A failed sync breaks this on purpose: its writes stay in
//!   the cache but never reach the device (Linux's behaviour).
//! - Every inode that a live name, a durable name, an open handle or a pending directory
//!   change refers to exists; the others are collected.
//! - `seq` numbers increase in issue order across files and directories, so the weak crash
//!   model can keep a prefix of all unsynced operations.
//! - A directory has at most one live name and at most one durable name; a file may have
//!   several (hard links), each made and removed by its own directory change.
//! - Every inode's attributes (permission bits and times) are `attrs.live`, what the program
//!   sees, and `attrs.durable`, what the device holds: an operation changes the first, a sync
//!   of the inode (file or directory) copies it to the second, and a crash reverts the first
//!   to the second. Times are the node's wall clock when the operation ran (`clock_ns`).
//!
//! Cheap checks of these (a bound, a pre- or postcondition of one operation) are always on;
//! [`Disk::verify`] walks the whole disk and runs only with the core's verify switch.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use crashtest_core::verify;

use crate::errors;
use crate::faults::Damage;
use crate::metadata::{FileType, Metadata};
use crate::page;
use crate::path::Names;

/// An inode number; unique within a disk, never reused.
pub(crate) type Ino = u64;

/// The root directory's inode.
pub(crate) const ROOT: Ino = 1;

/// Per file, where its page cache may differ from its durable image after a crash (see
/// [`Disk::unsettled`]).
pub(crate) type Unsettled = BTreeMap<Ino, Option<Vec<std::ops::Range<u64>>>>;

/// A write or truncate issued but not yet synced.
#[derive(Clone, Debug)]
pub(crate) enum DataOp {
    Write {
        seq: u64,
        offset: u64,
        bytes: Vec<u8>,
    },
    SetLen {
        seq: u64,
        len: u64,
    },
}

impl DataOp {
    pub(crate) fn seq(&self) -> u64 {
        match self {
            DataOp::Write { seq, .. } | DataOp::SetLen { seq, .. } => *seq,
        }
    }

    /// Applies the whole operation to `content`.
    pub(crate) fn apply(&self, content: &mut Vec<u8>) {
        match self {
            DataOp::Write { offset, bytes, .. } => {
                page::write_into(content, *offset, bytes);
                assert!(
                    content.len() as u64 >= offset + bytes.len() as u64,
                    "a write leaves the file at least as long as its end"
                );
            }
            DataOp::SetLen { len, .. } => {
                page::set_len(content, *len);
                assert_eq!(content.len() as u64, *len, "set_len sets the length");
            }
        }
    }

    /// True if a crash may change byte `at` of the durable image because of this operation: a
    /// write covering it, or a truncate to a length at or below it.
    pub(crate) fn covers(&self, at: u64) -> bool {
        match self {
            DataOp::Write { offset, bytes, .. } => {
                (*offset..offset + bytes.len() as u64).contains(&at)
            }
            DataOp::SetLen { len, .. } => at >= *len,
        }
    }

    /// The bytes of a file image this operation covers (see [`DataOp::covers`]): a write's,
    /// or from a truncate's length to any length an image can have.
    pub(crate) fn covered(&self) -> std::ops::Range<u64> {
        match self {
            DataOp::Write { offset, bytes, .. } => *offset..offset + bytes.len() as u64,
            DataOp::SetLen { len, .. } => *len..u64::MAX,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct FileNode {
    pub(crate) cache: Vec<u8>,
    pub(crate) durable: Vec<u8>,
    pub(crate) pending: Vec<DataOp>,
    /// A sync failed since the last crash: the cache holds writes the device never will, so
    /// it is no longer `durable` with `pending` applied (checked only while this is false).
    pub(crate) lost_writes: bool,
}

impl FileNode {
    /// What the cache should hold: the durable image with the pending operations applied.
    fn replayed(&self) -> Vec<u8> {
        assert!(
            !self.lost_writes,
            "only a file whose syncs all succeeded is its durable image plus its pending operations"
        );
        let mut image = self.durable.clone();
        for op in &self.pending {
            op.apply(&mut image);
        }
        image
    }
}

impl FileNode {
    /// Makes the cache the durable image again where `covered` says they may differ (see
    /// [`Disk::unsettled`]); elsewhere they are equal already.
    fn resettle_cache(&mut self, covered: &[std::ops::Range<u64>]) {
        let len = self.durable.len();
        // Bytes past the cache's end are covered: only a truncate the crash did not keep
        // leaves the durable image longer than the cache, and it covers all from its length.
        let cached = self.cache.len() as u64;
        assert!(
            len as u64 <= cached || covered.iter().any(|range| range.start <= cached),
            "a crash left the durable image longer than the cache with no truncate covering the rest"
        );
        self.cache.resize(len, 0);
        for range in covered {
            let start = usize::try_from(range.start).unwrap_or(usize::MAX).min(len);
            let end = usize::try_from(range.end).unwrap_or(usize::MAX).min(len);
            self.cache[start..end].copy_from_slice(&self.durable[start..end]);
        }
    }

    /// Checks that what reads see agrees with the pending operations, whatever happened to
    /// the device (this holds after a failed sync too): every byte of a pending write that no
    /// later operation overwrote or cut reads back as written, and the length is the last
    /// pending truncate's, grown by the writes after it (at least the writes' ends, if none).
    fn verify_extents(&self) {
        let mut claimed = vec![false; self.cache.len()];
        let mut cut = self.cache.len() as u64;
        for op in self.pending.iter().rev() {
            match op {
                DataOp::Write { offset, bytes, .. } => {
                    for (at, &byte) in (*offset..).zip(bytes) {
                        if at >= cut {
                            break;
                        }
                        let at = usize::try_from(at).expect("a file offset fits in memory");
                        if !std::mem::replace(&mut claimed[at], true) {
                            assert_eq!(
                                self.cache[at], byte,
                                "byte {at} of a pending write reads back as written"
                            );
                        }
                    }
                }
                DataOp::SetLen { len, .. } => cut = cut.min(*len),
            }
        }
        let mut len: Option<u64> = None;
        for op in &self.pending {
            match op {
                DataOp::Write { offset, bytes, .. } => {
                    let end = offset + bytes.len() as u64;
                    len = Some(len.map_or(end, |len| len.max(end)));
                }
                DataOp::SetLen { len: set, .. } => len = Some(*set),
            }
        }
        let truncated = self
            .pending
            .iter()
            .any(|op| matches!(op, DataOp::SetLen { .. }));
        if let Some(len) = len {
            assert!(
                if truncated {
                    self.cache.len() as u64 == len
                } else {
                    self.cache.len() as u64 >= len
                },
                "a file is as long as its last pending truncate and the writes after it say"
            );
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct DirNode {
    pub(crate) live: BTreeMap<String, Ino>,
    pub(crate) durable: BTreeMap<String, Ino>,
}

#[derive(Debug)]
pub(crate) enum Kind {
    File(FileNode),
    Dir(DirNode),
}

#[derive(Debug)]
pub(crate) struct Inode {
    pub(crate) kind: Kind,
    /// Open handles of the current boot.
    pub(crate) open: u32,
    pub(crate) attrs: Attributes,
    /// The issue number of the inode's last unsynced chmod, if its bits differ from the
    /// device's: the weak crash model keeps it only inside its prefix.
    pub(crate) mode_seq: Option<u64>,
    /// Live names: a file's hard links (a directory has one, the root none).
    pub(crate) links: u32,
}

/// One entry of a directory listing: its name, whether it is a directory, and its inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) is_dir: bool,
    pub(crate) ino: Ino,
}

/// The permission bits a process creating files gives up: 022, a service's usual umask.
pub(crate) const UMASK: u32 = 0o022;

/// The bits `chmod` sets: permissions, set-user-ID, set-group-ID and sticky.
pub(crate) const MODE_BITS: u32 = 0o7777;

/// A new file's bits before the umask, as `open(2)` without a mode gets them from std.
pub(crate) const FILE_MODE: u32 = 0o666;

/// A new directory's bits before the umask, as `mkdir(2)` without a mode gets them from std.
pub(crate) const DIR_MODE: u32 = 0o777;

/// What `stat` tells of an inode beside its kind, length and links: its permission bits and
/// its times, in nanoseconds since the Unix epoch on its node's wall clock. It keeps no
/// access time: it reads as the creation time, as on a disk mounted `noatime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub(crate) mode: u32,
    /// When the inode was made.
    pub(crate) born_ns: i64,
    /// When its data (a directory's entries) last changed, or what `set_modified` set.
    pub(crate) modified_ns: i64,
    /// When anything of it last changed: data, bits, names, times.
    pub(crate) changed_ns: i64,
}

/// An inode's attributes: what the program sees, and what the device holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub(crate) live: Attrs,
    pub(crate) durable: Attrs,
}

/// The bits `mkdir(2)` keeps of the mode asked for: permissions and sticky, not set-ID.
const DIR_CREATION_BITS: u32 = 0o1777;

impl Attributes {
    /// The attributes of an inode made at `now_ns` with `requested` bits (before the umask),
    /// durable with its name; `creatable` are the bits its kind of creation keeps.
    fn created(requested: u32, creatable: u32, now_ns: i64) -> Attributes {
        let attrs = Attrs {
            mode: requested & creatable & !UMASK,
            born_ns: now_ns,
            modified_ns: now_ns,
            changed_ns: now_ns,
        };
        Attributes {
            live: attrs,
            durable: attrs,
        }
    }
}

/// One half of a directory change.
#[derive(Clone, Debug)]
pub(crate) enum Part {
    /// `dir/name` now names `ino` (replacing what it named).
    Link { dir: Ino, name: String, ino: Ino },
    /// `dir/name` no longer names `ino`.
    Unlink { dir: Ino, name: String, ino: Ino },
}

impl Part {
    fn dir(&self) -> Ino {
        match self {
            Part::Link { dir, .. } | Part::Unlink { dir, .. } => *dir,
        }
    }

    fn ino(&self) -> Ino {
        match self {
            Part::Link { ino, .. } | Part::Unlink { ino, .. } => *ino,
        }
    }
}

/// A directory change not yet synced: applied whole or not at all.
#[derive(Clone, Debug)]
pub(crate) struct DirChange {
    pub(crate) seq: u64,
    pub(crate) parts: Vec<Part>,
}

impl DirChange {
    /// The directories it changes (one, or two for a rename across directories).
    pub(crate) fn dirs(&self) -> Vec<Ino> {
        let mut dirs: Vec<Ino> = self.parts.iter().map(Part::dir).collect();
        dirs.sort_unstable();
        dirs.dedup();
        assert!(
            (1..=2).contains(&dirs.len()),
            "a change touches one or two directories"
        );
        dirs
    }

    fn touches(&self, dir: Ino) -> bool {
        self.parts.iter().any(|part| part.dir() == dir)
    }
}

/// How a file is opened (the flags of `OpenOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenFlags {
    pub(crate) read: bool,
    pub(crate) write: bool,
    pub(crate) append: bool,
    pub(crate) truncate: bool,
    pub(crate) create: bool,
    pub(crate) create_new: bool,
    /// The permission bits of a file the open creates, before the umask (`FILE_MODE` if
    /// `None`); `OpenOptionsExt::mode`.
    pub(crate) mode: Option<u32>,
}

impl OpenFlags {
    /// Refuses the combinations `open(2)` refuses, as the standard library does.
    pub(crate) fn check(&self) -> io::Result<()> {
        if !self.read && !self.write && !self.append {
            return Err(errors::invalid_input());
        }
        let creates = self.truncate || self.create || self.create_new;
        let checked = match (self.write, self.append) {
            (false, false) if creates => Err(errors::invalid_input()),
            (_, true) if self.truncate && !self.create_new => Err(errors::invalid_input()),
            _ => Ok(()),
        };
        // The rule, stated the other way round: an accepted open may create or cut a file
        // only if it may write it.
        assert!(
            checked.is_err() || !creates || self.writes(),
            "open accepted flags that create or truncate without writing"
        );
        checked
    }

    pub(crate) fn writes(&self) -> bool {
        self.write || self.append
    }
}

/// One node's disk.
#[derive(Debug)]
pub(crate) struct Disk {
    pub(crate) inodes: BTreeMap<Ino, Inode>,
    next_ino: Ino,
    next_seq: u64,
    pub(crate) dir_log: Vec<DirChange>,
    /// Counts crashes: a handle opened before the last one is stale.
    pub(crate) boot: u64,
    /// The node's wall clock (ns since the Unix epoch) when the operation under way began:
    /// the time it stamps on what it changes. Set before each change (`FsState::disk_now`).
    pub(crate) clock_ns: i64,
    pub(crate) damage: Damage,
    /// When the device finishes the operations queued so far (virtual ns).
    pub(crate) busy_until_ns: u64,
}

impl Disk {
    /// A path that names inode `ino`, for reports: through the live names if they reach it,
    /// else through the durable ones (a file whose live name is gone, or a directory change
    /// not synced); `None` if neither does.
    ///
    /// Each view is a tree (no directory has two names in it), but the two mixed need not be:
    /// an unsynced move of a directory into its own former child makes a loop of a live name
    /// and a durable one. So each view is walked alone, and no directory twice.
    pub(crate) fn path_of(&self, ino: Ino) -> Option<String> {
        if ino == ROOT {
            return Some("/".to_owned());
        }
        self.path_through(ino, |dir| &dir.live)
            .or_else(|| self.path_through(ino, |dir| &dir.durable))
    }

    /// A path to `ino` through the names `names` gives of each directory, searched in name
    /// order.
    fn path_through(
        &self,
        ino: Ino,
        names: impl Fn(&DirNode) -> &BTreeMap<String, Ino>,
    ) -> Option<String> {
        let mut seen = BTreeSet::from([ROOT]);
        let mut stack = vec![(ROOT, String::new())];
        while let Some((dir, path)) = stack.pop() {
            let Some(Inode {
                kind: Kind::Dir(node),
                ..
            }) = self.inodes.get(&dir)
            else {
                continue;
            };
            let entries = names(node);
            if let Some((name, _)) = entries.iter().find(|(_, child)| **child == ino) {
                return Some(format!("{path}/{name}"));
            }
            // The stack takes the directories reversed, so they are searched in name order.
            for (name, &child) in entries.iter().rev() {
                let is_dir = matches!(
                    self.inodes.get(&child).map(|inode| &inode.kind),
                    Some(Kind::Dir(_))
                );
                if is_dir && seen.insert(child) {
                    stack.push((child, format!("{path}/{name}")));
                }
            }
        }
        None
    }

    /// `dir/name` as a path, for reports (`?/name` when the directory is unreachable).
    pub(crate) fn entry_path(&self, dir: Ino, name: &str) -> String {
        match self.path_of(dir) {
            Some(path) if path == "/" => format!("/{name}"),
            Some(path) => format!("{path}/{name}"),
            None => format!("?/{name}"),
        }
    }
}

impl Default for Disk {
    fn default() -> Disk {
        let root = Inode {
            kind: Kind::Dir(DirNode::default()),
            open: 0,
            // The root predates the run: its times read as the epoch.
            attrs: Attributes::created(DIR_MODE, DIR_CREATION_BITS, 0),
            mode_seq: None,
            links: 0,
        };
        Disk {
            inodes: BTreeMap::from([(ROOT, root)]),
            next_ino: ROOT + 1,
            next_seq: 0,
            dir_log: Vec::new(),
            boot: 0,
            clock_ns: 0,
            damage: Damage::default(),
            busy_until_ns: 0,
        }
    }
}

impl Disk {
    fn inode(&self, ino: Ino) -> &Inode {
        assert!(ino < self.next_ino, "inode {ino} was never made");
        self.inodes.get(&ino).expect("a referenced inode exists")
    }

    fn inode_mut(&mut self, ino: Ino) -> &mut Inode {
        assert!(ino < self.next_ino, "inode {ino} was never made");
        self.inodes
            .get_mut(&ino)
            .expect("a referenced inode exists")
    }

    fn dir(&self, ino: Ino) -> io::Result<&DirNode> {
        match &self.inode(ino).kind {
            Kind::Dir(dir) => Ok(dir),
            Kind::File(_) => Err(errors::not_a_directory()),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> &mut DirNode {
        match &mut self.inode_mut(ino).kind {
            Kind::Dir(dir) => dir,
            Kind::File(_) => panic!("inode {ino} is not a directory"),
        }
    }

    pub(crate) fn file(&self, ino: Ino) -> io::Result<&FileNode> {
        match &self.inode(ino).kind {
            Kind::File(file) => Ok(file),
            Kind::Dir(_) => Err(errors::is_a_directory()),
        }
    }

    pub(crate) fn file_mut(&mut self, ino: Ino) -> io::Result<&mut FileNode> {
        match &mut self.inode_mut(ino).kind {
            Kind::File(file) => Ok(file),
            Kind::Dir(_) => Err(errors::is_a_directory()),
        }
    }

    /// Whether the newest pending namespace change (the one just logged) touches `dir`.
    fn last_change_touches(&self, dir: Ino) -> bool {
        self.dir_log
            .last()
            .is_some_and(|change| change.touches(dir))
    }

    pub(crate) fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.inode(ino).kind, Kind::Dir(_))
    }

    fn next_seq(&mut self) -> u64 {
        let previous = self.next_seq;
        self.next_seq = previous
            .checked_add(1)
            .expect("sequence numbers never run out");
        assert!(self.next_seq > previous, "sequence numbers increase");
        self.next_seq
    }

    fn new_inode(&mut self, kind: Kind, requested_mode: u32) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        let creatable = match kind {
            Kind::File(_) => MODE_BITS,
            Kind::Dir(_) => DIR_CREATION_BITS,
        };
        let attrs = Attributes::created(requested_mode, creatable, self.clock_ns);
        let reused = self.inodes.insert(
            ino,
            Inode {
                kind,
                open: 0,
                attrs,
                mode_seq: None,
                links: 0,
            },
        );
        assert!(reused.is_none(), "inode numbers are never reused");
        assert!(ino != ROOT, "the root is made with the disk, never again");
        ino
    }

    // ----- names -----

    fn lookup(&self, dir: Ino, name: &str) -> io::Result<Option<Ino>> {
        let found = self.dir(dir)?.live.get(name).copied();
        assert!(
            found.is_none_or(|ino| ino != ROOT && ino < self.next_ino),
            "a live name names an inode this disk made, never the root"
        );
        Ok(found)
    }

    /// The inode `names` leads to in the live tree.
    pub(crate) fn resolve(&self, names: &Names) -> io::Result<Ino> {
        self.check_stepped_out(names)?;
        let mut ino = ROOT;
        for name in &names.names {
            ino = self.lookup(ino, name)?.ok_or_else(errors::not_found)?;
        }
        assert!(
            self.inodes.contains_key(&ino),
            "a path leads to a live inode"
        );
        Ok(ino)
    }

    /// Fails as the kernel's walk of the path would where a `..` steps out of something that
    /// is no directory: `ENOENT` if it is missing, `ENOTDIR` if it is a file.
    fn check_stepped_out(&self, names: &Names) -> io::Result<()> {
        for dir in &names.stepped_out {
            let ino = self.resolve(&Names::new(dir.clone()))?;
            self.dir(ino)?;
        }
        Ok(())
    }

    /// The directory holding the last name of `names`, and that name; `None` for the root.
    fn resolve_parent<'a>(&self, names: &'a Names) -> io::Result<Option<(Ino, &'a str)>> {
        self.check_stepped_out(names)?;
        let Some((parent, name)) = names.split_last() else {
            return Ok(None);
        };
        let dir = self.resolve(&Names::new(parent.to_vec()))?;
        self.dir(dir)?;
        assert!(!name.is_empty(), "a parsed path holds no empty name");
        Ok(Some((dir, name)))
    }

    /// Every path of `ino` in the live tree (one per hard link; none for an inode nothing
    /// names), in the tree's order; the root's is `/`.
    pub(crate) fn paths_of(&self, target: Ino) -> Vec<String> {
        fn walk(
            disk: &Disk,
            dir: Ino,
            target: Ino,
            prefix: &mut Vec<String>,
            out: &mut Vec<Names>,
        ) {
            let Ok(node) = disk.dir(dir) else {
                return;
            };
            for (name, &child) in &node.live {
                prefix.push(name.clone());
                if child == target {
                    out.push(Names::new(prefix.clone()));
                }
                walk(disk, child, target, prefix, out);
                prefix.pop();
            }
        }
        let mut found = Vec::new();
        if target == ROOT {
            found.push(Names::new(Vec::new()));
        } else {
            walk(self, ROOT, target, &mut Vec::new(), &mut found);
        }
        if verify::enabled() {
            assert!(
                found
                    .iter()
                    .all(|names| self.resolve(names).ok() == Some(target)),
                "every path found leads back to its inode"
            );
        }
        assert!(
            target == ROOT || found.len() == self.inode(target).links as usize,
            "an inode has a path per live name"
        );
        found.iter().map(Names::display).collect()
    }

    fn change(&mut self, parts: Vec<Part>) {
        assert!(
            (1..=2).contains(&parts.len()),
            "a change is a link, an unlink, or a rename (both)"
        );
        let mut orphans = false;
        for part in &parts {
            // The directory's entries changed, and the entry's names.
            self.touch(part.dir(), true);
            self.touch(part.ino(), false);
            let dir = self.dir_mut(part.dir());
            match part {
                Part::Link { name, ino, .. } => {
                    let replaced = dir.live.insert(name.clone(), *ino);
                    self.inode_mut(*ino).links += 1;
                    if let Some(replaced) = replaced {
                        self.unname(replaced);
                        self.touch(replaced, false);
                        orphans = true;
                    }
                }
                Part::Unlink { name, ino, .. } => {
                    let removed = dir.live.remove(name);
                    assert_eq!(
                        removed,
                        Some(*ino),
                        "unlinked a name that named another inode"
                    );
                    self.unname(*ino);
                    orphans = true;
                }
            }
        }
        let seq = self.next_seq();
        assert!(
            self.dir_log.last().is_none_or(|last| last.seq < seq),
            "directory changes are logged in issue order"
        );
        self.dir_log.push(DirChange { seq, parts });
        if orphans {
            self.collect();
        }
        self.verify();
    }

    /// Counts one live name of `ino` fewer.
    fn unname(&mut self, ino: Ino) {
        let inode = self.inode_mut(ino);
        assert!(inode.links > 0, "inode {ino} lost a name it did not have");
        inode.links -= 1;
    }

    /// Counts every inode's live names afresh (after a crash replaced them all).
    fn recount_links(&mut self) {
        let counts = self.counted_links();
        for (ino, inode) in &mut self.inodes {
            inode.links = counts.get(ino).copied().unwrap_or(0);
        }
    }

    /// Every named inode's number of live names, counted from the directories.
    fn counted_links(&self) -> BTreeMap<Ino, u32> {
        let mut counts: BTreeMap<Ino, u32> = BTreeMap::new();
        for inode in self.inodes.values() {
            if let Kind::Dir(dir) = &inode.kind {
                for child in dir.live.values() {
                    *counts.entry(*child).or_default() += 1;
                }
            }
        }
        counts
    }

    // ----- files -----

    /// Opens (and maybe creates or truncates) the file or directory at `names`.
    pub(crate) fn open(&mut self, names: &Names, flags: OpenFlags) -> io::Result<Ino> {
        flags.check()?;
        let ino = self.open_unchecked(names, flags)?;
        assert!(self.inodes.contains_key(&ino), "open returns a live inode");
        assert!(
            !(flags.writes() && self.is_dir(ino)),
            "a directory is never opened for writing"
        );
        if flags.truncate && !self.is_dir(ino) {
            assert_eq!(self.len(ino)?, 0, "a truncating open empties the file");
        }
        if flags.create_new {
            assert_eq!(ino + 1, self.next_ino, "create_new makes a new inode");
        }
        Ok(ino)
    }

    fn open_unchecked(&mut self, names: &Names, flags: OpenFlags) -> io::Result<Ino> {
        let (dir, name) = match self.resolve_parent(names)? {
            Some(parent) => parent,
            None if flags.create_new => return Err(errors::already_exists()),
            None if flags.writes() => return Err(errors::is_a_directory()),
            None => {
                self.check_access(ROOT, flags)?;
                return Ok(ROOT);
            }
        };
        match self.lookup(dir, name)? {
            Some(_) if flags.create_new => Err(errors::already_exists()),
            Some(ino) if self.is_dir(ino) => {
                if flags.writes() {
                    Err(errors::is_a_directory())
                } else {
                    self.check_access(ino, flags)?;
                    Ok(ino)
                }
            }
            Some(ino) => {
                self.check_access(ino, flags)?;
                if flags.truncate && self.len(ino)? > 0 {
                    self.set_len(ino, 0)?;
                } else if flags.truncate {
                    // O_TRUNC stamps the times even of an empty file, as Linux does.
                    self.touch(ino, true);
                }
                Ok(ino)
            }
            None if flags.create || flags.create_new => {
                let ino = self.new_inode(
                    Kind::File(FileNode::default()),
                    flags.mode.unwrap_or(FILE_MODE),
                );
                let name = name.to_owned();
                self.change(vec![Part::Link { dir, name, ino }]);
                assert!(
                    self.last_change_touches(dir),
                    "a new file's name is pending until its directory is synced"
                );
                assert!(
                    self.file(ino).is_ok_and(|file| file.cache.is_empty()
                        && file.durable.is_empty()
                        && file.pending.is_empty()),
                    "a created file starts empty, with nothing pending"
                );
                Ok(ino)
            }
            None => Err(errors::not_found()),
        }
    }

    /// Refuses to open an existing inode as `flags` ask if its owner's bits forbid it, as the
    /// kernel refuses its owner when that owner is no superuser: reading needs `r`, writing
    /// or truncating `w`.
    fn check_access(&self, ino: Ino, flags: OpenFlags) -> io::Result<()> {
        let bits = self.inode(ino).attrs.live.mode;
        let readable = bits & 0o400 != 0;
        let writable = bits & 0o200 != 0;
        if (flags.read && !readable) || (flags.writes() && !writable) {
            return Err(errors::permission_denied());
        }
        Ok(())
    }

    /// Sets the inode's permission bits (`chmod`): seen at once, durable once the inode is
    /// synced.
    pub(crate) fn set_mode(&mut self, ino: Ino, mode: u32) {
        let durable = self.inode(ino).attrs.durable;
        let seq = self.next_seq();
        let inode = self.inode_mut(ino);
        inode.attrs.live.mode = mode & MODE_BITS;
        inode.mode_seq = Some(seq);
        self.touch(ino, false);
        assert_eq!(
            self.inode(ino).attrs.durable,
            durable,
            "a chmod reaches the device only with a sync"
        );
    }

    /// Sets the file's modification time (`futimens`), seen at once and durable once the
    /// file is synced.
    pub(crate) fn set_modified(&mut self, ino: Ino, modified_ns: i64) {
        self.touch(ino, false);
        self.inode_mut(ino).attrs.live.modified_ns = modified_ns;
    }

    /// Stamps the inode's change time with the clock, and its modification time too if its
    /// `data` changed (a file's bytes or length, a directory's entries).
    fn touch(&mut self, ino: Ino, data: bool) {
        let now = self.clock_ns;
        let live = &mut self.inode_mut(ino).attrs.live;
        live.changed_ns = now;
        if data {
            live.modified_ns = now;
        }
    }

    pub(crate) fn len(&self, ino: Ino) -> io::Result<u64> {
        Ok(self.file(ino)?.cache.len() as u64)
    }

    /// Reads from the page cache into `buf`; returns how many bytes it read.
    pub(crate) fn read(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let cache = &self.file(ino)?.cache;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(cache.len());
        let n = buf.len().min(cache.len() - start);
        buf[..n].copy_from_slice(&cache[start..start + n]);
        assert!(start + n <= cache.len(), "a read stays inside the file");
        assert!(
            n == buf.len() || start + n == cache.len(),
            "a short read ends at the end of the file"
        );
        Ok(n)
    }

    /// Writes into the page cache; the write is pending until the file is synced.
    pub(crate) fn write(&mut self, ino: Ino, offset: u64, bytes: &[u8]) -> io::Result<()> {
        assert!(
            offset.checked_add(bytes.len() as u64).is_some(),
            "a write's end fits in a u64: the caller bounds it by the largest file"
        );
        self.file(ino)?;
        if !bytes.is_empty() {
            self.touch(ino, true);
        }
        let seq = self.next_seq();
        let file = self.file_mut(ino)?;
        let pending = file.pending.len();
        page::write_into(&mut file.cache, offset, bytes);
        file.pending.push(DataOp::Write {
            seq,
            offset,
            bytes: bytes.to_vec(),
        });
        assert_eq!(
            file.pending.len(),
            pending + 1,
            "a write is pending until synced"
        );
        assert!(
            file.cache.len() as u64 >= offset + bytes.len() as u64,
            "a write leaves the file at least as long as its end"
        );
        assert!(
            file.pending.len() < 2 || file.pending[pending - 1].seq() < seq,
            "a file's pending operations are in issue order"
        );
        if verify::enabled() {
            let start = usize::try_from(offset).expect("a file offset fits in memory");
            assert_eq!(
                &file.cache[start..start + bytes.len()],
                bytes,
                "the cache reads back what was written"
            );
            file.verify_extents();
        }
        Ok(())
    }

    /// Cuts or extends the file; pending until the file is synced.
    pub(crate) fn set_len(&mut self, ino: Ino, len: u64) -> io::Result<()> {
        self.file(ino)?;
        self.touch(ino, true);
        let seq = self.next_seq();
        let file = self.file_mut(ino)?;
        let pending = file.pending.len();
        page::set_len(&mut file.cache, len);
        file.pending.push(DataOp::SetLen { seq, len });
        self.damage.cut(ino, len);
        let file = self.file_mut(ino)?;
        assert_eq!(file.cache.len() as u64, len, "set_len sets what reads see");
        assert_eq!(
            file.pending.len(),
            pending + 1,
            "a truncate is pending until synced"
        );
        if verify::enabled() {
            file.verify_extents();
        }
        Ok(())
    }

    /// Makes every pending write and truncate of the file durable, and its attributes.
    pub(crate) fn sync_file(&mut self, ino: Ino) {
        self.sync_attrs(ino);
        if let Ok(file) = self.file_mut(ino) {
            for op in std::mem::take(&mut file.pending) {
                op.apply(&mut file.durable);
            }
            assert!(file.pending.is_empty(), "a sync leaves nothing pending");
            assert!(
                file.lost_writes || file.durable.len() == file.cache.len(),
                "after a sync the device holds a file as long as reads see it"
            );
            if verify::enabled() && !file.lost_writes {
                assert!(
                    file.durable == file.cache,
                    "after a sync the device holds what reads see"
                );
            }
        }
    }

    /// A failed sync: the pending writes never reach the device (the cache keeps them).
    pub(crate) fn lose_pending(&mut self, ino: Ino) {
        if let Ok(file) = self.file_mut(ino) {
            let (had_pending, cached) = (!file.pending.is_empty(), file.cache.len());
            file.lost_writes |= had_pending;
            file.pending.clear();
            assert_eq!(
                file.cache.len(),
                cached,
                "a failed sync leaves what reads see as it was"
            );
            assert!(
                file.lost_writes || !had_pending,
                "a failed sync that lost writes marks the file"
            );
            assert!(
                file.pending.is_empty(),
                "a failed sync leaves nothing pending"
            );
        }
    }

    /// Makes the inode's attributes durable: an fsync writes the inode.
    fn sync_attrs(&mut self, ino: Ino) {
        let inode = self.inode_mut(ino);
        inode.attrs.durable = inode.attrs.live;
        inode.mode_seq = None;
    }

    /// Bytes of file data the program sees on this disk.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.inodes
            .values()
            .map(|inode| match &inode.kind {
                Kind::File(file) => file.cache.len() as u64,
                Kind::Dir(_) => 0,
            })
            .try_fold(0u64, u64::checked_add)
            .expect("a disk's usage fits in a u64")
    }

    // ----- directories -----

    /// Makes durable every pending change to directory `dir`, and every earlier change it
    /// depends on (an earlier change to another directory that a rename also touched).
    pub(crate) fn sync_dir(&mut self, dir: Ino) {
        assert!(self.is_dir(dir), "a directory sync is asked of a directory");
        self.sync_attrs(dir);
        let mut forced: BTreeSet<usize> = BTreeSet::new();
        let mut frontier: Vec<usize> = Vec::new();
        for (i, change) in self.dir_log.iter().enumerate() {
            if change.touches(dir) {
                forced.insert(i);
                frontier.push(i);
            }
        }
        while let Some(i) = frontier.pop() {
            for touched in self.dir_log[i].dirs() {
                for j in 0..i {
                    if self.dir_log[j].touches(touched) && forced.insert(j) {
                        frontier.push(j);
                    }
                }
            }
        }
        let log = std::mem::take(&mut self.dir_log);
        let before = log.len();
        for (i, change) in log.into_iter().enumerate() {
            if forced.contains(&i) {
                self.apply_durably(&change);
            } else {
                self.dir_log.push(change);
            }
        }
        assert_eq!(
            self.dir_log.len() + forced.len(),
            before,
            "a directory sync settles exactly the changes it forces"
        );
        assert!(
            self.dir_log.iter().all(|change| !change.touches(dir)),
            "after a directory sync nothing pending touches it"
        );
        if verify::enabled() {
            let synced = self.dir(dir).expect("asserted a directory above");
            assert!(
                synced.durable == synced.live,
                "after a directory sync the device holds the names the program sees"
            );
        }
        self.collect();
        self.verify();
    }

    /// Applies a directory change to the durable names.
    pub(crate) fn apply_durably(&mut self, change: &DirChange) {
        for part in &change.parts {
            assert!(
                self.inodes.contains_key(&part.ino()),
                "a pending change keeps its inode alive"
            );
            let dir = self.dir_mut(part.dir());
            match part {
                Part::Link { name, ino, .. } => {
                    dir.durable.insert(name.clone(), *ino);
                    assert_eq!(
                        dir.durable.get(name),
                        Some(ino),
                        "a settled link names its inode durably"
                    );
                }
                Part::Unlink { name, ino, .. } => {
                    if dir.durable.get(name) == Some(ino) {
                        dir.durable.remove(name);
                    }
                    assert_ne!(
                        dir.durable.get(name),
                        Some(ino),
                        "a settled unlink leaves no durable name for its inode"
                    );
                }
            }
        }
    }

    /// Creates a directory whose bits are `mode` before the umask (`DirBuilderExt::mode`).
    pub(crate) fn create_dir(&mut self, names: &Names, mode: u32) -> io::Result<()> {
        let (dir, name) = self
            .resolve_parent(names)?
            .ok_or_else(errors::already_exists)?;
        if self.lookup(dir, name)?.is_some() {
            return Err(errors::already_exists());
        }
        let ino = self.new_inode(Kind::Dir(DirNode::default()), mode);
        let name = name.to_owned();
        self.change(vec![Part::Link { dir, name, ino }]);
        assert_eq!(
            self.resolve(names).ok(),
            Some(ino),
            "the new directory is there"
        );
        assert!(
            self.last_change_touches(dir),
            "a new directory's name is pending until its parent is synced"
        );
        Ok(())
    }

    /// Creates a directory and its missing parents, each with `mode` before the umask.
    /// As std's `create_dir_all`, which makes each missing parent as the kernel walks the
    /// path: the directories a `..` steps out of too, in order, then the path's own.
    pub(crate) fn create_dir_all(&mut self, names: &Names, mode: u32) -> io::Result<()> {
        for dir in &names.stepped_out {
            self.make_dirs(dir, mode, false)?;
        }
        self.make_dirs(&names.names, mode, true)?;
        assert!(
            self.resolve(names).is_ok_and(|ino| self.is_dir(ino)),
            "create_dir_all leaves a directory at the path"
        );
        Ok(())
    }

    /// Makes every missing directory along `names`; a file on the way is `ENOTDIR`, and at
    /// its end `EEXIST` if it is the `last` path asked for.
    fn make_dirs(&mut self, names: &[String], mode: u32, last: bool) -> io::Result<()> {
        for end in 1..=names.len() {
            let prefix = Names::new(names[..end].to_vec());
            match self.resolve(&prefix) {
                Ok(ino) if self.is_dir(ino) => {}
                Ok(_) if last && end == names.len() => return Err(errors::already_exists()),
                Ok(_) => return Err(errors::not_a_directory()),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    self.create_dir(&prefix, mode)?;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    pub(crate) fn remove_file(&mut self, names: &Names) -> io::Result<()> {
        let (dir, name) = self
            .resolve_parent(names)?
            .ok_or_else(errors::is_a_directory)?;
        let ino = self.lookup(dir, name)?.ok_or_else(errors::not_found)?;
        if self.is_dir(ino) {
            return Err(errors::is_a_directory());
        }
        let name = name.to_owned();
        self.change(vec![Part::Unlink { dir, name, ino }]);
        assert!(self.resolve(names).is_err(), "a removed file has no name");
        assert!(
            self.last_change_touches(dir),
            "a removal is pending until its directory is synced"
        );
        Ok(())
    }

    /// Gives the file at `original` a second name, `link` (`link(2)`): one more pending change
    /// to `link`'s directory, durable once that directory is synced.
    pub(crate) fn hard_link(&mut self, original: &Names, link: &Names) -> io::Result<()> {
        let ino = self.resolve(original)?;
        if self.is_dir(ino) {
            return Err(errors::not_permitted());
        }
        let (dir, name) = self
            .resolve_parent(link)?
            .ok_or_else(errors::already_exists)?;
        if self.lookup(dir, name)?.is_some() {
            return Err(errors::already_exists());
        }
        let name = name.to_owned();
        self.change(vec![Part::Link { dir, name, ino }]);
        assert_eq!(
            (self.resolve(link).ok(), self.resolve(original).ok()),
            (Some(ino), Some(ino)),
            "both names lead to the file"
        );
        assert!(
            self.last_change_touches(dir),
            "a new link is pending until its directory is synced"
        );
        Ok(())
    }

    pub(crate) fn remove_dir(&mut self, names: &Names) -> io::Result<()> {
        let (dir, name) = self.resolve_parent(names)?.ok_or_else(errors::busy)?;
        let ino = self.lookup(dir, name)?.ok_or_else(errors::not_found)?;
        if !self.dir(ino)?.live.is_empty() {
            return Err(errors::directory_not_empty());
        }
        let name = name.to_owned();
        self.change(vec![Part::Unlink { dir, name, ino }]);
        assert!(
            self.resolve(names).is_err(),
            "a removed directory has no name"
        );
        assert!(
            self.last_change_touches(dir),
            "a removal is pending until its parent is synced"
        );
        Ok(())
    }

    pub(crate) fn rename(&mut self, from: &Names, to: &Names) -> io::Result<()> {
        let (from_dir, from_name) = self.resolve_parent(from)?.ok_or_else(errors::busy)?;
        let ino = self
            .lookup(from_dir, from_name)?
            .ok_or_else(errors::not_found)?;
        let (to_dir, to_name) = self.resolve_parent(to)?.ok_or_else(errors::busy)?;
        let moving_dir = self.is_dir(ino);
        if moving_dir && to.starts_with(from) && to != from {
            return Err(errors::invalid_input());
        }
        if let Some(existing) = self.lookup(to_dir, to_name)? {
            if existing == ino {
                return Ok(());
            }
            match (moving_dir, self.is_dir(existing)) {
                (false, true) => return Err(errors::is_a_directory()),
                (true, false) => return Err(errors::not_a_directory()),
                (true, true) if !self.dir(existing)?.live.is_empty() => {
                    return Err(errors::directory_not_empty());
                }
                _ => {}
            }
        }
        let parts = vec![
            Part::Unlink {
                dir: from_dir,
                name: from_name.to_owned(),
                ino,
            },
            Part::Link {
                dir: to_dir,
                name: to_name.to_owned(),
                ino,
            },
        ];
        self.change(parts);
        assert_eq!(
            self.resolve(to).ok(),
            Some(ino),
            "the renamed entry is at its new name"
        );
        assert!(self.resolve(from).is_err(), "and no longer at its old one");
        assert!(
            self.last_change_touches(from_dir) && self.last_change_touches(to_dir),
            "a rename is one pending change to both its directories"
        );
        Ok(())
    }

    /// The entries of the directory at `names`: name and whether it is a directory.
    pub(crate) fn read_dir(&self, names: &Names) -> io::Result<Vec<Listed>> {
        let ino = self.resolve(names)?;
        let dir = self.dir(ino)?;
        let entries: Vec<Listed> = dir
            .live
            .iter()
            .map(|(name, &child)| Listed {
                name: name.clone(),
                is_dir: self.is_dir(child),
                ino: child,
            })
            .collect();
        assert_eq!(
            entries.len(),
            dir.live.len(),
            "a listing holds every live name"
        );
        Ok(entries)
    }

    pub(crate) fn metadata(&self, ino: Ino) -> Metadata {
        assert!(self.inodes.contains_key(&ino), "metadata of a live inode");
        let inode = self.inode(ino);
        let (file_type, len, links) = match &inode.kind {
            Kind::File(file) => (FileType::FILE, file.cache.len() as u64, inode.links),
            // As on Linux: its name, its own `.`, and each subdirectory's `..`.
            Kind::Dir(dir) => {
                let subdirs = dir.live.values().filter(|&&child| self.is_dir(child));
                let subdirs =
                    u32::try_from(subdirs.count()).expect("a directory's entries fit in a u32");
                // A removed directory still open has no names left, as on Linux.
                let links = if inode.links == 0 && ino != ROOT {
                    0
                } else {
                    2 + subdirs
                };
                (FileType::DIR, 4096, links)
            }
        };
        Metadata::new(file_type, len, inode.attrs.live, ino, links)
    }

    // ----- handles and collection -----

    pub(crate) fn retain(&mut self, ino: Ino) {
        let inode = self.inode_mut(ino);
        inode.open = inode
            .open
            .checked_add(1)
            .expect("open handles fit in a u32");
        assert!(inode.open > 0, "a retained inode has an open handle");
    }

    /// Drops one open handle of `ino` from boot `boot` (a stale handle holds nothing).
    pub(crate) fn release(&mut self, ino: Ino, boot: u64) {
        if boot != self.boot {
            assert!(
                boot < self.boot,
                "a stale handle comes from an earlier boot"
            );
            return;
        }
        let inode = self.inode_mut(ino);
        assert!(
            inode.open > 0,
            "released inode {ino} more often than opened"
        );
        inode.open -= 1;
        if inode.open == 0 {
            self.collect();
        }
    }

    /// Drops every inode nothing refers to (see the module invariants).
    pub(crate) fn collect(&mut self) {
        let mut reached: BTreeSet<Ino> = BTreeSet::new();
        let mut stack: Vec<Ino> = vec![ROOT];
        for (&ino, inode) in &self.inodes {
            if inode.open > 0 {
                stack.push(ino);
            }
        }
        for change in &self.dir_log {
            for part in &change.parts {
                stack.push(part.dir());
                stack.push(part.ino());
            }
        }
        while let Some(ino) = stack.pop() {
            if !reached.insert(ino) {
                continue;
            }
            if let Kind::Dir(dir) = &self.inode(ino).kind {
                stack.extend(dir.live.values().chain(dir.durable.values()));
            }
        }
        self.inodes.retain(|ino, _| reached.contains(ino));
        self.damage.forget_missing(&reached);
        assert!(
            self.inodes.contains_key(&ROOT),
            "the root is never collected"
        );
        assert_eq!(
            self.inodes.len(),
            reached.len(),
            "every inode left is reachable, and every one reached exists"
        );
    }

    /// Where each file's page cache may differ from its durable image once a crash has
    /// settled its pending operations (taken just before the crash): `None` for a file whose
    /// sync failed (its cache holds writes the device never got, anywhere), else the bytes its
    /// pending operations cover. A file not listed has nothing pending and its cache is its
    /// durable image.
    ///
    /// The cache is the old durable image with the pending operations applied, and a crash
    /// changes the durable image only where they cover (both checked under the verify
    /// switch), so the two can differ only there. A reboot then copies those bytes, not the
    /// whole file: a database's file of megabytes with a few pages unsynced was copied whole
    /// at every crash.
    pub(crate) fn unsettled(&self) -> Unsettled {
        self.inodes
            .iter()
            .filter_map(|(&ino, inode)| match &inode.kind {
                Kind::File(file) if file.lost_writes => Some((ino, None)),
                Kind::File(file) if !file.pending.is_empty() => Some((
                    ino,
                    Some(file.pending.iter().map(DataOp::covered).collect()),
                )),
                _ => None,
            })
            .collect()
    }

    /// After a crash has settled the durable images: the program now sees exactly them,
    /// every handle is stale, and nothing is pending. `unsettled` is what
    /// [`Disk::unsettled`] said before the crash.
    pub(crate) fn reboot(&mut self, unsettled: &Unsettled) {
        assert!(
            self.dir_log.is_empty(),
            "a crash settles every directory change"
        );
        for (ino, inode) in &mut self.inodes {
            inode.open = 0;
            inode.attrs.live = inode.attrs.durable;
            inode.mode_seq = None;
            match &mut inode.kind {
                Kind::File(file) => {
                    assert!(file.pending.is_empty(), "a crash settles every write");
                    match unsettled.get(ino) {
                        None => {}
                        Some(None) => file.cache.clone_from(&file.durable),
                        Some(Some(covered)) => file.resettle_cache(covered),
                    }
                    // `verify` below checks the cache against the durable image: with nothing
                    // pending and no lost writes, that is the replayed image.
                    file.lost_writes = false;
                }
                Kind::Dir(dir) => dir.live.clone_from(&dir.durable),
            }
        }
        let damaged: BTreeSet<Ino> = self.damage.inodes().collect();
        for ino in damaged {
            if let Ok(len) = self.len(ino) {
                self.damage.cut(ino, len);
            }
        }
        let boot = self.boot;
        self.boot += 1;
        self.busy_until_ns = 0;
        // Collected first: a directory the crash orphaned still lists names it took along.
        self.collect();
        self.recount_links();
        assert_eq!(self.boot, boot + 1, "a crash is one more boot");
        assert!(
            self.inodes.values().all(|inode| inode.open == 0),
            "no handle survives a crash"
        );
        assert!(
            self.inodes
                .values()
                .all(|inode| inode.attrs.live == inode.attrs.durable),
            "after a crash the program sees the attributes the device holds"
        );
        self.verify();
    }

    /// Checks that every directory's live names are its durable names with the pending
    /// changes to it applied in order (the directory half of the module's first invariant).
    fn verify_dir_log(&self) {
        let mut replayed: BTreeMap<Ino, BTreeMap<String, Ino>> = BTreeMap::new();
        for (&ino, inode) in &self.inodes {
            if let Kind::Dir(dir) = &inode.kind {
                replayed.insert(ino, dir.durable.clone());
            }
        }
        for change in &self.dir_log {
            for part in &change.parts {
                let names = replayed
                    .get_mut(&part.dir())
                    .expect("a pending change is made in an existing directory");
                match part {
                    Part::Link { name, ino, .. } => {
                        names.insert(name.clone(), *ino);
                    }
                    Part::Unlink { name, ino, .. } => {
                        assert_eq!(
                            names.remove(name),
                            Some(*ino),
                            "a pending unlink removes a name its directory then held"
                        );
                    }
                }
            }
        }
        for (ino, names) in replayed {
            assert!(
                names == self.dir(ino).expect("replayed as a directory").live,
                "directory {ino}: the live names are the durable ones with the pending changes \
                 applied"
            );
        }
    }

    /// Checks every invariant of the module docs, walking the whole disk (with the core's
    /// verify switch only).
    pub(crate) fn verify(&self) {
        if !verify::enabled() {
            return;
        }
        assert!(self.is_dir(ROOT), "the root is a directory");
        assert!(
            self.inodes.keys().all(|&ino| ino < self.next_ino),
            "every inode was made by this disk"
        );
        let mut live_names: BTreeMap<Ino, usize> = BTreeMap::new();
        let mut durable_names: BTreeMap<Ino, usize> = BTreeMap::new();
        for inode in self.inodes.values() {
            match &inode.kind {
                Kind::Dir(dir) => {
                    for (name, child) in &dir.live {
                        assert!(!name.is_empty(), "a directory holds no empty name");
                        assert!(!name.contains('/'), "a name holds no separator: {name:?}");
                        assert!(name != "." && name != "..", "a directory holds no {name:?}");
                        assert!(self.inodes.contains_key(child), "a live name has its inode");
                        *live_names.entry(*child).or_default() += 1;
                    }
                    for (name, child) in &dir.durable {
                        assert!(
                            !name.is_empty() && !name.contains('/') && name != "." && name != "..",
                            "a durable name is one path component: {name:?}"
                        );
                        assert!(
                            self.inodes.contains_key(child),
                            "a durable name has its inode"
                        );
                        *durable_names.entry(*child).or_default() += 1;
                    }
                }
                Kind::File(file) => {
                    assert!(
                        file.pending.windows(2).all(|w| w[0].seq() < w[1].seq()),
                        "a file's pending operations are in issue order"
                    );
                    assert!(
                        file.pending.iter().all(|op| op.seq() <= self.next_seq),
                        "pending operations were numbered by this disk"
                    );
                    file.verify_extents();
                    if !file.lost_writes {
                        assert!(
                            file.replayed() == file.cache,
                            "the cache is the durable image with the pending operations applied"
                        );
                    }
                }
            }
        }
        assert!(
            live_names
                .iter()
                .all(|(&ino, &count)| count == 1 || !self.is_dir(ino)),
            "no directory has two live names"
        );
        assert!(
            durable_names
                .iter()
                .all(|(&ino, &count)| count == 1 || !self.is_dir(ino)),
            "no directory has two durable names"
        );
        assert!(
            !live_names.contains_key(&ROOT) && !durable_names.contains_key(&ROOT),
            "the root has no name"
        );
        for (ino, inode) in &self.inodes {
            assert_eq!(
                inode.links as usize,
                live_names.get(ino).copied().unwrap_or(0),
                "inode {ino} counts its live names"
            );
        }
        let mut reached = 0usize;
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if let Ok(dir) = self.dir(ino) {
                reached += dir.live.len();
                stack.extend(dir.live.values());
            }
        }
        assert_eq!(
            reached,
            live_names.values().sum::<usize>(),
            "every live name is reached from the root: the live tree has no cycle"
        );
        assert!(
            self.dir_log.windows(2).all(|w| w[0].seq < w[1].seq),
            "directory changes are logged in issue order"
        );
        assert!(
            self.dir_log
                .iter()
                .all(|change| change.seq <= self.next_seq),
            "pending changes were numbered by this disk"
        );
        for change in &self.dir_log {
            if let [Part::Unlink { ino: from, .. }, Part::Link { ino: to, .. }] = &change.parts[..]
            {
                assert_eq!(from, to, "a rename moves one inode");
            }
            // A crash replays a rename's parts in order: the old name goes, then the new one
            // comes (which may replace what it named).
            assert!(
                matches!(
                    &change.parts[..],
                    [_] | [Part::Unlink { .. }, Part::Link { .. }]
                ),
                "a change is one link, one unlink, or a rename's unlink then link"
            );
            for part in &change.parts {
                assert!(part.ino() != ROOT, "the root is never linked or unlinked");
                assert!(self.is_dir(part.dir()), "a change is made in a directory");
                assert!(
                    self.inodes.contains_key(&part.ino()),
                    "a pending change keeps its inode"
                );
            }
        }
        let mut seqs: Vec<u64> = self.dir_log.iter().map(|change| change.seq).collect();
        for inode in self.inodes.values() {
            if let Kind::File(file) = &inode.kind {
                seqs.extend(file.pending.iter().map(DataOp::seq));
            }
        }
        let unsynced = seqs.len();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(
            seqs.len(),
            unsynced,
            "every unsynced operation of the disk has a sequence number of its own"
        );
        self.verify_dir_log();
        self.damage.verify();
        assert!(
            self.damage
                .flipped_bytes()
                .all(|(ino, byte)| self.len(ino).is_ok_and(|len| byte < len)),
            "every flipped bit lies inside its file"
        );
        assert!(
            self.damage
                .inodes()
                .all(|ino| matches!(self.inodes.get(&ino).map(|i| &i.kind), Some(Kind::File(_)))),
            "only files hold damage"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn names(path: &str) -> Names {
        Names::parse(Path::new(path)).unwrap()
    }

    const CREATE: OpenFlags = OpenFlags {
        read: true,
        write: true,
        append: false,
        truncate: false,
        create: true,
        create_new: false,
        mode: None,
    };

    fn durable_names(disk: &Disk) -> Vec<String> {
        match &disk.inode(ROOT).kind {
            Kind::Dir(dir) => dir.durable.keys().cloned().collect(),
            Kind::File(_) => unreachable!(),
        }
    }

    #[test]
    fn writes_reach_the_durable_image_only_when_synced() {
        let mut disk = Disk::default();
        let ino = disk.open(&names("/f"), CREATE).unwrap();
        disk.write(ino, 0, b"hello").unwrap();
        assert_eq!(disk.file(ino).unwrap().cache, b"hello");
        assert!(disk.file(ino).unwrap().durable.is_empty());
        disk.sync_file(ino);
        assert_eq!(disk.file(ino).unwrap().durable, b"hello");
        assert!(disk.file(ino).unwrap().pending.is_empty());
    }

    #[test]
    fn a_new_name_is_durable_only_after_its_directory_is_synced() {
        let mut disk = Disk::default();
        disk.open(&names("/f"), CREATE).unwrap();
        assert!(durable_names(&disk).is_empty());
        disk.sync_dir(ROOT);
        assert_eq!(durable_names(&disk), ["f"]);
    }

    #[test]
    fn syncing_a_directory_also_settles_the_renames_it_depends_on() {
        let mut disk = Disk::default();
        disk.create_dir(&names("/d"), DIR_MODE).unwrap();
        disk.open(&names("/d/a"), CREATE).unwrap();
        disk.create_dir(&names("/e"), DIR_MODE).unwrap();
        disk.rename(&names("/d/a"), &names("/e/a")).unwrap();
        let e = disk.resolve(&names("/e")).unwrap();
        disk.sync_dir(e);
        // The rename touched /d, so the creation of /d/a before it is settled too; the
        // creations of /d and /e in the root are not.
        assert_eq!(disk.dir_log.len(), 2);
        assert!(disk.dir_log.iter().all(|change| change.touches(ROOT)));
    }

    #[test]
    fn unreferenced_inodes_are_collected_but_pending_changes_keep_theirs() {
        let mut disk = Disk::default();
        disk.open(&names("/f"), CREATE).unwrap();
        disk.remove_file(&names("/f")).unwrap();
        // The creation and removal are pending: a crash could keep the creation alone.
        assert_eq!(disk.inodes.len(), 2);
        disk.sync_dir(ROOT);
        assert_eq!(disk.inodes.len(), 1);
    }

    #[test]
    fn namespace_errors_have_the_real_kinds() {
        use io::ErrorKind::*;
        let mut disk = Disk::default();
        disk.create_dir(&names("/d"), DIR_MODE).unwrap();
        disk.open(&names("/d/f"), CREATE).unwrap();
        let kind = |r: io::Result<()>| r.unwrap_err().kind();
        assert_eq!(kind(disk.create_dir(&names("/d"), DIR_MODE)), AlreadyExists);
        assert_eq!(kind(disk.remove_dir(&names("/d"))), DirectoryNotEmpty);
        assert_eq!(kind(disk.remove_file(&names("/d"))), IsADirectory);
        assert_eq!(kind(disk.remove_dir(&names("/d/f"))), NotADirectory);
        assert_eq!(kind(disk.remove_file(&names("/nope"))), NotFound);
        assert_eq!(
            kind(disk.create_dir(&names("/d/f/x"), DIR_MODE)),
            NotADirectory
        );
        assert_eq!(
            kind(disk.rename(&names("/d"), &names("/d/x"))),
            InvalidInput
        );
        assert_eq!(
            kind(disk.create_dir_all(&names("/d/f"), DIR_MODE)),
            AlreadyExists
        );
        assert_eq!(kind(disk.remove_dir(&names("/"))), ResourceBusy);
    }

    #[test]
    fn open_flags_are_checked_like_the_standard_library() {
        let mut disk = Disk::default();
        let flags = OpenFlags {
            read: true,
            create: true,
            ..OpenFlags::default()
        };
        let error = disk.open(&names("/f"), flags).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        let error = disk.open(&names("/f"), OpenFlags::default()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn paths_of_finds_every_live_name() {
        let mut disk = Disk::default();
        disk.create_dir(&names("/d"), DIR_MODE).unwrap();
        let ino = disk.open(&names("/d/f"), CREATE).unwrap();
        assert_eq!(disk.paths_of(ino), ["/d/f"]);
        disk.hard_link(&names("/d/f"), &names("/a")).unwrap();
        assert_eq!(disk.paths_of(ino), ["/a", "/d/f"]);
        assert_eq!(disk.paths_of(ROOT), ["/"]);
    }
}
