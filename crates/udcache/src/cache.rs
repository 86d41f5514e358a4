//! The cache: dentries on the neghash name table, inodes on a second table, and the writers'
//! locks.
//!
//! # Rules
//!
//! - **Name table** (`names`): a dentry is a neghash entry keyed `(parent ino, name)` whose
//!   value is a `Slot` (`dentry.rs`; null: negative; else the inode). Lookups take no lock and
//!   write only neghash's referenced bit, and only when clear. Writers look names up without
//!   it (`step`, neghash's `peek`): a writer's look is no use of the name.
//! - **Inode table** (`inodes`): a second neghash table holding only positive entries, keyed
//!   `(0, ino as 8 bytes)`, value an `InodeRef` (inodes live in a `udcache-gp` pool: see
//!   `inode/recycle.rs`); lock-free to read (for `getattr`, `..` and the
//!   walk's root). An inode is on it from its first `add` until `forget` takes its lookup count
//!   to zero. The root is on it for the cache's life (`forget` refuses it, `add` refuses its
//!   number), and the cache keeps one more count of it (`root`), so the commonest start of a
//!   walk costs no table lookup. A new inode is reachable through its first dentry a moment before it is on the
//!   table (both under its stripe lock, so `forget` and `count_lookup` wait for it; a racing
//!   `getattr` may answer [`Error::UnknownInode`]).
//! - **Name stripe locks** (`name_locks`, `NameLock` is the proof): every writer of a name's
//!   slot or `NEGATIVE` bit holds the stripe of `(parent, name)`. Two stripes are taken in
//!   ascending order.
//! - **Inode stripe locks** (`inode_locks`): held to create an inode, change its lookup count
//!   or drop it, so `add` and `forget` of one number are serialised; by `add` and
//!   `add_negative` on the *parent's* number too, from the check that it is cached to the
//!   filing, so a parent's last `forget` (which drops everything below it under its stripe)
//!   cannot leave a name filed under a number no longer cached; and, inside a rename section,
//!   across a move of names (`lock_moving`), so `add`, which checks under the stripe that a
//!   directory has no name yet, cannot give a moving directory a second one. `add` of a
//!   directory cached without a name (its name was shrunk, unlinked or invalidated away) opens
//!   a rename section first: it moves the directory's `..`, and it drops what was cached below
//!   the directory while it had none (no `invalidate` of an ancestor could reach it).
//! - **Rename lock and sequence**: see `rename.rs`.
//! - **Lock order**: the "Lock order" table in the repository's `ARCHITECTURE.md`. Two stripes
//!   of one kind are taken in ascending order (a rename section's exchange, and `add`'s inode
//!   and parent).
//! - **Publish and retire**: an inode becomes reachable by a `Release` store of a slot or a
//!   neghash insert (both `Release`); a removed entry is freed through the epoch, after every
//!   reader pinned at the time, and an inode whose last count is dropped is reused by its pool
//!   only after such a grace period.
//! - **Validity**: each dentry's expiry and parent generation sit beside its slot, written
//!   under the name's stripe lock with the inode pointer; lockless readers
//!   ([`Dcache::lookup`], walks, the cached answer of `resolve`) trust only fresh dentries and
//!   treat the others as misses to revalidate. Rules in `valid.rs`, `walk/checks.rs` and `reval.rs`.
//! - **Eviction**: neghash's rules evict settled *negative* dentries at any time (the bound on
//!   negatives). Positive dentries leave only through this crate ([`Dcache::shrink`],
//!   `invalidate`, `unlink`, `forget`), each under the name's stripe lock with the alias list
//!   and the parent's children map kept in step (see `writers/tree.rs`); inodes leave only by
//!   `forget`.

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

use udcache_gp::GpPool;
use udcache_readdir::ReaddirCache;

use udcache_neghash::{Held, NameHash, NegHash, Polarity, epoch, epoch::Guard};

