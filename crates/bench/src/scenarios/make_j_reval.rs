//! `make-j-reval`: `make-j`'s load on a filesystem that must revalidate what it cached (issue
//! 11; Linux's 2014 "Add RCU-walk support to NFS" thread, whose whole point this is).
//!
//! The tree and the compiles are `make-j`'s (50 empty include directories, 20 headers in
//! `usr/include`; a compile looks each header up through every include directory, then finds
//! it). What changes:
//!
//! - **Entries expire.** Dentries, negatives and access results are trusted for 1 s of
//!   simulated time ([`ManualClock`]): one path lookup costs 1 µs of it (a stat of a cached
//!   path), advanced a compile (1,020 lookups) at a time, so the 1 s timeout passes every
//!   ~980 compiles.
//! - **A directory changes.** Every 10,000 path lookups the include directory `1` gets a new
//!   change attribute, reported with [`Dcache::dir_changed`]: its negatives must be looked up
//!   again.
//! - **Access is checked.** Every walk checks search permission on each directory it passes
//!   ([`Dcache::walk_as`] with a credential: one check per component).
//! - **The filesystem is NFS-like** (`Nfs`): it keeps its own attribute cache per inode (1 s,
//!   refreshed by a GETATTR, or by the post-op attributes of a LOOKUP). Asked to revalidate
//!   without blocking it answers from that cache (as the kernel's NFS client's `nfs_revalidate_inode_rcu` does): an
//!   expired negative is valid while its directory's attributes are fresh and its verifier
//!   unchanged, an expired positive while its own attributes are fresh; a negative whose
//!   directory changed needs a LOOKUP, and stale attributes a GETATTR: both block. So a
//!   GETATTR of a directory renews the lockless trust of every negative in it.
//!
//! A walk that must block returns [`Checked::Blocked`]; the compile does the blocking work
//! ([`Dcache::unblock`]) and walks again. Misses go through [`Dcache::resolve`].
//!
//! Measurements, interleaved: variant `reval` (all of the above) and `forever` (no timeouts,
//! no directory changes, no access checks: `make-j` through [`Dcache::walk_as`]), each with 1
//! and 2 threads sharing the compiles, on a fresh cache per measurement (timed once the
//! previous cache's deferred frees have run); then, on a warm cache
//! with the clock stopped, ns per component of the compile's walks with the access check and
//! without it.
//!
//! Summary fields:
//! - `lockless_share`: of the component lookups outside the invalidated directory in the
//!   `reval` runs, the share that did not leave the lockless mode (1 − fallbacks / lookups;
//!   cold misses are not fallbacks). `lockless_share_all` counts every lookup,
//!   `lockless_share_invalidated_dir` only those in `1`.
//! - `scaling_2t`: `reval` compiles/s with 2 threads over 1 thread (`scaling_2t_forever`: the
//!   same without revalidation).
//! - `access_check_ns`: ns per component with the access check minus without it, same run:
//!   alternating passes over a compile's walks (each ~0.5 ms), the fastest of each side (the
//!   machines this runs on are shared; interference only adds time). Beside it the median of
//!   the paired differences and each side's fastest and median ns per component.
//! - `machine_scaling_2t`: the machine's own scaling, measured in the same rounds (see
//!   [`crate::machine`]); `scaling_2t_of_machine` and `scaling_2t_forever_of_machine`: the two
//!   scalings as shares of it; `machine_line_round_trip_ns`, a cache line's round trip between
//!   two threads.
//! - Also compiles/s per variant, fallbacks by reason, revalidations and the filesystem's
//!   calls (`rpc_*`) in the `reval` runs, and `ns_per_component_access` / `_no_access`.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use udcache::{
    Blocked, Cached, Checked, Config, Cred, Dcache, Errno, Filesystem, InodeSpec, Mask, ROOT_INO,
    Revalidate, Timeouts, Walk, epoch,
};
use udcache::{Clock, ManualClock};

use super::make_j::{Files, HEADERS, INCLUDE_DIRS};
use crate::alloc_count::settle_deferred_frees;
use crate::measure::{interleaved, median};
use crate::report::{Report, Row};
use crate::{Options, machine};

