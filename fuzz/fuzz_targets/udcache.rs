//! Fuzz the composed cache `udcache`: sequences of add / add_negative (one, or a burst in one
//! directory) / unlink / rename
//! (replace, no-replace, exchange) / lookup / walk / resolve / forget / count_lookup /
//! invalidate / shrink / children / walk_tree over a small universe of directories, names (bad
//! ones included: empty, `.`, `..`, with `/` or NUL, longer than 255 bytes) and inode numbers,
//! against a model: the map `(parent, name) -> inode or negative` and each inode's type, data,
//! lookup count and `..`.
//!
//! Every operation's result must be the model's, refusals included (a refusal changes
//! nothing). After every step the cache is compared with the model: a cached positive dentry
//! names the model's inode (the object the inode table holds), a cached negative is negative
//! in the model, and nothing is cached that the model lacks (counts agree). The cache may
//! forget: a negative may be evicted by the bounding rules at any time, and a positive may go
//! only in `shrink` (at most as many as it reports); the model forgets them too. Each inode's
//! aliases, lookup count and `..`, each directory's children and `Dcache::verify` are checked.
//!
//! A directory may become its own ancestor (a rename into its own subtree, an add of a
//! nameless directory below itself): the cache leaves that check to the filesystem (see
//! `Dcache::rename`), but must still not loop or lose track (`walk_tree` enters each directory
//! once).
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache::{
    Child, Config, Dcache, Errno, Error, FileType, Filesystem, InodeSpec, InvalidName, Lookup,
    ROOT_INO, RenameMode, Resolved, UnlinkPolicy, Visit, Walk, epoch,
};

/// The rules for a name, written out here rather than taken from the library (its
/// `validate_name` is part of what this target checks), in the library's order of precedence.
fn name_rules(name: &[u8]) -> Result<(), Error> {
    let rules = [
        (name.is_empty(), InvalidName::Empty),
        (matches!(name, b"." | b".."), InvalidName::Dot),
        (name.len() > 255, InvalidName::TooLong(name.len())),
        (name.contains(&b'/'), InvalidName::Slash),
        (name.contains(&0), InvalidName::Nul),
    ];
    match rules.into_iter().find(|(broken, _)| *broken) {
        Some((_, why)) => Err(Error::InvalidName(why)),
        None => Ok(()),
    }
}

/// An inode number: the root (often: most names are made there), a few more, and two odd ones.
#[derive(Arbitrary, Clone, Copy, Debug)]
struct Ino(u8);

impl Ino {
    fn get(self) -> u64 {
        match self.0 % 16 {
            0..=2 => ROOT_INO,
            3..=5 => 2,
            6..=8 => 3,
            9 | 10 => 4,
            11 | 12 => 5,
            13 => 6,
            14 => 0,
            _ => u64::MAX,
        }
    }
}

/// A name: from a table of good and bad ones (the first few most often), or raw bytes.
#[derive(Arbitrary, Clone, Debug)]
enum Name {
    Pick(u8),
    Raw(Vec<u8>),
}

impl Name {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Name::Pick(i) => match i % 20 {
                0..=3 => b"a".to_vec(),
                4..=6 => b"b".to_vec(),
                7 | 8 => b"c".to_vec(),
                9 => b"...".to_vec(),
                10 => vec![b'm'; 255],
                11 => vec![0xff, 0xfe],
                12 => Vec::new(),
                13 => b".".to_vec(),
                14 => b"..".to_vec(),
                15 => b"a/b".to_vec(),
                16 => b"a\0".to_vec(),
                17 => vec![b'n'; 256],
                18 => b"/".to_vec(),
                _ => b"d".to_vec(),
            },
            Name::Raw(raw) => raw.iter().copied().take(300).collect(),
        }
    }
}

/// A file type: mostly the one the number usually has (2 and 3 directories, 4 a symlink,
/// the rest files), so that numbers meet their own kind more often than not.
#[derive(Arbitrary, Clone, Copy, Debug)]
struct Kind(u8);

