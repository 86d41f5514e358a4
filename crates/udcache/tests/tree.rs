//! Children maps, tree walks, invalidation, shrink, exchange, and listings through the cache.

mod lend;

use lend::lend;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use udcache::ManualClock;
use udcache::readdir::{DType, Entry, Fill, FillError, Verifier};
use udcache::{
    Config, Dcache, Errno, Error, FileType, Filesystem, InodeSpec, Lookup, ROOT_INO, RenameMode,
    Resolved, Timeouts, Visit, Walk, epoch,
};

fn dir(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Directory, fs_data: ino }
}

fn file(ino: u64) -> InodeSpec {
    InodeSpec { ino, kind: FileType::Regular, fs_data: ino }
}

fn names(cache: &Dcache, d: u64) -> Vec<String> {
    let mut v: Vec<_> = cache
        .children(d)
        .unwrap()
        .into_iter()
        .map(|c| String::from_utf8(c.name).unwrap())
        .collect();
    v.sort();
    v
}

fn lookup(cache: &Dcache, parent: u64, name: &str) -> Option<u64> {
    let g = epoch::pin();
    match cache.lookup(&g, parent, name.as_bytes()).unwrap() {
        Lookup::Hit(i) => Some(i.ino()),
        Lookup::Negative => Some(0),
        Lookup::Miss => None,
    }
}

#[test]
fn children_follow_every_change_and_skip_negatives() {
    let cache = lend::cache(Config::for_entries(4096));
    cache.add(ROOT_INO, b"d", dir(2)).unwrap();
    cache.add(2, b"a", file(3)).unwrap();
    cache.add(2, b"b", file(4)).unwrap();
    for i in 0..500 {
        cache.add_negative(2, format!("miss{i}").as_bytes()).unwrap();
    }
    assert_eq!(names(&cache, 2), ["a", "b"]);
    cache.unlink(2, b"a").unwrap();
    assert_eq!(names(&cache, 2), ["b"]);
    cache.add(2, b"a", file(5)).unwrap(); // instantiates the negative left by unlink
    cache.rename(2, b"a", ROOT_INO, b"moved", RenameMode::Replace).unwrap();
    assert_eq!(names(&cache, 2), ["b"]);
    assert_eq!(names(&cache, ROOT_INO), ["d", "moved"]);
    cache.add(2, b"hard", file(4)).unwrap(); // a second name of inode 4
    assert_eq!(names(&cache, 2), ["b", "hard"]);
    assert_eq!(cache.children(77).unwrap_err(), Error::UnknownInode(77));
    assert_eq!(cache.children(4).unwrap_err(), Error::NotDirectory(4));
    cache.forget(4, 2).unwrap(); // both names go with the inode
    assert_eq!(names(&cache, 2), Vec::<String>::new());
    cache.verify().unwrap();
}

#[test]
fn walk_tree_steers_with_skip_skip_siblings_and_quit() {
    let cache = lend::cache(Config::for_entries(256));
    // root/{a,b,c}; each holds x, y, z, and a/x holds deep.
    for (k, n) in ["a", "b", "c"].iter().enumerate() {
        let d = 10 + k as u64 * 10;
        cache.add(ROOT_INO, n.as_bytes(), dir(d)).unwrap();
        for (j, m) in ["x", "y", "z"].iter().enumerate() {
            let spec = if j == 0 { dir(d + 1) } else { file(d + 1 + j as u64) };
            cache.add(d, m.as_bytes(), spec).unwrap();
        }
    }
    cache.add(11, b"deep", file(99)).unwrap();
    let run = |f: &mut dyn FnMut(usize, &str) -> Visit| {
        let mut seen = 0;
        cache
            .walk_tree(ROOT_INO, |depth, _p, c| {
                seen += 1;
                f(depth, std::str::from_utf8(&c.name).unwrap())
            })
            .unwrap();
        seen
    };
    assert_eq!(run(&mut |_, _| Visit::Continue), 3 + 9 + 1);
    assert_eq!(run(&mut |_, _| Visit::Skip), 3);
    // Skip siblings at depth 2: each directory's first child only, and what is below it.
    let mut depths = HashMap::new();
    let n = run(&mut |depth, _| {
        *depths.entry(depth).or_insert(0) += 1;
        if depth == 2 { Visit::SkipSiblings } else { Visit::Continue }
    });
    assert_eq!(depths[&2], 3, "one child per directory at depth 2");
    assert_eq!(n, 3 + 3 + depths.get(&3).copied().unwrap_or(0));
    let mut count = 0;
    assert_eq!(
        run(&mut |_, _| {
            count += 1;
            if count == 4 { Visit::Quit } else { Visit::Continue }
        }),
        4
    );
    assert!(cache.walk_tree(99, |_, _, _| Visit::Continue).is_err());
}

