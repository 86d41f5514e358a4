//! Real threads: several readers listing one directory while a writer changes it, with a page
//! budget smaller than the directory; and coalescing of concurrent fills of the same cookie,
//! including what a waiting reader does, and how it is counted, when the fill it waited for
//! fails or is not kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{Backend, Batch, Config, DirCache, Error, Fill, FillError, ReaddirCache};

const UNIVERSE: u64 = 3000;

/// The writer's record: under its lock, a change to the backend, its announcement to the cache,
/// and the sequence number of the last change of each id happen together.
struct Changes {
    seq: u64,
    last: Vec<u64>,
}

fn stress(style: CookieStyle) {
    let cache =
        ReaddirCache::with_config(Config::default().with_budget_pages(40).with_page_entries(16));
    let dir =
        cache.dir(MemDir::with_entries(style, UNIVERSE, (0..UNIVERSE).filter(|i| i % 2 == 0)));
    let changes = Arc::new(Mutex::new(Changes { seq: 0, last: vec![0; UNIVERSE as usize] }));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_millis(1500);

    let writer = {
        let (dir, changes, stop) = (dir.clone(), changes.clone(), stop.clone());
        thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut n = 0u64;
            // Relaxed: `stop` carries no data; the join below orders everything else.
            while !stop.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = x % UNIVERSE;
                let mut ch = changes.lock().unwrap();
                let b = dir.backend();
                let v = if b.contains(id) { b.remove(id) } else { b.insert(id) }.unwrap();
                ch.seq += 1;
                ch.last[id as usize] = ch.seq;
                dir.set_verifier(v);
                drop(ch);
                n += 1;
                thread::sleep(Duration::from_micros(50));
            }
            n
        })
    };

    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (dir, changes) = (dir.clone(), changes.clone());
            thread::spawn(move || {
                let mut passes = 0;
                let mut max = 1 + r * 11;
                while Instant::now() < deadline || passes == 0 {
                    let (mut pass, start) = {
                        let ch = changes.lock().unwrap();
                        (PassCheck::new(UNIVERSE, dir.backend().ids()), ch.seq)
                    };
                    let mut cursor = dir.cursor();
                    loop {
                        max = max % 37 + 1;
                        let batch = cursor.read(max).expect("no error from a sane backend");
                        for e in &batch {
                            pass.saw(&e.name);
                        }
                        if cursor.is_eof() {
                            break;
                        }
                    }
                    let ch = changes.lock().unwrap();
                    for (id, &last) in ch.last.iter().enumerate() {
                        if last > start {
                            pass.changed(id as u64);
                        }
                    }
                    drop(ch);
                    let v = pass.verdict();
                    assert!(v.ok(), "reader {r} pass {passes}: {v:?}");
                    passes += 1;
                }
                passes
            })
        })
        .collect();

    let passes: Vec<usize> = readers.into_iter().map(|h| h.join().unwrap()).collect();
    // Relaxed: see the writer loop.
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    let s = cache.stats();
    assert!(passes.iter().all(|&p| p > 0));
    assert!(writes > 0);
    assert_eq!(s.backend_calls, dir.backend().calls());
    // The budget's count is the pages the directory really holds, and within the budget.
    assert_eq!(s.pages, dir.cached_pages());
    assert!(s.pages <= 40);
    assert!(s.evictions > 0, "the budget is smaller than the directory: {s:?}");
    eprintln!("{style:?}: passes {passes:?}, writes {writes}, {s:?}");
}

#[test]
fn readers_and_a_writer_ordered() {
    stress(CookieStyle::Ordered);
}

#[test]
fn readers_and_a_writer_hashed() {
    stress(CookieStyle::Hashed);
}

/// A backend whose calls read the directory, then wait until the test opens a gate; the
/// first call can be made to fail at the gate instead of returning what it read.
struct Gated {
    inner: MemDir,
    gate: Mutex<Gate>,
    cv: Condvar,
}

struct Gate {
    open: bool,
    /// Calls that have read the directory and reached the gate.
    entered: u64,
    /// The answer of the first call to reach the gate, in place of what it read.
    fail: Option<FillError>,
}

impl Gated {
    fn new(inner: MemDir, fail: Option<FillError>) -> Self {
        Gated {
            inner,
            gate: Mutex::new(Gate { open: false, entered: 0, fail }),
            cv: Condvar::new(),
        }
    }

    fn entered(&self) -> u64 {
        self.gate.lock().unwrap().entered
    }

    /// Blocks until a call has reached the gate.
    fn await_entered(&self) {
        let mut gate = self.gate.lock().unwrap();
        while gate.entered == 0 {
            gate = self.cv.wait(gate).unwrap();
        }
    }

