//! One directory's listing cache, shared by every reader of that directory.
//!
//! # Rules
//!
//! - `Dir::state` (a mutex) protects the [`Listing`] (pages, cookie index, epoch, verifier,
//!   completeness, name index) and `inflight`, the set of cookies a backend call is running at.
//!   A function that needs it held takes the guard ([`Guard`]) or the `&mut State` behind it.
//! - Lock order: this lock, then the LRU lock (`budget.rs`). Never two directory locks.
//!   Evicting another directory's page, or one of our own, happens after this lock is dropped.
//! - The backend is called with no lock held. Before calling, a reader records the cookie in
//!   `inflight` and the epoch; a reader needing the same cookie waits on `filled` instead of
//!   calling (coalescing). The caller removes the cookie and wakes the waiters when the call
//!   returns, or panics ([`Inflight`]'s drop). A waiter is served by that call only if the
//!   cookie resolves when it looks again; else (the call failed, its fill was not kept, or its
//!   page went before the waiter looked) the waiter fills the cookie itself.
//! - A fill is kept only if no change was announced while it ran, or it already saw the
//!   announced verifier ([`Listing::adopt`]); otherwise its entries go to its reader only.
//!   A fill that brings a verifier the listing did not know moves the epoch itself — the
//!   first one after the cache was made or told of an unknown change too — so of two fills
//!   that ran side by side and saw different directories, the first one back is kept and
//!   the other goes to its reader only. A kept fill is cut where the cached pages already go
//!   on, and one whose cookie another reader's fill covered while it ran is not kept at all
//!   (the reader resolves again and reads the cached page): see `listing.rs`.
//!
//! What a reader observes: every entry it gets comes from a fresh page (filled under the
//! verifier current when it is read) or from its own fill, so a change announced before a read
//! is never hidden by an older page.
//!
//! Checked by the loom models in `tests/loom_readdir.rs` (one backend call for concurrent
//! reads of one cookie; a change announced during a fill is never hidden; eviction across
//! directories without deadlock) and by the reader/writer stress test in
//! `tests/concurrent.rs`, which checks every pass against the listing guarantee.

use std::sync::{Arc, Weak};

use crate::budget::{Counters, Evict, Shared, Stats, Victim};
use crate::listing::{Adopt, Listing, PageId, Pos, Resolve};
use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::{Backend, Batch, Config, Cursor, Entry, Error, Lookup, Verifier};

/// The global part of the cache: the page budget, its LRU, and the statistics. Cheap to clone
/// (a shared handle); every [`DirCache`] made from it draws on the same budget.
///
/// ```
/// use udcache_readdir::reference::{CookieStyle, MemDir};
/// use udcache_readdir::{Config, ReaddirCache};
///
/// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(2).with_page_entries(4));
/// let a = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..10));
/// let b = cache.dir(MemDir::with_entries(CookieStyle::Hashed, 100, 0..10));
/// a.read(0, 4).unwrap();
/// a.read(0, 4).unwrap(); // a hit: page 1 of `a` is now the most recently used
/// let first = b.read(0, 4).unwrap().entries;
/// b.read(first[3].cookie, 4).unwrap(); // a third page: evicts the least recently used
/// let s = cache.stats();
/// assert_eq!((s.pages, s.evictions, s.hits, s.backend_calls), (2, 1, 1, 3));
/// ```
#[derive(Clone)]
pub struct ReaddirCache {
    shared: Arc<Shared>,
}

impl ReaddirCache {
    /// A cache with the default [`Config`].
    pub fn new() -> Self {
        Self::with_config(Config::default())
    }

    /// A cache holding at most [`Config::budget_pages`] pages over all its directories, each
    /// page the result of one backend call asked for [`Config::page_entries`] entries.
    pub fn with_config(config: Config) -> Self {
        let shared = Shared::new(config.budget_pages(), config.page_entries());
        ReaddirCache { shared: Arc::new(shared) }
    }

