//! Directory listings: each directory's cookie-indexed cache ([`udcache_readdir`]), and the
//! negative answers a complete listing gives without negative dentries.
//!
//! # Rules
//!
//! - A directory's listing is made on its first [`Dcache::readdir`] and kept in its inode
//!   (a `OnceLock`); it reads through the [`Filesystem`](crate::Filesystem) given to that first call. All
//!   listings share one page budget ([`Config::with_readdir`](crate::Config::with_readdir)).
//! - What changes a listing: `unlink`, `rename` and `invalidate` in the directory (a name
//!   left), an `add` of a name the listing does not hold (a name was created), and
//!   [`Dcache::dir_changed`] (the filesystem's own news). Each marks every page stale, dropped
//!   lazily by the readdir cache. A name the listing holds changes nothing, so looking names
//!   up does not throw listings away. A listing of part of the directory (a reader stopped
//!   early) cannot tell a created name from one it has not read yet: an [`Dcache::add`] (what
//!   a filesystem calls for a create) marks it stale, a name [`Dcache::resolve`] found (a
//!   lookup) does not. Otherwise a later reader would be served pages read before the create,
//!   without the new name if it sorts among them. A writer that names something (`add`, a
//!   filed answer, `rename`, a directory moved by `resolve`) tells the listing before it
//!   lets go of the name's lock: once unlocked and unused, the new dentry may be evicted,
//!   and a complete listing not yet told would answer the name "absent".
//! - A miss in [`Dcache::resolve`] asks the parent's listing before the filesystem: a
//!   complete listing that lacks the name answers [`Resolved::Negative`](crate::Resolved)
//!   with no call and no negative dentry (counted in
//!   [`Stats::complete_dir_negatives`](crate::Stats::complete_dir_negatives)) — unless the
//!   negative timeout ([`Timeouts::negative`](crate::Timeouts::negative)) is finite. A
//!   listing has no age (its pages were read at different times, and a page the budget
//!   dropped is read again later), so its "absent" cannot expire with the timeout: it would
//!   keep a name created behind the cache missing for ever. With a finite timeout a miss asks
//!   the filesystem, whose negative answer is filed and expires like any other.
//! - A fill's verifier is news the filesystem told only the listing: after each
//!   [`Dcache::readdir`], the listing's verifier is reported as [`Dcache::dir_changed`] would
//!   report it. One the cache had not recorded moves the directory's generation, so negative
//!   dentries filed before it are no longer trusted: a name the listing now shows is not
//!   answered "absent" by an older negative. This holds for the first verifier a directory
//!   reports too (its first listing, say): with none recorded, nothing tells whether the
//!   directory changed after its negatives were filed, so the first is a change.
//! - **Reports are linearizable.** The reports of one directory ([`Dcache::dir_changed`], and a
//!   readdir's) leave it as if they were made one at a time, in an order that keeps each
//!   report after every report that returned before it began: the verifier left recorded is
//!   the one the last change in that order reported, and a negative is trusted only if no
//!   change comes after its filing in that order. A report of the verifier recorded is no
//!   change and returns after loads and compares, with no lock. Any other takes the
//!   directory's report lock (`DirState::reports`), looks at the record again (a report that
//!   held the lock before may have recorded it), then withdraws the record, bumps the
//!   generation, marks the listing and records its verifier, in that order. So two changes
//!   never interleave (one's bump with the other's record, which would leave a verifier
//!   recorded with a generation bumped after it), and a thread that saw a change's new
//!   generation never finds the verifier recorded before it (its report of that one is a
//!   change, made after). A readdir reports the verifier its listing held when its read
//!   ended: a report that changed it since is ordered before the readdir's, which then changes
//!   it back (a needless change, never an unsafe one).
//! - Locks: a listing's own mutex is taken after any name stripe and never held across a
//!   filesystem call (that crate's rule); the readdir filesystem call runs with no cache lock.
//!   A directory's report lock is taken with no other lock held, and before its listing's
//!   mutex.

use std::time::Duration;

