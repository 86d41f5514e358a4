//! Loom models of writers the other models leave out: an exchanging rename and the
//! instantiation of a negative dentry against lockless walks, and two misses of one name
//! against each other (coalesced into one filesystem call).
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom`
//! `cargo test --release -p udcache --test loom_writers`
#![cfg(loom)]

mod loom_common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom_common::{builder, bump, counts, loom_config};
use udcache::{
    Child, Dcache, Errno, FileType, Filesystem, InodeSpec, ROOT_INO, RenameMode, Resolved, Walk,
    epoch,
};

/// Inode `ino`, its data `10 × ino` (so that a reader can tell a torn or recycled one).
fn spec(ino: u64, kind: FileType) -> InodeSpec {
    InodeSpec { ino, kind, fs_data: ino * 10 }
}

/// What a walk of `path` answered: `Ok(ino)` for a found inode, checked whole (the number and
/// type its dentry keeps are the inode's own, read in one snapshot with the pointer; its data
/// is its own, not a recycled object's), or `Err` with any other answer.
fn walk(cache: &Dcache, path: &str) -> Result<u64, String> {
    let guard = epoch::pin();
    match cache.walk(&guard, ROOT_INO, path).unwrap() {
        Walk::Found(i) => {
            let own = (i.inode().ino(), i.inode().kind());
            assert_eq!((i.ino(), i.kind()), own, "{path}: a dentry torn from its inode");
            assert_eq!(i.fs_data(), own.0 * 10, "{path}: a torn or recycled inode: {i:?}");
            // A blank object's `..` is 0; every inode made has a parent (the root's: itself).
            assert_ne!(i.parent(), 0, "{path}: an inode reachable before it was made");
            Ok(i.ino())
        }
        other => Err(format!("{other:?}")),
    }
}

fn children(cache: &Dcache, dir: u64) -> Vec<Child> {
    let mut c = cache.children(dir).unwrap();
    c.sort_by(|a, b| a.name.cmp(&b.name));
    c
}

fn child(name: &[u8], ino: u64, kind: FileType) -> Child {
    Child { name: name.to_vec(), inode: spec(ino, kind) }
}

/// A walk of `a/../a/x` races `rename` with [`RenameMode::Exchange`] swapping `a` (directory
/// 2 in the root, holding `x` = file 3) and `b` (directory 4 in directory `d` = 6, holding
/// `x` = file 5). The exchange moves both names' inodes and both directories' `..` (2's to 6,
/// 4's to the root). The walk answers what the path named at one instant, whole: file 3
/// before the exchange, file 5 after it — at every instant `a/..` is the root. A mixture
/// (`a`'s new inode with its old `..`, or the old inode with its new `..`) would go on from
/// `d`, where no `a` is: a miss at 6, a path that never existed (with `rename` holding the
/// rename lock but opening no section, or with `read_valid`'s fence removed, this model
/// fails). The `..` detour makes a mixture visible: in `a/x` alone only `a`'s dentry
/// changes, and one snapshot of it is one instant by itself. Once `rename` has returned, the
/// walk sees the swap. After the join: the children maps, aliases and `..` of the two
/// directories agree with the swap, the counts hold (one section, no negative, nothing
/// dropped) and `verify` passes. Both answers and a walk fallback must each happen in some
/// execution (checked after the model). One preemption suffices (30 s; two take minutes):
/// loom's stale reads put the walk's loads on both sides of the exchange's stores.
#[test]
fn walk_vs_exchange_of_its_directory() {
    // Executions that saw: before, after, a fallback.
    static OUTCOMES: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
    builder(1).check(|| {
        let cache = Arc::new(Dcache::new(loom_config()));
        let dir = FileType::Directory;
        cache.add(ROOT_INO, b"a", spec(2, dir)).unwrap();
        cache.add(ROOT_INO, b"d", spec(6, dir)).unwrap();
        cache.add(6, b"b", spec(4, dir)).unwrap();
        cache.add(2, b"x", spec(3, FileType::Regular)).unwrap();
        cache.add(4, b"x", spec(5, FileType::Regular)).unwrap();
        // Walked once first: a dentry's first hit sets its referenced bit, a read-modify-write
        // that would read its latest sequence count (a cached tree's dentries have it set).
        assert_eq!((walk(&cache, "a/../a/x"), walk(&cache, "d/b/x")), (Ok(3), Ok(5)));
        let done = Arc::new(AtomicBool::new(false));
        let renamer = {
            let (cache, done) = (cache.clone(), done.clone());
            loom::thread::spawn(move || {
                cache.rename(ROOT_INO, b"a", 6, b"b", RenameMode::Exchange).unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let seen = walk(&cache, "a/../a/x");
        assert!(seen == Ok(3) || seen == Ok(5), "a/../a/x answered {seen:?}: a mixture");
        assert!(!after || seen == Ok(5), "{seen:?} after rename returned");
        renamer.join().unwrap();
        let fell_back = cache.stats().walk_fallbacks > 0;

        assert_eq!((walk(&cache, "a/../a/x"), walk(&cache, "d/b/x")), (Ok(5), Ok(3)));
        assert_eq!(children(&cache, ROOT_INO), [child(b"a", 4, dir), child(b"d", 6, dir)]);
        assert_eq!(children(&cache, 6), [child(b"b", 2, dir)]);
        assert_eq!(children(&cache, 2), [child(b"x", 3, FileType::Regular)]);
        assert_eq!(children(&cache, 4), [child(b"x", 5, FileType::Regular)]);
        let guard = epoch::pin();
        for (ino, parent, name) in [(2, 6, b"b"), (4, ROOT_INO, b"a")] {
            let i = cache.inode(&guard, ino).unwrap();
            assert_eq!(i.aliases(), [(parent, name.to_vec())], "the names of {ino}");
            assert_eq!(i.parent(), parent, "the .. of {ino}");
        }
        drop(guard);
        let s = cache.stats();
        assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (5, 0, 6), "{s:?}");
        assert_eq!(s.rename_sections, 1, "{s:?}");
        cache.verify().unwrap();
        bump(&OUTCOMES[usize::from(seen == Ok(5))]);
        if fell_back {
            bump(&OUTCOMES[2]);
        }
    });
    let seen = counts(&OUTCOMES);
    assert!(seen.iter().all(|&n| n > 0), "before, after, fallbacks: {seen:?}");
}

/// A walk of `x` races `add` of `x` (file 3) over a negative dentry of that name: the add
/// instantiates it, storing its inode, number and validity word in one write of the dentry's
/// sequence count. With `stale`, the directory changed after the negative was filed, so the
/// negative is no longer trusted (a walk answers a miss there); otherwise it is.
///
/// The walk answers the negative (a miss if stale) or file 3, whole: the number its dentry
/// keeps is the inode's own, and so is its data. Never the old empty slot with the new
/// validity word, which trusts a stale negative (with `put_inode`'s stores made outside the
/// sequence count, the stale model fails), and never the new inode with the negative's
/// number word (with those stores outside the count and the pointer stored first, or with
/// the slot's publishing store made Relaxed and the count's Release fence removed, both
/// models fail). After the join the dentry is positive, named 3 in the children map and the
/// alias list, counted once (lookups 1), and the counts hold: one dentry, no negative, two
/// inodes; `verify` passes. Both answers must happen in some execution (checked after the
/// model). Two preemptions (about 15 s each).
///
/// Not caught: an inode reachable before it was initialised. Its `..` word (0 in a blank
/// object) is checked, but no execution read it unset, even with those orderings weakened.
fn walk_vs_instantiate(stale: bool) {
    // Executions that saw: the negative (or miss), file 3.
    static OUTCOMES: [[AtomicUsize; 2]; 2] = [const { [const { AtomicUsize::new(0) }; 2] }; 2];
    let outcomes = &OUTCOMES[usize::from(stale)];
    let before = if stale { "Miss { parent: 1, at: 0 }" } else { "Negative { at: 0 }" };
    builder(2).check(move || {
        let cache = Arc::new(Dcache::new(loom_config()));
        cache.add_negative(ROOT_INO, b"x").unwrap();
        if stale {
            cache.dir_changed(ROOT_INO, None).unwrap();
        }
        // Walked once first, to set the dentry's referenced bit (see the exchange model).
        assert_eq!(walk(&cache, "x"), Err(before.to_owned()));
        let adder = {
            let cache = cache.clone();
            loom::thread::spawn(move || cache.add(ROOT_INO, b"x", spec(3, FileType::Regular)))
        };
        let seen = walk(&cache, "x");
        match &seen {
            Ok(ino) => assert_eq!(*ino, 3, "x named another inode"),
            Err(other) => assert_eq!(other, before, "x answered what it never was"),
        }
        adder.join().unwrap().unwrap();

        assert_eq!(walk(&cache, "x"), Ok(3));
        assert_eq!(children(&cache, ROOT_INO), [child(b"x", 3, FileType::Regular)]);
        let guard = epoch::pin();
        let i = cache.inode(&guard, 3).expect("file 3 on the inode table");
        assert_eq!((i.lookups(), i.parent()), (1, ROOT_INO));
        assert_eq!(i.aliases(), [(ROOT_INO, b"x".to_vec())]);
        drop(guard);
        let s = cache.stats();
        assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (1, 0, 2), "{s:?}");
        cache.verify().unwrap();
        bump(&outcomes[usize::from(seen.is_ok())]);
    });
    let seen = counts(outcomes);
    assert!(seen.iter().all(|&n| n > 0), "stale {stale}: before, found: {seen:?}");
}

#[test]
fn walk_vs_instantiate_of_a_negative() {
    walk_vs_instantiate(false);
}

#[test]
fn walk_vs_instantiate_of_a_stale_negative() {
    walk_vs_instantiate(true);
}

/// A filesystem in which `x` in the root is file 3 (or, without `exists`, absent), counting
/// its lookups.
struct CountingFs {
    exists: bool,
    calls: AtomicUsize,
}

impl Filesystem for CountingFs {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        assert_eq!((parent, name), (ROOT_INO, &b"x"[..]));
        // A std atomic: the count is what the model checks, not part of the protocol.
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.exists.then_some(spec(3, FileType::Regular)))
    }
}

/// Two threads `resolve` the name `x`, missing from the cache, at once; the filesystem says
/// it is file 3 (with `exists`) or absent.
///
/// `fetch.rs` promises more than coalescing of overlapping misses: a caller files its answer
/// before it takes its call off the in-flight list, and a thread that finds no call in flight
/// looks the name up again before asking (under the list's lock, and once more in the
/// blocking revalidation, which answers a fresh dentry without a call), so the second thread
/// either waits for the first one's call or finds its answer cached. The filesystem is
/// therefore asked exactly once in every execution, not only when the misses overlap (with
/// in-flight calls never matched, or a call taken off the list before its answer is filed,
/// this model fails; without the look under the lock it passes: the revalidation's look
/// covers it). Both threads get the same answer, and a waiter is woken (with the waiters
/// woken before the answer is set, a wake-up is lost and loom reports a deadlock, with two
/// preemptions). After the join the cache counts one backend lookup and, for a file, two
/// lookups of it (one per answer); it holds one dentry, positive or negative as answered, and
/// `verify` passes. Every way must happen in some execution (checked after the model): the
/// second thread finding the answer cached, waiting for the call and finding its answer
/// while it spins, and (with two preemptions) waiting for the call asleep (a coalesced
/// sleep).
fn misses_of_one_name(exists: bool, preemptions: usize) {
    // Executions where the second thread: found the answer cached, got it spinning, slept.
    static OUTCOMES: [[AtomicUsize; 3]; 2] = [const { [const { AtomicUsize::new(0) }; 3] }; 2];
    let outcomes = &OUTCOMES[usize::from(exists)];
    builder(preemptions).check(move || {
        let fs = Arc::new(CountingFs { exists, calls: AtomicUsize::new(0) });
        let cache = Arc::new(Dcache::new(loom_config().with_filesystem(fs.clone())));
        let other = {
            let cache = cache.clone();
            loom::thread::spawn(move || cache.resolve(ROOT_INO, b"x"))
        };
        let mine = cache.resolve(ROOT_INO, b"x");
        let theirs = other.join().unwrap();
        let answer =
            if exists { Resolved::Found(spec(3, FileType::Regular)) } else { Resolved::Negative };
        assert_eq!((mine, theirs), (Ok(answer), Ok(answer)));

        let calls = fs.calls.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(calls, 1, "the filesystem was asked {calls} times");
        let s = cache.stats();
        assert_eq!(s.backend_lookups, 1, "{s:?}");
        assert!(s.coalesced_misses <= 1 && s.coalesced_sleeps <= s.coalesced_misses, "{s:?}");
        let (negative, inodes) = if exists { (0, 2) } else { (1, 1) };
        assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (1, negative, inodes), "{s:?}");
        if exists {
            let guard = epoch::pin();
            let lookups = cache.inode(&guard, 3).map(|i| i.lookups());
            assert_eq!(lookups, Some(2), "one per answer");
            drop(guard);
            assert_eq!(children(&cache, ROOT_INO), [child(b"x", 3, FileType::Regular)]);
        }
        cache.verify().unwrap();
        bump(&outcomes[(s.coalesced_misses + s.coalesced_sleeps) as usize]);
    });
    let seen = counts(outcomes);
    // A sleep takes the caller preempted while the waiter spins, on top of the preemption
    // that makes a waiter at all: two.
    let ways = if preemptions < 2 { &seen[..2] } else { &seen[..] };
    assert!(ways.iter().all(|&n| n > 0), "exists {exists}: cached, spun, slept: {seen:?}");
}

/// One preemption (5 s): filing a file costs more steps than a negative, and two take over
/// a minute here.
#[test]
fn misses_of_a_file_make_one_call() {
    misses_of_one_name(true, 1);
}

/// Two preemptions (45 s): enough to lose a wake-up.
#[test]
fn misses_of_an_absent_name_make_one_call() {
    misses_of_one_name(false, 2);
}