use crate::attr::Attr;
use crate::clock::Ticks;
use crate::config::{Config, UnlinkPolicy};
use crate::dentry::{
    Dentry, DentryEntry, DentryWrites, Exclusive, InodeLock, NameLock, Named, Slot,
};
use crate::dirstate::DirState;
use crate::error::Error;
use crate::fs::{FileType, Filesystem, InodeSpec};
use crate::inflight::Inflight;
use crate::inode::{Inode, InodeRef};
use crate::name::validate_name;
use crate::rename::RenameSeq;
use crate::stats::{Event, Events, Stats};
use crate::sync::{Mutex, MutexGuard, Padded, lock};
use crate::valid::{Reason, Timeouts, Validity};

/// The root directory's inode number (FUSE's `FUSE_ROOT_ID`). Every cache starts with it.
pub const ROOT_INO: u64 = 1;

/// Writer lock stripes (names and inodes each): enough that unrelated writers rarely meet.
const STRIPES: usize = 64;

/// The parent id under which the inode table keys inode numbers.
pub(crate) const INODE_KEY_PARENT: u64 = 0;

/// What [`Dcache::lookup`] found.
#[derive(Clone, Copy, Debug)]
pub enum Lookup<'g> {
    /// A positive dentry: the name exists and is this inode.
    Hit(&'g Inode),
    /// A negative dentry: the name is known not to exist.
    Negative,
    /// Nothing cached: ask the filesystem.
    Miss,
}

/// What a lockless step found: a [`Lookup`], with what the dentry keeps of its inode.
#[derive(Clone, Copy)]
pub(crate) enum Found<'g> {
    Hit(Named<'g>),
    Negative,
    Miss,
}

impl<'g> From<Found<'g>> for Lookup<'g> {
    fn from(found: Found<'g>) -> Self {
        match found {
            Found::Hit(child) => Lookup::Hit(child.inode),
            Found::Negative => Lookup::Negative,
            Found::Miss => Lookup::Miss,
        }
    }
}

impl<'g> From<Lookup<'g>> for Found<'g> {
    /// Number and type read from the inode (a step that did not take them from a dentry).
    fn from(lookup: Lookup<'g>) -> Self {
        match lookup {
            Lookup::Hit(inode) => Found::Hit(Named::of(inode)),
            Lookup::Negative => Found::Negative,
            Lookup::Miss => Found::Miss,
        }
    }
}

/// A search of the name table: counted as a use of the dentry it finds
/// ([`NegHash::lookup`]) or not ([`NegHash::peek`]).
type Search<'g> = fn(&'g NegHash<Dentry>, &'g Guard, u64, &[u8]) -> Option<&'g DentryEntry>;

/// A dentry a lockless reader found but may not trust: what revalidating it needs.
pub(crate) struct Stale<'g> {
    pub(crate) entry: &'g DentryEntry,
    pub(crate) inode: Option<&'g Inode>,
    pub(crate) word: Validity,
    pub(crate) reason: Reason,
}

/// The inode stripes a rename section holds across a move (see [`Dcache::lock_moving`]).
pub(crate) struct MovingLock<'a> {
    _guards: (MutexGuard<'a, ()>, Option<MutexGuard<'a, ()>>),
}

/// A directory-entry cache: names, inodes and remembered misses, read without locks.
/// See the [crate docs](crate).
pub struct Dcache {
    pub(crate) names: NegHash<Dentry>,
    pub(crate) inodes: NegHash<Slot>,
    /// Each stripe on lines of its own (writers of unrelated names take neighbouring stripes).
    name_locks: Box<[Padded<Mutex<()>>]>,
    inode_locks: Box<[Padded<Mutex<()>>]>,
    pub(crate) rename: RenameSeq,
    pub(crate) events: Events,
    pub(crate) inflight: Inflight,
    pub(crate) unlink: UnlinkPolicy,
    pub(crate) readdir_cache: ReaddirCache,
    pub(crate) pool: ManuallyDrop<Box<GpPool<Inode>>>,
    /// A count of the root's inode, given back in `drop` before the pool goes.
    root: ManuallyDrop<InodeRef>,
    pub(crate) ticks: Ticks,
    pub(crate) timeouts: Timeouts,
    fs: Option<Arc<dyn Filesystem>>,
}

