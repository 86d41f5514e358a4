//! Every operation, its success paths and its refusals (which must change nothing).

use std::sync::Arc;
use std::time::Duration;

use udcache::ManualClock;
use udcache::{
    Attr, Config, Dcache, Error, FileType, InodeSpec, InvalidName, Lookup, ROOT_INO, RenameMode,
    Stats, UnlinkPolicy, Walk, epoch,
};

fn dir(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Directory, fs_data: ino * 10 }
}
fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: ino * 10 }
}
fn link(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Symlink, fs_data: ino * 10 }
}

fn cache() -> Dcache {
    Dcache::new(Config::for_entries(256))
}

/// What `lookup` says, as an inode number (`Some(0)`: negative, `None`: miss).
fn look(c: &Dcache, parent: u64, name: &[u8]) -> Option<u64> {
    let g = epoch::pin();
    match c.lookup(&g, parent, name).unwrap() {
        Lookup::Hit(i) => Some(i.ino()),
        Lookup::Negative => Some(0),
        Lookup::Miss => None,
    }
}

fn found(c: &Dcache, root: u64, path: &str) -> Option<u64> {
    let g = epoch::pin();
    match c.walk(&g, root, path).unwrap() {
        Walk::Found(i) => Some(i.ino()),
        _ => None,
    }
}

fn lookups(c: &Dcache, ino: u64) -> u64 {
    let g = epoch::pin();
    c.inode(&g, ino).expect("cached").lookups()
}

/// Runs `op`, which must fail with `want`, and checks the stats did not move.
fn refused(c: &Dcache, want: Error, op: impl FnOnce(&Dcache) -> Result<(), Error>) {
    let before: Stats = c.stats();
    assert_eq!(op(c), Err(want));
    assert_eq!(c.stats(), before, "a refused operation changed the cache");
}

#[test]
fn lookup_hit_negative_miss_and_bad_names() {
    let c = cache();
    c.add(ROOT_INO, b"a", file(2)).unwrap();
    c.add_negative(ROOT_INO, b"n").unwrap();
    assert_eq!(look(&c, ROOT_INO, b"a"), Some(2));
    assert_eq!(look(&c, ROOT_INO, b"n"), Some(0));
    assert_eq!(look(&c, ROOT_INO, b"zz"), None);
    assert_eq!(look(&c, 999, b"a"), None, "another parent is another key");
    let g = epoch::pin();
    for (name, why) in [
        (&b""[..], InvalidName::Empty),
        (b".", InvalidName::Dot),
        (b"..", InvalidName::Dot),
        (b"x/y", InvalidName::Slash),
        (b"x\0", InvalidName::Nul),
    ] {
        assert!(matches!(c.lookup(&g, ROOT_INO, name), Err(Error::InvalidName(w)) if w == why));
    }
    let long = [b'l'; 256];
    assert!(matches!(
        c.lookup(&g, ROOT_INO, &long),
        Err(Error::InvalidName(InvalidName::TooLong(256)))
    ));
}

#[test]
fn long_names_round_trip() {
    let c = cache();
    let name = [b'x'; 255];
    c.add(ROOT_INO, &name, file(2)).unwrap();
    assert_eq!(look(&c, ROOT_INO, &name), Some(2));
    assert_eq!(look(&c, ROOT_INO, &name[..254]), None);
}

#[test]
fn add_counts_a_lookup_and_instantiates_negatives() {
    let c = cache();
    c.add_negative(ROOT_INO, b"a").unwrap();
    assert_eq!(c.stats().nr_negative, 1);
    c.add(ROOT_INO, b"a", file(2)).unwrap();
    assert_eq!(look(&c, ROOT_INO, b"a"), Some(2));
    let s = c.stats();
    assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (1, 0, 2));
    assert_eq!(lookups(&c, 2), 1);
    // A hard link: the same inode under a second name.
    c.add(ROOT_INO, b"b", file(2)).unwrap();
    assert_eq!(lookups(&c, 2), 2);
    let g = epoch::pin();
    let mut names = c.inode(&g, 2).unwrap().aliases();
    names.sort();
    assert_eq!(names, vec![(ROOT_INO, b"a".to_vec()), (ROOT_INO, b"b".to_vec())]);
}

