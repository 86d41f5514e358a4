//! The table: buckets of [`HListBl`] chains, lookups, inserts, holders.
//!
//! # Rules (read before changing anything here)
//!
//! - **Bucket lock** (bit 0 of the chain head, [`BucketLock`]) protects: the chain's links, the
//!   `NEGATIVE` and `UNHASHED` bits of its entries, the clearing of their `REFERENCED` bits,
//!   and every eviction decision about them. An evictor claims an entry (`refs` 0 → `DEAD`)
//!   only under it, so an entry found on a chain by a lock holder is never half-evicted.
//! - **Lock order**: a bucket lock, then an LRU list lock ([`crate::lru`]). Never two buckets.
//! - **Lookups** take no lock: pin, hash, walk the chain comparing the key word (hash and
//!   length) before the parent and the bytes. A hit writes only the referenced bit, and only
//!   when it is clear. A lookup may return an entry that an evictor is taking off the chain at
//!   that moment (it is still valid memory under the guard and was in the table during the
//!   walk); it never returns one removed before the walk began. An entry inserted during the
//!   walk may or may not be found.
//! - **Holders**: `refs` counts [`Held`] handles. The release of the last one settles the entry
//!   under the bucket lock: onto the LRU, then the trimming rules ([`crate::trim`]) if negative.
//! - **Retire**: entries leave a chain through `HListWriter::remove`, whose `Unlinked` defers
//!   the chain's reference past every reader pinned at that moment.
//! - **Summary**: each bucket's head word carries 12 bits, one chosen by the low bits of an
//!   entry's hash ([`summary_bit`]), set for every entry on the chain (see
//!   `udcache_rculist::head`). Under the bucket lock, an insert adds its bit before linking
//!   the entry, and a removal recomputes the bits from the entries left
//!   ([`crate::trim::unhash`]). Lookups ask the chain only when their bit is set: a name
//!   that is not there usually costs the head load alone (3 entries leave 9 of 12 bits
//!   clear at best), the common case of a miss in a flood. The bucket index uses the
//!   hash's high half, so the two do not correlate. The head word also counts a short
//!   chain's entries, which lets rule 2 skip its walk when the chain cannot exceed the cap.
//! - **Chain order**: an insert links the new entry in front of the chain's first negative entry
//!   (last if the chain has none), found by stepping over the positives that lead it, under the
//!   bucket lock. So those positives keep the order they were added in, oldest first, and the
//!   negatives follow them, newest first (the order the trimming rules count runs in:
//!   [`crate::trim`]). A positive lookup then steps over no negative and no positive added after
//!   it (unless entries changed polarity in place: below). That is the order lookups want in a
//!   file tree: a directory's entry is added before its children's (a walk must find it to reach
//!   them), and every walk below it looks it up, so the entries added after it in its chain —
//!   descendants, leaves mostly — are colder; in a table larger than the CPU's caches each one
//!   stepped over is a cache miss (`udcache-bench lookup` here: udcache's time per component over
//!   papaya's went from 1.18 to 1.01 when inserts stopped going to the front, medians of 8 runs).
//!   The order is where entries are put, not an invariant: an entry whose polarity flips stays
//!   where it is (moving it under lockless readers could hide it from them), and nothing depends
//!   on it but speed.
//!
//! No resizing: the bucket count is fixed at creation from the expected size (as the kernel
//! sizes its dentry hash once at boot). Resizing under lockless readers needs a second table
//! and a migration protocol; a fixed table keeps every lookup one hash and one chain walk, and
//! the negative bounds below are per bucket, so a table that is too small costs longer chains,
//! not unbounded memory.

use std::collections::TryReserveError;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use udcache_rculist::epoch::{self, Guard};
use udcache_rculist::head::TAG_BITS;
use udcache_rculist::{HListBl, HListWriter};

use crate::entry::{ChainAdapter, Entry, NEGATIVE, ON_LRU, REFERENCED, UNHASHED, WORKINGSET};
use crate::hashing::{KeyHash, KeyHasher, NameHash};
use crate::lru::Lru;
use crate::pooled::{EntryPool, EntryRef, new_pool};
use crate::stats::{C, Counters, Stats};
use crate::sync::{AtomicU32, Ordering};
use crate::trim;

/// How a [`NegHash`] is sized and how hard it bounds negative entries.
#[derive(Clone, Debug)]
pub struct Config {
    buckets: usize,
    rule1: bool,
    admission: bool,
    negative_cap: Option<usize>,
    negative_share: Option<f64>,
    key_hash: KeyHash,
}

