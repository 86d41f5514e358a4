//! Multi-threaded stress with an invariant checker: two directories (ordered and hashed
//! cookies) share a page budget far smaller than they are; per directory, readers with
//! different batch sizes (up to `usize::MAX`) list it and resume at cookies they were given,
//! while a writer changes it — announcing most changes, leaving some pending, sometimes
//! invalidating without a verifier — and a janitor clears it and reads at random issued
//! cookies. Every batch's ids must rise along its pass (the reference lists in id order at
//! stable positions), every finished pass must keep the listing guarantee, and at the end the
//! stats must add up. Bounded: about 1.5 s of wall time.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use udcache_readdir::reference::{CookieStyle, MemDir};
use udcache_readdir::{Config, DirCache, ReaddirCache};

const UNIVERSE: u64 = 400;

/// The writer's record: under its lock, a change to the backend, its announcement (if any),
/// and the sequence number of the last change of each id happen together.
struct Changes {
    seq: u64,
    last: Vec<u64>,
    /// Ids changed but not announced yet.
    pending: BTreeSet<u64>,
}

struct Shared {
    dir: DirCache<MemDir>,
    changes: Mutex<Changes>,
    issued: Mutex<Vec<(u64, u64)>>,
}

fn rng(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn id_of(name: &[u8]) -> u64 {
    MemDir::id_of(name).unwrap()
}

/// One pass from the start, or resumed at an issued cookie `after` (cookie, id); checked at its
/// end.
fn pass(s: &Shared, x: &mut u64, ok_reads: &AtomicU64, after: Option<(u64, u64)>) {
    let (present, start, pending) = {
        let ch = s.changes.lock().unwrap();
        (s.dir.backend().ids(), ch.seq, ch.pending.clone())
    };
    let mut cursor = s.dir.cursor();
    if let Some((cookie, _)) = after {
        cursor.seek(cookie);
    }
    let floor = after.map(|(_, id)| id);
    let mut got: Vec<u64> = Vec::new();
    let mut reads = 0;
    loop {
        let max = match rng(x) % 10 {
            0 => usize::MAX,
            m => (m * 3) as usize,
        };
        let batch = cursor.read(max).expect("no error from a sane backend");
        ok_reads.fetch_add(1, Ordering::Relaxed);
        reads += 1;
        assert!(batch.len() <= max);
        for e in &batch {
            let id = id_of(&e.name);
            let last = got.last().copied().or(floor);
            assert!(last.is_none_or(|l| id > l), "n{id} after {last:?} (pass from {floor:?})");
            got.push(id);
        }
        if let Some(e) = batch.last() {
            s.issued.lock().unwrap().push((e.cookie, id_of(&e.name)));
        }
        if cursor.is_eof() {
            break;
        }
        assert!(reads < 100_000, "pass does not finish");
    }
    let ch = s.changes.lock().unwrap();
    let present: BTreeSet<u64> = present.into_iter().collect();
    let seen: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(seen.len(), got.len(), "an entry repeated");
    for id in (0..UNIVERSE).filter(|&i| floor.is_none_or(|f| i > f)) {
        let changed = ch.last[id as usize] > start || pending.contains(&id);
        if !changed {
            assert_eq!(
                present.contains(&id),
                seen.contains(&id),
                "n{id}: present for the whole pass from {floor:?}: seen exactly once, absent: never"
            );
        }
    }
}

fn run(budget: usize, page: usize) {
    let cache = ReaddirCache::with_config(
        Config::default().with_budget_pages(budget).with_page_entries(page),
    );
    let dirs: Vec<Arc<Shared>> = [CookieStyle::Ordered, CookieStyle::Hashed]
        .into_iter()
        .map(|style| {
            Arc::new(Shared {
                dir: cache.dir(MemDir::with_entries(
                    style,
                    UNIVERSE,
                    (0..UNIVERSE).filter(|i| i % 3 != 0),
                )),
                changes: Mutex::new(Changes {
                    seq: 0,
                    last: vec![0; UNIVERSE as usize],
                    pending: BTreeSet::new(),
                }),
                issued: Mutex::new(Vec::new()),
            })
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let ok_reads = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_millis(700);
    let mut handles = Vec::new();
    for (d, s) in dirs.iter().enumerate() {
        // The writer.
        let (s2, stop2) = (s.clone(), stop.clone());
        handles.push(thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1d ^ d as u64;
            while !stop2.load(Ordering::Relaxed) {
                let id = rng(&mut x) % UNIVERSE;
                let mut ch = s2.changes.lock().unwrap();
                let b = s2.dir.backend();
                let v = if b.contains(id) { b.remove(id) } else { b.insert(id) }.unwrap();
                ch.seq += 1;
                let seq = ch.seq;
                ch.last[id as usize] = seq;
                match rng(&mut x) % 8 {
                    0 => {
                        ch.pending.insert(id);
                    }
                    1 => {
                        s2.dir.invalidate();
                        ch.pending.clear();
                    }
                    _ => {
                        s2.dir.set_verifier(v);
                        ch.pending.clear();
                    }
                }
                drop(ch);
                thread::sleep(Duration::from_micros(100));
            }
        }));
        // The janitor: clears, and raw reads at issued cookies.
        let (s2, stop2, ok2) = (s.clone(), stop.clone(), ok_reads.clone());
        handles.push(thread::spawn(move || {
            let mut x = 0x9e37_79b9_7f4a_7c15 ^ d as u64;
            while !stop2.load(Ordering::Relaxed) {
                if rng(&mut x).is_multiple_of(16) {
                    s2.dir.clear();
                }
                let pick = {
                    let issued = s2.issued.lock().unwrap();
                    (!issued.is_empty()).then(|| issued[rng(&mut x) as usize % issued.len()])
                };
                if let Some((cookie, after)) = pick {
                    let max = 1 + rng(&mut x) as usize % 20;
                    let b = s2.dir.read(cookie, max).expect("an issued cookie");
                    ok2.fetch_add(1, Ordering::Relaxed);
                    assert!(b.entries.len() <= max);
                    let mut last = after;
                    for e in &b.entries {
                        let id = id_of(&e.name);
                        assert!(id > last, "raw read at n{after}'s cookie went back to n{id}");
                        last = id;
                    }
                }
                thread::sleep(Duration::from_micros(200));
            }
        }));
        // Readers.
        for r in 0..3u64 {
            let (s2, ok2) = (s.clone(), ok_reads.clone());
            handles.push(thread::spawn(move || {
                let mut x = 0xdead_beef_1234_5678 ^ (d as u64) << 8 ^ r;
                let mut passes = 0;
                while Instant::now() < deadline || passes == 0 {
                    let after = if rng(&mut x).is_multiple_of(3) {
                        let issued = s2.issued.lock().unwrap();
                        (!issued.is_empty()).then(|| issued[rng(&mut x) as usize % issued.len()])
                    } else {
                        None
                    };
                    pass(&s2, &mut x, &ok2, after);
                    passes += 1;
                }
            }));
        }
    }
    // Readers end by the deadline; then stop the writers and janitors.
    let all: Vec<_> = handles.into_iter().collect();
    thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let mut rest = Vec::new();
    for (i, h) in all.into_iter().enumerate() {
        if i % 5 >= 2 {
            h.join().unwrap();
        } else {
            rest.push(h);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in rest {
        h.join().unwrap();
    }
    let st = cache.stats();
    let calls: u64 = dirs.iter().map(|s| s.dir.backend().calls()).sum();
    let held: usize = dirs.iter().map(|s| s.dir.cached_pages()).sum();
    eprintln!("budget {budget} page {page}: {st:?}");
    assert_eq!(st.backend_calls, calls);
    assert_eq!(st.hits + st.misses, ok_reads.load(Ordering::Relaxed), "{st:?}");
    assert_eq!(st.pages, held, "{st:?}");
    assert!(st.pages <= budget, "{st:?}");
}

#[test]
fn readers_writers_and_a_janitor_keep_every_invariant() {
    run(6, 5);
    run(1, 1);
}