#[test]
fn invalidate_drops_a_subtree_with_its_negatives_and_keeps_inodes() {
    let cache = lend::cache(Config::for_entries(1024));
    cache.add(ROOT_INO, b"top", dir(2)).unwrap();
    cache.add(2, b"sub", dir(3)).unwrap();
    cache.add(3, b"f", file(4)).unwrap();
    cache.add_negative(3, b"nope").unwrap();
    cache.add_negative(2, b"nada").unwrap();
    cache.add(ROOT_INO, b"other", file(5)).unwrap();
    cache.add_negative(ROOT_INO, b"kept-miss").unwrap();
    cache.invalidate(ROOT_INO, b"top").unwrap();
    for (p, n) in [(ROOT_INO, "top"), (2, "sub"), (3, "f"), (3, "nope"), (2, "nada")] {
        assert_eq!(lookup(&cache, p, n), None, "({p}, {n}) survived");
    }
    assert_eq!(lookup(&cache, ROOT_INO, "other"), Some(5));
    assert_eq!(lookup(&cache, ROOT_INO, "kept-miss"), Some(0));
    assert_eq!(cache.stats().nr_inodes, 5, "inodes stay until forget");
    // A negative and a file can be invalidated alone; nothing cached is NotFound.
    cache.invalidate(ROOT_INO, b"kept-miss").unwrap();
    cache.invalidate(ROOT_INO, b"other").unwrap();
    assert_eq!(cache.invalidate(ROOT_INO, b"other"), Err(Error::NotFound));
    assert!(matches!(cache.invalidate(ROOT_INO, b"a/b"), Err(Error::InvalidName(_))));
    // The directory can come back under its name, children empty.
    cache.add(ROOT_INO, b"top", dir(2)).unwrap();
    assert!(cache.children(2).unwrap().is_empty());
    cache.verify().unwrap();
}

#[test]
fn forgetting_a_directory_drops_what_was_cached_below_it() {
    let cache = lend::cache(Config::for_entries(256));
    cache.add(ROOT_INO, b"d", dir(2)).unwrap();
    cache.add_negative(2, b"stale").unwrap();
    cache.add(2, b"f", file(3)).unwrap();
    cache.add(2, b"gone", file(4)).unwrap();
    cache.unlink(2, b"gone").unwrap(); // a negative made by unlink, not add_negative
    cache.unlink(ROOT_INO, b"d").unwrap();
    cache.forget(2, 1).unwrap();
    // Inode number 2 reused for a new directory: none of the old one's names show through.
    cache.add(ROOT_INO, b"e", dir(2)).unwrap();
    assert_eq!(lookup(&cache, 2, "stale"), None);
    assert_eq!(lookup(&cache, 2, "f"), None);
    assert_eq!(lookup(&cache, 2, "gone"), None);
    assert!(cache.children(2).unwrap().is_empty());
}

#[test]
fn a_validity_beyond_the_clock_range_does_not_wrap_into_the_past() {
    let cache = lend::cache(Config::for_entries(16));
    let far = std::time::Duration::from_secs(1 << 40);
    cache.setattr(ROOT_INO, &udcache::Attr::default(), far).unwrap();
    assert!(cache.getattr(ROOT_INO).unwrap().is_some());
}

