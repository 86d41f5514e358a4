//! The access cache: each inode's permission results per credential, the most recent one
//! readable without locks.
//!
//! # Rules
//!
//! - Per inode (`AccessCache`): `generation`, the attribute generation; `mru`, a copy of the most
//!   recently used result under a sequence count (`seq.rs`); `all`, a mutex over at most
//!   [`ACCESS_PER_INODE`] results, most recent last. `all` is a leaf lock.
//! - A result records the credential (uid, primary gid, supplementary-groups digest), the
//!   [`Mask`] of rights the filesystem granted (all three asked at once, as NFS's ACCESS call
//!   does), its expiry tick, and the inode's `generation` read *before* the filesystem was asked. It
//!   is trusted only while that `generation` is the inode's and its expiry has not passed.
//! - **Lockless check** ([`Dcache::may_access`](crate::Dcache::may_access), and each directory of a
//!   [`Dcache::walk_as`](crate::Dcache::walk_as)): one `try_read` of `mru` and compares. A
//!   writer in the middle, another credential, an expired or revoked result: "unknown", and the
//!   caller takes the locked path ([`Dcache::access`](crate::Dcache::access)). It never spins and never writes.
//! - **Locked lookup**: under `all`; a match becomes the MRU (`mru` written under `all`).
//! - **Fill**: the filesystem is asked with no lock held and no guard pinned; its answer is
//!   filed under `all` only if `generation` has not moved meanwhile (it is returned to the caller
//!   either way: it was true when given).
//! - **Revocation** (an attribute change through [`Dcache::setattr`](crate::Dcache::setattr)
//!   of mode, owner or group, or [`Dcache::acl_changed`](crate::Dcache::acl_changed)): `generation` is bumped first (`Release`),
//!   then `all` is emptied and `mru` cleared under `all`. Every result filled before carries an
//!   older `generation`, so once the revocation returns no check trusts one (a checker whose load of
//!   `generation` happens after the bump sees it: coherence).
//! - Limits, by design: `generation` is 32 bits (a result surviving exactly 2^32 revocations of its
//!   inode would be trusted again); the groups digest is 64 bits of SipHash under keys random
//!   per process, so two group lists of one uid and gid collide with probability 2^-64.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

use crate::clock::Ticks;
use crate::seq::SeqWords;
use crate::sync::{AtomicU32, Mutex, Ordering, lock};

/// Results kept per inode (the locked list); the oldest goes first.
pub const ACCESS_PER_INODE: usize = 8;

/// Who asks: user, primary group, and a digest of the supplementary groups. Two credentials
/// with the same three are the same to the access cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cred {
    uid: u32,
    gid: u32,
    groups: u64,
}

impl Cred {
    /// A credential; `groups` in any order, duplicates ignored.
    ///
    /// ```
    /// use udcache::Cred;
    /// assert_eq!(Cred::new(1000, 100, &[4, 27]), Cred::new(1000, 100, &[27, 4, 4]));
    /// assert_ne!(Cred::new(1000, 100, &[4]), Cred::new(1000, 100, &[]));
    /// ```
    pub fn new(uid: u32, gid: u32, groups: &[u32]) -> Self {
        static KEYS: OnceLock<RandomState> = OnceLock::new();
        let mut sorted = groups.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        Cred { uid, gid, groups: KEYS.get_or_init(RandomState::new).hash_one(&sorted) }
    }

    /// A credential with a digest the caller computed itself (a C caller, say): credentials
    /// with different supplementary groups must have different digests.
    pub fn with_digest(uid: u32, gid: u32, groups_digest: u64) -> Self {
        Cred { uid, gid, groups: groups_digest }
    }

    /// The user.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The primary group.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// The supplementary groups' digest.
    pub fn groups_digest(&self) -> u64 {
        self.groups
    }
}

/// Access rights, as `access(2)`'s `R_OK | W_OK | X_OK`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask(pub(crate) u8);

impl Mask {
    /// No right.
    pub const NONE: Mask = Mask(0);
    /// Search a directory or execute a file (`X_OK`).
    pub const EXEC: Mask = Mask(1);
    /// Write (`W_OK`).
    pub const WRITE: Mask = Mask(2);
    /// Read (`R_OK`).
    pub const READ: Mask = Mask(4);
    /// All three.
    pub const ALL: Mask = Mask(7);