fn spec(ino: Ino, kind: Kind, data: u8) -> InodeSpec {
    let ino = ino.get();
    let kind = match (kind.0 % 14, ino) {
        (0..=9, 2 | 3) | (10, _) => FileType::Directory,
        (0..=9, 4) | (12, _) => FileType::Symlink,
        (13, _) => FileType::Other,
        _ => FileType::Regular,
    };
    InodeSpec { ino, kind, fs_data: u64::from(data) }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Mode {
    Replace,
    NoReplace,
    Exchange,
}

/// A path component.
#[derive(Arbitrary, Clone, Debug)]
enum Part {
    Name(Name),
    Dot,
    DotDot,
    Empty,
}

/// What the model filesystem answers one `resolve` miss.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Answer {
    Exists { ino: Ino, kind: Kind, data: u8 },
    Absent,
    Fail(i32),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Add { dir: Ino, name: Name, ino: Ino, kind: Kind, data: u8 },
    AddNegative { dir: Ino, name: Name },
    Misses { dir: Ino, count: u8 },
    Unlink { dir: Ino, name: Name },
    Rename { from: Ino, old: Name, to: Ino, new: Name, mode: Mode },
    Lookup { dir: Ino, name: Name },
    Walk { root: Ino, slash: bool, parts: Vec<Part> },
    Resolve { dir: Ino, name: Name, answer: Answer },
    Forget { ino: Ino, n: u8 },
    CountLookup { ino: Ino },
    Invalidate { dir: Ino, name: Name },
    Shrink { n: u8 },
    Children { dir: Ino },
    WalkTree { root: Ino, steer: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    buckets: u8,
    cap: Option<u8>,
    drop_on_unlink: bool,
    ops: Vec<Op>,
}

/// A model inode.
#[derive(Clone, Debug)]
struct MInode {
    spec: InodeSpec,
    lookups: u64,
    /// `..`, for directories.
    parent: u64,
}

type Key = (u64, Vec<u8>);

/// The model: what the cache holds.
#[derive(Clone, Debug)]
struct Model {
    /// `Some(ino)`: positive; `None`: negative.
    dentries: BTreeMap<Key, Option<u64>>,
    inodes: BTreeMap<u64, MInode>,
    policy: UnlinkPolicy,
}

/// How a walk ended, with inode numbers for inodes.
#[derive(Debug, PartialEq)]
enum MWalk {
    Found(u64),
    Negative(usize),
    Miss(u64, usize),
    Symlink(u64, usize),
    NotDir(u64, usize),
}

impl From<Walk<'_>> for MWalk {
    fn from(w: Walk<'_>) -> Self {
        match w {
            Walk::Found(i) => MWalk::Found(i.ino()),
            Walk::Negative { at } => MWalk::Negative(at),
            Walk::Miss { parent, at } => MWalk::Miss(parent, at),
            Walk::Symlink { inode, rest } => MWalk::Symlink(inode.ino(), rest),
            Walk::NotDir { inode, at } => MWalk::NotDir(inode.ino(), at),
        }
    }
}

impl Model {
    fn new(policy: UnlinkPolicy) -> Self {
        let root = MInode {
            spec: InodeSpec { ino: ROOT_INO, kind: FileType::Directory, fs_data: 0 },
            lookups: 1,
            parent: ROOT_INO,
        };
        Model { dentries: BTreeMap::new(), inodes: BTreeMap::from([(ROOT_INO, root)]), policy }
    }

    fn positive(&self, parent: u64, name: &[u8]) -> Option<u64> {
        self.dentries.get(&(parent, name.to_vec())).copied().flatten()
    }

    fn is_dir(&self, ino: u64) -> bool {
        self.inodes.get(&ino).is_some_and(|i| i.spec.kind == FileType::Directory)
    }

    fn check_dir(&self, ino: u64) -> Result<(), Error> {
        match self.inodes.get(&ino) {
            None => Err(Error::UnknownInode(ino)),
            Some(i) if i.spec.kind != FileType::Directory => Err(Error::NotDirectory(ino)),
            Some(_) => Ok(()),
        }
    }

    fn aliases(&self, ino: u64) -> BTreeSet<Key> {
        self.dentries.iter().filter(|(_, v)| **v == Some(ino)).map(|(k, _)| k.clone()).collect()
    }

    /// The positive children of `dir`, as the cache reports them.
    fn children(&self, dir: u64) -> BTreeMap<Vec<u8>, InodeSpec> {
        self.dentries
            .range((dir, Vec::new())..)
            .take_while(|((p, _), _)| *p == dir)
            .filter_map(|((_, n), v)| v.map(|ino| (n.clone(), self.inodes[&ino].spec)))
            .collect()
    }

