//! The tree: each directory's positive children, walks over them, and invalidation of a
//! subtree.
//!
//! # Rules
//!
//! - A directory inode keeps a map of its **positive** children, name → inode
//!   (`DirState`). Negative dentries are never on it: they live only in the name table, so
//!   iterating a directory's children costs O(positive children) however many misses it
//!   remembers (the 2020 thread's point: 0.5 s to walk ten positive children behind a
//!   million negatives).
//! - The map changes only together with a dentry's slot: a writer holds the name's stripe lock
//!   (the `NameLock` proof) while it calls `Dcache::name_linked` or
//!   `Dcache::name_unlinked`, and those also keep the inode's alias list. So map, aliases and
//!   slots agree whenever no writer holds the stripe.
//! - The map's mutex is a leaf lock (see the "Lock order" table in the repository's
//!   `ARCHITECTURE.md`): readers copy a snapshot under it and call user code with no lock
//!   held, so a callback may call back into the cache.
//! - A directory remembers whether it ever had negative children (`had_negatives`): only those
//!   need the name-table sweep when their subtree is invalidated or their inode dropped. Every
//!   maker of a negative notes it: `add_negative` (which refuses a parent that is not a cached
//!   directory, so no negative is made under a number no directory answers for) and `detach`
//!   under [`UnlinkPolicy::Negative`] (unlink and the source of a rename).
//! - [`Dcache::invalidate`] of a directory runs inside a rename write section (walkers through
//!   it fall back), drops every positive dentry below it through the maps, then sweeps the
//!   negatives of the dropped directories out of the name table in one pass. Inodes stay
//!   cached until `forget`.

use std::collections::HashSet;

use udcache_neghash::epoch;

use crate::cache::{Dcache, Lookup};
use crate::config::UnlinkPolicy;
use crate::dentry::NameLock;
use crate::dirstate::Child;
use crate::error::Error;
use crate::fs::FileType;
use crate::inode::{Inode, InodeRef};
use crate::name::validate_name;
use crate::sync::{Ordering, lock};

use super::listing;

/// What [`Dcache::walk_tree`] does after visiting a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// Go on (into the child, if it is a directory).
    Continue,
    /// Do not descend into this child.
    Skip,
    /// Ignore the rest of this directory's children (Linux's `D_WALK_SKIP_SIBLINGS`).
    SkipSiblings,
    /// Stop the walk.
    Quit,
}

/// The tree below a directory: its positive children, a walk over them, invalidation.
impl Dcache {
    /// The cached directory `dir` (held, for its state).
    fn dir_inode(&self, dir: u64) -> Result<InodeRef, Error> {
        let inode = self.inode_arc(dir).ok_or(Error::UnknownInode(dir))?;
        if inode.dir().is_none() {
            return Err(Error::NotDirectory(dir));
        }
        Ok(inode)
    }

    /// The positive children of `dir`, a snapshot in no particular order. Costs O(positive
    /// children): negative dentries are not on the children map.
    ///
    /// Errors: [`Error::UnknownInode`], [`Error::NotDirectory`].
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// cache.add(ROOT_INO, b"a", InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 0 }).unwrap();
    /// for i in 0..100 {
    ///     cache.add_negative(ROOT_INO, format!("miss{i}").as_bytes()).unwrap();
    /// }
    /// let children = cache.children(ROOT_INO).unwrap();
    /// assert_eq!(children.len(), 1);
    /// assert_eq!((children[0].name.as_slice(), children[0].inode.ino), (&b"a"[..], 2));
    /// ```
    pub fn children(&self, dir: u64) -> Result<Vec<Child>, Error> {
        let inode = self.dir_inode(dir)?;
        Ok(inode.dir().expect("checked a directory").snapshot())
    }

