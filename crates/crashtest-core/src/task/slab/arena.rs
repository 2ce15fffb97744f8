//! Memory for task cells: the task table's own allocator, and the pointer a cell lives behind.
//!
//! A simulation spawns and finishes tasks at a high rate, and the general-purpose allocator
//! is slow for that pattern: a burst of a million small allocations comes from its slow path,
//! and freeing them in another order makes it consolidate. The arena instead carves cells out
//! of 64 KiB chunks in size classes and keeps a free list per class, so a spawn and a join
//! each cost a few instructions and memory is reused at once. Chunks come from and go back to
//! `spare`, so the next run on the thread reuses them too.
//!
//! Classes are 8 bytes apart for cells aligned to at most 8 (nearly all futures), and 16 apart,
//! in classes of their own, for cells aligned to 16. The finer step matters: a run's cells
//! are most of the memory it streams through, and a cell's stage tag usually spills a few
//! bytes past a multiple of 16 (a 64-byte future takes a 72-byte cell).
//!
//! A [`CellBox`] is where a cell lives: in the arena when its layout fits a class (at most
//! [`MAX_POOLED`] bytes, alignment at most 16), on the heap otherwise. The home follows from
//! the cell's layout alone, so the pointer needs no tag and fits in two words.
//!
//! Invariants:
//! - Arena memory is never handed out twice: a block is on its class's free list, or behind
//!   exactly one `CellBox`, or neither (its cell was dropped without giving it back; it
//!   returns with the arena).
//! - No `CellBox` in the arena outlives the arena: cells live in the task table, which owns
//!   the arena and drops its slots first, or for the length of one call of the world.

use std::alloc::Layout;
use std::pin::Pin;
use std::ptr::NonNull;

use super::spare;
use crashtest_hooks::{RawTask, TaskCell};

/// The step between the classes of cells aligned to at most 8 bytes (and their alignment).
const FINE: usize = 8;
/// The step between the classes of cells aligned to 16 bytes (and their alignment).
const COARSE: usize = 16;
const _: () = assert!(spare::CHUNK_ALIGN >= COARSE && spare::CHUNK.is_multiple_of(COARSE));
/// The largest cell the arena holds; larger ones go to the heap.
pub(crate) const MAX_POOLED: usize = 512;
/// Classes `0..FINE_CLASSES` step by [`FINE`]; the rest, for 16-aligned cells, by [`COARSE`].
const FINE_CLASSES: usize = MAX_POOLED / FINE;
const CLASSES: usize = FINE_CLASSES + MAX_POOLED / COARSE;
// A free block holds the next free block's address in its first word: the smallest block
// must have room for it, at its alignment.
const _: () = assert!(size_of::<Option<NonNull<u8>>>() <= FINE);
const _: () = assert!(align_of::<Option<NonNull<u8>>>() <= FINE);
// The largest class's block fits a chunk, and the coarse classes end where the fine do.
const _: () = assert!(MAX_POOLED <= spare::CHUNK && MAX_POOLED.is_multiple_of(COARSE));
// A `CellBox` is a fat pointer and nothing more (see the module docs).
const _: () = assert!(size_of::<CellBox>() == 2 * size_of::<usize>());

/// The size class of a layout, or `None` if it does not fit the arena.
#[inline]
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(1);
    if size > MAX_POOLED {
        return None;
    }
    match layout.align() {
        align if align <= FINE => Some(size.div_ceil(FINE) - 1),
        COARSE => Some(FINE_CLASSES + size.div_ceil(COARSE) - 1),
        _ => None,
    }
}

/// The size and alignment of a class's blocks.
#[inline]
fn block_layout(class: usize) -> (usize, usize) {
    debug_assert!(class < CLASSES);
    if class < FINE_CLASSES {
        ((class + 1) * FINE, FINE)
    } else {
        ((class - FINE_CLASSES + 1) * COARSE, COARSE)
    }
}

/// A block of arena memory whose cell was dropped, to be given back to its class.
#[derive(Debug)]
pub(crate) struct FreedBlock {
    ptr: NonNull<u8>,
    class: usize,
}

