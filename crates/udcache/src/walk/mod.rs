//! Path walk: `a/b/c` from a directory, under one epoch guard, without locks.
//!
//! # Rules
//!
//! - A walk reads the rename sequence (`rename.rs`) first; an odd value (a rename in
//!   progress) sends it straight to the fallback. It then resolves each component with a
//!   lockless [`Dcache::lookup`](crate::Dcache::lookup) step (which trusts only fresh dentries:
//!   see `walk/checks.rs`) and, whatever the outcome, checks
//!   the sequence again: unchanged, the result stands; changed, the walk is done again holding
//!   the rename lock (no section can open then), which is counted in
//!   [`Stats::walk_fallbacks`](crate::Stats::walk_fallbacks).
//! - Each component's name is hashed one step ahead ([`udcache_neghash::NegHash::name_hash`]):
//!   its hash does not depend on the directory it will be looked up in, so it is computed
//!   while the previous component's lookup waits on memory, and only the keyed multiplies
//!   that mix in the parent follow that lookup's answer.
//! - What the caller may rely on: a [`Walk::Found`] inode is what the path named at one
//!   instant during the call; [`Walk::Negative`] and [`Walk::Miss`] likewise describe one
//!   instant. A walk never blocks except in the fallback. A dentry that is no longer trusted
//!   ends it as a [`Walk::Miss`] at that component, counted by its
//!   [`Reason`](crate::Reason) in [`Stats`](crate::Stats): [`Dcache::resolve`] revalidates it.
//!   ([`Dcache::walk_as`] asks the filesystem first, without blocking.) What `resolve`
//!   answers for a missed component decides it: a negative answer ends the path there, a
//!   positive one goes on from the inode it names (see [`Walk::Miss`]).
//! - `.` stays, `..` goes to the directory's parent (the root's parent is itself; the walk does
//!   not stop at the `root` argument: `..` from it climbs, as `..` from a non-root process
//!   working directory does); a parent no longer cached (forgotten while the directory stayed)
//!   ends the walk with [`Error::UnknownInode`] of the parent, as naming it would. Empty
//!   components (`a//b`, a leading `/`) are skipped. A trailing `/` asks for a directory, as
//!   in POSIX path resolution: `file/` ends with [`Walk::NotDir`] (`at` the path's length),
//!   `link/` with [`Walk::Symlink`] (`rest` at the slash, so the rest of the path keeps it).
//! - Symlinks are **reported, not followed**: a symlink met before the last component ends the
//!   walk with [`Walk::Symlink`], telling the caller where the rest of the path starts, so it
//!   can read the link's target (the cache does not hold targets) and walk again with a depth
//!   limit of its choosing. A symlink as the last component is [`Walk::Found`] (like
//!   `lstat`): its kind says what it is.

use udcache_neghash::epoch::Guard;

use crate::cache::{Dcache, Found, Lookup};
use crate::dentry::Named;
use crate::error::Error;
use crate::fs::FileType;
use crate::inode::Inode;
use crate::name::{NAME_MAX, validate_name};
use crate::stats::Event;

mod checks;

pub use checks::Blocked;
pub(crate) use checks::{Checks, cached, seen};

