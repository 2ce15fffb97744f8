//! A map from the network's object ids to values, indexed instead of searched.
//!
//! The network numbers its sockets and connections from one counter that only grows, and
//! looks a connection up several times per message. A `BTreeMap` search cost a tenth of the
//! fanout benchmark's instructions; here a lookup is a subtraction and an index.
//!
//! The map is a deque of optional boxed values covering ids `base..base + len`. Removing the
//! oldest entries moves `base` up, so memory follows the span from the oldest live id to the
//! newest (a pointer per id in between), not every id ever made. Ids come from one counter
//! but enter the map in roughly increasing order (a connection enters when it is
//! established), so an insert below the span widens it downwards. Iteration is in id order,
//! as a `BTreeMap`'s is, so nothing that iterates changes order.

use std::collections::VecDeque;

/// Values keyed by increasing `u64` ids.
#[derive(Debug)]
pub(crate) struct IdMap<T> {
    base: u64,
    slots: VecDeque<Option<Box<T>>>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        IdMap {
            base: 0,
            slots: VecDeque::new(),
        }
    }
}

impl<T> IdMap<T> {
    #[inline]
    fn index(&self, id: u64) -> Option<usize> {
        let offset = usize::try_from(id.checked_sub(self.base)?).ok()?;
        (offset < self.slots.len()).then_some(offset)
    }

    #[inline]
    pub(crate) fn get(&self, id: &u64) -> Option<&T> {
        self.slots[self.index(*id)?].as_deref()
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: &u64) -> Option<&mut T> {
        let index = self.index(*id)?;
        self.slots[index].as_deref_mut()
    }

    /// Inserts `value` at `id`; returns the value it replaces.
    ///
    /// Ids usually arrive in increasing order; one below the span (a connection established
    /// after a younger one) widens the span downwards.
    pub(crate) fn insert(&mut self, id: u64, value: T) -> Option<T> {
        if self.slots.is_empty() {
            self.base = id;
        }
        while id < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let offset = usize::try_from(id - self.base).expect("an id span fits in memory");
        if offset >= self.slots.len() {
            self.slots.resize_with(offset + 1, || None);
        }
        let replaced = self.slots[offset].replace(Box::new(value)).map(|b| *b);
        assert!(self.get(&id).is_some(), "an inserted id is found");
        replaced
    }

    pub(crate) fn remove(&mut self, id: &u64) -> Option<T> {
        let index = self.index(*id)?;
        let value = self.slots[index].take()?;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        while let Some(None) = self.slots.back() {
            self.slots.pop_back();
        }
        assert!(
            self.slots.front().is_none_or(Option::is_some)
                && self.slots.back().is_none_or(Option::is_some),
            "the span starts and ends at live ids"
        );
        Some(*value)
    }

    /// The entries in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &T)> + '_ {
        let base = self.base;
        self.slots
            .iter()
            .zip(0u64..)
            .filter_map(move |(slot, offset)| Some((base + offset, slot.as_deref()?)))
    }

    /// The entries in id order, mutably.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut T)> + '_ {
        let base = self.base;
        self.slots
            .iter_mut()
            .zip(0u64..)
            .filter_map(move |(slot, offset)| Some((base + offset, slot.as_deref_mut()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_btree_map_under_mostly_increasing_inserts_and_any_removals() {
        let mut map = IdMap::default();
        let mut model = BTreeMap::new();
        let mut rng = crashtest_core::rng::Rng::seed_from(9);
        let mut next = 1u64;
        for _ in 0..10_000 {
            if rng.chance(crashtest_core::rng::Ratio::new(1, 2)) {
                next += rng.range_inclusive(1, 3);
                // Now and then an id a little older than the newest, as connections that
                // are established out of order insert them.
                let id =
                    next.saturating_sub(rng.range_inclusive(0, 1) * rng.range_inclusive(0, 20));
                assert_eq!(map.insert(id, id * 10), model.insert(id, id * 10));
            } else if let Some(&id) = model.keys().nth(rng.index(model.len().max(1))) {
                assert_eq!(map.remove(&id), model.remove(&id));
            }
            let probe = rng.range_inclusive(0, next + 2);
            assert_eq!(map.get(&probe), model.get(&probe));
            assert_eq!(map.iter().count(), model.len());
        }
        let listed: Vec<(u64, u64)> = map.iter().map(|(k, &v)| (k, v)).collect();
        let want: Vec<(u64, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(listed, want);
    }

    #[test]
    fn memory_follows_the_live_span() {
        let mut map = IdMap::default();
        for id in 0..1_000u64 {
            map.insert(id, id);
            if id >= 10 {
                map.remove(&(id - 10));
            }
        }
        assert!(map.slots.len() <= 11);
    }
}