/// The thread counts measured.
const THREADS: [usize; 2] = [1, 2];
/// Entry, negative and access timeout, and the filesystem's attribute cache lifetime.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Simulated time one path lookup takes.
const LOOKUP_TIME: Duration = Duration::from_micros(1);
/// Path lookups between two changes of the invalidated directory.
const CHANGE_EVERY: u64 = 10_000;
/// Path lookups per compile.
const WALKS: u64 = HEADERS * (INCLUDE_DIRS + 1);
/// Component lookups per compile: 20 × (50 × 4 + 3).
const COMPONENTS: u64 = HEADERS * (INCLUDE_DIRS * 4 + 3);
/// Of those, in the invalidated directory: one per header.
const COMPONENTS_INSIDE: u64 = HEADERS;

/// The compiling user.
fn cred() -> Cred {
    Cred::new(1000, 1000, &[4, 24, 27])
}

/// An NFS client's view of `make-j`'s tree (see the module docs).
struct Nfs {
    files: Files,
    clock: Arc<ManualClock>,
    /// Per inode number: until when (simulated ns) its attributes are fresh.
    attrs_until: Vec<AtomicU64>,
    /// The invalidated directory's change attribute.
    change: AtomicU64,
    lookups: AtomicU64,
    getattrs: AtomicU64,
    accesses: AtomicU64,
}

impl Nfs {
    fn new(clock: Arc<ManualClock>) -> Self {
        let files = Files::new();
        let inodes = (ROOT_INO + 1 + files.dirs.len() as u64 + HEADERS + 1) as usize;
        Nfs {
            files,
            clock,
            attrs_until: (0..inodes).map(|_| AtomicU64::new(0)).collect(),
            change: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            getattrs: AtomicU64::new(0),
            accesses: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.clock.now().as_nanos() as u64
    }

    /// How long `ino`'s cached attributes stay fresh, refreshing them with a GETATTR if they
    /// are stale and the caller may block (`None`: stale, and it may not).
    fn attrs(&self, ino: u64, may_block: bool) -> Option<Duration> {
        let now = self.now();
        // Relaxed: a cache of this filesystem's own; any value read is a time it was fresh.
        let until = self.attrs_until[ino as usize].load(Ordering::Relaxed);
        if now < until {
            return Some(Duration::from_nanos(until - now));
        }
        if !may_block {
            return None;
        }
        self.getattrs.fetch_add(1, Ordering::Relaxed);
        self.fresh(ino);
        Some(TIMEOUT)
    }

    /// Attributes of `ino` just received.
    fn fresh(&self, ino: u64) {
        let until = self.now() + TIMEOUT.as_nanos() as u64;
        self.attrs_until[ino as usize].store(until, Ordering::Relaxed);
    }
}

impl Filesystem for Nfs {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let found = self.files.lookup(parent, name)?;
        // A LOOKUP reply carries the directory's and the child's attributes.
        self.fresh(parent);
        if let Some(spec) = found {
            self.fresh(spec.ino);
        }
        Ok(found)
    }

    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        let ttl = match cached.inode {
            // The directory changed: only a LOOKUP can tell (nfs_neg_need_reval).
            None if cached.dir_changed && !may_block => return Revalidate::NeedsBlock,
            None if cached.dir_changed => match self.lookup(parent, name) {
                Ok(None) => Some(TIMEOUT),
                _ => None,
            },
            // Trusted while the directory's attributes are.
            None => self.attrs(parent, may_block),
            // Trusted while its own attributes are (nfs_lookup_verify_inode).
            Some(spec) => self.attrs(spec.ino, may_block),
        };
        match ttl {
            Some(ttl) => Revalidate::Valid { ttl: Some(ttl) },
            None if may_block => Revalidate::Invalid,
            None => Revalidate::NeedsBlock,
        }
    }

    fn access(&self, _ino: u64, _cred: &Cred) -> Result<Mask, Errno> {
        self.accesses.fetch_add(1, Ordering::Relaxed);
        Ok(Mask::ALL)
    }
}

/// One measurement's setting.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Reval,
    Forever,
}

