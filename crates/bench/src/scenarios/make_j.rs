//! `make-j`: the load of Linux's 2014 "Add RCU-walk support to NFS" thread.
//!
//! Its Makefile runs 200 compiles of a one-line file with 50 empty `-I` directories on NFS:
//! every header the compile includes is looked up in each of the 50 directories (all misses)
//! before it is found in the system directory, so after the first compile almost every lookup
//! is answered by a negative entry. There, `make -j 40` ran at half the speed of `make -j 5`
//! until the lookups stopped taking locks.
//!
//! Here: directories `import/dummySrc/1` … `/50` (empty, cached up front, as after the
//! Makefile's `dirs` target) and `usr/include` holding 20 headers; a compile resolves, for each
//! header, the path `import/dummySrc/<d>/<header>` for d = 1..50 (negative) and then
//! `usr/include/<header>` (found). A miss asks the "filesystem" (an immutable map of what
//! exists) and caches its answer. 200 compiles per measurement, shared by 1 or 2 threads
//! through a counter, on a fresh cache each time (so the first compile's misses are in it);
//! the frees the previous measurement's cache deferred run before the timing starts, not in
//! the pins of this one.
//!
//! Variants: `udcache` ([`Dcache::walk`], misses through [`Dcache::resolve`]) and `mutex`
//! (`Mutex<HashMap>` of `(parent, name)` to `Some(ino)` or `None` for a negative, locked once
//! per component, as libfuse's high-level API does; misses asked without the lock held), each
//! at 1 and 2 threads (and more with `--max-threads`), interleaved.
//!
//! Summary fields: `scaling_2t` (udcache compiles/s with 2 threads over 1 thread),
//! `scaling_2t_mutex` (the same for the mutex table), plus `compiles_per_s_<variant>_<n>t`,
//! `ratio_vs_mutex_1t`/`_2t` (udcache's throughput over the mutex table's),
//! `backend_lookups` (filesystem calls in udcache's last measurement, the one at the most
//! threads: 1,020 if no negative was evicted), `coalesced_misses` (misses in it that waited
//! for another thread's call instead of calling) and `coalesced_sleeps` (those of them that
//! slept until the call ended, each a sleep and a wake: see `fetch.rs` in udcache); with
//! `--max-threads`, also `compiles_per_s_<variant>_<n>t`, `scaling_<n>t`,
//! `scaling_<n>t_mutex` and `ratio_vs_mutex_<n>t` for each count n above 2. The machine's own
//! scaling is measured in the same rounds (see [`crate::machine`]): `machine_scaling_<n>t`
//! for every count, each scaling field also as a share of it,
//! `scaling_<n>t[_mutex]_of_machine`, and `machine_line_round_trip_ns`.
//!
//! Where udcache's threads spend a measurement, for each count n (the median over rounds; a
//! share is of the threads' time, n × the wall time): `start_share_<n>t` (before a thread's
//! first compile: spawning it), `first_compile_share_<n>t` (a thread's first compile beyond a
//! steady one: the fresh cache's misses, and at n > 1 the wait for the other threads' calls
//! of the same names), `tail_share_<n>t` (after a thread's last compile, until the last one
//! ends), `coalesced_wait_share_<n>t` (waiting for another thread's call of a name, spinning
//! or asleep: part of the first compile's), `slow_compile_share_<n>t` (the compiles after a
//! thread's first, beyond a steady one each: preemption, and lines another thread writes) and
//! `steady_compile_us_<n>t` (the median compile after the first: equal at 1 and n threads
//! when the threads share no written line). Together with the steady compiles these shares
//! are all of the threads' time, so a scaling below the machine's shows in one of them.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use udcache::{
    Config, Dcache, Errno, FileType, Filesystem, InodeSpec, ROOT_INO, Resolved, Walk, epoch,
};

use super::lookup::{Key, KeyView};
use super::maps::{Fields, with_more_threads};
use crate::alloc_count::settle_deferred_frees;
use crate::measure::{interleaved, median};
use crate::report::{Report, Row};
use crate::{Options, machine};

pub(super) const INCLUDE_DIRS: u64 = 50;
pub(super) const HEADERS: u64 = 20;
const COMPILES: usize = 200;

