//! Each trouble case of the crate docs: loops, unknown cookies, cookies the new listing lost,
//! eviction under a reader, backend failures and panics.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use udcache_readdir::reference::{CookieStyle, MemDir};
use udcache_readdir::{
    Backend, Batch, Config, DType, DirCache, Entry, Error, Fill, FillError, Lookup, ReaddirCache,
    Verifier,
};

fn cache(budget: usize, page: usize) -> ReaddirCache {
    ReaddirCache::with_config(Config::default().with_budget_pages(budget).with_page_entries(page))
}

/// Cookies 1, 2 | 3, 4 | then back to 1, 2: a loop across calls.
struct Cycle;
impl Backend for Cycle {
    fn fill(&self, cookie: u64, _max: usize) -> Result<Fill, FillError> {
        let cookies = match cookie {
            0 => [1, 2],
            2 => [3, 4],
            4 => [1, 2],
            _ => return Err(FillError::UnknownCookie),
        };
        let entries =
            cookies.iter().map(|&c| Entry::new(format!("e{c}"), c, DType::REG, c)).collect();
        Ok(Fill { entries, eof: false, verifier: Verifier::new(1) })
    }
}

#[test]
fn a_loop_across_calls_stops_a_pass_with_eloop() {
    let dir = cache(16, 2).dir(Cycle);
    let mut c = dir.cursor();
    let mut result = Ok(Vec::new());
    for _ in 0..100 {
        result = c.read(2);
        if result.is_err() {
            break;
        }
    }
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Loop { .. }));
    assert_eq!(err.errno(), libc::ELOOP);
    assert_eq!(c.read(2), Err(err), "sticky until seek");
    c.seek(0);
    assert_eq!(c.read(2).unwrap().len(), 2);
}

#[test]
fn one_read_over_pages_cached_in_a_cycle_stops_with_eloop() {
    let cache = cache(16, 2);
    let dir = cache.dir(Cycle);
    // A first pass caches the three pages (the third leads back to the second) and stops.
    let mut c = dir.cursor();
    while c.read(2).is_ok() {}
    assert_eq!(cache.stats().backend_calls, 3);
    // One large read from the start meets the cycle with no backend call: it used to copy
    // the pages round and round until `max` (forever with `usize::MAX`).
    for max in [1000, usize::MAX] {
        assert!(matches!(dir.read(0, max), Err(Error::Loop { .. })), "max {max}");
    }
    assert_eq!(cache.stats().backend_calls, 3);
    // A cursor's large read too.
    let mut c = dir.cursor();
    assert!(matches!(c.read(usize::MAX), Err(Error::Loop { .. })));
}

/// Returns the requested cookie as an entry's cookie: a loop inside one fill.
struct SelfLoop;
impl Backend for SelfLoop {
    fn fill(&self, cookie: u64, _max: usize) -> Result<Fill, FillError> {
        Ok(Fill {
            entries: vec![Entry::new("x", 1, DType::REG, cookie.max(1))],
            eof: false,
            verifier: Verifier::new(1),
        })
    }
}

#[test]
fn a_loop_inside_a_fill_is_rejected_and_not_kept() {
    let dir = cache(16, 4).dir(SelfLoop);
    let first = dir.read(0, 4).unwrap();
    assert_eq!(first.entries[0].cookie, 1);
    let before = dir.cached_pages();
    assert_eq!(dir.read(1, 4), Err(Error::Loop { cookie: 1 }));
    assert_eq!(dir.cached_pages(), before, "a failed read changes nothing");
}

#[test]
fn an_unknown_cookie_is_einval_and_changes_nothing() {
    let c = cache(16, 4);
    let dir = c.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..10));
    dir.read(0, 4).unwrap();
    let pages = dir.cached_pages();
    let err = dir.read(5000, 4).unwrap_err();
    assert_eq!(err, Error::BadCookie { cookie: 5000 });
    assert_eq!(err.errno(), libc::EINVAL);
    assert_eq!(dir.cached_pages(), pages);
    assert_eq!(c.stats().pages, pages);
}

