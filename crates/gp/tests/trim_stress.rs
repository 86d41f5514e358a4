//! Stress test of `trim` running concurrently with alloc, free, park and reuse, with an
//! invariant checker.
//!
//! Worker threads allocate batches of objects, tag each with their owner, hold some for longer
//! (so blocks stay partly in use and trim leaves holes for later runs), and free them; a
//! trimmer thread calls [`GpPool::trim`] in a loop and reads the stats. Some workers free while
//! pinned, as a lockless reader that saw the objects before their free: they register each
//! object's address in a watch set before the free, read the object again before unpinning
//! (its identity must not have changed), and unregister it before unpinning.
//!
//! The checker sees every hand-out, every drop of a `T` and every free:
//! - **two owners**: a hand-out swaps the owner tag in, a free swaps it out; either must find
//!   the slot unowned / owned by the freer;
//! - **reuse under a reader**: a hand-out of a watched address, or an object dropped (trim or
//!   the pool's drop) while watched, or a watched object whose identity changed before unpin;
//! - **trim of a live object**: an object dropped while owned;
//! - **drops**: every object made is dropped exactly once, after the pool drops (ids are unique);
//! - **stats**: at the end `objects == parked + spares` (nothing live), `fresh + recycled` is the
//!   number of hand-outs, `objects` is what was made and not dropped, and, with a cap, neither
//!   the counters nor the real number of objects ever exceeded it.
//!
//! Runs ~2 s per test in release (`cargo test --release -p udcache-gp --test trim_stress`),
//! ~0.5 s in debug.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use udcache_gp::{GpPool, PoolBox, PoolConfig, pin, synchronize};

const WATCH_SHARDS: usize = 64;

/// What the checker records; leaked per run so objects can point to it.
struct Checker {
    made: AtomicU64,
    dropped: AtomicU64,
    /// Objects dropped after having been handed out at least once (parked ones, released).
    dropped_used: AtomicU64,
    /// Objects that exist now (made, not dropped), and the most there ever were.
    real: AtomicUsize,
    real_peak: AtomicUsize,
    /// Addresses freed by a thread that was pinned before the free and still is.
    watch: Vec<Mutex<HashSet<usize>>>,
    /// Ids of dropped objects (each must be dropped once).
    dropped_ids: Mutex<HashSet<u64>>,
    violations: AtomicU64,
    first: Mutex<Vec<String>>,
    /// The pool's stats when the workers were told to stop (for a watchdog's report).
    at_stop: Mutex<String>,
}

impl Checker {
    fn new() -> &'static Checker {
        Box::leak(Box::new(Checker {
            made: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dropped_used: AtomicU64::new(0),
            real: AtomicUsize::new(0),
            real_peak: AtomicUsize::new(0),
            watch: (0..WATCH_SHARDS).map(|_| Mutex::new(HashSet::new())).collect(),
            dropped_ids: Mutex::new(HashSet::new()),
            violations: AtomicU64::new(0),
            first: Mutex::new(Vec::new()),
            at_stop: Mutex::new(String::new()),
        }))
    }

    fn violation(&self, what: String) {
        self.violations.fetch_add(1, SeqCst);
        let mut first = self.first.lock().unwrap();
        if first.len() < 8 {
            first.push(what);
        }
    }

    fn watch_shard(&self, addr: usize) -> &Mutex<HashSet<usize>> {
        &self.watch[(addr >> 6) % WATCH_SHARDS]
    }

    fn watched(&self, addr: usize) -> bool {
        self.watch_shard(addr).lock().unwrap().contains(&addr)
    }
}

const UNOWNED: u64 = 0;

struct Obj {
    /// The tag of the thread that owns the object, or `UNOWNED`.
    owner: AtomicU64,
    /// Unique per object made: an object's identity.
    id: u64,
    used: AtomicBool,
    checker: &'static Checker,
    _payload: [u64; 4],
}

impl Obj {
    fn new(checker: &'static Checker) -> Obj {
        let id = checker.made.fetch_add(1, SeqCst) + 1;
        let now = checker.real.fetch_add(1, SeqCst) + 1;
        checker.real_peak.fetch_max(now, SeqCst);
        Obj {
            owner: AtomicU64::new(UNOWNED),
            id,
            used: AtomicBool::new(false),
            checker,
            _payload: [0; 4],
        }
    }
}