/// What exists: `(parent, name)` to the inode. Never changes during a measurement.
#[derive(Clone)]
pub(super) struct Files {
    entries: HashMap<Key, InodeSpec, RandomState>,
    /// The directories, which every variant caches up front.
    pub(super) dirs: Vec<(u64, String, InodeSpec)>,
    /// Each header's 50 include-path attempts and its system path.
    pub(super) paths: Vec<(Vec<String>, String)>,
}

impl Files {
    pub(super) fn new() -> Self {
        let mut dirs = Vec::new();
        let mut next = ROOT_INO + 1;
        let mut dir = |parent: u64, name: &str| {
            let spec = InodeSpec { ino: next, kind: FileType::Directory, fs_data: 0 };
            next += 1;
            dirs.push((parent, name.to_owned(), spec));
            spec.ino
        };
        let import = dir(ROOT_INO, "import");
        let src = dir(import, "dummySrc");
        for d in 1..=INCLUDE_DIRS {
            dir(src, &d.to_string());
        }
        let usr = dir(ROOT_INO, "usr");
        let include = dir(usr, "include");
        let mut entries: HashMap<Key, InodeSpec, RandomState> =
            dirs.iter().map(|(p, n, s)| (Key(*p, n.as_bytes().into()), *s)).collect();
        let mut paths = Vec::new();
        for h in 0..HEADERS {
            let header = format!("header{h:02}.h");
            let spec = InodeSpec { ino: next + h, kind: FileType::Regular, fs_data: h };
            entries.insert(Key(include, header.as_bytes().into()), spec);
            let misses =
                (1..=INCLUDE_DIRS).map(|d| format!("import/dummySrc/{d}/{header}")).collect();
            paths.push((misses, format!("usr/include/{header}")));
        }
        Files { entries, dirs, paths }
    }
}

impl Filesystem for Files {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(self.entries.get(&(parent, name) as &dyn KeyView).copied())
    }
}

/// A variant's cache, fresh for each measurement.
enum Table {
    Udcache(Box<Dcache>),
    Mutex(Mutex<HashMap<Key, Option<u64>, RandomState>>),
}

impl Table {
    fn new(variant: &str, files: &Files) -> Self {
        match variant {
            "udcache" => {
                let fs = std::sync::Arc::new(files.clone());
                let cache = Dcache::new(Config::for_entries(4096).with_filesystem(fs));
                for (parent, name, spec) in &files.dirs {
                    cache.add(*parent, name.as_bytes(), *spec).unwrap();
                }
                Table::Udcache(Box::new(cache))
            }
            _ => Table::Mutex(Mutex::new(
                files
                    .dirs
                    .iter()
                    .map(|(p, n, s)| (Key(*p, n.as_bytes().into()), Some(s.ino)))
                    .collect(),
            )),
        }
    }

    /// Resolves `path` from the root: whether it exists.
    fn resolve(&self, files: &Files, path: &str) -> bool {
        match self {
            Table::Udcache(cache) => loop {
                let guard = epoch::pin();
                match cache.walk(&guard, ROOT_INO, path).unwrap() {
                    Walk::Found(_) => return true,
                    Walk::Negative { .. } => return false,
                    Walk::Miss { parent, at } => {
                        drop(guard);
                        let name = path[at..].split('/').next().unwrap().as_bytes();
                        if cache.resolve(parent, name).unwrap() == Resolved::Negative {
                            return false;
                        }
                    }
                    other => panic!("{path}: {other:?}"),
                }
            },
            Table::Mutex(m) => {
                let mut cur = ROOT_INO;
                for c in path.as_bytes().split(|&b| b == b'/') {
                    let cached = m.lock().unwrap().get(&(cur, c) as &dyn KeyView).copied();
                    let next = cached.unwrap_or_else(|| {
                        let found = files.lookup(cur, c).unwrap().map(|s| s.ino);
                        m.lock().unwrap().insert(Key(cur, c.into()), found);
                        found
                    });
                    match next {
                        Some(ino) => cur = ino,
                        None => return false,
                    }
                }
                true
            }
        }
    }
}

/// One compile: every header through every include directory, then the system directory.
fn compile(table: &Table, files: &Files) {
    for (misses, found) in &files.paths {
        for p in misses {
            assert!(!table.resolve(files, p), "{p} exists");
        }
        assert!(table.resolve(files, found), "{found} is missing");
    }
}