#[test]
fn shrink_takes_negatives_first_then_positives_with_their_bookkeeping() {
    let cache = lend::cache(Config::for_entries(1024));
    for i in 0..10u64 {
        cache.add(ROOT_INO, format!("f{i}").as_bytes(), file(10 + i)).unwrap();
        cache.add_negative(ROOT_INO, format!("n{i}").as_bytes()).unwrap();
    }
    assert_eq!(cache.shrink(10), 10);
    let s = cache.stats();
    assert_eq!((s.nr_dentry, s.nr_negative), (10, 0), "negatives go first");
    assert_eq!(cache.shrink(4), 4);
    assert_eq!(cache.children(ROOT_INO).unwrap().len(), 6);
    for i in 10..20 {
        let aliases = epoch::pin();
        let inode = cache.inode(&aliases, i).expect("inodes stay");
        for (p, n) in inode.aliases() {
            assert!(matches!(cache.lookup(&aliases, p, &n), Ok(Lookup::Hit(j)) if j.ino() == i));
        }
    }
    assert_eq!(cache.shrink(100), 6);
    assert_eq!(cache.shrink(1), 0);
    cache.verify().unwrap();
}

#[test]
fn exchange_swaps_two_names_and_directory_parents() {
    let cache = lend::cache(Config::for_entries(256));
    cache.add(ROOT_INO, b"a", dir(2)).unwrap();
    cache.add(ROOT_INO, b"b", dir(3)).unwrap();
    cache.add(2, b"x", dir(4)).unwrap();
    cache.add(3, b"y", file(5)).unwrap();
    cache.add(4, b"z", file(6)).unwrap();
    cache.rename(2, b"x", 3, b"y", RenameMode::Exchange).unwrap();
    assert_eq!(lookup(&cache, 2, "x"), Some(5));
    assert_eq!(lookup(&cache, 3, "y"), Some(4));
    // A walk step takes the next directory's number and type from the dentry: both swapped.
    let g = epoch::pin();
    assert!(matches!(cache.walk(&g, ROOT_INO, "b/y/../y"), Ok(Walk::Found(i)) if i.ino() == 4));
    assert!(matches!(cache.walk(&g, ROOT_INO, "b/y/z"), Ok(Walk::Found(i)) if i.ino() == 6));
    assert!(
        matches!(cache.walk(&g, ROOT_INO, "a/x/z"), Ok(Walk::NotDir { inode, at: 4 }) if inode.ino() == 5)
    );
    drop(g);
    assert_eq!(names(&cache, 2), ["x"]);
    assert_eq!(
        cache.rename(2, b"x", 3, b"missing", RenameMode::Exchange),
        Err(Error::NotFound),
        "exchange needs two positive names"
    );
    assert_eq!(lookup(&cache, 2, "x"), Some(5), "a refused exchange changes nothing");
}

/// A directory whose listing counts calls; names `e0..`, inode 100 + i, cookie i + 1.
struct Listed {
    entries: Mutex<Vec<String>>,
    verifier: AtomicUsize,
    readdirs: AtomicUsize,
    lookups: AtomicUsize,
}

impl Filesystem for Listed {
    fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let e = self.entries.lock().unwrap();
        Ok(e.iter().position(|n| n.as_bytes() == name).map(|i| file(100 + i as u64)))
    }

    fn readdir(&self, _dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        self.readdirs.fetch_add(1, Ordering::Relaxed);
        let e = self.entries.lock().unwrap();
        if cookie > e.len() as u64 {
            return Err(FillError::UnknownCookie);
        }
        let entries: Vec<_> = (cookie as usize..e.len())
            .take(max)
            .map(|i| Entry::new(&e[i], 100 + i as u64, libc_dt_reg(), i as u64 + 1))
            .collect();
        let eof = entries.last().is_none_or(|l| l.cookie == e.len() as u64);
        let verifier = Verifier::new(self.verifier.load(Ordering::Relaxed) as u64);
        Ok(Fill { entries, eof, verifier })
    }
}

fn libc_dt_reg() -> DType {
    DType::REG
}

/// The root's whole listing through the cache, `batch` entries per call: the names in order.
fn list_all(cache: &Dcache, fs: &Arc<dyn Filesystem>, batch: usize) -> Vec<Arc<[u8]>> {
    let (mut cookie, mut seen) = (0, Vec::new());
    loop {
        let b = lend(&**fs, || cache.readdir(ROOT_INO, cookie, batch)).unwrap();
        seen.extend(b.entries.iter().map(|e| e.name.clone()));
        cookie = b.entries.last().map_or(cookie, |e| e.cookie);
        if b.eof {
            return seen;
        }
    }
}

