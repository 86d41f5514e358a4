//! One directory's cached listing: pages of entries and the exact cookie index.
//!
//! # Structure
//!
//! A *page* is the result of one backend fill: the entries after its start cookie, whether the
//! last one ends the directory, and the epoch and verifier it was filled under. The *index* maps
//! a cookie to the position of the entry that follows it: `(page, slot)`, where
//! `slot == page.len()` marks the end of that page — the end of the directory if the page is
//! final, else a *gap* that the next fill at that cookie closes. A page filled at cookie `c`
//! maps `c -> (page, 0)` and each entry's cookie to the slot after it (where no other fresh page
//! already leads on from that cookie: see the rules), so every cookie the cache ever handed out
//! resumes in O(1) expected, whatever its value.
//!
//! # Rules
//!
//! - A page is *fresh* when its epoch is the listing's; the epoch moves whenever the verifier
//!   changes. Only fresh pages are served. Stale pages stay until a reader touches them (then
//!   they are dropped) or the LRU evicts them: invalidation is lazy, O(1).
//! - A new page's mapping replaces an old one only if the old one is stale or a gap. A fresh
//!   mapping that already *leads on* (into a page's entries, or to the end of a final page)
//!   is kept: two fresh pages agree (same verifier, same contents), and keeping the old one
//!   means inserting never breaks a chain others follow.
//! - A new page ends where the fresh pages already lead on: it is cut after its first entry
//!   whose cookie leads on (and is then not final), so its end leads into the page that holds
//!   the rest; if its start cookie already leads on, it is not kept at all (a fill that ran
//!   while another covered its cookie). So no cookie is held *inside* two fresh pages (as the
//!   start or an entry's cookie other than the last), and every cookie held inside a fresh
//!   page is mapped into that page.
//! - Removing a page removes exactly the mappings that point at it. By the rule above, those
//!   are exactly the cookies held inside it: nothing another page still holds goes unindexed.
//!   A page whose end led into it now ends at an unindexed cookie (filled when reached).
//! - *Complete*: the fresh chain from cookie 0 reaches a final page. `frontier` is the cookie
//!   up to which that chain is known intact; inserting only extends it, removing a fresh page
//!   or changing the epoch resets it, so checking completeness costs O(pages) between
//!   removals. (A stale page is on no fresh chain: removing one keeps a complete listing
//!   complete.)
//! - Since every cookie inside a fresh page maps into it, a reader resuming anywhere follows
//!   the chain: the pages a read from cookie 0 passes through are the chain's. A pass from 0
//!   to the end with no fresh page removed and no epoch change meanwhile (its fills only
//!   insert, and each insert extends the frontier) leaves the listing complete.
//!
//! Everything here runs under the directory's lock: a `&mut Listing` is only reachable through
//! that lock's guard (see `dir.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[cfg(test)]
use crate::DType;
use crate::{Entry, Error, Fill, Lookup, Verifier};

/// Hashes a cookie for the index: one multiply by an odd constant (a bijection, so distinct
/// cookies never collide in the full hash) folded so the table's low and high bits both mix.
/// Cookies come from the trusted backend; sequential offsets and ext4-style hashes both spread
/// well. SipHash, the std default, costs several times more per entry on this hot path.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CookieHasher(u64);

impl std::hash::Hasher for CookieHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used for cookies; fold anything else in byte by byte.
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

type CookieMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<CookieHasher>>;

/// A page's slot in the listing's page table.
pub(crate) type PageId = u32;

/// The position of the entry after a cookie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub page: PageId,
    pub slot: u32,
}

/// One backend fill, kept.
#[derive(Debug)]
pub(crate) struct Page {
    pub entries: Vec<Entry>,
    pub eof: bool,
    pub start: u64,
    pub epoch: u64,
    pub verifier: Verifier,
    /// The page's key in the global LRU (see `budget.rs`); changes on every touch.
    pub lru: u64,
}

