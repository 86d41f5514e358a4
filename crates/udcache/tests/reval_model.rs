//! Revalidation and the access cache against a model, one thread, on a clock driven by hand:
//! random sequences over a root holding `a`, `b` (files, or nothing) and the directory `d`,
//! which holds `a` and `b` in turn. A filesystem whose answers are the model's truth (which
//! changes behind the cache: names appear, disappear and point elsewhere, directory verifiers
//! move, search rights change) is asked by `resolve`, `walk_as` / `unblock` / `walk_as_after`
//! (run as a FUSE server would, with and without a credential), `access` and `readdir`; the
//! cache is also told things directly (`add`, `add_negative`, `unlink`, `rename`, `invalidate`,
//! `set_entry_timeout`, `dir_changed` with no verifier, the filesystem's or another,
//! `acl_changed`), and time advances, also past the clock's horizon. Each case draws its
//! timeouts (zero to forever), how the filesystem answers a lockless revalidation (must block,
//! or from the truth, valid for a timeout of its own), whether it uses the trait's default
//! `revalidate` and `access`, and the unlink policy. A resolution may be meddled with between
//! its blocking steps by changes the cache is told of (a name changed and `dir_changed`, rights
//! changed and `acl_changed`, time, the cache's own writers).
//!
//! The model keeps what the cache was told or learnt of each name (value, expiry tick as
//! `clock.rs` rounds it, the directory generation it was filed under), each credential's access
//! result per directory (and whose is the most recent), and each directory's listing. After
//! every step: every name looks up as the model says (a dentry is trusted only before its
//! expiry and, negative, only while its directory has not changed since it was filed), and the
//! counters agree exactly: revalidations, backend lookups, access calls and hits, fallbacks by
//! reason, complete-listing negatives, readdir hits and misses, dentries and negatives. Every
//! revalidation the filesystem receives is of a dentry the model no longer trusts, and tells
//! truly what is cached, whether it expired and whether its directory changed; every
//! `Blocked` names its reason truly. Every plain walk ends as the model's; every resolution
//! ends within a bounded number of walks, where each name is what the cache still trusts, or
//! (not cached) what a complete listing says where negatives never time out, or the truth;
//! and each directory search is the cached result still trusted, or what an unblock of the
//! resolution settled (it serves the rest of the resolution, even once expired, until a
//! revocation), or the filesystem's answer. `resolve`, `access` and `may_access` answer from
//! the cache only what it still trusts. Not modelled: more than two credentials per inode (the
//! locked list's bound), concurrency (see `reval_stress.rs`, `loom_reval.rs`).

mod lend;

use lend::lend;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use udcache::ManualClock;
use udcache::defaults;
use udcache::readdir::{DType, Entry, Fill, FillError, Verifier};
use udcache::{
    Blocked, Cached, Checked, Config, Cred, Dcache, Errno, Error, FileType, Filesystem, InodeSpec,
    Lookup, Mask, Permission, ROOT_INO, Reason, RenameMode, Resolved, Revalidate, Timeouts,
    Unblocked, UnlinkPolicy, Walk, epoch,
};

/// The directory below the root.
const D: u64 = 2;
/// The names of the namespace: `(parent, name)`. `(1, "d")` is always the directory `D`.
const KEYS: [(u64, &str); 5] = [(1, "a"), (1, "b"), (1, "d"), (D, "a"), (D, "b")];
/// The keys that may name files or nothing (all but `d`).
const FILE_KEYS: [usize; 4] = [0, 1, 3, 4];
/// Paths resolved.
const PATHS: [&str; 6] = ["a", "b", "d", "d/a", "d/b", "a/b"];
/// File inode numbers.
const FILES: [u64; 3] = [10, 11, 12];
/// Users (each its own group).
const UIDS: [u32; 2] = [1000, 1001];
/// Directories.
const DIRS: [u64; 2] = [ROOT_INO, D];
/// The most walks a resolution may take.
const WALKS: usize = 30;
/// A tick, as `clock.rs` documents it.
const TICK_NS: u128 = 1 << 24;
/// The expiry that never comes.
const NEVER: u32 = u32::MAX;

fn spec(ino: u64) -> InodeSpec {
    let kind = if ino == D { FileType::Directory } else { FileType::Regular };
    InodeSpec { ino, kind, fs_data: ino }
}

fn cred(uid: u32) -> Cred {
    Cred::new(uid, uid, &[])
}

fn key(k: usize) -> (u64, Vec<u8>) {
    (KEYS[k].0, KEYS[k].1.as_bytes().to_vec())
}

fn reason_index(r: Reason) -> usize {
    match r {
        Reason::Expired => 0,
        Reason::Verifier => 1,
        Reason::AccessMiss => 2,
        Reason::NeedsBlock => 3,
        other => unreachable!("a reason the model does not know: {other:?}"),
    }
}

/// How the filesystem answers a revalidation it may not block for.
#[derive(Clone, Copy, Debug)]
enum Lockless {
    NeedsBlock,
    /// From the truth, `Valid` for this long (`None`: the configured timeout).
    Truth,
}

/// One call the filesystem received.
#[derive(Clone, Debug)]
enum Call {
    Lookup { key: (u64, Vec<u8>), answer: Option<u64>, in_revalidate: bool },
    Revalidate { key: (u64, Vec<u8>), cached: Cached, may_block: bool, answer: Revalidate },
    Access { ino: u64, uid: u32, answer: Mask },
    Readdir { dir: u64, names: BTreeSet<Vec<u8>>, verifier: u64 },
}

/// What the filesystem holds.
#[derive(Clone, Debug, Default)]
struct World {
    names: BTreeMap<(u64, Vec<u8>), u64>,
    rights: BTreeMap<(u64, u32), Mask>,
    /// Each directory's verifier (moves with every change of its names).
    verifier: BTreeMap<u64, u64>,
}

impl World {
    fn new() -> Self {
        let mut w = World::default();
        w.names.insert((ROOT_INO, b"d".to_vec()), D);
        for dir in DIRS {
            w.verifier.insert(dir, 100);
        }
        w
    }