    fn open(&self) {
        self.gate.lock().unwrap().open = true;
        self.cv.notify_all();
    }
}

impl Backend for Gated {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let fill = self.inner.fill(cookie, max);
        let mut gate = self.gate.lock().unwrap();
        gate.entered += 1;
        let fail = gate.fail.take();
        self.cv.notify_all();
        while !gate.open {
            gate = self.cv.wait(gate).unwrap();
        }
        fail.map_or(fill, Err)
    }
}

type Reader = thread::JoinHandle<Result<Batch, Error>>;

/// A cache (8 pages of 32 entries) of a directory of 50 entries with hashed cookies, read
/// through a closed gate that fails its first call with `fail`, if given.
fn gated(fail: Option<FillError>) -> (ReaddirCache, DirCache<Gated>) {
    let cache =
        ReaddirCache::with_config(Config::default().with_budget_pages(8).with_page_entries(32));
    let dir = cache.dir(Gated::new(MemDir::with_entries(CookieStyle::Hashed, 100, 0..50), fail));
    (cache, dir)
}

/// Starts a read of 10 entries at cookie 0 and waits until its backend call is held at the
/// gate; then starts `waiters` more reads of cookie 0 and returns once each of them is waiting
/// for that call. Returns the first reader and the waiters.
fn held_fill_and_waiters(
    cache: &ReaddirCache,
    dir: &DirCache<Gated>,
    waiters: u64,
) -> (Reader, Vec<Reader>) {
    let read = || {
        let dir = dir.clone();
        thread::spawn(move || dir.read(0, 10))
    };
    let first = read();
    dir.backend().await_entered();
    let rest: Vec<Reader> = (0..waiters).map(|_| read()).collect();
    // Each one either waits for the held call, or (if coalescing is broken) calls the backend
    // or returns: whichever it does, this loop ends.
    while cache.stats().waits < waiters
        && dir.backend().entered() == 1
        && !rest.iter().any(|h| h.is_finished())
    {
        thread::yield_now();
    }
    assert_eq!(cache.stats().waits, waiters, "readers did not queue: {:?}", cache.stats());
    (first, rest)
}

#[test]
fn readers_that_waited_for_a_kept_fill_get_its_page_with_no_call_of_their_own() {
    let (cache, dir) = gated(None);
    let (first, waiters) = held_fill_and_waiters(&cache, &dir, 3);
    dir.backend().open();
    let first = first.join().unwrap().unwrap();
    assert_eq!(first.entries.len(), 10);
    for w in waiters {
        assert_eq!(w.join().unwrap().unwrap(), first);
    }
    let s = cache.stats();
    assert_eq!((s.backend_calls, s.waits, s.coalesced, s.misses), (1, 3, 3, 4), "{s:?}");
    assert_eq!(dir.backend().inner.calls(), 1);
}

#[test]
fn a_reader_that_waited_for_a_failed_fill_is_not_counted_as_coalesced() {
    let (cache, dir) = gated(Some(FillError::Io(libc::EIO)));
    let (first, mut waiters) = held_fill_and_waiters(&cache, &dir, 1);
    dir.backend().open();
    assert_eq!(first.join().unwrap(), Err(Error::Backend(libc::EIO)));
    // The failed fill kept nothing: the waiter had to call the backend itself.
    let waited = waiters.pop().unwrap().join().unwrap().unwrap();
    assert_eq!(waited.entries.len(), 10);
    let s = cache.stats();
    assert_eq!((s.backend_calls, s.waits, s.coalesced, s.misses), (2, 1, 0, 1), "{s:?}");
}

#[test]
fn a_reader_that_waited_for_an_uncached_fill_is_not_counted_as_coalesced() {
    let (cache, dir) = gated(None);
    let (first, mut waiters) = held_fill_and_waiters(&cache, &dir, 1);
    // The held call read the directory before this change: its fill goes to its reader only.
    dir.set_verifier(dir.backend().inner.remove(7).unwrap());
    dir.backend().open();
    let has_n7 = |b: &Batch| b.entries.iter().any(|e| &*e.name == b"n7");
    assert!(has_n7(&first.join().unwrap().unwrap()));
    // The waiter called the backend itself and got the changed directory.
    let waited = waiters.pop().unwrap().join().unwrap().unwrap();
    assert!(!has_n7(&waited));
    let s = cache.stats();
    let counts = (s.backend_calls, s.waits, s.coalesced, s.uncached, s.misses);
    assert_eq!(counts, (2, 1, 0, 1, 2), "{s:?}");
}