pub(crate) fn ino_key(ino: u64) -> [u8; 8] {
    ino.to_le_bytes()
}

/// Making a cache, reading it without locks, the writers' locks, attributes and statistics.
impl Dcache {
    /// An empty cache holding only the root directory, [`ROOT_INO`].
    ///
    /// # Panics
    ///
    /// If its tables cannot be allocated ([`try_new`](Self::try_new) returns the error).
    pub fn new(config: Config) -> Self {
        Self::try_new(config).unwrap_or_else(|e| panic!("udcache: {e}"))
    }

    /// An empty cache holding only the root directory, or [`Error::OutOfMemory`] if the
    /// tables' bucket heads, all the memory it allocates up front, cannot be allocated (the
    /// sizes are the caller's: a C caller's `expected_entries`, for one).
    ///
    /// ```
    /// use udcache::{Config, Dcache, Error};
    /// assert!(Dcache::try_new(Config::for_entries(64)).is_ok());
    /// assert!(matches!(Dcache::try_new(Config::for_entries(1 << 60)), Err(Error::OutOfMemory)));
    /// ```
    pub fn try_new(config: Config) -> Result<Self, Error> {
        // The tables first: nothing else is made until they are.
        let names = NegHash::try_new(config.names).map_err(|_| Error::OutOfMemory)?;
        let inodes = NegHash::try_new(config.inodes).map_err(|_| Error::OutOfMemory)?;
        let pool = ManuallyDrop::new(crate::inode::new_pool());
        let root = InodeSpec { ino: ROOT_INO, kind: FileType::Directory, fs_data: 0 };
        let root = InodeRef::new(&pool, root, ROOT_INO, 1);
        let cache = Dcache {
            names,
            inodes,
            name_locks: (0..STRIPES).map(|_| Padded(Mutex::new(()))).collect(),
            inode_locks: (0..STRIPES).map(|_| Padded(Mutex::new(()))).collect(),
            rename: RenameSeq::new(),
            events: Events::new(),
            inflight: Inflight::new(),
            unlink: config.unlink,
            readdir_cache: ReaddirCache::with_config(
                udcache_readdir::Config::default()
                    .with_budget_pages(config.readdir_pages.get())
                    .with_page_entries(config.page_entries.get()),
            ),
            pool,
            root: ManuallyDrop::new(root.clone()),
            ticks: Ticks::new(config.clock.0),
            timeouts: config.timeouts,
            fs: config.fs.map(|f| f.0),
        };
        drop(cache.inodes.insert(
            INODE_KEY_PARENT,
            &ino_key(ROOT_INO),
            Polarity::Positive,
            Slot::positive(root),
        ));
        Ok(cache)
    }

    /// The configured filesystem (see [`Config::with_filesystem`]), or
    /// [`Error::NoFilesystem`].
    pub(crate) fn filesystem(&self) -> Result<&Arc<dyn Filesystem>, Error> {
        self.fs.as_ref().ok_or(Error::NoFilesystem)
    }

    /// The cached inode numbered `ino`, borrowed for the guard's life. No lock, and no write:
    /// the inode table is searched with `peek`, since nothing reads its referenced bits (it
    /// holds no negatives to trim and is never shrunk: inodes leave by `forget`).
    pub fn inode<'g>(&'g self, guard: &'g Guard, ino: u64) -> Option<&'g Inode> {
        if ino == ROOT_INO {
            return Some(&self.root);
        }
        self.inodes.peek(guard, INODE_KEY_PARENT, &ino_key(ino))?.value().load(guard)
    }

    /// A counted reference to the cached inode numbered `ino`.
    pub(crate) fn inode_arc(&self, ino: u64) -> Option<InodeRef> {
        let guard = epoch::pin();
        // `peek`: as in `inode`.
        self.inodes.peek(&guard, INODE_KEY_PARENT, &ino_key(ino))?.value().load_counted(&guard)
    }