/// How a [`Dcache::walk`] ended. Offsets are byte offsets into the path.
#[derive(Clone, Copy, Debug)]
pub enum Walk<'g> {
    /// Every component resolved: the inode the path names, with its number and type as the
    /// last dentry keeps them (see [`Named`]).
    Found(Named<'g>),
    /// The component at `at` is known not to exist (a negative dentry).
    Negative {
        /// Where the missing component starts.
        at: usize,
    },
    /// The component at `at` is not cached in directory `parent` (or no longer trusted): ask
    /// the filesystem with [`Dcache::resolve`] of `parent` and the component. Its answer is the
    /// one that stands for the component at that instant, and the caller goes on from it, not
    /// from another walk of the same components:
    /// - [`Resolved::Negative`](crate::Resolved::Negative): the path does not exist; the walk
    ///   ends as at a [`Walk::Negative`]. A complete cached listing of `parent` answers so
    ///   without filing a negative dentry (see `listing.rs`), so a walk done again would
    ///   miss the same component again, for ever.
    /// - [`Resolved::Found`](crate::Resolved::Found): the component names that inode (one
    ///   lookup of it counted); walk the rest of the path, after the component, from it. A
    ///   walk from the start could miss here again (a name trusted for no time, or already
    ///   evicted).
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

/// Where the steps of a walk stopped.
pub(crate) enum Stop<'g> {
    /// An answer.
    Walk(Walk<'g>),
    /// An access check said no.
    Denied { dir: u64, at: usize },
    /// Something needs the blocking path.
    Blocked(Blocked),
}

/// Checks every component of `path` that must be a name (all but `.` and `..`).
pub(crate) fn validate_path(path: &[u8]) -> Result<(), Error> {
    // No component is longer than its path, and the walk skips empty components and takes
    // `.` and `..`: a path of at most `NAME_MAX` bytes is valid unless it holds a NUL. One
    // search for NUL then replaces a pass per component (a third of a cached walk's time).
    if path.len() <= NAME_MAX && find_byte(0, path).is_none() {
        return Ok(());
    }
    for (_, c) in components(path) {
        if c != b"." && c != b".." {
            validate_name(c)?;
        }
    }
    Ok(())
}

/// Components of `path` with their byte offsets, empty ones skipped; each `/` found with
/// [`find_byte`] rather than a byte-by-byte split.
fn components(path: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < path.len() {
            let start = at;
            let end = find_byte(b'/', &path[start..]).map_or(path.len(), |i| start + i);
            at = end + 1;
            if end > start {
                return Some((start, &path[start..end]));
            }
        }
        None
    })
}

/// The offset of the first `byte` in `s`. On x86-64, memchr's SSE2 search (SSE2 is part of
/// the architecture, so `One::new` always succeeds) is called directly: `memchr::memchr`
/// picks an implementation through a function pointer on every call, which costs more than
/// searching a dozen-byte component.
#[inline]
fn find_byte(byte: u8, s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(byte) {
        return sse2.find(s);
    }
    memchr::memchr(byte, s)
}