#[test]
fn readdir_is_cached_and_a_complete_listing_answers_misses() {
    let fs = Arc::new(Listed {
        entries: Mutex::new((0..50).map(|i| format!("e{i}")).collect()),
        verifier: AtomicUsize::new(1),
        readdirs: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
    });
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let cache = lend::cache(Config::for_entries(1024).with_readdir(64, 16));
    let seen = list_all(&cache, &dynfs, 7);
    assert_eq!(seen.len(), 50);
    let calls = fs.readdirs.load(Ordering::Relaxed);
    assert_eq!(lend(&*dynfs, || cache.readdir(ROOT_INO, 0, 50)).unwrap().entries.len(), 50);
    assert_eq!(fs.readdirs.load(Ordering::Relaxed), calls, "a second pass is served cached");
    // Complete: a name not listed is negative without a call or a negative dentry.
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"zzz")), Ok(Resolved::Negative));
    assert_eq!(fs.lookups.load(Ordering::Relaxed), 0);
    assert_eq!((cache.stats().complete_dir_negatives, cache.stats().nr_negative), (1, 0));
    // A listed name still asks the filesystem (the listing has no fs data), and that lookup
    // leaves the listing complete.
    assert!(
        matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"e3")), Ok(Resolved::Found(s)) if s.ino == 103)
    );
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"zzz2")), Ok(Resolved::Negative));
    assert_eq!(fs.lookups.load(Ordering::Relaxed), 1);
    // A create of an unlisted name changes the directory: misses ask again.
    fs.entries.lock().unwrap().push("new".into());
    cache.add(ROOT_INO, b"new", file(150)).unwrap();
    assert!(matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"zzz3")), Ok(Resolved::Negative)));
    assert_eq!(fs.lookups.load(Ordering::Relaxed), 2, "the stale listing no longer answers");
    // Bad input.
    assert!(matches!(lend(&*dynfs, || cache.readdir(ROOT_INO, 12345, 5)), Err(Error::Readdir(_))));
    assert!(matches!(lend(&*dynfs, || cache.readdir(777, 0, 5)), Err(Error::UnknownInode(777))));
    cache.add(ROOT_INO, b"plain", file(151)).unwrap();
    assert!(matches!(lend(&*dynfs, || cache.readdir(151, 0, 5)), Err(Error::NotDirectory(151))));
    assert_eq!(cache.dir_changed(151, None), Err(Error::NotDirectory(151)));
    cache.dir_changed(ROOT_INO, Some(2)).unwrap();
}

/// A listing has no age: with a negative timeout configured, its "absent" would keep a name
/// created behind the cache missing for ever, past the timeout the filesystem asked for. So a
/// miss asks the filesystem, whose negative answer expires like any other.
#[test]
fn with_a_negative_timeout_a_complete_listing_does_not_answer_misses() {
    let fs = Arc::new(Listed {
        entries: Mutex::new(vec!["e0".into()]),
        verifier: AtomicUsize::new(1),
        readdirs: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
    });
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let clock = Arc::new(ManualClock::new());
    let timeouts = Timeouts { negative: Duration::from_secs(1), ..Timeouts::FOREVER };
    let config = Config::for_entries(64).with_timeouts(timeouts).with_clock(clock.clone());
    let cache = lend::cache(config);
    assert_eq!(list_all(&cache, &dynfs, 10).len(), 1);
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"e1")), Ok(Resolved::Negative));
    assert_eq!(fs.lookups.load(Ordering::Relaxed), 1, "asked, not answered by the listing");
    assert_eq!((cache.stats().complete_dir_negatives, cache.stats().nr_negative), (0, 1));
    // Created behind the cache's back: once the negative dentry expires, the name is found.
    fs.entries.lock().unwrap().push("e1".into());
    clock.advance(Duration::from_secs(2));
    assert!(
        matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"e1")), Ok(Resolved::Found(s)) if s.ino == 101)
    );
    assert_eq!(cache.stats().complete_dir_negatives, 0);
}

