//! Faults injected while a disk runs: I/O errors, a full disk, sticky read corruption and
//! misdirected writes, with the zone budget that keeps damage to synced data recoverable.
//!
//! I/O errors and a full disk destroy nothing a program was promised, so they are not
//! bounded. Read corruption and misdirected writes damage data that may be synced, so they
//! are bounded (TigerBeetle's fault atlas, as a rule rather than a map): a file is cut into
//! zones of `zone_size` bytes; on one disk at most `max_damaged_zones` zones hold damage at
//! once, and the same zone (same path, same offset range) holds damage on at most
//! `max_damaged_replicas` nodes at once. A damaged sector heals when it is written again; a
//! zone is free again when all its sectors have healed. With the defaults, data kept in two
//! zones of one disk, or on two nodes, always has one intact copy.
//!
//! Read corruption is sticky, as on a real medium: the sector reads back with the same bit
//! flipped every time until it is overwritten. The sector and the bit are drawn from the
//! `disk-faults` stream like every other choice here, so they change with the seed and are
//! re-drawn when exploration re-seeds the run. Every decision is drawn whether or not it can
//! apply, so that masking a fault does not shift the draws after it: the corruption's coin
//! always, its sector and bit on every non-empty read while the fault is enabled, and a
//! misdirected write's landing on every non-empty write while that fault is enabled.
//!
//! Invariants: a corrupt sector always lies in a damaged zone (so healing the zone heals it),
//! a damaged zone holds at least one damaged sector, every flipped bit lies inside its file
//! (cutting a file, by a truncate or a crash that loses its growth, heals the sectors cut off
//! and the flips past the new end), and the budget holds after every new damage: [`may_damage`] decides, and [`assert_budget`] asserts that the world it left is
//! one the contract allows.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crashtest_core::node::NodeId;
use crashtest_core::rng::{Ratio, Rng};
use crashtest_core::verify;

use crate::config::Faults;
use crate::disk::{Disk, Ino};
use crate::page::SECTOR_SIZE;

/// The damage a disk's sectors hold.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    /// Sectors (file, sector index) that read back with a flipped bit, and that bit (an index
    /// into the sector's bits, below `SECTOR_BITS`).
    corrupt: BTreeMap<(Ino, u64), u64>,
    /// Damaged sectors, by zone (file, zone index).
    zones: BTreeMap<(Ino, u64), Zone>,
}

#[derive(Debug)]
struct Zone {
    /// The file's paths (one per hard link) when the zone was first damaged: zones match
    /// across nodes by path, and a file matches by any of its names.
    paths: Vec<String>,
    sectors: BTreeSet<u64>,
}

/// The bits of a sector: a flipped bit's index lies below it.
const SECTOR_BITS: u64 = SECTOR_SIZE * 8;

fn sectors_of(range: Range<u64>) -> Range<u64> {
    // An inverted range is empty too, and would hide an offset computed wrongly.
    assert!(
        range.start <= range.end,
        "the sectors of a well-formed range: {range:?}"
    );
    if range.is_empty() {
        return 0..0;
    }
    let sectors = range.start / SECTOR_SIZE..(range.end - 1) / SECTOR_SIZE + 1;
    assert!(
        sectors.start * SECTOR_SIZE <= range.start && range.end <= sectors.end * SECTOR_SIZE,
        "the sectors of a range cover it"
    );
    sectors
}

