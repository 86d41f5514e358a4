//! Writers: filing and dropping names and inodes, attribute changes, and memory pressure.
//! Their locks are the cache's (see `cache.rs`); renames, the tree's invalidation and the
//! move of a directory renamed behind the cache have modules of their own.

mod listing;
mod rename;
mod splice;
mod tree;

use std::time::Duration;

use udcache_neghash::epoch::{self, Guard};
use udcache_neghash::{Held, Insertion, Polarity};

use crate::attr::Attr;
use crate::cache::{Dcache, INODE_KEY_PARENT, Lookup, ROOT_INO, ino_key};
use crate::config::UnlinkPolicy;
use crate::dentry::{Dentry, DentryWrites, InodeLock, NameLock, Slot};
use crate::error::Error;
use crate::fs::{FileType, InodeSpec};
use crate::inode::InodeRef;
use crate::name::validate_name;
use crate::rename::RenameHold;
use crate::valid::Validity;

pub(crate) use listing::changed;
pub use rename::RenameMode;
pub(crate) use splice::Spliced;
pub use tree::Visit;

/// Filing and dropping names and inodes, attributes, and memory pressure.
impl Dcache {
    /// Adds a positive dentry `name` in `parent` naming the inode `spec` (instantiating a
    /// negative dentry of that name if there is one), and counts one lookup of the inode (a
    /// filesystem replies to a FUSE lookup or create with it). If `spec.ino` is cached, that
    /// inode gets the new name (a hard link; its `fs_data` is kept).
    ///
    /// Errors, changing nothing: a bad name; `parent` not a cached directory; the name
    /// positive already ([`Error::Exists`], whatever `spec` is); `spec.ino` cached with
    /// another type; a second name for a directory, or any name for the root.
    ///
    /// Not checked, as for [`rename`](Self::rename): that a directory is not named inside its
    /// own subtree (a directory whose name was unlinked can be added below itself). Walks,
    /// invalidation and `forget` still end on such a loop (a
    /// [`walk_tree`](Self::walk_tree) enters each directory once), but it is the
    /// filesystem's error.
    pub fn add(&self, parent: u64, name: &[u8], spec: InodeSpec) -> Result<(), Error> {
        validate_name(name)?;
        self.file_positive(parent, name, spec, None, true)
    }

    /// `add` of a validated name for an answer given under generation `asked` (see
    /// [`Dcache::word`]), counting a lookup if `count`.
    pub(crate) fn file_positive(
        &self,
        parent: u64,
        name: &[u8],
        spec: InodeSpec,
        asked: Option<u32>,
        count: bool,
    ) -> Result<(), Error> {
        // Naming a directory that is cached without a name moves its `..`: that needs a
        // rename section (a walk that went through its old name must not read the new `..`).
        // Taken before the stripes (the lock order), so decided before looking under them.
        let mut section = None;
        let (_inode_locks, existing) = loop {
            // The inode's stripe serialises `add` and `forget` of it; the parent's keeps the
            // parent's last `forget` (which holds it while dropping what is below) from
            // running between the check below and the filing.
            let locks = self.lock_moving(spec.ino, Some(parent));
            // The parent first: an uncached one is `UnknownInode` whatever else is wrong.
            self.check_dir(parent)?;
            if spec.ino == ROOT_INO {
                return Err(Error::DirectoryAlias(ROOT_INO));
            }
            // A name already positive is refused before anything is opened or made for it (a
            // rename section, an inode, a dentry), so the refusal moves no counter. Looked at
            // without the name's lock: `put` decides under it.
            if self.is_positive(parent, name) {
                return Err(Error::Exists);
            }
            match self.inode_arc(spec.ino) {
                Some(i) if i.kind() != spec.kind => {
                    return Err(Error::KindMismatch { ino: spec.ino });
                }
                Some(i) if i.kind() == FileType::Directory && i.has_alias() => {
                    return Err(Error::DirectoryAlias(spec.ino));
                }
                Some(i) if i.kind() == FileType::Directory && section.is_none() => {
                    drop(locks);
                    section = Some(self.write_section());
                }
                existing => break (locks, existing),
            }
        };
        let inode = match &existing {
            Some(i) => i.clone(),
            None => InodeRef::new(&self.pool, spec, parent, 0),
        };
        let guard = epoch::pin();
        // A nameless directory named again: its new `..` is in place before the name is
        // published, and what was cached below it while it had no name (which no `invalidate`
        // of an ancestor could reach) is dropped first, not brought back under the name.
        // Inside the section, with only inode stripes held (`drop_below` takes name stripes),
        // and only once the name is known to be free, so a refusal drops nothing (unless a
        // writer of the same name overtakes this one).
        let reparented = if existing.is_some() && spec.kind == FileType::Directory {
            if matches!(self.step(&guard, parent, name), Lookup::Hit(_)) {
                return Err(Error::Exists);
            }
            let old = inode.parent();
            inode.set_parent(parent);
            self.drop_below(&inode);
            Some(old)
        } else {
            None
        };
        let names = self.lock_names((parent, name), None);
        let valid = self.validity(parent, false, asked);
        let (dentry, _) = match self.put((parent, name), &inode, valid, &guard, &names, false) {
            Ok(put) => put,
            Err(e) => {
                if let Some(old) = reparented {
                    inode.set_parent(old);
                }
                return Err(e);
            }
        };
        self.name_linked((parent, name), &inode, &names);
        // Before the name's lock goes (and with the dentry held): once it is unlocked and
        // unused, `shrink` may evict it, and a complete listing not yet told of the name would
        // then answer it "absent".
        self.note_added(parent, name, asked.is_none());
        drop(dentry);
        drop(names);
        if existing.is_none() {
            let slot = Slot::positive(inode.clone());
            let inserted =
                self.inodes.insert(INODE_KEY_PARENT, &ino_key(spec.ino), Polarity::Positive, slot);
            debug_assert!(inserted.is_inserted(), "inode {} added twice", spec.ino);
        }
        if count {
            inode.set_lookups(inode.lookups() + 1);
        }
        Ok(())
    }