/// A directory in hash order, like ext4's: each name's cookie is fixed, and a created name
/// lands between names already listed.
struct HashOrdered {
    entries: Mutex<Vec<(u64, String)>>,
}

impl Filesystem for HashOrdered {
    fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let e = self.entries.lock().unwrap();
        Ok(e.iter().find(|(_, n)| n.as_bytes() == name).map(|(c, _)| file(1000 + c)))
    }

    fn readdir(&self, _dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let mut e = self.entries.lock().unwrap().clone();
        e.sort();
        let entries: Vec<_> = e
            .iter()
            .filter(|(c, _)| *c > cookie)
            .take(max)
            .map(|(c, n)| Entry::new(n, 1000 + c, libc_dt_reg(), *c))
            .collect();
        let eof = entries.last().is_none_or(|l| l.cookie == e.last().map_or(0, |(c, _)| *c));
        Ok(Fill { entries, eof, verifier: Verifier::new(1) })
    }
}

#[test]
fn a_created_name_is_listed_after_a_partial_listing() {
    let fs = Arc::new(HashOrdered {
        entries: Mutex::new((1..=10).map(|i| (i * 10, format!("a{i}"))).collect()),
    });
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let cache = lend::cache(Config::for_entries(1024).with_readdir(64, 4));
    // A reader stops after the first batch: the listing holds part of the directory.
    let first = lend(&*dynfs, || cache.readdir(ROOT_INO, 0, 3)).unwrap();
    assert_eq!(first.entries.len(), 3);
    assert!(!first.eof);
    // A name created between two listed ones. Its dentry says nothing about the listing's
    // pages, and the listing cannot tell a created name from one it has not read: it must not
    // serve the pages read before the create.
    fs.entries.lock().unwrap().push((15, "new".into()));
    cache.add(ROOT_INO, b"new", file(1015)).unwrap();
    let seen = list_all(&cache, &dynfs, 3);
    assert_eq!(seen.len(), 11, "{seen:?}");
    assert!(seen.iter().any(|n| &n[..] == b"new"), "{seen:?}");
}

/// The root listed completely from a `Listed` filesystem holding `e0..e{n-1}`.
fn listed_completely(n: usize) -> (Arc<Listed>, Arc<dyn Filesystem>, Dcache) {
    let fs = Arc::new(Listed {
        entries: Mutex::new((0..n).map(|i| format!("e{i}")).collect()),
        verifier: AtomicUsize::new(1),
        readdirs: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
    });
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let cache = lend::cache(Config::for_entries(1024).with_readdir(64, 16));
    assert_eq!(list_all(&cache, &dynfs, 16).len(), n);
    (fs, dynfs, cache)
}

#[test]
fn invalidate_takes_back_what_a_listing_answers_where_no_dentry_is() {
    let (fs, dynfs, cache) = listed_completely(3);
    // Absent from the complete listing: negative with no dentry and no call.
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"c")), Ok(Resolved::Negative));
    // Created behind the cache and announced: the next lookup asks the filesystem.
    fs.entries.lock().unwrap().push("c".into());
    cache.invalidate(ROOT_INO, b"c").unwrap();
    assert!(
        matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"c")), Ok(Resolved::Found(s)) if s.ino == 103)
    );
    // Listed, never looked up, removed behind the cache: the next listing drops it.
    assert_eq!(list_all(&cache, &dynfs, 16).len(), 4);
    fs.entries.lock().unwrap()[0] = "renamed".into();
    cache.invalidate(ROOT_INO, b"e0").unwrap();
    assert!(!list_all(&cache, &dynfs, 16).iter().any(|n| &**n == b"e0"));
    // A directory with no listing and no dentry of the name: nothing answers for it.
    cache.add(ROOT_INO, b"d", dir(2)).unwrap();
    assert_eq!(cache.invalidate(2, b"zzz"), Err(Error::NotFound));
}