impl Drop for Obj {
    fn drop(&mut self) {
        let c = self.checker;
        let addr = std::ptr::from_ref(self).addr();
        let owner = self.owner.load(SeqCst);
        if owner != UNOWNED {
            c.violation(format!("object {} dropped while owned by {owner}", self.id));
        }
        if c.watched(addr) {
            c.violation(format!(
                "object {} at {addr:#x} dropped while a reader pinned before its free is pinned",
                self.id
            ));
        }
        if !c.dropped_ids.lock().unwrap().insert(self.id) {
            c.violation(format!("object {} dropped twice", self.id));
        }
        if self.used.load(SeqCst) {
            c.dropped_used.fetch_add(1, SeqCst);
        }
        c.dropped.fetch_add(1, SeqCst);
        c.real.fetch_sub(1, SeqCst);
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Debug, Default)]
struct Totals {
    handouts: u64,
    watched_frees: u64,
    trims: u64,
    trimmed: u64,
}

/// Takes an object for `tag`, checking it is nobody's and not under a reader.
fn take<'p>(pool: &'p GpPool<Obj>, c: &Checker, tag: u64) -> PoolBox<'p, Obj> {
    let b = pool.alloc();
    let addr = std::ptr::from_ref::<Obj>(&b).addr();
    if c.watched(addr) {
        c.violation(format!(
            "object {} at {addr:#x} handed out while a reader pinned before its free is pinned",
            b.id
        ));
    }
    let prev = b.owner.swap(tag, SeqCst);
    if prev != UNOWNED {
        c.violation(format!("object {} handed to {tag} while owned by {prev}", b.id));
    }
    b.used.store(true, SeqCst);
    b
}

/// Gives up `tag`'s ownership (the caller frees the object next).
fn release(b: &PoolBox<'_, Obj>, c: &Checker, tag: u64) {
    let prev = b.owner.swap(UNOWNED, SeqCst);
    if prev != tag {
        c.violation(format!("object {} freed by {tag} but owned by {prev}", b.id));
    }
}

fn duration() -> Duration {
    if cfg!(debug_assertions) { Duration::from_millis(500) } else { Duration::from_secs(2) }
}

/// Runs `run` on a thread of its own and fails (rather than hangs) if it does not finish in
/// time: a worker blocked forever in `alloc` is a finding, reported with the stats.
fn with_watchdog(config: PoolConfig, cap: Option<usize>) {
    struct Done(mpsc::Sender<()>);
    impl Drop for Done {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let c = Checker::new();
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        let _done = Done(tx);
        run(c, config, cap);
    });
    if rx.recv_timeout(duration() + Duration::from_secs(30)).is_err() {
        panic!(
            "the run did not finish: a thread is blocked (stats when told to stop: {}; \
             violations so far: {:?})",
            c.at_stop.lock().unwrap(),
            c.first.lock().unwrap()
        );
    }
    if let Err(panic) = runner.join() {
        std::panic::resume_unwind(panic);
    }
}

