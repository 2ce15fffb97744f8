//! Wakers that cost nothing to clone: the task's address is packed into the waker's data word.
//!
//! A waker's data is not a pointer but three numbers packed into 64 bits: the run it belongs
//! to (16 bits), the task's slot (24 bits) and the low 24 bits of the task's serial. Cloning
//! and dropping do nothing; waking looks up the simulation running on this thread and queues
//! the task if the run and serial still match. A waker kept past its task therefore wakes
//! nothing, instead of waking whatever now lives in that slot. A waker of another run wakes
//! nothing either, and fails the run that woke it with a refusal: the two runs share state
//! through something neither owns (a `static`), which makes both depend on more than their
//! seeds. A waker woken from a thread that runs no simulation does nothing: a simulation is
//! one thread.

use std::task::{RawWaker, RawWakerVTable, Waker};

use super::TaskId;
use crate::world;

const SLOT_BITS: u32 = 24;
const SERIAL_BITS: u32 = 24;
/// Slots addressable by a waker.
pub(crate) const MAX_SLOTS: u32 = 1 << SLOT_BITS;
/// The bits of a serial that a waker keeps.
pub(crate) const SERIAL_MASK: u32 = (1 << SERIAL_BITS) - 1;

const _: () = assert!(
    usize::BITS == 64,
    "crashtest packs wakers into 64-bit words"
);
// The run, the slot and the serial fill the word exactly, the run in the top 16 bits.
const _: () = assert!(u16::BITS + SLOT_BITS + SERIAL_BITS == u64::BITS);

fn pack(run: u16, id: TaskId) -> usize {
    assert!(id.slot < MAX_SLOTS);
    let word = (u64::from(run) << (SLOT_BITS + SERIAL_BITS))
        | (u64::from(id.slot) << SERIAL_BITS)
        | u64::from(id.serial & SERIAL_MASK);
    // What is packed here is what `unpack` reads when the waker wakes.
    debug_assert_eq!(
        unpack(word as *const ()),
        (run, id.slot, id.serial & SERIAL_MASK)
    );
    word as usize
}

fn unpack(data: *const ()) -> (u16, u32, u32) {
    let word = data as usize as u64;
    let run = (word >> (SLOT_BITS + SERIAL_BITS)) as u16;
    let slot = ((word >> SERIAL_BITS) & u64::from(MAX_SLOTS - 1)) as u32;
    let serial_low = (word as u32) & SERIAL_MASK;
    (run, slot, serial_low)
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);

fn clone(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

fn wake(data: *const ()) {
    let (run, slot, serial_low) = unpack(data);
    world::try_with(|w| w.wake_packed(run, slot, serial_low));
}

fn drop(_: *const ()) {}

/// The run, slot and serial a simulator waker names, or `None` for any other waker.
#[inline]
pub(crate) fn task_of(waker: &Waker) -> Option<(u16, u32, u32)> {
    std::ptr::eq(waker.vtable(), &VTABLE).then(|| unpack(waker.data()))
}

/// The waker of task `id` in run `run`.
pub(crate) fn waker_for(run: u16, id: TaskId) -> Waker {
    let raw = RawWaker::new(pack(run, id) as *const (), &VTABLE);
    // SAFETY: the vtable's functions never dereference the data word (it is a packed
    // integer, not a pointer), clone returns the same word with the same vtable, and all four
    // functions are safe to call from any thread: waking from a thread without a simulation
    // does nothing.
    let waker = unsafe { Waker::from_raw(raw) };
    // The waker is recognised as a simulator one and names this task (the timers wake
    // through `task_of`, not the vtable).
    debug_assert_eq!(
        task_of(&waker),
        Some((run, id.slot, id.serial & SERIAL_MASK))
    );
    waker
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips() {
        let id = TaskId {
            slot: 12345,
            serial: 0xABCD_EF12,
        };
        let (run, slot, serial_low) = unpack(pack(7, id) as *const ());
        assert_eq!(
            (run, slot, serial_low),
            (7, 12345, 0xABCD_EF12 & SERIAL_MASK)
        );
        assert_eq!(task_of(&waker_for(7, id)), Some((run, slot, serial_low)));
        assert_eq!(task_of(Waker::noop()), None);
    }
}