    /// The children and listing of cached directory `ino`, borrowed under `guard` with no
    /// count taken (an inode is not recycled while a guard that saw it lives: `inode/recycle.rs`).
    pub(crate) fn dir_state<'g>(&'g self, guard: &'g Guard, ino: u64) -> Option<&'g DirState> {
        self.inode(guard, ino)?.dir()
    }

    /// Looks `name` up in directory `parent` without locks; a hit writes nothing shared but
    /// neghash's referenced bit (once; [`peek`](Self::peek) looks without that write). Counts
    /// no lookup (see [`Dcache::resolve`]). A dentry that is no longer trusted (expired, or
    /// negative in a changed directory: see [`Timeouts`]) is a [`Lookup::Miss`]:
    /// [`Dcache::resolve`] revalidates it.
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, Lookup, ROOT_INO, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// let spec = InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 7 };
    /// cache.add(ROOT_INO, b"a", spec).unwrap();
    /// let guard = epoch::pin();
    /// assert!(matches!(cache.lookup(&guard, ROOT_INO, b"a"), Ok(Lookup::Hit(i)) if i.fs_data() == 7));
    /// assert!(matches!(cache.lookup(&guard, ROOT_INO, b"b"), Ok(Lookup::Miss)));
    /// assert!(cache.lookup(&guard, ROOT_INO, b"a/b").is_err());
    /// ```
    pub fn lookup<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        name: &[u8],
    ) -> Result<Lookup<'g>, Error> {
        self.look(guard, (parent, name), NegHash::lookup)
    }

    /// What [`lookup`](Self::lookup) answers of a name already validated, telling a stale
    /// dentry (`Err`) from no dentry (`Found::Miss`).
    pub(crate) fn fresh_or_stale<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        name: &[u8],
    ) -> Result<Found<'g>, Stale<'g>> {
        self.judged(guard, parent, self.names.lookup(guard, parent, name))
    }

    /// Looks `name` up in directory `parent` as [`lookup`](Self::lookup) does, but as no use
    /// of the dentry: its referenced bit is left as it is, so what [`shrink`](Self::shrink)
    /// and the negative-trimming rules see of it does not change. For a caller that checks
    /// what the cache holds without acting on the name (a consistency check, a debugger, a
    /// statistics pass); everything else, `lookup`'s answer included, is the same.
    ///
    /// ```
    /// use udcache::{Config, Dcache, Lookup, ROOT_INO, epoch};
    /// // One bucket, so one LRU shard: `shrink` takes the least recently used first.
    /// let two_misses = || {
    ///     let cache = Dcache::new(Config::for_entries(64).with_buckets(1));
    ///     cache.add_negative(ROOT_INO, b"old").unwrap();
    ///     cache.add_negative(ROOT_INO, b"new").unwrap();
    ///     cache
    /// };
    /// let guard = epoch::pin();
    /// let left = |cache: &Dcache, name: &[u8]| {
    ///     matches!(cache.peek(&guard, ROOT_INO, name), Ok(Lookup::Negative))
    /// };
    /// // Peeked at, "old" is still the least recently used: the first to go.
    /// let peeked = two_misses();
    /// assert!(left(&peeked, b"old"));
    /// assert_eq!(peeked.shrink(1), 1);
    /// assert!(!left(&peeked, b"old") && left(&peeked, b"new"));
    /// // Looked up, it was used: it gets a second chance and "new" goes.
    /// let used = two_misses();
    /// assert!(matches!(used.lookup(&guard, ROOT_INO, b"old"), Ok(Lookup::Negative)));
    /// assert_eq!(used.shrink(1), 1);
    /// assert!(left(&used, b"old") && !left(&used, b"new"));
    /// ```
    pub fn peek<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        name: &[u8],
    ) -> Result<Lookup<'g>, Error> {
        self.look(guard, (parent, name), NegHash::peek)
    }

    /// [`lookup`](Self::lookup) or [`peek`](Self::peek), by how the name table is searched.
    fn look<'g>(
        &'g self,
        guard: &'g Guard,
        (parent, name): (u64, &[u8]),
        search: Search<'g>,
    ) -> Result<Lookup<'g>, Error> {
        validate_name(name)?;
        let found = self.judged(guard, parent, search(&self.names, guard, parent, name));
        Ok(found.map_or(Lookup::Miss, Lookup::from))
    }

    /// [`judge`](Self::judge) of what the name table found for a name of `parent`.
    fn judged<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        entry: Option<&'g DentryEntry>,
    ) -> Result<Found<'g>, Stale<'g>> {
        let dir_gen = || self.inode(guard, parent).map_or(0, Inode::dir_gen);
        self.judge(guard, entry, dir_gen, || self.ticks.now())
    }

    /// `lookup` of a name already validated, trusting only a fresh dentry; a stale one is
    /// returned as `Err` with what a revalidation needs. `dir_gen` (the parent's generation)
    /// is asked only for a negative dentry, `now` only for a finite expiry. `hash` is the
    /// name's hash in the name table, made by the caller (a walk makes it a step ahead).
    #[inline]
    pub(crate) fn checked<'g>(
        &'g self,
        guard: &'g Guard,
        parent: u64,
        (name, hash): (&[u8], NameHash),
        dir_gen: impl FnOnce() -> u32,
        now: impl FnOnce() -> u32,
    ) -> Result<Found<'g>, Stale<'g>> {
        self.judge(guard, self.names.lookup_hashed(guard, parent, name, hash), dir_gen, now)
    }

    /// Whether the dentry the name table found (if any) is trusted now: as
    /// [`checked`](Self::checked) answers.
    #[inline]
    fn judge<'g>(
        &'g self,
        guard: &'g Guard,
        entry: Option<&'g DentryEntry>,
        dir_gen: impl FnOnce() -> u32,
        now: impl FnOnce() -> u32,
    ) -> Result<Found<'g>, Stale<'g>> {
        let Some(entry) = entry else { return Ok(Found::Miss) };
        // Both at one instant: the dentry's sequence count (see `dentry.rs`).
        let (child, word) = entry.snapshot(guard);
        match word.check(child.is_none(), dir_gen, now) {
            Ok(()) => Ok(child.map_or(Found::Negative, Found::Hit)),
            Err(reason) => Err(Stale { entry, inode: child.map(|c| c.inode), word, reason }),
        }
    }

    /// The validity word of a dentry of `parent` written now (under the name's stripe lock),
    /// trusted for `ttl`. `asked`: the parent's generation read before the filesystem gave the
    /// answer being filed (`None`: what the cache or the filesystem asserts now). An answer
    /// that raced a change of the directory — its generation moved since — is filed expired,
    /// so its next use revalidates it: this closes the race of a lookup answered before an
    /// [`invalidate`](Dcache::invalidate) and filed after it.
    pub(crate) fn word(&self, parent: u64, ttl: Duration, asked: Option<u32>) -> Validity {
        self.word_at(self.dir_gen_now(parent), ttl, asked)
    }

    /// [`Dcache::word`] for a child of `dir`, already in hand.
    pub(crate) fn word_in(&self, dir: &Inode, ttl: Duration, asked: Option<u32>) -> Validity {
        self.word_at(dir.dir_gen(), ttl, asked)
    }

    /// [`Dcache::word`] given the directory's generation `now`.
    fn word_at(&self, now: u32, ttl: Duration, asked: Option<u32>) -> Validity {
        let generation = asked.unwrap_or(now);
        let expiry = if generation == now { self.ticks.expiry(ttl) } else { 0 };
        Validity::new(expiry, generation)
    }

    /// [`Dcache::word`] with the configured timeout of a dentry of this polarity.
    pub(crate) fn validity(&self, parent: u64, negative: bool, asked: Option<u32>) -> Validity {
        self.word(parent, self.timeouts.of(negative), asked)
    }

    /// The current generation of directory `parent` (0 if it is not cached).
    pub(crate) fn dir_gen_now(&self, parent: u64) -> u32 {
        let guard = epoch::pin();
        self.inode(&guard, parent).map_or(0, Inode::dir_gen)
    }

    /// `lookup` of a name already validated, fresh or not (writers decide by the slot alone).
    /// It sets no referenced bit: a writer's look at a name is no use of it, and a refused
    /// call must change nothing, not even the hint that keeps a dentry from eviction.
    pub(crate) fn step<'g>(&'g self, guard: &'g Guard, parent: u64, name: &[u8]) -> Lookup<'g> {
        match self.names.peek(guard, parent, name) {
            None => Lookup::Miss,
            Some(d) => d.value().load(guard).map_or(Lookup::Negative, Lookup::Hit),
        }
    }

    /// Whether `(parent, name)` is a positive dentry now.
    pub(crate) fn is_positive(&self, parent: u64, name: &[u8]) -> bool {
        matches!(self.step(&epoch::pin(), parent, name), Lookup::Hit(_))
    }

    /// The dentry `(parent, name)`, held (a held dentry is never evicted).
    pub(crate) fn dentry(&self, parent: u64, name: &[u8]) -> Option<Held<'_, Dentry>> {
        self.names.get(parent, name)
    }

    /// Opens a rename section (see `rename.rs`).
    pub(crate) fn write_section(&self) -> crate::rename::WriteSection<'_> {
        self.rename.write()
    }

    fn stripe(&self, parent: u64, name: &[u8]) -> usize {
        self.names.bucket_of(parent, name) % STRIPES
    }

    /// The stripe lock of one name if it is free: the lockless path refreshes a revalidated
    /// dentry only if it need not wait.
    pub(crate) fn try_lock_name(&self, parent: u64, name: &[u8]) -> Option<NameLock<'_>> {
        let m = &self.name_locks[self.stripe(parent, name)].0;
        let guard = match m.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(NameLock { _guards: (guard, None) })
    }

    /// Locks the stripes of one or two names, ascending.
    pub(crate) fn lock_names(&self, a: (u64, &[u8]), b: Option<(u64, &[u8])>) -> NameLock<'_> {
        let sa = self.stripe(a.0, a.1);
        let Some(sb) = b.map(|b| self.stripe(b.0, b.1)).filter(|&sb| sb != sa) else {
            return NameLock { _guards: (lock(&self.name_locks[sa].0), None) };
        };
        let (lo, hi) = (sa.min(sb), sa.max(sb));
        let first = lock(&self.name_locks[lo].0);
        NameLock { _guards: (first, Some(lock(&self.name_locks[hi].0))) }
    }

    pub(crate) fn lock_inode(&self, ino: u64) -> InodeLock<'_> {
        InodeLock { _guard: lock(&self.inode_locks[Self::inode_stripe(ino)].0) }
    }

    fn inode_stripe(ino: u64) -> usize {
        (ino % STRIPES as u64) as usize
    }

    /// Locks the inode stripes of `a` and `b` (ascending, a shared stripe once). A rename
    /// section holds them across a move of the names of inodes `a` and `b`: `add` checks under
    /// an inode's stripe that a directory has no name yet, so it cannot give a directory a
    /// second name while it is between its old name and its new one.
    pub(crate) fn lock_moving(&self, a: u64, b: Option<u64>) -> MovingLock<'_> {
        let sa = Self::inode_stripe(a);
        let Some(sb) = b.map(Self::inode_stripe).filter(|&sb| sb != sa) else {
            return MovingLock { _guards: (lock(&self.inode_locks[sa].0), None) };
        };
        let first = lock(&self.inode_locks[sa.min(sb)].0);
        MovingLock { _guards: (first, Some(lock(&self.inode_locks[sa.max(sb)].0))) }
    }

    /// Checks that `ino` is a cached directory.
    pub(crate) fn check_dir(&self, ino: u64) -> Result<(), Error> {
        let guard = epoch::pin();
        match self.inode(&guard, ino) {
            None => Err(Error::UnknownInode(ino)),
            Some(i) if i.kind() != FileType::Directory => Err(Error::NotDirectory(ino)),
            Some(_) => Ok(()),
        }
    }

    /// The cached attributes of `ino` if they have not expired (`Ok(None)`: expired or never
    /// set). One consistent snapshot, read without locks while a writer may be updating it.
    pub fn getattr(&self, ino: u64) -> Result<Option<Attr>, Error> {
        let guard = epoch::pin();
        let inode = self.inode(&guard, ino).ok_or(Error::UnknownInode(ino))?;
        let (attr, until) = inode.attr_words();
        // `until` is 0 if never set, so never after now; NEVER_NS is after every now.
        Ok((until > self.ticks.elapsed_ns()).then_some(attr))
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let n = self.names.stats();
        let r = self.readdir_cache.stats();
        Stats {
            nr_dentry: n.entries,
            nr_unused: n.unused,
            nr_negative: n.negative,
            nr_buckets: n.buckets,
            nr_inodes: self.inodes.stats().entries,
            negative_evictions: n.evicted_rule1 + n.evicted_rule2 + n.evicted_global,
            walk_fallbacks: self.events.get(Event::WalkFallback),
            rename_sections: self.rename.sections(),
            backend_lookups: self.events.get(Event::BackendLookup),
            coalesced_misses: self.events.get(Event::CoalescedMiss),
            coalesced_sleeps: self.events.get(Event::CoalescedSleep),
            coalesced_wait_ns: self.events.get(Event::CoalescedWaitNs),
            complete_dir_negatives: self.events.get(Event::CompleteDirNegative),
            inodes_recycled: self.pool.stats().recycled,
            dentries_recycled: n.recycled,
            readdir_hits: r.hits,
            readdir_misses: r.misses,
            revalidations: self.events.get(Event::Revalidation),
            fallback_expired: self.events.get(Event::Fallback(Reason::Expired)),
            fallback_verifier: self.events.get(Event::Fallback(Reason::Verifier)),
            fallback_access: self.events.get(Event::Fallback(Reason::AccessMiss)),
            fallback_needs_block: self.events.get(Event::Fallback(Reason::NeedsBlock)),
            access_hits: self.events.get(Event::AccessHit),
            access_calls: self.events.get(Event::AccessCall),
            path_rewalks: self.events.get(Event::PathRewalk),
        }
    }

    /// Checks the name table's invariants (negative bounds, counters against chains); call it
    /// while no other thread changes the cache. Returns the first violation, described.
    pub fn verify(&self) -> Result<(), String> {
        self.names.verify()?;
        self.inodes.verify()
    }

    /// The configured unlink policy.
    pub fn unlink_policy(&self) -> UnlinkPolicy {
        self.unlink
    }
}

impl Drop for Dcache {
    /// Gives back every inode count the tables hold, now (the tables' entries are freed a
    /// grace period later), then drops the pool, which frees every inode (see `inode/recycle.rs`).
    fn drop(&mut self) {
        // The dentries' slots (`Dentry` derefs to its slot), then the inode table's.
        self.names.for_each_entry(|e| drop(Slot::take(e.value(), &Exclusive)));
        self.inodes.for_each_entry(|e| drop(e.value().take(&Exclusive)));
        // SAFETY: dropped once, here; the field is not used after it.
        unsafe { ManuallyDrop::drop(&mut self.root) };
        let s = self.pool.stats();
        // Every object the pool made is parked or a spare (never handed out): none is live.
        debug_assert_eq!(s.objects, s.parked + s.spares, "an inode count outlived its cache");
        #[cfg(not(loom))]
        // SAFETY: dropped once, here; every inode is back in the pool (no count left, checked
        // above in debug builds), so nothing will free into it or read its address again.
        unsafe {
            ManuallyDrop::drop(&mut self.pool)
        };
    }
}

impl std::fmt::Debug for Dcache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dcache").field("stats", &self.stats()).finish()
    }
}