    /// The mask of `R_OK | W_OK | X_OK` bits, or `None` if other bits are set.
    ///
    /// ```
    /// use udcache::Mask;
    /// assert_eq!(Mask::from_bits(5), Some(Mask::READ | Mask::EXEC));
    /// assert_eq!(Mask::from_bits(8), None);
    /// ```
    pub fn from_bits(bits: u32) -> Option<Mask> {
        (bits & !7 == 0).then_some(Mask(bits as u8))
    }

    /// The bits.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether every right of `other` is in `self`.
    pub fn contains(self, other: Mask) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Mask {
    type Output = Mask;
    fn bitor(self, rhs: Mask) -> Mask {
        Mask(self.0 | rhs.0)
    }
}

/// A cached access answer ([`Dcache::may_access`](crate::Dcache::may_access), [`Dcache::cached_access`](crate::Dcache::cached_access)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// A trusted result grants every right asked.
    Allowed,
    /// A trusted result lacks one of them.
    Denied,
    /// No trusted result for the credential is cached: ask ([`Dcache::access`](crate::Dcache::access)).
    Unknown,
}

impl Permission {
    pub(crate) fn of(answer: Option<bool>) -> Self {
        match answer {
            Some(true) => Permission::Allowed,
            Some(false) => Permission::Denied,
            None => Permission::Unknown,
        }
    }
}

/// The state of an inode's access results when a caller started computing rights (see
/// [`Dcache::access_stamp`](crate::Dcache::access_stamp)).
///
/// It names the inode object (32 bits of its address: a recycled object is renewed, its
/// generation moving on) and its access generation. Two inode objects whose addresses differ by
/// a multiple of 32 GiB share the object part, so a stamp taken on one file matches another
/// file under the same number only if both that and the generation agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessStamp {
    pub(crate) object: u32,
    pub(crate) generation: u32,
}

impl AccessStamp {
    /// The stamp as one word (for a C caller, say): lossless, see [`AccessStamp::from_raw`].
    ///
    /// ```
    /// use udcache::{AccessStamp, Config, Dcache, ROOT_INO};
    /// let cache = Dcache::new(Config::for_entries(16));
    /// let stamp = cache.access_stamp(ROOT_INO).unwrap();
    /// assert_eq!(AccessStamp::from_raw(stamp.to_raw()), stamp);
    /// ```
    pub fn to_raw(self) -> u64 {
        u64::from(self.object) << 32 | u64::from(self.generation)
    }

    /// The stamp whose [`AccessStamp::to_raw`] is `raw`. Any word is accepted: a forged or
    /// corrupted one is never dereferenced, only compared, so at worst
    /// [`Dcache::store_access`](crate::Dcache::store_access) refuses the result (no match) or, if the word matches the
    /// inode's current state, files it as a fresh stamp would — a result the caller computed
    /// before a revocation may then be stored (stale), which is the caller's mistake to avoid.
    pub fn from_raw(raw: u64) -> Self {
        AccessStamp { object: (raw >> 32) as u32, generation: raw as u32 }
    }
}

/// One cached result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Granted {
    pub(crate) cred: Cred,
    pub(crate) allowed: Mask,
    pub(crate) expiry: u32,
    pub(crate) generation: u32,
}

/// Marks a filled `mru` (an all-zero one is empty, not root's result).
const FILLED: u64 = 1 << 8;

impl Granted {
    fn encode(&self) -> [u64; 4] {
        [
            u64::from(self.cred.uid) << 32 | u64::from(self.cred.gid),
            self.cred.groups,
            u64::from(self.expiry) << 32 | u64::from(self.generation),
            FILLED | u64::from(self.allowed.0),
        ]
    }

    fn decode(w: [u64; 4]) -> Option<Granted> {
        (w[3] & FILLED != 0).then(|| Granted {
            cred: Cred { uid: (w[0] >> 32) as u32, gid: w[0] as u32, groups: w[1] },
            allowed: Mask(w[3] as u8 & 7),
            expiry: (w[2] >> 32) as u32,
            generation: w[2] as u32,
        })
    }

    /// Whether it may be trusted for `cred` now (`now` read only for a finite expiry).
    fn trusted(&self, cred: &Cred, generation: u32, now: impl FnOnce() -> u32) -> bool {
        self.cred == *cred
            && self.generation == generation
            && (self.expiry == crate::clock::NEVER || now() < self.expiry)
    }
}

/// An inode's access results (see the module rules). `repr(C)`: what the lockless check reads
/// first.
#[repr(C)]
pub(crate) struct AccessCache {
    generation: AtomicU32,
    mru: SeqWords<4>,
    all: Mutex<Vec<Granted>>,
}

