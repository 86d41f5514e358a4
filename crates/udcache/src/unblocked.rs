//! What a blocking step settled, carried into the walk done after it.
//!
//! A [`Dcache::walk_as`](crate::Dcache::walk_as) that meets an expired dentry or a missing
//! access result returns [`Blocked`](crate::Blocked); [`Dcache::unblock`](crate::Dcache::unblock)
//! asks the filesystem and files its answer, and the walk is done again. An answer trusted for
//! less than a tick (FUSE's `entry_valid = 0`: "revalidate at every use") is expired again by
//! the time that walk reads it, so a loop of walk and unblock would never end. The answers
//! `unblock` got are therefore handed to the walks that follow ([`Dcache::walk_as_after`](crate::Dcache::walk_as_after)) as
//! an [`Unblocked`], gathered over one resolution ([`Unblocked::merge`]: a path with several
//! such names needs the answers for all of them in its last walk), and used there for the one
//! use they were asked for.
//!
//! # Rules
//!
//! - A name's answer is used only if the dentry still says what the filesystem said (the same
//!   inode number, or negative), its directory's generation is the one read before the
//!   filesystem was asked, and the dentry was filled under that generation: a change of the
//!   directory, or a writer filing another answer, makes the walk ask again.
//! - An access answer is used only for the same directory and credential while the inode's
//!   [`AccessStamp`] is the one taken before the filesystem was asked: an attribute change or
//!   [`Dcache::acl_changed`](crate::Dcache::acl_changed) since makes the walk ask again.
//! - It is consulted only on the walk's cold paths (a stale dentry, an access miss): fresh
//!   entries never look at it.

use crate::access::{AccessStamp, Cred};
use crate::cache::Stale;
use crate::fs::Resolved;
use crate::inode::Inode;

/// What [`Dcache::unblock`](crate::Dcache::unblock) settled with the filesystem during one
/// resolution, for the walks done after it
/// ([`Dcache::walk_as_after`](crate::Dcache::walk_as_after)). The default settled nothing.
/// Keep one per resolution of a path (it grows by one answer per blocking step), never across
/// resolutions: its answers serve the use they were asked for.
// Hidden: the revalidating walk's steps, for protocol tests and the bench; see `resolve_path`.
#[doc(hidden)]
#[derive(Clone, Debug, Default)]
pub struct Unblocked {
    names: Vec<SettledName>,
    access: Vec<SettledAccess>,
}

/// The filesystem's answer for one name.
#[derive(Clone, Debug)]
struct SettledName {
    parent: u64,
    name: Box<[u8]>,
    /// The inode number it named, `None`: no such name.
    ino: Option<u64>,
    /// The directory's generation before the filesystem was asked.
    generation: u32,
}

/// The filesystem's answer for one credential's search permission on one directory.
#[derive(Clone, Copy, Debug)]
struct SettledAccess {
    dir: u64,
    cred: Cred,
    allowed: bool,
    /// The directory's stamp before the filesystem was asked.
    stamp: AccessStamp,
}

impl Unblocked {
    /// A name settled as `answer`, asked under directory generation `generation`.
    pub(crate) fn name(parent: u64, name: &[u8], answer: Resolved, generation: u32) -> Self {
        let ino = match answer {
            Resolved::Found(spec) => Some(spec.ino),
            Resolved::Negative => None,
        };
        let names = vec![SettledName { parent, name: name.into(), ino, generation }];
        Unblocked { names, access: Vec::new() }
    }

    /// Search permission settled as `allowed`, asked after `stamp` was taken.
    pub(crate) fn access(dir: u64, cred: Cred, allowed: bool, stamp: AccessStamp) -> Self {
        Unblocked { names: Vec::new(), access: vec![SettledAccess { dir, cred, allowed, stamp }] }
    }

    /// Adds what a later [`Dcache::unblock`](crate::Dcache::unblock) settled; its answers
    /// replace older ones for the same name, or the same directory and credential.
    pub fn merge(&mut self, newer: Unblocked) {
        for n in newer.names {
            self.names.retain(|o| (o.parent, &o.name) != (n.parent, &n.name));
            self.names.push(n);
        }
        for a in newer.access {
            self.access.retain(|o| (o.dir, o.cred) != (a.dir, a.cred));
            self.access.push(a);
        }
    }

    /// The settled answer for the stale dentry `name` in `dir`, if it still holds (see the
    /// rules): the inode it names, or `None` inside for a negative.
    pub(crate) fn answer<'g>(
        &self,
        dir: &Inode,
        name: &[u8],
        stale: &Stale<'g>,
    ) -> Option<Option<&'g Inode>> {
        let s = self.names.iter().find(|s| s.parent == dir.ino() && *s.name == *name)?;
        let same_answer = stale.inode.map(Inode::ino) == s.ino;
        let unchanged = dir.dir_gen() == s.generation && stale.word.generation() == s.generation;
        (same_answer && unchanged).then_some(stale.inode)
    }

    /// The settled search permission of `cred` on `dir`, if it still holds.
    pub(crate) fn search(&self, dir: &Inode, cred: &Cred) -> Option<bool> {
        let a = self.access.iter().find(|a| a.dir == dir.ino() && a.cred == *cred)?;
        (AccessStamp::of(dir) == a.stamp).then_some(a.allowed)
    }
}