/// What udcache's cache counted in one measurement.
#[derive(Clone, Copy, Default)]
struct Calls {
    backend_lookups: u64,
    coalesced_misses: u64,
    coalesced_sleeps: u64,
}

/// Where one measurement's thread time went (each thread's share of the wall time, summed
/// over threads and divided by the thread count).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Phases {
    /// Before a thread's first compile: spawning it.
    start: f64,
    /// A thread's first compile, beyond a steady compile: the misses of the fresh cache (at
    /// more than one thread, each waits for the others' calls of the same names).
    first_compile: f64,
    /// After a thread's last compile, until the last thread's ended.
    tail: f64,
    /// Waiting for another thread's call of a name (udcache's coalesced misses).
    coalesced_wait: f64,
    /// The compiles after each thread's first, beyond a steady compile each: the slow ones.
    slow_compiles: f64,
    /// The median of the compiles after each thread's first, in µs.
    steady_compile_us: f64,
}

/// One thread's times in a measurement, in ns: its start and end after the measurement's
/// start, and each of its compiles.
type ThreadTimes = (u64, u64, Vec<u64>);

impl Phases {
    /// The phases of a measurement of `wall` ns, from each thread's times and the time all
    /// threads waited for each other's calls.
    fn of(wall: u64, threads: &[ThreadTimes], waited: u64) -> Self {
        let steady = median(
            threads.iter().flat_map(|(_, _, c)| c.iter().skip(1).map(|&t| t as f64)).collect(),
        );
        let share = |f: &dyn Fn(&ThreadTimes) -> f64| {
            threads.iter().map(f).sum::<f64>() / (wall as f64 * threads.len() as f64)
        };
        Phases {
            start: share(&|(start, _, _)| *start as f64),
            first_compile: share(&|(_, _, c)| c.first().map_or(0.0, |&t| t as f64 - steady)),
            tail: share(&|(_, end, _)| (wall - end) as f64),
            coalesced_wait: waited as f64 / (wall as f64 * threads.len() as f64),
            slow_compiles: share(&|(_, _, c)| c.iter().skip(1).map(|&t| t as f64 - steady).sum()),
            steady_compile_us: steady / 1e3,
        }
    }
}