impl Damage {
    /// A write to `range` of `ino` heals the sectors it covers.
    pub(crate) fn heal(&mut self, ino: Ino, range: Range<u64>, zone_size: u64) {
        if self.zones.is_empty() {
            return;
        }
        // Zones are whole sectors, so each sector lies in exactly one zone.
        assert!(
            zone_size > 0 && zone_size.is_multiple_of(SECTOR_SIZE),
            "a zone is a non-zero number of sectors, not {zone_size} bytes"
        );
        for sector in sectors_of(range.clone()) {
            self.corrupt.remove(&(ino, sector));
            let key = (ino, sector * SECTOR_SIZE / zone_size);
            if let Some(zone) = self.zones.get_mut(&key) {
                zone.sectors.remove(&sector);
                if zone.sectors.is_empty() {
                    self.zones.remove(&key);
                }
            }
        }
        assert!(
            sectors_of(range.clone()).all(|sector| !self.corrupt.contains_key(&(ino, sector))),
            "a write heals every sector it covers"
        );
        assert!(
            sectors_of(range).all(|sector| {
                self.zones
                    .get(&(ino, sector * SECTOR_SIZE / zone_size))
                    .is_none_or(|zone| !zone.sectors.contains(&sector))
            }),
            "a healed sector counts against no zone"
        );
    }

    /// Flips the corrupt bits of the sectors a read of `buf` at `offset` returns.
    pub(crate) fn apply_to_read(&self, ino: Ino, offset: u64, buf: &mut [u8], file_len: u64) {
        if self.corrupt.is_empty() {
            return;
        }
        let end = offset + buf.len() as u64;
        assert!(
            buf.is_empty() || end <= file_len,
            "a read returns bytes of the file only"
        );
        for sector in sectors_of(offset..end) {
            let Some(&bit) = self.corrupt.get(&(ino, sector)) else {
                continue;
            };
            let start = sector * SECTOR_SIZE;
            assert!(
                start < file_len,
                "a read covers only sectors inside the file"
            );
            assert!(bit < SECTOR_BITS, "a flipped bit lies in its sector");
            let byte = start + bit / 8;
            assert!(
                byte < file_len,
                "a flipped bit lies inside its file: a cut heals what it cuts off"
            );
            if (offset..end).contains(&byte) {
                buf[(byte - offset) as usize] ^= 1 << (bit % 8);
            }
        }
    }

    /// `ino` was cut to `len` bytes: the sectors wholly past it are healed, and so is a flip
    /// past it in the sector it cuts (that sector stays counted in its zone, as it may also
    /// hold a misdirected write's stale bytes before the cut).
    pub(crate) fn cut(&mut self, ino: Ino, len: u64) {
        if self.zones.is_empty() {
            return;
        }
        let first_gone = len.div_ceil(SECTOR_SIZE);
        self.corrupt.retain(|&(file, sector), &mut bit| {
            file != ino || sector * SECTOR_SIZE + bit / 8 < len
        });
        self.zones.retain(|&(file, _), zone| {
            if file == ino {
                zone.sectors.retain(|&sector| sector < first_gone);
            }
            !zone.sectors.is_empty()
        });
        assert!(
            self.flipped_bytes()
                .all(|(file, byte)| file != ino || byte < len),
            "a cut heals every flip past the file's new end"
        );
        assert!(
            self.zones.iter().all(|(&(file, _), zone)| file != ino
                || zone.sectors.last().is_none_or(|&last| last < first_gone)),
            "a cut heals every sector wholly past the file's new end"
        );
    }