    /// Makes `(parent, name)` a positive dentry naming `inode`, instantiating a negative one or
    /// (if `replace`) replacing the inode of a positive one, which is returned. Without
    /// `replace`, a positive dentry is [`Error::Exists`] and nothing changes. The dentry is
    /// returned held, so that it cannot be evicted before the caller's bookkeeping
    /// ([`Dcache::name_linked`]) is done.
    pub(crate) fn put(
        &self,
        (parent, name): (u64, &[u8]),
        inode: &InodeRef,
        valid: Validity,
        guard: &Guard,
        names: &NameLock<'_>,
        replace: bool,
    ) -> Result<(Held<'_, Dentry>, Option<InodeRef>), Error> {
        let dentry = Dentry::positive(inode.clone(), valid);
        let found = match self.names.insert(parent, name, Polarity::Positive, dentry) {
            Insertion::Inserted(new) => return Ok((new, None)),
            Insertion::Present(found) => found,
        };
        if !replace && found.value().load(guard).is_some() {
            return Err(Error::Exists);
        }
        let old = found.put_inode(inode.clone(), valid, names);
        if old.is_none() {
            let flipped = found.make_positive();
            debug_assert!(flipped, "an empty slot on a positive entry");
        }
        Ok((found, old))
    }

    /// Remembers that `name` does not exist in `parent` (a negative dentry), trusted for
    /// [`Timeouts::negative`](crate::Timeouts::negative) and while `parent` does not change. If it is remembered already,
    /// only its validity is renewed. Negative dentries are bounded per bucket: this one may be
    /// evicted at any time by the bounding rules.
    ///
    /// Errors, changing nothing: a bad name; `parent` not a cached directory (a negative under
    /// an unknown number would outlive the directory that number later names); the name
    /// positive ([`Error::Exists`]).
    pub fn add_negative(&self, parent: u64, name: &[u8]) -> Result<(), Error> {
        validate_name(name)?;
        self.file_negative(parent, name, None)
    }

    /// `add_negative` of a validated name for an answer given under generation `asked`.
    pub(crate) fn file_negative(
        &self,
        parent: u64,
        name: &[u8],
        asked: Option<u32>,
    ) -> Result<(), Error> {
        // The parent's stripe keeps its last `forget` (which holds it while dropping what is
        // below) from running between this check and the filing.
        let _parent_lock = self.lock_inode(parent);
        // Borrowed under a guard, not counted: a miss writes no count on its directory.
        let guard = epoch::pin();
        let dir = self.inode(&guard, parent).ok_or(Error::UnknownInode(parent))?;
        let state = dir.dir().ok_or(Error::NotDirectory(parent))?;
        let names = self.lock_names((parent, name), None);
        let valid = self.word_in(dir, self.timeouts.negative, asked);
        // Filed unused at once (no caller keeps a miss's answer). A present name is answered
        // without a cell taken for it (neghash's rule): a positive one is refused having
        // changed nothing.
        match self.names.insert_unused(parent, name, Polarity::Negative, Dentry::negative(valid)) {
            Ok(()) => {
                // Still under the parent's stripe, so before its last `forget` can look.
                state.note_negative();
                Ok(())
            }
            Err(found) if found.is_negative() => {
                found.set_validity(valid, &names);
                Ok(())
            }
            Err(_) => Err(Error::Exists),
        }
    }