#[test]
fn add_refusals_change_nothing() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(ROOT_INO, b"f", file(3)).unwrap();
    refused(&c, Error::Exists, |c| c.add(ROOT_INO, b"f", file(4)));
    refused(&c, Error::KindMismatch { ino: 3 }, |c| c.add(ROOT_INO, b"g", dir(3)));
    refused(&c, Error::DirectoryAlias(2), |c| c.add(ROOT_INO, b"e", dir(2)));
    refused(&c, Error::DirectoryAlias(ROOT_INO), |c| c.add(2, b"r", dir(ROOT_INO)));
    refused(&c, Error::UnknownInode(77), |c| c.add(77, b"x", file(5)));
    // An uncached parent is reported first, as everywhere, whatever else is wrong.
    refused(&c, Error::UnknownInode(77), |c| c.add(77, b"r", dir(ROOT_INO)));
    refused(&c, Error::NotDirectory(3), |c| c.add(3, b"x", file(5)));
    refused(&c, Error::InvalidName(InvalidName::Slash), |c| c.add(ROOT_INO, b"a/b", file(5)));
    refused(&c, Error::Exists, |c| c.add_negative(ROOT_INO, b"f"));
    assert_eq!(lookups(&c, 3), 1);
}

#[test]
fn add_negative_is_idempotent() {
    let c = cache();
    c.add_negative(ROOT_INO, b"n").unwrap();
    c.add_negative(ROOT_INO, b"n").unwrap();
    let s = c.stats();
    assert_eq!((s.nr_dentry, s.nr_negative), (1, 1));
}

#[test]
fn unlink_by_policy() {
    for policy in [UnlinkPolicy::Negative, UnlinkPolicy::Drop] {
        let c = Dcache::new(Config::for_entries(64).with_unlink_policy(policy));
        assert_eq!(c.unlink_policy(), policy);
        c.add(ROOT_INO, b"f", file(2)).unwrap();
        c.unlink(ROOT_INO, b"f").unwrap();
        let want = if policy == UnlinkPolicy::Negative { Some(0) } else { None };
        assert_eq!(look(&c, ROOT_INO, b"f"), want, "{policy:?}");
        // The inode stays cached, with its count, until forget.
        assert_eq!(lookups(&c, 2), 1);
        let g = epoch::pin();
        assert!(c.inode(&g, 2).unwrap().aliases().is_empty());
        drop(g);
        refused(&c, Error::NotFound, |c| c.unlink(ROOT_INO, b"f"));
        refused(&c, Error::NotFound, |c| c.unlink(ROOT_INO, b"never"));
        refused(&c, Error::InvalidName(InvalidName::Empty), |c| c.unlink(ROOT_INO, b""));
    }
}

#[test]
fn unlink_of_a_directory_opens_a_rename_section() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(ROOT_INO, b"f", file(3)).unwrap();
    let before = c.stats().rename_sections;
    c.unlink(ROOT_INO, b"f").unwrap();
    assert_eq!(c.stats().rename_sections, before, "a file unlink needs no section");
    c.unlink(ROOT_INO, b"d").unwrap();
    assert_eq!(c.stats().rename_sections, before + 1);
}

#[test]
fn rename_within_and_between_directories() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(ROOT_INO, b"e", dir(3)).unwrap();
    c.add(2, b"f", file(4)).unwrap();
    c.rename(2, b"f", 2, b"g", RenameMode::NoReplace).unwrap();
    assert_eq!((look(&c, 2, b"f"), look(&c, 2, b"g")), (Some(0), Some(4)));
    c.rename(2, b"g", 3, b"h", RenameMode::Replace).unwrap();
    assert_eq!((look(&c, 2, b"g"), look(&c, 3, b"h")), (Some(0), Some(4)));
    let g = epoch::pin();
    assert_eq!(c.inode(&g, 4).unwrap().aliases(), vec![(3, b"h".to_vec())]);
    drop(g);
    // Directories carry their `..` along.
    c.rename(ROOT_INO, b"e", 2, b"e2", RenameMode::NoReplace).unwrap();
    assert_eq!(found(&c, ROOT_INO, "d/e2/h"), Some(4));
    assert_eq!(found(&c, ROOT_INO, "d/e2/.."), Some(2));
    assert_eq!(lookups(&c, 4), 1, "rename counts no lookup");
}

