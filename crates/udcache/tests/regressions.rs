//! Regressions found by the `udcache` fuzz target (`fuzz/fuzz_targets/udcache.rs`), each the
//! minimised sequence that broke the model check, kept so that the bug stays fixed.

use udcache::{
    Config, Dcache, Error, FileType, InodeSpec, Lookup, ROOT_INO, RenameMode, Visit, epoch,
};

fn cache() -> Dcache {
    Dcache::new(Config::for_entries(64))
}

fn dir(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Directory, fs_data: 0 }
}

fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: 0 }
}

fn negative(c: &Dcache, parent: u64, name: &[u8]) -> bool {
    matches!(c.lookup(&epoch::pin(), parent, name), Ok(Lookup::Negative))
}

/// Negatives made by `unlink` and by the source of a `rename` did not mark their directory as
/// having negatives, so invalidating or forgetting the directory left them behind: stale
/// "does not exist" answers under a number the next directory of that number would inherit.
#[test]
fn negatives_made_by_unlink_and_rename_leave_with_their_directory() {
    let c = cache();
    c.add(ROOT_INO, b"a", dir(2)).unwrap();
    c.add(2, b"f", file(5)).unwrap();
    c.unlink(2, b"f").unwrap();
    assert!(negative(&c, 2, b"f"));
    c.invalidate(ROOT_INO, b"a").unwrap();
    assert_eq!(c.stats().nr_negative, 0, "an unlink-made negative outlived invalidate");

    c.add(ROOT_INO, b"b", dir(3)).unwrap();
    c.add(3, b"g", file(6)).unwrap();
    c.rename(3, b"g", ROOT_INO, b"g", RenameMode::Replace).unwrap();
    assert!(negative(&c, 3, b"g"));
    c.forget(3, 1).unwrap();
    assert_eq!(c.stats().nr_negative, 0, "a rename-made negative outlived forget");
    c.add(ROOT_INO, b"b", dir(3)).unwrap(); // the number names a new directory
    assert!(matches!(c.lookup(&epoch::pin(), 3, b"g"), Ok(Lookup::Miss)));
}

/// `add_negative` accepted a parent that was not a cached directory; when that number later
/// named a directory that was then forgotten, nothing swept the negative, and the next
/// directory of that number inherited it.
#[test]
fn add_negative_refuses_a_parent_that_is_not_a_cached_directory() {
    let c = cache();
    assert_eq!(c.add_negative(5, b"x"), Err(Error::UnknownInode(5)));
    c.add(ROOT_INO, b"f", file(6)).unwrap();
    assert_eq!(c.add_negative(6, b"x"), Err(Error::NotDirectory(6)));
    assert_eq!(c.stats().nr_dentry, 1, "a refused add_negative changed nothing");

    c.add(ROOT_INO, b"d", dir(5)).unwrap();
    c.add_negative(5, b"x").unwrap();
    c.forget(5, 1).unwrap();
    c.add(ROOT_INO, b"d", dir(5)).unwrap();
    assert!(matches!(c.lookup(&epoch::pin(), 5, b"x"), Ok(Lookup::Miss)));
}

/// A directory made its own ancestor (here: renamed below its own child, which the cache does
/// not check — the filesystem's view changed behind the cache; found with an `add` of the
/// directory, nameless, below its child, which now drops what was below it first) sent
/// `walk_tree` round the loop forever.
#[test]
fn walk_tree_enters_a_directory_once_when_it_is_its_own_ancestor() {
    let c = cache();
    c.add(ROOT_INO, b"a", dir(2)).unwrap();
    c.add(2, b"b", dir(3)).unwrap();
    c.rename(ROOT_INO, b"a", 3, b"x", RenameMode::Replace).unwrap(); // 2 -> 3 -> 2
    let mut seen = Vec::new();
    c.walk_tree(2, |depth, parent, child| {
        assert!(seen.len() < 10, "walk_tree loops: {seen:?}");
        seen.push((depth, parent, child.inode.ino));
        Visit::Continue
    })
    .unwrap();
    assert_eq!(seen, [(1, 2, 3), (2, 3, 2)], "each name once, directory 2 entered once");
}