/// Compiles per second for `COMPILES` compiles shared by `threads` threads, on a fresh table;
/// also the filesystem calls udcache made and the misses it coalesced into them, and where the
/// threads' time went.
fn make(variant: &str, files: &Files, threads: usize) -> (f64, Calls, Phases) {
    let table = Table::new(variant, files);
    let next = AtomicUsize::new(0);
    // The previous measurement's table is freed a grace period after its drop: not by this
    // measurement's pins.
    settle_deferred_frees();
    let start = Instant::now();
    let since = |t: Instant| (t - start).as_nanos() as u64;
    let timed = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let begun = since(Instant::now());
                    let mut compiles = Vec::with_capacity(COMPILES);
                    // Relaxed: a work counter; each compile is independent.
                    while next.fetch_add(1, Ordering::Relaxed) < COMPILES {
                        let t = Instant::now();
                        compile(&table, files);
                        compiles.push(t.elapsed().as_nanos() as u64);
                    }
                    (begun, since(Instant::now()), compiles)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    let wall = start.elapsed();
    let rate = COMPILES as f64 / wall.as_secs_f64();
    let (calls, waited) = match &table {
        Table::Udcache(c) => {
            let s = c.stats();
            let calls = Calls {
                backend_lookups: s.backend_lookups,
                coalesced_misses: s.coalesced_misses,
                coalesced_sleeps: s.coalesced_sleeps,
            };
            (calls, s.coalesced_wait_ns)
        }
        Table::Mutex(_) => (Calls::default(), 0),
    };
    (rate, calls, Phases::of(wall.as_nanos() as u64, &timed, waited))
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let rounds = if opts.quick { 5 } else { 15 };
    let files = Files::new();
    let backend_calls = Cell::new(Calls::default());
    let counts = &opts.threads;
    // udcache's phases in every round, per thread count.
    let phases = RefCell::new(vec![Vec::new(); counts.len()]);
    let mut runs: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for variant in ["udcache", "mutex"] {
        for (k, &threads) in counts.iter().enumerate() {
            let (files, calls, phases) = (&files, &backend_calls, &phases);
            runs.push(Box::new(move || {
                let (rate, n, p) = make(variant, files, threads);
                if variant == "udcache" {
                    calls.set(n);
                    phases.borrow_mut()[k].push(p);
                }
                rate
            }));
        }
    }
    runs.extend(machine::calibrations(counts));
    let mut refs: Vec<&mut dyn FnMut() -> f64> = runs.iter_mut().map(|r| &mut **r as _).collect();
    let r = interleaved(&mut refs, rounds);
    // Each variant's rates at counts[0], counts[1], …, then the calibration's.
    let (ud, rest) = r.split_at(counts.len());
    let (mx, machine_figures) = rest.split_at(counts.len());
    let (ud1, ud2, mx1, mx2) = (ud[0], ud[1], mx[0], mx[1]);
    let rate = |figure, scaling_suffix| Fields { figure, scaling_suffix, time_per_op: false };

    let mut report = Report::new("make-j");
    for (variant, rates) in [("udcache", ud), ("mutex", mx)] {
        let row = Row::new()
            .with("variant", variant)
            .with("compiles_per_s_1t", rates[0])
            .with("compiles_per_s_2t", rates[1])
            .with("scaling_2t", rates[1] / rates[0])
            .with("lookups_per_compile", HEADERS * (INCLUDE_DIRS + 1));
        report.row(with_more_threads(row, rate("compiles_per_s", ""), counts, rates));
    }
    let summary = Row::new()
        .with("scaling_2t", ud2 / ud1)
        .with("scaling_2t_mutex", mx2 / mx1)
        .with("ratio_vs_mutex_1t", ud1 / mx1)
        .with("ratio_vs_mutex_2t", ud2 / mx2)
        .with("compiles_per_s_udcache_1t", ud1)
        .with("compiles_per_s_udcache_2t", ud2)
        .with("compiles_per_s_mutex_1t", mx1)
        .with("compiles_per_s_mutex_2t", mx2)
        .with("backend_lookups", backend_calls.get().backend_lookups)
        .with("coalesced_misses", backend_calls.get().coalesced_misses)
        .with("coalesced_sleeps", backend_calls.get().coalesced_sleeps);
    let summary = with_more_threads(summary, rate("compiles_per_s_udcache", ""), counts, ud);
    let mut summary =
        with_more_threads(summary, rate("compiles_per_s_mutex", "_mutex"), counts, mx);
    for ((&n, u), m) in counts.iter().zip(ud).zip(mx).skip(2) {
        summary = summary.with(&format!("ratio_vs_mutex_{n}t"), u / m);
    }
    drop(runs);
    for (&n, p) in counts.iter().zip(phases.into_inner()) {
        let med = |f: fn(&Phases) -> f64| median(p.iter().map(f).collect());
        summary = summary
            .with(&format!("start_share_{n}t"), med(|p| p.start))
            .with(&format!("first_compile_share_{n}t"), med(|p| p.first_compile))
            .with(&format!("tail_share_{n}t"), med(|p| p.tail))
            .with(&format!("coalesced_wait_share_{n}t"), med(|p| p.coalesced_wait))
            .with(&format!("slow_compile_share_{n}t"), med(|p| p.slow_compiles))
            .with(&format!("steady_compile_us_{n}t"), med(|p| p.steady_compile_us));
    }
    report.summary(machine::with_machine_scaling(summary, counts, machine_figures));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_split_the_threads_time() {
        // Wall 1000 ns, two threads: started at 100 and 0, ended at 900 and 1000; first
        // compiles of 300 and 200 ns, the others 100.
        let threads = [(100, 900, vec![300, 100, 100]), (0, 1000, vec![200, 100, 100, 100])];
        let p = Phases::of(1000, &threads, 100);
        assert_eq!(p.steady_compile_us, 0.1);
        assert_eq!((p.start, p.first_compile, p.tail), (0.05, 0.15, 0.05));
        assert_eq!(p.coalesced_wait, 0.05);
        assert_eq!(p.slow_compiles, 0.0);
        // One compile after the first takes 300 ns more than the steady 100.
        let threads = [(100, 900, vec![300, 400, 100]), (0, 1000, vec![200, 100, 100, 100])];
        assert_eq!(Phases::of(1000, &threads, 100).slow_compiles, 0.15);
    }
}