    fn name(&self, k: &(u64, Vec<u8>)) -> Option<u64> {
        self.names.get(k).copied()
    }

    fn rights(&self, ino: u64, uid: u32) -> Mask {
        self.rights.get(&(ino, uid)).copied().unwrap_or(Mask::ALL)
    }
}

struct Fs {
    world: Mutex<World>,
    log: Mutex<Vec<Call>>,
    lockless: Lockless,
    /// The timeout of a `Valid` answer (`None`: the configured one).
    ttl: Option<Duration>,
    /// Use the trait's default `revalidate` and `access`.
    defaults: bool,
    in_revalidate: AtomicBool,
}

impl Fs {
    fn take_log(&self) -> Vec<Call> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl Filesystem for Fs {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let key = (parent, name.to_vec());
        let answer = self.world.lock().unwrap().name(&key);
        let in_revalidate = self.in_revalidate.load(Ordering::Relaxed);
        self.log.lock().unwrap().push(Call::Lookup { key, answer, in_revalidate });
        Ok(answer.map(spec))
    }

    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        let key = (parent, name.to_vec());
        let answer = if self.defaults {
            self.in_revalidate.store(true, Ordering::Relaxed);
            let a = defaults::revalidate(self, parent, name, cached, may_block);
            self.in_revalidate.store(false, Ordering::Relaxed);
            a
        } else if !may_block && matches!(self.lockless, Lockless::NeedsBlock) {
            Revalidate::NeedsBlock
        } else {
            let now = self.world.lock().unwrap().name(&key);
            if now == cached.inode.map(|s| s.ino) {
                Revalidate::Valid { ttl: self.ttl }
            } else {
                Revalidate::Invalid
            }
        };
        self.log.lock().unwrap().push(Call::Revalidate { key, cached, may_block, answer });
        answer
    }

    fn access(&self, ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        let answer = if self.defaults {
            defaults::access(ino, cred)?
        } else {
            self.world.lock().unwrap().rights(ino, cred.uid())
        };
        self.log.lock().unwrap().push(Call::Access { ino, uid: cred.uid(), answer });
        Ok(answer)
    }

    fn readdir(&self, dir: u64, cookie: u64, _max: usize) -> Result<Fill, FillError> {
        let w = self.world.lock().unwrap();
        let names: Vec<(Vec<u8>, u64)> =
            w.names.iter().filter(|(k, _)| k.0 == dir).map(|(k, &i)| (k.1.clone(), i)).collect();
        let entries = (1..)
            .zip(&names)
            .filter(|&(c, _)| c > cookie)
            .map(|(c, (name, ino))| {
                Entry::new(name, *ino, if is_dir(*ino) { DType::DIR } else { DType::REG }, c)
            })
            .collect();
        let verifier = w.verifier[&dir];
        let names = names.into_iter().map(|(n, _)| n).collect();
        self.log.lock().unwrap().push(Call::Readdir { dir, names, verifier });
        Ok(Fill { entries, eof: true, verifier: Verifier::new(verifier) })
    }
}

/// A dentry of the model.
#[derive(Clone, Copy, Debug)]
struct Dent {
    value: Option<u64>,
    expiry: u32,
    generation: u64,
}

/// The counters the model predicts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    revalidations: u64,
    backend_lookups: u64,
    access_calls: u64,
    access_hits: u64,
    /// By [`reason_index`].
    fallbacks: [u64; 4],
    complete_dir_negatives: u64,
    readdir_hits: u64,
    readdir_misses: u64,
}

/// A directory's listing.
#[derive(Clone, Debug, Default)]
struct Listed {
    /// It holds pages (fresh or stale).
    held: bool,
    /// Complete under its verifier: it answers for names.
    complete: bool,
    names: BTreeSet<Vec<u8>>,
    verifier: Option<u64>,
}

#[derive(Clone, Debug)]
struct Model {
    now_ns: u128,
    timeouts: Timeouts,
    policy: UnlinkPolicy,
    dents: BTreeMap<(u64, Vec<u8>), Dent>,
    generation: BTreeMap<u64, u64>,
    verifier: BTreeMap<u64, u64>,
    next_generation: u64,
    /// `(ino, uid) -> (rights, expiry)`.
    access: BTreeMap<(u64, u32), (Mask, u32)>,
    /// Each inode's most recent result: whose.
    mru: BTreeMap<u64, u32>,
    listings: BTreeMap<u64, Listed>,
    counts: Counts,
}

fn to_tick(ns: u128) -> u32 {
    u32::try_from(ns / TICK_NS).map_or(u32::MAX - 1, |t| t.min(u32::MAX - 1))
}

impl Model {
    fn new(timeouts: Timeouts, policy: UnlinkPolicy) -> Self {
        Model {
            now_ns: 0,
            timeouts,
            policy,
            dents: BTreeMap::new(),
            generation: DIRS.iter().map(|&d| (d, d)).collect(),
            verifier: BTreeMap::new(),
            next_generation: 10,
            access: BTreeMap::new(),
            mru: BTreeMap::new(),
            listings: BTreeMap::new(),
            counts: Counts::default(),
        }
    }

    fn now(&self) -> u32 {
        to_tick(self.now_ns)
    }

    fn expiry(&self, ttl: Duration) -> u32 {
        if ttl == Duration::MAX { NEVER } else { to_tick(self.now_ns + ttl.as_nanos()) }
    }

    fn live(&self, expiry: u32) -> bool {
        expiry == NEVER || self.now() < expiry
    }

    fn timeout(&self, negative: bool) -> Duration {
        if negative { self.timeouts.negative } else { self.timeouts.entry }
    }

    fn bump(&mut self, dir: u64) {
        self.next_generation += 1;
        self.generation.insert(dir, self.next_generation);
    }