fn run(c: &'static Checker, config: PoolConfig, cap: Option<usize>) {
    let duration = duration();
    let pool = GpPool::with_config(config.with_max_objects(cap), move || Obj::new(c), |_| {});
    let stop = AtomicBool::new(false);
    let totals = Mutex::new(Totals::default());
    let start = Instant::now();
    std::thread::scope(|s| {
        // Workers 1 and 2 free under a pin and watch; worker 3 frees plainly.
        for tag in 1..=3u64 {
            let (pool, stop, totals) = (&pool, &stop, &totals);
            s.spawn(move || {
                let watcher = tag != 3;
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (tag * 0x1234_5678_9abc));
                let mut held: Vec<PoolBox<'_, Obj>> = Vec::new();
                let (mut handouts, mut watched_frees) = (0u64, 0u64);
                while !stop.load(Relaxed) {
                    // Allocate a batch (never while pinned: at a cap, alloc may wait).
                    let n = 1 + rng.next() % 16;
                    let mut batch: Vec<_> = (0..n).map(|_| take(pool, c, tag)).collect();
                    handouts += n;
                    for b in &batch {
                        if b.owner.load(SeqCst) != tag {
                            c.violation(format!("object {} taken from {tag} meanwhile", b.id));
                        }
                    }
                    // Keep some for longer: blocks stay partly in use, trim leaves holes.
                    while held.len() < 32 && rng.next().is_multiple_of(4) {
                        held.push(batch.pop().unwrap());
                        if batch.is_empty() {
                            break;
                        }
                    }
                    if held.len() > 24 || rng.next().is_multiple_of(8) {
                        let k = rng.next() as usize % (held.len() + 1);
                        batch.extend(held.drain(..k));
                    }
                    if watcher && rng.next().is_multiple_of(2) {
                        // A reader that saw these objects, pinned before their free.
                        let guard = pin();
                        let seen: Vec<(*const Obj, u64)> =
                            batch.iter().map(|b| (std::ptr::from_ref::<Obj>(b), b.id)).collect();
                        for b in batch.drain(..) {
                            let addr = std::ptr::from_ref::<Obj>(&b).addr();
                            if !c.watch_shard(addr).lock().unwrap().insert(addr) {
                                c.violation(format!("object {} at {addr:#x} watched twice", b.id));
                            }
                            release(&b, c, tag);
                            b.free();
                            watched_frees += 1;
                        }
                        // Hold the pin a while; sometimes let the trimmer run on this core.
                        if rng.next().is_multiple_of(4) {
                            std::thread::yield_now();
                        }
                        for _ in 0..rng.next() % 2000 {
                            std::hint::spin_loop();
                        }
                        for &(p, id) in &seen {
                            let addr = p.addr();
                            // SAFETY: pinned since before the free: the pool keeps the memory
                            // valid (and the object unchanged) until this thread unpins.
                            let (now_id, owner) = unsafe { ((*p).id, (*p).owner.load(SeqCst)) };
                            if now_id != id || owner != UNOWNED {
                                c.violation(format!(
                                    "object {id} at {addr:#x} changed under a pinned reader: \
                                     now object {now_id} owned by {owner}"
                                ));
                            }
                            c.watch_shard(addr).lock().unwrap().remove(&addr);
                        }
                        drop(guard);
                    } else {
                        for b in batch.drain(..) {
                            release(&b, c, tag);
                            b.free();
                        }
                    }
                }
                for b in held.drain(..) {
                    release(&b, c, tag);
                    b.free();
                }
                let mut t = totals.lock().unwrap();
                t.handouts += handouts;
                t.watched_frees += watched_frees;
            });
        }
        // The trimmer.
        {
            let (pool, stop, totals) = (&pool, &stop, &totals);
            s.spawn(move || {
                let (mut trims, mut trimmed) = (0u64, 0u64);
                while start.elapsed() < duration {
                    trimmed += pool.trim() as u64;
                    trims += 1;
                    if let Some(max) = cap {
                        let st = pool.stats();
                        if st.objects > max || st.peak_objects > max {
                            c.violation(format!("over the cap of {max}: {st:?}"));
                        }
                    }
                    if trims.is_multiple_of(8) {
                        std::thread::yield_now();
                    }
                }
                stop.store(true, Relaxed);
                *c.at_stop.lock().unwrap() = format!("{:?}", pool.stats());
                let mut t = totals.lock().unwrap();
                t.trims = trims;
                t.trimmed = trimmed;
            });
        }
    });
    let totals = totals.into_inner().unwrap();

    // Everything is freed: nothing is live.
    let st = pool.stats();
    let made = c.made.load(SeqCst);
    let dropped = c.dropped.load(SeqCst);
    let used_released = c.dropped_used.load(SeqCst);
    eprintln!("{totals:?}; made {made}, dropped {dropped} ({used_released} used); {st:?}");
    assert_eq!(st.objects, st.parked + st.spares, "objects are parked or spare at the end: {st:?}");
    assert_eq!(st.fresh + st.recycled, totals.handouts, "every hand-out counted once: {st:?}");
    assert_eq!(st.objects as u64, made - dropped, "stats.objects is what exists: {st:?}");
    assert!(c.real_peak.load(SeqCst) <= st.peak_objects, "the peak missed objects: {st:?}");
    if let Some(max) = cap {
        assert!(st.peak_objects <= max && c.real_peak.load(SeqCst) <= max, "over the cap: {st:?}");
    }
    // The run meant something: trim ran concurrently and released used (parked) objects,
    // parked objects were recycled, and readers watched frees.
    assert!(totals.trims >= 5 && used_released > 0, "trim released no parked object: {totals:?}");
    assert!(st.recycled > 0 && totals.watched_frees >= 100, "too little work: {totals:?} {st:?}");

    // The pool's drop releases the rest, each object once.
    drop(pool);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.dropped.load(SeqCst) < made && Instant::now() < deadline {
        synchronize();
        pin().flush();
    }
    let violations = c.violations.load(SeqCst);
    assert_eq!(violations, 0, "{violations} violations, first: {:#?}", c.first.lock().unwrap());
    assert_eq!(c.dropped.load(SeqCst), made, "every object made is dropped once the pool drops");
}

#[test]
fn trim_concurrent_with_alloc_free_and_reuse() {
    with_watchdog(
        PoolConfig::default().with_shards(4).with_fresh_run(8).with_request_every(8),
        None,
    );
}

#[test]
fn trim_concurrent_with_alloc_free_and_reuse_at_a_cap() {
    // Each worker holds at most 16 + 32 objects: a cap of 160 always leaves room.
    with_watchdog(
        PoolConfig::default().with_shards(4).with_fresh_run(8).with_request_every(8),
        Some(160),
    );
}