    /// The listing cache of one directory, read through `backend`.
    pub fn dir<B: Backend + 'static>(&self, backend: B) -> DirCache<B> {
        let shared = self.shared.clone();
        DirCache {
            dir: Arc::new_cyclic(|me| Dir {
                state: Mutex::new(State::default()),
                filled: Condvar::new(),
                backend,
                shared,
                me: me.clone(),
            }),
        }
    }

    /// The counters, and the pages charged now.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// How many entries each backend call asks for.
    pub fn page_entries(&self) -> usize {
        self.shared.page_entries
    }
}

impl Default for ReaddirCache {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ReaddirCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaddirCache").field("stats", &self.stats()).finish()
    }
}

/// One directory's listing cache: resumes at any cookie it issued in O(1) expected, calls the
/// backend only for what it does not hold, and keeps serving a reader mid-listing from that
/// reader's own cookie when the directory changes.
///
/// A handle: clones share the cache. See the crate docs for the guarantees, and [`Cursor`]
/// for a pass with loop detection.
pub struct DirCache<B: Backend + 'static> {
    dir: Arc<Dir<B>>,
}

impl<B: Backend + 'static> Clone for DirCache<B> {
    fn clone(&self) -> Self {
        DirCache { dir: self.dir.clone() }
    }
}

struct Dir<B: Backend + 'static> {
    state: Mutex<State>,
    filled: Condvar,
    backend: B,
    shared: Arc<Shared>,
    me: Weak<Dir<B>>,
}

#[derive(Default)]
struct State {
    listing: Listing,
    inflight: std::collections::HashSet<u64>,
}

/// The directory lock, held.
type Guard<'a> = MutexGuard<'a, State>;

/// What a fill attempt produced.
enum Filled {
    /// The page is in the listing (in this slot, starting at this cookie): resolve again.
    Kept(PageId, u64),
    /// Another reader's fill of the same cookie finished (kept or not): resolve again.
    Waited,
    /// The cookie was cached by another reader's fill while this one ran, so this one kept
    /// nothing: resolve again.
    Covered,
    /// The directory changed while the fill ran: these entries are for this read only.
    Uncached(Batch),
}