/// Size-classed memory for task cells.
#[derive(Debug)]
pub(crate) struct CellArena {
    /// Per class, the first block ready for reuse; each free block holds the next one's
    /// address in its first word (an intrusive list: freeing costs no memory of its own).
    free: [Option<NonNull<u8>>; CLASSES],
    /// Every chunk taken from the heap, freed when the arena drops.
    chunks: Vec<NonNull<u8>>,
    /// Unused bytes at the end of the newest chunk: `[next, next + left)`.
    next: Option<NonNull<u8>>,
    left: usize,
}

impl Default for CellArena {
    fn default() -> CellArena {
        CellArena {
            free: [None; CLASSES],
            chunks: Vec::new(),
            next: None,
            left: 0,
        }
    }
}

impl CellArena {
    /// Moves `cell` into the arena (or onto the heap if it does not fit a class).
    #[inline]
    pub(crate) fn alloc<C: TaskCell + 'static>(&mut self, cell: C) -> CellBox {
        let layout = Layout::new::<C>();
        let Some(class) = class_of(layout) else {
            let ptr: *mut dyn TaskCell = Box::into_raw(Box::new(cell));
            return CellBox {
                ptr: NonNull::new(ptr).expect("a box is never null"),
            };
        };
        // The block must cover the cell (a constant per cell type: this costs nothing).
        let (size, align) = block_layout(class);
        assert!(size >= layout.size() && align >= layout.align());
        let block = self.block(class).cast::<C>();
        // SAFETY: `block` is fresh or reused arena memory of the size and alignment of
        // `class`'s blocks, which `class_of` chose to cover `C`'s size and alignment; no other
        // `CellBox` points to it (invariant), so writing is exclusive.
        unsafe { block.as_ptr().write(cell) };
        let ptr: *mut dyn TaskCell = block.as_ptr();
        CellBox {
            ptr: NonNull::new(ptr).expect("an arena block is never null"),
        }
    }

    /// Moves a cell handed over as bytes (the tokio stand-in's) into the arena (or onto the
    /// heap if it does not fit a class): one copy, where a typed `alloc` of a cell the core
    /// cannot name is impossible.
    #[inline]
    pub(crate) fn alloc_raw(&mut self, task: RawTask<'_>) -> CellBox {
        let layout = task.layout();
        let Some(class) = class_of(layout) else {
            // The cell is freed as a `Box` of its type (see `drop_in_place`): a block of the
            // cell's own layout from the global allocator, or, for a cell of no size, an
            // aligned dangling pointer, which such a box frees nothing for.
            let block = if layout.size() == 0 {
                NonNull::new(std::ptr::without_provenance_mut(layout.align()))
                    .expect("an alignment is not zero")
            } else {
                // SAFETY: the layout's size is not zero.
                let raw = unsafe { std::alloc::alloc(layout) };
                NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
            };
            // SAFETY: the block is fresh, of the cell's layout, and does not overlap the
            // spawner's bytes.
            let ptr = unsafe { task.move_to(block) };
            return CellBox { ptr };
        };
        // The block must cover the cell, as in `alloc`.
        let (size, align) = block_layout(class);
        assert!(size >= layout.size() && align >= layout.align());
        let block = self.block(class);
        // SAFETY: `block` is fresh or reused arena memory of the size and alignment of
        // `class`'s blocks, which cover the cell's, and no other `CellBox` points to it
        // (invariant).
        let ptr = unsafe { task.move_to(block) };
        CellBox { ptr }
    }

    /// A block of `class`, reused or carved from the newest chunk.
    #[inline]
    fn block(&mut self, class: usize) -> NonNull<u8> {
        if let Some(block) = self.free[class] {
            // SAFETY: a block on a free list is arena memory no `CellBox` points to, whose
            // first word `give_back` set to the next free block.
            self.free[class] = unsafe { block.cast::<Option<NonNull<u8>>>().read() };
            // A block on the list of its class was carved for it: aligned as the class is.
            debug_assert!((block.as_ptr() as usize).is_multiple_of(block_layout(class).1));
            // So is the next one its first word names, unless a cell wrote to its block after
            // giving it back (a use after free).
            debug_assert!(
                self.free[class].is_none_or(
                    |next| (next.as_ptr() as usize).is_multiple_of(block_layout(class).1)
                ),
                "the free list of class {class} is corrupt"
            );
            return block;
        }
        let (size, align) = block_layout(class);
        // A coarse class's block may need the cursor moved up to its alignment; the bytes
        // skipped are not used again until the chunk is.
        let mut skip = self
            .next
            .map_or(0, |next| next.as_ptr().align_offset(align));
        if self.left < size + skip {
            self.new_chunk();
            skip = 0;
        }
        let next = self.next.expect("a chunk was just taken");
        // SAFETY: `left >= skip + size`, so `next + skip + size` stays within (or one past the
        // end of) the chunk the bytes are carved from.
        let (block, end) = unsafe { (next.add(skip), next.add(skip + size)) };
        self.next = Some(end);
        self.left -= skip + size;
        debug_assert!((block.as_ptr() as usize).is_multiple_of(align));
        assert!(self.left <= spare::CHUNK, "carved past the end of a chunk");
        block
    }

    #[cold]
    fn new_chunk(&mut self) {
        // A new chunk is taken only when the newest cannot fit the largest block asked for.
        assert!(self.left < spare::CHUNK, "a fresh chunk was left unused");
        let chunk = spare::new_chunk();
        // Blocks are carved at the cursor, aligned only by the chunk's own alignment.
        assert!((chunk.as_ptr() as usize).is_multiple_of(spare::CHUNK_ALIGN));
        self.chunks.push(chunk);
        self.next = Some(chunk);
        self.left = spare::CHUNK;
    }

    /// Takes a dropped cell's block back for reuse.
    #[inline]
    pub(crate) fn give_back(&mut self, block: FreedBlock) {
        // The same block given back twice in a row would sit on its list twice and be handed
        // to two cells; the head is the one such repeat that costs nothing to catch.
        assert_ne!(
            self.free[block.class],
            Some(block.ptr),
            "an arena block was given back twice"
        );
        if crate::verify::enabled() {
            let address = block.ptr.as_ptr() as usize;
            assert!(
                self.chunks.iter().any(|chunk| {
                    let start = chunk.as_ptr() as usize;
                    (start..start + spare::CHUNK).contains(&address)
                }),
                "a block given back to an arena that did not carve it"
            );
        }
        // SAFETY: the block is arena memory of at least `FINE` bytes, aligned to `FINE`,
        // whose cell was dropped and which no `CellBox` points to any more.
        unsafe {
            block
                .ptr
                .cast::<Option<NonNull<u8>>>()
                .write(self.free[block.class])
        };
        self.free[block.class] = Some(block.ptr);
    }

    /// Drops a cell whose destructor runs no user code (a finished task whose output was
    /// taken) and takes its block back, in one step under the table's borrow.
    #[inline]
    pub(crate) fn recycle(&mut self, cell: CellBox) {
        if let Some(block) = cell.drop_in_place() {
            self.give_back(block);
        }
    }
}

