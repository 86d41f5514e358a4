//! Misses through a filesystem: cached answers, and concurrent misses of one name coalesced
//! into one call (real threads, a counting backend).

mod lend;

use lend::lend;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache::{
    Config, Dcache, Errno, Error, FileType, Filesystem, InodeSpec, Lookup, ROOT_INO, Resolved,
    epoch,
};

const THREADS: usize = 8;

/// Answers `name` by its first byte: `f` a file (ino from the name's length), `n` no such
/// file, anything else `EIO`. Before answering it waits until every other thread is parked on
/// this call (the cache's coalesced counter says so), so the test is deterministic.
struct Slow<'c> {
    cache: &'c Dcache,
    calls: AtomicU64,
    wait_for: u64,
}

impl Filesystem for Slow<'_> {
    fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.cache.stats().coalesced_misses < self.wait_for && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        match name[0] {
            b'f' => Ok(Some(InodeSpec {
                ino: 100 + name.len() as u64,
                kind: FileType::Regular,
                fs_data: 9,
            })),
            b'n' => Ok(None),
            _ => Err(Errno::new(5)),
        }
    }
}

/// `THREADS` threads resolve `name` together; returns their answers and the backend calls.
fn storm(
    cache: &Dcache,
    name: &[u8],
    already_coalesced: u64,
) -> (Vec<Result<Resolved, Error>>, u64) {
    let fs =
        Slow { cache, calls: AtomicU64::new(0), wait_for: already_coalesced + THREADS as u64 - 1 };
    let start = Barrier::new(THREADS);
    let answers = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    lend(&fs, || cache.resolve(ROOT_INO, name))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (answers, fs.calls.load(Ordering::SeqCst))
}

#[test]
fn concurrent_misses_of_one_name_make_one_call() {
    let cache = lend::cache(Config::for_entries(64));
    let (answers, calls) = storm(&cache, b"file", 0);
    assert_eq!(calls, 1, "one backend call for {THREADS} threads");
    let spec = InodeSpec { ino: 104, kind: FileType::Regular, fs_data: 9 };
    assert!(answers.iter().all(|a| *a == Ok(Resolved::Found(spec))), "{answers:?}");
    let s = cache.stats();
    assert_eq!((s.backend_lookups, s.coalesced_misses), (1, THREADS as u64 - 1));
    // Every Found counted one lookup: the kernel got THREADS replies.
    let g = epoch::pin();
    assert_eq!(cache.inode(&g, 104).unwrap().lookups(), THREADS as u64);
    drop(g);
    // Cached now: no call, still counted.
    let fs = Slow { cache: &cache, calls: AtomicU64::new(0), wait_for: 0 };
    assert_eq!(lend(&fs, || cache.resolve(ROOT_INO, b"file")), Ok(Resolved::Found(spec)));
    assert_eq!(fs.calls.load(Ordering::SeqCst), 0);
    cache.forget(104, THREADS as u64 + 1).unwrap();
}

#[test]
fn a_coalesced_negative_is_remembered_and_shared() {
    let cache = lend::cache(Config::for_entries(64));
    let (answers, calls) = storm(&cache, b"nothing", 0);
    assert_eq!(calls, 1);
    assert!(answers.iter().all(|a| *a == Ok(Resolved::Negative)), "{answers:?}");
    let g = epoch::pin();
    assert!(matches!(cache.lookup(&g, ROOT_INO, b"nothing"), Ok(Lookup::Negative)));
}

#[test]
fn errors_reach_every_waiter_and_are_not_cached() {
    let cache = lend::cache(Config::for_entries(64));
    let (answers, calls) = storm(&cache, b"eio", 0);
    assert_eq!(calls, 1);
    assert!(answers.iter().all(|a| *a == Err(Error::Backend(Errno::new(5)))), "{answers:?}");
    let g = epoch::pin();
    assert!(matches!(cache.lookup(&g, ROOT_INO, b"eio"), Ok(Lookup::Miss)));
    drop(g);
    // The next storm calls again.
    let (_, calls) = storm(&cache, b"eio", THREADS as u64 - 1);
    assert_eq!(calls, 1);
}

#[test]
fn bad_names_never_reach_the_filesystem() {
    let cache = lend::cache(Config::for_entries(64));
    let fs = Slow { cache: &cache, calls: AtomicU64::new(0), wait_for: 0 };
    assert!(matches!(lend(&fs, || cache.resolve(ROOT_INO, b"a/b")), Err(Error::InvalidName(_))));
    assert_eq!(fs.calls.load(Ordering::SeqCst), 0);
}

