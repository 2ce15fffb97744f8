//! The page cache's geometry: 4096-byte pages of 512-byte sectors, aligned to file offsets.
//!
//! A crash walks an unsynced write page by page and a damaged page sector by sector
//! (FoundationDB's `AsyncFileNonDurable`). Boundaries follow the file offset, so a write that
//! starts or ends inside a page yields a partial first or last piece; a piece never extends
//! past the write, which is what keeps a crash from damaging bytes no unsynced write touched
//! ("powersafe overwrite").

use std::ops::Range;

/// Bytes in a page of the page cache.
pub(crate) const PAGE_SIZE: u64 = 4096;
/// Bytes in a sector, the unit a device writes atomically (or tears).
pub(crate) const SECTOR_SIZE: u64 = 512;

// Sectors tile pages exactly, so a page's pieces are whole sectors except at a write's ends.
const _: () = assert!(SECTOR_SIZE.is_power_of_two() && PAGE_SIZE.is_multiple_of(SECTOR_SIZE));

/// Splits `range` at every multiple of `unit` (file offsets), in order.
pub(crate) fn pieces(range: Range<u64>, unit: u64) -> impl Iterator<Item = Range<u64>> {
    assert!(unit > 0, "a piece has a non-zero size");
    assert!(
        range.start <= range.end,
        "pieces of a well-formed range: {range:?}"
    );
    let mut start = range.start;
    std::iter::from_fn(move || {
        if start >= range.end {
            return None;
        }
        let boundary = (start / unit + 1) * unit;
        let end = boundary.min(range.end);
        let piece = start..end;
        assert!(!piece.is_empty(), "a piece holds at least one byte");
        assert_eq!(
            piece.start / unit,
            (piece.end - 1) / unit,
            "a piece never crosses a boundary"
        );
        start = end;
        Some(piece)
    })
}

/// Writes `bytes` into `content` at `offset`, filling any gap past the end with zeros.
pub(crate) fn write_into(content: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let start = usize::try_from(offset).expect("a file offset fits in memory");
    let end = start + bytes.len();
    if content.len() < end {
        content.resize(end, 0);
    }
    content[start..end].copy_from_slice(bytes);
    assert!(content.len() >= end, "the content holds the bytes written");
}

/// Sets the length of `content`, cutting it or filling it with zeros.
pub(crate) fn set_len(content: &mut Vec<u8>, len: u64) {
    content.resize(
        usize::try_from(len).expect("a file length fits in memory"),
        0,
    );
    assert_eq!(content.len() as u64, len, "the content has the length set");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_at_aligned_boundaries_and_stay_inside_the_range() {
        let got: Vec<_> = pieces(100..9000, PAGE_SIZE).collect();
        assert_eq!(got, [100..4096, 4096..8192, 8192..9000]);
        let got: Vec<_> = pieces(512..1100, SECTOR_SIZE).collect();
        assert_eq!(got, [512..1024, 1024..1100]);
        assert_eq!(pieces(5..5, SECTOR_SIZE).count(), 0);
    }

    #[test]
    fn write_into_fills_gaps_with_zeros() {
        let mut content = vec![1, 2];
        write_into(&mut content, 4, &[9]);
        assert_eq!(content, [1, 2, 0, 0, 9]);
        write_into(&mut content, 1, &[7]);
        assert_eq!(content, [1, 7, 0, 0, 9]);
    }
}