/// The lockless path walk.
impl Dcache {
    /// Resolves `path` from directory `root`, lock-free unless a rename overlaps it (then once
    /// more under the rename lock). See the module rules (`walk/mod.rs`).
    ///
    /// Errors: a component that is not a valid name ([`Error::InvalidName`], checked before any
    /// lookup); `root` not cached, or a directory whose parent `..` names no longer cached
    /// ([`Error::UnknownInode`]).
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
        validate_path(path)?;
        let mut checks = Checks::new(self, None, None, None);
        match self.walk_validated(guard, &mut checks, root, path)? {
            Stop::Walk(w) => Ok(w),
            // With no filesystem to ask, a stale dentry is a miss for `resolve` to revalidate.
            Stop::Blocked(b @ Blocked::Revalidate { parent, at, .. }) => {
                self.events.bump(Event::Fallback(b.reason()));
                Ok(Walk::Miss { parent, at })
            }
            Stop::Blocked(Blocked::Access { .. }) | Stop::Denied { .. } => {
                unreachable!("no credential, no access check")
            }
        }
    }

    /// The steps validated by the rename sequence, or done again under the rename lock. A
    /// walk that stops for the blocking path is validated too: [`Dcache::walk`] answers it as
    /// a miss, which must describe one instant, and the blocking path would otherwise ask the
    /// filesystem of a name in a directory that a rename or an invalidation had taken off the
    /// path before the walk's next step.
    pub(crate) fn walk_validated<'g>(
        &'g self,
        guard: &'g Guard,
        checks: &mut Checks<'_>,
        root: u64,
        path: &[u8],
    ) -> Result<Stop<'g>, Error> {
        if let Some(seq) = self.rename.read_begin() {
            let walked = self.walk_steps(guard, checks, (root, path));
            if self.rename.read_valid(seq) {
                return walked;
            }
        }
        let _rename = self.rename_fallback();
        self.walk_steps(guard, checks, (root, path))
    }

    /// The fallback: rename sections excluded for the whole walk (counted).
    #[cold]
    fn rename_fallback(&self) -> crate::sync::MutexGuard<'_, ()> {
        self.events.bump(Event::WalkFallback);
        self.rename.lock()
    }

    /// The steps from `root` along `path`, each one lockless lookup; the caller validates them
    /// as a whole.
    fn walk_steps<'g>(
        &'g self,
        guard: &'g Guard,
        checks: &mut Checks<'_>,
        (root, path): (u64, &[u8]),
    ) -> Result<Stop<'g>, Error> {
        let root = self.inode(guard, root).ok_or(Error::UnknownInode(root))?;
        // Each step's number and type come from the dentry that led to it (see `dentry.rs`): a
        // step loads the inode itself only to check access, or for `..` and stale dentries.
        let mut cur = Named::of(root);
        let mut steps = components(path).map(|(at, name)| (at, name, self.names.name_hash(name)));
        let mut next = steps.next();
        // Where the last component ends: a trailing `/` starts there.
        let mut end = 0;
        while let Some((at, name, hash)) = next {
            end = at + name.len();
            // Hash the next name now: it does not depend on this step's answer (the parent it
            // will be looked up in), so it overlaps this step's wait on memory instead of
            // following it (see `udcache_neghash::hashing`).
            next = steps.next();
            match cur.kind {
                FileType::Directory => {}
                FileType::Symlink => {
                    return Ok(Stop::Walk(Walk::Symlink { inode: cur.inode, rest: at }));
                }
                _ => return Ok(Stop::Walk(Walk::NotDir { inode: cur.inode, at })),
            }
            if let Some(stop) = checks.search(cur.inode, at) {
                return Ok(stop);
            }
            let dir = cur.inode;
            let found = match name {
                b"." => Found::Hit(cur),
                // A parent the cache no longer holds (forgotten while this directory stayed)
                // is not a miss: no lookup of a name can bring it back.
                b".." => Lookup::Hit(
                    self.inode(guard, dir.parent()).ok_or(Error::UnknownInode(dir.parent()))?,
                )
                .into(),
                _ => match self.checked(
                    guard,
                    cur.ino,
                    (name, hash),
                    || dir.dir_gen(),
                    || checks.now(),
                ) {
                    Ok(found) => found,
                    Err(stale) => match checks.revalidate(self, dir, name, at, stale) {
                        Ok(found) => found.into(),
                        Err(blocked) => return Ok(Stop::Blocked(blocked)),
                    },
                },
            };
            cur = match found {
                Found::Hit(next) => next,
                Found::Negative => return Ok(Stop::Walk(Walk::Negative { at })),
                Found::Miss => return Ok(Stop::Walk(Walk::Miss { parent: cur.ino, at })),
            };
        }
        let trailing_slash = end < path.len();
        Ok(Stop::Walk(match cur.kind {
            FileType::Symlink if trailing_slash => Walk::Symlink { inode: cur.inode, rest: end },
            FileType::Regular | FileType::Other if trailing_slash => {
                Walk::NotDir { inode: cur.inode, at: path.len() }
            }
            _ => Walk::Found(cur),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidName;

    #[test]
    fn components_skip_empty_ones_and_keep_offsets() {
        let got: Vec<(usize, &[u8])> = components(b"//a/bc//./d/").collect();
        assert_eq!(got, [(2, &b"a"[..]), (4, b"bc"), (8, b"."), (10, b"d")]);
        assert_eq!(components(b"").count(), 0);
        assert_eq!(components(b"///").count(), 0);
        assert_eq!(components(b"x").collect::<Vec<_>>(), [(0, &b"x"[..])]);
    }

    #[test]
    fn find_byte_finds_the_first_at_every_offset_and_length() {
        for byte in [b'/', 0] {
            for len in 0..70 {
                for at in 0..=len {
                    // Bytes near the needle's value, and a second needle after the first.
                    let mut s: Vec<u8> =
                        (0..len).map(|i| [0x2e, 0x30, 0xaf, 0x01][i % 4]).collect();
                    if at < len {
                        s[at] = byte;
                        s[len - 1] = byte;
                    }
                    assert_eq!(find_byte(byte, &s), (at < len).then_some(at), "{byte} {s:?}");
                }
            }
        }
    }

    #[test]
    fn short_and_long_paths_are_checked_alike() {
        let long = |c: usize| [b"a/".as_slice(), &vec![b'x'; c], b"/b"].concat();
        assert_eq!(validate_path(b"a/../b/./c"), Ok(()));
        assert_eq!(validate_path(&long(NAME_MAX)), Ok(()));
        let too_long = validate_path(&long(NAME_MAX + 1));
        assert_eq!(too_long, Err(Error::InvalidName(InvalidName::TooLong(NAME_MAX + 1))));
        for path in [&b"a/b\0c"[..], &[&long(NAME_MAX)[..], b"\0"].concat()] {
            assert_eq!(validate_path(path), Err(Error::InvalidName(InvalidName::Nul)));
        }
    }
}
