//! LRU lists of unused entries, sharded by bucket, negatives and positives apart.
//!
//! # Rules
//!
//! - Each shard has two [`BareList`]s (negative, positive), each with its own spin lock: lists
//!   that only their lock holders touch (no lockless reader walks an LRU), so an entry's LRU
//!   link is two words and a removal hands the list's reference back at once. An entry goes on
//!   the list of its kind when its last holder releases it.
//! - **Which list.** `ON_LRU` in the entry's state says it is on an LRU list, and
//!   `ON_NEGATIVE_LRU` that the list is its shard's negative one (the shard is fixed by its
//!   bucket). Both are set with the push and cleared with the unlink, under that list's lock.
//!   A bare link does not record its list, so this is what makes a removal sound: pushes hold
//!   the entry's bucket lock, so a remover holding it reads the two bits, takes that list's
//!   lock, and finds the entry either on that list or on none (`shrink` may have popped it).
//! - **Lock order: bucket lock, then LRU lock.** Every function here that adds, removes or moves
//!   an entry takes a [`BucketLock`] argument: the caller holds the entry's bucket. `shrink`
//!   is the one path that starts from the LRU: it pops an entry with only the LRU lock, drops
//!   it, and then takes the bucket lock to decide (never both in the other order).
//! - Like the kernel's `nr_unused`, the `Unused` counter counts entries on an LRU: an entry
//!   held again stays there (and counted) until `shrink` or an eviction takes it off.

use udcache_rculist::{BareList, BareWriter};

use crate::bucket::BucketLock;
use crate::entry::{Entry, NEGATIVE, ON_LRU, ON_NEGATIVE_LRU, Polarity};
use crate::links::LruAdapter;
use crate::pooled::EntryRef;
use crate::stats::{C, Counters};
use crate::sync::Ordering;

/// One shard: negatives and positives.
pub(crate) struct LruShard<V: Send + Sync + 'static> {
    neg: BareList<LruAdapter<V>>,
    pos: BareList<LruAdapter<V>>,
}

impl<V: Send + Sync + 'static> LruShard<V> {
    fn list(&self, polarity: Polarity) -> &BareList<LruAdapter<V>> {
        match polarity {
            Polarity::Negative => &self.neg,
            Polarity::Positive => &self.pos,
        }
    }
}

/// All shards.
pub(crate) struct Lru<V: Send + Sync + 'static> {
    shards: Box<[LruShard<V>]>,
}

impl<V: Send + Sync + 'static> Lru<V> {
    pub(crate) fn new(shards: usize) -> Self {
        Lru {
            shards: (0..shards.max(1))
                .map(|_| LruShard { neg: BareList::new(), pos: BareList::new() })
                .collect(),
        }
    }

    pub(crate) fn shards(&self) -> usize {
        self.shards.len()
    }

    fn list(&self, bucket: usize, polarity: Polarity) -> &BareList<LruAdapter<V>> {
        self.shards[bucket % self.shards.len()].list(polarity)
    }

    /// Puts `entry` on the LRU of its kind, unless it is there already.
    pub(crate) fn add(&self, lock: &BucketLock<'_, V>, entry: &EntryRef<V>, counters: &Counters) {
        if entry.has(ON_LRU) {
            return;
        }
        // Relaxed: `NEGATIVE` changes under the bucket lock, which the caller holds.
        let polarity = Polarity::of_state(entry.state.load(Ordering::Relaxed));
        if self.push(lock, entry, polarity) {
            counters.add(lock.index(), C::Unused, 1);
        }
    }

    /// Pushes `entry` on its shard's list of polarity `polarity` and records which (see the
    /// rules).
    fn push(&self, lock: &BucketLock<'_, V>, entry: &EntryRef<V>, polarity: Polarity) -> bool {
        let mut list = self.list(lock.index(), polarity).lock();
        if list.push_back(entry.clone()).is_err() {
            return false;
        }
        // Relaxed (both): the bits are read by writers that hold this bucket's lock (ordered
        // by it) or this list's lock; readers never look at them.
        let bits = if polarity.is_negative() { ON_LRU | ON_NEGATIVE_LRU } else { ON_LRU };
        entry.state.fetch_or(bits, Ordering::Relaxed);
        true
    }

    /// Takes `entry` off the LRU list it is on, if any (see the rules); false if none.
    fn unlink(&self, lock: &BucketLock<'_, V>, entry: &Entry<V>) -> bool {
        // One load for both bits: `pop` clears them together, holding only the list's lock, so
        // two loads could pair its `ON_LRU` with the cleared kind and pick the wrong list.
        // Relaxed: a stale pair names the list `pop` held, whose lock (taken below) orders its
        // unlink before our look at the link.
        let state = entry.state.load(Ordering::Relaxed);
        if state & ON_LRU == 0 {
            return false;
        }
        let on = if state & ON_NEGATIVE_LRU != 0 { Polarity::Negative } else { Polarity::Positive };
        let mut list = self.list(lock.index(), on).lock();
        // SAFETY: the two bits name the list the entry was pushed on (or that `pop` took it
        // from), and no one can push it while we hold its bucket lock; so if it is linked, it
        // is on this list, and stays off every other one during the call.
        let Some(unlinked) = (unsafe { list.remove(entry) }) else { return false };
        entry.state.fetch_and(!(ON_LRU | ON_NEGATIVE_LRU), Ordering::Relaxed);
        drop(list);
        drop(unlinked);
        true
    }

    /// Takes `entry` off its LRU, if it is on one.
    pub(crate) fn remove(&self, lock: &BucketLock<'_, V>, entry: &Entry<V>, counters: &Counters) {
        if self.unlink(lock, entry) {
            counters.add(lock.index(), C::Unused, -1);
        }
    }

    /// Moves `entry` to the LRU of its kind after a flip of `NEGATIVE`, if it is on an LRU.
    pub(crate) fn refile(&self, lock: &BucketLock<'_, V>, entry: &EntryRef<V>) {
        // Relaxed: a filter; `unlink` decides on its own load (see there).
        let state = entry.state.load(Ordering::Relaxed);
        let (negative, on_negative) = (state & NEGATIVE != 0, state & ON_NEGATIVE_LRU != 0);
        if state & ON_LRU != 0 && on_negative != negative && self.unlink(lock, entry) {
            let pushed = self.push(lock, entry, Polarity::of_state(state));
            debug_assert!(pushed, "an entry just taken off an LRU list was on another");
        }
    }

    /// Pops the oldest entry of one list of shard `shard`, clearing its LRU bits.
    pub(crate) fn pop(
        &self,
        shard: usize,
        polarity: Polarity,
        counters: &Counters,
    ) -> Option<EntryRef<V>> {
        let mut list: BareWriter<'_, LruAdapter<V>> = self.shards[shard].list(polarity).lock();
        let popped = list.pop_front()?;
        popped.state.fetch_and(!(ON_LRU | ON_NEGATIVE_LRU), Ordering::Relaxed);
        // The shard index stands in for a bucket index: counters are striped, any stripe works.
        counters.add(shard, C::Unused, -1);
        Some(popped)
    }
}
