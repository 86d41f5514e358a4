//! Revalidation under fire: a filesystem changes behind the cache — names in directory `d`
//! appear and vanish, alice's right to search `d` is revoked and granted again — and announces
//! each change as a filesystem must (`dir_changed`, then `invalidate` for a name that went
//! away; `acl_changed` or a `setattr` of the mode for a right), while walker threads resolve `d/n<i>` as alice or
//! bob, through lockless walks, the blocking path and `resolve`, with entries and access
//! results expiring on a simulated clock that a third thread drives.
//!
//! The checker: each truth is a version counter (odd: the name exists, or alice is denied)
//! with the last version whose announcement completed. A walker reads both before a walk and
//! the version again after; when the version did not move and its announcement had completed
//! before the walk began, the walk's answer must be that truth — a stale negative, a stale
//! positive, a revoked grant or a revoked denial used after its announcement is a violation.
//! Runs 1.5 s; `UDCACHE_REVAL_SECS=60` for a longer run.

mod common;

mod lend;

use lend::lend;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{End, resolve_path};
use udcache::ManualClock;
use udcache::{
    Attr, Cached, Config, Cred, Dcache, Errno, Error, FileType, Filesystem, InodeSpec, Mask,
    ROOT_INO, Revalidate, Timeouts,
};

const DIR: u64 = 2;
const NAMES: usize = 6;
const ALICE: u32 = 1000;

fn name(i: usize) -> Vec<u8> {
    format!("n{i}").into_bytes()
}

fn file(i: usize) -> InodeSpec {
    InodeSpec { ino: 100 + i as u64, kind: FileType::Regular, fs_data: i as u64 }
}

/// The filesystem's truth and what of it has been announced. SeqCst throughout: the test's
/// own bookkeeping must not be the weak link.
struct Truth {
    name: [AtomicU64; NAMES],
    name_announced: [AtomicU64; NAMES],
    acl: AtomicU64,
    acl_announced: AtomicU64,
}

impl Truth {
    fn index(name: &[u8]) -> Option<usize> {
        let n = std::str::from_utf8(name.strip_prefix(b"n")?).ok()?.parse().ok()?;
        (n < NAMES).then_some(n)
    }

    fn now_root_d() -> InodeSpec {
        InodeSpec { ino: DIR, kind: FileType::Directory, fs_data: 0 }
    }

    fn now(&self, parent: u64, name: &[u8]) -> Option<InodeSpec> {
        match (parent, Truth::index(name)) {
            (ROOT_INO, _) if name == b"d" => Some(Truth::now_root_d()),
            (DIR, Some(i)) => (self.name[i].load(Ordering::SeqCst) % 2 == 1).then(|| file(i)),
            _ => None,
        }
    }
}