    /// Each flipped bit's file and byte offset.
    pub(crate) fn flipped_bytes(&self) -> impl Iterator<Item = (Ino, u64)> + '_ {
        self.corrupt
            .iter()
            .map(|(&(ino, sector), &bit)| (ino, sector * SECTOR_SIZE + bit / 8))
    }

    /// True if this disk holds damage in `zone` of a file named by any of `paths`.
    fn holds(&self, paths: &[String], zone: u64) -> bool {
        self.zones.iter().any(|(&(_, z), damaged)| {
            z == zone && damaged.paths.iter().any(|path| paths.contains(path))
        })
    }

    fn mark(&mut self, ino: Ino, zone: u64, paths: &[String], sectors: impl Iterator<Item = u64>) {
        assert!(
            !paths.is_empty() && paths.iter().all(|path| path.starts_with('/')),
            "a zone is named by its file's paths, not {paths:?}"
        );
        let damaged = &mut self
            .zones
            .entry((ino, zone))
            .or_insert_with(|| Zone {
                paths: paths.to_vec(),
                sectors: BTreeSet::new(),
            })
            .sectors;
        damaged.extend(sectors);
        assert!(!damaged.is_empty(), "a damaged zone holds a damaged sector");
    }

    /// Forgets the damage of inodes that no longer exist.
    pub(crate) fn forget_missing(&mut self, existing: &BTreeSet<Ino>) {
        self.corrupt.retain(|(ino, _), _| existing.contains(ino));
        self.zones.retain(|(ino, _), _| existing.contains(ino));
        assert!(
            self.zones.keys().all(|(ino, _)| existing.contains(ino)),
            "no damage outlives its file"
        );
        if verify::enabled() {
            assert!(
                self.corrupt.keys().all(|(ino, _)| existing.contains(ino)),
                "no corrupt sector outlives its file"
            );
        }
    }

    /// The inodes that hold damage.
    pub(crate) fn inodes(&self) -> impl Iterator<Item = Ino> + '_ {
        self.zones.keys().map(|&(ino, _)| ino)
    }

    /// Checks the module's invariants over all of this disk's damage (with the core's verify
    /// switch only).
    pub(crate) fn verify(&self) {
        if !verify::enabled() {
            return;
        }
        for zone in self.zones.values() {
            assert!(
                !zone.sectors.is_empty(),
                "a damaged zone holds a damaged sector"
            );
            assert!(
                !zone.paths.is_empty() && zone.paths.iter().all(|path| path.starts_with('/')),
                "a zone is named by its file's paths"
            );
        }
        for (&(ino, sector), &bit) in &self.corrupt {
            assert!(bit < SECTOR_BITS, "a flipped bit lies in its sector");
            assert!(
                self.zones
                    .iter()
                    .any(|(&(z_ino, _), zone)| z_ino == ino && zone.sectors.contains(&sector)),
                "corrupt sector {sector} of inode {ino} lies in a damaged zone"
            );
        }
    }
}

/// Asserts that the world is still one the contract allows after `node` took damage in `zone`
/// of `ino`: at most `max_damaged_zones` zones of its disk, and at most
/// `max_damaged_replicas` nodes holding damage in that zone of that path. A zone damaged
/// before (`existed`) may take more sectors whatever the budget says now (a later
/// configuration may have lowered it).
fn assert_budget(
    disks: &BTreeMap<NodeId, Disk>,
    node: NodeId,
    (ino, zone): (Ino, u64),
    existed: bool,
    faults: &Faults,
) {
    let damage = &disks[&node].damage;
    let paths = &damage
        .zones
        .get(&(ino, zone))
        .expect("the zone was just marked")
        .paths;
    if existed {
        return;
    }
    assert!(
        damage.zones.len() <= faults.max_damaged_zones,
        "a disk holds damage in {} zones, over the budget of {}",
        damage.zones.len(),
        faults.max_damaged_zones
    );
    let replicas = disks
        .values()
        .filter(|disk| disk.damage.holds(paths, zone))
        .count();
    assert!(
        replicas <= faults.max_damaged_replicas,
        "zone {zone} of {paths:?} is damaged on {replicas} nodes, over the budget of {}",
        faults.max_damaged_replicas
    );
}

/// Whether the budget lets `node` take damage in `zone` of `ino` (named by `paths`).
fn may_damage(
    disks: &BTreeMap<NodeId, Disk>,
    node: NodeId,
    ino: Ino,
    zone: u64,
    paths: &[String],
    faults: &Faults,
) -> bool {
    let damage = &disks[&node].damage;
    if damage.zones.contains_key(&(ino, zone)) {
        return true;
    }
    let replicas = disks
        .iter()
        .filter(|&(&other, disk)| other != node && disk.damage.holds(paths, zone))
        .count();
    damage.zones.len() < faults.max_damaged_zones && replicas < faults.max_damaged_replicas
}