/// What one measurement's threads counted.
#[derive(Clone, Copy, Default)]
struct Tally {
    compiles: u64,
    fallbacks_inside: u64,
    fallbacks_outside: u64,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.compiles += o.compiles;
        self.fallbacks_inside += o.fallbacks_inside;
        self.fallbacks_outside += o.fallbacks_outside;
    }
}

/// A fresh cache and filesystem with the directories cached, as `make-j` starts.
struct Setup {
    cache: Dcache,
    nfs: Arc<Nfs>,
    clock: Arc<ManualClock>,
    /// The directory whose verifier changes.
    invalidated: u64,
}

impl Setup {
    fn new(variant: Variant) -> Self {
        let clock = Arc::new(ManualClock::new());
        let timeouts = match variant {
            Variant::Reval => Timeouts { entry: TIMEOUT, negative: TIMEOUT, access: TIMEOUT },
            Variant::Forever => Timeouts::FOREVER,
        };
        let config = Config::for_entries(4096).with_timeouts(timeouts).with_clock(clock.clone());
        let nfs = Arc::new(Nfs::new(clock.clone()));
        let cache = Dcache::new(config.with_filesystem(nfs.clone()));
        for (parent, name, spec) in &nfs.files.dirs {
            cache.add(*parent, name.as_bytes(), *spec).unwrap();
            nfs.fresh(spec.ino);
        }
        nfs.fresh(ROOT_INO);
        let invalidated = nfs.files.dirs.iter().find(|(_, n, _)| n == "1").unwrap().2.ino;
        Setup { cache, nfs, clock, invalidated }
    }

    /// Resolves `path`: whether it exists.
    fn resolve(&self, cred: Option<&Cred>, path: &str, tally: &mut Tally) -> bool {
        loop {
            let guard = epoch::pin();
            let blocked = match self.cache.walk_as(&guard, cred, ROOT_INO, path) {
                Ok(Checked::Done(Walk::Found(_))) => return true,
                Ok(Checked::Done(Walk::Negative { .. })) => return false,
                Ok(Checked::Done(Walk::Miss { parent, at })) => {
                    drop(guard);
                    let name = path[at..].split('/').next().unwrap().as_bytes();
                    self.cache.resolve(parent, name).unwrap();
                    continue;
                }
                Ok(Checked::Blocked(b)) => b,
                other => panic!("{path}: {other:?}"),
            };
            drop(guard);
            let dir = match &blocked {
                Blocked::Revalidate { parent, .. } => *parent,
                Blocked::Access { dir, .. } => *dir,
                other => unreachable!("{other:?}"),
            };
            match dir == self.invalidated {
                true => tally.fallbacks_inside += 1,
                false => tally.fallbacks_outside += 1,
            }
            self.cache.unblock(cred, &blocked).unwrap();
        }
    }

    /// One compile: every header through every include directory, then the system directory.
    fn compile(&self, cred: Option<&Cred>, tally: &mut Tally) {
        for (misses, found) in &self.nfs.files.paths {
            for p in misses {
                assert!(!self.resolve(cred, p, tally), "{p} exists");
            }
            assert!(self.resolve(cred, found, tally), "{found} is missing");
        }
        tally.compiles += 1;
    }
}

/// `compiles` compiles shared by `threads` threads on a fresh setup: compiles per second, what
/// the threads counted, and the setup (for its counters).
fn make(variant: Variant, threads: usize, compiles: usize) -> (f64, Tally, Setup) {
    let setup = Setup::new(variant);
    let cred = (variant == Variant::Reval).then(cred);
    let next = AtomicUsize::new(0);
    let walks = AtomicU64::new(0);
    // The previous measurement's table is freed a grace period after its drop: not by this
    // measurement's pins.
    settle_deferred_frees();
    let start = Instant::now();
    let tally = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut tally = Tally::default();
                    // Relaxed: work counters; each compile is independent.
                    while next.fetch_add(1, Ordering::Relaxed) < compiles {
                        if variant == Variant::Reval {
                            setup.clock.advance(LOOKUP_TIME * WALKS as u32);
                            let before = walks.fetch_add(WALKS, Ordering::Relaxed);
                            if before / CHANGE_EVERY != (before + WALKS) / CHANGE_EVERY {
                                let v = setup.nfs.change.fetch_add(1, Ordering::Relaxed) + 1;
                                setup.cache.dir_changed(setup.invalidated, Some(v)).unwrap();
                            }
                        }
                        setup.compile(cred.as_ref(), &mut tally);
                    }
                    tally
                })
            })
            .collect();
        let mut total = Tally::default();
        for w in workers {
            total.add(w.join().unwrap());
        }
        total
    });
    (tally.compiles as f64 / start.elapsed().as_secs_f64(), tally, setup)
}

