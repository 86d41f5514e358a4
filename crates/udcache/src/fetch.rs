//! Misses: asking the filesystem, once per name however many threads miss it together.
//!
//! # Rules
//!
//! - One mutex guards the list of calls in flight, each for one `(parent, name)`. A thread
//!   that misses looks the name up in the cache again *under* that mutex: a caller files its
//!   answer in the cache before it takes its call off the list, so a name is either cached
//!   (fresh), or in flight, or neither (and this thread becomes its caller). The list is a
//!   vector searched by comparing keys: a server has about one call in flight per thread, and
//!   scanning a handful beats hashing the name (and copying it to look it up) on every miss.
//! - A call is a lookup of a missing name or the blocking revalidation of a stale one (see
//!   `reval.rs`), which may end in a lookup; both read the parent's generation before
//!   asking and file what they learn under it. The call revalidates only a dentry the look
//!   under the in-flight mutex found stale: one filed after that look (by `add`, say) is met
//!   when the lookup's answer is filed, which renews a negative or, finding a positive,
//!   answers "look again".
//! - The filesystem is called with no lock held and no epoch guard pinned (a slow call must not
//!   hold back grace periods). The looks that decide who calls nest in one pin: a pin that
//!   nests in none is a full fence, and every 128th such pin of a thread also tries to
//!   advance the global epoch, a line every thread's pins read.
//! - How a waiter waits for the call (spinning, then asleep): see `inflight.rs`.
//! - Waiters take the caller's answer as their own (they do not look again: the negative the
//!   caller filed may already have been evicted by the bounding rules), always read under the
//!   call's mutex. Each waiter is counted in
//!   [`Stats::coalesced_misses`](crate::Stats::coalesced_misses), each one that slept also in
//!   [`Stats::coalesced_sleeps`](crate::Stats::coalesced_sleeps), and the time they waited in
//!   [`Stats::coalesced_wait_ns`](crate::Stats::coalesced_wait_ns).
//! - Errors are not cached: the caller and its waiters all get the errno; the next miss calls
//!   again. A caller whose filesystem panics still ends its call: its waiters get `EIO`.
//! - Lock order: the in-flight mutex, then a call's mutex; neither is held while any cache lock
//!   is taken (filing the answer happens before the map lock).

use std::sync::Arc;

use udcache_neghash::epoch::{self, Guard};

use crate::cache::{Dcache, Found, Stale};
use crate::dentry::DentryWrites;
use crate::error::Error;
use crate::fs::{Filesystem, InodeSpec, Resolved, Revalidate};
use crate::inflight::{Call, Ending, Settle};
use crate::inode::Inode;
use crate::name::validate_name;
use crate::stats::Event;
use crate::walk::{cached, seen};
use crate::writers::Spliced;

/// What a caller's call does: revalidate a `stale` dentry first; `lookup` the name if no
/// dentry holds it (then). Every answer is only as new as the parent's `generation`, read
/// before asking.
#[derive(Clone, Copy)]
struct Ask {
    lookup: bool,
    stale: bool,
    generation: u32,
}

/// What the cache holds for a name, as a miss sees it.
enum InCache {
    /// A dentry it trusts: the answer.
    Fresh(Resolved),
    /// A dentry it no longer trusts: to revalidate.
    Stale,
    /// No dentry.
    Nothing,
}

/// Who handles a miss.
enum Role {
    Cached(Resolved),
    /// Makes the call: of a stale dentry (`stale`: revalidated first) or of no dentry, as the
    /// look under the in-flight lock found it.
    Caller {
        call: Arc<Call>,
        stale: bool,
        generation: u32,
    },
    Waiter(Arc<Call>),
}