/// If the read-corruption fault `fires`, marks one sector of `read` as corrupt, with one bit
/// flipped (budget allowing); returns the fault's description. The sector and the bit are
/// drawn from `rng` on every non-empty read while the fault is enabled, fired or not, so
/// that masking it leaves the draws after it where they were. A sector already corrupt keeps
/// its bit.
pub(crate) fn corrupt_on_read(
    disks: &mut BTreeMap<NodeId, Disk>,
    node: NodeId,
    ino: Ino,
    read: Range<u64>,
    fires: bool,
    faults: &Faults,
    rng: &mut Rng,
) -> Option<String> {
    if faults.read_corruption == Ratio::NEVER || read.is_empty() {
        return None;
    }
    let file_len = disks[&node].len(ino).ok()?;
    assert!(
        read.end <= file_len,
        "a read returns bytes of the file only"
    );
    let sectors = sectors_of(read);
    let sector = rng.range_inclusive(sectors.start, sectors.end - 1);
    assert!(
        sectors.contains(&sector),
        "the corrupt sector is one the read covers"
    );
    let start = sector * SECTOR_SIZE;
    let bits = (file_len.min(start + SECTOR_SIZE) - start) * 8;
    let bit = rng.below_inclusive(bits - 1);
    assert!(
        start + bit / 8 < file_len && bit < SECTOR_BITS,
        "the flipped bit lies in the file and in its sector"
    );
    if !fires {
        return None;
    }
    let zone = sector * SECTOR_SIZE / faults.zone_size;
    let paths = disks[&node].paths_of(ino);
    let path = paths.first()?.clone();
    if !may_damage(disks, node, ino, zone, &paths, faults) {
        return None;
    }
    let damage = &mut disks.get_mut(&node).expect("checked above").damage;
    let existed = damage.zones.contains_key(&(ino, zone));
    damage.corrupt.entry((ino, sector)).or_insert(bit);
    damage.mark(ino, zone, &paths, std::iter::once(sector));
    assert!(
        damage.zones[&(ino, zone)].sectors.contains(&sector),
        "a corrupt sector lies in a damaged zone"
    );
    assert_budget(disks, node, (ino, zone), existed, faults);
    Some(format!("read corruption: {path} sector {sector}"))
}

/// If the misdirection fault `fires`, sends the write meant for `write` to another offset of
/// the same zone (budget allowing); returns that offset and the fault's description. Only
/// writes inside the file are sent astray. Where it lands is drawn from `rng` (one `u64`) on
/// every non-empty write while the fault is enabled, fired or not, so that masking it leaves
/// the draws after it where they were.
pub(crate) fn misdirect(
    disks: &mut BTreeMap<NodeId, Disk>,
    node: NodeId,
    ino: Ino,
    write: Range<u64>,
    fires: bool,
    faults: &Faults,
    rng: &mut Rng,
) -> Option<(u64, String)> {
    if faults.misdirected_write == Ratio::NEVER || write.is_empty() {
        return None;
    }
    let pick = rng.next_u64();
    if !fires {
        return None;
    }
    let disk = &disks[&node];
    let file_len = disk.len(ino).ok()?;
    let len = write.end - write.start;
    let zone = write.start / faults.zone_size;
    let zone_start = zone * faults.zone_size;
    let zone_end = (zone_start + faults.zone_size).min(file_len);
    assert!(
        zone_start.is_multiple_of(SECTOR_SIZE) && zone_start <= write.start,
        "a write's zone starts on a sector boundary, at or before the write"
    );
    if write.end > zone_end {
        return None;
    }
    let candidates: Vec<u64> = (zone_start.div_ceil(SECTOR_SIZE)..)
        .map(|k| k * SECTOR_SIZE)
        .take_while(|start| start + len <= zone_end)
        .filter(|&start| start + len <= write.start || start >= write.end)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    // The high half of pick x count: uniform over the candidates, whatever their number, from
    // the one draw already made.
    let landed = candidates[((u128::from(pick) * candidates.len() as u128) >> 64) as usize];
    assert!(
        landed.is_multiple_of(SECTOR_SIZE) && zone_start <= landed && landed + len <= zone_end,
        "a misdirected write lands on a sector boundary inside its zone and its file"
    );
    assert!(
        landed + len <= write.start || landed >= write.end,
        "a misdirected write misses its target"
    );
    let paths = disk.paths_of(ino);
    let path = paths.first()?.clone();
    if !may_damage(disks, node, ino, zone, &paths, faults) {
        return None;
    }
    let damage = &mut disks.get_mut(&node).expect("checked above").damage;
    let existed = damage.zones.contains_key(&(ino, zone));
    for sector in sectors_of(landed..landed + len) {
        damage.corrupt.remove(&(ino, sector));
    }
    let stale = sectors_of(write.clone()).chain(sectors_of(landed..landed + len));
    assert!(
        stale
            .clone()
            .all(|sector| sector * SECTOR_SIZE / faults.zone_size == zone),
        "a misdirected write damages its own zone only, the one the budget allowed"
    );
    damage.mark(ino, zone, &paths, stale);
    assert_budget(disks, node, (ino, zone), existed, faults);
    let text = format!(
        "misdirected write: {path} {len} bytes meant for {} landed at {landed}",
        write.start
    );
    Some((landed, text))
}