/// Where a cookie leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolve {
    /// A fresh page holds the next entry.
    Hit(Pos),
    /// The cookie is the end of the directory.
    Eof,
    /// The cookie ends a fresh, non-final page: fill there.
    Gap,
    /// The cookie leads into a stale page: drop it, then fill there.
    Stale(PageId),
    /// The cookie is not indexed: fill there (the backend decides whether it is valid).
    Unknown,
}

/// What the listing decided about a finished fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adopt {
    /// Keep the page; `changed` when the fill revealed a new verifier (the epoch moved).
    Keep { changed: bool },
    /// The directory changed while the fill ran and the fill does not match the new verifier:
    /// hand the entries to the reader that asked, keep nothing.
    Uncached,
}

/// One directory's cached listing. See the module docs for the rules.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pages: Vec<Option<Page>>,
    free: Vec<PageId>,
    live: usize,
    index: CookieMap<Pos>,
    epoch: u64,
    verifier: Option<Verifier>,
    frontier: u64,
    complete: bool,
    names: Option<HashMap<Arc<[u8]>, Pos>>,
}

impl Listing {
    /// The current epoch: a fill records it when it starts.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The verifier the fresh pages were filled under, if known.
    pub fn verifier(&self) -> Option<Verifier> {
        self.verifier
    }

    /// Whether the fresh pages cover cookie 0 to the end of the directory.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Number of pages held, fresh or stale.
    pub fn pages(&self) -> usize {
        self.live
    }

    /// The page in slot `id`. Panics if the slot is empty: an index entry never points there.
    pub fn page(&self, id: PageId) -> &Page {
        self.pages[id as usize].as_ref().expect("index points at a live page")
    }

    /// The LRU key of page `id`, if that slot holds a page.
    pub fn lru_of(&self, id: PageId) -> Option<u64> {
        self.pages.get(id as usize)?.as_ref().map(|p| p.lru)
    }

    /// The cookie page `id` starts at, if that slot holds a page.
    pub fn start_of(&self, id: PageId) -> Option<u64> {
        self.pages.get(id as usize)?.as_ref().map(|p| p.start)
    }

    /// Records page `id`'s new LRU key after a touch.
    pub fn set_lru(&mut self, id: PageId, lru: u64) {
        if let Some(Some(p)) = self.pages.get_mut(id as usize) {
            p.lru = lru;
        }
    }

    /// Where `cookie` leads.
    pub fn resolve(&self, cookie: u64) -> Resolve {
        let Some(&pos) = self.index.get(&cookie) else { return Resolve::Unknown };
        let page = self.page(pos.page);
        debug_assert!(pos.slot as usize <= page.entries.len(), "slot past the page end");
        if page.epoch != self.epoch {
            return Resolve::Stale(pos.page);
        }
        debug_assert_eq!(Some(page.verifier), self.verifier, "a fresh page has the verifier");
        if (pos.slot as usize) < page.entries.len() {
            Resolve::Hit(pos)
        } else if page.eof {
            Resolve::Eof
        } else {
            Resolve::Gap
        }
    }

    /// The directory changed to `verifier` (`None`: to something unknown). Returns whether the
    /// epoch moved, that is whether every page held became stale.
    pub fn change(&mut self, verifier: Option<Verifier>) -> bool {
        if verifier.is_some() && verifier == self.verifier {
            return false;
        }
        self.epoch += 1;
        self.verifier = verifier;
        self.lose_completeness();
        true
    }

    /// Decides what to do with a fill that started at epoch `started` and returned `verifier`.
    pub fn adopt(&mut self, started: u64, verifier: Verifier) -> Adopt {
        if self.epoch == started {
            // Nothing was announced while the fill ran: its verifier is the newest known.
            let changed = match self.verifier {
                None => {
                    // The first verifier since the cache was made or told of an unknown
                    // change. A new epoch all the same (no page is fresh without a verifier,
                    // so none goes stale): another fill that started with this one but read
                    // the directory before it changed, and returns later with an older
                    // verifier, is then not kept over this one.
                    self.epoch += 1;
                    self.verifier = Some(verifier);
                    false
                }
                Some(v) if v == verifier => false,
                Some(_) => self.change(Some(verifier)),
            };
            Adopt::Keep { changed }
        } else if self.verifier == Some(verifier) {
            // A change was announced meanwhile, and the fill already saw its result.
            Adopt::Keep { changed: false }
        } else {
            Adopt::Uncached
        }
    }

