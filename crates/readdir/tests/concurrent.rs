//! Real threads: several readers listing one directory while a writer changes it, with a page
//! budget smaller than the directory; and coalescing of concurrent fills of the same cookie.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{Backend, Fill, FillError, ReaddirCache};

const UNIVERSE: u64 = 3000;

/// The writer's record: under its lock, a change to the backend, its announcement to the cache,
/// and the sequence number of the last change of each id happen together.
struct Changes {
    seq: u64,
    last: Vec<u64>,
}

fn stress(style: CookieStyle) {
    let cache = ReaddirCache::new(NonZeroUsize::new(40).unwrap(), NonZeroUsize::new(16).unwrap());
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

/// A backend whose calls wait until the test opens a gate.
struct Gated {
    inner: MemDir,
    open: Mutex<bool>,
    cv: Condvar,
}

impl Backend for Gated {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
        drop(open);
        self.inner.fill(cookie, max)
    }
}

#[test]
fn concurrent_fills_of_one_cookie_make_one_backend_call() {
    let cache = ReaddirCache::new(NonZeroUsize::new(8).unwrap(), NonZeroUsize::new(32).unwrap());
    let gated = Gated {
        inner: MemDir::with_entries(CookieStyle::Hashed, 100, 0..50),
        open: Mutex::new(false),
        cv: Condvar::new(),
    };
    let dir = cache.dir(gated);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let dir = dir.clone();
            thread::spawn(move || dir.read(0, 10).unwrap())
        })
        .collect();
    let t0 = Instant::now();
    while cache.stats().coalesced < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "readers did not queue: {:?}",
            cache.stats()
        );
        thread::yield_now();
    }
    *dir.backend().open.lock().unwrap() = true;
    dir.backend().cv.notify_all();
    let batches: Vec<_> = readers.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(batches.iter().all(|b| *b == batches[0] && b.entries.len() == 10));
    let s = cache.stats();
    assert_eq!((s.backend_calls, s.coalesced, s.misses), (1, 3, 4));
    assert_eq!(dir.backend().inner.calls(), 1);
}