    /// Walks the cached positive subtree below `root` depth first (`root` itself is not
    /// visited), calling `f(depth, parent, child)` with depth 1 for `root`'s children; `f`
    /// steers with [`Visit`]. Each directory's children are a snapshot taken when the walk
    /// reaches it, and no lock is held while `f` runs. Each directory is entered at most once:
    /// the cache does not stop a filesystem from making a directory its own ancestor (see
    /// [`Dcache::rename`]), and a walk meeting such a loop visits the directory's name but does
    /// not enter it again.
    ///
    /// Errors: [`Error::UnknownInode`], [`Error::NotDirectory`] for `root`.
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, Visit};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// let dir = |ino| InodeSpec { ino, kind: FileType::Directory, fs_data: 0 };
    /// cache.add(ROOT_INO, b"src", dir(2)).unwrap();
    /// cache.add(2, b"lib", dir(3)).unwrap();
    /// cache.add(ROOT_INO, b"target", dir(4)).unwrap();
    /// cache.add(4, b"debug", dir(5)).unwrap();
    /// let mut seen = Vec::new();
    /// cache
    ///     .walk_tree(ROOT_INO, |_depth, _parent, child| {
    ///         seen.push(child.inode.ino);
    ///         if child.name == b"target" { Visit::Skip } else { Visit::Continue }
    ///     })
    ///     .unwrap();
    /// seen.sort();
    /// assert_eq!(seen, [2, 3, 4]); // not 5: `target` was skipped
    /// ```
    pub fn walk_tree(
        &self,
        root: u64,
        mut f: impl FnMut(usize, u64, &Child) -> Visit,
    ) -> Result<(), Error> {
        let top = self.children(root)?;
        // A stack of (directory, its snapshot, the next child to visit).
        let mut stack = vec![(root, top, 0usize)];
        let mut entered = HashSet::from([root]);
        loop {
            let depth = stack.len();
            let Some((parent, children, next)) = stack.last_mut() else { break };
            let Some(child) = children.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            let visit = f(depth, *parent, child);
            let (kind, ino) = (child.inode.kind, child.inode.ino);
            match visit {
                Visit::Quit => break,
                Visit::SkipSiblings => {
                    stack.pop();
                }
                Visit::Continue if kind == FileType::Directory && entered.insert(ino) => {
                    // Gone or changed since the snapshot: nothing below to visit.
                    if let Ok(below) = self.children(ino) {
                        stack.push((ino, below, 0));
                    }
                }
                Visit::Continue | Visit::Skip => {}
            }
        }
        Ok(())
    }

    /// Bookkeeping of a slot that now names `inode` as `(parent, name)`: the alias list and the
    /// parent's children map. The caller holds the name's stripe lock.
    pub(crate) fn name_linked(&self, (parent, name): (u64, &[u8]), inode: &Inode, _: &NameLock) {
        inode.add_alias(parent, name);
        if let Some(dir) = self.dir_state(&epoch::pin(), parent) {
            lock(&dir.children).insert(name.into(), inode.spec());
        }
    }

    /// Bookkeeping of a slot that no longer names `inode` as `(parent, name)`. The caller
    /// holds the name's stripe lock.
    pub(crate) fn name_unlinked(&self, (parent, name): (u64, &[u8]), inode: &Inode, _: &NameLock) {
        inode.remove_alias(parent, name);
        if let Some(dir) = self.dir_state(&epoch::pin(), parent) {
            let mut children = lock(&dir.children);
            children.remove(name);
            // A map keeps its peak capacity, and iterating it costs that capacity: shrunk
            // when three quarters are empty, listing the children of a directory whose files
            // came and went costs what it holds now (amortised: a shrink follows at least as
            // many removals as it moves entries).
            if children.len() < children.capacity() / 4 {
                children.shrink_to_fit();
            }
        }
    }

    /// Drops the dentry `(parent, name)` (and, for a directory, everything cached below it)
    /// so that the next lookup of it misses: the filesystem said it changed behind the cache
    /// (FUSE's `notify_inval_entry`). The inodes stay cached until `forget`. The parent's
    /// listing is marked changed. A name with no dentry (shrunk away, never looked up) in a
    /// directory with a listing has only the listing marked changed, whatever it says of the
    /// name (a page may list it; a fill running now may complete it without a name created
    /// just now), so the next lookup and readdir ask the filesystem.
    ///
    /// Errors, changing nothing: a bad name; nothing cached that could answer for the name:
    /// no dentry, and no listing of `parent` ([`Error::NotFound`]).
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, Lookup, ROOT_INO, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// cache.add(ROOT_INO, b"d", InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 0 }).unwrap();
    /// cache.add(2, b"f", InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 0 }).unwrap();
    /// cache.add_negative(2, b"missing").unwrap();
    /// cache.invalidate(ROOT_INO, b"d").unwrap();
    /// let guard = epoch::pin();
    /// assert!(matches!(cache.lookup(&guard, ROOT_INO, b"d"), Ok(Lookup::Miss)));
    /// assert!(matches!(cache.lookup(&guard, 2, b"f"), Ok(Lookup::Miss)));
    /// assert!(matches!(cache.lookup(&guard, 2, b"missing"), Ok(Lookup::Miss)));
    /// assert_eq!(cache.stats().nr_inodes, 3); // still known, until forget
    /// ```
    pub fn invalidate(&self, parent: u64, name: &[u8]) -> Result<(), Error> {
        validate_name(name)?;
        let guard = epoch::pin();
        loop {
            // What the name holds decides whether a section is needed; it is checked again
            // under the name lock, and the whole is done again if it changed meanwhile (as
            // `unlink` does): a name that became a directory must not be dropped without one.
            let seen = match self.step(&guard, parent, name) {
                Lookup::Negative => None,
                Lookup::Hit(inode) => Some(inode),
                Lookup::Miss => {
                    // Decided under the name lock: a fill racing this call is then either
                    // seen here or files after it, and sees the generation bump that
                    // announced the change (see `crate::reval`). Filled just now: look again.
                    let _names = self.lock_names((parent, name), None);
                    if self.dentry(parent, name).is_none() {
                        return self.invalidate_listed(parent);
                    }
                    continue;
                }
            };
            let is_dir = seen.is_some_and(|i| i.kind() == FileType::Directory);
            let _section = is_dir.then(|| self.write_section());
            let names = self.lock_names((parent, name), None);
            let Some(found) = self.dentry(parent, name) else {
                drop(names);
                return self.invalidate_listed(parent);
            };
            let dropped = match (found.value().load(&guard), seen) {
                (None, None) => {
                    found.remove();
                    None
                }
                (Some(now), Some(seen)) if std::ptr::eq(now, seen) => {
                    Some(self.drop_positive(&found, &names))
                }
                // Filled, emptied or replaced since the look: look again.
                _ => continue,
            };
            // Unpinned before a subtree is dropped: reclamation need not wait for it.
            drop((found, names, guard));
            if let Some(top) = dropped.filter(|_| is_dir) {
                self.drop_below(&top);
            }
            listing::changed(self, parent, None);
            return Ok(());
        }
    }

    /// [`Dcache::invalidate`] of a name no dentry holds: only `parent`'s listing may answer
    /// for it. Any listing is marked changed, whatever it says of the name now: an incomplete
    /// one may hold a page that lists it, or complete itself with a fill that read the
    /// directory before the change.
    fn invalidate_listed(&self, parent: u64) -> Result<(), Error> {
        if !self.has_listing(parent) {
            return Err(Error::NotFound);
        }
        listing::changed(self, parent, None);
        Ok(())
    }

    /// Drops the positive dentry `(parent, name)`, if it is one; returns its inode. A
    /// directory's name is dropped only inside a rename section.
    pub(crate) fn drop_name(&self, parent: u64, name: &[u8]) -> Option<InodeRef> {
        let names = self.lock_names((parent, name), None);
        let found = self.dentry(parent, name)?;
        found.value().load(&epoch::pin())?;
        Some(self.drop_positive(&found, &names))
    }

    /// Drops every cached dentry below directory `top`, positive and negative, and their
    /// listings. The caller holds the rename lock (a section, if walkers may be below).
    ///
    /// Each directory below gets a new generation first: a negative the purge cannot take
    /// (held, say by a revalidation in the filesystem now) and an answer being filed for a
    /// lookup asked before are then not trusted after this.
    pub(crate) fn drop_below(&self, top: &InodeRef) {
        // Walkers validated by the rename sequence must see the subtree go (one load, per
        // subtree dropped; a caller without a section is a bug that would drop it unseen).
        assert!(self.rename.section_open(), "a subtree dropped outside a rename section");
        let (mut dirs, mut swept) = (vec![top.clone()], HashSet::new());
        while let Some(d) = dirs.pop() {
            d.bump_dir_gen();
            let state = d.dir().expect("only directories are pushed");
            // Relaxed: see `note_negative`.
            if state.had_negatives.load(Ordering::Relaxed) {
                swept.insert(d.ino());
            }
            for child in state.snapshot() {
                let dropped = self.drop_name(d.ino(), &child.name);
                dirs.extend(dropped.filter(|i| i.kind() == FileType::Directory));
            }
            listing::forget(&d);
        }
        if !swept.is_empty() {
            self.names.purge_negatives(&|parent| swept.contains(&parent));
        }
    }

    /// Drops the positive dentry `found` (its slot emptied with the drop policy, its name
    /// taken off the inode's aliases and the parent's children); returns its inode.
    fn drop_positive(
        &self,
        found: &udcache_neghash::Held<'_, crate::dentry::Dentry>,
        names: &NameLock<'_>,
    ) -> InodeRef {
        let inode = self.detach(found, names, UnlinkPolicy::Drop);
        self.name_unlinked((found.parent(), found.name()), &inode, names);
        inode
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Dcache, FileType, InodeSpec, ROOT_INO, epoch};

    #[test]
    fn a_children_map_gives_back_room_its_unlinked_names_took() {
        let cache = Dcache::new(Config::for_entries(4096));
        let spec = |ino, kind| InodeSpec { ino, kind, fs_data: 0 };
        cache.add(ROOT_INO, b"d", spec(2, FileType::Directory)).unwrap();
        let name = |i: u64| format!("f{i}").into_bytes();
        for i in 0..2000 {
            cache.add(2, &name(i), spec(10 + i, FileType::Regular)).unwrap();
        }
        for i in 0..1990 {
            cache.unlink(2, &name(i)).unwrap();
        }
        let guard = epoch::pin();
        let dir = cache.dir_state(&guard, 2).unwrap();
        let children = crate::sync::lock(&dir.children);
        // Listing the children walks the map's capacity: it must follow the ten left, not
        // the two thousand there were.
        assert_eq!(children.len(), 10);
        assert!(children.capacity() < 64, "capacity {}", children.capacity());
    }
}