    fn add(&mut self, parent: u64, name: &[u8], spec: InodeSpec) -> Result<(), Error> {
        name_rules(name)?;
        self.check_dir(parent)?;
        if spec.ino == ROOT_INO {
            return Err(Error::DirectoryAlias(ROOT_INO));
        }
        // A positive name is refused before the inode is looked at.
        if self.positive(parent, name).is_some() {
            return Err(Error::Exists);
        }
        if let Some(i) = self.inodes.get(&spec.ino) {
            if i.spec.kind != spec.kind {
                return Err(Error::KindMismatch { ino: spec.ino });
            }
            if spec.kind == FileType::Directory && !self.aliases(spec.ino).is_empty() {
                return Err(Error::DirectoryAlias(spec.ino));
            }
        }
        // A cached directory named again (it had no name): what was cached below it goes
        // first.
        if spec.kind == FileType::Directory && self.inodes.contains_key(&spec.ino) {
            self.drop_below(spec.ino);
        }
        self.dentries.insert((parent, name.to_vec()), Some(spec.ino));
        let inode = self.inodes.entry(spec.ino).or_insert(MInode { spec, lookups: 0, parent });
        if spec.kind == FileType::Directory {
            inode.parent = parent;
        }
        inode.lookups += 1;
        Ok(())
    }

    fn add_negative(&mut self, parent: u64, name: &[u8]) -> Result<(), Error> {
        name_rules(name)?;
        self.check_dir(parent)?;
        if self.positive(parent, name).is_some() {
            return Err(Error::Exists);
        }
        self.dentries.insert((parent, name.to_vec()), None);
        Ok(())
    }

    /// Leaves `key` as the unlink policy says.
    fn vacate(&mut self, key: &Key) {
        match self.policy {
            UnlinkPolicy::Negative => self.dentries.insert(key.clone(), None),
            UnlinkPolicy::Drop => self.dentries.remove(key),
        };
    }

    fn unlink(&mut self, parent: u64, name: &[u8]) -> Result<(), Error> {
        name_rules(name)?;
        if self.positive(parent, name).is_none() {
            return Err(Error::NotFound);
        }
        self.vacate(&(parent, name.to_vec()));
        Ok(())
    }

    fn rename(&mut self, from: (u64, &[u8]), to: (u64, &[u8]), mode: Mode) -> Result<(), Error> {
        name_rules(from.1)?;
        name_rules(to.1)?;
        self.check_dir(to.0)?;
        let moving = self.positive(from.0, from.1).ok_or(Error::NotFound)?;
        let target = self.positive(to.0, to.1);
        match (target, mode) {
            (Some(_), Mode::NoReplace) => return Err(Error::Exists),
            (Some(t), _) if t == moving => return Ok(()),
            (None, Mode::Exchange) => return Err(Error::NotFound),
            _ => {}
        }
        let (a, b) = ((from.0, from.1.to_vec()), (to.0, to.1.to_vec()));
        let mut set_parent = |ino: u64, parent: u64| {
            let i = self.inodes.get_mut(&ino).expect("a positive names a cached inode");
            if i.spec.kind == FileType::Directory {
                i.parent = parent;
            }
        };
        set_parent(moving, to.0);
        if let (Mode::Exchange, Some(t)) = (mode, target) {
            set_parent(t, from.0);
            self.dentries.insert(a, Some(t));
        } else {
            self.vacate(&a);
        }
        self.dentries.insert(b, Some(moving));
        Ok(())
    }

    fn walk(&self, root: u64, path: &[u8]) -> Result<MWalk, Error> {
        let mut parts = Vec::new();
        let mut at = 0;
        for c in path.split(|&b| b == b'/') {
            if !c.is_empty() {
                if c != b"." && c != b".." {
                    name_rules(c)?;
                }
                parts.push((at, c));
            }
            at += c.len() + 1;
        }
        let mut cur = self.inodes.get(&root).ok_or(Error::UnknownInode(root))?;
        // A trailing `/` (after the last component) asks for a directory.
        let end = parts.last().map_or(0, |(at, c)| at + c.len());
        for (at, c) in parts {
            let here = cur.spec.ino;
            match cur.spec.kind {
                FileType::Directory => {}
                FileType::Symlink => return Ok(MWalk::Symlink(here, at)),
                _ => return Ok(MWalk::NotDir(here, at)),
            }
            let next = match c {
                b"." => here,
                b".." => cur.parent,
                _ => match self.dentries.get(&(here, c.to_vec())) {
                    Some(Some(ino)) => *ino,
                    Some(None) => return Ok(MWalk::Negative(at)),
                    None => return Ok(MWalk::Miss(here, at)),
                },
            };
            // Only `..` can lead to an inode no longer cached (a forgotten parent).
            cur = self.inodes.get(&next).ok_or(Error::UnknownInode(next))?;
        }
        Ok(match cur.spec.kind {
            _ if end == path.len() => MWalk::Found(cur.spec.ino),
            FileType::Directory => MWalk::Found(cur.spec.ino),
            FileType::Symlink => MWalk::Symlink(cur.spec.ino, end),
            _ => MWalk::NotDir(cur.spec.ino, path.len()),
        })
    }

