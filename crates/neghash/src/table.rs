//! The table: buckets of [`HListBl`](udcache_rculist::HListBl) chains, lookups, inserts, holders.
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
//!   `insert_unused` links its entry with one hold, as every insert does, and gives it up before
//!   it drops the lock, settling the entry there, unless a hold taken without the lock since
//!   the link (a `get`, another insert's look) is still held then: that holder's last release
//!   settles it.
//! - **Retire**: entries leave a chain through `HListWriter::remove`, whose `Unlinked` defers
//!   the chain's reference past every reader pinned at that moment.
//! - **Tags**: each bucket's head word carries 12 tag bits; an entry's is one chosen by the low
//!   bits of its hash ([`crate::entry::tag_bit`]), set for every entry on the chain
//!   (see `udcache_rculist::head`). Under the bucket lock, an insert adds its bit before linking
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
//!   stepped over is a cache miss (`udcache-bench lookup` measures it: see `BENCHMARKS.md`).
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

use crate::bucket::BucketLock;
use crate::config::Config;
use crate::entry::{Entry, NEGATIVE, ON_LRU, Polarity, WORKINGSET, tag_bit};
use crate::hashing::NameHash;
use crate::pooled::{EntryPool, EntryRef, new_pool};
use crate::stats::{C, Stats};
use crate::store::Store;
use crate::sync::Ordering;
use crate::trim;

/// A concurrent hash table keyed by `(parent id, name bytes)` whose negative entries stay
/// bounded per bucket under any flood. See the [crate docs](crate) for the mechanism.
pub struct NegHash<V: Send + Sync + 'static> {
    /// The buckets and what the trimming rules work on (see `store.rs`).
    store: Store<V>,
    /// Where entries come from and go back to (see `pooled.rs`).
    pool: Arc<EntryPool<V>>,
}

/// What [`NegHash::insert`] did: inserted a new entry, or found the name present.
///
/// Either way the entry is returned held ([`into_held`](Self::into_held)).
///
/// ```
/// use udcache_neghash::{Config, Insertion, NegHash, Polarity};
/// let table = NegHash::new(Config::for_entries(16));
/// assert!(table.insert(1, b"f", Polarity::Positive, 7).is_inserted());
/// match table.insert(1, b"f", Polarity::Negative, 8) {
///     Insertion::Inserted(_) => unreachable!("the name is there"),
///     // The entry found is returned as it is: positive, with its own value.
///     Insertion::Present(found) => assert_eq!((found.is_negative(), *found.value()), (false, 7)),
/// }
/// ```
#[derive(Debug)]
pub enum Insertion<'t, V: Send + Sync + 'static> {
    /// The name was not in the table: the new entry, held.
    Inserted(Held<'t, V>),
    /// The name was in the table already and nothing was inserted (the value passed in is
    /// dropped): the entry present, held, with its own polarity and value.
    Present(Held<'t, V>),
}

impl<'t, V: Send + Sync + 'static> Insertion<'t, V> {
    /// Whether a new entry was inserted.
    pub fn is_inserted(&self) -> bool {
        matches!(self, Insertion::Inserted(_))
    }

    /// The entry, new or present, held.
    pub fn into_held(self) -> Held<'t, V> {
        match self {
            Insertion::Inserted(held) | Insertion::Present(held) => held,
        }
    }

    /// The new entry, or `None` if the name was present (that entry is released).
    pub fn inserted(self) -> Option<Held<'t, V>> {
        match self {
            Insertion::Inserted(held) => Some(held),
            Insertion::Present(_) => None,
        }
    }

    /// The entry that was present, or `None` if a new one was inserted (it is released).
    pub fn present(self) -> Option<Held<'t, V>> {
        match self {
            Insertion::Present(held) => Some(held),
            Insertion::Inserted(_) => None,
        }
    }
}

/// What [`NegHash::bucket_shape`] reports of one entry (a diagnostic for tests and
/// benchmarks).
#[doc(hidden)]
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The entry's polarity.
    pub polarity: Polarity,
    /// Held by a [`Held`] handle.
    pub held: bool,
    /// Protected by a second chance: referenced by a lookup, or a refault (working set).
    pub referenced: bool,
    /// On the LRU.
    pub on_lru: bool,
}