#[test]
fn invalidate_takes_back_a_page_of_an_incomplete_listing() {
    let (fs, dynfs, cache) = listed_completely(3);
    fs.entries.lock().unwrap().extend((3..40).map(|i| format!("e{i}")));
    cache.dir_changed(ROOT_INO, None).unwrap();
    // One page read (16 of 40): the listing is incomplete, and its page names e1.
    let first = lend(&*dynfs, || cache.readdir(ROOT_INO, 0, 16)).unwrap();
    assert!(!first.eof && first.entries.iter().any(|e| &*e.name == b"e1"));
    // e1, never looked up, removed behind the cache: no dentry, so unlink has nothing to do,
    // and invalidate takes the page back.
    fs.entries.lock().unwrap().retain(|n| n != "e1");
    assert_eq!(cache.unlink(ROOT_INO, b"e1"), Err(Error::NotFound));
    cache.invalidate(ROOT_INO, b"e1").unwrap();
    let again = list_all(&cache, &dynfs, 16);
    assert_eq!(again.len(), 39);
    assert!(!again.iter().any(|n| &**n == b"e1"));
}

/// A `Listed` whose next readdir at cookie 0, once armed, meets the test at `gate` after it
/// read the directory and again before it returns: the test changes the directory between.
struct Gated {
    listed: Listed,
    armed: std::sync::atomic::AtomicBool,
    gate: std::sync::Barrier,
}

impl Filesystem for Gated {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        self.listed.lookup(parent, name)
    }

    fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let fill = self.listed.readdir(dir, cookie, max);
        if cookie == 0 && self.armed.swap(false, Ordering::SeqCst) {
            self.gate.wait();
            self.gate.wait();
        }
        fill
    }
}

#[test]
fn invalidate_during_a_fill_that_read_the_old_directory_keeps_it_uncached() {
    let listed = Listed {
        entries: Mutex::new((0..3).map(|i| format!("e{i}")).collect()),
        verifier: AtomicUsize::new(1),
        readdirs: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
    };
    let fs = Arc::new(Gated { listed, armed: true.into(), gate: std::sync::Barrier::new(2) });
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let cache = lend::cache(Config::for_entries(1024).with_readdir(64, 16));
    let announced = std::thread::scope(|s| {
        let reader = s.spawn(|| lend(&*dynfs, || cache.readdir(ROOT_INO, 0, 16)).unwrap());
        fs.gate.wait(); // the fill has read e0..e2
        // Created behind the cache, announced by invalidating the name alone.
        fs.listed.entries.lock().unwrap().push("c".into());
        let announced = cache.invalidate(ROOT_INO, b"c");
        fs.gate.wait();
        assert_eq!(reader.join().unwrap().entries.len(), 3);
        announced
    });
    // The fill read the directory before the change: it must not complete the listing, which
    // would then answer that c does not exist.
    assert!(
        matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"c")), Ok(Resolved::Found(s)) if s.ino == 103)
    );
    assert_eq!(announced, Ok(()));
}

#[test]
fn a_change_to_a_shrunk_name_is_announced_by_invalidating_it() {
    let (fs, dynfs, cache) = listed_completely(3);
    assert!(matches!(lend(&*fs, || cache.resolve(ROOT_INO, b"e1")), Ok(Resolved::Found(_))));
    assert_eq!(cache.shrink(100), 1, "the dentry of e1 goes; the listing stays");
    // The filesystem removes e1: the cache has no dentry to unlink, and says so.
    fs.entries.lock().unwrap().remove(1);
    assert_eq!(cache.unlink(ROOT_INO, b"e1"), Err(Error::NotFound));
    // Invalidating it, as `unlink`'s docs ask, takes it out of the cached listing.
    cache.invalidate(ROOT_INO, b"e1").unwrap();
    let names = list_all(&cache, &dynfs, 16);
    assert!(!names.iter().any(|n| &**n == b"e1"), "{names:?}");
}