/// Misses: asking the filesystem for a name, once however many threads miss it.
impl Dcache {
    /// The FUSE lookup handler: the cached answer, or the filesystem's (filed in the cache),
    /// with concurrent misses of one name coalesced into one `fs.lookup` call. Every
    /// [`Resolved::Found`] counts one lookup of its inode (the caller replies to the kernel
    /// with it; balance it with [`forget`](Self::forget)).
    ///
    /// A directory the filesystem names here while the cache holds it under another name was
    /// renamed behind the cache: its cached name is moved here, with what is cached below it,
    /// in one rename section, and the old name is dropped. If `parent` is cached below that
    /// directory, the cached name just below the directory on the way is dropped first: the
    /// answer shows it stale, and the move then closes no cycle.
    ///
    /// For a walk's [`Walk::Miss`](crate::Walk::Miss), this answer is the one that stands for
    /// the missed component at that instant: [`Resolved::Negative`] ends the walk (the path
    /// does not exist), [`Resolved::Found`] lets it go on from the inode found. Walking the
    /// same components again is no substitute: a miss in a directory whose complete listing is
    /// cached is answered `Negative` from the listing, filing no negative dentry (see
    /// `listing.rs`), so the walk would miss there again.
    ///
    /// Errors: a bad name; the filesystem's errno ([`Error::Backend`]), or an error filing its
    /// answer (e.g. a parent that is not a cached directory; [`Error::DirectoryAlias`] for the
    /// root, for a directory named inside itself, or for a directory whose name kept changing
    /// while its answer was filed).
    ///
    /// Without a filesystem ([`Config::with_filesystem`](crate::Config::with_filesystem)),
    /// only what is cached is answered: a miss or a stale name is [`Error::NoFilesystem`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use udcache::{Config, Dcache, Errno, FileType, Filesystem, InodeSpec, Resolved, ROOT_INO};
    /// struct OneFile;
    /// impl Filesystem for OneFile {
    ///     fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
    ///         Ok((name == b"hello").then_some(InodeSpec { ino: 5, kind: FileType::Regular, fs_data: 0 }))
    ///     }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64).with_filesystem(Arc::new(OneFile)));
    /// assert!(matches!(cache.resolve(ROOT_INO, b"hello"), Ok(Resolved::Found(s)) if s.ino == 5));
    /// assert_eq!(cache.resolve(ROOT_INO, b"other"), Ok(Resolved::Negative));
    /// assert_eq!(cache.stats().backend_lookups, 2);
    /// cache.resolve(ROOT_INO, b"hello").unwrap(); // cached now
    /// assert_eq!(cache.stats().backend_lookups, 2);
    /// ```
    pub fn resolve(&self, parent: u64, name: &[u8]) -> Result<Resolved, Error> {
        validate_name(name)?;
        loop {
            match self.fetch(parent, name, true)? {
                Some(Resolved::Found(spec)) => match self.count_lookup(spec.ino) {
                    Ok(()) => return Ok(Resolved::Found(spec)),
                    // Forgotten in between: resolve again.
                    Err(Error::UnknownInode(_)) => continue,
                    Err(e) => return Err(e),
                },
                Some(Resolved::Negative) => return Ok(Resolved::Negative),
                // We waited for a revalidation that dropped the dentry: look again.
                None => continue,
            }
        }
    }