impl Filesystem for Truth {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(self.now(parent, name))
    }

    /// Answers lockless for even names (from the truth, as a filesystem with a delegation
    /// could), needs to block for odd ones.
    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        if !may_block && Truth::index(name).is_some_and(|i| i % 2 == 1) {
            return Revalidate::NeedsBlock;
        }
        if self.now(parent, name).map(|s| s.ino) == cached.inode.map(|s| s.ino) {
            Revalidate::Valid { ttl: None }
        } else {
            Revalidate::Invalid
        }
    }

    fn access(&self, ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        let denied = ino == DIR && cred.uid() == ALICE && self.acl.load(Ordering::SeqCst) % 2 == 1;
        Ok(if denied { Mask::READ } else { Mask::ALL })
    }
}

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = (self.0 ^ (self.0 >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// One change behind the cache, announced.
fn change(cache: &Dcache, truth: &Truth, rng: &mut Rng, verifier: &mut u64) {
    if rng.below(4) == 0 {
        let v = truth.acl.fetch_add(1, Ordering::SeqCst) + 1;
        if rng.below(2) == 0 {
            cache.acl_changed(DIR).unwrap();
        } else {
            let mode = 0o40000 | (v % 0o1000) as u32; // a new mode each time: a change
            cache.setattr(DIR, &Attr { mode, ..Attr::default() }, Duration::from_secs(60)).unwrap();
        }
        truth.acl_announced.store(v, Ordering::SeqCst);
        return;
    }
    let i = rng.below(NAMES as u64) as usize;
    let v = truth.name[i].fetch_add(1, Ordering::SeqCst) + 1;
    *verifier += 1;
    let reported = (rng.below(2) == 0).then_some(*verifier);
    cache.dir_changed(DIR, reported).unwrap();
    // A creation needs nothing more: the bump alone stales every negative of `d`. A removal
    // must also drop the positive dentry (positives are governed by their timeouts).
    if v.is_multiple_of(2) {
        match cache.invalidate(DIR, &name(i)) {
            Ok(()) | Err(Error::NotFound) => {}
            Err(e) => panic!("{e}"),
        }
    }
    truth.name_announced[i].store(v, Ordering::SeqCst);
}

/// What the checker found: walks, walks whose truth was settled (checkable), violations.
#[derive(Default)]
struct Tally {
    walks: u64,
    checked: u64,
    gave_up: u64,
}

/// One walk of `d/n<i>` and its check against the truth.
fn walk_and_check(cache: &Dcache, truth: &Truth, i: usize, cred: &Cred, tally: &mut Tally) {
    let name_seen = truth.name_announced[i].load(Ordering::SeqCst);
    let name_before = truth.name[i].load(Ordering::SeqCst);
    let acl_seen = truth.acl_announced.load(Ordering::SeqCst);
    let acl_before = truth.acl.load(Ordering::SeqCst);
    let (end, _) = lend(truth, || resolve_path(cache, Some(cred), &format!("d/n{i}")));
    let name_settled =
        truth.name[i].load(Ordering::SeqCst) == name_before && name_seen == name_before;
    let acl_settled = truth.acl.load(Ordering::SeqCst) == acl_before && acl_seen == acl_before;
    let alice = cred.uid() == ALICE;
    let alice_denied = alice && acl_before % 2 == 1;
    let exists = name_before % 2 == 1;
    tally.walks += 1;
    if alice && acl_settled && matches!(end, End::Found(_) | End::Negative) {
        tally.checked += 1;
        assert!(!alice_denied, "alice searched d after her right was revoked: {end:?}");
    }
    match end {
        End::GaveUp => tally.gave_up += 1,
        End::Denied(dir) => {
            assert!(alice && dir == DIR, "bob, or another directory, denied: {dir}");
            if acl_settled {
                tally.checked += 1;
                assert!(alice_denied, "a revoked denial used after the grant was announced");
            }
        }
        End::Found(ino) => {
            assert_eq!(ino, file(i).ino, "n{i} led elsewhere");
            if name_settled {
                tally.checked += 1;
                assert!(exists, "n{i} found after its removal was announced");
            }
        }
        End::Negative => {
            if name_settled {
                tally.checked += 1;
                assert!(!exists, "n{i} missing after its creation was announced");
            }
        }
    }
}

#[test]
fn walks_never_trust_what_an_announced_change_revoked() {
    let secs = std::env::var("UDCACHE_REVAL_SECS").ok().and_then(|s| s.parse().ok());
    let run_for = Duration::from_secs_f64(secs.unwrap_or(1.5));
    let clock = Arc::new(ManualClock::new());
    let ttl = Duration::from_millis(50);
    let timeouts = Timeouts { entry: ttl, negative: ttl, access: ttl };
    let cache =
        lend::cache(Config::for_entries(256).with_timeouts(timeouts).with_clock(clock.clone()));
    let d = Truth::now_root_d();
    cache.add(ROOT_INO, b"d", d).unwrap(); // so that the changer can announce from the start
    let truth = Truth {
        name: std::array::from_fn(|_| AtomicU64::new(0)),
        name_announced: std::array::from_fn(|_| AtomicU64::new(0)),
        acl: AtomicU64::new(0),
        acl_announced: AtomicU64::new(0),
    };
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let tallies = std::thread::scope(|s| {
        s.spawn(|| {
            let (mut rng, mut verifier) = (Rng(7), 0);
            while !stop.load(Ordering::Relaxed) {
                change(&cache, &truth, &mut rng, &mut verifier);
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                clock.advance(Duration::from_millis(5));
                std::thread::sleep(Duration::from_micros(500));
            }
        });
        let walkers: Vec<_> = (0..2u64)
            .map(|w| {
                let (cache, truth, stop) = (&cache, &truth, &stop);
                s.spawn(move || {
                    let (mut rng, mut tally) = (Rng(100 + w), Tally::default());
                    let creds = [Cred::new(ALICE, 100, &[]), Cred::new(1001, 100, &[4])];
                    while !stop.load(Ordering::Relaxed) {
                        let i = rng.below(NAMES as u64) as usize;
                        let cred = &creds[rng.below(2) as usize];
                        walk_and_check(cache, truth, i, cred, &mut tally);
                    }
                    tally
                })
            })
            .collect();
        std::thread::sleep(run_for);
        stop.store(true, Ordering::Relaxed);
        walkers.into_iter().map(|w| w.join().unwrap()).collect::<Vec<_>>()
    });
    let walks: u64 = tallies.iter().map(|t| t.walks).sum();
    let checked: u64 = tallies.iter().map(|t| t.checked).sum();
    let gave_up: u64 = tallies.iter().map(|t| t.gave_up).sum();
    let s = cache.stats();
    eprintln!(
        "{walks} walks in {:?}, {checked} checked against a settled truth, {gave_up} gave up; \
         revalidations {}, fallbacks {} (expired {}, verifier {}, access {}, needs-block {}), \
         access hits {}",
        start.elapsed(),
        s.revalidations,
        s.reval_fallbacks(),
        s.fallback_expired,
        s.fallback_verifier,
        s.fallback_access,
        s.fallback_needs_block,
        s.access_hits
    );
    // The checker must have had something to check, and every path must have been exercised.
    assert!(checked > 100 && checked * 4 > walks, "too few settled walks: {checked} of {walks}");
    assert!(gave_up * 100 <= walks, "walks keep failing to settle: {gave_up} of {walks}");
    assert!(s.fallback_verifier > 0 && s.fallback_needs_block > 0 && s.fallback_access > 0);
    assert!(s.revalidations > 0 && s.access_hits > 0);
    cache.verify().unwrap();
}
