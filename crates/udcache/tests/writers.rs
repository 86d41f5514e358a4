//! Writers racing writers: threads add, unlink, rename (replace, no-replace, exchange),
//! invalidate, shrink, forget and count lookups of a small set of names and inodes at once
//! (every refusal must be one the state allows), while a walker checks every inode it finds is
//! intact. At the end, with no thread running, the cache must be consistent: every positive
//! dentry's inode is the one the inode table holds, lists that name among its aliases and is
//! on its parent's children map; every alias and every child leads back to its inode; the
//! name table's bounds and counters hold.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use udcache::{
    Attr, Config, Dcache, Error, FileType, InodeSpec, Lookup, ROOT_INO, RenameMode, Walk, epoch,
};

const DIRS: [u64; 3] = [ROOT_INO, 2, 3];
const NAMES: usize = 6;
const INOS: std::ops::Range<u64> = 100..108;

fn name(k: usize) -> Vec<u8> {
    format!("n{k}").into_bytes()
}

fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: ino * 3 }
}

/// SplitMix64 step.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let z = (*state ^ (*state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn one_op(cache: &Dcache, r: &mut u64) {
    let mut pick = |n: usize| (next(r) % n as u64) as usize;
    let (d, k) = (DIRS[pick(DIRS.len())], pick(NAMES));
    let ino = INOS.start + pick((INOS.end - INOS.start) as usize) as u64;
    let result = match pick(11) {
        0 | 1 => cache.add(d, &name(k), file(ino)),
        2 => cache.add_negative(d, &name(k)),
        3 => cache.unlink(d, &name(k)),
        4 => {
            let (d2, k2) = (DIRS[pick(DIRS.len())], pick(NAMES));
            let modes = [RenameMode::Replace, RenameMode::NoReplace, RenameMode::Exchange];
            cache.rename(d, &name(k), d2, &name(k2), modes[pick(3)])
        }
        8 => cache.invalidate(d, &name(k)),
        9 => {
            cache.shrink(1 + pick(3));
            Ok(())
        }
        5 | 10 => cache.forget(ino, 1),
        6 => cache.count_lookup(ino),
        _ => cache.setattr(ino, &Attr { size: ino, ..Attr::default() }, Duration::ZERO),
    };
    match result {
        Ok(()) | Err(Error::Exists | Error::NotFound | Error::UnknownInode(_)) => {}
        Err(e) => panic!("an impossible refusal: {e}"),
    }
}

fn check_consistent(cache: &Dcache) {
    let g = epoch::pin();
    for &d in &DIRS {
        for k in 0..NAMES {
            if let Ok(Lookup::Hit(i)) = cache.lookup(&g, d, &name(k)) {
                let table = cache.inode(&g, i.ino()).expect("a dentry names a forgotten inode");
                assert!(std::ptr::eq(table, i), "a dentry names a stale inode object");
                assert!(i.aliases().contains(&(d, name(k))), "({d}, n{k}) not among its aliases");
                assert!(i.lookups() >= 1);
                let child = udcache::Child { name: name(k), inode: i.spec() };
                assert!(cache.children(d).unwrap().contains(&child), "({d}, n{k}) not a child");
            }
        }
        for c in cache.children(d).unwrap() {
            assert!(
                matches!(cache.lookup(&g, d, &c.name), Ok(Lookup::Hit(i)) if i.ino() == c.inode.ino),
                "a child of {d} is not its positive dentry: {c:?}"
            );
        }
    }
    for ino in INOS {
        let Some(i) = cache.inode(&g, ino) else { continue };
        assert!(i.lookups() >= 1, "a cached inode with no lookups");
        for (d, n) in i.aliases() {
            assert!(
                matches!(cache.lookup(&g, d, &n), Ok(Lookup::Hit(j)) if std::ptr::eq(i, j)),
                "an alias of {ino} does not lead back to it"
            );
        }
    }
    cache.verify().unwrap();
}

#[test]
fn concurrent_writers_leave_a_consistent_cache() {
    let cache = Dcache::new(Config::for_entries(64).with_buckets(8));
    let dir = |ino| InodeSpec { ino, kind: FileType::Directory, fs_data: ino * 3 };
    cache.add(ROOT_INO, b"d2", dir(2)).unwrap();
    cache.add(ROOT_INO, b"d3", dir(3)).unwrap();
    let stop = AtomicBool::new(false);
    let ops: u64 = std::thread::scope(|s| {
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let (cache, stop) = (&cache, &stop);
                s.spawn(move || {
                    let (mut r, mut ops) = (w + 1, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        one_op(cache, &mut r);
                        ops += 1;
                    }
                    ops
                })
            })
            .collect();
        s.spawn(|| {
            let mut r = 99;
            while !stop.load(Ordering::Relaxed) {
                let k = (next(&mut r) % NAMES as u64) as usize;
                let g = epoch::pin();
                if let Ok(Walk::Found(i)) = cache.walk(&g, ROOT_INO, format!("d2/n{k}")) {
                    assert_eq!(i.fs_data(), i.ino() * 3, "a torn inode");
                }
            }
        });
        std::thread::sleep(Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert!(ops > 1000, "only {ops} operations");
    check_consistent(&cache);
}