impl<B: Backend + 'static> DirCache<B> {
    /// Up to `max` entries after `cookie` (`0`: from the start).
    ///
    /// Cookies in the index are served from the cache; on a gap, a stale page, or a cookie the
    /// index does not hold (evicted, dropped after a change, issued before this cache existed),
    /// the backend is asked at exactly that cookie, once however many readers want it. A batch
    /// may be shorter than `max` without being at the end: it stops where the cache does rather
    /// than call the backend mid-batch.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `max == 0`; [`Error::BadCookie`] if the cookie is not cached
    /// and the backend cannot resume at it; [`Error::Loop`] if the backend's answer would make
    /// the listing spin; [`Error::Backend`] for the backend's own failures. A failed read
    /// keeps nothing new and counts as neither a hit nor a miss (a stale page it met on the
    /// way is dropped all the same: it could serve nobody).
    ///
    /// ```
    /// use udcache_readdir::reference::{CookieStyle, MemDir};
    /// use udcache_readdir::{Config, Error, ReaddirCache};
    ///
    /// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(64).with_page_entries(8));
    /// let dir = cache.dir(MemDir::with_entries(CookieStyle::Hashed, 1000, 0..20));
    /// let first = dir.read(0, 5).unwrap();
    /// let resume = first.entries[4].cookie; // hashed: not ordered, still O(1) to resume at
    /// assert_eq!(dir.read(resume, 5).unwrap().entries[0].name, dir.read(0, 6).unwrap().entries[5].name);
    /// assert_eq!(dir.read(12345, 5), Err(Error::BadCookie { cookie: 12345 }));
    /// assert_eq!(dir.read(0, 0), Err(Error::InvalidArgument("max must be at least 1")));
    /// ```
    pub fn read(&self, cookie: u64, max: usize) -> Result<Batch, Error> {
        if max == 0 {
            return Err(Error::InvalidArgument("max must be at least 1"));
        }
        let d = &*self.dir;
        let mut victims = Vec::new();
        let mut missed = false;
        // Whether the fill this read waited for left its cookie cached, sparing it a call.
        let mut served = false;
        let mut st = d.lock();
        let mut out = Vec::new();
        let mut at = cookie;
        // Pages copied to their end. Once a read has copied anything it neither fills nor drops
        // pages (it stops where the cache stops), so the listing holds still: going from page
        // to page more times than there are pages means the cached pages lead round in a cycle
        // (a backend that looped across fills), which would be followed until `max`.
        let mut pages_done = 0;
        // The pages this read's own fills added: a read that fails keeps nothing new.
        let mut kept = Vec::new();
        let result = loop {
            match st.listing.resolve(at) {
                Resolve::Hit(_) if pages_done >= st.listing.pages() => {
                    // The cycle may run through pages this read kept (each fill was no loop
                    // alone, only with the pages cached before): take them back.
                    for (id, start) in kept.drain(..) {
                        d.unkeep(&mut st, id, start);
                    }
                    break Err(Error::Loop { cookie: at });
                }
                Resolve::Hit(pos) => match d.copy(&mut st, pos, max, &mut out) {
                    PageEnd::Full { eof } => break Ok(eof),
                    PageEnd::Eof => break Ok(true),
                    PageEnd::More => {
                        pages_done += 1;
                        at = out.last().expect("copied at least one").cookie;
                    }
                },
                Resolve::Eof => break Ok(true),
                // Stop where the cache stops; the next read continues from here.
                _ if !out.is_empty() => break Ok(false),
                Resolve::Stale(id) => d.drop_stale(&mut st, id),
                Resolve::Gap | Resolve::Unknown => {
                    missed = true;
                    let filled;
                    (st, filled) = d.fill(st, at, max, &mut victims);
                    match filled {
                        Ok(Filled::Kept(id, start)) => kept.push((id, start)),
                        Ok(Filled::Covered) => {}
                        Ok(Filled::Waited) => {
                            // That fill may have failed, gone to its own reader only, or had
                            // its page evicted or made stale before this read looked again:
                            // then this read fills itself.
                            served =
                                matches!(st.listing.resolve(at), Resolve::Hit(_) | Resolve::Eof);
                        }
                        Ok(Filled::Uncached(batch)) => {
                            out = batch.entries;
                            break Ok(batch.eof);
                        }
                        Err(e) => break Err(e),
                    }
                }
            }
        };
        drop(st);
        for v in victims {
            v.evict();
        }
        let eof = result?;
        let c = &d.shared.counters;
        Counters::add(if missed { &c.misses } else { &c.hits }, 1);
        if served {
            Counters::add(&c.coalesced, 1);
        }
        Ok(Batch { entries: out, eof })
    }

    /// A pass over the directory from the start, with loop detection across calls.
    pub fn cursor(&self) -> Cursor<B> {
        Cursor::new(self.clone())
    }

    /// Looks `name` up in the cached listing: [`Lookup::Present`] or [`Lookup::Absent`] when
    /// the directory is complete (cached from cookie 0 to the end under the current verifier),
    /// else [`Lookup::Unknown`]. Never calls the backend.
    ///
    /// ```
    /// use udcache_readdir::reference::{CookieStyle, MemDir};
    /// use udcache_readdir::{Config, Lookup, ReaddirCache, Verifier};
    ///
    /// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(64).with_page_entries(8));
    /// let dir = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..10));
    /// assert_eq!(dir.lookup(b"n3"), Lookup::Unknown);
    /// let mut c = dir.cursor();
    /// while !c.read(4).unwrap().is_empty() {}
    /// assert!(dir.is_complete());
    /// assert!(matches!(dir.lookup(b"n3"), Lookup::Present(_)));
    /// assert_eq!(dir.lookup(b"n42"), Lookup::Absent); // a negative answer, no negative entry
    /// dir.set_verifier(Verifier::new(99)); // any change clears completeness
    /// assert_eq!(dir.lookup(b"n42"), Lookup::Unknown);
    /// ```
    pub fn lookup(&self, name: &[u8]) -> Lookup {
        self.dir.lock().listing.lookup(name)
    }

    /// Announces that the directory is now at `verifier` (a local create or unlink, or a
    /// revalidation that saw a new change attribute). If it differs from the cached one, every
    /// page becomes stale at once; they are dropped lazily. Call it after the change is visible
    /// to the backend.
    pub fn set_verifier(&self, verifier: Verifier) {
        self.change(Some(verifier));
    }

    /// Announces a change whose new verifier is not known: every page becomes stale, and the
    /// next fill's verifier is adopted.
    pub fn invalidate(&self) {
        self.change(None);
    }

    fn change(&self, verifier: Option<Verifier>) {
        if self.dir.lock().listing.change(verifier) {
            Counters::add(&self.dir.shared.counters.invalidations, 1);
        }
    }

    /// Drops every cached page of this directory (for example when it is removed).
    pub fn clear(&self) {
        let keys = self.dir.lock().listing.clear();
        let mut lru = self.dir.shared.lru();
        for k in keys {
            lru.uncharge(k);
        }
    }

    /// Whether the cache holds the whole directory under its current verifier.
    pub fn is_complete(&self) -> bool {
        self.dir.lock().listing.is_complete()
    }

    /// The verifier of the fresh pages, if known.
    pub fn verifier(&self) -> Option<Verifier> {
        self.dir.lock().listing.verifier()
    }

    /// Whether this directory's cache holds nothing that could answer: no page, fresh or
    /// stale, not complete, and no backend call running. A read that failed before any fill
    /// was kept leaves it so.
    ///
    /// ```
    /// use udcache_readdir::reference::{CookieStyle, MemDir};
    /// use udcache_readdir::{Config, ReaddirCache};
    ///
    /// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(64).with_page_entries(8));
    /// let dir = cache.dir(MemDir::with_entries(CookieStyle::Hashed, 1000, 0..20));
    /// assert!(dir.read(12345, 5).is_err()); // a cookie the backend never issued
    /// assert!(dir.is_empty());
    /// dir.read(0, 5).unwrap();
    /// assert!(!dir.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        let st = self.dir.lock();
        st.listing.pages() == 0 && !st.listing.is_complete() && st.inflight.is_empty()
    }

    /// The pages this directory holds, fresh or stale.
    pub fn cached_pages(&self) -> usize {
        self.dir.lock().listing.pages()
    }

    /// The backend this directory reads through.
    pub fn backend(&self) -> &B {
        &self.dir.backend
    }
}