/// What [`NegHash::shrink_negative`] did.
#[non_exhaustive]
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
        Ok(NegHash { store: Store::try_new(config)?, pool: new_pool() })
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.store.config
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
    /// use udcache_neghash::{Config, NegHash, Polarity, epoch};
    /// let table = NegHash::new(Config::for_entries(16));
    /// drop(table.insert(1, b"a", Polarity::Positive, 2u64));
    /// drop(table.insert(2, b"b", Polarity::Positive, 3u64));
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
        self.store.hasher.name(name)
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
    /// use udcache_neghash::{Config, NegHash, Polarity, epoch};
    /// let table = NegHash::new(Config::for_entries(16));
    /// drop(table.insert(1, b"f", Polarity::Positive, 7u64));
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
        let (key, b) = self.store.locate_hashed(parent, name, hash);
        self.store.buckets[b].find_tagged(guard, tag_bit(key), |e| e.matches(key, parent, name))
    }

    /// Finds `(parent, name)` and holds it: a held entry is never evicted.
    pub fn get(&self, parent: u64, name: &[u8]) -> Option<Held<'_, V>> {
        let (key, b) = self.store.locate(parent, name);
        let held = self.find_held(key, parent, name, b)?;
        held.touch();
        Some(held)
    }

    /// The entry `(parent, name)` (key word `key`, bucket `b`) held, if it is in the table and
    /// not being evicted; its referenced bit untouched.
    fn find_held(&self, key: u64, parent: u64, name: &[u8], b: usize) -> Option<Held<'_, V>> {
        let guard = epoch::pin();
        let entry = self.store.buckets[b]
            .find_owned_tagged(&guard, tag_bit(key), |e| e.matches(key, parent, name))?;
        entry.try_hold()?;
        let held = Held::new(entry, self, b);
        // Removed between the walk and the hold: not there (dropping `held` releases it).
        held.is_hashed().then_some(held)
    }

    /// Inserts an entry of polarity `polarity` for `(parent, name)`, held by the returned
    /// handle ([`Insertion::Inserted`]). If the name is present already, nothing is inserted
    /// and the present entry is returned, held, as it is ([`Insertion::Present`]).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity};
    /// let table = NegHash::new(Config::for_entries(16));
    /// let held = table.insert(1, b"a.h", Polarity::Negative, ()).into_held();
    /// assert!(held.is_negative());
    /// assert!(!table.insert(1, b"a.h", Polarity::Positive, ()).is_inserted());
    /// ```
    ///
    /// # Panics
    ///
    /// If `name` is longer than `u32::MAX` bytes: an entry keeps its name's length in 32 bits
    /// (beside the hash, in one word). Lookups of such a name simply miss.
    pub fn insert(
        &self,
        parent: u64,
        name: &[u8],
        polarity: Polarity,
        value: V,
    ) -> Insertion<'_, V> {
        match self.place(parent, name, polarity, value, true) {
            Ok(Some(held)) => Insertion::Inserted(held),
            Ok(None) => unreachable!("an insert asked to hold its entry returns the hold"),
            Err(present) => Insertion::Present(present),
        }
    }

    /// Inserts an entry of polarity `polarity` for `(parent, name)` that no one holds: the
    /// same as [`insert`](Self::insert) and dropping the hold at once, without locking the
    /// bucket a second time. The entry goes onto the LRU, and a negative one through the
    /// trimming rules, which may evict it or others of its bucket before the lock is dropped
    /// (and, with a negative share set, negatives of any bucket after). The way to file a
    /// miss's answer that no caller keeps. If the name is present already, nothing is
    /// inserted and the present entry is returned, held, as it is (`Err`).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity, epoch};
    /// let table = NegHash::new(Config::for_entries(16));
    /// assert!(table.insert_unused(1, b"a.h", Polarity::Negative, ()).is_ok());
    /// assert!(table.lookup(&epoch::pin(), 1, b"a.h").is_some_and(|e| e.is_negative()));
    /// assert_eq!(table.stats().unused, 1);
    /// let present = table.insert_unused(1, b"a.h", Polarity::Positive, ()).unwrap_err();
    /// assert!(present.is_negative());
    /// ```
    ///
    /// # Panics
    ///
    /// As [`insert`](Self::insert).
    pub fn insert_unused(
        &self,
        parent: u64,
        name: &[u8],
        polarity: Polarity,
        value: V,
    ) -> Result<(), Held<'_, V>> {
        self.place(parent, name, polarity, value, false).map(drop)
    }

    /// Inserts `(parent, name)` unless present: `Ok` with the new entry, held if `hold`, else
    /// its hold given up under the same lock (see the rules, Holders); or `Err` with the
    /// present entry, held.
    fn place(
        &self,
        parent: u64,
        name: &[u8],
        polarity: Polarity,
        value: V,
        hold: bool,
    ) -> Result<Option<Held<'_, V>>, Held<'_, V>> {
        assert!(
            u32::try_from(name.len()).is_ok(),
            "udcache_neghash: a name of {} bytes (at most u32::MAX)",
            name.len()
        );
        let (key, b) = self.store.locate(parent, name);
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
        let mut lock = self.store.lock_bucket(b);
        // Under the bucket lock no entry on the chain is claimed (claims happen under it and
        // finish before it is released), so `try_hold` cannot fail here.
        let found = self.store.buckets[b]
            .find_owned_tagged(&guard, tag_bit(key), |e| e.matches(key, parent, name));
        if let Some(found) = found {
            found.try_hold().expect("no claimed entry on a chain under its lock");
            return Err(Held::new(found, self, b));
        }
        let state = match polarity {
            Polarity::Positive => 0,
            Polarity::Negative if self.store.config.admission && self.store.refault(&lock, key) => {
                NEGATIVE | WORKINGSET
            }
            Polarity::Negative => NEGATIVE,
        };
        let entry = EntryRef::new(cell, &self.pool, |home| {
            Entry::new((key, parent, name), state, value, home)
        });
        // The bit first: no tagged find may see the entry without it.
        lock.chain.add_tags(tag_bit(key));
        // In front of the chain's first negative (see the module rules, Chain order).
        let mut at = lock.chain.cursor_mut(&guard);
        while at.get().is_some_and(|e| !e.has(NEGATIVE)) {
            at.move_next();
        }
        if at.insert_before(entry.clone()).is_err() {
            unreachable!("a new entry is on no chain");
        }
        self.store.counters.add(b, C::Entries, 1);
        if polarity.is_negative() {
            self.store.counters.add(b, C::Negative, 1);
            trim::enforce_cap(&self.store, &mut lock, &guard);
        }
        if hold {
            return Ok(Some(Held::new(entry, self, b)));
        }
        // The new entry's hold given up under the lock still held: what the last release does
        // (see `release`), without taking the lock again. No claim or unhash can come between
        // (both need this lock), so 1 here means unused now and hashed, which `release` checks
        // again after relocking. A hold taken without the lock since the link and still held
        // makes this 2 or more: that holder's last release settles the entry. Release: the
        // decrement continues the release sequence of any such holder's decrement, so an
        // evictor's later Acquire claim (under this lock, after us) sees that holder's writes,
        // as it would see ours.
        if entry.refs.fetch_sub(1, Ordering::Release) == 1 {
            self.settle(&entry, lock, &guard);
        }
        Ok(None)
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
    /// use udcache_neghash::{Config, NegHash, Polarity, epoch};
    /// let t = NegHash::new(Config::with_buckets(1));
    /// drop(t.insert(0, b"file", Polarity::Positive, ()));
    /// // The chain: a b c r, `r` the oldest on the LRU and referenced by a lookup.
    /// for name in ["r", "c", "b", "a"] {
    ///     drop(t.insert(0, name.as_bytes(), Polarity::Negative, ()));
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
        let negatives = trim::shrink(&self.store, n, Polarity::Negative);
        let mut done = negatives.0;
        if done < n && negatives.1 {
            done += trim::shrink(&self.store, n - done, Polarity::Positive).0;
        }
        self.pool.trim();
        done
    }

    /// Evicts up to `n` unused *negative* entries, oldest first per shard, second chances
    /// given as by [`shrink`](Self::shrink), counted exactly as there. For callers whose
    /// positive entries carry bookkeeping of their own (see
    /// [`oldest_unused`](Self::oldest_unused)), which should turn to
    /// them only when [`Shrunk::exhausted`] says no unused negative is left. Gives back pooled
    /// cells as `shrink` does.
    pub fn shrink_negative(&self, n: usize) -> Shrunk {
        let (evicted, exhausted) = trim::shrink(&self.store, n, Polarity::Negative);
        self.pool.trim();
        Shrunk { evicted, exhausted }
    }

    /// Holds up to `n` of the least recently used unused entries of polarity `polarity`, for
    /// a caller that must do its own bookkeeping before it removes them with
    /// [`Held::remove`]; referenced ones get a second chance instead of being returned, as in
    /// [`shrink`](Self::shrink). An entry whose removal would make rule 1 evict negatives (it
    /// separates two runs of them) is not returned, so the caller's count of what it removed
    /// is exact. Entries not removed go back to the LRU when released. The LRU is sharded:
    /// "least recently used" holds within a shard.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity};
    /// let t = NegHash::new(Config::with_buckets(8));
    /// drop(t.insert(1, b"f", Polarity::Positive, 'f'));
    /// drop(t.insert(1, b"miss", Polarity::Negative, '-'));
    /// let oldest = t.oldest_unused(5, Polarity::Positive);
    /// assert_eq!(oldest.len(), 1);
    /// assert_eq!(oldest[0].name(), b"f");
    /// assert!(oldest[0].remove());
    /// drop(oldest);
    /// assert_eq!((t.stats().entries, t.stats().negative), (1, 1));
    /// ```
    pub fn oldest_unused(&self, n: usize, polarity: Polarity) -> Vec<Held<'_, V>> {
        let oldest = trim::oldest_unused(&self.store, n, polarity);
        oldest.into_iter().map(|(entry, bucket)| Held::new(entry, self, bucket)).collect()
    }

    /// Takes every negative entry whose parent id `doomed` accepts out of the table: an unused
    /// one is evicted (counted as a shrink eviction), a held one removed as by
    /// [`Held::remove`] (it stays valid for its holders); returns how many left. A full scan
    /// of the table, one bucket lock at a time: for rare events such as a directory leaving
    /// the cache with its remembered misses, none of which may outlive it.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity};
    /// let t = NegHash::<()>::new(Config::with_buckets(8));
    /// drop(t.insert(1, b"gone", Polarity::Negative, ()));
    /// let held = t.insert(1, b"held", Polarity::Negative, ()).inserted().unwrap();
    /// drop(t.insert(2, b"kept", Polarity::Negative, ()));
    /// assert_eq!(t.purge_negatives(&|parent| parent == 1), 2);
    /// assert_eq!(t.stats().negative, 1);
    /// assert!(!held.is_hashed() && t.get(1, b"held").is_none());
    /// ```
    pub fn purge_negatives(&self, doomed: &dyn Fn(u64) -> bool) -> usize {
        trim::purge_negatives(&self.store, doomed)
    }

    /// Calls `f` on every entry in the table, one bucket at a time under its lock (so `f` must
    /// not call back into the table).
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity};
    /// let t = NegHash::new(Config::with_buckets(4));
    /// drop(t.insert(1, b"a", Polarity::Positive, 10));
    /// drop(t.insert(1, b"b", Polarity::Negative, 20));
    /// let mut sum = 0;
    /// t.for_each_entry(|e| sum += e.value());
    /// assert_eq!(sum, 30);
    /// ```
    pub fn for_each_entry(&self, mut f: impl FnMut(&Entry<V>)) {
        for b in 0..self.store.buckets.len() {
            let guard = epoch::pin();
            let _lock = self.store.lock_bucket(b);
            self.store.buckets[b].iter(&guard).for_each(&mut f);
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let c = &self.store.counters;
        let pool = self.pool.stats();
        Stats {
            entries: c.sum(C::Entries),
            unused: c.sum(C::Unused),
            negative: c.sum(C::Negative),
            buckets: self.store.buckets.len() as u64,
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
    /// tests and benchmarks that check the bounds (a diagnostic, hidden from the docs).
    #[doc(hidden)]
    pub fn bucket_shape(&self, index: usize) -> Vec<Shape> {
        let guard = epoch::pin();
        let _lock = self.store.lock_bucket(index);
        self.store.buckets[index]
            .iter(&guard)
            .map(|e| Shape {
                polarity: Polarity::of_state(e.state.load(Ordering::Relaxed)),
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
    /// violation found, described. A diagnostic for tests, hidden from the docs.
    #[doc(hidden)]
    pub fn verify(&self) -> Result<(), String> {
        let (mut entries, mut negatives, mut on_lru) = (0, 0, 0);
        for b in 0..self.store.buckets.len() {
            let shape = self.bucket_shape(b);
            entries += shape.len();
            negatives += shape.iter().filter(|s| s.polarity.is_negative()).count();
            on_lru += shape.iter().filter(|s| s.on_lru).count();
            let unused_negatives =
                shape.iter().filter(|s| s.polarity.is_negative() && !s.held).count();
            if let Some(cap) = self.store.config.negative_cap
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
                run =
                    if s.polarity.is_negative() && !s.held && !s.referenced { run + 1 } else { 0 };
                if self.store.config.rule1 && run > trim::MAX_RUN {
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
        self.store.buckets.len()
    }

    /// The bucket `(parent, name)` hashes to (stable for the table's life).
    pub fn bucket_of(&self, parent: u64, name: &[u8]) -> usize {
        self.store.bucket_of(parent, name)
    }

    /// Called by [`Held`]'s drop: the last release settles the entry.
    fn release(&self, entry: &EntryRef<V>, bucket: usize) {
        // Release: pairs with the Acquire of an evictor's claim (the evictor sees our writes).
        if entry.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        let guard = epoch::pin();
        let lock = self.store.lock_bucket(bucket);
        // Acquire: pairs with other holders' Release decrements.
        if entry.refs.load(Ordering::Acquire) != 0 || !entry.is_hashed() {
            return;
        }
        self.settle(entry, lock, &guard);
    }

    /// Settles an entry that has just become unused, under its bucket's lock `lock`: onto the
    /// LRU, then, if negative, the trimming rules (rule 1 on its run, the cap on its bucket,
    /// and the table's share after the lock is dropped).
    fn settle(&self, entry: &EntryRef<V>, mut lock: BucketLock<'_, V>, guard: &Guard) {
        self.store.lru.add(&lock, entry, &self.store.counters);
        if entry.has(NEGATIVE) {
            if self.store.config.rule1 {
                trim::run_rule(&self.store, &mut lock, entry, guard);
            }
            trim::enforce_cap(&self.store, &mut lock, guard);
            drop(lock);
            if let Some(share) = self.store.config.negative_share {
                trim::enforce_share(&self.store, share);
            }
        }
    }
}

impl<V: Send + Sync + 'static> std::fmt::Debug for NegHash<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NegHash")
            .field("config", &self.store.config)
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
        self.set_polarity(Polarity::Positive)
    }

    /// Turns a positive entry negative (the name was unlinked). Returns false if it already was.
    pub fn make_negative(&self) -> bool {
        self.set_polarity(Polarity::Negative)
    }

    /// Gives the entry polarity `to` (see [`make_positive`](Self::make_positive),
    /// [`make_negative`](Self::make_negative)). Returns false if it had it already, or is out
    /// of the table. The entry stays where it is in its chain.
    ///
    /// ```
    /// use udcache_neghash::{Config, NegHash, Polarity};
    /// let table = NegHash::new(Config::for_entries(16));
    /// let held = table.insert(1, b"f", Polarity::Negative, ()).into_held();
    /// assert!(held.set_polarity(Polarity::Positive));
    /// assert!(!held.set_polarity(Polarity::Positive));
    /// assert_eq!((table.stats().entries, table.stats().negative), (1, 0));
    /// ```
    pub fn set_polarity(&self, to: Polarity) -> bool {
        let t = self.table;
        let lock = t.store.lock_bucket(self.bucket);
        let to_negative = to.is_negative();
        if self.entry.has(NEGATIVE) == to_negative || !self.entry.is_hashed() {
            return false;
        }
        // Release: pairs with the Acquire in `Entry::polarity`.
        if to_negative {
            self.entry.state.fetch_or(NEGATIVE, Ordering::Release);
        } else {
            self.entry.state.fetch_and(!NEGATIVE, Ordering::Release);
        }
        t.store.counters.add(self.bucket, C::Negative, if to_negative { 1 } else { -1 });
        t.store.lru.refile(&lock, &self.entry);
        true
    }

    /// Takes the entry out of the table (it stays valid for this handle and for readers that
    /// found it). Returns false if it was out already.
    pub fn remove(&self) -> bool {
        let t = self.table;
        let guard = epoch::pin();
        let mut lock = t.store.lock_bucket(self.bucket);
        if !self.entry.is_hashed() {
            return false;
        }
        trim::unhash(&t.store, &mut lock, &self.entry, &guard);
        trim::retrim(&t.store, &mut lock, &guard, usize::MAX);
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