impl CellArena {
    /// Checks every free list (O(n), behind the verify switch): each block lies in a chunk
    /// of this arena, aligned as its class is, and no block is free twice (it would be handed
    /// to two cells).
    fn verify(&self) {
        // Blocks are carved at the cursor, which lies in the newest chunk with `left` bytes
        // to its end.
        if let (Some(next), Some(newest)) = (self.next, self.chunks.last()) {
            let (next, start) = (next.as_ptr() as usize, newest.as_ptr() as usize);
            assert_eq!(
                next + self.left,
                start + spare::CHUNK,
                "the arena's cursor left its chunk"
            );
        }
        let mut starts: Vec<usize> = self.chunks.iter().map(|c| c.as_ptr() as usize).collect();
        starts.sort_unstable();
        let mut free = Vec::new();
        for (class, &head) in self.free.iter().enumerate() {
            let (size, align) = block_layout(class);
            let mut next = head;
            while let Some(block) = next {
                let address = block.as_ptr() as usize;
                let chunk = starts.partition_point(|&start| start <= address);
                assert!(chunk > 0, "a free block below every chunk");
                let start = starts[chunk - 1];
                assert!(
                    address + size <= start + spare::CHUNK,
                    "a free block past its chunk"
                );
                assert!(
                    address.is_multiple_of(align),
                    "a free block of class {class} misaligned"
                );
                free.push(address);
                // SAFETY: a block on a free list holds the next free block's address in its
                // first word (`give_back`).
                next = unsafe { block.cast::<Option<NonNull<u8>>>().read() };
            }
        }
        let listed = free.len();
        free.sort_unstable();
        free.dedup();
        assert_eq!(free.len(), listed, "an arena block is free twice");
    }
}