/// Whether growing `ino` to `new_len` finds the disk full: over capacity, or `transient`ly
/// full (the drawn fault).
pub(crate) fn disk_full(
    disk: &Disk,
    ino: Ino,
    new_len: u64,
    transient: bool,
    faults: &Faults,
) -> bool {
    let current = disk.len(ino).unwrap_or(0);
    if new_len <= current {
        return false;
    }
    if transient {
        return true;
    }
    // The disk's usage is a walk over every file, taken only when a capacity can be reached:
    // an appending program grows a file on nearly every write.
    let Some(capacity) = faults.capacity else {
        return false;
    };
    let used = disk.used_bytes();
    assert!(used >= current, "the disk's usage includes this file");
    used - current + new_len > capacity
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::rng::Ratio;

    fn faults() -> Faults {
        Faults {
            read_corruption: Ratio::ALWAYS,
            misdirected_write: Ratio::ALWAYS,
            zone_size: 4096,
            ..Faults::default()
        }
    }

    fn node_ids(count: u32) -> Vec<NodeId> {
        let ids = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let out = ids.clone();
        crashtest_core::Sim::new(1)
            .run(async move {
                for n in 0..count {
                    let node = crashtest_core::node::create(format!("n{n}"), || async {});
                    out.borrow_mut().push(node.id());
                }
            })
            .unwrap();
        ids.take()
    }

    /// `nodes` disks, each with two 8 KiB files `/a` and `/b`.
    fn disks_with_files(nodes: u32) -> (BTreeMap<NodeId, Disk>, Vec<NodeId>, Ino, Ino) {
        use crate::disk::OpenFlags;
        use crate::path::Names;
        let flags = OpenFlags {
            write: true,
            create: true,
            ..OpenFlags::default()
        };
        let ids = node_ids(nodes);
        let mut disks = BTreeMap::new();
        let (mut a, mut b) = (0, 0);
        for &id in &ids {
            let mut disk = Disk::default();
            a = disk.open(&Names::new(vec!["a".into()]), flags).unwrap();
            b = disk.open(&Names::new(vec!["b".into()]), flags).unwrap();
            disk.write(a, 0, &[1; 8192]).unwrap();
            disk.write(b, 0, &[2; 8192]).unwrap();
            disks.insert(id, disk);
        }
        (disks, ids, a, b)
    }

    #[test]
    fn corruption_is_sticky_and_healed_by_a_write() {
        let (mut disks, ids, a, _) = disks_with_files(1);
        let mut rng = Rng::seed_from(1);
        let f = faults();
        let fault = corrupt_on_read(&mut disks, ids[0], a, 0..512, true, &f, &mut rng);
        assert!(fault.is_some());
        let disk = &disks[&ids[0]];
        let mut first = [0u8; 512];
        disk.read(a, 0, &mut first).unwrap();
        disk.damage.apply_to_read(a, 0, &mut first, 8192);
        let mut second = [0u8; 512];
        disk.read(a, 0, &mut second).unwrap();
        disk.damage.apply_to_read(a, 0, &mut second, 8192);
        assert_eq!(first, second, "the same bit reads back flipped");
        assert_eq!(first.iter().filter(|&&b| b != 1).count(), 1);
        let disk = disks.get_mut(&ids[0]).unwrap();
        disk.damage.heal(a, 0..10, f.zone_size);
        let mut healed = [0u8; 512];
        disk.read(a, 0, &mut healed).unwrap();
        disk.damage.apply_to_read(a, 0, &mut healed, 8192);
        assert!(healed.iter().all(|&b| b == 1));
    }

    #[test]
    fn one_disk_holds_damage_in_one_zone_at_a_time() {
        let (mut disks, ids, a, b) = disks_with_files(1);
        let mut rng = Rng::seed_from(2);
        let f = faults();
        assert!(corrupt_on_read(&mut disks, ids[0], a, 0..512, true, &f, &mut rng).is_some());
        // Same zone: allowed. Another zone of the same file, or another file: refused.
        assert!(corrupt_on_read(&mut disks, ids[0], a, 512..1024, true, &f, &mut rng).is_some());
        assert!(corrupt_on_read(&mut disks, ids[0], a, 4096..4608, true, &f, &mut rng).is_none());
        assert!(corrupt_on_read(&mut disks, ids[0], b, 0..512, true, &f, &mut rng).is_none());
        assert!(misdirect(&mut disks, ids[0], b, 0..512, true, &f, &mut rng).is_none());
    }

    #[test]
    fn one_zone_is_damaged_on_one_node_at_a_time() {
        let (mut disks, ids, a, _) = disks_with_files(2);
        let mut rng = Rng::seed_from(3);
        let f = faults();
        assert!(corrupt_on_read(&mut disks, ids[0], a, 0..512, true, &f, &mut rng).is_some());
        assert!(corrupt_on_read(&mut disks, ids[1], a, 0..512, true, &f, &mut rng).is_none());
        assert!(corrupt_on_read(&mut disks, ids[1], a, 4096..4608, true, &f, &mut rng).is_some());
    }

    #[test]
    fn a_misdirected_write_lands_elsewhere_in_its_zone() {
        let (mut disks, ids, _, b) = disks_with_files(1);
        let mut rng = Rng::seed_from(4);
        let (landed, _) = misdirect(&mut disks, ids[0], b, 1024..1536, true, &faults(), &mut rng)
            .expect("the zone has room");
        assert!(landed + 512 <= 1024 || landed >= 1536);
        assert!(landed + 512 <= 4096 && landed % SECTOR_SIZE == 0);
    }

    #[test]
    fn a_misdirection_draws_the_same_whether_it_fires_or_is_masked() {
        let (mut disks, ids, _, b) = disks_with_files(1);
        let mut fired = Rng::seed_from(5);
        let mut masked = Rng::seed_from(5);
        assert!(misdirect(&mut disks, ids[0], b, 0..512, false, &faults(), &mut masked).is_none());
        assert!(misdirect(&mut disks, ids[0], b, 0..512, true, &faults(), &mut fired).is_some());
        assert_eq!(
            fired.next_u64(),
            masked.next_u64(),
            "the draws after a misdirection do not depend on whether it applied"
        );
    }

    #[test]
    fn a_full_disk_refuses_growth_only() {
        let (disks, ids, a, _) = disks_with_files(1);
        let f = Faults {
            capacity: Some(16384),
            ..Faults::default()
        };
        let disk = &disks[&ids[0]];
        assert!(!disk_full(disk, a, 8192, true, &f));
        assert!(disk_full(disk, a, 8193, false, &f));
        assert!(!disk_full(disk, a, 100, false, &f));
    }
}