    fn count_lookup(&mut self, ino: u64) -> Result<(), Error> {
        self.inodes.get_mut(&ino).ok_or(Error::UnknownInode(ino))?.lookups += 1;
        Ok(())
    }

    /// Drops every dentry below directory `top` (positive and negative, recursively).
    fn drop_below(&mut self, top: u64) {
        let mut dirs = vec![top];
        while let Some(d) = dirs.pop() {
            let below: Vec<Key> = self
                .dentries
                .range((d, Vec::new())..)
                .take_while(|((p, _), _)| *p == d)
                .map(|(k, _)| k.clone())
                .collect();
            for k in below {
                if let Some(Some(ino)) = self.dentries.remove(&k)
                    && self.is_dir(ino)
                {
                    dirs.push(ino);
                }
            }
        }
    }

    fn forget(&mut self, ino: u64, n: u64) -> Result<(), Error> {
        let inode = self.inodes.get_mut(&ino).ok_or(Error::UnknownInode(ino))?;
        let have = inode.lookups;
        if ino == ROOT_INO || n > have {
            return Err(Error::BadForget { ino, have, asked: n });
        }
        inode.lookups -= n;
        if inode.lookups == 0 {
            self.dentries.retain(|_, v| *v != Some(ino));
            if self.is_dir(ino) {
                self.drop_below(ino);
            }
            self.inodes.remove(&ino);
        }
        Ok(())
    }

    fn invalidate(&mut self, parent: u64, name: &[u8]) -> Result<(), Error> {
        name_rules(name)?;
        match self.dentries.remove(&(parent, name.to_vec())) {
            None => Err(Error::NotFound),
            Some(None) => Ok(()),
            Some(Some(ino)) => {
                if self.is_dir(ino) {
                    self.drop_below(ino);
                }
                Ok(())
            }
        }
    }

    /// The name just below directory `ino` on the climb by names from directory `start`, if
    /// `ino` is above it.
    fn link_below(&self, ino: u64, start: u64) -> Option<Key> {
        let mut at = start;
        for _ in 0..4096 {
            if at == ROOT_INO {
                return None;
            }
            let (parent, name) = self.aliases(at).pop_last()?;
            if parent == ino {
                return Some((parent, name));
            }
            at = parent;
        }
        None
    }

    fn resolve(&mut self, parent: u64, name: &[u8], fs: &ModelFs) -> Result<Resolved, Error> {
        let answer = *fs.answer.lock().unwrap();
        name_rules(name)?;
        match self.dentries.get(&(parent, name.to_vec())) {
            Some(Some(ino)) => {
                let ino = *ino;
                self.count_lookup(ino)?;
                return Ok(Resolved::Found(self.inodes[&ino].spec));
            }
            Some(None) => return Ok(Resolved::Negative),
            None => {}
        }
        match answer {
            Err(errno) => Err(Error::Backend(errno)),
            Ok(None) => self.add_negative(parent, name).map(|()| Resolved::Negative),
            Ok(Some(spec)) => match self.add(parent, name, spec) {
                // A directory cached under another name was renamed behind the cache: its
                // name moves here (the old one dropped; a cached name below it on the way to
                // `parent` dropped first, disconnecting the directory it named), and the
                // answer counts a lookup as any found
                // answer does. Named inside itself: refused.
                Err(Error::DirectoryAlias(ino)) if ino != ROOT_INO => {
                    if parent == ino {
                        return Err(Error::DirectoryAlias(ino));
                    }
                    let old = self.aliases(ino).pop_first().expect("an alias is a name");
                    if let Some(link) = self.link_below(ino, parent) {
                        // The directory below is disconnected: its `..` is itself.
                        if let Some(Some(below)) = self.dentries.remove(&link) {
                            self.inodes.get_mut(&below).expect("cached").parent = below;
                        }
                    }
                    self.dentries.remove(&old);
                    self.dentries.insert((parent, name.to_vec()), Some(ino));
                    self.inodes.get_mut(&ino).expect("cached").parent = parent;
                    self.count_lookup(ino)?;
                    Ok(Resolved::Found(spec))
                }
                added => added.map(|()| Resolved::Found(spec)),
            },
        }
    }
}

