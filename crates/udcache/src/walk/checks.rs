//! The lockless checks of a revalidating walk: each dentry's validity, each directory's
//! most recent access result, and the filesystem asked without blocking.
//!
//! # Rules
//!
//! - **Lockless checks.** A walk ([`Dcache::walk`], [`Dcache::walk_as`]) checks each dentry's
//!   validity word (see `valid.rs`) and, in `walk_as` with a credential, the most recent
//!   access result of each directory it searches (see `access.rs`): loads and compares
//!   only. The clock is read once per walk at most for those checks (a refresh after a
//!   lockless [`Revalidate::Valid`] reads it again to date the new expiry).
//! - **Pushing the block late.** A dentry that fails the check is offered to
//!   [`Filesystem::revalidate`] with `may_block = false` (in `walk_as`): the filesystem may
//!   answer from what it knows without blocking ([`Revalidate::Valid`]: the walk goes on,
//!   lockless, and the dentry is refreshed if its name lock is free — a `try_lock`, never a
//!   wait), or say it is stale ([`Revalidate::Invalid`]) or that it must block
//!   ([`Revalidate::NeedsBlock`]). Only those two, an access miss, or no filesystem to ask
//!   (plain `walk`) end the lockless walk: it returns [`Checked::Blocked`](crate::Checked::Blocked) (plain `walk`: a
//!   [`Walk::Miss`](crate::Walk::Miss) at that component), counted under its [`Reason`].
//! - **Refreshes that would change nothing are skipped.** Expiries round down to a tick
//!   (16.8 ms, see `clock.rs`), so a [`Revalidate::Valid`] whose timeout ends within the
//!   current tick would file a word that is already expired. If that word would also record
//!   the generation the dentry has already, nothing is written (no name lock either): the
//!   answer serves the walk that asked, and the next use asks again. A filesystem that answers
//!   from a cache about to expire (NFS's attributes in their last tick) would otherwise have
//!   every walk write the dentries all threads read. A new generation is still written, expired
//!   or not: a negative revalidated after its directory changed is then asked about as expired,
//!   not as changed (which NFS answers only with a LOOKUP).

use std::time::Duration;

use crate::access::{Cred, Mask};
use crate::cache::{Dcache, Lookup, Stale};
use crate::clock::{NEVER, Ticks};
use crate::dentry::{DentryEntry, DentryWrites, NameLock};
use crate::fs::{Cached, Filesystem, Revalidate};
use crate::inode::Inode;
use crate::stats::Event;
use crate::unblocked::Unblocked;
use crate::valid::{Reason, Validity};

use super::Stop;

/// Why a [`Dcache::walk_as`] left the lockless mode: the blocking work to do
/// ([`Dcache::unblock`]) before walking again.
// Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Blocked {
    /// The dentry `name` in directory `parent` is not trusted and the filesystem could not
    /// confirm it without blocking.
    Revalidate {
        /// The directory.
        parent: u64,
        /// The name.
        name: Vec<u8>,
        /// Where the component starts in the path.
        at: usize,
        /// Why it is not trusted (or [`Reason::NeedsBlock`]).
        reason: Reason,
        /// The filesystem already answered [`Revalidate::Invalid`]: drop it, do not ask again.
        invalid: bool,
    },
    /// The credential's access to directory `dir` is not in its most recent access result.
    Access {
        /// The directory.
        dir: u64,
        /// Where the component to look up in it starts.
        at: usize,
    },
}

impl Blocked {
    /// Why the walk left the lockless mode.
    pub fn reason(&self) -> Reason {
        match self {
            Blocked::Revalidate { reason, .. } => *reason,
            Blocked::Access { .. } => Reason::AccessMiss,
        }
    }
}

/// What one walk checks beyond the rename sequence, and what it learnt on the way.
pub(crate) struct Checks<'a> {
    fs: Option<&'a dyn Filesystem>,
    cred: Option<Cred>,
    after: Option<&'a Unblocked>,
    ticks: &'a Ticks,
    now: Option<u32>,
    access_hits: u64,
}

impl<'a> Checks<'a> {
    pub(crate) fn new(
        cache: &'a Dcache,
        fs: Option<&'a dyn Filesystem>,
        cred: Option<Cred>,
        after: Option<&'a Unblocked>,
    ) -> Self {
        Checks { fs, cred, after, ticks: &cache.ticks, now: None, access_hits: 0 }
    }

    /// The current tick for the walk's checks, read once per walk.
    #[inline]
    pub(crate) fn now(&mut self) -> u32 {
        match self.now {
            Some(t) => t,
            None => *self.now.insert(self.ticks.now()),
        }
    }