/// Ns per component of one pass over a compile's walks on `setup`'s warm cache (nothing
/// expires: the clock does not move). Each path is one lockless walk, except for a negative
/// the bounding rules evicted since the warm-up (now and then a bucket of the 4,096 gets four of
/// the 1,000 negatives): that one is looked up again, as a compile would.
fn walk_pass(setup: &Setup, cred: Option<&Cred>, passes: u32) -> f64 {
    let start = Instant::now();
    let mut found = 0u64;
    for _ in 0..passes {
        for (misses, hit) in &setup.nfs.files.paths {
            for p in misses.iter().chain([hit]) {
                found += u64::from(setup.resolve(cred, p, &mut Tally::default()));
            }
        }
    }
    assert_eq!(found, u64::from(passes) * HEADERS);
    start.elapsed().as_nanos() as f64 / (f64::from(passes) * COMPONENTS as f64)
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (rounds, compiles) = if opts.quick { (3, 1200) } else { (7, 4000) };
    // What the `reval` runs counted: per thread count, the tallies and the caches' stats; and
    // the filesystem's calls.
    let tallies = RefCell::new([Tally::default(); 2]);
    let stats = RefCell::new(Vec::new());
    let rpcs = RefCell::new([0u64; 3]);
    let mut runs: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for variant in [Variant::Reval, Variant::Forever] {
        for threads in THREADS {
            let (tallies, stats, rpcs) = (&tallies, &stats, &rpcs);
            runs.push(Box::new(move || {
                let (rate, tally, setup) = make(variant, threads, compiles);
                if variant == Variant::Reval {
                    tallies.borrow_mut()[threads - 1].add(tally);
                    stats.borrow_mut().push((threads, setup.cache.stats()));
                    let n = &setup.nfs;
                    let calls = [&n.lookups, &n.getattrs, &n.accesses];
                    for (sum, c) in rpcs.borrow_mut().iter_mut().zip(calls) {
                        *sum += c.load(Ordering::Relaxed);
                    }
                }
                rate
            }));
        }
    }
    runs.extend(machine::calibrations(&THREADS));
    let mut refs: Vec<&mut dyn FnMut() -> f64> = runs.iter_mut().map(|r| &mut **r as _).collect();
    let r = interleaved(&mut refs, rounds);
    drop(refs);
    drop(runs);
    let (rv1, rv2, fe1, fe2) = (r[0], r[1], r[2], r[3]);
    let machine_figures = &r[4..];
    let (tallies, stats, rpcs) = (tallies.into_inner(), stats.into_inner(), rpcs.into_inner());

    // The access check's cost, on a warm cache with the clock stopped.
    let warm = Setup::new(Variant::Reval);
    let me = cred();
    warm.compile(Some(&me), &mut Tally::default());
    // Short alternating passes (each ~0.5 ms, shorter than a scheduler's slice). Interference
    // from the machine's other work only ever adds time, and on a shared machine it lands on
    // most passes; so the cost is the difference of each side's fastest pass, and the median
    // of the paired differences is reported beside it.
    let pairs = if opts.quick { 101 } else { 601 };
    let (mut with, mut without, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..pairs {
        let (a, b) = if i % 2 == 0 {
            let a = walk_pass(&warm, Some(&me), 1);
            (a, walk_pass(&warm, None, 1))
        } else {
            let b = walk_pass(&warm, None, 1);
            (walk_pass(&warm, Some(&me), 1), b)
        };
        with.push(a);
        without.push(b);
        diffs.push(a - b);
    }
    let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (with_min, without_min) = (fastest(&with), fastest(&without));
    let access_check_median = median(diffs);
    let (with, without) = (median(with), median(without));

    let mut report = Report::new("make-j-reval");
    let mut all = Tally::default();
    for (threads, tally) in tallies.iter().enumerate() {
        all.add(*tally);
        let s = stats.iter().filter(|(t, _)| *t == threads + 1).map(|(_, s)| *s);
        let sum = |f: fn(&udcache::Stats) -> u64| s.clone().map(|s| f(&s)).sum::<u64>();
        report.row(
            Row::new()
                .with("variant", "reval")
                .with("threads", threads + 1)
                .with("compiles", tally.compiles)
                .with("lockless_share", share(tally.fallbacks_outside, tally.compiles, false))
                .with("fallbacks_outside", tally.fallbacks_outside)
                .with("fallbacks_invalidated_dir", tally.fallbacks_inside)
                .with("fallback_expired", sum(|s| s.fallback_expired))
                .with("fallback_verifier", sum(|s| s.fallback_verifier))
                .with("fallback_access", sum(|s| s.fallback_access))
                .with("fallback_needs_block", sum(|s| s.fallback_needs_block))
                .with("revalidations", sum(|s| s.revalidations))
                .with("access_hits", sum(|s| s.access_hits)),
        );
    }
    for (variant, one, two) in [("reval", rv1, rv2), ("forever", fe1, fe2)] {
        report.row(
            Row::new()
                .with("variant", variant)
                .with("compiles_per_s_1t", one)
                .with("compiles_per_s_2t", two)
                .with("scaling_2t", two / one),
        );
    }
    let total = |f: fn(&udcache::Stats) -> u64| stats.iter().map(|(_, s)| f(s)).sum::<u64>();
    let summary = Row::new()
        .with("lockless_share", share(all.fallbacks_outside, all.compiles, false))
        .with("scaling_2t", rv2 / rv1)
        .with("access_check_ns", with_min - without_min)
        .with(
            "lockless_share_all",
            share(all.fallbacks_outside + all.fallbacks_inside, all.compiles, true),
        )
        .with(
            "lockless_share_invalidated_dir",
            1.0 - all.fallbacks_inside as f64 / (all.compiles * COMPONENTS_INSIDE) as f64,
        )
        .with("scaling_2t_forever", fe2 / fe1)
        .with("ratio_reval_vs_forever_1t", rv1 / fe1)
        .with("compiles_per_s_reval_1t", rv1)
        .with("compiles_per_s_reval_2t", rv2)
        .with("compiles_per_s_forever_1t", fe1)
        .with("compiles_per_s_forever_2t", fe2)
        .with("access_check_ns_median_of_pairs", access_check_median)
        .with("ns_per_component_access_fastest", with_min)
        .with("ns_per_component_no_access_fastest", without_min)
        .with("ns_per_component_access", with)
        .with("ns_per_component_no_access", without)
        .with("fallback_expired", total(|s| s.fallback_expired))
        .with("fallback_verifier", total(|s| s.fallback_verifier))
        .with("fallback_access", total(|s| s.fallback_access))
        .with("fallback_needs_block", total(|s| s.fallback_needs_block))
        .with("revalidations", total(|s| s.revalidations))
        .with("rpc_lookup", rpcs[0])
        .with("rpc_getattr", rpcs[1])
        .with("rpc_access", rpcs[2])
        .with("compiles", all.compiles)
        .with("simulated_s_per_run", (LOOKUP_TIME * WALKS as u32 * compiles as u32).as_secs_f64());
    report.summary(machine::with_machine_scaling(summary, &THREADS, machine_figures));
    report
}

/// 1 − fallbacks over the component lookups of `compiles` compiles (outside the invalidated
/// directory, or all of them).
fn share(fallbacks: u64, compiles: u64, all: bool) -> f64 {
    let per = if all { COMPONENTS } else { COMPONENTS - COMPONENTS_INSIDE };
    1.0 - fallbacks as f64 / (compiles * per) as f64
}