/// A filesystem that answers what the operation says and counts its calls.
struct ModelFs {
    answer: Mutex<Result<Option<InodeSpec>, Errno>>,
    calls: AtomicU32,
}

impl Filesystem for ModelFs {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        *self.answer.lock().unwrap()
    }
}

fn steer(seed: u8, child: &Child) -> Visit {
    let h = child.inode.ino.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (child.name.len() as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9)
        ^ u64::from(seed);
    match (h >> 29) % 10 {
        0..=5 => Visit::Continue,
        6 | 7 => Visit::Skip,
        8 => Visit::SkipSiblings,
        _ => Visit::Quit,
    }
}

/// Checks a `walk_tree` visit sequence against the model: every visit is a cached child at its
/// depth, each directory entered has all its children visited unless a skip-siblings or a quit
/// cut it short, nothing follows a quit, no directory not continued into is entered, and none
/// is entered twice (a directory can be its own ancestor: see the module docs).
fn check_walk_tree(model: &Model, root: u64, visits: &[(usize, u64, Child, Visit)]) {
    let mut stack = vec![(root, model.children(root))];
    let mut entered = BTreeSet::from([root]);
    for (i, (depth, parent, child, visit)) in visits.iter().enumerate() {
        while stack.len() > *depth {
            let (d, rest) = stack.pop().expect("deeper than the stack");
            assert!(rest.is_empty(), "walk_tree left children of {d} unvisited: {rest:?}");
        }
        assert_eq!(stack.len(), *depth, "visit at the wrong depth: {child:?}");
        let (d, rest) = stack.last_mut().expect("a visit after the walk ended");
        assert_eq!(*d, *parent, "visit under the wrong directory: {child:?}");
        let d = *d;
        assert_eq!(rest.remove(&child.name), Some(child.inode), "{d}: unexpected {child:?}");
        match visit {
            Visit::Quit => {
                assert_eq!(i + 1, visits.len(), "visits after a quit");
                return;
            }
            Visit::SkipSiblings => {
                stack.pop();
            }
            Visit::Continue
                if child.inode.kind == FileType::Directory && entered.insert(child.inode.ino) =>
            {
                stack.push((child.inode.ino, model.children(child.inode.ino)));
            }
            Visit::Continue | Visit::Skip => {}
        }
    }
    for (d, rest) in stack {
        assert!(rest.is_empty(), "walk_tree left children of {d} unvisited: {rest:?}");
    }
}

