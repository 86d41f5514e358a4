//! A directory renamed behind the cache: `resolve` moves its cached name to the one the
//! filesystem answers (`src/writers/splice.rs`), with what is cached below it, against racing writers;
//! and what such moves share with `rename` (a directory between two names, a new parent
//! forgotten meanwhile).

mod lend;

use lend::lend;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use udcache::{
    Config, Dcache, Errno, Error, FileType, Filesystem, InodeSpec, Lookup, ROOT_INO, RenameMode,
    Resolved, Walk, epoch,
};

const fn dir(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Directory, fs_data: 0 }
}

fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: 0 }
}

/// The inode a lookup of `(parent, name)` hits now, if any.
fn hit(cache: &Dcache, parent: u64, name: &[u8]) -> Option<u64> {
    match cache.lookup(&epoch::pin(), parent, name) {
        Ok(Lookup::Hit(i)) => Some(i.ino()),
        _ => None,
    }
}

/// The inode `path` leads to from `root`, if every step is cached.
fn walked(cache: &Dcache, root: u64, path: &str) -> Option<u64> {
    match cache.walk(&epoch::pin(), root, path) {
        Ok(Walk::Found(i)) => Some(i.ino()),
        _ => None,
    }
}

/// Answers `(parent, name)` with `spec` for the pairs it lists, "no such file" for others;
/// runs `before` first (a change the filesystem saw while it answered).
struct Answers<'a> {
    answers: &'a [((u64, &'a [u8]), InodeSpec)],
    before: &'a (dyn Fn() + Sync),
}

impl Filesystem for Answers<'_> {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        (self.before)();
        Ok(self.answers.iter().find(|((p, n), _)| (*p, *n) == (parent, name)).map(|(_, s)| *s))
    }
}

/// `Answers` with nothing to do before answering.
fn answers<'a>(answers: &'a [((u64, &'a [u8]), InodeSpec)]) -> Answers<'a> {
    Answers { answers, before: &|| {} }
}

/// Directory 2, first named `old` in the root, answered as `new`: renamed on the server.
const MOVED: &[((u64, &[u8]), InodeSpec)] = &[((ROOT_INO, b"new"), dir(2))];

#[test]
fn a_directory_moved_behind_the_cache_moves_with_what_is_cached_below_it() {
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"old", dir(2)).unwrap();
    cache.add(2, b"child", file(3)).unwrap();
    assert_eq!(
        lend(&answers(MOVED), || cache.resolve(ROOT_INO, b"new")),
        Ok(Resolved::Found(dir(2)))
    );
    assert_eq!(walked(&cache, ROOT_INO, "new/child"), Some(3), "the subtree came along");
    assert_eq!(walked(&cache, ROOT_INO, "old"), None, "the old name is gone");
    let guard = epoch::pin();
    assert_eq!(cache.inode(&guard, 2).unwrap().aliases(), [(ROOT_INO, b"new".to_vec())]);
    assert_eq!(cache.stats().rename_sections, 1);
}

#[test]
fn a_directory_moved_while_its_parent_changed_again_is_filed_expired() {
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"old", dir(2)).unwrap();
    let changed = || cache.dir_changed(ROOT_INO, None).unwrap();
    let fs = Answers { answers: MOVED, before: &changed };
    assert_eq!(lend(&fs, || cache.resolve(ROOT_INO, b"new")), Ok(Resolved::Found(dir(2))));
    // The answer came from before the change the filesystem reported meanwhile: the moved
    // name is there, but not trusted until revalidated.
    assert!(matches!(cache.lookup(&epoch::pin(), ROOT_INO, b"new"), Ok(Lookup::Miss)));
    assert_eq!(
        lend(&answers(MOVED), || cache.resolve(ROOT_INO, b"new")),
        Ok(Resolved::Found(dir(2)))
    );
    assert_eq!(hit(&cache, ROOT_INO, b"new"), Some(2));
}

#[test]
fn the_old_name_is_dropped_not_left_negative() {
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"x", dir(10)).unwrap();
    cache.add(10, b"old", dir(2)).unwrap();
    // The old parent changes while the filesystem answers (say, `old` made again there): a
    // negative filed for `old` now would be trusted though it may be wrong.
    let changed = || cache.dir_changed(10, None).unwrap();
    let fs = Answers { answers: MOVED, before: &changed };
    assert_eq!(lend(&fs, || cache.resolve(ROOT_INO, b"new")), Ok(Resolved::Found(dir(2))));
    assert!(matches!(cache.lookup(&epoch::pin(), 10, b"old"), Ok(Lookup::Miss)));
    assert_eq!(walked(&cache, ROOT_INO, "new"), Some(2));
}

