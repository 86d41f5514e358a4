//! [`Store`]: a table's buckets and everything its trimming rules work on — the LRU, the
//! counters, the ghost slots, the configuration and the hash keys. The public table
//! ([`NegHash`](crate::NegHash)) adds the entry pool and the holders' handles on top.

use std::collections::TryReserveError;

use udcache_rculist::HListBl;

use crate::bucket::BucketLock;
use crate::config::Config;
use crate::entry::Entry;
use crate::hashing::{KeyHasher, NameHash};
use crate::links::ChainAdapter;
use crate::lru::Lru;
use crate::stats::Counters;
use crate::sync::{AtomicU32, Ordering};

/// The buckets, the LRU, the counters, the ghost slots (see `trim.rs`), the configuration and
/// the hash keys of one table.
pub(crate) struct Store<V: Send + Sync + 'static> {
    pub(crate) buckets: Box<[HListBl<ChainAdapter<V>>]>,
    pub(crate) lru: Lru<V>,
    pub(crate) hasher: KeyHasher,
    pub(crate) config: Config,
    pub(crate) counters: Counters,
    /// Per bucket, the hash of the negative it last evicted (0: none); under the bucket lock.
    /// Empty without admission, which alone reads and writes them.
    ghosts: Box<[AtomicU32]>,
}

/// `n` values made by `make`, or the error of allocating room for them.
fn try_filled<T>(n: usize, make: impl FnMut() -> T) -> Result<Box<[T]>, TryReserveError> {
    let mut all = Vec::new();
    all.try_reserve_exact(n)?;
    all.extend(std::iter::repeat_with(make).take(n));
    Ok(all.into_boxed_slice())
}

impl<V: Send + Sync + 'static> Store<V> {
    /// Empty buckets for `config`, or the error of allocating them.
    pub(crate) fn try_new(config: Config) -> Result<Self, TryReserveError> {
        let n = config.buckets;
        let ghosts = if config.admission { n } else { 0 };
        let shards = std::thread::available_parallelism().map_or(4, |p| p.get() * 4).min(n);
        Ok(Store {
            buckets: try_filled(n, HListBl::new)?,
            lru: Lru::new(shards),
            hasher: KeyHasher::new(config.key_hash),
            config,
            counters: Counters::new(),
            ghosts: try_filled(ghosts, || AtomicU32::new(0))?,
        })
    }

    /// `(key word, bucket)` of `(parent, name)`: its hash under this table's random keys
    /// (see [`crate::hashing`]).
    pub(crate) fn locate(&self, parent: u64, name: &[u8]) -> (u64, usize) {
        self.locate_hashed(parent, name, self.hasher.name(name))
    }

    /// [`locate`](Self::locate) given the name's hash.
    #[inline]
    pub(crate) fn locate_hashed(&self, parent: u64, name: &[u8], hash: NameHash) -> (u64, usize) {
        let h = self.hasher.with_parent(hash, parent);
        let key = (h << 32) | name.len() as u64;
        (key, (h >> 32) as usize & (self.buckets.len() - 1))
    }

    /// The bucket `(parent, name)` hashes to.
    pub(crate) fn bucket_of(&self, parent: u64, name: &[u8]) -> usize {
        self.locate(parent, name).1
    }

    pub(crate) fn lock_bucket(&self, index: usize) -> BucketLock<'_, V> {
        BucketLock::new(self.buckets[index].lock(), index)
    }

    pub(crate) fn chain(&self, lock: &BucketLock<'_, V>) -> &HListBl<ChainAdapter<V>> {
        &self.buckets[lock.index()]
    }

    /// The ghost slot of `lock`'s bucket, and the hash an entry with `key` would leave there
    /// (never 0, the empty slot).
    fn ghost_slot(&self, lock: &BucketLock<'_, V>, key: u64) -> (&AtomicU32, u32) {
        (&self.ghosts[lock.index()], (key >> 32) as u32 | 1)
    }

    /// Records an evicted negative's hash in its bucket's ghost slot.
    pub(crate) fn remember_evicted(&self, lock: &BucketLock<'_, V>, entry: &Entry<V>) {
        let (slot, hash) = self.ghost_slot(lock, entry.key);
        // Relaxed: ghosts are read and written only under the bucket lock, which orders them.
        slot.store(hash, Ordering::Relaxed);
    }

    /// Whether a negative about to be inserted with `key` refaults (and forgets the ghost).
    pub(crate) fn refault(&self, lock: &BucketLock<'_, V>, key: u64) -> bool {
        let (slot, hash) = self.ghost_slot(lock, key);
        // Relaxed: under the bucket lock, as in `remember_evicted`; no one else writes the slot
        // between the load and the store.
        let hit = slot.load(Ordering::Relaxed) == hash;
        if hit {
            slot.store(0, Ordering::Relaxed);
        }
        hit
    }
}
