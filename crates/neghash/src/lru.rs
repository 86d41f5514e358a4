//! LRU lists of unused entries, sharded by bucket, negatives and positives apart.
//!
//! # Rules
//!
//! - Each shard has two [`List`]s (negative, positive), each with its own spin lock. An entry
//!   goes on the list of its kind when its last holder releases it, and `ON_LRU` in its state
//!   says it is there; `ON_LRU` changes only while the list's lock is held.
//! - **Lock order: bucket lock, then LRU lock.** Every function here that adds, removes or moves
//!   an entry takes a [`BucketLock`] argument: the caller holds the entry's bucket. `shrink`
//!   is the one path that starts from the LRU: it pops an entry with only the LRU lock, drops
//!   it, and then takes the bucket lock to decide (never both in the other order).
//! - Like the kernel's `nr_unused`, the `Unused` counter counts entries on an LRU: an entry
//!   held again stays there (and counted) until `shrink` or an eviction takes it off.

use std::sync::Arc;

use udcache_rculist::{List, ListWriter};

use crate::entry::{Entry, LruAdapter, NEGATIVE, ON_LRU};
use crate::stats::{C, Counters};
use crate::sync::Ordering;
use crate::table::BucketLock;

/// One shard: negatives and positives.
pub(crate) struct LruShard<V: Send + Sync + 'static> {
    neg: List<LruAdapter<V>>,
    pos: List<LruAdapter<V>>,
}

/// All shards.
pub(crate) struct Lru<V: Send + Sync + 'static> {
    shards: Box<[LruShard<V>]>,
}

impl<V: Send + Sync + 'static> Lru<V> {
    pub(crate) fn new(shards: usize) -> Self {
        Lru {
            shards: (0..shards.max(1))
                .map(|_| LruShard { neg: List::new(), pos: List::new() })
                .collect(),
        }
    }

    pub(crate) fn shards(&self) -> usize {
        self.shards.len()
    }

    fn list(&self, bucket: usize, negative: bool) -> &List<LruAdapter<V>> {
        let s = &self.shards[bucket % self.shards.len()];
        if negative { &s.neg } else { &s.pos }
    }

    /// Puts `entry` on the LRU of its kind, unless it is there already.
    pub(crate) fn add(&self, lock: &BucketLock<'_, V>, entry: &Arc<Entry<V>>, counters: &Counters) {
        if entry.has(ON_LRU) {
            return;
        }
        let negative = entry.has(NEGATIVE);
        let mut list = self.list(lock.index(), negative).lock();
        if list.push_back(entry.clone()).is_ok() {
            // Relaxed: ON_LRU is read by writers that hold this bucket's lock (ordered by it)
            // or this list's lock; readers never look at it.
            entry.state.fetch_or(ON_LRU, Ordering::Relaxed);
            counters.add(lock.index(), C::Unused, 1);
        }
    }

    /// Takes `entry` off its LRU, if it is on one.
    pub(crate) fn remove(&self, lock: &BucketLock<'_, V>, entry: &Entry<V>, counters: &Counters) {
        if !entry.has(ON_LRU) {
            return;
        }
        let negative = entry.has(NEGATIVE);
        let mut list = self.list(lock.index(), negative).lock();
        if let Some(unlinked) = list.remove(entry) {
            entry.state.fetch_and(!ON_LRU, Ordering::Relaxed);
            counters.add(lock.index(), C::Unused, -1);
            drop(list);
            drop(unlinked);
        }
    }

    /// Moves `entry` to the LRU of its new kind after a flip of `NEGATIVE`: `was_negative` is
    /// the kind it was filed under.
    pub(crate) fn refile(
        &self,
        lock: &BucketLock<'_, V>,
        entry: &Arc<Entry<V>>,
        was_negative: bool,
    ) {
        if !entry.has(ON_LRU) {
            return;
        }
        let old = self.list(lock.index(), was_negative).lock().remove(entry);
        if old.is_some() {
            let pushed = self.list(lock.index(), !was_negative).lock().push_back(entry.clone());
            debug_assert!(pushed.is_ok(), "an entry off one LRU list was on the other");
        }
    }

    /// Pops the oldest entry of one list of shard `shard`, clearing `ON_LRU`.
    pub(crate) fn pop(
        &self,
        shard: usize,
        negative: bool,
        counters: &Counters,
    ) -> Option<Arc<Entry<V>>> {
        let s = &self.shards[shard];
        let mut list: ListWriter<'_, LruAdapter<V>> =
            if negative { s.neg.lock() } else { s.pos.lock() };
        let unlinked = list.pop_front()?;
        unlinked.state.fetch_and(!ON_LRU, Ordering::Relaxed);
        // The shard index stands in for a bucket index: counters are striped, any stripe works.
        counters.add(shard, C::Unused, -1);
        Some(unlinked.to_arc())
    }
}