/// Its first lookup waits until `waiters` other threads wait on the call, then panics; later
/// ones answer "no such file".
struct PanicsFirst {
    cache: std::sync::Arc<Dcache>,
    calls: AtomicU64,
    waiters: u64,
}

impl Filesystem for PanicsFirst {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.cache.stats().coalesced_misses < self.waiters && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            panic!("the filesystem failed");
        }
        Ok(None)
    }
}

#[test]
fn a_filesystem_that_panics_still_ends_its_call() {
    use std::sync::{Arc, mpsc};
    let cache = Arc::new(lend::cache(Config::for_entries(64)));
    let waiters = THREADS as u64 - 1;
    let fs = Arc::new(PanicsFirst { cache: cache.clone(), calls: AtomicU64::new(0), waiters });
    let (done, answers) = mpsc::channel();
    for _ in 0..THREADS {
        let (cache, fs, done) = (cache.clone(), fs.clone(), done.clone());
        // Detached threads and a deadline: waiters left asleep fail the test instead of
        // hanging it.
        std::thread::spawn(move || {
            let resolve = || lend(&*fs, || cache.resolve(ROOT_INO, b"x"));
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(resolve));
            done.send(answer.ok()).unwrap();
        });
    }
    let answers: Vec<_> = (0..THREADS)
        .map(|_| answers.recv_timeout(Duration::from_secs(30)).expect("a waiter never woke"))
        .collect();
    assert_eq!(answers.iter().filter(|a| a.is_none()).count(), 1, "the caller panicked");
    assert!(answers.iter().flatten().all(|a| *a == Err(Error::Backend(Errno::EIO))), "{answers:?}");
    assert_eq!(fs.calls.load(Ordering::SeqCst), 1);
    // The call is over: the next miss asks again.
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"x")), Ok(Resolved::Negative));
    assert_eq!(fs.calls.load(Ordering::SeqCst), 2);
}

/// Answers "no such file", but only after the name was created meanwhile: another thread's
/// create and `add` ran between this backing lookup and its answer being filed (made
/// deterministic by doing the `add` inside the call).
struct CreatedDuringTheCall<'c> {
    cache: &'c Dcache,
    calls: AtomicU64,
}

impl Filesystem for CreatedDuringTheCall<'_> {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let spec = InodeSpec { ino: 7, kind: FileType::Regular, fs_data: 0 };
            self.cache.add(parent, name, spec).unwrap();
        }
        Ok(None)
    }
}

#[test]
fn a_negative_answer_overtaken_by_an_add_resolves_to_the_added_name() {
    let cache = lend::cache(Config::for_entries(64));
    let fs = CreatedDuringTheCall { cache: &cache, calls: AtomicU64::new(0) };
    // The stale "no such file" is not filed over the newer positive, and the caller gets the
    // name as cached (with its lookup counted), not an error no lookup can answer.
    let answer = lend(&fs, || cache.resolve(ROOT_INO, b"new"));
    assert!(matches!(answer, Ok(Resolved::Found(spec)) if spec.ino == 7), "{answer:?}");
    assert_eq!(fs.calls.load(Ordering::SeqCst), 1);
    let g = epoch::pin();
    let Ok(Lookup::Hit(inode)) = cache.lookup(&g, ROOT_INO, b"new") else { panic!("not cached") };
    assert_eq!((inode.ino(), inode.lookups()), (7, 2), "the add's lookup and the resolve's");
}

/// Answers that `new` is inode 7 (a file cached under another name too), but only after a
/// racing create filed `new` as inode 8.
struct FiledAsAnotherInode<'c> {
    cache: &'c Dcache,
}

impl Filesystem for FiledAsAnotherInode<'_> {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let spec = |ino| InodeSpec { ino, kind: FileType::Regular, fs_data: 0 };
        self.cache.add(parent, name, spec(8)).unwrap();
        Ok(Some(spec(7)))
    }
}