impl Config {
    /// A table for about `entries` entries: a power of two with at most one entry per bucket
    /// on average (at least 16 buckets). Both rules on, a cap of 6 negatives per bucket.
    ///
    /// One entry per bucket rather than more: a lookup hit visits on average half the other
    /// entries of its chain before its own, and each is a cache miss in a table larger than the
    /// cache (8 bytes of bucket head per entry buy that visit back).
    pub fn for_entries(entries: usize) -> Self {
        Config::with_buckets(entries.max(16))
    }

    /// A table with exactly `buckets` buckets (rounded up to a power of two; past the largest
    /// power of two, that one, which no machine can allocate: see [`NegHash::try_new`]).
    pub fn with_buckets(buckets: usize) -> Self {
        let largest = 1 << (usize::BITS - 1);
        Config {
            buckets: buckets.max(1).checked_next_power_of_two().unwrap_or(largest),
            rule1: true,
            admission: true,
            negative_cap: Some(6),
            negative_share: None,
            key_hash: KeyHash::SipHash13,
        }
    }

    /// Rule 1, the run rule of Linux's 2020 "increase poison resistance" series: when a
    /// negative entry becomes unused, it and the two unreferenced, settled negatives that
    /// follow it in its chain are kept, and the third that follows is evicted: at most three
    /// in a row. On by default.
    pub fn with_rule1(mut self, on: bool) -> Self {
        self.rule1 = on;
        self
    }

    /// Scan resistance (see [`crate::trim`]): admission — a first-time negative that
    /// would lengthen a full run is evicted itself rather than an older entry — and ghosts — a
    /// negative re-created soon after its eviction is protected as a refault. On by default;
    /// off gives the 2020 rule exactly.
    pub fn with_admission(mut self, on: bool) -> Self {
        self.admission = on;
        self
    }

    /// Whether admission is on.
    pub fn admission(&self) -> bool {
        self.admission
    }

    /// Rule 2: at most `cap` negative entries per bucket, whatever their referenced bits (the
    /// victim is chosen by second chance among the bucket's settled negatives). `None` turns it
    /// off. Default `Some(6)`. A cap of 0 counts as 1: the negative a lookup just remembered
    /// is kept until the bucket's next one evicts it.
    pub fn with_negative_cap(mut self, cap: Option<usize>) -> Self {
        self.negative_cap = cap.map(|c| c.max(1));
        self
    }

    /// A global cap: negatives may make up at most this share of all entries; beyond it, each
    /// negative release evicts an unused negative: the oldest on one of the LRU's shards
    /// (shards go by bucket, and evictions take them in turn, so the order is only roughly
    /// the oldest first). Default off.
    ///
    /// # Panics
    ///
    /// If the share is not a number from 0 to 1.
    ///
    /// ```should_panic
    /// use udcache_neghash::Config;
    /// let _ = Config::for_entries(16).with_negative_share(Some(f64::NAN));
    /// ```
    pub fn with_negative_share(mut self, share: Option<f64>) -> Self {
        if let Some(share) = share {
            assert!((0.0..=1.0).contains(&share), "udcache_neghash: a negative share of {share}");
        }
        self.negative_share = share;
        self
    }

    /// The hash function (see [`KeyHash`]). Default [`KeyHash::SipHash13`]: choose
    /// [`KeyHash::FoldedMultiply`] only for keys no adversary chooses.
    pub fn with_key_hash(mut self, kind: KeyHash) -> Self {
        self.key_hash = kind;
        self
    }

    /// The hash function.
    pub fn key_hash(&self) -> KeyHash {
        self.key_hash
    }

    /// Buckets.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// The per-bucket cap of rule 2, if on.
    pub fn cap(&self) -> Option<usize> {
        self.negative_cap
    }

    /// Whether rule 1 is on.
    pub fn rule1(&self) -> bool {
        self.rule1
    }
}

/// A concurrent hash table keyed by `(parent id, name bytes)` whose negative entries stay
/// bounded per bucket under any flood. See the [crate docs](crate) for the mechanism.
pub struct NegHash<V: Send + Sync + 'static> {
    buckets: Box<[HListBl<ChainAdapter<V>>]>,
    lru: Lru<V>,
    hasher: KeyHasher,
    config: Config,
    counters: Counters,
    /// Per bucket, the hash of the negative it last evicted (0: none); under the bucket lock.
    /// Empty without admission, which alone reads and writes them.
    ghosts: Box<[AtomicU32]>,
    /// Where entries come from and go back to (see `pooled.rs`).
    pool: Arc<EntryPool<V>>,
}