    /// Notes in directory `parent` that it has (had) a negative child (see `writers/tree.rs`).
    fn note_negative_child(&self, parent: u64) {
        if let Some(dir) = self.dir_state(&epoch::pin(), parent) {
            dir.note_negative();
        }
    }

    /// Removes the name `name` from `parent`: the dentry turns negative or is dropped, by the
    /// configured [`UnlinkPolicy`]. The inode stays cached (and its lookup count unchanged)
    /// until [`forget`](Self::forget). Unlinking a directory opens a rename section (see
    /// `rename.rs`); the filesystem is trusted to have checked it was empty.
    ///
    /// Errors, changing nothing: a bad name; no positive dentry ([`Error::NotFound`]). A
    /// filesystem that did remove the name then calls [`invalidate`](Self::invalidate) on it:
    /// the dentry may have been shrunk away while the directory's listing still lists it.
    pub fn unlink(&self, parent: u64, name: &[u8]) -> Result<(), Error> {
        validate_name(name)?;
        let guard = epoch::pin();
        loop {
            let Lookup::Hit(seen) = self.step(&guard, parent, name) else {
                return Err(Error::NotFound);
            };
            let _rename = (seen.kind() == FileType::Directory).then(|| self.rename.write());
            let names = self.lock_names((parent, name), None);
            let Some(found) = self.dentry(parent, name) else { return Err(Error::NotFound) };
            match found.value().load(&guard) {
                None => return Err(Error::NotFound),
                // Replaced by another inode (of another kind, maybe) since we looked.
                Some(now) if !std::ptr::eq(now, seen) => continue,
                Some(_) => {}
            }
            let inode = self.detach(&found, &names, self.unlink);
            self.name_unlinked((parent, name), &inode, &names);
            drop(names);
            listing::changed(self, parent, None);
            return Ok(());
        }
    }

    /// Empties a positive dentry's slot and applies `policy` to it; returns the inode.
    pub(crate) fn detach(
        &self,
        dentry: &Held<'_, Dentry>,
        names: &NameLock<'_>,
        policy: UnlinkPolicy,
    ) -> InodeRef {
        // What is left is true now: a fresh negative (a dropped entry is never read again).
        let valid = match policy {
            UnlinkPolicy::Negative => self.validity(dentry.parent(), true, None),
            UnlinkPolicy::Drop => Validity::new(0, 0),
        };
        let inode = dentry.take_inode(valid, names).expect("detach of a negative dentry");
        let changed = match policy {
            UnlinkPolicy::Negative => {
                // A negative child: the directory must sweep it when it leaves (see `tree`).
                self.note_negative_child(dentry.parent());
                dentry.make_negative()
            }
            UnlinkPolicy::Drop => dentry.remove(),
        };
        debug_assert!(changed, "a positive dentry was negative or unhashed");
        inode
    }

    /// Counts one more lookup of `ino` (a filesystem replied to the kernel with it). Errors:
    /// [`Error::UnknownInode`].
    pub fn count_lookup(&self, ino: u64) -> Result<(), Error> {
        let _inode_lock = self.lock_inode(ino);
        let inode = self.inode_arc(ino).ok_or(Error::UnknownInode(ino))?;
        inode.set_lookups(inode.lookups() + 1);
        Ok(())
    }

    /// FUSE `forget`: the kernel dropped `n` of its lookups of `ino`. At zero the inode leaves
    /// the cache with every dentry naming it (dropped, not made negative: the names still
    /// exist), so no later lookup returns it. `n = 0` changes nothing.
    ///
    /// Errors, changing nothing: [`Error::UnknownInode`]; [`Error::BadForget`] if `n` exceeds
    /// the count or `ino` is the root.
    pub fn forget(&self, ino: u64, n: u64) -> Result<(), Error> {
        loop {
            let inode = self.inode_arc(ino).ok_or(Error::UnknownInode(ino))?;
            if ino == ROOT_INO {
                return Err(Error::BadForget { ino, have: inode.lookups(), asked: n });
            }
            if n == 0 {
                return Ok(());
            }
            // The last forget (or a refused one) excludes renames, and the last of a
            // directory opens a section: see `drop_inode`.
            let (dir, seen) = (inode.kind() == FileType::Directory, inode.lookups());
            let (last, section) = (n >= seen, dir && n == seen);
            let rename = last.then(|| self.rename.hold(section));
            let inode_lock = self.lock_inode(ino);
            let have = inode.lookups();
            let current = self.inode_arc(ino).is_some_and(|i| InodeRef::ptr_eq(&i, &inode));
            if !current || (n >= have) != last || (dir && n == have) != section {
                continue; // raced another add or forget: look again
            }
            if n > have {
                return Err(Error::BadForget { ino, have, asked: n });
            }
            inode.set_lookups(have - n);
            if let Some(rename) = &rename {
                self.drop_inode(&inode, rename, &inode_lock);
            }
            return Ok(());
        }
    }