    /// The fresh cached answer, or one call (a revalidation, then a lookup if `lookup`) made
    /// or waited for. Counts no lookup.
    pub(crate) fn fetch(&self, parent: u64, name: &[u8], lookup: bool) -> Settle {
        // The looks that decide the role nest in one pin (see the rules): unpinned before
        // the call.
        let role = self.role(&epoch::pin(), parent, name);
        match role {
            Role::Cached(r) => Ok(Some(r)),
            Role::Caller { call, stale, generation } => {
                self.call(parent, name, &call, Ask { lookup, stale, generation })
            }
            Role::Waiter(call) => {
                self.events.bump(Event::CoalescedMiss);
                let waiting = std::time::Instant::now();
                let (answer, slept) = call.answer(waiting);
                let waited = u64::try_from(waiting.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.events.add(Event::CoalescedWaitNs, waited);
                if slept {
                    self.events.bump(Event::CoalescedSleep);
                }
                answer
            }
        }
    }

    fn cached(&self, guard: &Guard, parent: u64, name: &[u8]) -> InCache {
        match self.fresh_or_stale(guard, parent, name) {
            Ok(Found::Hit(named)) => InCache::Fresh(Resolved::Found(named.inode.spec())),
            Ok(Found::Negative) => InCache::Fresh(Resolved::Negative),
            Ok(Found::Miss) => InCache::Nothing,
            Err(_) => InCache::Stale,
        }
    }

    fn role(&self, guard: &Guard, parent: u64, name: &[u8]) -> Role {
        let no_dentry = match self.cached(guard, parent, name) {
            InCache::Fresh(r) => return Role::Cached(r),
            InCache::Stale => false,
            InCache::Nothing => true,
        };
        // The parent, looked up once: its listing may answer, and a call files its answer
        // under the generation read here (before asking, as the rules require).
        let dir = self.inode(guard, parent);
        // Only where no dentry holds the name. A stale dentry is revalidated: the listing's
        // answer would neither refresh nor drop it, so every later walk would meet it again
        // (and `walk_as` would never end).
        if no_dentry && self.listed_absent(dir, name) {
            return Role::Cached(Resolved::Negative);
        }
        let generation = dir.map_or(0, Inode::dir_gen);
        let mut calls = self.inflight.lock();
        if let Some(call) = calls.find(parent, name) {
            return Role::Waiter(call.clone());
        }
        // Filed before its call left the list (see the rules): look again under the lock.
        let stale = match self.cached(guard, parent, name) {
            InCache::Fresh(r) => return Role::Cached(r),
            InCache::Stale => true,
            InCache::Nothing => false,
        };
        Role::Caller { call: calls.start(parent, name), stale, generation }
    }

    /// Calls the filesystem, files the answer, wakes the waiters (see [`Ending`]).
    fn call(&self, parent: u64, name: &[u8], call: &Call, ask: Ask) -> Settle {
        let mut ending = Ending { inflight: &self.inflight, call, answer: None };
        let answer = self.settle(parent, name, ask);
        ending.answer = Some(answer.clone());
        answer
    }

    /// The filesystem calls of one miss or stale name (no lock held, no guard pinned while
    /// the filesystem runs).
    fn settle(&self, parent: u64, name: &[u8], ask: Ask) -> Settle {
        let Ask { lookup, stale, generation } = ask;
        let fs = &**self.filesystem()?;
        // A dentry filed since the role's look is not revalidated: the lookup's answer meets
        // it when filed (`Exists`: look again) or renews it.
        let settled = if stale {
            self.revalidate_blocking(fs, parent, name, generation)
        } else {
            Settled::Absent
        };
        match settled {
            Settled::Fresh(r) => return Ok(Some(r)),
            Settled::Dropped | Settled::Absent if !lookup => return Ok(None),
            Settled::Dropped | Settled::Absent => {}
        }
        self.events.bump(Event::BackendLookup);
        match fs.lookup(parent, name) {
            Err(errno) => Err(Error::Backend(errno)),
            Ok(None) => match self.file_negative(parent, name, Some(generation)) {
                Ok(()) => Ok(Some(Resolved::Negative)),
                // The name was filed positive while the filesystem answered (an `add` after a
                // create that overtook this lookup): that answer is newer and stands. Look
                // again, as after a dropped dentry.
                Err(Error::Exists) => Ok(None),
                Err(e) => Err(e),
            },
            Ok(Some(spec)) => self.file_found(parent, name, spec, generation),
        }
    }

    /// Files the filesystem's answer `spec` for `(parent, name)`, asked under `generation`.
    /// A directory the cache holds under another name was moved there behind the cache (a
    /// rename on the server): its cached name moves too, keeping what is cached below it
    /// (see `writers/splice.rs`).
    fn file_found(&self, parent: u64, name: &[u8], spec: InodeSpec, generation: u32) -> Settle {
        // A few tries: the old name may go (or come) while this runs; each retry means that
        // another writer changed it meanwhile.
        for _ in 0..3 {
            let filed = match self.file_positive(parent, name, spec, Some(generation), false) {
                Err(Error::DirectoryAlias(ino)) if ino != crate::ROOT_INO => {
                    self.splice(ino, (parent, name), generation)
                }
                filed => filed.map(|()| Spliced::Done),
            };
            match filed {
                Ok(Spliced::Done) => return Ok(Some(Resolved::Found(spec))),
                // Filed by a racing `add` meanwhile, perhaps naming another inode: that stands,
                // and the caller answers with what is cached now. Look again, as after a
                // dropped dentry.
                Err(Error::Exists) => return Ok(None),
                Ok(Spliced::Retry) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::DirectoryAlias(spec.ino))
    }
}

/// How a blocking revalidation of one name ended.
pub(crate) enum Settled {
    /// Fresh (already, or refreshed): this is the answer.
    Fresh(Resolved),
    /// The filesystem said it no longer holds: dropped.
    Dropped,
    /// No dentry of that name.
    Absent,
}

/// The blocking revalidation of a stale name, made inside a miss's call (see the rules).
impl Dcache {
    /// The blocking revalidation of `(parent, name)` whose parent was at generation `generation`
    /// before anything was asked (see the rules).
    pub(crate) fn revalidate_blocking(
        &self,
        fs: &dyn Filesystem,
        parent: u64,
        name: &[u8],
        generation: u32,
    ) -> Settled {
        let Some(held) = self.dentry(parent, name) else { return Settled::Absent };
        let (was, cached) = {
            let guard = epoch::pin();
            let (child, word) = held.snapshot(&guard);
            let inode = child.map(|c| c.inode);
            let answer = inode.map_or(Resolved::Negative, |i| Resolved::Found(i.spec()));
            let Err(reason) = word.check(inode.is_none(), || generation, || self.ticks.now())
            else {
                return Settled::Fresh(answer); // refreshed by another thread meanwhile
            };
            let stale = Stale { entry: &held, inode, word, reason };
            (seen(inode, word), cached(&stale, generation, self.ticks.now()))
        };
        self.events.bump(Event::Revalidation);
        match fs.revalidate(parent, name, cached, true) {
            Revalidate::Valid { ttl } => {
                if let Some(ttl) = self.refresh_ttl(ttl, was, generation) {
                    let names = self.lock_names((parent, name), None);
                    self.refresh(&names, &held, was, ttl, generation);
                }
                Settled::Fresh(cached.inode.map_or(Resolved::Negative, Resolved::Found))
            }
            Revalidate::Invalid | Revalidate::NeedsBlock => {
                drop(held);
                // Dropped whatever is there now: at worst a newer dentry, which a miss fills
                // again.
                let _ = self.invalidate(parent, name);
                Settled::Dropped
            }
        }
    }
}
