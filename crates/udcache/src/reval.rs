//! Revalidation: what a walk does with a dentry it may no longer trust, and the access check
//! of each directory it passes — both answered without locks in the common case.
//!
//! # Rules
//!
//! - **Lockless checks**: see `walk/checks.rs`.
//! - **The blocking path** ([`Dcache::unblock`], and [`Dcache::resolve`] for a stale name) runs
//!   with no lock held and no guard pinned while the filesystem is asked. A revalidation reads
//!   the parent's generation first, asks with `may_block = true`, then, under the name's
//!   stripe lock and only if the dentry is still the one it asked about, refreshes it (expiry
//!   from the answer's timeout, that generation) — or drops it
//!   ([`Dcache::invalidate`](crate::Dcache::invalidate)) if it is no longer valid. Concurrent
//!   revalidations of one name are coalesced into one call, like misses (see
//!   `fetch.rs`). The walk is then done again.
//! - **What a caller may rely on**: a walk never returns a dentry that was not fresh or
//!   revalidated during the walk; a negative filled before a directory change returned (with
//!   the change's generation bump) is never trusted after it, and concurrent reports of one
//!   directory's verifier leave what some order of them would (see `listing.rs`): a
//!   negative is trusted only if no change comes after its filing in that order, and the
//!   verifier recorded is the one of the last change in it; a positive answered before a
//!   change announced as `dir_changed` then `invalidate` is never trusted after both returned;
//!   an access result filled before an attribute change or [`Dcache::acl_changed`] returned is
//!   never used after it.

use std::time::Duration;

use udcache_neghash::epoch::{self, Guard};

use crate::access::{Cred, Mask};
use crate::cache::Dcache;
use crate::dentry::DentryWrites;
use crate::error::Error;
use crate::fs::{InodeSpec, Resolved};
use crate::name::validate_name;
use crate::stats::Event;
use crate::unblocked::Unblocked;
use crate::valid::Validity;
use crate::walk::{Blocked, Checks, Stop, Walk, validate_path};

/// How a [`Dcache::walk_as`] ended.
// Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
#[doc(hidden)]
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Checked<'g> {
    /// The walk ended as [`Walk`] says, lockless, trusting only fresh or revalidated dentries
    /// and, with a credential, allowed to search every directory it passed.
    Done(Walk<'g>),
    /// The credential may not search directory `dir` (`EACCES`); the component at `at` was
    /// not looked up.
    Denied {
        /// The directory.
        dir: u64,
        /// Where the component to look up in it starts.
        at: usize,
    },
    /// Do this with [`Dcache::unblock`], no guard pinned, and walk again.
    Blocked(Blocked),
}

/// What [`Dcache::resolve_path`] does with a name the cache does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMiss {
    /// Asks the filesystem's [`lookup`](crate::Filesystem::lookup) (coalesced with other threads'
    /// misses of the name) and goes on from its answer.
    Lookup,
    /// Ends the resolution with [`PathEnd::Miss`]: the caller resolves the component itself
    /// ([`Dcache::resolve`], which counts a lookup) and goes on from its answer.
    Report,
}

/// How a [`Dcache::resolve_path`] ended. Offsets are byte offsets into its path. Owned: no
/// guard is held once it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathEnd {
    /// Every component resolved: what the path names.
    Found(InodeSpec),
    /// The component at `at` does not exist.
    Negative {
        /// Where the missing component starts.
        at: usize,
    },
    /// The component at `at` is not cached in directory `parent` ([`OnMiss::Report`] only):
    /// see [`Walk::Miss`] for what its resolution decides.
    Miss {
        /// The directory to look the component up in.
        parent: u64,
        /// Where the component starts.
        at: usize,
    },
    /// A symlink before the last component (or last, with a `/` after it); the rest of the
    /// path starts at `rest`.
    Symlink {
        /// The link.
        link: InodeSpec,
        /// Where the components after the link start.
        rest: usize,
    },
    /// The component before `at` is not a directory.
    NotDir {
        /// The non-directory.
        inode: InodeSpec,
        /// Where the component that needed a directory starts.
        at: usize,
    },
    /// The credential may not search directory `dir` (`EACCES`); the component at `at` was
    /// not looked up.
    Denied {
        /// The directory.
        dir: u64,
        /// Where the component to look up in it starts.
        at: usize,
    },
}