/// Directory 3 loses its name to `shrink` while a name below it stays cached (the kernel
/// still holds 3 and looks `f` up in it). An `invalidate` of an ancestor cannot reach what is
/// below a directory with no name; naming 3 again must not bring it back.
#[test]
fn what_was_cached_below_a_nameless_directory_does_not_come_back_with_its_name() {
    let cache = lend::cache(Config::for_entries(1024));
    let hit = |p, n: &[u8]| matches!(cache.lookup(&epoch::pin(), p, n), Ok(Lookup::Hit(_)));
    cache.add(ROOT_INO, b"top", dir(2)).unwrap();
    cache.add(2, b"sub", dir(3)).unwrap();
    cache.add(3, b"f", file(4)).unwrap();
    assert_eq!(cache.shrink(usize::MAX), 3);
    cache.add(3, b"f", file(4)).unwrap(); // looked up in 3, which has no name now
    cache.add(ROOT_INO, b"top", dir(2)).unwrap();
    assert!(!hit(2, b"sub") && hit(3, b"f"));
    // The filesystem says everything below `top` changed, then answers the names again.
    cache.invalidate(ROOT_INO, b"top").unwrap();
    cache.add(ROOT_INO, b"top", dir(2)).unwrap();
    cache.add(2, b"sub", dir(3)).unwrap();
    assert!(!hit(3, b"f"), "(3, f) outlived the invalidate of its ancestor");
    assert!(hit(2, b"sub"));
}

/// Refuses every read of its directory.
struct Unreadable;

impl Filesystem for Unreadable {
    fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(None)
    }

    fn readdir(&self, _: u64, cookie: u64, _: usize) -> Result<Fill, FillError> {
        // EACCES at the start; a cookie it never issued anywhere else.
        Err(if cookie == 0 { FillError::Io(13) } else { FillError::UnknownCookie })
    }
}

/// A refused `readdir` changes nothing: the listing it made to read through holds nothing, so
/// `invalidate` of a name no dentry holds still finds nothing to take back.
#[test]
fn a_failed_readdir_leaves_no_listing_behind() {
    let cache = lend::cache(Config::for_entries(64));
    let fs: Arc<dyn Filesystem> = Arc::new(Unreadable);
    cache.add(ROOT_INO, b"d", dir(2)).unwrap();
    for cookie in [0, 12345] {
        assert!(
            matches!(lend(&*fs, || cache.readdir(2, cookie, 8)), Err(Error::Readdir(_))),
            "{cookie}"
        );
        assert_eq!(cache.invalidate(2, b"x"), Err(Error::NotFound), "after cookie {cookie}");
    }
    assert_eq!(cache.stats().readdir_misses, 0);
}

/// A directory of `n0`..`n2` (the reference backend: verifier 1, cookie of `nK` is K + 1).
struct Mem(udcache::readdir::reference::MemDir);

impl Filesystem for Mem {
    fn lookup(&self, _: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let id = udcache::readdir::reference::MemDir::id_of(name).filter(|&i| self.0.contains(i));
        Ok(id.map(|i| file(100 + i)))
    }

    fn readdir(&self, _: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        udcache::readdir::Backend::fill(&self.0, cookie, max)
    }
}

/// A fill that brings a new verifier (a name created behind the cache, announced to no one)
/// is a change of the directory: a negative dentry filed before it is no longer trusted, so
/// the name the listing now shows is not answered "absent".
#[test]
fn a_readdir_that_meets_a_new_verifier_distrusts_older_negatives() {
    use udcache::readdir::reference::{CookieStyle, MemDir};
    let fs = Arc::new(Mem(MemDir::with_entries(CookieStyle::Ordered, 100, 0..3)));
    let dynfs: Arc<dyn Filesystem> = fs.clone();
    let cache = lend::cache(Config::for_entries(64));
    assert_eq!(list_all(&cache, &dynfs, 16).len(), 3);
    cache.add_negative(ROOT_INO, b"n50").unwrap(); // the filesystem's "no such name", filed
    fs.0.insert(50).unwrap();
    // Resumed at a cookie the cache does not hold: the fill reads the directory as it is now.
    let batch = lend(&*dynfs, || cache.readdir(ROOT_INO, 50, 10)).unwrap();
    assert_eq!(&*batch.entries[0].name, b"n50");
    assert_eq!(lend(&*fs, || cache.resolve(ROOT_INO, b"n50")), Ok(Resolved::Found(file(150))));
}
