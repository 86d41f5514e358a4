//! Loom models of the lockless read paths against writers.
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom cargo test --release -p udcache --test loom_walk`
#![cfg(loom)]

mod loom_common;

use std::sync::Arc;
use std::time::Duration;

use loom_common::{builder, loom_config};
use udcache::{Attr, Dcache, FileType, InodeSpec, ROOT_INO, RenameMode, Walk, epoch};

fn found(cache: &Dcache, path: &str) -> Option<u64> {
    let guard = epoch::pin();
    match cache.walk(&guard, ROOT_INO, path).unwrap() {
        Walk::Found(i) => {
            assert!(i.ino() == ROOT_INO || i.fs_data() == i.ino() * 10, "a torn inode: {i:?}");
            Some(i.ino())
        }
        _ => None,
    }
}

/// A walk races the move of directory `d` into directory `e`. The rename puts `e/d` and then
/// updates `d`'s `..`: a walk of `e/d/..` that read the new name but the old parent would
/// return the root, a path that never existed — only the rename sequence stops it (with the
/// validation disabled, this model fails).
#[test]
fn walk_vs_rename_of_its_directory() {
    builder(2).check(|| {
        let cache = Arc::new(Dcache::new(loom_config()));
        let dir = |ino| InodeSpec { ino, kind: FileType::Directory, fs_data: ino * 10 };
        cache.add(ROOT_INO, b"d", dir(2)).unwrap();
        cache.add(ROOT_INO, b"e", dir(4)).unwrap();
        cache.add(2, b"f", InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 30 }).unwrap();
        assert_eq!(found(&cache, "d/f"), Some(3));
        let mover = {
            let cache = cache.clone();
            loom::thread::spawn(move || {
                cache.rename(ROOT_INO, b"d", 4, b"d", RenameMode::NoReplace).unwrap();
            })
        };
        let up = found(&cache, "e/d/..");
        assert!(up.is_none() || up == Some(4), "e/d/.. led to {up:?}");
        mover.join().unwrap();
        assert_eq!(found(&cache, "e/d/f"), Some(3));
    });
}

/// `getattr` races `setattr`: it returns the old snapshot or the new one, never a mixture.
/// One preemption suffices to put the writer in the middle of a read (two take a minute).
#[test]
fn getattr_vs_setattr() {
    builder(1).check(|| {
        let cache = Arc::new(Dcache::new(loom_config()));
        let until = Duration::from_secs(3600);
        let old = Attr { size: 1, blocks: 1, nlink: 1, ..Attr::default() };
        let new = Attr { size: 2, blocks: 2, nlink: 2, ..Attr::default() };
        cache.setattr(ROOT_INO, &old, until).unwrap();
        let writer = {
            let cache = cache.clone();
            loom::thread::spawn(move || cache.setattr(ROOT_INO, &new, until).unwrap())
        };
        let seen = cache.getattr(ROOT_INO).unwrap().expect("not expired");
        assert!(seen == old || seen == new, "a torn snapshot: {seen:?}");
        writer.join().unwrap();
        assert_eq!(cache.getattr(ROOT_INO).unwrap(), Some(new));
    });
}

/// A lockless lookup races the unlink, forget and re-creation of its file under the same
/// inode number with new data (FUSE reuses numbers after forget), twice, so that the pool can
/// recycle the first object for the third file. The reader holds the inode it found across the
/// writer's steps: it must stay the file it found (same data on a second read) — a recycled
/// object re-initialised under it would change — and never be freed memory (with the pool
/// made to reuse at once, the model fails). One preemption suffices (1 s; two take minutes). Some executions
/// must actually recycle (checked after the model), or the model proves nothing.
#[test]
fn lookup_vs_unlink_and_reuse_of_its_inode() {
    static RECYCLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    builder(1).check(|| {
        let cache = Arc::new(Dcache::new(loom_config()));
        let f = |data| InodeSpec { ino: 3, kind: FileType::Regular, fs_data: data };
        cache.add(ROOT_INO, b"f", f(30)).unwrap();
        let writer = {
            let cache = cache.clone();
            loom::thread::spawn(move || {
                for data in [31, 32] {
                    cache.unlink(ROOT_INO, b"f").unwrap();
                    cache.forget(3, 1).unwrap();
                    cache.add(ROOT_INO, b"f", f(data)).unwrap();
                }
            })
        };
        {
            let guard = epoch::pin();
            if let Ok(udcache::Lookup::Hit(i)) = cache.lookup(&guard, ROOT_INO, b"f") {
                let first = i.fs_data();
                loom::thread::yield_now();
                assert_eq!(i.fs_data(), first, "the inode was recycled under its reader");
                assert_eq!(i.ino(), 3);
            }
        }
        writer.join().unwrap();
        let guard = epoch::pin();
        assert!(
            matches!(cache.lookup(&guard, ROOT_INO, b"f"), Ok(udcache::Lookup::Hit(i)) if i.fs_data() == 32)
        );
        let recycled = cache.stats().inodes_recycled as usize;
        RECYCLED.fetch_add(recycled, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(RECYCLED.load(std::sync::atomic::Ordering::Relaxed) > 0, "no execution recycled");
}