impl PathEnd {
    /// The end of a walk of the path's part from `base`.
    fn of(w: Walk<'_>, base: usize) -> Self {
        match w {
            Walk::Found(named) => PathEnd::Found(named.inode().spec()),
            Walk::Negative { at } => PathEnd::Negative { at: base + at },
            Walk::Miss { parent, at } => PathEnd::Miss { parent, at: base + at },
            Walk::Symlink { inode, rest } => {
                PathEnd::Symlink { link: inode.spec(), rest: base + rest }
            }
            Walk::NotDir { inode, at } => PathEnd::NotDir { inode: inode.spec(), at: base + at },
        }
    }
}

/// Path resolution with revalidation and access checks, and entry timeouts.
impl Dcache {
    /// Resolves `path` from `root`, revalidating names no longer trusted and, with `cred`,
    /// checking that it may search each directory on the way, asking the filesystem
    /// ([`Config::with_filesystem`](crate::Config::with_filesystem)) for what the cache cannot
    /// answer. See the module rules (`reval.rs`).
    ///
    /// Each round is a lockless walk (like [`Dcache::walk`], which never asks anyone); it
    /// stays lockless while every name is trusted, every search right is the directory's most
    /// recent access result, and the filesystem's [`revalidate`](crate::Filesystem::revalidate)
    /// answers without blocking. Otherwise the blocking work is done on this thread with no
    /// lock held and no guard pinned (a revalidation, coalesced with other threads' calls for
    /// the name; an access call for a search right not cached), and the walk starts again,
    /// using for that one walk what the blocking work was just told (so a name whose timeout is
    /// zero, "revalidate at every use", is asked about once per round). A missed name is
    /// looked up ([`OnMiss::Lookup`]: the answer decides the component, as [`Walk::Miss`]
    /// says, and the walk goes on from the inode found; no lookup is counted) or reported
    /// ([`OnMiss::Report`]: [`PathEnd::Miss`], for a caller that resolves it itself). At most
    /// 4 + 2 × (components of `path`) walks are done, each followed by at most one round of
    /// blocking work or one lookup; those after the first are counted in
    /// [`Stats::path_rewalks`](crate::Stats::path_rewalks).
    ///
    /// Errors: as [`Dcache::walk`]; the filesystem's ([`Error::Backend`]), or an error filing
    /// its answer (as for [`Dcache::resolve`]); [`Error::NoFilesystem`] where it must ask and
    /// the cache has no filesystem; [`Error::Unsettled`] when the last walk still needed
    /// blocking work (names or directories changing under it faster than it walks).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use udcache::{Config, Dcache, Errno, FileType, Filesystem, InodeSpec, OnMiss, PathEnd, ROOT_INO};
    /// struct Fs;
    /// impl Filesystem for Fs {
    ///     fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
    ///         Ok(match (parent, name) {
    ///             (ROOT_INO, b"d") => Some(InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 0 }),
    ///             (2, b"f") => Some(InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 7 }),
    ///             _ => None,
    ///         })
    ///     }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64).with_filesystem(Arc::new(Fs)));
    /// let found = cache.resolve_path(None, ROOT_INO, "d/f", OnMiss::Lookup).unwrap();
    /// assert!(matches!(found, PathEnd::Found(spec) if spec.fs_data == 7));
    /// let gone = cache.resolve_path(None, ROOT_INO, "d/g/h", OnMiss::Lookup).unwrap();
    /// assert_eq!(gone, PathEnd::Negative { at: 2 });
    /// // Now cached: one lockless walk, no filesystem call.
    /// let cached = cache.resolve_path(None, ROOT_INO, "d/f", OnMiss::Report).unwrap();
    /// assert!(matches!(cached, PathEnd::Found(spec) if spec.ino == 3));
    /// assert_eq!(cache.stats().backend_lookups, 3);
    /// ```
    pub fn resolve_path(
        &self,
        cred: Option<&Cred>,
        root: u64,
        path: impl AsRef<[u8]>,
        misses: OnMiss,
    ) -> Result<PathEnd, Error> {
        let path = path.as_ref();
        let components = path.split(|&b| b == b'/').filter(|c| !c.is_empty()).count();
        let mut after = Unblocked::default();
        // Where the walks start: `root` and the whole path, then the inode a looked-up miss
        // named and what follows that component; `before`, where the walk stood before that
        // miss (the inode may be forgotten before the next walk starts from it).
        let (mut from, mut base) = (root, 0);
        let mut before = None;
        for round in 0..4 + 2 * components {
            if round > 0 {
                self.events.bump(Event::PathRewalk);
            }
            let step = {
                let guard = epoch::pin();
                match self.walk_as_after(&guard, cred, from, &path[base..], &after) {
                    Ok(Checked::Done(Walk::Miss { parent, at })) => Err(Ok((parent, at))),
                    Ok(Checked::Done(w)) => return Ok(PathEnd::of(w, base)),
                    Ok(Checked::Denied { dir, at }) => {
                        return Ok(PathEnd::Denied { dir, at: base + at });
                    }
                    Ok(Checked::Blocked(b)) => Ok(b),
                    Err(Error::UnknownInode(ino)) if ino == from && before.is_some() => {
                        Err(Err(()))
                    }
                    Err(e) => return Err(e),
                }
            };
            // No guard pinned: the filesystem may block.
            match step {
                Ok(blocked) => after.merge(self.unblock(cred, &blocked)?),
                Err(Ok((parent, at))) if misses == OnMiss::Lookup => {
                    let name = path[base + at..].split(|&b| b == b'/').next().unwrap_or(&[]);
                    match self.fetch(parent, name, true)? {
                        Some(Resolved::Negative) => return Ok(PathEnd::Negative { at: base + at }),
                        Some(Resolved::Found(spec)) => {
                            before = Some((from, base));
                            (from, base) = (spec.ino, base + at + name.len());
                        }
                        // A revalidation alone dropped the dentry: walk again.
                        None => {}
                    }
                }
                Err(Ok((parent, at))) => return Ok(PathEnd::Miss { parent, at: base + at }),
                // The inode a miss named was forgotten before the walk from it: back to
                // the walk that missed.
                Err(Err(())) => (from, base) = before.take().expect("checked above"),
            }
        }
        Err(Error::Unsettled)
    }