    /// Checks a fill made at `cookie` for the loops that would make a listing spin.
    pub fn check_fill(cookie: u64, fill: &Fill) -> Result<(), Error> {
        if fill.entries.is_empty() && !fill.eof {
            return Err(Error::Loop { cookie });
        }
        let mut seen = HashSet::with_capacity(fill.entries.len());
        for e in &fill.entries {
            if e.cookie == 0 || e.cookie == cookie || !seen.insert(e.cookie) {
                return Err(Error::Loop { cookie: e.cookie });
            }
        }
        Ok(())
    }

    /// Keeps `fill`, made at `start`, as a fresh page with LRU key `lru`, cut after its first
    /// entry whose cookie a fresh page already leads on from. Returns its id, or `None` if a
    /// fresh page already leads on from `start` itself (another fill covered it while this
    /// one ran): then nothing is kept.
    pub fn try_insert(&mut self, start: u64, mut fill: Fill, lru: u64) -> Option<PageId> {
        debug_assert_eq!(Some(fill.verifier), self.verifier, "a kept page carries the verifier");
        if self.leads_on(start) {
            return None;
        }
        // The page ends where the cached listing already goes on: its end then leads into
        // the page that holds the rest, and no cookie is held inside two fresh pages.
        if let Some(i) = fill.entries.iter().position(|e| self.leads_on(e.cookie)) {
            fill.entries.truncate(i + 1);
            fill.eof = false;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.pages.push(None);
                PageId::try_from(self.pages.len() - 1).expect("fewer than 2^32 pages")
            }
        };
        let len = fill.entries.len();
        let page = Page {
            entries: fill.entries,
            eof: fill.eof,
            start,
            epoch: self.epoch,
            verifier: fill.verifier,
            lru,
        };
        let cookies: Vec<u64> = page.entries.iter().map(|e| e.cookie).collect();
        debug_assert!(self.pages[id as usize].is_none(), "free slot holds a page");
        self.pages[id as usize] = Some(page);
        self.live += 1;
        self.map(start, Pos { page: id, slot: 0 });
        for (i, c) in cookies.into_iter().enumerate() {
            self.map(c, Pos { page: id, slot: u32::try_from(i + 1).expect("page fits u32") });
        }
        debug_assert!(len <= u32::MAX as usize);
        self.extend_frontier();
        Some(id)
    }

    /// Whether `cookie` is mapped into a fresh page's entries or to the end of a final one:
    /// a mapping that leads somewhere, which a new page never replaces.
    fn leads_on(&self, cookie: u64) -> bool {
        self.index.get(&cookie).is_some_and(|old| {
            let p = self.page(old.page);
            p.epoch == self.epoch && ((old.slot as usize) < p.entries.len() || p.eof)
        })
    }

    /// Installs `cookie -> pos` unless a fresh mapping that leads somewhere is already there.
    fn map(&mut self, cookie: u64, pos: Pos) {
        if !self.leads_on(cookie) {
            self.index.insert(cookie, pos);
        }
    }

    /// Removes page `id` and exactly the mappings that point at it; returns it.
    pub fn remove(&mut self, id: PageId) -> Page {
        // Completeness, the frontier and the name index are all built along the fresh chain
        // from cookie 0; a page off that chain (a stale one, or one a reader resumed at a
        // cookie the chain does not pass) takes none of them with it. The walk stops at the
        // chain's first gap: evicting a directory's pages oldest first, each finds its gap
        // (or the page) at once.
        let on_chain =
            self.page(id).epoch == self.epoch && self.chain_from_start().any(|pos| pos.page == id);
        let page = self.pages[id as usize].take().expect("removing a live page");
        for c in std::iter::once(page.start).chain(page.entries.iter().map(|e| e.cookie)) {
            if self.index.get(&c).is_some_and(|p| p.page == id) {
                self.index.remove(&c);
            }
        }
        self.free.push(id);
        self.live -= 1;
        if on_chain {
            self.lose_completeness();
        }
        page
    }

    /// Removes every page; returns their LRU keys.
    pub fn clear(&mut self) -> Vec<u64> {
        let keys = self.pages.iter().flatten().map(|p| p.lru).collect();
        let (epoch, verifier) = (self.epoch, self.verifier);
        *self = Listing { epoch, verifier, ..Listing::default() };
        keys
    }

    fn lose_completeness(&mut self) {
        self.frontier = 0;
        self.complete = false;
        self.names = None;
    }

    /// Follows the fresh chain from the frontier as far as it goes.
    fn extend_frontier(&mut self) {
        // A cycle of mappings (a backend looping across pages) must not spin here: the chain
        // visits each page at most once.
        for _ in 0..=self.live {
            match self.resolve(self.frontier) {
                Resolve::Hit(pos) => {
                    let page = self.page(pos.page);
                    if page.eof {
                        self.complete = true;
                        return;
                    }
                    self.frontier =
                        page.entries.last().expect("non-final pages are not empty").cookie;
                }
                Resolve::Eof => {
                    self.complete = true;
                    return;
                }
                Resolve::Gap | Resolve::Stale(_) | Resolve::Unknown => return,
            }
        }
    }

    /// Answers a name lookup from a complete listing (building the name index on first use).
    pub fn lookup(&mut self, name: &[u8]) -> Lookup {
        if !self.complete {
            return Lookup::Unknown;
        }
        if self.names.is_none() {
            self.names = Some(self.build_names());
        }
        let names = self.names.as_ref().expect("just built");
        match names.get(name) {
            Some(pos) => Lookup::Present(self.page(pos.page).entries[pos.slot as usize].clone()),
            None => Lookup::Absent,
        }
    }

    fn build_names(&self) -> HashMap<Arc<[u8]>, Pos> {
        let mut names = HashMap::new();
        for pos in self.chain_from_start() {
            let page = self.page(pos.page);
            for (slot, e) in page.entries.iter().enumerate().skip(pos.slot as usize) {
                let slot = u32::try_from(slot).expect("page fits u32");
                names.insert(e.name.clone(), Pos { page: pos.page, slot });
            }
        }
        names
    }

    /// Where the fresh chain from cookie 0 enters each of its pages, in order, up to the first
    /// gap or the end. (A stale page is on no fresh chain: `resolve` never hits one.) A cycle
    /// of mappings (a backend looping across pages) must not spin here: the chain visits each
    /// page at most once.
    fn chain_from_start(&self) -> impl Iterator<Item = Pos> + '_ {
        let mut next = Some(0);
        std::iter::from_fn(move || {
            let Resolve::Hit(pos) = self.resolve(next?) else { return None };
            let page = self.page(pos.page);
            next = match page.entries.last() {
                Some(last) if !page.eof => Some(last.cookie),
                _ => None,
            };
            Some(pos)
        })
        .take(self.live + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Listing {
        /// Inserts a page that must be kept.
        fn insert(&mut self, start: u64, fill: Fill, lru: u64) -> PageId {
            self.try_insert(start, fill, lru).expect("kept")
        }
    }

    fn fill(cookies: &[u64], eof: bool, v: u64) -> Fill {
        Fill {
            entries: cookies
                .iter()
                .map(|&c| Entry::new(format!("n{c}"), c, DType::REG, c))
                .collect(),
            eof,
            verifier: Verifier::new(v),
        }
    }

    #[test]
    fn index_resumes_at_every_cookie_and_chains_pages() {
        let mut l = Listing::default();
        assert_eq!(l.resolve(0), Resolve::Unknown);
        assert_eq!(l.adopt(0, Verifier::new(1)), Adopt::Keep { changed: false });
        let a = l.insert(0, fill(&[30, 10, 20], false, 1), 1);
        assert_eq!(l.resolve(0), Resolve::Hit(Pos { page: a, slot: 0 }));
        assert_eq!(l.resolve(10), Resolve::Hit(Pos { page: a, slot: 2 }));
        assert_eq!(l.resolve(20), Resolve::Gap);
        assert!(!l.is_complete());
        let b = l.insert(20, fill(&[5], true, 1), 2);
        assert_eq!(l.resolve(20), Resolve::Hit(Pos { page: b, slot: 0 }));
        assert_eq!(l.resolve(5), Resolve::Eof);
        assert!(l.is_complete());
        assert_eq!(l.lookup(b"n5"), Lookup::Present(Entry::new("n5", 5, DType::REG, 5)));
        assert_eq!(l.lookup(b"n6"), Lookup::Absent);
        // Removing the first page drops its mappings and completeness, not the second page's.
        l.remove(a);
        assert_eq!(l.resolve(10), Resolve::Unknown);
        assert_eq!(l.resolve(20), Resolve::Hit(Pos { page: b, slot: 0 }));
        assert!(!l.is_complete());
        assert_eq!(l.lookup(b"n5"), Lookup::Unknown);
    }

    #[test]
    fn a_change_makes_pages_stale_and_late_fills_uncached() {
        let mut l = Listing::default();
        l.adopt(0, Verifier::new(1));
        let a = l.insert(0, fill(&[1, 2], true, 1), 1);
        assert!(l.is_complete());
        let started = l.epoch();
        assert!(l.change(Some(Verifier::new(2))));
        assert!(!l.change(Some(Verifier::new(2))), "announcing the same verifier twice is a no-op");
        assert!(!l.is_complete());
        assert_eq!(l.resolve(1), Resolve::Stale(a));
        // A fill that began before the change and saw the old directory is not kept...
        assert_eq!(l.adopt(started, Verifier::new(1)), Adopt::Uncached);
        // ...one that saw the new directory is.
        assert_eq!(l.adopt(started, Verifier::new(2)), Adopt::Keep { changed: false });
        // A fill revealing a change nobody announced moves the epoch itself.
        let now = l.epoch();
        assert_eq!(l.adopt(now, Verifier::new(3)), Adopt::Keep { changed: true });
        assert_eq!(l.verifier(), Some(Verifier::new(3)));
    }

    #[test]
    fn removing_a_stale_page_keeps_a_complete_listing_complete() {
        let mut l = Listing::default();
        l.adopt(0, Verifier::new(1));
        let old = l.insert(0, fill(&[1, 2], true, 1), 1);
        assert!(l.change(Some(Verifier::new(2))));
        let fresh = l.insert(0, fill(&[1, 3], true, 2), 2);
        assert!(l.is_complete());
        assert_eq!(l.lookup(b"n3"), Lookup::Present(Entry::new("n3", 3, DType::REG, 3)));
        l.remove(old);
        assert!(l.is_complete(), "the stale page was on no fresh chain");
        assert_eq!(l.lookup(b"n2"), Lookup::Absent);
        l.remove(fresh);
        assert!(!l.is_complete());
    }

    #[test]
    fn with_no_verifier_known_the_first_fill_back_wins_over_an_older_one() {
        let mut l = Listing::default();
        assert!(l.change(None), "told of a change it cannot name");
        let started = l.epoch();
        // Two fills start; the one that read the directory later comes back first.
        assert_eq!(l.adopt(started, Verifier::new(2)), Adopt::Keep { changed: false });
        let page = l.insert(0, fill(&[1, 2, 3], true, 2), 1);
        assert!(l.is_complete());
        assert_eq!(
            l.adopt(started, Verifier::new(1)),
            Adopt::Uncached,
            "the older one goes uncached"
        );
        assert_eq!(l.verifier(), Some(Verifier::new(2)));
        assert_eq!(l.resolve(1), Resolve::Hit(Pos { page, slot: 1 }));
        assert!(l.is_complete());
    }

    #[test]
    fn kept_mappings_are_never_replaced_by_gaps() {
        let mut l = Listing::default();
        l.adopt(0, Verifier::new(1));
        let a = l.insert(0, fill(&[1, 2, 3], true, 1), 1);
        // A page filled at 7 ends at 2: it must not turn 2 into a gap.
        l.insert(7, fill(&[2], false, 1), 2);
        assert_eq!(l.resolve(2), Resolve::Hit(Pos { page: a, slot: 2 }));
        assert!(l.is_complete());
    }

    #[test]
    fn a_page_ends_where_the_cached_listing_goes_on() {
        let mut l = Listing::default();
        l.adopt(0, Verifier::new(1));
        let a = l.insert(3, fill(&[4, 5], true, 1), 1);
        // A fill at 2 reads on past 3, which `a` already leads on from: the page is cut
        // after 3, and its end leads into `a`.
        let b = l.insert(2, fill(&[3, 4, 5], true, 1), 2);
        assert_eq!((l.page(b).entries.len(), l.page(b).eof), (1, false));
        assert_eq!(l.resolve(3), Resolve::Hit(Pos { page: a, slot: 0 }));
        let c = l.insert(0, fill(&[1, 2, 3], false, 1), 3);
        assert_eq!(l.page(c).entries.len(), 2);
        assert!(l.is_complete());
        // A fill at a cookie the cache already leads on from keeps nothing.
        assert_eq!(l.try_insert(1, fill(&[2, 3], false, 1), 4), None);
        assert_eq!(l.try_insert(4, fill(&[5], true, 1), 4), None);
        assert_eq!(l.pages(), 3);
        // No cookie is held inside two pages, so removing `a` takes only what `a` alone held:
        // the chain from 0 stops at 3, the one cookie left to fill.
        l.remove(a);
        assert!(!l.is_complete());
        assert_eq!(l.resolve(0), Resolve::Hit(Pos { page: c, slot: 0 }));
        assert_eq!(l.resolve(2), Resolve::Hit(Pos { page: b, slot: 0 }));
        assert_eq!(l.resolve(3), Resolve::Unknown);
        l.insert(3, fill(&[4, 5], true, 1), 5);
        assert!(l.is_complete());
        assert_eq!(l.lookup(b"n6"), Lookup::Absent);
    }

    #[test]
    fn fills_that_would_spin_are_loops() {
        assert_eq!(
            Listing::check_fill(0, &fill(&[1, 2, 1], false, 1)),
            Err(Error::Loop { cookie: 1 })
        );
        assert_eq!(Listing::check_fill(7, &fill(&[7], false, 1)), Err(Error::Loop { cookie: 7 }));
        assert_eq!(Listing::check_fill(7, &fill(&[0], false, 1)), Err(Error::Loop { cookie: 0 }));
        assert_eq!(Listing::check_fill(7, &fill(&[], false, 1)), Err(Error::Loop { cookie: 7 }));
        assert_eq!(Listing::check_fill(7, &fill(&[], true, 1)), Ok(()));
    }

    #[test]
    fn a_cycle_of_pages_is_not_complete_and_does_not_spin() {
        let mut l = Listing::default();
        l.adopt(0, Verifier::new(1));
        l.insert(0, fill(&[1, 2], false, 1), 1);
        l.insert(2, fill(&[3, 4], false, 1), 2);
        l.insert(4, fill(&[5, 2], false, 1), 3); // 2 is kept pointing at page two: a cycle
        assert!(!l.is_complete());
        assert_eq!(l.lookup(b"n1"), Lookup::Unknown);
    }
}