impl Drop for CellArena {
    fn drop(&mut self) {
        // Not while a panic unwinds: a check that failed mid-change has said what broke.
        if crate::verify::enabled() && !std::thread::panicking() {
            self.verify();
        }
        for chunk in self.chunks.drain(..) {
            // SAFETY: every chunk came from `spare::new_chunk`, and no cell in it is used any
            // more (invariant: no `CellBox` outlives the arena).
            unsafe { spare::drop_chunk(chunk) };
        }
    }
}

/// An owned task cell, in the arena or on the heap (see the module docs). Dropping it drops
/// the cell; only [`CellBox::drop_in_place`] also gives an arena block back for reuse.
pub(crate) struct CellBox {
    ptr: NonNull<dyn TaskCell>,
}

impl std::fmt::Debug for CellBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellBox").finish_non_exhaustive()
    }
}

impl CellBox {
    /// Starts loading the cell's first cache line (see `prefetch`): a task woken now is
    /// polled a few polls later, and its future is then in cache instead of a miss on the
    /// poll's critical path.
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch(self.ptr.as_ptr());
    }

    /// The cell, pinned: it never moves while the `CellBox` lives.
    #[inline]
    pub(crate) fn as_mut(&mut self) -> Pin<&mut dyn TaskCell> {
        // SAFETY: the `CellBox` owns a live cell at `ptr` (written by `CellArena::alloc` or
        // `alloc_raw`,
        // dropped only by consuming the box), `&mut self` makes this borrow exclusive, and
        // the cell's memory never moves until it is dropped, as `Pin` requires.
        unsafe { Pin::new_unchecked(self.ptr.as_mut()) }
    }

    /// The class of the cell's arena block, or `None` if it lives on the heap.
    fn class(&self) -> Option<usize> {
        // SAFETY: the cell is live (see `as_mut`); reading its size and alignment through the
        // vtable does not touch its contents.
        let layout = unsafe { Layout::for_value(self.ptr.as_ref()) };
        class_of(layout)
    }

    /// Drops the cell, which may run user code (a future's or an output's destructor), and
    /// returns its arena block to give back, if it has one.
    pub(crate) fn drop_in_place(self) -> Option<FreedBlock> {
        let class = self.class();
        let ptr = self.ptr;
        std::mem::forget(self);
        match class {
            Some(class) => {
                // The cell sits where `alloc` or `alloc_raw` put it: in a block of its class.
                debug_assert!(
                    (ptr.as_ptr().cast::<u8>() as usize).is_multiple_of(block_layout(class).1)
                );
                // SAFETY: the cell is live and owned by the consumed box (forgotten above, so
                // it is dropped exactly once); its arena memory outlives this call.
                unsafe { std::ptr::drop_in_place(ptr.as_ptr()) };
                Some(FreedBlock {
                    ptr: ptr.cast(),
                    class,
                })
            }
            None => {
                // SAFETY: a cell that fits no class was allocated on the heap by `Box::new`
                // in `CellArena::alloc`, or as a `Box` of it would be in `alloc_raw` (with its
                // own layout by the global allocator, or dangling if it has no size), and the
                // consumed box owned it.
                drop(unsafe { Box::from_raw(ptr.as_ptr()) });
                None
            }
        }
    }
}

