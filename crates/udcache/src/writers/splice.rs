//! Splicing: a directory the filesystem names somewhere while the cache holds it under another
//! name was renamed behind the cache; [`Dcache::resolve`] moves its cached name to the answered
//! one, with what is cached below it, as Linux's `d_splice_alias` moves a dentry.
//!
//! # Rules
//!
//! - The move is one rename section (see `rename.rs`): a lockless walk that overlaps it
//!   walks again. Inside it, under the name locks of both names, the source must still name
//!   the directory (another writer may have moved, unlinked or exchanged it since its alias was
//!   read: the caller then files the answer afresh), and the target must not be positive (a
//!   create or add that filed it meanwhile stands, as it does against a racing file answer).
//! - The new name is filed as any answer of the filesystem is: trusted only if the new
//!   parent's generation is still the one read before the filesystem was asked, else filed
//!   expired (see `Dcache::word`), under the name lock, so no reader trusts
//!   it after a change announced meanwhile returned.
//! - The old name is dropped, not left negative: the answer says nothing about whether
//!   something else now has that name, and a negative filed now would be stamped with a
//!   generation read after the filesystem answered.
//! - A move below itself: if the new parent is cached below the directory (by names), one
//!   of the cached names between them is stale — the filesystem says the new parent is not
//!   below it. The name just below the directory on that path is dropped first, in the same
//!   section, so the move closes no cycle; the directory it named stays cached, nameless and
//!   disconnected (its `..` is itself, as a disconnected dentry's is in Linux) until a lookup
//!   names it again.
//! - Inside the section the new parent is checked to be a cached directory again (its last
//!   forget would need a section), and the directory's inode stripe is held across the move,
//!   so `add`, which checks under it that a directory has no name, cannot give it a second one
//!   while it is between its names.
//! - Lock order as for a rename: the rename lock (the section), the directory's inode stripe,
//!   then name stripe locks; the dropped link's name lock is taken and released before both
//!   names' locks are taken.

use udcache_neghash::epoch;

use crate::cache::ROOT_INO;
use crate::cache::{Dcache, Lookup};
use crate::config::UnlinkPolicy;
use crate::error::Error;
use crate::inode::Inode;

/// How far [`Dcache::link_below`] climbs: deeper than any real tree, and an end to a climb
/// round a cycle of names that `add` let in (it does not check for them).
const MAX_CLIMB: usize = 4096;

/// How a [`Dcache::splice`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Spliced {
    /// The directory is named at the target now (moved, or there already).
    Done,
    /// Its cached name changed meanwhile (or it went): file the answer afresh.
    Retry,
}

impl Dcache {
    /// Moves the cached name of directory `ino` to `to`, filed as an answer asked under
    /// generation `asked` of `to.0` (see the module rules). Errors: [`Error::Exists`] (the
    /// target was filed positive meanwhile: nothing moves), [`Error::DirectoryAlias`] (the
    /// filesystem named the directory inside itself).
    pub(crate) fn splice(&self, ino: u64, to: (u64, &[u8]), asked: u32) -> Result<Spliced, Error> {
        if to.0 == ino {
            return Err(Error::DirectoryAlias(ino));
        }
        let Some(inode) = self.inode_arc(ino) else { return Ok(Spliced::Retry) };
        let Some((from_parent, from_name)) = inode.aliases().pop() else {
            return Ok(Spliced::Retry);
        };
        let from = (from_parent, from_name.as_slice());
        if from == to {
            return Ok(Spliced::Done);
        }
        let section = self.write_section();
        // Inside the section: the last forget of a directory opens one, so `to.0` stays
        // cached until it closes.
        self.check_dir(to.0)?;
        let moving = self.lock_moving(ino, None);
        let cut = self.link_below(ino, to.0);
        if let Some((parent, name)) = &cut {
            // Dropped meanwhile, or by this call: either way no longer a link. The directory
            // it named is disconnected: its `..` is itself until a lookup names it again.
            if let Some(below) = self.drop_name(*parent, name) {
                below.set_parent(below.ino());
            }
        }
        let moved = self.move_spliced(&inode, from, to, asked);
        drop((moving, section));
        if let Some((parent, _)) = cut {
            super::listing::changed(self, parent, None);
        }
        moved
    }

    /// The move itself, under the section and the directory's stripe: checked under the name
    /// locks (see the module rules).
    fn move_spliced(
        &self,
        inode: &Inode,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        asked: u32,
    ) -> Result<Spliced, Error> {
        let guard = epoch::pin();
        let names = self.lock_names(from, Some(to));
        match self.step(&guard, from.0, from.1) {
            Lookup::Hit(now) if std::ptr::eq(now, inode) => {}
            _ => return Ok(Spliced::Retry),
        }
        match self.step(&guard, to.0, to.1) {
            Lookup::Hit(now) if std::ptr::eq(now, inode) => return Ok(Spliced::Done),
            Lookup::Hit(_) => return Err(Error::Exists),
            _ => {}
        }
        // The target is not positive (checked): the move replaces nothing.
        self.move_name(from, to, UnlinkPolicy::Drop, Some(asked), &guard, &names);
        // The listings are told before the name locks go, as by `rename`.
        super::listing::changed(self, from.0, None);
        super::listing::changed(self, to.0, None);
        Ok(Spliced::Done)
    }

    /// If directory `ino` is cached above directory `start` (climbing by names), the name just
    /// below `ino` on the way: the link that a move of `ino` into `start` would close into a
    /// cycle. Read inside a rename section, when no directory name moves.
    fn link_below(&self, ino: u64, start: u64) -> Option<(u64, Vec<u8>)> {
        let mut at = start;
        for _ in 0..MAX_CLIMB {
            if at == ROOT_INO {
                return None;
            }
            let (parent, name) = self.inode_arc(at)?.aliases().pop()?;
            if parent == ino {
                return Some((parent, name));
            }
            at = parent;
        }
        None
    }
}