#[test]
fn rename_replace_noreplace_and_refusals() {
    let c = cache();
    c.add(ROOT_INO, b"a", file(2)).unwrap();
    c.add(ROOT_INO, b"b", file(3)).unwrap();
    refused(&c, Error::Exists, |c| c.rename(ROOT_INO, b"a", ROOT_INO, b"b", RenameMode::NoReplace));
    refused(&c, Error::NotFound, |c| c.rename(ROOT_INO, b"x", ROOT_INO, b"y", RenameMode::Replace));
    refused(&c, Error::NotDirectory(3), |c| c.rename(ROOT_INO, b"a", 3, b"y", RenameMode::Replace));
    refused(&c, Error::UnknownInode(50), |c| {
        c.rename(ROOT_INO, b"a", 50, b"y", RenameMode::Replace)
    });
    refused(&c, Error::InvalidName(InvalidName::Dot), |c| {
        c.rename(ROOT_INO, b"a", ROOT_INO, b"..", RenameMode::Replace)
    });
    // Onto itself and onto another name of the same inode: nothing happens, except that the
    // target exists for NoReplace (as `renameat2` checks it).
    c.rename(ROOT_INO, b"a", ROOT_INO, b"a", RenameMode::Replace).unwrap();
    refused(&c, Error::Exists, |c| c.rename(ROOT_INO, b"a", ROOT_INO, b"a", RenameMode::NoReplace));
    c.add(ROOT_INO, b"a2", file(2)).unwrap();
    refused(&c, Error::Exists, |c| {
        c.rename(ROOT_INO, b"a", ROOT_INO, b"a2", RenameMode::NoReplace)
    });
    c.rename(ROOT_INO, b"a", ROOT_INO, b"a2", RenameMode::Replace).unwrap();
    assert_eq!((look(&c, ROOT_INO, b"a"), look(&c, ROOT_INO, b"a2")), (Some(2), Some(2)));
    // Replace: b's inode loses its name but stays cached until forgotten.
    c.rename(ROOT_INO, b"a", ROOT_INO, b"b", RenameMode::Replace).unwrap();
    assert_eq!((look(&c, ROOT_INO, b"a"), look(&c, ROOT_INO, b"b")), (Some(0), Some(2)));
    let g = epoch::pin();
    assert!(c.inode(&g, 3).unwrap().aliases().is_empty());
}

#[test]
fn forget_semantics() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(2, b"f", file(3)).unwrap();
    c.add(2, b"hard", file(3)).unwrap();
    c.count_lookup(3).unwrap();
    assert_eq!(lookups(&c, 3), 3);
    refused(&c, Error::BadForget { ino: 3, have: 3, asked: 4 }, |c| c.forget(3, 4));
    refused(&c, Error::BadForget { ino: ROOT_INO, have: 1, asked: 1 }, |c| c.forget(ROOT_INO, 1));
    refused(&c, Error::UnknownInode(9), |c| c.forget(9, 1));
    refused(&c, Error::UnknownInode(9), |c| c.count_lookup(9));
    c.forget(3, 0).unwrap();
    c.forget(3, 2).unwrap();
    assert_eq!((lookups(&c, 3), look(&c, 2, b"f")), (1, Some(3)));
    // The last forget drops the inode and every name of it (dropped, not negative).
    c.forget(3, 1).unwrap();
    assert_eq!((look(&c, 2, b"f"), look(&c, 2, b"hard")), (None, None));
    assert_eq!(c.getattr(3), Err(Error::UnknownInode(3)));
    assert_eq!(c.stats().nr_inodes, 2);
    // A directory's last forget opens a rename section.
    let sections = c.stats().rename_sections;
    c.forget(2, 1).unwrap();
    assert_eq!(c.stats().rename_sections, sections + 1);
    assert_eq!(found(&c, ROOT_INO, "d"), None);
    // The number can be added again, as a new inode.
    c.add(ROOT_INO, b"d", file(2)).unwrap();
    assert_eq!(found(&c, ROOT_INO, "d"), Some(2));
    c.verify().unwrap();
}

#[test]
fn attributes_with_expiry() {
    let c = cache();
    c.add(ROOT_INO, b"f", file(2)).unwrap();
    assert_eq!(c.getattr(2), Ok(None), "never set");
    let a = Attr { size: 10, mode: 0o100600, nlink: 1, mtime: (5, 6), ..Attr::default() };
    c.setattr(2, &a, Duration::from_secs(60)).unwrap();
    assert_eq!(c.getattr(2), Ok(Some(a)));
    c.setattr(2, &a, Duration::ZERO).unwrap();
    assert_eq!(c.getattr(2), Ok(None), "expired at once");
    assert_eq!(c.setattr(99, &a, Duration::MAX), Err(Error::UnknownInode(99)));
    assert_eq!(c.getattr(99), Err(Error::UnknownInode(99)));
}