    /// A fresh dentry filed now.
    fn file(&mut self, k: &(u64, Vec<u8>), value: Option<u64>) {
        if k.0 == ROOT_INO && value == Some(D) {
            // The directory named again: what is below it goes (`drop_below`).
            self.drop_below();
        }
        let d = Dent {
            value,
            expiry: self.expiry(self.timeout(value.is_none())),
            generation: self.generation[&k.0],
        };
        self.dents.insert(k.clone(), d);
    }

    fn drop_below(&mut self) {
        self.bump(D);
        self.dents.retain(|k, _| k.0 != D);
        if let Some(l) = self.listings.get_mut(&D) {
            (l.held, l.complete) = (false, false);
        }
    }

    /// The listing of `dir` told of a change (`changed` in `listing.rs`).
    fn listing_changed(&mut self, dir: u64, verifier: Option<u64>) {
        if let Some(l) = self.listings.get_mut(&dir)
            && (verifier.is_none() || verifier != l.verifier)
        {
            l.verifier = verifier;
            l.complete = false;
        }
    }

    /// A positive `name` filed in `dir` (`note_added`).
    fn note_added(&mut self, dir: u64, name: &[u8], asserted: bool) {
        if let Some(l) = self.listings.get(&dir) {
            let created = if l.complete { !l.names.contains(name) } else { asserted };
            if created {
                self.listing_changed(dir, None);
            }
        }
    }

    /// What `dir_changed` (or a listing's report) does with `v`.
    fn report(&mut self, dir: u64, v: Option<u64>) {
        if v.is_some() && self.verifier.get(&dir) == v.as_ref() {
            return;
        }
        self.bump(dir);
        self.listing_changed(dir, v);
        // After `None` no verifier is known: the next one reported is a change.
        match v {
            Some(v) => self.verifier.insert(dir, v),
            None => self.verifier.remove(&dir),
        };
    }

    /// A complete listing says the name is absent (where negatives never time out).
    fn listed_absent(&self, k: &(u64, Vec<u8>)) -> bool {
        self.timeouts.negative == Duration::MAX
            && self.listings.get(&k.0).is_some_and(|l| l.complete && !l.names.contains(&k.1))
    }

    /// Why the dentry is not trusted, if it is not.
    fn stale(&self, k: &(u64, Vec<u8>)) -> Option<Reason> {
        let d = self.dents.get(k)?;
        if d.value.is_none() && d.generation != self.generation[&k.0] {
            return Some(Reason::Verifier);
        }
        (!self.live(d.expiry)).then_some(Reason::Expired)
    }

    /// What `lookup` answers: `Some(value)` for a trusted dentry.
    fn trusted(&self, k: &(u64, Vec<u8>)) -> Option<Option<u64>> {
        let d = self.dents.get(k)?;
        self.stale(k).is_none().then_some(d.value)
    }

    fn invalidate(&mut self, k: &(u64, Vec<u8>)) -> Result<(), Error> {
        match self.dents.remove(k) {
            Some(d) => {
                if k.0 == ROOT_INO && d.value == Some(D) {
                    self.drop_below();
                }
            }
            None if self.listings.get(&k.0).is_some_and(|l| l.held) => {}
            None => return Err(Error::NotFound),
        }
        self.listing_changed(k.0, None);
        Ok(())
    }

    fn access_live(&self, ino: u64, uid: u32) -> Option<Mask> {
        let &(mask, expiry) = self.access.get(&(ino, uid))?;
        self.live(expiry).then_some(mask)
    }

    /// The lockless check (`may_access`, a walk's search).
    fn mru(&self, ino: u64, uid: u32) -> Option<Mask> {
        (self.mru.get(&ino) == Some(&uid)).then(|| self.access_live(ino, uid)).flatten()
    }

    /// `cached_access`: the most recent result, then the others (one becomes the most
    /// recent); counts a hit.
    fn cached_access(&mut self, ino: u64, uid: u32, mask: Mask) -> Option<bool> {
        if mask == Mask::NONE {
            return Some(true);
        }
        let rights = self.mru(ino, uid).or_else(|| {
            let m = self.access_live(ino, uid)?;
            self.mru.insert(ino, uid);
            Some(m)
        })?;
        self.counts.access_hits += 1;
        Some(rights.contains(mask))
    }

    /// Learns from the filesystem's calls, in order; checks what each revalidation was told.
    fn absorb(&mut self, calls: Vec<Call>) -> Result<(), TestCaseError> {
        for call in calls {
            match call {
                Call::Lookup { in_revalidate: true, .. } => {}
                Call::Lookup { key, answer, .. } => {
                    self.counts.backend_lookups += 1;
                    self.file(&key, answer);
                    if answer.is_some() {
                        self.note_added(key.0, &key.1, false);
                    }
                }
                Call::Readdir { dir, names, verifier } => {
                    self.counts.readdir_misses += 1;
                    let l = Listed { held: true, complete: true, names, verifier: Some(verifier) };
                    self.listings.insert(dir, l);
                }
                Call::Revalidate { key, cached, may_block, answer } => {
                    self.counts.revalidations += 1;
                    let d = self.dents.get(&key).copied();
                    let Some(d) = d else {
                        return Err(TestCaseError::fail(format!(
                            "{key:?}: revalidated, no dentry"
                        )));
                    };
                    prop_assert!(self.stale(&key).is_some(), "{key:?}: revalidated while trusted");
                    prop_assert_eq!(cached.inode.map(|s| s.ino), d.value, "{:?}", key);
                    let expired = d.expiry != NEVER && self.now() >= d.expiry;
                    prop_assert_eq!(cached.expired, expired, "{:?} {:?} {:?}", key, d, self.now());
                    let changed = d.generation != self.generation[&key.0];
                    prop_assert_eq!(cached.dir_changed, changed, "{:?}", key);
                    match answer {
                        Revalidate::Valid { ttl } => {
                            let ttl = ttl.unwrap_or(self.timeout(d.value.is_none()));
                            let expiry = self.expiry(ttl);
                            let generation = self.generation[&key.0];
                            self.dents.insert(key, Dent { expiry, generation, ..d });
                        }
                        _ if may_block => {
                            let _ = self.invalidate(&key);
                        }
                        _ => {}
                    }
                }
                Call::Access { ino, uid, answer } => {
                    self.counts.access_calls += 1;
                    let expiry = self.expiry(self.timeouts.access);
                    self.access.insert((ino, uid), (answer, expiry));
                    self.mru.insert(ino, uid);
                }
            }
        }
        Ok(())
    }
}