#[test]
fn a_positive_answer_overtaken_by_an_add_resolves_to_what_the_add_filed() {
    let cache = lend::cache(Config::for_entries(64));
    cache
        .add(ROOT_INO, b"other", InodeSpec { ino: 7, kind: FileType::Regular, fs_data: 0 })
        .unwrap();
    let answer = lend(&FiledAsAnotherInode { cache: &cache }, || cache.resolve(ROOT_INO, b"new"));
    // The caller replies with the inode the name holds, and that is the one counted.
    assert!(matches!(answer, Ok(Resolved::Found(spec)) if spec.ino == 8), "{answer:?}");
    let g = epoch::pin();
    let counted = |ino| cache.inode(&g, ino).unwrap().lookups();
    assert_eq!((counted(7), counted(8)), (1, 2), "7: its add; 8: its add and the resolve");
}

/// Answers every name as a file (ino from its last byte) after `delay(name)`, counting the
/// calls of each name.
struct Timed {
    delay: fn(&[u8]),
    calls: std::sync::Mutex<std::collections::HashMap<Vec<u8>, u64>>,
}

impl Timed {
    fn new(delay: fn(&[u8])) -> Self {
        Timed { delay, calls: Default::default() }
    }
}

impl Filesystem for Timed {
    fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        *self.calls.lock().unwrap().entry(name.to_vec()).or_default() += 1;
        (self.delay)(name);
        let ino = 100 + u64::from(*name.last().unwrap());
        Ok(Some(InodeSpec { ino, kind: FileType::Regular, fs_data: 0 }))
    }
}

/// `THREADS` threads start together and resolve every one of `names` in the same order (so
/// their misses meet); checks every answer and returns the cache's figures.
fn resolve_together(fs: &Timed, names: &[Vec<u8>]) -> udcache::Stats {
    let cache = lend::cache(Config::for_entries(4096));
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                start.wait();
                for name in names {
                    let answer = lend(fs, || cache.resolve(ROOT_INO, name));
                    let ino = 100 + u64::from(*name.last().unwrap());
                    assert!(matches!(answer, Ok(Resolved::Found(s)) if s.ino == ino), "{answer:?}");
                }
            });
        }
    });
    cache.stats()
}

/// A filesystem whose every lookup takes 10 ms (a slow network): 8 threads missing the same
/// names together still make one call per name, and the waiters of such a call sleep on it
/// instead of spinning for its whole length.
#[test]
fn slow_calls_are_made_once_per_name_and_their_waiters_sleep() {
    let fs = Timed::new(|_| std::thread::sleep(Duration::from_millis(10)));
    let names: Vec<Vec<u8>> = (b'a'..=b'd').map(|c| vec![b'f', c]).collect();
    let s = resolve_together(&fs, &names);
    let calls = fs.calls.into_inner().unwrap();
    assert_eq!(calls.len(), names.len());
    assert!(calls.values().all(|&n| n == 1), "one call per name: {calls:?}");
    assert_eq!(s.backend_lookups, names.len() as u64, "{s:?}");
    assert!(s.coalesced_misses >= 1 && s.coalesced_sleeps >= 1, "{s:?}");
    assert!(s.coalesced_sleeps <= s.coalesced_misses, "{s:?}");
    // Waits happen only while a call runs: never longer, together, than the calls of every
    // waiter (the calls ran one after another).
    let calls_ns = (names.len() * THREADS) as u64 * 10_000_000;
    assert!(s.coalesced_wait_ns > 0 && s.coalesced_wait_ns < 2 * calls_ns, "{s:?}");
}

/// Stress: calls that answer at once, in a few microseconds (waiters spin) and in 200 µs
/// (waiters sleep), mixed, many names, many rounds on fresh caches: still one call per name,
/// and every thread gets the filesystem's answer.
#[test]
fn quick_and_slow_calls_are_made_once_per_name() {
    let delay: fn(&[u8]) = |name| match name.last().unwrap() % 3 {
        0 => {}
        1 => {
            let until = Instant::now() + Duration::from_micros(5);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        _ => std::thread::sleep(Duration::from_micros(200)),
    };
    // Unique names; the last letter picks the delay and the inode.
    let names: Vec<Vec<u8>> =
        (0..120u8).map(|i| format!("n{i}{}", char::from(b'a' + i % 26)).into_bytes()).collect();
    let mut coalesced = 0;
    for _ in 0..20 {
        let fs = Timed::new(delay);
        let s = resolve_together(&fs, &names);
        let calls = fs.calls.into_inner().unwrap();
        assert_eq!(calls.len(), names.len());
        assert!(calls.values().all(|&n| n == 1), "one call per name: {calls:?}");
        assert_eq!(s.backend_lookups, names.len() as u64, "{s:?}");
        coalesced += s.coalesced_misses;
    }
    assert!(coalesced > 0, "the threads' misses never met");
}