#[test]
fn a_cookie_the_new_listing_lost_is_read_at_that_cookie() {
    let c = cache(64, 8);
    let dir = c.dir(MemDir::with_entries(CookieStyle::Hashed, 100, 0..12));
    // Reader A stops after n5.
    let a = dir.read(0, 6).unwrap();
    let at = a.entries[5].cookie;
    // n5 goes; reader B lists the whole new directory: `at` is not in its listing.
    dir.set_verifier(dir.backend().remove(5).unwrap());
    let mut b = dir.cursor();
    while !b.read(4).unwrap().is_empty() {}
    assert!(dir.is_complete());
    // A resumes at its own cookie: the backend is asked there, and A gets exactly n6..n11.
    let calls = c.stats().backend_calls;
    let rest = dir.read(at, 100).unwrap();
    let names: Vec<_> =
        rest.entries.iter().map(|e| String::from_utf8(e.name.to_vec()).unwrap()).collect();
    assert_eq!(names, ["n6", "n7", "n8", "n9", "n10", "n11"]);
    assert!(rest.eof);
    assert_eq!(c.stats().backend_calls, calls + 1);
}

#[test]
fn a_page_evicted_under_a_reader_is_refilled_from_its_cookie() {
    let c = cache(1, 8);
    let a = c.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..8));
    let b = c.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..8));
    let first = a.read(0, 3).unwrap();
    b.read(0, 3).unwrap(); // budget of one page: evicts a's page
    assert_eq!((a.cached_pages(), c.stats().evictions), (0, 1));
    let rest = a.read(first.entries[2].cookie, 8).unwrap();
    assert_eq!(
        rest.entries.iter().map(|e| e.ino).collect::<Vec<_>>(),
        (1003..1008).collect::<Vec<_>>()
    );
    assert!(rest.eof);
    assert_eq!(a.backend().calls(), 2);
}

#[test]
fn a_change_mid_listing_refills_from_the_readers_cookie_not_from_zero() {
    let c = cache(64, 4);
    let dir = c.dir(MemDir::with_entries(CookieStyle::Ordered, 1000, 0..40));
    let mut cur = dir.cursor();
    let mut seen = cur.read(4).unwrap().len() + cur.read(4).unwrap().len();
    dir.set_verifier(dir.backend().insert(500).unwrap());
    let calls = dir.backend().calls();
    loop {
        let b = cur.read(4).unwrap();
        if b.is_empty() {
            break;
        }
        seen += b.len();
    }
    assert_eq!(seen, 41);
    // 33 entries after the reader's cookie, 4 per fill: 9 fills, none for what it already read.
    assert_eq!(dir.backend().calls() - calls, 9);
    // Only the page whose end the reader sat at was touched (and dropped); the first stays.
    assert_eq!(c.stats().stale_dropped, 1);
    assert_eq!(dir.cached_pages(), 1 + 9);
}

/// Fails with EIO, or panics, while the flag says so.
struct Flaky {
    inner: MemDir,
    panic: AtomicBool,
}
impl Backend for Flaky {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        // Relaxed: the flag is set and read by the one test thread.
        if self.panic.load(Ordering::Relaxed) {
            panic!("backend bug");
        }
        if cookie == 3 {
            return Err(FillError::Io(libc::EIO));
        }
        self.inner.fill(cookie, max)
    }
}

#[test]
fn backend_errors_and_panics_leave_the_cache_usable() {
    let c = cache(16, 2);
    let flaky = Flaky {
        inner: MemDir::with_entries(CookieStyle::Ordered, 10, 0..6),
        panic: AtomicBool::new(true),
    };
    let dir = c.dir(flaky);
    assert!(catch_unwind(AssertUnwindSafe(|| dir.read(0, 2))).is_err());
    // Relaxed: see `Flaky`.
    dir.backend().panic.store(false, Ordering::Relaxed);
    // The panicked fill's cookie is no longer in flight: this read fills instead of waiting.
    assert_eq!(dir.read(0, 2).unwrap().entries.len(), 2);
    let err = dir.read(3, 2).unwrap_err();
    assert_eq!((err, err.errno()), (Error::Backend(libc::EIO), libc::EIO));
    assert_eq!(dir.cached_pages(), 1);
}

#[test]
fn zero_max_is_invalid() {
    let dir = cache(1, 1).dir(MemDir::new(CookieStyle::Ordered, 1));
    assert_eq!(dir.read(0, 0).unwrap_err().errno(), libc::EINVAL);
    assert_eq!(dir.backend().calls(), 0);
}

