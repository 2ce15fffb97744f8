//! A first-in, first-out queue of bytes in fixed-size chunks: a TCP pipe's buffer.
//!
//! A `VecDeque<u8>` doubles and copies everything queued each time it fills, and a stream
//! buffer fills from empty to its limit (256 KiB by default) at the start of every busy
//! connection: in the fanout benchmark the copies were a twentieth of all instructions.
//! Chunks never move once full: writing appends to the last chunk (or a new one), reading
//! drains the first and hands an emptied chunk back for reuse.
//!
//! A chunk is a `Vec<u8>` filled by appending, never a zeroed array: most connections carry
//! a few small messages and close (raft-kv opens one per request), and zeroing a fresh 4 KiB
//! chunk for each was a tenth of raft-kv's instructions. A chunk's capacity grows by
//! doubling from what the first write needs up to `CHUNK`, so a short message costs a short
//! allocation and a busy stream still settles on whole chunks.
//!
//! Invariant: the queued bytes are `len` bytes starting at offset `head` of the first chunk,
//! running on through the following chunks; `head < CHUNK`, every chunk but the last holds
//! exactly `CHUNK` bytes, and the last holds `head + len` rounded back to its chunk.

use std::collections::VecDeque;

/// Bytes per chunk.
const CHUNK: usize = 4096;

/// The least capacity a fresh chunk starts with: below it, doubling costs more reallocations
/// than it saves memory.
const FIRST_CAPACITY: usize = 64;

/// A chunk's bytes, written and not yet drained past (its length is how far it is filled).
type Chunk = Vec<u8>;

#[derive(Default)]
pub(crate) struct ByteQueue {
    chunks: VecDeque<Chunk>,
    head: usize,
    len: usize,
    /// One emptied chunk kept for the next write, so that a steady stream allocates nothing.
    spare: Option<Chunk>,
}

impl std::fmt::Debug for ByteQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteQueue")
            .field("len", &self.len)
            .field("chunks", &self.chunks.len())
            .finish_non_exhaustive()
    }
}

impl ByteQueue {
    /// Bytes queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `bytes`.
    pub(crate) fn extend(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = self.head + self.len;
            let (chunk, offset) = (end / CHUNK, end % CHUNK);
            if chunk == self.chunks.len() {
                let fresh = match self.spare.take() {
                    Some(mut spare) => {
                        spare.clear();
                        spare
                    }
                    None => Vec::new(),
                };
                self.chunks.push_back(fresh);
            }
            let n = bytes.len().min(CHUNK - offset);
            let last = &mut self.chunks[chunk];
            assert_eq!(
                last.len(),
                offset,
                "the last chunk is filled up to the queue's end"
            );
            if last.capacity() < offset + n {
                let grown = (offset + n)
                    .max(2 * last.capacity())
                    .clamp(FIRST_CAPACITY, CHUNK);
                last.reserve_exact(grown - offset);
            }
            last.extend_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
    }

    /// Calls `sink` with the first `n` queued bytes, in order, a slice per chunk, then
    /// removes them.
    ///
    /// # Panics
    ///
    /// Panics if fewer than `n` bytes are queued.
    pub(crate) fn drain_into(&mut self, mut n: usize, mut sink: impl FnMut(&[u8])) {
        assert!(n <= self.len, "drained {n} bytes of {}", self.len);
        while n > 0 {
            let take = n.min(CHUNK - self.head);
            sink(&self.chunks[0][self.head..self.head + take]);
            self.consume(take);
            n -= take;
        }
    }

    /// Calls `sink` with the first `n` queued bytes, in order, a slice per chunk, and leaves
    /// them queued (a peek).
    ///
    /// # Panics
    ///
    /// Panics if fewer than `n` bytes are queued.
    pub(crate) fn copy_into(&self, n: usize, mut sink: impl FnMut(&[u8])) {
        assert!(n <= self.len, "copied {n} bytes of {}", self.len);
        let (mut left, mut start) = (n, self.head);
        for chunk in &self.chunks {
            if left == 0 {
                break;
            }
            let take = left.min(CHUNK - start);
            sink(&chunk[start..start + take]);
            left -= take;
            start = 0;
        }
        assert_eq!(left, 0, "the chunks hold every queued byte");
    }

    /// Removes the first `n` queued bytes.
    pub(crate) fn drain(&mut self, n: usize) {
        self.drain_into(n, |_| {});
    }

    /// Removes everything.
    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.head = 0;
        self.len = 0;
        assert!(self.chunks.is_empty(), "a cleared queue holds no chunk");
    }

    fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len && self.head + n <= CHUNK);
        self.head += n;
        self.len -= n;
        if self.head == CHUNK || self.len == 0 {
            // The first chunk is used up (or holds nothing queued): start over at the next
            // one, or at the start of this one if it is the last.
            if self.head == CHUNK || self.chunks.len() > 1 {
                self.spare = self.chunks.pop_front();
            } else {
                self.chunks[0].clear();
            }
            self.head = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_sees_what_a_drain_takes_and_leaves_it_queued() {
        let mut queue = ByteQueue::default();
        let bytes: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        queue.extend(&bytes);
        queue.drain(CHUNK - 5);
        for n in [0, 1, 5, 6, CHUNK, 2 * CHUNK + 22] {
            let mut copied = Vec::new();
            queue.copy_into(n, |part| copied.extend_from_slice(part));
            assert_eq!(copied, bytes[CHUNK - 5..CHUNK - 5 + n], "{n} bytes");
            assert_eq!(queue.len(), 2 * CHUNK + 22, "a copy takes nothing");
        }
        let mut drained = Vec::new();
        queue.drain_into(queue.len(), |part| drained.extend_from_slice(part));
        assert_eq!(drained, bytes[CHUNK - 5..]);
    }

    #[test]
    fn matches_a_byte_deque_under_random_writes_and_reads() {
        let mut rng = crashtest_core::rng::Rng::seed_from(4);
        let mut queue = ByteQueue::default();
        let mut model: VecDeque<u8> = VecDeque::new();
        let mut next = 0u8;
        for _ in 0..20_000 {
            if rng.boolean() {
                let n = rng.range_inclusive(0, 3 * CHUNK as u64) as usize;
                let bytes: Vec<u8> = (0..n)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect();
                queue.extend(&bytes);
                model.extend(&bytes);
            } else {
                let n = rng.range_inclusive(0, model.len() as u64) as usize;
                let mut got = Vec::new();
                queue.drain_into(n, |slice| got.extend_from_slice(slice));
                let want: Vec<u8> = model.drain(..n).collect();
                assert_eq!(got, want);
            }
            assert_eq!(queue.len(), model.len());
            assert!(queue.chunks.len() <= model.len().div_ceil(CHUNK) + 1);
        }
        queue.clear();
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn a_short_stream_takes_a_short_chunk_and_a_long_one_whole_chunks() {
        let mut queue = ByteQueue::default();
        queue.extend(&[7; 100]);
        assert!(
            queue.chunks[0].capacity() < CHUNK,
            "100 bytes took a whole chunk"
        );
        queue.extend(&[8; 2 * CHUNK]);
        assert_eq!(queue.chunks.len(), 3);
        assert!(queue.chunks.iter().all(|chunk| chunk.capacity() <= CHUNK));
        let mut got = Vec::new();
        queue.drain_into(queue.len(), |slice| got.extend_from_slice(slice));
        assert_eq!(got.len(), 100 + 2 * CHUNK);
        assert!(got[..100].iter().all(|&b| b == 7) && got[100..].iter().all(|&b| b == 8));
    }
}
