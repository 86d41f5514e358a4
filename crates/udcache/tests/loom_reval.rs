//! Loom models of revalidation: lockless validity checks and refreshes against directory
//! verifier updates, and lockless access checks and fills against revocations.
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom cargo test --release -p udcache --test loom_reval`
//!
//! In each model the filesystem changes its truth and then tells the cache (as a filesystem
//! must), and a `done` flag set after the cache call returns lets a reader know it runs
//! "after the change": from then on it must never trust what was true before. The models of
//! racing reports (`check_linearizable`) check what every execution observes against a
//! sequential specification instead: it must be what some order of the operations observes.
#![cfg(loom)]

mod loom_common;

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use loom_common::{builder, loom_config};
use udcache::{
    Blocked, Cred, Dcache, Errno, FileType, Filesystem, InodeSpec, Lookup, Mask, Permission,
    ROOT_INO, Reason, epoch,
};

const DIR: u64 = 2;

/// A cache holding directory `d` and a negative `d/x` filled at its current generation, and
/// its filesystem.
fn cache_with_negative() -> (Arc<Dcache>, Arc<Fs>) {
    let fs = Fs::new();
    let cache = Arc::new(Dcache::new(loom_config().with_filesystem(fs.clone())));
    cache
        .add(ROOT_INO, b"d", InodeSpec { ino: DIR, kind: FileType::Directory, fs_data: 0 })
        .unwrap();
    cache.add_negative(DIR, b"x").unwrap();
    (cache, fs)
}

/// The filesystem's truth: whether `d/x` exists, and the rights on the root (uid 1001 has
/// none).
struct Fs {
    x_exists: AtomicBool,
    rights: AtomicU8,
}

impl Fs {
    fn new() -> Arc<Self> {
        Arc::new(Fs { x_exists: AtomicBool::new(false), rights: AtomicU8::new(Mask::ALL.bits()) })
    }
}

impl Filesystem for Fs {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        // Relaxed: what the filesystem knows reaches the cache through the cache's own
        // orderings (a generation read with Acquire after the change's Release bump).
        let exists = self.x_exists.load(Ordering::Relaxed);
        Ok(exists.then_some(InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 0 }))
    }

    fn access(&self, _ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        if cred.uid() == 1001 {
            return Ok(Mask::NONE);
        }
        // Relaxed: as in `lookup`.
        Ok(Mask::from_bits(self.rights.load(Ordering::Relaxed).into()).unwrap())
    }
}

fn x(cache: &Dcache) -> &'static str {
    match cache.lookup(&epoch::pin(), DIR, b"x").unwrap() {
        Lookup::Hit(_) => "hit",
        Lookup::Negative => "negative",
        Lookup::Miss => "miss",
    }
}

/// A lockless check of a negative dentry races the change of its directory: once the change
/// is announced, the negative is never trusted (with the generation bump removed from
/// `dir_changed`, this model fails).
#[test]
fn negative_check_vs_verifier_update() {
    builder(2).check(|| {
        let (cache, fs, done) = {
            let (cache, fs) = cache_with_negative();
            (cache, fs, Arc::new(AtomicBool::new(false)))
        };
        let changer = {
            let (cache, fs, done) = (cache.clone(), fs.clone(), done.clone());
            loom::thread::spawn(move || {
                fs.x_exists.store(true, Ordering::Relaxed);
                cache.dir_changed(DIR, None).unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let seen = x(&cache);
        assert!(!after || seen == "miss", "trusted a negative after the change: {seen}");
        changer.join().unwrap();
        assert_eq!(x(&cache), "miss");
    });
}

/// Two reports of the same new verifier race: the one that finds it recorded by the other
/// returns at once, and must then see the change made (with the verifier recorded before the
/// generation bump, this model fails: the late reporter trusts the negative).
#[test]
fn same_verifier_reported_twice() {
    // One preemption stops the first reporter (this thread) between its record and its bump.
    builder(1).check(|| {
        let (cache, _) = cache_with_negative();
        cache.dir_changed(DIR, Some(1)).unwrap();
        cache.add_negative(DIR, b"x").unwrap(); // trusted under verifier 1
        let late = {
            let cache = cache.clone();
            loom::thread::spawn(move || {
                cache.dir_changed(DIR, Some(7)).unwrap();
                assert_eq!(x(&cache), "miss", "trusted a negative after reporting the change");
            })
        };
        cache.dir_changed(DIR, Some(7)).unwrap();
        late.join().unwrap();
    });
}

/// The blocking revalidation of a stale negative races a second change that creates the name.
/// The refresh must carry the generation read *before* the filesystem was asked: with it read
/// after, a "still absent" answer given before the change is filed as fresh after it, and
/// this model fails.
#[test]
fn refresh_vs_verifier_update() {
    // One preemption puts the change between the question and the refresh; two take minutes.
    builder(1).check(|| {
        let (cache, fs) = cache_with_negative();
        cache.dir_changed(DIR, None).unwrap(); // x is stale: a revalidation is due
        let changer = {
            let (cache, fs) = (cache.clone(), fs.clone());
            loom::thread::spawn(move || {
                fs.x_exists.store(true, Ordering::Relaxed);
                cache.dir_changed(DIR, None).unwrap();
            })
        };
        let stale = Blocked::Revalidate {
            parent: DIR,
            name: b"x".to_vec(),
            at: 2,
            reason: Reason::Verifier,
            invalid: false,
        };
        cache.unblock(None, &stale).unwrap();
        changer.join().unwrap();
        assert_ne!(x(&cache), "negative", "a pre-change answer trusted after the change");
    });
}

/// The lockless access check races a revocation: once `acl_changed` returns, the revoked
/// grant is never used (with the revocation neither bumping the generation nor clearing the
/// most recent result, this fails; either alone is enough once it has returned).
#[test]
fn access_check_vs_revocation() {
    builder(2).check(|| {
        let (cache, fs, done) = {
            let (cache, fs) = cache_with_negative();
            (cache, fs, Arc::new(AtomicBool::new(false)))
        };
        let me = Cred::with_digest(1000, 1000, 0);
        assert_eq!(cache.access(ROOT_INO, &me, Mask::EXEC), Ok(true));
        let revoker = {
            let (cache, fs, done) = (cache.clone(), fs.clone(), done.clone());
            loom::thread::spawn(move || {
                fs.rights.store(Mask::READ.bits(), Ordering::Relaxed);
                cache.acl_changed(ROOT_INO).unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let seen = cache.may_access(&epoch::pin(), ROOT_INO, &me, Mask::EXEC);
        assert!(!after || seen == Permission::Unknown, "a revoked grant used: {seen:?}");
        revoker.join().unwrap();
        assert_eq!(cache.access(ROOT_INO, &me, Mask::EXEC), Ok(false));
    });
}

/// An access fill (the filesystem asked on a miss) races a revocation: a grant answered
/// before the revocation is not kept after it (with the generation read after the call,
/// this fails).
#[test]
fn access_fill_vs_revocation() {
    builder(2).check(|| {
        let (cache, fs) = cache_with_negative();
        let me = Cred::with_digest(1000, 1000, 0);
        let revoker = {
            let (cache, fs) = (cache.clone(), fs.clone());
            loom::thread::spawn(move || {
                fs.rights.store(Mask::READ.bits(), Ordering::Relaxed);
                cache.acl_changed(ROOT_INO).unwrap();
            })
        };
        let _answered_either_way = cache.access(ROOT_INO, &me, Mask::EXEC).unwrap();
        revoker.join().unwrap();
        let seen = cache.may_access(&epoch::pin(), ROOT_INO, &me, Mask::EXEC);
        assert_ne!(
            seen,
            Permission::Allowed,
            "a grant answered before the revocation kept after it"
        );
    });
}

/// The lockless access check of one credential races another credential's result becoming
/// the most recent (a fill rewrites the copy the check reads). The check sees the old result
/// whole, the new one whole, or gives up — never one credential's identity with the other's
/// rights (with `SeqWords::try_read`'s validation removed, this fails).
#[test]
fn access_check_vs_most_recent_switch() {
    builder(2).check(|| {
        let (cache, _) = cache_with_negative();
        let (alice, bob) = (Cred::with_digest(1000, 1000, 0), Cred::with_digest(1001, 1001, 0));
        assert_eq!(cache.access(ROOT_INO, &alice, Mask::EXEC), Ok(true));
        let filler = {
            let cache = cache.clone();
            loom::thread::spawn(move || {
                assert_eq!(cache.access(ROOT_INO, &bob, Mask::EXEC), Ok(false));
            })
        };
        let seen = cache.may_access(&epoch::pin(), ROOT_INO, &alice, Mask::EXEC);
        assert_ne!(seen, Permission::Denied, "alice read with bob's rights");
        filler.join().unwrap();
        assert_eq!(cache.may_access(&epoch::pin(), ROOT_INO, &bob, Mask::EXEC), Permission::Denied);
    });
}

/// One step of a model thread against directory `d`, with what a sequential specification of
/// the cache says it does (see [`Spec`]).
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `dir_changed(d, Some(v))`.
    Report(u64),
    /// `add_negative(d, name)`: a negative filed at `d`'s current generation.
    File(&'static str),
    /// Whether a lookup trusts the negative `name` (answers `Negative`, not `Miss`).
    Trusted(&'static str),
}

/// The sequential specification of verifier reports (what `tests/reval_model.rs` models): a
/// report of the verifier recorded last changes nothing; any other records it and distrusts
/// every negative filed before it.
#[derive(Clone, Default)]
struct Spec {
    recorded: Option<u64>,
    /// How many changes were reported: a negative is trusted while this is its own stamp.
    changes: u32,
    filed: Vec<(&'static str, u32)>,
}

impl Spec {
    /// [`cache_with_negative`]: `x` filed, no verifier reported.
    fn new() -> Self {
        Spec { filed: vec![("x", 0)], ..Spec::default() }
    }

    /// Does `op`; returns what a `Trusted` observes.
    fn step(&mut self, op: Op) -> Option<bool> {
        match op {
            Op::Report(v) if self.recorded == Some(v) => {}
            Op::Report(v) => (self.recorded, self.changes) = (Some(v), self.changes + 1),
            Op::File(name) => {
                self.filed.retain(|&(n, _)| n != name);
                self.filed.push((name, self.changes));
            }
            Op::Trusted(name) => {
                return Some(self.filed.iter().any(|&(n, at)| n == name && at == self.changes));
            }
        }
        None
    }

    /// What the ops observe in every order that keeps each thread's own: the outcomes a
    /// linearizable cache may show. An outcome is the observations of `mine`, then those of
    /// `theirs`, then those of `after` (run once both are done).
    fn outcomes(&self, mine: &[Op], theirs: &[Op], after: &[Op]) -> Vec<Vec<bool>> {
        let mut all = Vec::new();
        self.interleave(mine, theirs, (Vec::new(), Vec::new()), after, &mut all);
        all.sort();
        all.dedup();
        all
    }

    fn interleave(
        &self,
        mine: &[Op],
        theirs: &[Op],
        seen: (Vec<bool>, Vec<bool>),
        after: &[Op],
        all: &mut Vec<Vec<bool>>,
    ) {
        if let Some((&op, rest)) = mine.split_first() {
            let (mut spec, mut seen) = (self.clone(), seen.clone());
            seen.0.extend(spec.step(op));
            spec.interleave(rest, theirs, seen, after, all);
        }
        if let Some((&op, rest)) = theirs.split_first() {
            let (mut spec, mut seen) = (self.clone(), seen.clone());
            seen.1.extend(spec.step(op));
            spec.interleave(mine, rest, seen, after, all);
        }
        if mine.is_empty() && theirs.is_empty() {
            let mut spec = self.clone();
            let mut outcome = [seen.0, seen.1].concat();
            outcome.extend(after.iter().filter_map(|&op| spec.step(op)));
            all.push(outcome);
        }
    }
}

/// Does `ops` on the cache; returns what the `Trusted` ones observed.
fn run(cache: &Dcache, ops: &[Op]) -> Vec<bool> {
    let mut seen = Vec::new();
    for &op in ops {
        match op {
            Op::Report(v) => cache.dir_changed(DIR, Some(v)).unwrap(),
            Op::File(name) => cache.add_negative(DIR, name.as_bytes()).unwrap(),
            Op::Trusted(name) => {
                let guard = epoch::pin();
                let answer = cache.lookup(&guard, DIR, name.as_bytes()).unwrap();
                assert!(!matches!(answer, Lookup::Hit(_)), "only negatives are filed");
                seen.push(matches!(answer, Lookup::Negative));
            }
        }
    }
    seen
}

/// Runs `setup`, then `mine` on this thread while `theirs` runs on another, then `after`; checks
/// that every execution observes what some sequential order of the reports, fills and lookups
/// would (each thread's ops in its own order; `setup` first, `after` last). Returns how many
/// of those outcomes the executions showed.
fn check_linearizable(setup: &[Op], mine: &[Op], theirs: &'static [Op], after: &[Op]) -> usize {
    let mut spec = Spec::new();
    setup.iter().for_each(|&op| assert_eq!(spec.step(op), None, "setup only changes"));
    let allowed = Arc::new(spec.outcomes(mine, theirs, after));
    let shown = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let (setup, mine, after) = (setup.to_vec(), mine.to_vec(), after.to_vec());
    let model_shown = shown.clone();
    // Two preemptions: one stops a report between its steps while the other thread runs all
    // of its own (each failure the models name needs no more), the second lets that thread's
    // steps in at two places.
    builder(2).check(move || {
        let (cache, _) = cache_with_negative();
        run(&cache, &setup);
        let other = {
            let cache = cache.clone();
            loom::thread::spawn(move || run(&cache, theirs))
        };
        let mut outcome = run(&cache, &mine);
        outcome.extend(other.join().unwrap());
        outcome.extend(run(&cache, &after));
        assert!(
            allowed.contains(&outcome),
            "no sequential order of {mine:?} and {theirs:?}, then {after:?}, observes \
             {outcome:?}; the orders observe {allowed:?}"
        );
        model_shown.lock().unwrap().insert(outcome);
    });
    shown.lock().unwrap().len()
}

/// Two reports of different verifiers race, one thread filing a negative between its two
/// reports of its own verifier. Whatever the order, the verifier left recorded, the generation
/// and the negatives trusted agree with one order of the reports: a change reported after a
/// negative was filed distrusts it. (With reports not serialized, the report of 1 bumps the
/// generation before the other thread's first report and records its verifier after the second
/// one found 2 recorded: the negative filed between stays trusted after a change, and this
/// model fails. Serialized, it fails too if a change leaves the old record in place while it
/// moves the generation: the second report of 2 finds it and returns.)
#[test]
fn racing_reports_of_different_verifiers_are_linearizable() {
    use Op::{File, Report, Trusted};
    let theirs = &[Report(2), File("x"), Report(2), Trusted("x")];
    let shown =
        check_linearizable(&[], &[Report(1)], theirs, &[Trusted("x"), Report(1), Trusted("x")]);
    assert!(shown > 1, "both orders of the reports were explored");
}

/// A thread that sees a change another thread is reporting (its negative distrusted) and then
/// reports the verifier recorded before it, makes a change: its negative filed in between is
/// no longer trusted. (With the old record left in place while the generation moves, the
/// report finds it recorded and returns, and this model fails.)
#[test]
fn a_report_after_a_change_it_saw_is_not_lost() {
    use Op::{File, Report, Trusted};
    let setup = &[Report(1), File("x")];
    let theirs = &[Trusted("x"), File("y"), Report(1), Trusted("y")];
    let shown = check_linearizable(setup, &[Report(2)], theirs, &[Report(1), Trusted("y")]);
    assert!(shown > 1, "both orders of the reports were explored");
}