use udcache_readdir::{Batch, Verifier};

use crate::cache::Dcache;
use crate::dirstate::{DirState, Lister};
use crate::error::Error;
use crate::inode::Inode;
use crate::stats::Event;
use crate::sync::{Ordering, lock};
use crate::writers::changed;

/// Directory listings and directory changes.
impl Dcache {
    /// Up to `max` entries of directory `dir` after `cookie` (`0`: from the start), served
    /// from the directory's cookie-indexed cache and read through the filesystem's
    /// [`readdir`](crate::Filesystem::readdir) for ranges it does not hold. A reader can resume at any cookie it was given, and keeps making
    /// progress while the directory changes (see [`udcache_readdir`]).
    ///
    /// Errors: [`Error::UnknownInode`], [`Error::NotDirectory`], [`Error::Readdir`] (a cookie
    /// the cache does not hold and `fs.readdir` cannot resume at, the filesystem's own
    /// failure, a listing that loops, `max == 0`); [`Error::NoFilesystem`]. A cookie the
    /// cache never issued is the filesystem's to judge: one its `readdir` accepts is read
    /// there, like any other.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use udcache::readdir::{DType, Entry, Fill, FillError, Verifier};
    /// use udcache::{Config, Dcache, Errno, Filesystem, InodeSpec, Resolved, ROOT_INO};
    ///
    /// /// A root directory holding `a` and `b`.
    /// struct Two;
    /// impl Filesystem for Two {
    ///     fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> {
    ///         unreachable!("the complete listing answers")
    ///     }
    ///     fn readdir(&self, _dir: u64, cookie: u64, _max: usize) -> Result<Fill, FillError> {
    ///         let all = [Entry::new("a", 2, DType::REG, 1), Entry::new("b", 3, DType::REG, 2)];
    ///         let entries = all.into_iter().filter(|e| e.cookie > cookie).collect();
    ///         Ok(Fill { entries, eof: true, verifier: Verifier::new(1) })
    ///     }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64).with_filesystem(Arc::new(Two)));
    /// let batch = cache.readdir(ROOT_INO, 0, 10).unwrap();
    /// assert_eq!(batch.entries.len(), 2);
    /// assert!(batch.eof);
    /// // The listing is complete: a miss is answered without asking the filesystem.
    /// assert_eq!(cache.resolve(ROOT_INO, b"c"), Ok(Resolved::Negative));
    /// assert_eq!(cache.stats().complete_dir_negatives, 1);
    /// ```
    pub fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Batch, Error> {
        let fs = self.filesystem()?;
        let inode = self.inode_arc(dir).ok_or(Error::UnknownInode(dir))?;
        let state = inode.dir().ok_or(Error::NotDirectory(dir))?;
        let listing =
            state.listing.get_or_init(|| self.readdir_cache.dir(Lister { fs: fs.clone(), dir }));
        let batch = listing.read(cookie, max).map_err(Error::Readdir)?;
        // A fill may have brought a verifier the cache was not told of: the directory changed
        // behind it. Reported as the filesystem would report it (see the rules).
        if let Some(v) = listing.verifier().map(Verifier::get) {
            self.report_verifier(&inode, state, Some(v));
        }
        Ok(batch)
    }