/// Attribute expiry runs on the configured clock, to the nanosecond, whatever real time does.
#[test]
fn attributes_expire_on_the_configured_clock() {
    let clock = Arc::new(ManualClock::new());
    let c = Dcache::new(Config::for_entries(64).with_clock(clock.clone()));
    c.add(ROOT_INO, b"f", file(2)).unwrap();
    let a = Attr { size: 10, mode: 0o100600, nlink: 1, ..Attr::default() };
    let ttl = Duration::from_millis(1500);
    c.setattr(2, &a, ttl).unwrap();
    std::thread::sleep(Duration::from_millis(20)); // real time passing changes nothing
    assert_eq!(c.getattr(2), Ok(Some(a)));
    clock.advance(ttl - Duration::from_nanos(1));
    assert_eq!(c.getattr(2), Ok(Some(a)), "one nanosecond before the ttl");
    clock.advance(Duration::from_nanos(1));
    assert_eq!(c.getattr(2), Ok(None), "the ttl has passed");
    c.setattr(2, &a, Duration::MAX).unwrap();
    clock.advance(Duration::from_secs(100 * 365 * 86_400));
    assert_eq!(c.getattr(2), Ok(Some(a)), "Duration::MAX never expires");
}

#[test]
fn walk_dots_symlinks_and_ends() {
    let c = cache();
    c.add(ROOT_INO, b"a", dir(2)).unwrap();
    c.add(2, b"b", dir(3)).unwrap();
    c.add(3, b"f", file(4)).unwrap();
    c.add(2, b"ln", link(5)).unwrap();
    c.add_negative(3, b"gone").unwrap();
    let g = epoch::pin();
    let ino = |w: Result<Walk<'_>, Error>| match w.unwrap() {
        Walk::Found(i) => i.ino(),
        other => panic!("{other:?}"),
    };
    assert_eq!(ino(c.walk(&g, ROOT_INO, "")), ROOT_INO);
    assert_eq!(ino(c.walk(&g, ROOT_INO, "/a//b/./f")), 4);
    assert_eq!(ino(c.walk(&g, ROOT_INO, "a/b/../b/f")), 4);
    assert_eq!(ino(c.walk(&g, ROOT_INO, "../../a")), 2, "the root's parent is itself");
    assert_eq!(ino(c.walk(&g, 3, "..")), 2, "relative to any directory");
    assert_eq!(ino(c.walk(&g, ROOT_INO, "a/ln")), 5, "a last symlink is found, not followed");
    assert!(matches!(
        c.walk(&g, ROOT_INO, "a/ln/x/y"),
        Ok(Walk::Symlink { inode, rest: 5 }) if inode.ino() == 5
    ));
    assert!(matches!(c.walk(&g, ROOT_INO, "a/b/f/x"), Ok(Walk::NotDir { at: 6, .. })));
    // A trailing `/` asks for a directory (POSIX): a file is not one, a link is followed by
    // the caller with the slash kept in the rest; `/` alone is the root.
    assert_eq!(ino(c.walk(&g, ROOT_INO, "a/b/")), 3);
    assert_eq!(ino(c.walk(&g, ROOT_INO, "/")), ROOT_INO);
    assert!(matches!(
        c.walk(&g, ROOT_INO, "a/b/f//"),
        Ok(Walk::NotDir { inode, at: 7 }) if inode.ino() == 4
    ));
    assert!(matches!(
        c.walk(&g, ROOT_INO, "a/ln/"),
        Ok(Walk::Symlink { inode, rest: 4 }) if inode.ino() == 5
    ));
    assert!(matches!(c.walk(&g, 4, "/"), Ok(Walk::NotDir { at: 1, .. })), "from a file");
    assert!(matches!(c.walk(&g, ROOT_INO, "a/b/gone/x"), Ok(Walk::Negative { at: 4 })));
    assert!(matches!(c.walk(&g, ROOT_INO, "a/b/new"), Ok(Walk::Miss { parent: 3, at: 4 })));
    assert!(matches!(c.walk(&g, ROOT_INO, "a/\0/f"), Err(Error::InvalidName(InvalidName::Nul))));
    assert!(matches!(c.walk(&g, 42, "a"), Err(Error::UnknownInode(42))));
    assert_eq!(c.stats().walk_fallbacks, 0, "no rename, no fallback");
}