/// A directory whose fill at cookie `slow` reads the listing, then waits at a gate before it
/// returns: a slow reader that saw the directory before a change made behind the cache, or
/// that another reader's fill overtakes.
struct SlowStart {
    dir: MemDir,
    slow: u64,
    entered: std::sync::Mutex<bool>,
    gate: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Backend for SlowStart {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let fill = self.dir.fill(cookie, max);
        if cookie == self.slow {
            *self.entered.lock().unwrap() = true;
            let mut open = self.gate.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
        fill
    }
}

impl SlowStart {
    /// Lets the fill waiting at the gate return.
    fn open(&self) {
        *self.gate.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// A cache of 16-entry pages over n0..n4, and a reader whose read at cookie `slow` has read
/// the directory and waits at the gate.
fn slow_reader(slow: u64) -> (DirCache<SlowStart>, JoinHandle<Batch>) {
    let dir = cache(64, 16).dir(SlowStart {
        dir: MemDir::with_entries(CookieStyle::Ordered, 100, 0..5),
        slow,
        entered: Default::default(),
        gate: Default::default(),
        opened: Default::default(),
    });
    let reader = {
        let dir = dir.clone();
        std::thread::spawn(move || dir.read(slow, 16).unwrap())
    };
    while !*dir.backend().entered.lock().unwrap() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    (dir, reader)
}

#[test]
fn a_fill_that_read_an_older_directory_never_replaces_a_newer_one_kept_before_it() {
    // No verifier is known yet. A reader's fill at cookie 0 reads n0..n4 and waits.
    let (dir, slow) = slow_reader(0);
    // n50 is created behind the cache; a reader resuming at n2 sees it and returns first.
    let newer = dir.backend().dir.insert(50).unwrap();
    let resumed = dir.read(MemDir::new(CookieStyle::Ordered, 100).cookie(2), 16).unwrap();
    assert!(resumed.entries.iter().any(|e| &*e.name == b"n50"));
    assert_eq!(dir.verifier(), Some(newer));
    dir.backend().open();
    slow.join().unwrap();
    // The slow reader got what it read, but the cache kept the newer listing.
    assert_eq!(dir.verifier(), Some(newer));
    assert_ne!(dir.lookup(b"n50"), udcache_readdir::Lookup::Absent);
}

#[test]
fn a_read_of_any_size_from_the_middle_of_a_page_returns_the_rest() {
    let dir = cache(64, 8).dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..10));
    let first = dir.read(0, 2).unwrap();
    let rest = dir.read(first.entries[1].cookie, usize::MAX).unwrap();
    assert_eq!(rest.entries.len(), 6, "the rest of the first page of 8");
}

#[test]
fn a_refused_cookie_counts_as_neither_a_hit_nor_a_miss() {
    let c = cache(64, 4);
    let dir = c.dir(MemDir::with_entries(CookieStyle::Hashed, 100, 0..10));
    dir.read(0, 4).unwrap();
    let before = c.stats();
    assert_eq!(dir.read(12345, 4), Err(Error::BadCookie { cookie: 12345 }));
    let after = c.stats();
    assert_eq!((after.hits, after.misses), (before.hits, before.misses));
}

#[test]
fn evicting_a_page_off_the_chain_from_the_start_keeps_the_listing_complete() {
    let cache = cache(2, 8);
    let dir = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..4));
    let other = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..4));
    assert!(dir.read(0, 8).unwrap().eof, "one page holds the whole directory");
    assert!(dir.is_complete());
    // A reader resuming at a cookie the backend knows but the chain from 0 does not pass
    // (past the last name) adds a second page, off that chain.
    assert!(dir.read(50, 8).unwrap().eof);
    dir.read(0, 1).unwrap(); // the first page is now the more recently used
    other.read(0, 8).unwrap(); // over the budget of 2: the off-chain page goes
    assert_eq!(dir.cached_pages(), 1);
    // The chain from 0 is still wholly cached: complete, and misses are answered.
    assert!(dir.is_complete(), "lost with a page that was not on the chain");
    assert_eq!(dir.lookup(b"n77"), Lookup::Absent);
    assert_eq!(dir.backend().calls(), 2, "no call since");
}

/// At cookie 0: 3, 4, 5, 1; at cookie 1: 5, whose cookie the first page already leads on from
/// (to 1): together the two fills loop 1 -> 5 -> 1, though neither does alone.
struct LoopsWithTheCache;
impl Backend for LoopsWithTheCache {
    fn fill(&self, cookie: u64, _max: usize) -> Result<Fill, FillError> {
        let cookies: &[u64] = match cookie {
            0 => &[3, 4, 5, 1],
            1 => &[5],
            _ => return Err(FillError::UnknownCookie),
        };
        let entries =
            cookies.iter().map(|&c| Entry::new(format!("e{c}"), c, DType::REG, c)).collect();
        Ok(Fill { entries, eof: false, verifier: Verifier::new(1) })
    }
}