/// Compares the cache with the model, forgetting in the model what the cache may have
/// dropped: negatives always, positives only while `shrunk` says how many `shrink` dropped.
fn check(cache: &Dcache, model: &mut Model, shrunk: Option<(usize, usize)>) {
    let g = epoch::pin();
    let (mut lost_pos, mut lost_neg) = (0, 0);
    // `peek`, not `lookup`: a check after every operation that used every name would set
    // every referenced bit, and a referenced negative ends a run of unused ones, so the run
    // rule would never trim (nor udcache's bookkeeping of what it takes be tested).
    model.dentries.retain(|(p, n), v| match (cache.peek(&g, *p, n), *v) {
        (Ok(Lookup::Hit(i)), Some(ino)) => {
            assert_eq!(i.ino(), ino, "({p}, {n:?}) names the wrong inode");
            let table = cache.inode(&g, ino).expect("a dentry names an inode not in the table");
            assert!(std::ptr::eq(table, i), "({p}, {n:?}) names a stale inode object");
            true
        }
        (Ok(Lookup::Negative), None) => true,
        (Ok(Lookup::Miss), None) => {
            lost_neg += 1;
            false
        }
        (Ok(Lookup::Miss), Some(_)) if shrunk.is_some() => {
            lost_pos += 1;
            false
        }
        (got, want) => panic!("({p}, {n:?}): cache {got:?}, model {want:?}"),
    });
    if let Some((asked, done)) = shrunk {
        assert!(done <= asked, "shrink({asked}) reported {done}");
        assert!(lost_pos <= done, "shrink reported {done} but {lost_pos} positives went");
        assert_eq!(lost_pos + lost_neg, done, "shrink reported {done}, {lost_pos}+{lost_neg} went");
    }
    let s = cache.stats();
    // Between operations no negative is held: positives go only once none is left.
    assert!(lost_pos == 0 || s.nr_negative == 0, "a positive went before the negatives: {s:?}");
    let negatives = model.dentries.values().filter(|v| v.is_none()).count() as u64;
    assert_eq!(s.nr_dentry, model.dentries.len() as u64, "phantom dentries: {s:?}");
    assert_eq!(s.nr_negative, negatives, "phantom negatives: {s:?}");
    assert_eq!(s.nr_inodes, model.inodes.len() as u64, "phantom inodes: {s:?}");
    assert!(s.nr_unused <= s.nr_dentry, "{s:?}");
    for (&ino, m) in &model.inodes {
        let i = cache.inode(&g, ino).expect("a model inode is not cached");
        assert_eq!((i.spec(), i.lookups()), (m.spec, m.lookups), "inode {ino}");
        let aliases: BTreeSet<Key> = i.aliases().into_iter().collect();
        assert_eq!(aliases, model.aliases(ino), "aliases of {ino}");
        if m.spec.kind == FileType::Directory {
            assert_eq!(i.parent(), m.parent, "`..` of {ino}");
            let children: BTreeMap<_, _> =
                cache.children(ino).unwrap().into_iter().map(|c| (c.name, c.inode)).collect();
            assert_eq!(children, model.children(ino), "children of {ino}");
        }
    }
    cache.verify().unwrap();
}