/// Components of a path and where each starts.
fn components(path: &str) -> Vec<(usize, &str)> {
    let mut at = 0;
    let mut out = Vec::new();
    for c in path.split('/') {
        out.push((at, c));
        at += c.len() + 1;
    }
    out
}

/// How a walk or a resolution ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum End {
    Found(u64),
    Negative(usize),
    Miss(u64, usize),
    NotDir(usize),
    Denied(u64, usize),
}

fn end_of(w: &Walk<'_>) -> End {
    match *w {
        Walk::Found(n) => End::Found(n.ino()),
        Walk::Negative { at } => End::Negative(at),
        Walk::Miss { parent, at } => End::Miss(parent, at),
        Walk::NotDir { at, .. } => End::NotDir(at),
        Walk::Symlink { .. } => panic!("no symlinks here"),
    }
}

fn is_dir(ino: u64) -> bool {
    DIRS.contains(&ino)
}

/// Follows `path` from the root in the model: `step` answers each component in its directory
/// (the inode it names, or how the path ends there); a component after a non-directory ends
/// it as `NotDir`.
fn model_walk(path: &str, mut step: impl FnMut(u64, usize, &str) -> Result<u64, End>) -> End {
    let mut cur = ROOT_INO;
    for (at, name) in components(path) {
        if !is_dir(cur) {
            return End::NotDir(at);
        }
        match step(cur, at, name) {
            Ok(ino) => cur = ino,
            Err(end) => return end,
        }
    }
    End::Found(cur)
}