#[test]
fn a_name_created_while_the_filesystem_answered_stands() {
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"old", dir(2)).unwrap();
    let create = || cache.add(ROOT_INO, b"new", file(5)).unwrap();
    let fs = Answers { answers: MOVED, before: &create };
    // The create came after the answer was read: it stands, as against a file answer, and it
    // is what the caller is answered (and what its lookup counts), as the name holds it.
    assert_eq!(lend(&fs, || cache.resolve(ROOT_INO, b"new")), Ok(Resolved::Found(file(5))));
    assert_eq!(hit(&cache, ROOT_INO, b"new"), Some(5));
    assert_eq!(hit(&cache, ROOT_INO, b"old"), Some(2), "nothing moved");
    let guard = epoch::pin();
    assert_eq!(cache.inode(&guard, 5).unwrap().aliases(), [(ROOT_INO, b"new".to_vec())]);
    assert_eq!(cache.inode(&guard, 5).unwrap().lookups(), 2, "the create's and the resolve's");
    assert_eq!(cache.inode(&guard, 2).unwrap().lookups(), 1, "only its add");
}

#[test]
fn a_move_below_itself_drops_the_stale_link_and_closes_no_cycle() {
    // Cached: /a (2) / b (3). On the server: `mv /a/b /b; mv /a /b/a`. The kernel, still
    // holding 3, looks up `a` in it first.
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"a", dir(2)).unwrap();
    cache.add(2, b"b", dir(3)).unwrap();
    let server: &[((u64, &[u8]), InodeSpec)] = &[((3, b"a"), dir(2)), ((ROOT_INO, b"b"), dir(3))];
    assert_eq!(lend(&answers(server), || cache.resolve(3, b"a")), Ok(Resolved::Found(dir(2))));
    let guard = epoch::pin();
    assert_eq!(cache.inode(&guard, 2).unwrap().aliases(), [(3, b"a".to_vec())]);
    assert!(cache.inode(&guard, 3).unwrap().aliases().is_empty(), "the stale link is gone");
    assert_eq!(walked(&cache, 3, "a/b"), None, "no cycle");
    assert_eq!(walked(&cache, 3, ".."), Some(3), "3 is disconnected: its `..` is itself");
    assert_eq!(walked(&cache, ROOT_INO, "a"), None);
    assert_eq!(cache.stats().rename_sections, 1);
    // The next lookups name 3 again, where it is: what was cached below it while it had no
    // name is dropped then (no invalidate of an ancestor could have reached it), and looked
    // up again.
    assert_eq!(
        lend(&answers(server), || cache.resolve(ROOT_INO, b"b")),
        Ok(Resolved::Found(dir(3)))
    );
    assert_eq!(walked(&cache, ROOT_INO, "b/a"), None);
    assert_eq!(lend(&answers(server), || cache.resolve(3, b"a")), Ok(Resolved::Found(dir(2))));
    assert_eq!(walked(&cache, ROOT_INO, "b/a"), Some(2));
}

#[test]
fn a_directory_named_inside_itself_is_refused() {
    let cache = lend::cache(Config::for_entries(64));
    cache.add(ROOT_INO, b"a", dir(2)).unwrap();
    let inside: &[((u64, &[u8]), InodeSpec)] = &[((2, b"self"), dir(2))];
    assert_eq!(lend(&answers(inside), || cache.resolve(2, b"self")), Err(Error::DirectoryAlias(2)));
    assert_eq!(walked(&cache, ROOT_INO, "a"), Some(2));
    assert!(matches!(cache.lookup(&epoch::pin(), 2, b"self"), Ok(Lookup::Miss)));
}

/// Runs `rounds` rounds of: a fresh cache set up by `setup`, `racer` looping on a second
/// thread until `resolve` of `new` in the root (answered as directory 2) returns; `check`
/// then says whether the round went wrong. Returns how many did.
fn races(
    rounds: usize,
    setup: impl Fn(&Dcache),
    racer: impl Fn(&Dcache) + Sync,
    check: impl Fn(&Dcache, Result<Resolved, Error>) -> bool,
) -> usize {
    let wrong = AtomicUsize::new(0);
    for _ in 0..rounds {
        let cache = lend::cache(Config::for_entries(64));
        setup(&cache);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    racer(&cache);
                }
            });
            let r = lend(&answers(MOVED), || cache.resolve(ROOT_INO, b"new"));
            stop.store(true, Ordering::Relaxed);
            if check(&cache, r) {
                wrong.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    wrong.into_inner()
}

#[test]
fn a_name_exchanged_meanwhile_is_not_moved_for_the_directory() {
    // The old name swaps between directory 2 and file 3 while the move runs: whatever the
    // move takes must be 2.
    let wrong = races(
        2000,
        |c| {
            c.add(ROOT_INO, b"old", dir(2)).unwrap();
            c.add(ROOT_INO, b"other", file(3)).unwrap();
        },
        |c| drop(c.rename(ROOT_INO, b"old", ROOT_INO, b"other", RenameMode::Exchange)),
        |c, r| r == Ok(Resolved::Found(dir(2))) && hit(c, ROOT_INO, b"new") != Some(2),
    );
    assert_eq!(wrong, 0, "rounds that named another inode `new`");
}

