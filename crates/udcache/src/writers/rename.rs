//! Renames: moving and exchanging names inside one rename section (see `rename.rs`).

use udcache_neghash::epoch::Guard;

use crate::cache::{Lookup, MovingLock};
use crate::config::UnlinkPolicy;
use crate::dentry::{DentryWrites, NameLock};

/// Whether [`Dcache::rename`](crate::Dcache::rename) may replace an existing target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RenameMode {
    /// A positive target is replaced (its inode loses that name), like `rename(2)`.
    #[default]
    Replace,
    /// A positive target is [`Error::Exists`](crate::Error::Exists) (`RENAME_NOREPLACE`).
    NoReplace,
    /// Both names must be positive; they swap inodes atomically (`RENAME_EXCHANGE`). A missing
    /// target is [`Error::NotFound`](crate::Error::NotFound).
    Exchange,
}

/// Renames.
impl crate::Dcache {
    /// Moves the name `old_name` in `old_parent` to `new_name` in `new_parent` (or, with
    /// [`RenameMode::Exchange`], swaps the two names' inodes), inside one rename section: a
    /// lockless walk that overlaps it falls back and walks again, so no walk sees a state
    /// between its steps. The old name is left as the [`UnlinkPolicy`]
    /// says; a replaced target's inode stays cached (until `forget`). Renaming a name onto
    /// itself, or onto another name of the same inode, does nothing (with
    /// [`RenameMode::NoReplace`] it is [`Error::Exists`](crate::Error::Exists), as `renameat2`
    /// says: the target is positive). Both directories' listings are marked changed.
    ///
    /// Not checked (the filesystem's job, as in FUSE): that a directory is not moved into its
    /// own subtree, and that a directory replaces only an empty directory.
    ///
    /// Errors, changing nothing: a bad name; `new_parent` not a cached directory; no positive
    /// source ([`Error::NotFound`](crate::Error::NotFound)); a positive target with
    /// [`RenameMode::NoReplace`]; no positive target with [`RenameMode::Exchange`]. A
    /// filesystem that did make the change then calls
    /// [`invalidate`](crate::Dcache::invalidate) on both names: a dentry may have been shrunk
    /// away while a listing still answers for its name.
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, RenameMode, ROOT_INO, Walk, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// let dir = InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 0 };
    /// let file = InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 0 };
    /// cache.add(ROOT_INO, b"d", dir).unwrap();
    /// cache.add(ROOT_INO, b"f", file).unwrap();
    /// cache.rename(ROOT_INO, b"f", 2, b"g", RenameMode::NoReplace).unwrap();
    /// let guard = epoch::pin();
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "d/g"), Ok(Walk::Found(i)) if i.ino() == 3));
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "f"), Ok(Walk::Negative { .. })));
    /// cache.rename(ROOT_INO, b"d", 2, b"g", RenameMode::Exchange).unwrap(); // d <-> d/g
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "d"), Ok(Walk::Found(i)) if i.ino() == 3));
    /// ```
    pub fn rename(
        &self,
        old_parent: u64,
        old_name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        mode: RenameMode,
    ) -> Result<(), crate::Error> {
        crate::validate_name(old_name)?;
        crate::validate_name(new_name)?;
        self.check_dir(new_parent)?;
        let guard = udcache_neghash::epoch::pin();
        let (from, to) = ((old_parent, old_name), (new_parent, new_name));
        // Checked before the section (a refused rename disturbs no walker), and again inside.
        if !self.rename_allowed(&guard, from, to, mode)? {
            return Ok(());
        }
        let section = self.write_section();
        // Again inside: the last forget of a directory opens a section, so `new_parent` stays
        // cached until this one closes.
        self.check_dir(new_parent)?;
        let (names, _moving) = self.lock_move(&guard, from, to, mode);
        if !self.rename_allowed(&guard, from, to, mode)? {
            return Ok(());
        }
        if mode == RenameMode::Exchange {
            self.exchange(from, to, &names);
        } else {
            self.move_name(from, to, self.unlink_policy(), None, &guard, &names);
        }
        // The listings are told before the name locks go: once unlocked, the new name's
        // dentry may be evicted, and a complete listing not yet told would answer it "absent".
        super::listing::changed(self, old_parent, None);
        super::listing::changed(self, new_parent, None);
        drop((names, section));
        Ok(())
    }

    /// Inside a rename section: the name locks of `from` and `to` and the inode stripes of
    /// the inodes whose names the rename moves (the source's, and with
    /// [`RenameMode::Exchange`] the target's), read again under the name locks until they
    /// are the ones locked (`add` of a file or of a nameless directory changes a name without
    /// the rename lock).
    fn lock_move(
        &self,
        guard: &Guard,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        mode: RenameMode,
    ) -> (NameLock<'_>, Option<MovingLock<'_>>) {
        let moving = |g: &Guard| {
            let ino = |(p, n): (u64, &[u8])| match self.step(g, p, n) {
                Lookup::Hit(i) => Some(i.ino()),
                _ => None,
            };
            (ino(from), if mode == RenameMode::Exchange { ino(to) } else { None })
        };
        loop {
            let seen = moving(guard);
            // Nothing positive to move: the caller's check refuses the rename.
            let inodes = seen.0.map(|a| self.lock_moving(a, seen.1));
            let names = self.lock_names(from, Some(to));
            if moving(guard) == seen {
                return (names, inodes);
            }
        }
    }

    /// The move of a rename (and of `resolve`'s splice): `from` (positive) leaves, as `left`
    /// says, and `to` names its inode, filed as an answer asked under generation `asked` of
    /// `to.0` (`None`: asserted now; see `Dcache::word`).
    pub(crate) fn move_name(
        &self,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        left: UnlinkPolicy,
        asked: Option<u32>,
        guard: &Guard,
        names: &NameLock,
    ) {
        // Positive under the name lock (checked by the caller): held, it cannot go.
        let source = self.dentry(from.0, from.1).expect("a positive source, checked");
        let inode = self.detach(&source, names, left);
        drop(source);
        self.name_unlinked(from, &inode, names);
        let valid = self.validity(to.0, false, asked);
        let (target, replaced) =
            self.put(to, &inode, valid, guard, names, true).expect("replace never refuses");
        if let Some(replaced) = replaced {
            self.name_unlinked(to, &replaced, names);
        }
        self.name_linked(to, &inode, names);
        drop(target);
        if inode.kind() == crate::FileType::Directory {
            inode.set_parent(to.0);
        }
    }

    /// The swap of an exchange: both positive (checked by the caller), each takes the other's
    /// inode in one slot store.
    fn exchange(&self, a: (u64, &[u8]), b: (u64, &[u8]), names: &NameLock) {
        let da = self.dentry(a.0, a.1).expect("a positive source, checked");
        let db = self.dentry(b.0, b.1).expect("a positive target, checked");
        let ia = da.value().load_arc(names).expect("positive, checked");
        let ib = db.value().load_arc(names).expect("positive, checked");
        self.name_unlinked(a, &ia, names);
        self.name_unlinked(b, &ib, names);
        drop(da.put_inode(ib.clone(), self.validity(a.0, false, None), names));
        drop(db.put_inode(ia.clone(), self.validity(b.0, false, None), names));
        self.name_linked(a, &ib, names);
        self.name_linked(b, &ia, names);
        for (inode, parent) in [(&ia, b.0), (&ib, a.0)] {
            if inode.kind() == crate::FileType::Directory {
                inode.set_parent(parent);
            }
        }
    }

    /// Whether the rename `from` → `to` has something to do (`Ok(false)`: the target is the
    /// source's inode already), or why it is refused.
    fn rename_allowed(
        &self,
        guard: &Guard,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        mode: RenameMode,
    ) -> Result<bool, crate::Error> {
        use crate::Error;
        let Lookup::Hit(moving) = self.step(guard, from.0, from.1) else {
            return Err(Error::NotFound);
        };
        match self.step(guard, to.0, to.1) {
            // Even the source's own inode: `renameat2(RENAME_NOREPLACE)` checks the target
            // before it looks at what the target is.
            Lookup::Hit(_) if mode == RenameMode::NoReplace => Err(Error::Exists),
            Lookup::Hit(target) if std::ptr::eq(target, moving) => Ok(false),
            Lookup::Hit(_) => Ok(true),
            _ if mode == RenameMode::Exchange => Err(Error::NotFound),
            _ => Ok(true),
        }
    }
}