/// What [`NegHash::bucket_shape`] reports of one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// A negative entry.
    pub negative: bool,
    /// Held by a [`Held`] handle.
    pub held: bool,
    /// Protected by a second chance: referenced by a lookup, or a refault (working set).
    pub referenced: bool,
    /// On the LRU.
    pub on_lru: bool,
}

/// What [`NegHash::shrink_negative`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shrunk {
    /// How many negatives it evicted (at most the number asked), those rule 1 took because of
    /// its changes included.
    pub evicted: usize,
    /// Whether it stopped because it found no unused negative left (rather than because it
    /// evicted enough, or because its scan's bound, about twice the number asked, ran out
    /// while referenced ones took their second chances).
    pub exhausted: bool,
}

/// Proof that the caller holds one bucket's lock, with the chain writer it grants.
pub(crate) struct BucketLock<'t, V: Send + Sync + 'static> {
    pub(crate) chain: HListWriter<'t, ChainAdapter<V>>,
    index: usize,
}

impl<V: Send + Sync + 'static> BucketLock<'_, V> {
    pub(crate) fn index(&self) -> usize {
        self.index
    }
}

/// `n` values made by `make`, or the error of allocating room for them.
fn try_filled<T>(n: usize, make: impl FnMut() -> T) -> Result<Box<[T]>, TryReserveError> {
    let mut all = Vec::new();
    all.try_reserve_exact(n)?;
    all.extend(std::iter::repeat_with(make).take(n));
    Ok(all.into_boxed_slice())
}

/// The summary bit of an entry with key word `key`: one of `TAG_BITS`, chosen by the
/// low 32 bits of its hash (the key word's high half), mapped onto `0..TAG_BITS` by a
/// multiply and a shift (fairly, like a modulo, without the division: it is on every
/// lookup's chain of dependent steps).
pub(crate) fn summary_bit(key: u64) -> u16 {
    1 << (((key >> 32) * u64::from(TAG_BITS)) >> 32)
}

