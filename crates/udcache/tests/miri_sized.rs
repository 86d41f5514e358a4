//! The unsafe paths at a size Miri can run
//! (`cargo +nightly miri test -p udcache --test miri_sized`): inodes that go back to their pool
//! and come out again for other files, dentries added, renamed, unlinked and forgotten while
//! another thread walks with a guard. Quick in a plain `cargo test` too.
#![cfg(not(loom))]

use std::sync::Barrier;

use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, RenameMode, Walk, epoch};

fn dir(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Directory, fs_data: ino * 10 }
}

fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: ino * 10 }
}

/// Grace periods pass (and the chains' deferred releases run) until the pool may reuse what
/// was freed.
fn settle() {
    for _ in 0..4 {
        epoch::pin().flush();
        udcache_gp::synchronize();
    }
}

/// A forgotten inode goes back to the pool through the count `forget` took itself (the last
/// one), and its object is handed out again, re-initialised, for the next files.
#[test]
fn forgotten_inodes_are_reused_for_new_files() {
    let c = Dcache::new(Config::for_entries(64));
    for round in 0..3u64 {
        let ino = 10 + round;
        c.add(ROOT_INO, b"f", file(ino)).unwrap();
        c.unlink(ROOT_INO, b"f").unwrap();
        c.forget(ino, 1).unwrap();
        settle();
    }
    // Enough new inodes to take every object parked above.
    for i in 0..4u64 {
        c.add(ROOT_INO, format!("g{i}").as_bytes(), file(100 + i)).unwrap();
    }
    let g = epoch::pin();
    assert!(matches!(c.walk(&g, ROOT_INO, "g3"), Ok(Walk::Found(i)) if i.ino() == 103));
    drop(g);
    c.verify().unwrap();
}

/// A walker pinned on another thread keeps the inode it found, whole, while the writer
/// renames, unlinks and forgets it and new files take recycled objects.
#[test]
fn a_pinned_walk_keeps_its_inode_while_writers_recycle() {
    let c = Dcache::new(Config::for_entries(64));
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(2, b"f", file(3)).unwrap();
    let (found, changed) = (Barrier::new(2), Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = epoch::pin();
            let Ok(Walk::Found(i)) = c.walk(&g, ROOT_INO, "d/f") else { panic!("d/f") };
            found.wait();
            changed.wait();
            // Renamed, unlinked and forgotten meanwhile: still the file this walk found.
            assert_eq!((i.ino(), i.fs_data()), (3, 30));
        });
        found.wait();
        c.rename(2, b"f", ROOT_INO, b"f2", RenameMode::NoReplace).unwrap();
        c.unlink(ROOT_INO, b"f2").unwrap();
        c.forget(3, 1).unwrap();
        for i in 0..3u64 {
            c.add(2, format!("n{i}").as_bytes(), file(20 + i)).unwrap();
        }
        changed.wait();
    });
    settle();
    c.forget(2, 1).unwrap();
    settle();
    for i in 0..3u64 {
        c.add(ROOT_INO, format!("m{i}").as_bytes(), file(40 + i)).unwrap();
    }
    c.verify().unwrap();
}
