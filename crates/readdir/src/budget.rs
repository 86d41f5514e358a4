//! The global page budget: one LRU over the pages of every directory.
//!
//! # Rules
//!
//! - `Shared::lru` (a mutex) protects the LRU map and the tick counter. The count of charged
//!   pages is the map's length.
//! - Lock order: a directory's lock, then the LRU lock. Never a directory lock while holding the
//!   LRU lock, and never two directory locks at once. So eviction is two steps: under the LRU
//!   lock, [`Lru::charge`] picks victims and uncharges them (the budget holds from that moment);
//!   after the charging directory has dropped its own lock, each victim's directory is locked
//!   alone and drops the page if its LRU key still matches ([`Evict::evict`]).
//! - A page's LRU key is unique and changes on every touch. A key missing from the map means the
//!   page was already picked as a victim: touching it does nothing, uncharging it does nothing,
//!   and its directory drops it on the victim's second step.

use std::collections::BTreeMap;
use std::sync::Weak;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Mutex, MutexGuard};

use crate::listing::PageId;

/// A directory that can drop one of its pages when the LRU picks it.
pub(crate) trait Evict: Send + Sync {
    /// Drops page `page` if it still carries LRU key `lru`. Takes the directory's lock: the
    /// caller holds no lock.
    fn evict(&self, page: PageId, lru: u64);
}

/// A page the LRU picked and uncharged; its directory drops it in the second step.
pub(crate) struct Victim {
    dir: Weak<dyn Evict>,
    page: PageId,
    lru: u64,
}

impl Victim {
    /// The second step of an eviction. Call with no lock held.
    pub fn evict(self) {
        if let Some(dir) = self.dir.upgrade() {
            dir.evict(self.page, self.lru);
        }
    }
}

/// The LRU of every cached page, oldest key first.
pub(crate) struct Lru {
    map: BTreeMap<u64, (Weak<dyn Evict>, PageId)>,
    next: u64,
    limit: usize,
}

impl Lru {
    pub fn new(limit: usize) -> Self {
        debug_assert!(limit > 0);
        Lru { map: BTreeMap::new(), next: 1, limit }
    }

    /// Pages charged now.
    pub fn charged(&self) -> usize {
        self.map.len()
    }

    /// The budget, in pages.
    pub fn limit(&self) -> usize {
        self.limit
    }

    fn tick(&mut self) -> u64 {
        let t = self.next;
        self.next += 1;
        t
    }

    /// Charges a new page of `dir` in slot `page`; returns its key. Pages over the budget,
    /// least recently used first, are uncharged and pushed to `victims`.
    pub fn charge(&mut self, dir: Weak<dyn Evict>, page: PageId, victims: &mut Vec<Victim>) -> u64 {
        let key = self.tick();
        self.map.insert(key, (dir, page));
        while self.map.len() > self.limit {
            let (lru, (dir, page)) = self.map.pop_first().expect("over budget means not empty");
            debug_assert_ne!(lru, key, "the newest page is never the least recently used");
            victims.push(Victim { dir, page, lru });
        }
        key
    }

    /// Marks the page with key `lru` as just used; returns its new key, or `None` if it was
    /// already picked as a victim.
    pub fn touch(&mut self, lru: u64) -> Option<u64> {
        let v = self.map.remove(&lru)?;
        let key = self.tick();
        self.map.insert(key, v);
        Some(key)
    }

    /// Uncharges the page with key `lru` (its directory dropped it). Returns false if it was
    /// already uncharged as a victim.
    pub fn uncharge(&mut self, lru: u64) -> bool {
        self.map.remove(&lru).is_some()
    }
}

/// Counters shared by every directory of one cache.
///
/// Each is a statistic only: nothing is ordered against it, so every access is `Relaxed`.
#[derive(Default)]
pub(crate) struct Counters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub backend_calls: AtomicU64,
    pub coalesced: AtomicU64,
    pub waits: AtomicU64,
    pub uncached: AtomicU64,
    pub invalidations: AtomicU64,
    pub stale_dropped: AtomicU64,
    pub evictions: AtomicU64,
}

impl Counters {
    /// Adds `n` to counter `c` (Relaxed: a statistic, see the type docs).
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// What every directory of one cache shares.
pub(crate) struct Shared {
    lru: Mutex<Lru>,
    pub counters: Counters,
    pub page_entries: usize,
}

impl Shared {
    pub fn new(budget_pages: usize, page_entries: usize) -> Self {
        Shared {
            lru: Mutex::new(Lru::new(budget_pages)),
            counters: Counters::default(),
            page_entries,
        }
    }

    /// The LRU lock. Take it after a directory lock, never before one (see the module rules).
    pub fn lru(&self) -> MutexGuard<'_, Lru> {
        // No code panics while holding this lock short of a bug (allocation failure aside), so a
        // poisoned lock still holds a consistent map.
        self.lru.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A snapshot of a cache's counters.
///
/// ```
/// use udcache_readdir::{Config, ReaddirCache};
/// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(8).with_page_entries(4));
/// let s = cache.stats();
/// assert_eq!((s.pages, s.budget_pages, s.backend_calls), (0, 8, 0));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reads answered without a backend call.
    pub hits: u64,
    /// Reads that needed a backend call (their own, or one they waited for).
    pub misses: u64,
    /// Backend calls made.
    pub backend_calls: u64,
    /// Misses served by another reader's backend call: the read waited for that reader's fill
    /// of the same cookie and found it cached, with no backend call of its own.
    pub coalesced: u64,
    /// Reads that found another reader's fill of their cookie running and waited for it,
    /// counted when the wait begins. Those that the fill did not serve (it failed, was not
    /// kept, or its page went before they looked) then called the backend themselves and are
    /// not [`coalesced`](Stats::coalesced).
    pub waits: u64,
    /// Fills handed to their reader but not kept, because the directory changed while they ran.
    pub uncached: u64,
    /// Verifier changes (announced, or revealed by a fill) that made pages stale.
    pub invalidations: u64,
    /// Stale pages dropped when a reader reached them.
    pub stale_dropped: u64,
    /// Pages evicted to stay within the budget.
    pub evictions: u64,
    /// Pages charged to the budget now.
    pub pages: usize,
    /// The budget, in pages.
    pub budget_pages: usize,
}

impl Shared {
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        // Relaxed: statistics only (see `Counters`).
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let lru = self.lru();
        Stats {
            hits: get(&c.hits),
            misses: get(&c.misses),
            backend_calls: get(&c.backend_calls),
            coalesced: get(&c.coalesced),
            waits: get(&c.waits),
            uncached: get(&c.uncached),
            invalidations: get(&c.invalidations),
            stale_dropped: get(&c.stale_dropped),
            evictions: get(&c.evictions),
            pages: lru.charged(),
            budget_pages: lru.limit(),
        }
    }
}
