//! Loom models of `invalidate` (the filesystem's `notify_inval_entry`) against lockless
//! readers.
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom`
//! `cargo test --release -p udcache --test loom_invalidate`
#![cfg(loom)]

mod loom_common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom_common::{builder, bump, counts, loom_config};
use udcache::{Dcache, FileType, InodeSpec, Lookup, ROOT_INO, Walk, epoch};

/// What a walk of `a/b` may answer while `a` (directory 2, with `a/b` file 3 below it) is
/// invalidated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// `a/b` as it was: file 3, its own data.
    Before,
    /// `a` not cached: a miss at `a`.
    Gone,
}

fn walk_a_b(cache: &Dcache) -> Seen {
    let guard = epoch::pin();
    match cache.walk(&guard, ROOT_INO, "a/b").unwrap() {
        Walk::Found(i) => {
            assert_eq!((i.ino(), i.kind()), (3, FileType::Regular), "another inode: {i:?}");
            assert_eq!(i.fs_data(), 30, "a torn or recycled inode: {i:?}");
            Seen::Before
        }
        Walk::Miss { parent: ROOT_INO, at: 0 } => Seen::Gone,
        // A miss at `b` in directory 2 would pair `a` before its drop with `a/b` during or
        // after it (`a/b`'s dentry, emptied, reads as an untrusted negative): the rename
        // sequence must send such a walk to the fallback, whether it stopped for the blocking
        // path or not.
        other => panic!("a/b answered {other:?}: a state between the drops of a and a/b"),
    }
}

/// A lockless walk of `a/b` races the invalidation of directory `a`, which drops `a`, then
/// `a/b`, inside a rename section. The walk answers file 3 as it was (never another inode, a
/// torn one or a recycled one) or a miss at `a`, never a *validated* miss at `b` in directory
/// 2, which would pair `a` before its drop with `a/b` after it (with `invalidate` holding
/// only the rename lock, no section, and `drop_below`'s assert removed, or with
/// `walk_validated` returning misses unchecked, this model fails; it failed too while a walk
/// that stopped for the blocking path went unvalidated). Once `invalidate` has
/// returned, a walk misses at `a`. After the join no dentry is left (`a/b` unreachable from
/// directory 2 too), both inodes stay until `forget`, and the maps and counts agree. One
/// preemption suffices (20 s; two take minutes): loom's stale reads put the walk's steps on
/// both sides of the drops. The found and gone answers and a fallback must each happen in
/// some execution (checked after the model).
#[test]
fn walk_vs_invalidate_of_its_directory() {
    // Executions that saw: found, gone, a fallback.
    static OUTCOMES: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
    builder(1).check(|| {
        let cache = Arc::new(Dcache::new(loom_config()));
        let spec = |ino, kind| InodeSpec { ino, kind, fs_data: ino * 10 };
        cache.add(ROOT_INO, b"a", spec(2, FileType::Directory)).unwrap();
        cache.add(2, b"b", spec(3, FileType::Regular)).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let invalidator = {
            let (cache, done) = (cache.clone(), done.clone());
            loom::thread::spawn(move || {
                cache.invalidate(ROOT_INO, b"a").unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let seen = walk_a_b(&cache);
        assert!(!after || seen == Seen::Gone, "a/b found after invalidate returned");
        invalidator.join().unwrap();
        let fell_back = cache.stats().walk_fallbacks > 0;

        assert_eq!(walk_a_b(&cache), Seen::Gone);
        let guard = epoch::pin();
        assert!(matches!(cache.lookup(&guard, 2, b"b"), Ok(Lookup::Miss)), "a/b left behind");
        for ino in [2, 3] {
            let i = cache.inode(&guard, ino).expect("inodes stay until forget");
            assert_eq!(i.fs_data(), ino * 10);
        }
        drop(guard);
        assert!(cache.children(ROOT_INO).unwrap().is_empty());
        assert!(cache.children(2).unwrap().is_empty());
        let s = cache.stats();
        assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (0, 0, 3), "{s:?}");
        assert_eq!(s.rename_sections, 1, "{s:?}");
        cache.verify().unwrap();
        let outcome = match seen {
            Seen::Before => 0,
            Seen::Gone => 1,
        };
        bump(&OUTCOMES[outcome]);
        if fell_back {
            bump(&OUTCOMES[2]);
        }
    });
    let counts = counts(&OUTCOMES);
    let [found, gone, fell_back] = counts;
    assert!(found > 0 && gone > 0 && fell_back > 0, "found, gone, fallbacks: {counts:?}");
}