#[test]
fn a_moved_name_is_not_trusted_after_a_change_announced_meanwhile() {
    // The filesystem reports a change of the root while it answers; a reader that starts only
    // after the report returned must never trust the moved name.
    let wrong = AtomicUsize::new(0);
    for _ in 0..2000 {
        let cache = lend::cache(Config::for_entries(64));
        cache.add(ROOT_INO, b"old", dir(2)).unwrap();
        let (announced, done) = (AtomicBool::new(false), AtomicBool::new(false));
        let announce = || {
            cache.dir_changed(ROOT_INO, None).unwrap();
            announced.store(true, Ordering::SeqCst);
        };
        let fs = Answers { answers: MOVED, before: &announce };
        let trusted = std::thread::scope(|s| {
            let reader = s.spawn(|| {
                while !announced.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                let mut trusted = false;
                while !done.load(Ordering::SeqCst) {
                    trusted |= hit(&cache, ROOT_INO, b"new").is_some();
                }
                trusted
            });
            assert_eq!(lend(&fs, || cache.resolve(ROOT_INO, b"new")), Ok(Resolved::Found(dir(2))));
            done.store(true, Ordering::SeqCst);
            reader.join().unwrap()
        });
        wrong.fetch_add(usize::from(trusted), Ordering::Relaxed);
    }
    assert_eq!(wrong.into_inner(), 0, "rounds whose reader trusted the moved name");
}

/// Every name is directory 2.
struct AllTwo;

impl Filesystem for AllTwo {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(Some(dir(2)))
    }
}

/// Rounds in which directory 2 (first named `n0` in the root) ended with two names, `moves`
/// moving it from name to name while another thread tries to `add` it as `x`.
fn two_names(rounds: usize, moves: impl Fn(&Dcache, usize)) -> usize {
    let mut wrong = 0;
    for _ in 0..rounds {
        let cache = lend::cache(Config::for_entries(64));
        cache.add(ROOT_INO, b"n0", dir(2)).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) && cache.add(ROOT_INO, b"x", dir(2)).is_err() {
                    std::hint::spin_loop();
                }
            });
            for i in 0..50 {
                moves(&cache, i);
            }
            stop.store(true, Ordering::Relaxed);
        });
        wrong += usize::from(cache.inode(&epoch::pin(), 2).unwrap().aliases().len() > 1);
    }
    wrong
}

#[test]
fn a_moving_directory_never_gets_a_second_name() {
    let name = |i: usize| format!("n{i}").into_bytes();
    let by_rename = two_names(300, |c, i| {
        drop(c.rename(ROOT_INO, &name(i), ROOT_INO, &name(i + 1), RenameMode::Replace));
    });
    assert_eq!(by_rename, 0, "rounds where rename's moves let an add name it twice");
    let by_resolve =
        two_names(300, |c, i| drop(lend(&AllTwo, || c.resolve(ROOT_INO, &name(i + 1)))));
    assert_eq!(by_resolve, 0, "rounds where resolve's moves let an add name it twice");
}

/// Rounds in which `(10, "new")` ended naming directory 2 while directory 10 (forgotten and
/// added again by another thread meanwhile) does not list it: `moves` filed it under the
/// number of a directory no longer cached.
fn filed_under_forgotten(rounds: usize, moves: impl Fn(&Dcache)) -> usize {
    let mut wrong = 0;
    for _ in 0..rounds {
        let cache = lend::cache(Config::for_entries(64));
        cache.add(ROOT_INO, b"old", dir(2)).unwrap();
        cache.add(ROOT_INO, b"p", dir(10)).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    drop(cache.forget(10, 1));
                    drop(cache.add(ROOT_INO, b"p", dir(10)));
                }
            });
            moves(&cache);
            stop.store(true, Ordering::Relaxed);
        });
        drop(cache.add(ROOT_INO, b"p", dir(10)));
        let listed = cache.children(10).unwrap().iter().any(|c| c.name == b"new");
        wrong += usize::from(hit(&cache, 10, b"new") == Some(2) && !listed);
    }
    wrong
}

#[test]
fn a_move_into_a_directory_forgotten_meanwhile_files_nothing_under_its_number() {
    let into_ten: &[((u64, &[u8]), InodeSpec)] = &[((10, b"new"), dir(2))];
    let by_rename = filed_under_forgotten(2000, |c| {
        drop(c.rename(ROOT_INO, b"old", 10, b"new", RenameMode::Replace));
    });
    assert_eq!(by_rename, 0, "rounds where rename filed under a forgotten directory");
    let by_resolve =
        filed_under_forgotten(2000, |c| drop(lend(&answers(into_ten), || c.resolve(10, b"new"))));
    assert_eq!(by_resolve, 0, "rounds where resolve filed under a forgotten directory");
}