    /// Tells the cache that directory `dir` changed behind it, or reports its verifier
    /// (change attribute) from a getattr reply (those of [`Dcache::readdir`]'s fills the cache
    /// reports itself): `Some(v)` equal to the last one reported changes nothing (loads and
    /// compares; after a `None` no verifier is known, and the next `Some` is a change: a
    /// verifier may come back, a hash of the contents for one); anything else (`None`:
    /// changed, new verifier unknown) bumps the directory's generation — negative dentries
    /// filled before are no longer trusted from then on (see
    /// `reval.rs`) — and marks its listing's pages stale. Both are lazy: nothing is
    /// walked or freed here. Positive dentries are untouched (their timeouts govern them): for
    /// a name that went away or changed, call [`Dcache::invalidate`] after this (see
    /// `reval.rs`).
    ///
    /// Concurrent reports of one directory are linearizable: what they leave (the verifier
    /// recorded, the negatives trusted) is what some order of them, one at a time, would
    /// leave, an order that keeps each after those that returned before it began (see the
    /// module rules (`listing.rs`)). A report that changes something takes a lock of the
    /// directory's; an unchanged verifier takes none.
    ///
    /// Errors: [`Error::UnknownInode`], [`Error::NotDirectory`].
    ///
    /// ```
    /// use udcache::{Config, Dcache, Lookup, ROOT_INO, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// cache.add_negative(ROOT_INO, b"config.h").unwrap();
    /// cache.dir_changed(ROOT_INO, Some(7)).unwrap(); // the first verifier: a change
    /// assert!(matches!(cache.lookup(&epoch::pin(), ROOT_INO, b"config.h"), Ok(Lookup::Miss)));
    /// cache.add_negative(ROOT_INO, b"config.h").unwrap(); // filled again
    /// cache.dir_changed(ROOT_INO, Some(7)).unwrap(); // the same verifier: no change
    /// assert!(matches!(cache.lookup(&epoch::pin(), ROOT_INO, b"config.h"), Ok(Lookup::Negative)));
    /// ```
    pub fn dir_changed(&self, dir: u64, verifier: Option<u64>) -> Result<(), Error> {
        let inode = self.inode_arc(dir).ok_or(Error::UnknownInode(dir))?;
        let state = inode.dir().ok_or(Error::NotDirectory(dir))?;
        self.report_verifier(&inode, state, verifier);
        Ok(())
    }

    /// [`Dcache::dir_changed`] of directory `inode`, whose state is `state` (see the rules:
    /// one change at a time, under the directory's report lock).
    fn report_verifier(&self, inode: &Inode, state: &DirState, verifier: Option<u64>) {
        // Acquire (both): pairs with the Release stores of the record below. A report that
        // finds its verifier recorded returns at once, so the change must be made before the
        // record: it then sees the generation bumped and the listing marked, and so does what
        // its caller does next (a lookup must not trust a negative filed before the change).
        let recorded = |v| {
            state.has_verifier.load(Ordering::Acquire)
                && state.verifier.load(Ordering::Acquire) == v
        };
        if verifier.is_some_and(recorded) {
            return;
        }
        let _reports = lock(&state.reports);
        if verifier.is_some_and(recorded) {
            return; // recorded by the change that held the lock before: it is made
        }
        // Relaxed: the record is withdrawn before the generation moves, and the bump's
        // Release store publishes that (pairs with the Acquire load in `Inode::dir_gen`): a
        // thread that saw the new generation, then reports the verifier recorded until now,
        // finds no record and waits for the lock. The verifier is unknown until this change
        // records it; after a `None` it stays unknown: verifiers need not grow (a hash of the
        // contents may come back), so the last one known no longer says "unchanged".
        state.has_verifier.store(false, Ordering::Relaxed);
        inode.bump_dir_gen();
        changed(self, inode.ino(), verifier);
        if let Some(v) = verifier {
            // Release (both): after the change (see the Acquire above).
            state.verifier.store(v, Ordering::Release);
            state.has_verifier.store(true, Ordering::Release);
        }
    }

    /// Whether the complete listing of directory `dir` (as looked up by the caller; `None`:
    /// not cached) says `name` does not exist (a trusted negative). Only where negatives never
    /// time out: a listing has no age (see the rules).
    pub(crate) fn listed_absent(&self, dir: Option<&Inode>, name: &[u8]) -> bool {
        if self.timeouts.negative != Duration::MAX {
            return false;
        }
        let listed = dir
            .and_then(Inode::dir)
            .and_then(|d| d.listing.get())
            .map_or(udcache_readdir::Lookup::Unknown, |l| l.lookup(name));
        let absent = listed == udcache_readdir::Lookup::Absent;
        if absent {
            self.events.bump(Event::CompleteDirNegative);
        }
        absent
    }
}