#[test]
fn dotdot_to_a_parent_no_longer_cached_is_an_unknown_inode_not_a_miss() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(3)).unwrap();
    c.add(3, b"e", dir(4)).unwrap();
    // The kernel forgets the parent while the child stays cached.
    c.forget(3, 1).unwrap();
    let g = epoch::pin();
    // A miss would send the caller to resolve `..`, which no lookup can name: the parent is
    // an inode the cache does not hold, as if the caller had named it.
    assert!(matches!(c.walk(&g, 4, ".."), Err(Error::UnknownInode(3))));
    assert!(matches!(c.walk(&g, 4, "../x"), Err(Error::UnknownInode(3))));
    assert!(matches!(c.walk(&g, 4, "."), Ok(Walk::Found(i)) if i.ino() == 4));
}

#[test]
fn stats_print_like_dentry_state() {
    let c = Dcache::new(Config::for_entries(64).with_buckets(32));
    c.add(ROOT_INO, b"f", file(2)).unwrap();
    c.add_negative(ROOT_INO, b"n").unwrap();
    let s = c.stats();
    assert_eq!(s.nr_buckets, 32);
    assert_eq!(s.dentry_state(), "2\t2\t0\t0\t1\t0");
    let text = s.to_string();
    for field in ["nr_dentry 2", "nr_unused 2", "nr_negative 1", "nr_buckets 32", "nr_inodes 2"] {
        assert!(text.contains(field), "{field} missing from:\n{text}");
    }
}

#[test]
fn a_flood_of_misses_stays_bounded() {
    let c = Dcache::new(Config::for_entries(64).with_buckets(64));
    for i in 0..20_000u32 {
        c.add_negative(ROOT_INO, format!("miss-{i}").as_bytes()).unwrap();
    }
    let s = c.stats();
    assert!(s.per_bucket() <= 3.0, "{s}");
    assert!(s.negative_evictions >= 20_000 - 3 * 64);
    c.verify().unwrap();
}

#[test]
fn evicted_dentries_are_recycled_after_their_grace_period() {
    let c = Dcache::new(Config::for_entries(64).with_buckets(64));
    // Waves of misses: each evicts older negatives, whose cells come back to the name table's
    // pool and serve later waves once no reader can see them.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut wave = 0u32;
    while c.stats().dentries_recycled == 0 {
        assert!(std::time::Instant::now() < deadline, "no dentry recycled: {}", c.stats());
        for i in 0..1_000u32 {
            c.add_negative(ROOT_INO, format!("miss-{wave}-{i}").as_bytes()).unwrap();
        }
        epoch::pin().flush();
        wave += 1;
    }
    let s = c.stats();
    assert!(s.per_bucket() <= 3.0, "{s}");
    assert!(s.to_string().contains(&format!("dentries_recycled {}", s.dentries_recycled)));
    c.verify().unwrap();
}

/// An `add` or `add_negative` of a name that is positive already is refused before anything
/// is made or opened for it: no inode or dentry taken from a pool (recycled), no rename
/// section (which also sends lockless walks to their fallback), whatever the name holds; a
/// directory under the name it has is `Exists`, not a second name.
#[test]
fn adding_a_taken_name_is_refused_before_anything_is_made() {
    let c = cache();
    c.add(ROOT_INO, b"d", dir(2)).unwrap();
    c.add(ROOT_INO, b"e", dir(3)).unwrap();
    c.add(ROOT_INO, b"f", file(4)).unwrap();
    c.unlink(ROOT_INO, b"e").unwrap(); // 3: a directory cached without a name
    // Churn, so that the pools hold objects to recycle.
    for i in 0..64 {
        c.add(ROOT_INO, b"tmp", file(100 + i)).unwrap();
        c.unlink(ROOT_INO, b"tmp").unwrap();
        c.forget(100 + i, 1).unwrap();
    }
    for _ in 0..2 {
        refused(&c, Error::Exists, |c| c.add(ROOT_INO, b"f", file(500)));
        refused(&c, Error::Exists, |c| c.add(ROOT_INO, b"f", dir(3)));
        refused(&c, Error::Exists, |c| c.add(ROOT_INO, b"d", dir(2)));
        refused(&c, Error::Exists, |c| c.add_negative(ROOT_INO, b"f"));
    }
    refused(&c, Error::DirectoryAlias(2), |c| c.add(ROOT_INO, b"d2", dir(2)));
}