    /// The access check of directory `dir` before the component at `at` is looked up in it:
    /// `None` to go on.
    #[inline]
    pub(crate) fn search<'g>(&mut self, dir: &Inode, at: usize) -> Option<Stop<'g>> {
        let cred = self.cred?;
        match dir.access.check(&cred, Mask::EXEC, || self.now()) {
            Some(true) => {
                self.access_hits += 1;
                None
            }
            Some(false) => {
                self.access_hits += 1;
                Some(Stop::Denied { dir: dir.ino(), at })
            }
            None => self.settled_search(dir, &cred, at),
        }
    }

    /// An access miss: what the last `unblock` settled for it, or the blocking path.
    #[cold]
    fn settled_search<'g>(&self, dir: &Inode, cred: &Cred, at: usize) -> Option<Stop<'g>> {
        match self.after.and_then(|after| after.search(dir, cred)) {
            Some(true) => None,
            Some(false) => Some(Stop::Denied { dir: dir.ino(), at }),
            None => Some(Stop::Blocked(Blocked::Access { dir: dir.ino(), at })),
        }
    }

    /// A stale dentry `name` in `dir`: the lockless revalidation (see the rules).
    #[cold]
    pub(crate) fn revalidate<'g>(
        &mut self,
        cache: &'g Dcache,
        dir: &'g Inode,
        name: &[u8],
        at: usize,
        stale: Stale<'g>,
    ) -> Result<Lookup<'g>, Blocked> {
        let blocked = |reason, invalid| Blocked::Revalidate {
            parent: dir.ino(),
            name: name.to_vec(),
            at,
            reason,
            invalid,
        };
        if let Some(inode) = self.after.and_then(|after| after.answer(dir, name, &stale)) {
            return Ok(inode.map_or(Lookup::Negative, Lookup::Hit));
        }
        let Some(fs) = self.fs else { return Err(blocked(stale.reason, false)) };
        // Before asking: a refresh carries no newer generation than the answer saw.
        let generation = dir.dir_gen();
        let cached = cached(&stale, generation, self.now());
        cache.events.bump(Event::Revalidation);
        match fs.revalidate(dir.ino(), name, cached, false) {
            Revalidate::Valid { ttl } => {
                let was = seen(stale.inode, stale.word);
                if let Some(ttl) = cache.refresh_ttl(ttl, was, generation)
                    && let Some(lock) = cache.try_lock_name(dir.ino(), name)
                {
                    cache.refresh(&lock, stale.entry, was, ttl, generation);
                }
                Ok(stale.inode.map_or(Lookup::Negative, Lookup::Hit))
            }
            Revalidate::Invalid => Err(blocked(stale.reason, true)),
            Revalidate::NeedsBlock => Err(blocked(Reason::NeedsBlock, false)),
        }
    }

    /// Adds up what the walk counted.
    pub(crate) fn finish(self, cache: &Dcache) {
        if self.access_hits > 0 {
            cache.events.add(Event::AccessHit, self.access_hits);
        }
    }
}

/// A dentry's state as a revalidation saw it: its inode pointer (compared, never followed)
/// and its validity word.
pub(crate) type Seen = (*const Inode, Validity);

pub(crate) fn seen(inode: Option<&Inode>, word: Validity) -> Seen {
    (inode.map_or(std::ptr::null(), |i| i as *const Inode), word)
}

/// What the filesystem is told about a stale dentry.
pub(crate) fn cached(stale: &Stale<'_>, generation: u32, now: u32) -> Cached {
    let expiry = stale.word.expiry();
    Cached {
        inode: stale.inode.map(Inode::spec),
        expired: expiry != NEVER && now >= expiry,
        dir_changed: stale.word.generation() != generation,
    }
}

/// Refreshing a dentry the filesystem revalidated.
impl Dcache {
    /// How long a dentry seen as `was` is trusted after an answer "valid for `ttl`" (`None`:
    /// the configured timeout of its polarity) asked at `generation`; `None` if a refresh
    /// would change nothing a reader acts on: the word would be expired at once and records
    /// the generation the dentry has already (see the rules: the answer serves only the walk
    /// that asked, and nothing is written).
    pub(crate) fn refresh_ttl(
        &self,
        ttl: Option<Duration>,
        was: Seen,
        generation: u32,
    ) -> Option<Duration> {
        let (inode, word) = was;
        let ttl = ttl.unwrap_or(self.timeouts.of(inode.is_null()));
        let lasts = self.ticks.expiry(ttl) > self.ticks.now();
        (lasts || word.generation() != generation).then_some(ttl)
    }

    /// Refreshes a revalidated dentry if it is still as the revalidation saw it: expiry `ttl`
    /// from now, generation `generation`.
    pub(crate) fn refresh(
        &self,
        names: &NameLock<'_>,
        entry: &DentryEntry,
        (inode, word): Seen,
        ttl: Duration,
        generation: u32,
    ) {
        let slot = entry.value();
        if slot.inode_ptr() != inode || slot.validity() != word {
            return; // changed meanwhile: the changer's word stands
        }
        entry.set_validity(self.word(entry.parent(), ttl, Some(generation)), names);
    }
}
