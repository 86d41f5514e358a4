//! Entry validity: how long a dentry is trusted, and whether its directory changed since.
//!
//! # Rules
//!
//! - Every dentry, positive and negative, carries one validity word beside its inode pointer
//!   (`Slot`, see `dentry.rs`): its **expiry** (a 32-bit tick, see `clock.rs`; the
//!   filesystem's entry timeout, like FUSE's `entry_valid`) and the **generation** of its
//!   parent directory's verifier when it was filled (32 bits). Packed, the two cost 8 bytes per
//!   dentry.
//! - A directory inode names the state of its verifier by its generation (`Inode::dir_gen`): a
//!   value drawn from one process-wide counter when the directory is made and at each change,
//!   so no two directory states share one (a directory number reused after `forget` never
//!   matches the old one's stamps). [`Dcache::dir_changed`](crate::Dcache::dir_changed) draws
//!   a new one (a single store, one change of the directory at a time, and nothing when a
//!   reported verifier is unchanged: reports are linearizable, see `listing.rs`), and
//!   so does dropping what is cached below a directory (`invalidate`, the last `forget` of a
//!   directory, naming a nameless one), so a negative the drop could not take (held by a
//!   revalidation) is not trusted after it; the cache's own changes (add, unlink, rename) do
//!   not, because they keep the dentries they touch right themselves.
//! - **Trust**: a positive dentry is fresh until its expiry; a negative one until its expiry
//!   *and* only while its generation equals its parent's (negative revalidation: a
//!   remembered miss means nothing once the directory changed). A lockless reader decides this
//!   with loads and compares only.
//! - **Writers** of a validity word hold the name's stripe lock (the `NameLock` proof), like
//!   writers of the inode pointer: fills, instantiation, unlink, rename, refreshes after a
//!   revalidation. A fill or refresh stores the parent's generation as read *before* the
//!   filesystem was asked, so a negative answered before a directory change is never trusted
//!   after it; and if that generation has moved by the time it is filed, the word is filed
//!   expired, so a positive answered before the change is not trusted either (its next use
//!   revalidates it).
//! - **Announcing a change behind the cache**: [`Dcache::dir_changed`](crate::Dcache::dir_changed)
//!   for the directory, then, for a name that went away or now leads elsewhere,
//!   [`Dcache::invalidate`](crate::Dcache::invalidate) of it. The bump comes first so that a
//!   lookup answered before the change and filed after the invalidation arrives expired.
//! - What a reader may observe: the word and the pointer are two atomics, changed together in
//!   one write of the dentry's sequence count (see `dentry.rs`). A lockless lookup or walk step
//!   reads them as one snapshot, so it never pairs an inode with the word of another fill; a
//!   reader of one of them alone sees each as it lands.
//! - Limits, by design: a generation is 32 bits, so a negative dentry that neither expires nor
//!   is looked up while the process draws exactly a multiple of 2^32 generations would be
//!   trusted again; the clock saturates after 2.28 years (see `clock.rs`).

use std::time::Duration;

use crate::clock::NEVER;

/// How long the cache trusts what it is told, unless a [`Revalidate`](crate::Revalidate) answer
/// or [`Dcache::set_entry_timeout`](crate::Dcache::set_entry_timeout) says otherwise.
/// `Duration::MAX` (the default for all three) is "until told otherwise".
///
/// ```
/// use std::time::Duration;
/// use udcache::{Config, Timeouts};
/// let second = Duration::from_secs(1);
/// let config = Config::for_entries(1024)
///     .with_timeouts(Timeouts { entry: second, negative: second, access: second });
/// # drop(config);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// A positive dentry (FUSE's `entry_valid`).
    pub entry: Duration,
    /// A negative dentry (also invalidated by any change of its directory).
    pub negative: Duration,
    /// A cached permission result (also invalidated by any attribute change of its inode).
    pub access: Duration,
}

impl Timeouts {
    /// Trust everything until told otherwise.
    pub const FOREVER: Timeouts =
        Timeouts { entry: Duration::MAX, negative: Duration::MAX, access: Duration::MAX };

    /// The timeout of a dentry of this polarity.
    pub(crate) fn of(&self, negative: bool) -> Duration {
        if negative { self.negative } else { self.entry }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::FOREVER
    }
}

/// Why a walk left the lockless mode (each fallback is counted under one reason in
/// [`Stats`](crate::Stats)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// A dentry's timeout passed, and the filesystem was not asked without blocking or
    /// answered that it is no longer valid.
    Expired,
    /// A negative dentry's directory changed since it was filled (same conditions).
    Verifier,
    /// The most recent access result of a directory on the path was not for this credential,
    /// had expired or was revoked.
    AccessMiss,
    /// The filesystem could not revalidate a dentry without blocking.
    NeedsBlock,
}

/// A dentry's validity word: expiry tick (high half) and parent generation (low half).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Validity(pub(crate) u64);

impl Validity {
    pub(crate) fn new(expiry: u32, generation: u32) -> Self {
        Validity(u64::from(expiry) << 32 | u64::from(generation))
    }

    pub(crate) fn expiry(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub(crate) fn generation(self) -> u32 {
        self.0 as u32
    }

    /// Whether the dentry may be trusted: `Err` says why not. `dir_gen` is asked only for a
    /// negative dentry, `now` only for an expiry that is not [`NEVER`]: the common cases cost
    /// one load and one compare.
    #[inline]
    pub(crate) fn check(
        self,
        negative: bool,
        dir_gen: impl FnOnce() -> u32,
        now: impl FnOnce() -> u32,
    ) -> Result<(), Reason> {
        if negative && self.generation() != dir_gen() {
            return Err(Reason::Verifier);
        }
        if self.expiry() != NEVER && now() >= self.expiry() {
            return Err(Reason::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_checks() {
        let v = Validity::new(10, 7);
        assert_eq!((v.expiry(), v.generation()), (10, 7));
        assert_eq!(v.check(false, || unreachable!(), || 9), Ok(()));
        assert_eq!(v.check(false, || unreachable!(), || 10), Err(Reason::Expired));
        assert_eq!(v.check(true, || 7, || 9), Ok(()));
        assert_eq!(v.check(true, || 8, || 9), Err(Reason::Verifier));
        // Positives ignore the generation; a never-expiring word never reads the clock.
        let forever = Validity::new(NEVER, 0);
        assert_eq!(forever.check(false, || unreachable!(), || unreachable!()), Ok(()));
        assert_eq!(forever.check(true, || 1, || unreachable!()), Err(Reason::Verifier));
    }
}