#[derive(Clone, Copy, Debug)]
enum Verif {
    None,
    /// The filesystem's current one.
    Truth,
    Other(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Advance(Duration),
    /// The filesystem's name changes behind the cache.
    SetTruth {
        k: usize,
        ino: Option<u64>,
    },
    SetRights {
        dir: u64,
        uid: u32,
        mask: Mask,
    },
    /// The name changes and the cache is told: `dir_changed(parent, None)`.
    Announce {
        k: usize,
        ino: Option<u64>,
    },
    /// The rights change and the cache is told: `acl_changed`.
    AnnounceRights {
        dir: u64,
        uid: u32,
        mask: Mask,
    },
    Add {
        k: usize,
        ino: u64,
    },
    AddNegative {
        k: usize,
    },
    Unlink {
        k: usize,
    },
    Invalidate {
        k: usize,
    },
    SetEntryTimeout {
        k: usize,
        ttl: Duration,
    },
    DirChanged {
        dir: u64,
        verifier: Verif,
    },
    Rename {
        from: usize,
        to: usize,
        mode: RenameMode,
    },
    Readdir {
        dir: u64,
    },
    Walk {
        path: usize,
    },
    Resolve {
        k: usize,
    },
    /// `meddle[i]` runs after the `i`th blocking step (an `unblock` or a `resolve`).
    Resolution {
        path: usize,
        uid: Option<u32>,
        meddle: Vec<Op>,
    },
    MayAccess {
        ino: u64,
        uid: u32,
        mask: Mask,
    },
    Access {
        ino: u64,
        uid: u32,
        mask: Mask,
    },
    AclChanged {
        ino: u64,
    },
}

const DURATIONS: [Duration; 9] = [
    Duration::ZERO,
    Duration::from_nanos(1),
    Duration::from_millis(10),
    Duration::from_nanos(1 << 24),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(1500),
    Duration::from_secs(5),
    // Past the clock's horizon (2.28 years): it saturates.
    Duration::from_secs(3 * 365 * 86_400),
];

const TIMEOUTS: [Duration; 6] = [
    Duration::ZERO,
    Duration::from_millis(10),
    Duration::from_secs(1),
    Duration::from_secs(3),
    // Past the horizon, but not "never".
    Duration::from_secs(u64::MAX),
    Duration::MAX,
];

fn duration() -> impl Strategy<Value = Duration> {
    prop::sample::select(DURATIONS.to_vec())
}

fn timeout() -> impl Strategy<Value = Duration> {
    prop::sample::select(TIMEOUTS.to_vec())
}

fn mask() -> impl Strategy<Value = Mask> {
    (0..8u32).prop_map(|b| Mask::from_bits(b).unwrap())
}

/// What may happen while a resolution runs: changes the cache is told of (a change behind it
/// that it is not told of may be answered from what a blocking step settled before it).
fn meddle() -> impl Strategy<Value = Op> {
    let fk = || prop::sample::select(FILE_KEYS.to_vec());
    let dir = || prop::sample::select(DIRS.to_vec());
    let uid = || prop::sample::select(UIDS.to_vec());
    let file = || prop::sample::select(FILES.to_vec());
    prop_oneof![
        3 => duration().prop_map(Op::Advance),
        4 => (fk(), prop::option::of(file())).prop_map(|(k, ino)| Op::Announce { k, ino }),
        2 => (dir(), uid(), mask())
            .prop_map(|(dir, uid, mask)| Op::AnnounceRights { dir, uid, mask }),
        1 => (fk(), file()).prop_map(|(k, ino)| Op::Add { k, ino }),
        1 => fk().prop_map(|k| Op::AddNegative { k }),
        1 => fk().prop_map(|k| Op::Invalidate { k }),
        1 => (fk(), timeout()).prop_map(|(k, ttl)| Op::SetEntryTimeout { k, ttl }),
        1 => dir().prop_map(|dir| Op::DirChanged { dir, verifier: Verif::None }),
        1 => dir().prop_map(|ino| Op::AclChanged { ino }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let fk = || prop::sample::select(FILE_KEYS.to_vec());
    let any_k = || 0..KEYS.len();
    let dir = || prop::sample::select(DIRS.to_vec());
    let ino = || prop::sample::select(DIRS.to_vec());
    let uid = || prop::sample::select(UIDS.to_vec());
    let file = || prop::sample::select(FILES.to_vec());
    let verif =
        prop_oneof![Just(Verif::None), Just(Verif::Truth), (0..3u64).prop_map(Verif::Other),];
    prop_oneof![
        5 => duration().prop_map(Op::Advance),
        4 => (fk(), prop::option::of(file())).prop_map(|(k, ino)| Op::SetTruth { k, ino }),
        2 => (dir(), uid(), mask()).prop_map(|(dir, uid, mask)| Op::SetRights { dir, uid, mask }),
        2 => (fk(), file()).prop_map(|(k, ino)| Op::Add { k, ino }),
        2 => fk().prop_map(|k| Op::AddNegative { k }),
        1 => fk().prop_map(|k| Op::Unlink { k }),
        2 => any_k().prop_map(|k| Op::Invalidate { k }),
        2 => (any_k(), timeout()).prop_map(|(k, ttl)| Op::SetEntryTimeout { k, ttl }),
        3 => (dir(), verif).prop_map(|(dir, verifier)| Op::DirChanged { dir, verifier }),
        2 => (fk(), fk(), prop_oneof![
            Just(RenameMode::Replace),
            Just(RenameMode::NoReplace),
            Just(RenameMode::Exchange)
        ])
            .prop_map(|(from, to, mode)| Op::Rename { from, to, mode }),
        2 => dir().prop_map(|dir| Op::Readdir { dir }),
        3 => (0..PATHS.len()).prop_map(|path| Op::Walk { path }),
        3 => any_k().prop_map(|k| Op::Resolve { k }),
        2 => (fk(), prop::option::of(file())).prop_map(|(k, ino)| Op::Announce { k, ino }),
        1 => (dir(), uid(), mask())
            .prop_map(|(dir, uid, mask)| Op::AnnounceRights { dir, uid, mask }),
        6 => (0..PATHS.len(), prop::option::of(uid()), prop::collection::vec(meddle(), 0..4))
            .prop_map(|(path, uid, meddle)| Op::Resolution { path, uid, meddle }),
        2 => (ino(), uid(), mask()).prop_map(|(ino, uid, mask)| Op::MayAccess { ino, uid, mask }),
        2 => (ino(), uid(), mask()).prop_map(|(ino, uid, mask)| Op::Access { ino, uid, mask }),
        1 => ino().prop_map(|ino| Op::AclChanged { ino }),
    ]
}

/// A case's set-up.
#[derive(Clone, Debug)]
struct Setup {
    timeouts: Timeouts,
    lockless: Lockless,
    ttl: Option<Duration>,
    defaults: bool,
    policy: UnlinkPolicy,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        (timeout(), timeout(), timeout()),
        any::<bool>(),
        prop::option::of(timeout()),
        prop::sample::select(vec![false, false, true]),
        any::<bool>(),
    )
        .prop_map(|((entry, negative, access), truth, ttl, defaults, drop)| Setup {
            timeouts: Timeouts { entry, negative, access },
            lockless: if truth { Lockless::Truth } else { Lockless::NeedsBlock },
            ttl,
            defaults,
            policy: if drop { UnlinkPolicy::Drop } else { UnlinkPolicy::Negative },
        })
}

struct Rig {
    cache: Dcache,
    fs: Arc<Fs>,
    clock: Arc<ManualClock>,
    model: Model,
}

impl Rig {
    fn new(s: &Setup) -> Self {
        let clock = Arc::new(ManualClock::new());
        let config = Config::for_entries(64)
            .with_buckets(1024)
            .with_negative_cap(None)
            .with_unlink_policy(s.policy)
            .with_timeouts(s.timeouts)
            .with_clock(clock.clone());
        let cache = lend::cache(config);
        let fs = Arc::new(Fs {
            world: Mutex::new(World::new()),
            log: Mutex::new(Vec::new()),
            lockless: s.lockless,
            ttl: s.ttl,
            defaults: s.defaults,
            in_revalidate: AtomicBool::new(false),
        });
        let mut model = Model::new(s.timeouts, s.policy);
        cache.add(ROOT_INO, b"d", spec(D)).unwrap();
        model.file(&key(2), Some(D));
        Rig { cache, fs, clock, model }
    }

    fn truth(&self, k: &(u64, Vec<u8>)) -> Option<u64> {
        self.fs.world.lock().unwrap().name(k)
    }

    fn rights(&self, ino: u64, uid: u32) -> Mask {
        if self.fs.defaults { Mask::ALL } else { self.fs.world.lock().unwrap().rights(ino, uid) }
    }

    /// The filesystem was not called.
    fn no_calls(&self, what: &str) -> Result<(), TestCaseError> {
        let calls = self.fs.take_log();
        prop_assert!(calls.is_empty(), "{}: called {:?}", what, calls);
        Ok(())
    }

    fn absorb(&mut self) -> Result<Vec<Call>, TestCaseError> {
        let calls = self.fs.take_log();
        self.model.absorb(calls.clone())?;
        Ok(calls)
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Advance(by) => {
                self.clock.advance(by);
                self.model.now_ns += by.as_nanos();
            }
            Op::SetTruth { k, ino } => {
                let mut w = self.fs.world.lock().unwrap();
                let key = key(k);
                match ino {
                    Some(i) => w.names.insert(key.clone(), i),
                    None => w.names.remove(&key),
                };
                *w.verifier.get_mut(&key.0).unwrap() += 1;
            }
            Op::SetRights { dir, uid, mask } => {
                self.fs.world.lock().unwrap().rights.insert((dir, uid), mask);
            }
            Op::Announce { k, ino } => {
                self.apply(&Op::SetTruth { k, ino })?;
                self.apply(&Op::DirChanged { dir: KEYS[k].0, verifier: Verif::None })?;
            }
            Op::AnnounceRights { dir, uid, mask } => {
                self.apply(&Op::SetRights { dir, uid, mask })?;
                self.apply(&Op::AclChanged { ino: dir })?;
            }
            Op::Add { k, ino } => {
                let key = key(k);
                let got = self.cache.add(key.0, &key.1, spec(ino));
                let positive = self.model.dents.get(&key).is_some_and(|d| d.value.is_some());
                if positive {
                    prop_assert_eq!(got, Err(Error::Exists));
                } else {
                    prop_assert_eq!(got, Ok(()));
                    self.model.file(&key, Some(ino));
                    self.model.note_added(key.0, &key.1, true);
                }
            }
            Op::AddNegative { k } => {
                let key = key(k);
                let got = self.cache.add_negative(key.0, &key.1);
                let positive = self.model.dents.get(&key).is_some_and(|d| d.value.is_some());
                if positive {
                    prop_assert_eq!(got, Err(Error::Exists));
                } else {
                    prop_assert_eq!(got, Ok(()));
                    self.model.file(&key, None);
                }
            }
            Op::Unlink { k } => {
                let key = key(k);
                let got = self.cache.unlink(key.0, &key.1);
                let positive = self.model.dents.get(&key).is_some_and(|d| d.value.is_some());
                if positive {
                    prop_assert_eq!(got, Ok(()));
                    match self.model.policy {
                        UnlinkPolicy::Negative => self.model.file(&key, None),
                        UnlinkPolicy::Drop => drop(self.model.dents.remove(&key)),
                    }
                    self.model.listing_changed(key.0, None);
                } else {
                    prop_assert_eq!(got, Err(Error::NotFound));
                }
            }
            Op::Invalidate { k } => {
                let key = key(k);
                let got = self.cache.invalidate(key.0, &key.1);
                prop_assert_eq!(got, self.model.invalidate(&key));
            }
            Op::SetEntryTimeout { k, ttl } => {
                let key = key(k);
                let got = self.cache.set_entry_timeout(key.0, &key.1, ttl);
                let generation = self.model.generation[&key.0];
                let mut expiry = self.model.expiry(ttl);
                match self.model.dents.get_mut(&key) {
                    None => prop_assert_eq!(got, Err(Error::NotFound)),
                    Some(d) => {
                        prop_assert_eq!(got, Ok(()));
                        if d.generation != generation {
                            expiry = expiry.min(d.expiry);
                        }
                        d.expiry = expiry;
                    }
                }
            }
            Op::DirChanged { dir, verifier } => {
                let v = match verifier {
                    Verif::None => None,
                    Verif::Truth => Some(self.fs.world.lock().unwrap().verifier[&dir]),
                    Verif::Other(v) => Some(v),
                };
                self.cache.dir_changed(dir, v).unwrap();
                self.model.report(dir, v);
            }
            Op::Rename { from, to, mode } => self.rename(&key(from), &key(to), mode)?,
            Op::Readdir { dir } => {
                let fs: Arc<dyn Filesystem> = self.fs.clone();
                let batch = lend(&*fs, || self.cache.readdir(dir, 0, 100)).unwrap();
                prop_assert!(batch.eof);
                let calls = self.absorb()?;
                let l = self.model.listings.get(&dir).cloned().unwrap_or_default();
                if calls.is_empty() {
                    prop_assert!(l.complete, "a listing not complete served");
                    self.model.counts.readdir_hits += 1;
                }
                let got: BTreeSet<Vec<u8>> =
                    batch.entries.iter().map(|e| e.name.to_vec()).collect();
                prop_assert_eq!(&got, &l.names);
                self.model.report(dir, l.verifier);
            }
            Op::Walk { path } => self.walk(PATHS[path])?,
            Op::Resolve { k } => drop(self.resolve(&key(k))?),
            Op::Resolution { path, uid, ref meddle } => {
                self.resolution(PATHS[path], uid, meddle)?
            }
            Op::MayAccess { ino, uid, mask } => {
                let guard = epoch::pin();
                let got = self.cache.may_access(&guard, ino, &cred(uid), mask);
                let want = if mask == Mask::NONE {
                    Some(true)
                } else {
                    self.model.mru(ino, uid).map(|m| m.contains(mask))
                };
                if want.is_some() && mask != Mask::NONE {
                    self.model.counts.access_hits += 1;
                }
                let want = match want {
                    Some(true) => Permission::Allowed,
                    Some(false) => Permission::Denied,
                    None => Permission::Unknown,
                };
                prop_assert_eq!(got, want);
            }
            Op::Access { ino, uid, mask } => {
                let got = lend(&*self.fs, || self.cache.access(ino, &cred(uid), mask)).unwrap();
                match self.model.cached_access(ino, uid, mask) {
                    Some(want) => {
                        self.no_calls("a cached access")?;
                        prop_assert_eq!(got, want);
                    }
                    None => {
                        let calls = self.absorb()?;
                        prop_assert_eq!(calls.len(), 1, "{:?}", calls);
                        prop_assert_eq!(got, self.rights(ino, uid).contains(mask));
                    }
                }
            }
            Op::AclChanged { ino } => {
                self.cache.acl_changed(ino).unwrap();
                self.model.access.retain(|&(i, _), _| i != ino);
                self.model.mru.remove(&ino);
            }
        }
        Ok(())
    }

    /// A plain walk: the model's, exactly.
    fn walk(&mut self, path: &str) -> Result<(), TestCaseError> {
        let guard = epoch::pin();
        let got = end_of(&self.cache.walk(&guard, ROOT_INO, path).unwrap());
        drop(guard);
        let model = &mut self.model;
        let want = model_walk(path, |cur, at, name| {
            let k = (cur, name.as_bytes().to_vec());
            if let Some(why) = model.stale(&k) {
                model.counts.fallbacks[reason_index(why)] += 1;
            }
            match model.trusted(&k) {
                None => Err(End::Miss(cur, at)),
                Some(None) => Err(End::Negative(at)),
                Some(Some(ino)) => Ok(ino),
            }
        });
        prop_assert_eq!(got, want, "walk {}", path);
        self.no_calls("a plain walk")
    }

    /// `resolve`: the trusted dentry, else the truth; returns it.
    fn resolve(&mut self, k: &(u64, Vec<u8>)) -> Result<Option<u64>, TestCaseError> {
        let trusted = self.model.trusted(k);
        let truth = self.truth(k);
        let got = lend(&*self.fs, || self.cache.resolve(k.0, &k.1)).unwrap();
        let got = match got {
            Resolved::Found(s) => Some(s.ino),
            Resolved::Negative => None,
        };
        match trusted {
            Some(v) => {
                self.no_calls("resolve of a trusted name")?;
                prop_assert_eq!(got, v, "resolve {:?}: cached", k);
            }
            None if !self.model.dents.contains_key(k) && self.model.listed_absent(k) => {
                self.no_calls("resolve answered by a listing")?;
                self.model.counts.complete_dir_negatives += 1;
                prop_assert_eq!(got, None, "resolve {:?}: listed", k);
            }
            None => {
                self.absorb()?;
                prop_assert_eq!(got, truth, "resolve {:?}: asked", k);
            }
        }
        Ok(got)
    }

    fn rename(
        &mut self,
        from: &(u64, Vec<u8>),
        to: &(u64, Vec<u8>),
        mode: RenameMode,
    ) -> Result<(), TestCaseError> {
        let got = self.cache.rename(from.0, &from.1, to.0, &to.1, mode);
        let m = &mut self.model;
        let Some(src) = m.dents.get(from).and_then(|d| d.value) else {
            prop_assert_eq!(got, Err(Error::NotFound));
            return Ok(());
        };
        let dst = m.dents.get(to).and_then(|d| d.value);
        match dst {
            Some(_) if mode == RenameMode::NoReplace => {
                prop_assert_eq!(got, Err(Error::Exists));
                return Ok(());
            }
            Some(d) if d == src => {
                prop_assert_eq!(got, Ok(()));
                return Ok(());
            }
            None if mode == RenameMode::Exchange => {
                prop_assert_eq!(got, Err(Error::NotFound));
                return Ok(());
            }
            _ => prop_assert_eq!(got, Ok(())),
        }
        if mode == RenameMode::Exchange {
            m.file(from, dst);
        } else {
            match m.policy {
                UnlinkPolicy::Negative => m.file(from, None),
                UnlinkPolicy::Drop => drop(m.dents.remove(from)),
            }
        }
        m.file(to, Some(src));
        m.listing_changed(from.0, None);
        m.listing_changed(to.0, None);
        Ok(())
    }

    /// A path resolved as a FUSE server would.
    fn resolution(
        &mut self,
        path: &str,
        uid: Option<u32>,
        meddle: &[Op],
    ) -> Result<(), TestCaseError> {
        let c = uid.map(cred);
        let comps = components(path);
        let mut after = Unblocked::default();
        // The search rights the unblocks settled: they serve the rest of the resolution (also
        // once the cached result they came from expired), until a revocation.
        let mut settled = BTreeMap::new();
        let mut meddle = meddle.iter();
        for walk in 0..WALKS {
            if walk > 0
                && let Some(op) = meddle.next()
            {
                self.apply(op)?;
                self.check()?;
                if let Op::AclChanged { ino: dir } | Op::AnnounceRights { dir, .. } = *op {
                    settled.retain(|&(d, _), _| d != dir);
                }
            }
            let guard = epoch::pin();
            let got = lend(&*self.fs, || {
                self.cache.walk_as_after(&guard, c.as_ref(), ROOT_INO, path, &after)
            });
            let got = match got.unwrap() {
                Checked::Done(w) => Ok(end_of(&w)),
                Checked::Denied { dir, at } => Ok(End::Denied(dir, at)),
                Checked::Blocked(b) => Err(b),
                other => unreachable!("an end the model does not know: {other:?}"),
            };
            drop(guard);
            // The access hits of this walk: each directory searched whose most recent result
            // answered, up to where the walk stopped.
            let stop = match &got {
                Ok(End::Found(_)) => comps.len(),
                Ok(End::NotDir(at)) => comps.iter().position(|c| c.0 == *at).unwrap(),
                Ok(End::Negative(at) | End::Miss(_, at) | End::Denied(_, at)) => {
                    comps.iter().position(|c| c.0 == *at).unwrap() + 1
                }
                Err(Blocked::Revalidate { at, .. } | Blocked::Access { at, .. }) => {
                    comps.iter().position(|c| c.0 == *at).unwrap() + 1
                }
                Err(other) => unreachable!("blocked as the model does not know: {other:?}"),
            };
            if let Some(uid) = uid {
                let mut cur = ROOT_INO;
                for (_, name) in &comps[..stop] {
                    if self.model.mru(cur, uid).is_some() {
                        self.model.counts.access_hits += 1;
                    }
                    let k = (cur, name.as_bytes().to_vec());
                    let next = match self.model.trusted(&k) {
                        Some(v) => v,
                        None => self.truth(&k),
                    };
                    cur = next.unwrap_or(0);
                }
            }
            let before = self.model.clone();
            let calls = self.absorb()?;
            for call in &calls {
                let lockless = matches!(call, Call::Revalidate { may_block: false, .. });
                prop_assert!(lockless, "walk_as called {:?}", call);
            }
            match got {
                Ok(End::Miss(parent, at)) => {
                    let name = path[at..].split('/').next().unwrap();
                    let k = (parent, name.as_bytes().to_vec());
                    // No such name: the server answers ENOENT (the cache may hold no negative
                    // for it, a complete listing having said so).
                    if self.resolve(&k)?.is_none() {
                        return self.check_resolution(path, uid, &settled, End::Negative(at));
                    }
                }
                Ok(end) => return self.check_resolution(path, uid, &settled, end),
                Err(b) => {
                    let reason = b.reason();
                    self.model.counts.fallbacks[reason_index(reason)] += 1;
                    self.unblock(&before, &calls, &b, uid, &mut after)?;
                    if let (Blocked::Access { dir, .. }, Some(uid)) = (&b, uid) {
                        let allowed =
                            self.model.access_live(*dir, uid).unwrap_or(self.rights(*dir, uid));
                        settled.insert((*dir, uid), allowed.contains(Mask::EXEC));
                    }
                }
            }
        }
        Err(TestCaseError::fail(format!("{path} as {uid:?}: no end in {WALKS} walks")))
    }

    fn unblock(
        &mut self,
        before: &Model,
        calls: &[Call],
        b: &Blocked,
        uid: Option<u32>,
        after: &mut Unblocked,
    ) -> Result<(), TestCaseError> {
        match b {
            Blocked::Revalidate { parent, name, reason, invalid, .. } => {
                let k = (*parent, name.clone());
                let asked = calls.iter().rev().find_map(|c| match c {
                    Call::Revalidate { key, answer, .. } if *key == k => Some(*answer),
                    _ => None,
                });
                let stale = before.stale(&k);
                prop_assert!(stale.is_some(), "{:?} blocked while trusted", k);
                match asked {
                    Some(Revalidate::NeedsBlock) => {
                        prop_assert_eq!((*reason, *invalid), (Reason::NeedsBlock, false));
                    }
                    Some(Revalidate::Invalid) => {
                        prop_assert_eq!((Some(*reason), *invalid), (stale, true));
                    }
                    other => prop_assert!(false, "{:?} blocked after {:?}", k, other),
                }
                let done =
                    lend(&*self.fs, || self.cache.unblock(uid.map(cred).as_ref(), b)).unwrap();
                after.merge(done);
                if *invalid {
                    self.no_calls("unblock of an invalid name")?;
                    let _ = self.model.invalidate(&k);
                } else {
                    let calls = self.absorb()?;
                    let reval = calls.iter().filter(|c| matches!(c, Call::Revalidate { .. }));
                    prop_assert_eq!(reval.count(), 1, "{:?}", calls);
                }
            }
            Blocked::Access { dir, .. } => {
                let uid = uid.expect("an access check with a credential");
                prop_assert!(before.mru(*dir, uid).is_none(), "blocked on a trusted result");
                let done = lend(&*self.fs, || self.cache.unblock(Some(&cred(uid)), b)).unwrap();
                after.merge(done);
                if self.model.cached_access(*dir, uid, Mask::EXEC).is_some() {
                    self.no_calls("unblock of a cached access")?;
                } else {
                    let calls = self.absorb()?;
                    prop_assert_eq!(calls.len(), 1, "{:?}", calls);
                }
            }
            other => unreachable!("blocked as the model does not know: {other:?}"),
        }
        Ok(())
    }

    /// How a resolution must end: names the cache still trusts as it has them, directory
    /// searches as the cached result still trusted says, or else as its unblocks settled them,
    /// everything else as the truth.
    fn check_resolution(
        &self,
        path: &str,
        uid: Option<u32>,
        settled: &BTreeMap<(u64, u32), bool>,
        got: End,
    ) -> Result<(), TestCaseError> {
        let want = model_walk(path, |cur, at, name| {
            if let Some(uid) = uid {
                let allowed = match self.model.access_live(cur, uid) {
                    Some(rights) => rights.contains(Mask::EXEC),
                    None => settled
                        .get(&(cur, uid))
                        .copied()
                        .unwrap_or(self.rights(cur, uid).contains(Mask::EXEC)),
                };
                if !allowed {
                    return Err(End::Denied(cur, at));
                }
            }
            let k = (cur, name.as_bytes().to_vec());
            let listed = !self.model.dents.contains_key(&k) && self.model.listed_absent(&k);
            let answer = match self.model.trusted(&k) {
                Some(v) => v,
                None if listed => None,
                None => self.truth(&k),
            };
            answer.ok_or(End::Negative(at))
        });
        prop_assert_eq!(got, want, "{} as {:?}", path, uid);
        Ok(())
    }

    /// Every name looks up as the model says; the counters agree.
    fn check(&self) -> Result<(), TestCaseError> {
        let guard = epoch::pin();
        for k in 0..KEYS.len() {
            let key = key(k);
            let got = match self.cache.lookup(&guard, key.0, &key.1).unwrap() {
                Lookup::Hit(i) => Some(Some(i.ino())),
                Lookup::Negative => Some(None),
                Lookup::Miss => None,
            };
            let d = self.model.dents.get(&key);
            prop_assert_eq!(got, self.model.trusted(&key), "lookup {:?}: {:?}", key, d);
        }
        drop(guard);
        let s = self.cache.stats();
        let m = self.model.counts;
        let got = Counts {
            revalidations: s.revalidations,
            backend_lookups: s.backend_lookups,
            access_calls: s.access_calls,
            access_hits: s.access_hits,
            fallbacks: [
                s.fallback_expired,
                s.fallback_verifier,
                s.fallback_access,
                s.fallback_needs_block,
            ],
            complete_dir_negatives: s.complete_dir_negatives,
            readdir_hits: s.readdir_hits,
            readdir_misses: s.readdir_misses,
        };
        prop_assert_eq!(got, m);
        prop_assert_eq!((s.walk_fallbacks, s.coalesced_misses), (0, 0));
        prop_assert_eq!(s.nr_dentry, self.model.dents.len() as u64);
        let negatives = self.model.dents.values().filter(|d| d.value.is_none()).count();
        prop_assert_eq!(s.nr_negative, negatives as u64);
        prop_assert_eq!(s.negative_evictions, 0);
        Ok(())
    }
}

fn run(setup: &Setup, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut rig = Rig::new(setup);
    rig.check()?;
    for (i, op) in ops.iter().enumerate() {
        rig.apply(op).map_err(|e| TestCaseError::fail(format!("step {i} {op:?}: {e}")))?;
        rig.check().map_err(|e| TestCaseError::fail(format!("after step {i} {op:?}: {e}")))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn revalidation_follows_the_model(setup in setup(), ops in prop::collection::vec(op(), 1..60)) {
        run(&setup, &ops)?;
    }
}
