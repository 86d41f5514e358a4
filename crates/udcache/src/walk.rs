//! Path walk: `a/b/c` from a directory, under one epoch guard, without locks.
//!
//! # Rules
//!
//! - A walk reads the rename sequence ([`crate::rename`]) first; an odd value (a rename in
//!   progress) sends it straight to the fallback. It then resolves each component with a
//!   lockless [`Dcache::lookup`](crate::Dcache::lookup) step and, whatever the outcome, checks
//!   the sequence again: unchanged, the result stands; changed, the walk is done again holding
//!   the rename lock (no section can open then), which is counted in
//!   [`Stats::walk_fallbacks`](crate::Stats::walk_fallbacks).
//! - What the caller may rely on: a [`Walk::Found`] inode is what the path named at one
//!   instant during the call; [`Walk::Negative`] and [`Walk::Miss`] likewise describe one
//!   instant. A walk never blocks except in the fallback.
//! - `.` stays, `..` goes to the directory's parent (the root's parent is itself; the walk does
//!   not stop at the `root` argument: `..` from it climbs, as `..` from a non-root process
//!   working directory does). Empty components (`a//b`, a leading or trailing `/`) are
//!   skipped.
//! - Symlinks are **reported, not followed**: a symlink met before the last component ends the
//!   walk with [`Walk::Symlink`], telling the caller where the rest of the path starts, so it
//!   can read the link's target (the cache does not hold targets) and walk again with a depth
//!   limit of its choosing. A symlink as the last component is [`Walk::Found`] (like
//!   `lstat`): its kind says what it is.

use udcache_neghash::epoch::Guard;

use crate::cache::{Dcache, Lookup};
use crate::error::Error;
use crate::inode::{FileType, Inode};
use crate::name::validate_name;
use crate::stats::Events;

/// How a [`Dcache::walk`] ended. Offsets are byte offsets into the path.
#[derive(Clone, Copy, Debug)]
pub enum Walk<'g> {
    /// Every component resolved: the inode the path names.
    Found(&'g Inode),
    /// The component at `at` is known not to exist (a negative dentry).
    Negative {
        /// Where the missing component starts.
        at: usize,
    },
    /// The component at `at` is not cached in directory `parent`: ask the filesystem (see
    /// [`Dcache::resolve`]) and walk again.
    Miss {
        /// The directory to look the component up in.
        parent: u64,
        /// Where the component starts.
        at: usize,
    },
    /// A symlink before the last component; the rest of the path starts at `rest`.
    Symlink {
        /// The link.
        inode: &'g Inode,
        /// Where the components after the link start.
        rest: usize,
    },
    /// The component before `at` is not a directory.
    NotDir {
        /// The non-directory.
        inode: &'g Inode,
        /// Where the component that needed a directory starts.
        at: usize,
    },
}

/// Components of `path` with their byte offsets, empty ones skipped.
fn components(path: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    path.split(|&b| b == b'/')
        .scan(0, |off, c| {
            let at = *off;
            *off += c.len() + 1;
            Some((at, c))
        })
        .filter(|(_, c)| !c.is_empty())
}

impl Dcache {
    /// Resolves `path` from directory `root`, lock-free unless a rename overlaps it (then once
    /// more under the rename lock). See the [module rules](crate::walk).
    ///
    /// Errors: a component that is not a valid name ([`Error::InvalidName`], checked before any
    /// lookup); `root` not cached ([`Error::UnknownInode`]).
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, Walk, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// let dir = |ino| InodeSpec { ino, kind: FileType::Directory, fs_data: 0 };
    /// cache.add(ROOT_INO, b"a", dir(2)).unwrap();
    /// cache.add(2, b"b", dir(3)).unwrap();
    /// cache.add_negative(3, b"c").unwrap();
    /// let guard = epoch::pin();
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "a/./b/../b"), Ok(Walk::Found(i)) if i.ino() == 3));
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "a/b/c"), Ok(Walk::Negative { at: 4 })));
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "a/x"), Ok(Walk::Miss { parent: 2, at: 2 })));
    /// ```
    pub fn walk<'g>(
        &'g self,
        guard: &'g Guard,
        root: u64,
        path: impl AsRef<[u8]>,
    ) -> Result<Walk<'g>, Error> {
        let path = path.as_ref();
        for (_, c) in components(path) {
            if c != b"." && c != b".." {
                validate_name(c)?;
            }
        }
        if let Some(seq) = self.rename.read_begin() {
            let walked = self.walk_steps(guard, root, path);
            if self.rename.read_valid(seq) {
                return walked;
            }
        }
        self.walk_locked(guard, root, path)
    }

    /// The fallback: rename sections excluded for the whole walk.
    #[cold]
    fn walk_locked<'g>(
        &'g self,
        guard: &'g Guard,
        root: u64,
        path: &[u8],
    ) -> Result<Walk<'g>, Error> {
        Events::bump(&self.events.walk_fallbacks);
        let _rename = self.rename.lock();
        self.walk_steps(guard, root, path)
    }

    /// The steps, each one lockless lookup; the caller validates them as a whole.
    fn walk_steps<'g>(
        &'g self,
        guard: &'g Guard,
        root: u64,
        path: &[u8],
    ) -> Result<Walk<'g>, Error> {
        let mut cur = self.inode(guard, root).ok_or(Error::UnknownInode(root))?;
        for (at, name) in components(path) {
            match cur.kind() {
                FileType::Directory => {}
                FileType::Symlink => return Ok(Walk::Symlink { inode: cur, rest: at }),
                _ => return Ok(Walk::NotDir { inode: cur, at }),
            }
            cur = match name {
                b"." => cur,
                b".." => match self.inode(guard, cur.parent()) {
                    Some(up) => up,
                    None => return Ok(Walk::Miss { parent: cur.ino(), at }),
                },
                _ => match self.step(guard, cur.ino(), name) {
                    Lookup::Hit(next) => next,
                    Lookup::Negative => return Ok(Walk::Negative { at }),
                    Lookup::Miss => return Ok(Walk::Miss { parent: cur.ino(), at }),
                },
            };
        }
        Ok(Walk::Found(cur))
    }
}