#[test]
fn a_read_that_fails_on_a_loop_its_own_fill_closed_keeps_nothing_new() {
    let c = cache(16, 4);
    let dir = c.dir(LoopsWithTheCache);
    assert_eq!(dir.read(0, usize::MAX).unwrap().entries.len(), 4);
    let (pages, stats) = (dir.cached_pages(), c.stats());
    // The fill at 1 is no loop by itself; following it into the cached page is.
    assert_eq!(dir.read(1, usize::MAX), Err(Error::Loop { cookie: 1 }));
    // "A failed read keeps nothing new": the page that closed the loop is not kept.
    assert_eq!(dir.cached_pages(), pages, "the failed read kept its fill");
    assert_eq!(c.stats().pages, stats.pages);
    assert_eq!((c.stats().hits, c.stats().misses), (stats.hits, stats.misses));
    // Asked again, the backend is asked again, and the answer is the same.
    assert_eq!(dir.read(1, usize::MAX), Err(Error::Loop { cookie: 1 }));
    assert_eq!(dir.cached_pages(), pages);
}

#[test]
fn a_cursor_rejects_a_zero_max_at_the_end_too() {
    let dir = cache(4, 4).dir(MemDir::with_entries(CookieStyle::Ordered, 10, 0..2));
    let mut c = dir.cursor();
    assert_eq!(c.read(0), Err(Error::InvalidArgument("max must be at least 1")));
    assert_eq!(c.read(8).unwrap().len(), 2);
    assert!(c.is_eof());
    // `Cursor::read` has the errors of `DirCache::read`: `max == 0` is EINVAL wherever it is.
    assert_eq!(c.read(0), Err(Error::InvalidArgument("max must be at least 1")));
}

#[test]
fn a_pass_served_from_pages_that_overlapped_leaves_the_listing_complete() {
    let cache = cache(3, 3);
    // n0..n4, at cookies 1..5.
    let dir = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..5));
    let other = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 100, 0..5));
    // Readers resuming at cookies 3, 2 and 0 fill a page at each, in that order: the fills
    // overlap (each reads on into what the one before it holds).
    assert!(dir.read(3, 8).unwrap().eof);
    assert!(dir.read(2, 8).unwrap().eof);
    assert!(dir.read(0, 8).unwrap().eof);
    assert!(dir.is_complete());
    assert_eq!(dir.backend().calls(), 3);
    // Touch the pages filled at 2 and 0; a read of the other directory then evicts the one
    // filled at 3, the least recently used.
    dir.read(2, 1).unwrap();
    dir.read(0, 1).unwrap();
    other.read(0, 8).unwrap();
    assert_eq!(cache.stats().evictions, 1);
    assert!(!dir.is_complete(), "the chain from 0 lost a page");
    // A full pass from the start. Whatever it reads from the cache or the backend, it ends
    // with the chain from 0 cached again: the directory is complete and answers misses.
    let evictions = cache.stats().evictions;
    let mut c = dir.cursor();
    while !c.read(2).unwrap().is_empty() {}
    assert!(dir.is_complete(), "a full pass from 0 left it incomplete");
    assert_eq!(dir.lookup(b"n77"), Lookup::Absent);
    assert!(matches!(dir.lookup(b"n3"), Lookup::Present(_)));
    // The pass refilled only what the evicted page alone held, and evicted none of ours.
    assert_eq!(dir.backend().calls(), 4);
    assert_eq!(cache.stats().evictions, evictions + 1, "the other directory's page");
    assert_eq!(other.cached_pages(), 0);
}

#[test]
fn a_fill_whose_cookie_another_fill_covered_meanwhile_is_not_kept() {
    // A reader's fill at cookie 3 (after n2) reads n3 and n4, and waits.
    let (dir, slow) = slow_reader(3);
    // Meanwhile a fill at 0 caches the whole directory, cookie 3 and what follows included.
    assert!(dir.read(0, 16).unwrap().eof);
    assert!(dir.is_complete());
    dir.backend().open();
    let late = slow.join().unwrap();
    let names: Vec<&[u8]> = late.entries.iter().map(|e| &*e.name).collect();
    assert_eq!((names, late.eof), (vec![&b"n3"[..], b"n4"], true));
    // The slow fill would hold cookies 3..5 a second time: it is not kept.
    assert_eq!(dir.cached_pages(), 1, "two pages hold the same cookies");
    assert_eq!(dir.backend().dir.calls(), 2);
    assert!(dir.is_complete());
}