/// A refused call sets no referenced bit on the dentry it named: the bit is a use's hint to
/// the trimming rules and to `shrink`, which gives a referenced dentry a second chance. In a
/// one-bucket cache (one LRU shard, so `shrink` takes the exact order) the older of two unused
/// dentries must still be the one `shrink(1)` evicts after a refused call named it.
#[test]
fn refusals_leave_the_referenced_bit_alone() {
    type Refusal = (&'static str, Error, fn(&Dcache) -> Result<(), Error>);
    let on_positive: [Refusal; 3] = [
        ("add", Error::Exists, |c| c.add(ROOT_INO, b"old", file(9))),
        ("add of a directory", Error::Exists, |c| c.add(ROOT_INO, b"old", dir(9))),
        ("add_negative", Error::Exists, |c| c.add_negative(ROOT_INO, b"old")),
    ];
    for (what, want, op) in on_positive {
        let c = Dcache::new(Config::for_entries(16).with_buckets(1));
        c.add(ROOT_INO, b"old", file(2)).unwrap();
        c.add(ROOT_INO, b"new", file(3)).unwrap();
        refused(&c, want, op);
        assert_eq!(c.shrink(1), 1);
        let left = (look(&c, ROOT_INO, b"old"), look(&c, ROOT_INO, b"new"));
        assert_eq!(left, (None, Some(3)), "a refused {what} gave the old name a second chance");
    }
    let on_negative: [Refusal; 3] = [
        ("add of the wrong kind", Error::KindMismatch { ino: 2 }, |c| {
            c.add(ROOT_INO, b"old", dir(2))
        }),
        ("unlink", Error::NotFound, |c| c.unlink(ROOT_INO, b"old")),
        ("rename", Error::NotFound, |c| {
            c.rename(ROOT_INO, b"old", ROOT_INO, b"x", RenameMode::Replace)
        }),
    ];
    for (what, want, op) in on_negative {
        let c = Dcache::new(Config::for_entries(16).with_buckets(1));
        c.add(ROOT_INO, b"f", file(2)).unwrap();
        c.add_negative(ROOT_INO, b"old").unwrap();
        c.add_negative(ROOT_INO, b"new").unwrap();
        refused(&c, want, op);
        assert_eq!(c.shrink(1), 1); // negatives first
        let left = (look(&c, ROOT_INO, b"old"), look(&c, ROOT_INO, b"new"));
        assert_eq!(left, (None, Some(0)), "a refused {what} gave the old name a second chance");
    }
}

/// `shrink` reports exactly what it evicted and takes negatives first: spending the second
/// chance of a looked-up negative can make the run rule evict negatives around it, and those
/// count. Uncounted, the shrink went on into positives for what it thought it was short.
#[test]
fn shrink_counts_exactly_and_takes_every_unused_negative_before_a_positive() {
    for (looked_up, buckets, flood) in [(1, 16, 1000), (5, 64, 5000)] {
        let c = Dcache::new(Config::for_entries(16).with_buckets(buckets));
        c.add(ROOT_INO, b"d2", dir(2)).unwrap();
        c.add(ROOT_INO, b"d3", dir(3)).unwrap();
        for i in 0..20u64 {
            c.add(2, format!("f{i}").as_bytes(), file(10 + i)).unwrap();
        }
        for i in 0..looked_up {
            let name = format!("miss{i}");
            c.add_negative(2, name.as_bytes()).unwrap();
            assert_eq!(look(&c, 2, name.as_bytes()), Some(0));
        }
        for i in 0..flood {
            c.add_negative(3, format!("flood{i}").as_bytes()).unwrap();
        }
        let before = c.stats();
        let n = usize::try_from(before.nr_negative).unwrap();
        assert_eq!(c.shrink(n), n, "{looked_up} looked up, {buckets} buckets");
        let after = c.stats();
        assert_eq!(
            (after.nr_dentry, after.nr_negative),
            (before.nr_dentry - before.nr_negative, 0),
            "exactly the negatives went ({looked_up} looked up, {buckets} buckets)"
        );
        c.verify().unwrap();
    }
}