    /// Drops every dentry naming `inode` and, for a directory, every dentry below it (its
    /// number may be reused for another directory), then the inode itself. The caller holds
    /// the rename lock (with a section open if `inode` is a directory) and the inode's stripe
    /// lock.
    fn drop_inode(&self, inode: &InodeRef, _rename: &RenameHold<'_>, lock: &InodeLock<'_>) {
        let guard = epoch::pin();
        for (parent, name) in inode.aliases() {
            let names = self.lock_names((parent, &name), None);
            let Some(found) = self.dentry(parent, &name) else { continue };
            if found.value().load(&guard).is_some_and(|i| std::ptr::eq(i, &**inode)) {
                self.detach(&found, &names, UnlinkPolicy::Drop);
                self.name_unlinked((parent, &name), inode, &names);
            }
        }
        if inode.dir().is_some() {
            self.drop_below(inode);
        }
        if let Some(entry) = self.inodes.get(INODE_KEY_PARENT, &ino_key(inode.ino())) {
            // Emptied first: the entry is freed later, and no count may outlive the cache.
            drop(entry.value().take(lock));
            entry.remove();
        }
    }

    /// Caches `attr` for `ino` for `ttl` from now on the cache's [`Clock`](crate::Clock) (nanosecond
    /// precision; `Duration::ZERO`: expired at once; `Duration::MAX`: never expires). A change
    /// of mode, owner or group forgets every cached access result of the inode (see
    /// `access.rs`) before this returns.
    ///
    /// Errors: [`Error::UnknownInode`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use udcache::ManualClock;
    /// use udcache::{Attr, Config, Dcache, ROOT_INO};
    /// let clock = Arc::new(ManualClock::new());
    /// let cache = Dcache::new(Config::for_entries(16).with_clock(clock.clone()));
    /// let attr = Attr { size: 4096, mode: 0o40755, nlink: 2, ..Attr::default() };
    /// cache.setattr(ROOT_INO, &attr, Duration::from_secs(1)).unwrap();
    /// assert_eq!(cache.getattr(ROOT_INO).unwrap(), Some(attr));
    /// clock.advance(Duration::from_secs(1)); // the second has passed
    /// assert_eq!(cache.getattr(ROOT_INO).unwrap(), None);
    /// ```
    pub fn setattr(&self, ino: u64, attr: &Attr, ttl: Duration) -> Result<(), Error> {
        let guard = epoch::pin();
        let inode = self.inode(&guard, ino).ok_or(Error::UnknownInode(ino))?;
        let until = self.ticks.expiry_ns(ttl);
        // Compared with what this write replaced, not with a snapshot read before it: between
        // the two another setattr may land, and the change from its attributes to these
        // would go unrevoked (a result filled under mode 755 surviving a return to 700).
        let old = inode.attr.write(attr, until);
        if (old.mode, old.uid, old.gid) != (attr.mode, attr.uid, attr.gid) {
            inode.access.revoke();
        }
        Ok(())
    }

    /// Evicts up to `n` unused dentries, negatives first, least recently used first within
    /// each shard of the LRU (shards are visited in turn, so across the whole cache the order
    /// is approximate), a referenced one getting a second chance; returns how many, exactly
    /// (the negatives the run rule evicts because of the shrink's own changes included; see
    /// [`NegHash::shrink`](udcache_neghash::NegHash::shrink)). Positives go only once the scan
    /// found no unused negative left. The memory-pressure hook.
    /// A positive dentry evicted leaves its inode cached (until `forget`): the next lookup of
    /// the name misses and asks the filesystem again.
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// cache.add(ROOT_INO, b"f", InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 0 }).unwrap();
    /// cache.add_negative(ROOT_INO, b"g").unwrap();
    /// assert_eq!(cache.shrink(10), 2);
    /// assert_eq!((cache.stats().nr_dentry, cache.stats().nr_inodes), (0, 2));
    /// assert!(cache.children(ROOT_INO).unwrap().is_empty());
    /// ```
    pub fn shrink(&self, n: usize) -> usize {
        let negatives = self.names.shrink_negative(n);
        let mut done = negatives.evicted;
        if done == n || !negatives.exhausted {
            return done;
        }
        for held in self.names.oldest_unused(n - done, Polarity::Positive) {
            let (parent, name) = (held.parent(), held.name());
            let names = self.lock_names((parent, name), None);
            let guard = epoch::pin();
            // Unlinked or renamed since it was picked: it is not ours to drop any more.
            if !held.is_hashed() || held.value().load(&guard).is_none() {
                continue;
            }
            let inode = self.detach(&held, &names, UnlinkPolicy::Drop);
            self.name_unlinked((parent, name), &inode, &names);
            done += 1;
        }
        done
    }
}
