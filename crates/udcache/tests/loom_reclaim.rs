//! Loom models of reclaim against lockless walks: `shrink` evicting the dentries of a path,
//! and the last `forget` of a directory, whose inode object the pool may then recycle for
//! another file under the same number.
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom`
//! `cargo test --release -p udcache --test loom_reclaim`
#![cfg(loom)]

mod loom_common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom_common::{builder, bump, counts, loom_config};
use udcache::{Child, Dcache, FileType, InodeSpec, Lookup, ROOT_INO, Walk, epoch};

/// Directory `a`, inode 2.
const DIR_A: InodeSpec = InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 20 };
/// File `a/b`, inode 3.
const FILE_B: InodeSpec = InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 30 };
/// Another file named `a` once directory 2 is forgotten, under the same number.
const NEW_A: InodeSpec = InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 21 };

/// A cache holding `a` (directory 2) and `a/b` (file 3), one lookup counted on each.
fn cache_with_a_b() -> Arc<Dcache> {
    let cache = Arc::new(Dcache::new(loom_config()));
    cache.add(ROOT_INO, b"a", DIR_A).unwrap();
    cache.add(DIR_A.ino, b"b", FILE_B).unwrap();
    cache
}

/// What a walk of `a/b` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// File 3, as it was.
    Found,
    /// A miss at `a` in the root.
    MissAtA,
    /// A miss at `b` in directory 2.
    MissAtB,
    /// `a` is the new file 2, not a directory.
    NewA,
}

/// A walk of `a/b` under `guard`. Whatever it returns is checked whole: number and type (from
/// the dentry) and the inode's own fields.
fn walk_a_b(cache: &Dcache, guard: &epoch::Guard) -> Seen {
    match cache.walk(guard, ROOT_INO, "a/b").unwrap() {
        Walk::Found(i) => {
            assert_eq!((i.ino(), i.kind()), (FILE_B.ino, FILE_B.kind), "another file: {i:?}");
            assert_eq!(i.spec(), FILE_B, "a torn, freed or recycled inode: {i:?}");
            Seen::Found
        }
        Walk::Miss { parent: ROOT_INO, at: 0 } => Seen::MissAtA,
        Walk::Miss { parent: 2, at: 2 } => Seen::MissAtB,
        Walk::NotDir { inode, at: 2 } => {
            assert_eq!(inode.spec(), NEW_A, "a/ led to another non-directory: {inode:?}");
            Seen::NewA
        }
        other => panic!("a/b answered {other:?}"),
    }
}

/// What `(parent, name)` holds now: `Some(true)` the positive dentry of inode `spec` (a
/// positive dentry of another inode fails), `Some(false)` a negative one, `None` nothing.
fn cached(cache: &Dcache, parent: u64, name: &[u8], spec: InodeSpec) -> Option<bool> {
    match cache.lookup(&epoch::pin(), parent, name).unwrap() {
        Lookup::Hit(i) => {
            assert_eq!(i.spec(), spec, "{parent}/{:?} names another inode", name.escape_ascii());
            Some(true)
        }
        Lookup::Negative => Some(false),
        Lookup::Miss => None,
    }
}

/// What a directory's children map holds if its only possible child, `name` (inode `spec`),
/// is `cached`.
fn children_if(cached: bool, name: &[u8], spec: InodeSpec) -> Vec<Child> {
    if cached { vec![Child { name: name.to_vec(), inode: spec }] } else { Vec::new() }
}

/// A lockless walk of `a/b` races `shrink(2)`, which evicts the negative `a/x` first, then one
/// unused positive, the oldest: `a`, or `b` if the walk's hit on `a` came first and gave `a` a
/// second chance. Evicting a name changes nothing in the tree, so every answer that
/// describes an instant is right: file 3 as it was (number and type from the dentry, data from
/// the inode), a miss at `a`, or a miss at `b` in directory 2. Never a negative: a dropped
/// dentry's emptied slot must read as untrusted (with `detach` giving a dropped dentry a fresh
/// negative validity word, or emptying the slot outside the dentry's sequence write, this model
/// fails); never another inode. After the join, what name lookups reach agrees with the
/// counters (`nr_dentry`, `nr_negative`, `nr_unused`: nothing is held), with `shrink`'s count,
/// the children maps and a walk (with a second chance that leaves its entry off the LRU, this
/// fails); both inodes stay cached (a dentry never holds an inode's last count, only `forget`
/// drops one, so `shrink` cannot free an inode); `verify` passes. Two preemptions (about 40 s):
/// the torn snapshot needs the shrinker stopped inside its write and the walk run there. Each
/// answer, and `a` kept by its second chance, must happen in some execution (checked after the
/// model).
#[test]
fn walk_vs_shrink_of_its_path() {
    // Executions that saw: found, a miss at a, a miss at b; that kept a.
    static OUTCOMES: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
    builder(2).check(|| {
        let cache = cache_with_a_b();
        cache.add_negative(DIR_A.ino, b"x").unwrap();
        let shrinker = {
            let cache = cache.clone();
            loom::thread::spawn(move || cache.shrink(2))
        };
        let seen = walk_a_b(&cache, &epoch::pin());
        assert_ne!(seen, Seen::NewA);
        let evicted = shrinker.join().unwrap();

        let a = cached(&cache, ROOT_INO, b"a", DIR_A);
        let b = cached(&cache, DIR_A.ino, b"b", FILE_B);
        let x = cached(&cache, DIR_A.ino, b"x", FILE_B);
        assert!(a != Some(false) && b != Some(false) && x != Some(true), "{a:?} {b:?} {x:?}");
        let (a, b, x) = (a.is_some(), b.is_some(), x.is_some());
        let s = cache.stats();
        // The negative first, then one of the two positives.
        assert!(!x && a != b && evicted == 2, "{a} {b} {x}, {evicted} evicted: {s:?}");
        let stats = (s.nr_dentry, s.nr_negative, s.nr_unused, s.nr_inodes);
        assert_eq!(stats, (1, 0, 1, 3), "{a} {b} {x}: {s:?}");
        let now = match (a, b) {
            (true, true) => Seen::Found,
            (false, _) => Seen::MissAtA,
            (true, false) => Seen::MissAtB,
        };
        assert_eq!(walk_a_b(&cache, &epoch::pin()), now);
        assert_eq!(cache.children(ROOT_INO).unwrap(), children_if(a, b"a", DIR_A));
        assert_eq!(cache.children(DIR_A.ino).unwrap(), children_if(b, b"b", FILE_B));
        let guard = epoch::pin();
        for spec in [DIR_A, FILE_B] {
            let i = cache.inode(&guard, spec.ino).expect("inodes stay until forget");
            assert_eq!((i.spec(), i.lookups()), (spec, 1));
        }
        drop(guard);
        cache.verify().unwrap();
        let outcome = match seen {
            Seen::Found => 0,
            Seen::MissAtA => 1,
            _ => 2,
        };
        bump(&OUTCOMES[outcome]);
        if a {
            bump(&OUTCOMES[3]);
        }
    });
    let counts = counts(&OUTCOMES);
    assert!(counts.iter().all(|&c| c > 0), "found, miss at a, at b, a kept: {counts:?}");
}

/// A lockless walk of `a/b` races the last `forget` of directory `a` (its lookup count 1 → 0),
/// which, inside a rename section, drops `a`'s name, then everything below it (`a/b`), then the
/// inode itself (its last count goes back to the pool). The walk answers file 3 as it was (it
/// stays cached until its own forget) or a miss at `a`, never a freed or recycled inode, and
/// never a miss at `b` in directory 2, which would pair `a` before its drop with `a/b` after
/// it (with `forget` holding only the rename lock, no section, and `drop_below`'s assert
/// removed, or with `walk_validated` returning misses unchecked, this model fails). Once the
/// forget has returned, a walk misses at `a`. After the join no dentry is left, inode 2 is
/// gone and inode 3 cached with its count, the counters agree and `verify` passes. One
/// preemption (about 8 s). The found and missed answers and a
/// fallback must each happen in some execution (checked after the model).
#[test]
fn walk_vs_last_forget_of_its_directory() {
    // Executions that saw: found, a miss at a, a fallback.
    static OUTCOMES: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
    builder(1).check(|| {
        let cache = cache_with_a_b();
        let done = Arc::new(AtomicBool::new(false));
        let forgetter = {
            let (cache, done) = (cache.clone(), done.clone());
            loom::thread::spawn(move || {
                cache.forget(DIR_A.ino, 1).unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let seen = walk_a_b(&cache, &epoch::pin());
        assert!(seen == Seen::Found || seen == Seen::MissAtA, "a/b answered {seen:?}");
        assert!(!after || seen == Seen::MissAtA, "a/b found after the last forget of a");
        forgetter.join().unwrap();
        let fell_back = cache.stats().walk_fallbacks > 0;

        assert_eq!(walk_a_b(&cache, &epoch::pin()), Seen::MissAtA);
        assert_eq!(cached(&cache, DIR_A.ino, b"b", FILE_B), None, "a/b outlived a");
        assert!(cache.children(ROOT_INO).unwrap().is_empty());
        let guard = epoch::pin();
        assert!(cache.inode(&guard, DIR_A.ino).is_none(), "a forgotten inode still cached");
        let b = cache.inode(&guard, FILE_B.ino).expect("cached until its own forget");
        assert_eq!((b.spec(), b.lookups()), (FILE_B, 1));
        drop(guard);
        let s = cache.stats();
        let stats = (s.nr_dentry, s.nr_negative, s.nr_unused, s.nr_inodes, s.rename_sections);
        assert_eq!(stats, (0, 0, 0, 2, 1), "{s:?}");
        cache.verify().unwrap();
        let outcome = if seen == Seen::Found { 0 } else { 1 };
        bump(&OUTCOMES[outcome]);
        if fell_back {
            bump(&OUTCOMES[2]);
        }
    });
    let counts = counts(&OUTCOMES);
    assert!(counts.iter().all(|&c| c > 0), "found, gone, fallbacks: {counts:?}");
}

/// A lockless walk of `a` races the last `forget` of directory `a` and then the `add` of
/// another file `a` under the same number 2, which may get the old directory's object back
/// from the pool, re-initialised. (A walk of `a/b` never reads directory 2's object when `a/b`
/// is cached, and one that misses at `b` is sent to the fallback; with the re-add in the
/// model it takes minutes: the model before this one covers it.) The walk answers the old
/// directory 2 or the new file 2, each whole (number and type from the dentry, data from the
/// inode), or a miss at `a`; and what it answered keeps its number, type and data for as long
/// as the walk's guard lives, across the forgetter's steps (with the pool reusing freed inodes
/// at once, as `PoolConfig::reuse_immediately` does, this model fails). After the join, `a`
/// is the new file, nothing is cached below number 2, both inodes are cached with one count
/// each, the counters agree and `verify` passes. One preemption (about 15 s). Each answer, a
/// fallback and a recycled inode must happen in some execution (checked after the model), or
/// the model proves nothing.
#[test]
fn walk_vs_last_forget_and_reuse_of_its_number() {
    // Executions that saw: the old directory, a miss at a, the new file, a fallback, a
    // recycled inode.
    static OUTCOMES: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];
    builder(1).check(|| {
        let cache = cache_with_a_b();
        let forgetter = {
            let cache = cache.clone();
            loom::thread::spawn(move || {
                cache.forget(DIR_A.ino, 1).unwrap();
                cache.add(ROOT_INO, b"a", NEW_A).unwrap();
            })
        };
        let outcome = {
            let guard = epoch::pin();
            match cache.walk(&guard, ROOT_INO, "a").unwrap() {
                Walk::Found(i) => {
                    let spec = i.spec();
                    assert_eq!((i.ino(), i.kind()), (spec.ino, spec.kind), "torn: {i:?}");
                    assert!(spec == DIR_A || spec == NEW_A, "another inode: {i:?}");
                    // The forgetter may free and re-add meanwhile: what was read stays.
                    loom::thread::yield_now();
                    assert_eq!(i.spec(), spec, "the inode was recycled under its reader");
                    if spec == DIR_A { 0 } else { 2 }
                }
                Walk::Miss { parent: ROOT_INO, at: 0 } => 1,
                other => panic!("a answered {other:?}"),
            }
        };
        forgetter.join().unwrap();
        let fell_back = cache.stats().walk_fallbacks > 0;

        assert_eq!(walk_a_b(&cache, &epoch::pin()), Seen::NewA);
        assert_eq!(cached(&cache, ROOT_INO, b"a", NEW_A), Some(true));
        assert_eq!(cached(&cache, DIR_A.ino, b"b", FILE_B), None, "a/b outlived a");
        assert_eq!(cache.children(ROOT_INO).unwrap(), children_if(true, b"a", NEW_A));
        let guard = epoch::pin();
        for spec in [NEW_A, FILE_B] {
            let i = cache.inode(&guard, spec.ino).expect("cached");
            assert_eq!((i.spec(), i.lookups()), (spec, 1));
        }
        drop(guard);
        let s = cache.stats();
        let stats = (s.nr_dentry, s.nr_negative, s.nr_unused, s.nr_inodes, s.rename_sections);
        assert_eq!(stats, (1, 0, 1, 3, 1), "{s:?}");
        cache.verify().unwrap();
        bump(&OUTCOMES[outcome]);
        for (happened, i) in [(fell_back, 3), (s.inodes_recycled > 0, 4)] {
            if happened {
                bump(&OUTCOMES[i]);
            }
        }
    });
    let counts = counts(&OUTCOMES);
    assert!(counts.iter().all(|&c| c > 0), "old, gone, new, fallbacks, recycled: {counts:?}");
}