impl<V: Send + Sync + 'static> NegHash<V> {
    /// An empty table.
    ///
    /// # Panics
    ///
    /// If its bucket heads cannot be allocated ([`try_new`](Self::try_new) returns the error),
    /// or as [`try_new`](Self::try_new) panics.
    pub fn new(config: Config) -> Self {
        Self::try_new(config).expect("udcache_neghash: the bucket heads do not fit in memory")
    }

    /// An empty table, or the error of allocating its bucket heads (8 bytes a bucket, and 4
    /// more with admission): all of its memory that is allocated up front.
    ///
    /// # Panics
    ///
    /// If 16,777,216 tables' entry pools are alive already in this process (each pool has a
    /// number its entries name it by; a pool lives until its table and its last entry are
    /// gone, and a table leaked with `mem::forget` keeps its number for ever).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash};
    /// assert!(NegHash::<()>::try_new(Config::with_buckets(1 << 10)).is_ok());
    /// assert!(NegHash::<()>::try_new(Config::with_buckets(1 << 62)).is_err());
    /// ```
    pub fn try_new(config: Config) -> Result<Self, TryReserveError> {
        let n = config.buckets;
        let ghosts = if config.admission { n } else { 0 };
        let shards = std::thread::available_parallelism().map_or(4, |p| p.get() * 4).min(n);
        Ok(NegHash {
            buckets: try_filled(n, HListBl::new)?,
            lru: Lru::new(shards),
            hasher: KeyHasher::new(config.key_hash),
            config,
            counters: Counters::new(),
            ghosts: try_filled(ghosts, || AtomicU32::new(0))?,
            pool: new_pool(),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `(key word, bucket)` of `(parent, name)`: its hash under this table's random keys
    /// (see [`crate::hashing`]).
    fn locate(&self, parent: u64, name: &[u8]) -> (u64, usize) {
        self.locate_hashed(parent, name, self.hasher.name(name))
    }

    /// [`locate`](Self::locate) given the name's hash.
    #[inline]
    fn locate_hashed(&self, parent: u64, name: &[u8], hash: NameHash) -> (u64, usize) {
        let h = self.hasher.with_parent(hash, parent);
        let key = (h << 32) | name.len() as u64;
        (key, (h >> 32) as usize & (self.buckets.len() - 1))
    }

    pub(crate) fn lock_bucket(&self, index: usize) -> BucketLock<'_, V> {
        BucketLock { chain: self.buckets[index].lock(), index }
    }

    pub(crate) fn chain(&self, lock: &BucketLock<'_, V>) -> &HListBl<ChainAdapter<V>> {
        &self.buckets[lock.index]
    }

    pub(crate) fn lru(&self) -> &Lru<V> {
        &self.lru
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The ghost slot of `lock`'s bucket, and the hash an entry with `key` would leave there
    /// (never 0, the empty slot).
    fn ghost_slot(&self, lock: &BucketLock<'_, V>, key: u64) -> (&AtomicU32, u32) {
        (&self.ghosts[lock.index], (key >> 32) as u32 | 1)
    }

    /// Records an evicted negative's hash in its bucket's ghost slot.
    pub(crate) fn remember_evicted(&self, lock: &BucketLock<'_, V>, entry: &Entry<V>) {
        let (slot, hash) = self.ghost_slot(lock, entry.key);
        // Relaxed: ghosts are read and written only under the bucket lock, which orders them.
        slot.store(hash, Ordering::Relaxed);
    }

    /// Whether a negative about to be inserted with `key` refaults (and forgets the ghost).
    fn refault(&self, lock: &BucketLock<'_, V>, key: u64) -> bool {
        let (slot, hash) = self.ghost_slot(lock, key);
        // Relaxed: under the bucket lock, as in `remember_evicted`; no one else writes the slot
        // between the load and the store.
        let hit = slot.load(Ordering::Relaxed) == hash;
        if hit {
            slot.store(0, Ordering::Relaxed);
        }
        hit
    }

    /// Finds `(parent, name)` without locks. A hit sets the entry's referenced bit (a store only
    /// when it is clear); nothing else is written.
    pub fn lookup<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        name: &[u8],
    ) -> Option<&'g Entry<V>> {
        self.lookup_hashed(guard, parent, name, self.name_hash(name))
    }

    /// The hash of `name` under this table's keys, before any parent is mixed in, for
    /// [`lookup_hashed`](Self::lookup_hashed). A path walk hashes its next component with it
    /// while the current component's lookup waits on memory, since the parent it needs is
    /// that lookup's answer (see [`hashing`](crate::hashing)).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, epoch};
    /// let table = NegHash::new(Config::for_entries(16));
    /// drop(table.insert(1, b"a", false, 2u64));
    /// drop(table.insert(2, b"b", false, 3u64));
    /// // Both names hashed up front; each parent comes from the step before.
    /// let hashes = [table.name_hash(b"a"), table.name_hash(b"b")];
    /// let guard = epoch::pin();
    /// let mut at = 1;
    /// for (name, hash) in [&b"a"[..], b"b"].into_iter().zip(hashes) {
    ///     at = *table.lookup_hashed(&guard, at, name, hash).unwrap().value();
    /// }
    /// assert_eq!(at, 3);
    /// ```
    #[inline]
    pub fn name_hash(&self, name: &[u8]) -> NameHash {
        self.hasher.name(name)
    }

    /// [`lookup`](Self::lookup) with `name`'s hash made earlier by this table's
    /// [`name_hash`](Self::name_hash). A hash of another name, or made by another table, can
    /// only turn a hit into a miss: entries are still compared by parent and bytes.
    #[inline]
    pub fn lookup_hashed<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        name: &[u8],
        hash: NameHash,
    ) -> Option<&'g Entry<V>> {
        let hit = self.find(guard, (parent, name), hash)?;
        hit.touch();
        Some(hit)
    }

    /// Finds `(parent, name)` without locks, as [`lookup`](Self::lookup) does, but writes
    /// nothing: the referenced bit is left as it is. For a caller that looks before it decides
    /// what to change (a writer checking whether a name is present): that look is no use of
    /// the name, and a use is what the bit tells the trimming rules and `shrink` about.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, epoch};
    /// let table = NegHash::new(Config::for_entries(16));
    /// drop(table.insert(1, b"f", false, 7u64));
    /// let guard = epoch::pin();
    /// assert!(!table.peek(&guard, 1, b"f").unwrap().is_referenced());
    /// assert!(table.lookup(&guard, 1, b"f").unwrap().is_referenced());
    /// ```
    pub fn peek<'g>(&'g self, guard: &'g Guard, parent: u64, name: &[u8]) -> Option<&'g Entry<V>> {
        self.find(guard, (parent, name), self.name_hash(name))
    }

    /// The lockless search of [`lookup_hashed`](Self::lookup_hashed) and
    /// [`peek`](Self::peek), writing nothing.
    #[inline]
    fn find<'g>(
        &'g self,
        guard: &'g Guard,
        (parent, name): (u64, &[u8]),
        hash: NameHash,
    ) -> Option<&'g Entry<V>> {
        let (key, b) = self.locate_hashed(parent, name, hash);
        self.buckets[b].find_tagged(guard, summary_bit(key), |e| e.matches(key, parent, name))
    }

    /// Finds `(parent, name)` and holds it: a held entry is never evicted.
    pub fn get(&self, parent: u64, name: &[u8]) -> Option<Held<'_, V>> {
        let (key, b) = self.locate(parent, name);
        let held = self.find_held(key, parent, name, b)?;
        held.touch();
        Some(held)
    }

    /// The entry `(parent, name)` (key word `key`, bucket `b`) held, if it is in the table and
    /// not being evicted; its referenced bit untouched.
    fn find_held(&self, key: u64, parent: u64, name: &[u8], b: usize) -> Option<Held<'_, V>> {
        let guard = epoch::pin();
        let entry = self.buckets[b]
            .find_owned_tagged(&guard, summary_bit(key), |e| e.matches(key, parent, name))?;
        entry.try_hold()?;
        let held = Held::new(entry, self, b);
        // Removed between the walk and the hold: not there (dropping `held` releases it).
        held.is_hashed().then_some(held)
    }

    /// Inserts a positive or negative entry, held by the returned handle. If the name is
    /// present already, nothing is inserted and the present entry is returned, held, as `Err`.
    ///
    /// # Panics
    ///
    /// If `name` is longer than `u32::MAX` bytes: an entry keeps its name's length in 32 bits
    /// (beside the hash, in one word). Lookups of such a name simply miss.
    pub fn insert(
        &self,
        parent: u64,
        name: &[u8],
        negative: bool,
        value: V,
    ) -> Result<Held<'_, V>, Held<'_, V>> {
        assert!(
            u32::try_from(name.len()).is_ok(),
            "udcache_neghash: a name of {} bytes (at most u32::MAX)",
            name.len()
        );
        let (key, b) = self.locate(parent, name);
        // A name present already (a re-filing: renewed, instantiated, a rename's target) is
        // answered without taking a cell: a cell taken and parked again unused would count as
        // recycled (`Stats::recycled`) for an entry never made. Without the lock, as `get`
        // finds (not touching the entry: an insert is no lookup); a name inserted meanwhile
        // is found again under the lock below.
        if let Some(found) = self.find_held(key, parent, name, b) {
            return Err(found);
        }
        // The cell before the lock: finding a reusable one may run deferred functions, which
        // are better not run under the bucket lock. (Unused if the name was inserted since
        // the look above: parked again.)
        let cell = self.pool.alloc();
        let guard = epoch::pin();
        let mut lock = self.lock_bucket(b);
        // Under the bucket lock no entry on the chain is claimed (claims happen under it and
        // finish before it is released), so `try_hold` cannot fail here.
        let found = self.buckets[b]
            .find_owned_tagged(&guard, summary_bit(key), |e| e.matches(key, parent, name));
        if let Some(found) = found {
            found.try_hold().expect("no claimed entry on a chain under its lock");
            return Err(Held::new(found, self, b));
        }
        let state = match negative {
            false => 0,
            true if self.config.admission && self.refault(&lock, key) => NEGATIVE | WORKINGSET,
            true => NEGATIVE,
        };
        let entry = EntryRef::new(cell, &self.pool, |home| {
            Entry::new((key, parent, name), state, value, home)
        });
        // The bit first: no summarised find may see the entry without it.
        lock.chain.add_tags(summary_bit(key));
        // In front of the chain's first negative (see the module rules, Chain order).
        let mut at = lock.chain.cursor_mut(&guard);
        while at.get().is_some_and(|e| !e.has(NEGATIVE)) {
            at.move_next();
        }
        if at.insert_before(entry.clone()).is_err() {
            unreachable!("a new entry is on no chain");
        }
        self.counters.add(b, C::Entries, 1);
        if negative {
            self.counters.add(b, C::Negative, 1);
            trim::enforce_cap(self, &mut lock, &guard);
        }
        Ok(Held::new(entry, self, b))
    }

    /// Evicts up to `n` unused entries, negatives first, oldest first within each LRU shard
    /// (shards are visited in turn: across the table the order is approximate), giving
    /// referenced ones a second chance; returns how many were evicted. The memory-pressure
    /// hook: it also gives back to the allocator the pooled cells of entries freed earlier
    /// whose grace period has passed (those evicted now come back to the pool a grace period
    /// later).
    ///
    /// The count is exact and at most `n`: it includes the negatives rule 1 evicts because of
    /// the shrink's own changes (a spent second chance, or an eviction, that joins two runs;
    /// see [`crate::trim`], Shrink). Positives go only once the scan has found no unused
    /// negative left ([`Shrunk::exhausted`]).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, epoch};
    /// let t = NegHash::new(Config::with_buckets(1));
    /// drop(t.insert(0, b"file", false, ()));
    /// // The chain: a b c r, `r` the oldest on the LRU and referenced by a lookup.
    /// for name in ["r", "c", "b", "a"] {
    ///     drop(t.insert(0, name.as_bytes(), true, ()));
    ///     if name == "r" {
    ///         assert!(t.lookup(&epoch::pin(), 0, b"r").is_some());
    ///     }
    /// }
    /// // Spending `r`'s chance makes `a b c r` a run of four: rule 1 evicts `r`, and the
    /// // shrink counts it; `c b a` make four, and the positive stays.
    /// assert_eq!(t.shrink(4), 4);
    /// assert_eq!((t.stats().entries, t.stats().negative), (1, 0));
    /// ```
    pub fn shrink(&self, n: usize) -> usize {
        let negatives = trim::shrink(self, n, true);
        let mut done = negatives.0;
        if done < n && negatives.1 {
            done += trim::shrink(self, n - done, false).0;
        }
        self.pool.trim();
        done
    }

    /// Evicts up to `n` unused *negative* entries, oldest first per shard, second chances
    /// given as by [`shrink`](Self::shrink), counted exactly as there. For callers whose
    /// positive entries carry bookkeeping of their own (see
    /// [`oldest_unused_positives`](Self::oldest_unused_positives)), which should turn to
    /// them only when [`Shrunk::exhausted`] says no unused negative is left. Gives back pooled
    /// cells as `shrink` does.
    pub fn shrink_negative(&self, n: usize) -> Shrunk {
        let (evicted, exhausted) = trim::shrink(self, n, true);
        self.pool.trim();
        Shrunk { evicted, exhausted }
    }

    /// Holds up to `n` of the least recently used unused positive entries, for a caller that
    /// must do its own bookkeeping before it removes them with [`Held::remove`]; referenced
    /// ones get a second chance instead of being returned, as in [`shrink`](Self::shrink). An
    /// entry whose removal would make rule 1 evict negatives (it separates two runs of them)
    /// is not returned, so the caller's count of what it removed is exact. Entries not removed
    /// go back to the LRU when released. The LRU is sharded: "least recently used" holds
    /// within a shard.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash};
    /// let t = NegHash::new(Config::with_buckets(8));
    /// drop(t.insert(1, b"f", false, 'f'));
    /// drop(t.insert(1, b"miss", true, '-'));
    /// let oldest = t.oldest_unused_positives(5);
    /// assert_eq!(oldest.len(), 1);
    /// assert_eq!(oldest[0].name(), b"f");
    /// assert!(oldest[0].remove());
    /// drop(oldest);
    /// assert_eq!((t.stats().entries, t.stats().negative), (1, 1));
    /// ```
    pub fn oldest_unused_positives(&self, n: usize) -> Vec<Held<'_, V>> {
        trim::oldest_unused_positives(self, n)
    }

    /// Takes every negative entry whose parent id `doomed` accepts out of the table: an unused
    /// one is evicted (counted as a shrink eviction), a held one removed as by
    /// [`Held::remove`] (it stays valid for its holders); returns how many left. A full scan
    /// of the table, one bucket lock at a time: for rare events such as a directory leaving
    /// the cache with its remembered misses, none of which may outlive it.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash};
    /// let t = NegHash::<()>::new(Config::with_buckets(8));
    /// drop(t.insert(1, b"gone", true, ()));
    /// let held = t.insert(1, b"held", true, ()).unwrap();
    /// drop(t.insert(2, b"kept", true, ()));
    /// assert_eq!(t.purge_negatives(&|parent| parent == 1), 2);
    /// assert_eq!(t.stats().negative, 1);
    /// assert!(!held.is_hashed() && t.get(1, b"held").is_none());
    /// ```
    pub fn purge_negatives(&self, doomed: &dyn Fn(u64) -> bool) -> usize {
        trim::purge_negatives(self, doomed)
    }

    /// Calls `f` on every entry in the table, one bucket at a time under its lock (so `f` must
    /// not call back into the table).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash};
    /// let t = NegHash::new(Config::with_buckets(4));
    /// drop(t.insert(1, b"a", false, 10));
    /// drop(t.insert(1, b"b", true, 20));
    /// let mut sum = 0;
    /// t.for_each_entry(|e| sum += e.value());
    /// assert_eq!(sum, 30);
    /// ```
    pub fn for_each_entry(&self, mut f: impl FnMut(&Entry<V>)) {
        for b in 0..self.buckets.len() {
            let guard = epoch::pin();
            let _lock = self.lock_bucket(b);
            self.buckets[b].iter(&guard).for_each(&mut f);
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let pool = self.pool.stats();
        Stats {
            entries: c.sum(C::Entries),
            unused: c.sum(C::Unused),
            negative: c.sum(C::Negative),
            buckets: self.buckets.len() as u64,
            evicted_rule1: c.sum(C::EvictRule1),
            evicted_rule2: c.sum(C::EvictRule2),
            evicted_global: c.sum(C::EvictGlobal),
            evicted_shrink: c.sum(C::EvictShrink),
            recycled: pool.recycled,
            parked: pool.parked as u64,
        }
    }

    /// The entries on the chain of bucket `index`, in chain order (the leading positives oldest
    /// first, then negatives newest first: see the module rules). Takes the bucket lock; for
    /// tests and benchmarks that check the bounds.
    pub fn bucket_shape(&self, index: usize) -> Vec<Shape> {
        let guard = epoch::pin();
        let _lock = self.lock_bucket(index);
        self.buckets[index]
            .iter(&guard)
            .map(|e| Shape {
                negative: e.has(NEGATIVE),
                held: e.refs.load(Ordering::Relaxed) != 0,
                referenced: e.is_protected(),
                on_lru: e.has(ON_LRU),
            })
            .collect()
    }

    /// Checks the table's invariants; call it while no other thread changes the table.
    ///
    /// Per bucket: unused negatives at most the cap (rule 2); no run of more than
    /// [`MAX_RUN`](crate::trim::MAX_RUN) settled, unprotected negatives (rule 1); every unused
    /// entry on the LRU. Overall: the counters agree with the chains. Returns the first
    /// violation found, described.
    pub fn verify(&self) -> Result<(), String> {
        let (mut entries, mut negatives, mut on_lru) = (0, 0, 0);
        for b in 0..self.buckets.len() {
            let shape = self.bucket_shape(b);
            entries += shape.len();
            negatives += shape.iter().filter(|s| s.negative).count();
            on_lru += shape.iter().filter(|s| s.on_lru).count();
            let unused_negatives = shape.iter().filter(|s| s.negative && !s.held).count();
            if let Some(cap) = self.config.negative_cap
                && unused_negatives > cap
            {
                return Err(format!(
                    "bucket {b}: {unused_negatives} unused negatives > cap {cap}: {shape:?}"
                ));
            }
            let mut run = 0;
            for s in &shape {
                if !s.held && !s.on_lru {
                    return Err(format!("bucket {b}: an unused entry is off the LRU: {shape:?}"));
                }
                run = if s.negative && !s.held && !s.referenced { run + 1 } else { 0 };
                if self.config.rule1 && run > trim::MAX_RUN {
                    return Err(format!(
                        "bucket {b}: a run of {run} unreferenced negatives: {shape:?}"
                    ));
                }
            }
        }
        let s = self.stats();
        let counted = (s.entries as usize, s.negative as usize, s.unused as usize);
        if counted != (entries, negatives, on_lru) {
            return Err(format!(
                "counters (entries, negative, unused) {counted:?} != chains {:?}",
                (entries, negatives, on_lru)
            ));
        }
        Ok(())
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The bucket `(parent, name)` hashes to (stable for the table's life).
    pub fn bucket_of(&self, parent: u64, name: &[u8]) -> usize {
        self.locate(parent, name).1
    }

    /// Called by [`Held`]'s drop: the last release settles the entry.
    fn release(&self, entry: &EntryRef<V>, bucket: usize) {
        // Release: pairs with the Acquire of an evictor's claim (the evictor sees our writes).
        if entry.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        let guard = epoch::pin();
        let mut lock = self.lock_bucket(bucket);
        // Acquire: pairs with other holders' Release decrements.
        if entry.refs.load(Ordering::Acquire) != 0 || !entry.is_hashed() {
            return;
        }
        self.lru.add(&lock, entry, &self.counters);
        if entry.has(NEGATIVE) {
            if self.config.rule1 {
                trim::run_rule(self, &mut lock, entry, &guard);
            }
            trim::enforce_cap(self, &mut lock, &guard);
            drop(lock);
            if let Some(share) = self.config.negative_share {
                trim::enforce_share(self, share);
            }
        }
    }
}

impl<V: Send + Sync + 'static> std::fmt::Debug for NegHash<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NegHash")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A held entry: never evicted while the handle lives. Dropping it releases the hold; the last
/// release of a negative entry runs the trimming rules on its bucket.
pub struct Held<'t, V: Send + Sync + 'static> {
    entry: EntryRef<V>,
    table: &'t NegHash<V>,
    bucket: usize,
    /// Releases lock a bucket and pin: keep handles on the thread that is done with them
    /// (nothing breaks if moved, but the type stays simple).
    _not_send: PhantomData<*const ()>,
}

impl<'t, V: Send + Sync + 'static> Held<'t, V> {
    /// Wraps a hold already taken on `entry` (of bucket `bucket`).
    pub(crate) fn new(entry: EntryRef<V>, table: &'t NegHash<V>, bucket: usize) -> Self {
        Held { entry, table, bucket, _not_send: PhantomData }
    }

    /// Turns a negative entry positive (the name was created). Returns false if it already was.
    pub fn make_positive(&self) -> bool {
        self.flip(false)
    }

    /// Turns a positive entry negative (the name was unlinked). Returns false if it already was.
    pub fn make_negative(&self) -> bool {
        self.flip(true)
    }

    fn flip(&self, to_negative: bool) -> bool {
        let t = self.table;
        let lock = t.lock_bucket(self.bucket);
        if self.entry.has(NEGATIVE) == to_negative || !self.entry.is_hashed() {
            return false;
        }
        // Release: pairs with the Acquire in `Entry::is_negative`.
        if to_negative {
            self.entry.state.fetch_or(NEGATIVE, Ordering::Release);
        } else {
            self.entry.state.fetch_and(!NEGATIVE, Ordering::Release);
        }
        t.counters.add(self.bucket, C::Negative, if to_negative { 1 } else { -1 });
        t.lru.refile(&lock, &self.entry);
        true
    }

    /// Takes the entry out of the table (it stays valid for this handle and for readers that
    /// found it). Returns false if it was out already.
    pub fn remove(&self) -> bool {
        let t = self.table;
        let guard = epoch::pin();
        let mut lock = t.lock_bucket(self.bucket);
        if !self.entry.is_hashed() {
            return false;
        }
        trim::unhash(t, &mut lock, &self.entry, &guard);
        trim::retrim(t, &mut lock, &guard, usize::MAX);
        true
    }
}

impl<V: Send + Sync + 'static> Deref for Held<'_, V> {
    type Target = Entry<V>;
    fn deref(&self) -> &Entry<V> {
        &self.entry
    }
}

impl<V: Send + Sync + 'static> Drop for Held<'_, V> {
    fn drop(&mut self) {
        self.table.release(&self.entry, self.bucket);
    }
}

impl<V: Send + Sync + std::fmt::Debug + 'static> std::fmt::Debug for Held<'_, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.entry, f)
    }
}

/// Clears `REFERENCED` on `entry` (under its bucket lock).
pub(crate) fn clear_referenced<V>(entry: &Entry<V>) {
    entry.state.fetch_and(!REFERENCED, Ordering::Relaxed);
}

/// Marks `entry` unhashed (under its bucket lock).
pub(crate) fn mark_unhashed<V>(entry: &Entry<V>) {
    // Release: pairs with the Acquire in `Entry::is_hashed`.
    entry.state.fetch_or(UNHASHED, Ordering::Release);
}