impl AccessCache {
    pub(crate) fn new() -> Self {
        AccessCache {
            generation: AtomicU32::new(0),
            mru: SeqWords::new(),
            all: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn generation(&self) -> u32 {
        // Acquire: pairs with the Release bump of `revoke`: a filler that reads the new value
        // asks the filesystem after the attribute change it was told of.
        self.generation.load(Ordering::Acquire)
    }

    /// The lockless check: `Some(allowed)` if the most recent result answers for `cred`.
    #[inline]
    pub(crate) fn check(&self, cred: &Cred, mask: Mask, now: impl FnOnce() -> u32) -> Option<bool> {
        let g = Granted::decode(self.mru.try_read()?)?;
        g.trusted(cred, self.generation(), now).then(|| g.allowed.contains(mask))
    }

    /// The locked lookup: a trusted result for `cred` becomes the most recent.
    pub(crate) fn lookup(&self, cred: &Cred, ticks: &Ticks) -> Option<Mask> {
        let mut all = lock(&self.all);
        let generation = self.generation();
        let at = all.iter().rposition(|g| g.trusted(cred, generation, || ticks.now()))?;
        let g = all.remove(at);
        all.push(g);
        if Granted::decode(self.mru.read()) != Some(g) {
            self.mru.write(g.encode());
        }
        Some(g.allowed)
    }

    /// Files a result filled under generation `g.generation`; dropped (`false`) if that is not
    /// current.
    pub(crate) fn store(&self, g: Granted) -> bool {
        let mut all = lock(&self.all);
        if g.generation != self.generation() {
            return false;
        }
        all.retain(|old| old.cred != g.cred && old.generation == g.generation);
        if all.len() == ACCESS_PER_INODE {
            all.remove(0);
        }
        all.push(g);
        self.mru.write(g.encode());
        true
    }

    /// Makes the object another file's (owned exclusively, by `Inode::init`): no result of the
    /// last file survives, and its generation moves on rather than starting over, so that an
    /// [`AccessStamp`] taken on the last file never matches the new one.
    pub(crate) fn renew(&mut self) {
        // Relaxed: owned exclusively (`&mut self`).
        let next = self.generation.load(Ordering::Relaxed).wrapping_add(1);
        *self = AccessCache::new();
        self.generation.store(next, Ordering::Relaxed);
    }

    /// Forgets every result: bump first (no check trusts an older one from then on), then
    /// empty the list and the MRU.
    pub(crate) fn revoke(&self) {
        // Release: pairs with the Acquire of `generation()` (see there).
        self.generation.fetch_add(1, Ordering::Release);
        let mut all = lock(&self.all);
        all.clear();
        self.mru.write([0; 4]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(uid: u32, generation: u32) -> Granted {
        let cred = Cred::with_digest(uid, 5, 99);
        Granted { cred, allowed: Mask::READ, expiry: crate::clock::NEVER, generation }
    }

    #[test]
    fn mru_round_trips_and_empty_is_no_one() {
        let g = granted(0, 3);
        assert_eq!(Granted::decode(g.encode()), Some(g));
        assert_eq!(Granted::decode([0; 4]), None); // not root with no rights
    }

    #[test]
    fn bounded_most_recent_last_and_revoked_by_generation() {
        let c = AccessCache::new();
        let ticks = Ticks::new(std::sync::Arc::new(crate::clock::ManualClock::new()));
        for uid in 0..ACCESS_PER_INODE as u32 + 3 {
            c.store(granted(uid, 0));
        }
        assert_eq!(lock(&c.all).len(), ACCESS_PER_INODE);
        assert_eq!(c.lookup(&granted(0, 0).cred, &ticks), None, "the oldest went first");
        let two = granted(2 + 3, 0).cred;
        assert_eq!(c.lookup(&two, &ticks), Some(Mask::READ));
        assert_eq!(c.check(&two, Mask::READ, || 0), Some(true), "a locked hit is the MRU");
        assert_eq!(c.check(&two, Mask::WRITE, || 0), Some(false));
        c.revoke();
        assert_eq!(c.check(&two, Mask::READ, || 0), None);
        assert_eq!(c.lookup(&two, &ticks), None);
        c.store(granted(7, 0)); // filled before the revocation: not filed
        assert_eq!(c.lookup(&granted(7, 0).cred, &ticks), None);
    }
}