    /// One lockless round of [`Dcache::resolve_path`], for a caller that does the blocking
    /// work itself ([`Dcache::unblock`]): a walk like [`Dcache::walk`] that revalidates
    /// without blocking and, with `cred`, checks search rights; what it cannot settle without
    /// blocking ends it as [`Checked::Blocked`].
    ///
    /// Errors: as [`Dcache::walk`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use udcache::{Checked, Config, Dcache, Errno, FileType, Filesystem, InodeSpec, ROOT_INO, Timeouts, Walk, epoch};
    /// struct Fs;
    /// impl Filesystem for Fs {
    ///     fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> { Ok(None) }
    /// }
    /// let zero = Timeouts { entry: Duration::ZERO, ..Timeouts::FOREVER }; // revalidate every use
    /// let cache = Dcache::new(Config::for_entries(64).with_timeouts(zero).with_filesystem(Arc::new(Fs)));
    /// cache.add(ROOT_INO, b"f", InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 0 }).unwrap();
    /// let guard = epoch::pin();
    /// let Checked::Blocked(b) = cache.walk_as(&guard, None, ROOT_INO, "f").unwrap() else { panic!() };
    /// drop(guard);
    /// let after = cache.unblock(None, &b).unwrap(); // asks, blocking: `f` is gone
    /// let guard = epoch::pin();
    /// let walked = cache.walk_as_after(&guard, None, ROOT_INO, "f", &after).unwrap();
    /// assert!(matches!(walked, Checked::Done(Walk::Miss { parent: ROOT_INO, at: 0 })));
    /// ```
    // Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
    #[doc(hidden)]
    pub fn walk_as<'g>(
        &'g self,
        guard: &'g Guard,
        cred: Option<&Cred>,
        root: u64,
        path: impl AsRef<[u8]>,
    ) -> Result<Checked<'g>, Error> {
        self.walk_as_after(guard, cred, root, path, &Unblocked::default())
    }

    /// [`Dcache::walk_as`] done again after [`Dcache::unblock`]: it also takes what that
    /// unblock settled with the filesystem as fresh, for this walk, if nothing changed since
    /// (see `unblocked.rs`). This is how a walk makes progress through names trusted
    /// for less than a tick (a timeout of zero: "revalidate at every use"). Example: see
    /// [`Dcache::walk_as`].
    ///
    /// Errors: as [`Dcache::walk`].
    // Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
    #[doc(hidden)]
    pub fn walk_as_after<'g>(
        &'g self,
        guard: &'g Guard,
        cred: Option<&Cred>,
        root: u64,
        path: impl AsRef<[u8]>,
        after: &Unblocked,
    ) -> Result<Checked<'g>, Error> {
        let path = path.as_ref();
        validate_path(path)?;
        let fs = self.filesystem().ok().map(|fs| &**fs);
        let mut checks = Checks::new(self, fs, cred.copied(), Some(after));
        let stop = self.walk_validated(guard, &mut checks, root, path);
        checks.finish(self);
        Ok(match stop? {
            Stop::Walk(w) => Checked::Done(w),
            Stop::Denied { dir, at } => Checked::Denied { dir, at },
            Stop::Blocked(b) => {
                self.events.bump(Event::Fallback(b.reason()));
                Checked::Blocked(b)
            }
        })
    }

    /// Does the blocking work a [`Dcache::walk_as`] left for: revalidates the name with the
    /// filesystem (refreshing or dropping it; coalesced with other threads' calls for it), or
    /// fills `cred`'s access result for the directory. Call it with no guard pinned, then
    /// walk again with [`Dcache::walk_as_after`] and what this returns, merged
    /// ([`Unblocked::merge`]) into what the resolution's earlier unblocks returned. Example:
    /// see [`Dcache::walk_as`].
    ///
    /// Errors: the filesystem's errno ([`Error::Backend`]); [`Error::NoFilesystem`].
    // Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
    #[doc(hidden)]
    pub fn unblock(&self, cred: Option<&Cred>, blocked: &Blocked) -> Result<Unblocked, Error> {
        let done = match blocked {
            Blocked::Revalidate { parent, name, invalid: true, .. } => {
                self.invalidate(*parent, name).map(|()| Unblocked::default())
            }
            Blocked::Revalidate { parent, name, .. } => {
                // Read before asking: the answer is used only if the directory stays there.
                let generation = self.dir_gen_now(*parent);
                self.fetch(*parent, name, false).map(|settled| {
                    settled.map_or_else(Unblocked::default, |answer| {
                        Unblocked::name(*parent, name, answer, generation)
                    })
                })
            }
            Blocked::Access { dir, .. } => match cred {
                Some(cred) => self.access_stamp(*dir).and_then(|stamp| {
                    let allowed = self.access(*dir, cred, Mask::EXEC)?;
                    Ok(Unblocked::access(*dir, *cred, allowed, stamp))
                }),
                None => Ok(Unblocked::default()),
            },
        };
        match done {
            // Gone meanwhile: the next walk will see what is there now.
            Err(Error::NotFound | Error::UnknownInode(_)) => Ok(Unblocked::default()),
            other => other,
        }
    }

    /// Sets how long the dentry `(parent, name)` is trusted from now (a FUSE reply's
    /// `entry_valid`, say; `Duration::MAX`: until told otherwise). Its generation is kept. A
    /// dentry filed before its directory last changed ([`Dcache::dir_changed`] with no
    /// verifier or a new one) may be trusted for less, not for longer: its answer may
    /// predate the change — an answer that raced one was filed expired for that reason — so
    /// only a revalidation files it anew.
    ///
    /// Errors: a bad name; nothing cached under the name ([`Error::NotFound`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use udcache::{Config, Dcache, Lookup, ROOT_INO, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// cache.add_negative(ROOT_INO, b"x").unwrap();
    /// cache.set_entry_timeout(ROOT_INO, b"x", Duration::ZERO).unwrap(); // revalidate at every use
    /// assert!(matches!(cache.lookup(&epoch::pin(), ROOT_INO, b"x"), Ok(Lookup::Miss)));
    /// ```
    pub fn set_entry_timeout(&self, parent: u64, name: &[u8], ttl: Duration) -> Result<(), Error> {
        validate_name(name)?;
        let names = self.lock_names((parent, name), None);
        let found = self.dentry(parent, name).ok_or(Error::NotFound)?;
        let word = found.value().validity();
        let mut expiry = self.ticks.expiry(ttl);
        if word.generation() != self.dir_gen_now(parent) {
            expiry = expiry.min(word.expiry());
        }
        found.set_validity(Validity::new(expiry, word.generation()), &names);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::fs::{Cached, Filesystem, Revalidate};
    use crate::{Config, Errno, ROOT_INO, Timeouts};

    /// Answers every revalidation "valid for" its current `ttl`, in nanoseconds.
    struct ValidFor(std::sync::atomic::AtomicU64);

    impl Filesystem for ValidFor {
        fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> {
            Ok(None)
        }

        fn revalidate(&self, _: u64, _: &[u8], _: Cached, _: bool) -> Revalidate {
            let ttl = self.0.load(std::sync::atomic::Ordering::Relaxed);
            Revalidate::Valid { ttl: Some(Duration::from_nanos(ttl)) }
        }
    }

    #[test]
    fn an_answer_ending_within_the_tick_writes_only_a_new_generation() {
        let clock = Arc::new(ManualClock::new());
        let second = Duration::from_secs(1);
        let t = Timeouts { entry: second, negative: second, access: second };
        let fs = Arc::new(ValidFor(0.into()));
        let config = Config::for_entries(64).with_timeouts(t).with_clock(clock.clone());
        let cache = Dcache::new(config.with_filesystem(fs.clone()));
        cache.add_negative(ROOT_INO, b"x").unwrap();
        clock.advance(2 * second);
        let word = || cache.dentry(ROOT_INO, b"x").unwrap().value().validity();
        let negative = |ttl: Duration| {
            fs.0.store(ttl.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
            let guard = epoch::pin();
            let walked = cache.walk_as(&guard, None, ROOT_INO, "x");
            matches!(walked, Ok(Checked::Done(Walk::Negative { .. })))
        };
        let stale = word();
        assert!(negative(Duration::from_millis(1)), "the answer serves its walk");
        assert_eq!(word(), stale, "a word that would be expired at once is not written");
        assert!(negative(second));
        assert_ne!(word(), stale, "a lasting answer is");
        assert!(negative(Duration::ZERO));
        assert_eq!(cache.stats().revalidations, 2, "fresh again: not asked the third time");
        assert_eq!(cache.stats().reval_fallbacks(), 0);
        // After a change of the directory, the same short answer records the new generation
        // (the dentry stays expired); asked again, it writes nothing.
        cache.dir_changed(ROOT_INO, None).unwrap();
        let changed = word();
        assert!(negative(Duration::from_millis(1)));
        let revalidated = word();
        assert_ne!(revalidated.generation(), changed.generation(), "the new generation");
        assert!(negative(Duration::from_millis(1)));
        assert_eq!(word(), revalidated, "nothing more to write");
        assert_eq!(cache.stats().revalidations, 4, "still expired: asked each time");
    }
}