fuzz_target!(|input: Input| {
    let policy = if input.drop_on_unlink { UnlinkPolicy::Drop } else { UnlinkPolicy::Negative };
    // 1 to 16 buckets, powers of two: few, so that negatives share them (the trimming rules
    // are per bucket); at 16, more buckets than LRU shards on a small machine.
    let config = Config::for_entries(64)
        .with_buckets(1 << (input.buckets % 5))
        .with_negative_cap(input.cap.map(|c| usize::from(c % 8)))
        .with_unlink_policy(policy);
    let fs = Arc::new(ModelFs { answer: Mutex::new(Ok(None)), calls: AtomicU32::new(0) });
    let cache = Dcache::new(config.with_filesystem(fs.clone()));
    let mut model = Model::new(policy);
    for op in input.ops.iter().take(256) {
        let mut shrunk = None;
        match op {
            Op::Add { dir, name, ino, kind, data } => {
                let (dir, name, spec) = (dir.get(), name.bytes(), spec(*ino, *kind, *data));
                let want = model.add(dir, &name, spec);
                assert_eq!(cache.add(dir, &name, spec), want, "add({dir}, {name:?}, {spec:?})");
            }
            Op::AddNegative { dir, name } => {
                let (dir, name) = (dir.get(), name.bytes());
                let want = model.add_negative(dir, &name);
                assert_eq!(cache.add_negative(dir, &name), want, "add_negative({dir}, {name:?})");
            }
            // `4 + count % 12` negatives in one directory, named `0`, `1`, …: with a few
            // buckets, enough in one for the trimming rules (a run of unused negatives, the
            // per-bucket cap) to take some, which single `AddNegative`s of a handful of names
            // rarely reach (0 to 4 evictions in 6,000 inputs before this op).
            Op::Misses { dir, count } => {
                let dir = dir.get();
                for i in 0..4 + count % 12 {
                    let name = i.to_string().into_bytes();
                    let want = model.add_negative(dir, &name);
                    assert_eq!(cache.add_negative(dir, &name), want, "add_negative({dir}, {i})");
                }
            }
            Op::Unlink { dir, name } => {
                let (dir, name) = (dir.get(), name.bytes());
                assert_eq!(cache.unlink(dir, &name), model.unlink(dir, &name), "unlink");
            }
            Op::Rename { from, old, to, new, mode } => {
                let (from, old, to, new) = (from.get(), old.bytes(), to.get(), new.bytes());
                let want = model.rename((from, &old), (to, &new), *mode);
                let m = match mode {
                    Mode::Replace => RenameMode::Replace,
                    Mode::NoReplace => RenameMode::NoReplace,
                    Mode::Exchange => RenameMode::Exchange,
                };
                let got = cache.rename(from, &old, to, &new, m);
                assert_eq!(got, want, "rename({from}, {old:?}, {to}, {new:?}, {mode:?})");
            }
            Op::Lookup { dir, name } => {
                let (dir, name) = (dir.get(), name.bytes());
                let g = epoch::pin();
                let got = cache.lookup(&g, dir, &name).map(|l| match l {
                    Lookup::Hit(i) => Some(Some(i.ino())),
                    Lookup::Negative => Some(None),
                    Lookup::Miss => None,
                });
                let want = name_rules(&name).map(|()| model.dentries.get(&(dir, name)).copied());
                assert_eq!(got, want, "lookup");
            }
            Op::Walk { root, slash, parts } => {
                let mut path = if *slash { b"/".to_vec() } else { Vec::new() };
                for (i, part) in parts.iter().take(8).enumerate() {
                    if i > 0 {
                        path.push(b'/');
                    }
                    match part {
                        Part::Name(n) => path.extend(n.bytes()),
                        Part::Dot => path.push(b'.'),
                        Part::DotDot => path.extend(b".."),
                        Part::Empty => {}
                    }
                }
                let g = epoch::pin();
                let got = cache.walk(&g, root.get(), &path).map(MWalk::from);
                if let Ok(Walk::Found(i)) = cache.walk(&g, root.get(), &path) {
                    assert!(
                        std::ptr::eq(i.inode(), cache.inode(&g, i.ino()).unwrap()),
                        "stale walk"
                    );
                    let read = i.inode();
                    assert_eq!((i.ino(), i.kind()), (read.ino(), read.kind()), "dentry's copy");
                }
                assert_eq!(got, model.walk(root.get(), &path), "walk({root:?}, {path:?})");
            }
            Op::Resolve { dir, name, answer } => {
                let (dir, name) = (dir.get(), name.bytes());
                let answer = match *answer {
                    Answer::Exists { ino, kind, data } => Ok(Some(spec(ino, kind, data))),
                    Answer::Absent => Ok(None),
                    Answer::Fail(errno) => Err(Errno::new(errno)),
                };
                *fs.answer.lock().unwrap() = answer;
                fs.calls.store(0, Ordering::Relaxed);
                let asks =
                    name_rules(&name).is_ok() && !model.dentries.contains_key(&(dir, name.clone()));
                let before = cache.stats().backend_lookups;
                let want = model.resolve(dir, &name, &fs);
                assert_eq!(cache.resolve(dir, &name), want, "resolve({dir}, {name:?})");
                assert_eq!(fs.calls.load(Ordering::Relaxed), u32::from(asks), "calls");
                assert_eq!(cache.stats().backend_lookups - before, u64::from(asks));
            }
            Op::Forget { ino, n } => {
                let n = if *n == 255 { u64::MAX } else { u64::from(n % 4) };
                assert_eq!(cache.forget(ino.get(), n), model.forget(ino.get(), n), "forget");
            }
            Op::CountLookup { ino } => {
                assert_eq!(cache.count_lookup(ino.get()), model.count_lookup(ino.get()));
            }
            Op::Invalidate { dir, name } => {
                let (dir, name) = (dir.get(), name.bytes());
                let want = model.invalidate(dir, &name);
                assert_eq!(cache.invalidate(dir, &name), want, "invalidate({dir}, {name:?})");
            }
            Op::Shrink { n } => {
                let asked = usize::from(n % 8);
                shrunk = Some((asked, cache.shrink(asked)));
            }
            Op::Children { dir } => {
                let got = cache
                    .children(dir.get())
                    .map(|c| c.into_iter().map(|c| (c.name, c.inode)).collect::<BTreeMap<_, _>>());
                let want = model.check_dir(dir.get()).map(|()| model.children(dir.get()));
                assert_eq!(got, want, "children({dir:?})");
            }
            Op::WalkTree { root, steer: seed } => {
                let mut visits = Vec::new();
                let positives = model.dentries.values().flatten().count();
                let got = cache.walk_tree(root.get(), |depth, parent, child| {
                    assert!(visits.len() < positives, "walk_tree visits a dentry twice");
                    let visit = steer(*seed, child);
                    visits.push((depth, parent, child.clone(), visit));
                    visit
                });
                assert_eq!(got, model.check_dir(root.get()), "walk_tree({root:?})");
                if got.is_ok() {
                    check_walk_tree(&model, root.get(), &visits);
                }
            }
        }
        check(&cache, &mut model, shrunk);
    }
});