impl Drop for CellBox {
    fn drop(&mut self) {
        let this = CellBox { ptr: self.ptr };
        // The block, if any, returns to the heap with the arena's chunks.
        let _ = this.drop_in_place();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_hooks::FutureCell as Cell;
    use std::future::Future;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    fn poll(cell: &mut CellBox) -> Poll<()> {
        cell.as_mut()
            .poll_task(&mut Context::from_waker(Waker::noop()))
    }

    /// A future that completes at once with its payload, and counts its drops.
    fn ready<T: 'static>(value: T, drops: &Rc<()>) -> impl Future<Output = T> + 'static {
        let guard = Rc::clone(drops);
        async move {
            let _guard = guard;
            value
        }
    }

    #[test]
    fn cells_of_every_size_round_trip_their_outputs() {
        let mut arena = CellArena::default();
        let drops = Rc::new(());
        let mut small = arena.alloc(Cell::new(ready(7u8, &drops)));
        let mut large = arena.alloc(Cell::new(ready([9u64; 200], &drops)));
        assert_eq!(Rc::strong_count(&drops), 3);
        assert!(small.class().is_some() && large.class().is_none());
        assert!(poll(&mut small).is_ready() && poll(&mut large).is_ready());
        assert_eq!(Rc::strong_count(&drops), 1, "completing drops the futures");
        let out = small.as_mut().output().downcast_mut::<Option<u8>>();
        assert_eq!(out.unwrap().take(), Some(7));
        let out = large.as_mut().output().downcast_mut::<Option<[u64; 200]>>();
        assert_eq!(out.unwrap().take(), Some([9; 200]));
        arena.recycle(small);
        arena.recycle(large);
    }

    #[test]
    fn classes_step_by_eight_and_keep_sixteen_byte_alignment() {
        assert_eq!(
            class_of(Layout::new::<[u8; 24]>()),
            class_of(Layout::new::<[u64; 3]>())
        );
        assert_ne!(
            class_of(Layout::new::<[u64; 3]>()),
            class_of(Layout::new::<[u64; 4]>())
        );
        assert_eq!(
            block_layout(class_of(Layout::new::<[u64; 9]>()).unwrap()),
            (72, 8)
        );
        let wide = class_of(Layout::new::<[u128; 2]>()).unwrap();
        assert_eq!(block_layout(wide), (32, 16));
        let mut arena = CellArena::default();
        let drops = Rc::new(());
        let mut cells = Vec::new();
        for i in 0..2_000u64 {
            // Odd 8-aligned sizes between the 16-aligned cells push the cursor off 16.
            cells.push(arena.alloc(Cell::new(ready([i; 3], &drops))));
            let mut wide = arena.alloc(Cell::new(ready(u128::from(i), &drops)));
            assert!((wide.ptr.cast::<u8>().as_ptr() as usize).is_multiple_of(16));
            assert!(poll(&mut wide).is_ready());
            let out = wide.as_mut().output().downcast_mut::<Option<u128>>();
            assert_eq!(out.unwrap().take(), Some(u128::from(i)));
            cells.push(wide);
        }
        for cell in cells {
            arena.recycle(cell);
        }
        assert_eq!(Rc::strong_count(&drops), 1);
    }

    #[test]
    fn fine_and_sixteen_aligned_blocks_of_one_size_are_reused_apart() {
        let mut arena = CellArena::default();
        let drops = Rc::new(());
        let fine_cell = || Cell::new(ready([1u64; 3], &drops));
        let wide_cell = || Cell::new(ready(1u128, &drops));
        let fine = arena.alloc(fine_cell());
        let wide = arena.alloc(wide_cell());
        let (fine_at, wide_at) = (fine.ptr.cast::<u8>(), wide.ptr.cast::<u8>());
        assert_eq!(fine.class().map(block_layout), Some((48, 8)));
        assert_eq!(wide.class().map(block_layout), Some((48, 16)));
        arena.recycle(fine);
        arena.recycle(wide);
        let wide = arena.alloc(wide_cell());
        let fine = arena.alloc(fine_cell());
        assert_eq!(wide.ptr.cast::<u8>(), wide_at);
        assert_eq!(fine.ptr.cast::<u8>(), fine_at);
        arena.recycle(fine);
        arena.recycle(wide);
    }

    #[test]
    fn a_block_given_back_is_reused_by_its_class() {
        let mut arena = CellArena::default();
        let drops = Rc::new(());
        let first = arena.alloc(Cell::new(ready(1u32, &drops)));
        let address = first.ptr.cast::<u8>();
        arena.recycle(first);
        let second = arena.alloc(Cell::new(ready(2u32, &drops)));
        assert_eq!(second.ptr.cast::<u8>(), address);
        drop(second);
        assert_eq!(Rc::strong_count(&drops), 1, "dropping a box drops its cell");
    }

    #[test]
    fn many_live_cells_get_distinct_blocks_across_chunks() {
        let mut arena = CellArena::default();
        let drops = Rc::new(());
        let cells: Vec<CellBox> = (0..10_000u64)
            .map(|i| arena.alloc(Cell::new(ready(i, &drops))))
            .collect();
        let mut addresses: Vec<usize> = cells
            .iter()
            .map(|c| c.ptr.cast::<u8>().as_ptr() as usize)
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), 10_000);
        assert!(arena.chunks.len() > 1);
        for cell in cells {
            arena.recycle(cell);
        }
        assert_eq!(Rc::strong_count(&drops), 1);
    }
}