/// Where copying out of a page stopped.
enum PageEnd {
    /// `max` entries copied; `eof` if they end the directory.
    Full { eof: bool },
    /// The page ended the directory.
    Eof,
    /// The page ended first: continue at the last copied cookie.
    More,
}

impl<B: Backend + 'static> Dir<B> {
    fn lock(&self) -> Guard<'_> {
        // The lock is never held across the backend call or any user code; a panic under it is
        // a bug in this crate, and the listing's methods leave it consistent between steps.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Copies entries from `pos` until `out` holds `max` or the page ends; touches the page.
    fn copy(&self, st: &mut State, pos: Pos, max: usize, out: &mut Vec<Entry>) -> PageEnd {
        let page = st.listing.page(pos.page);
        let from = pos.slot as usize;
        // Saturating: `max` may be anything up to `usize::MAX`.
        let to = page.entries.len().min(from.saturating_add(max - out.len()));
        out.extend_from_slice(&page.entries[from..to]);
        let at_end = to == page.entries.len();
        let (eof, key) = (page.eof, page.lru);
        if let Some(key) = self.shared.lru().touch(key) {
            st.listing.set_lru(pos.page, key);
        }
        match (out.len() == max, at_end && eof) {
            (true, eof) => PageEnd::Full { eof },
            (false, true) => PageEnd::Eof,
            (false, false) => PageEnd::More,
        }
    }

    fn drop_stale(&self, st: &mut State, id: PageId) {
        let page = st.listing.remove(id);
        self.shared.lru().uncharge(page.lru);
        Counters::add(&self.shared.counters.stale_dropped, 1);
    }

    /// Removes page `id`, kept at cookie `start` by a read that then failed, and uncharges it
    /// (unless the LRU already picked it as a victim: then its victim step finds the slot
    /// changed). While the read waited on the backend, another may have evicted it and filled
    /// the slot again: a page at another cookie is not this read's to take back.
    fn unkeep(&self, st: &mut State, id: PageId, start: u64) {
        if st.listing.start_of(id) == Some(start) {
            let page = st.listing.remove(id);
            self.shared.lru().uncharge(page.lru);
        }
    }

    /// Fills at `at`, or waits for the fill already running there. Takes and returns the lock;
    /// drops it around the backend call.
    fn fill<'a>(
        &'a self,
        mut st: Guard<'a>,
        at: u64,
        max: usize,
        victims: &mut Vec<Victim>,
    ) -> (Guard<'a>, Result<Filled, Error>) {
        let c = &self.shared.counters;
        if st.inflight.contains(&at) {
            Counters::add(&c.waits, 1);
            while st.inflight.contains(&at) {
                st = self.filled.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            return (st, Ok(Filled::Waited));
        }
        st.inflight.insert(at);
        let started = st.listing.epoch();
        drop(st);
        let inflight = Inflight { dir: self, cookie: at };
        Counters::add(&c.backend_calls, 1);
        let result = self.backend.fill(at, self.shared.page_entries);
        let mut st = self.lock();
        std::mem::forget(inflight);
        self.end_inflight(&mut st, at);
        let fill = match result {
            Ok(fill) => fill,
            Err(e) => return (st, Err(Error::from_fill(e, at))),
        };
        if let Err(e) = Listing::check_fill(at, &fill) {
            return (st, Err(e));
        }
        match st.listing.adopt(started, fill.verifier) {
            Adopt::Keep { changed } => {
                if changed {
                    Counters::add(&c.invalidations, 1);
                }
                let Some(id) = st.listing.try_insert(at, fill, 0) else {
                    // Another reader's fill of an earlier cookie covered this one meanwhile.
                    return (st, Ok(Filled::Covered));
                };
                let before = victims.len();
                let key = self.shared.lru().charge(self.me.clone(), id, victims);
                Counters::add(&c.evictions, (victims.len() - before) as u64);
                st.listing.set_lru(id, key);
                (st, Ok(Filled::Kept(id, at)))
            }
            Adopt::Uncached => {
                Counters::add(&c.uncached, 1);
                let mut entries = fill.entries;
                let eof = fill.eof && entries.len() <= max;
                entries.truncate(max);
                (st, Ok(Filled::Uncached(Batch { entries, eof })))
            }
        }
    }

    fn end_inflight(&self, st: &mut State, at: u64) {
        let was = st.inflight.remove(&at);
        debug_assert!(was, "the filler owns its inflight cookie");
        self.filled.notify_all();
    }
}

/// Ends an in-flight fill if the backend panics, so waiters are not left waiting forever.
struct Inflight<'a, B: Backend + 'static> {
    dir: &'a Dir<B>,
    cookie: u64,
}

impl<B: Backend + 'static> Drop for Inflight<'_, B> {
    fn drop(&mut self) {
        let mut st = self.dir.lock();
        self.dir.end_inflight(&mut st, self.cookie);
    }
}

impl<B: Backend + 'static> Evict for Dir<B> {
    fn evict(&self, page: PageId, lru: u64) {
        let mut st = self.lock();
        if st.listing.lru_of(page) == Some(lru) {
            st.listing.remove(page);
        }
    }
}

impl<B: Backend + 'static> Drop for Dir<B> {
    fn drop(&mut self) {
        let keys =
            self.state.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).listing.clear();
        let mut lru = self.shared.lru();
        for k in keys {
            lru.uncharge(k);
        }
    }
}
