//! The filesystem behind the cache and what passes between them: the [`Filesystem`] trait,
//! the inodes it names ([`InodeSpec`]), and its answers to a miss ([`Resolved`]) and to a
//! revalidation ([`Revalidate`] of what is [`Cached`]).

use std::time::Duration;

use udcache_readdir::{Fill, FillError};

use crate::access::{Cred, Mask};
use crate::error::Errno;

/// The type of file an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A directory: has children, at most one name, and a parent (`..`).
    Directory,
    /// A regular file.
    Regular,
    /// A symbolic link: a path walk stops on it and reports it (see [`Walk`](crate::Walk)).
    Symlink,
    /// Anything else (device, FIFO, socket).
    Other,
}

/// What a filesystem says about a file: its number, its type, and a word of its own (an index,
/// a handle, a pointer cast to `u64`) that the cache keeps but never interprets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InodeSpec {
    /// The inode number (FUSE's node id). Unique among cached inodes.
    pub ino: u64,
    /// The file type.
    pub kind: FileType,
    /// The filesystem's own data.
    pub fs_data: u64,
}

/// The filesystem behind the cache: asked on a miss, for a stale name, for access rights and
/// for directory listings. A cache holds one for its life
/// ([`Config::with_filesystem`](crate::Config::with_filesystem)).
pub trait Filesystem: Send + Sync {
    /// Looks `name` up in directory `parent`: `Ok(Some(inode))` if it exists, `Ok(None)` if it
    /// does not (the cache remembers that as a negative dentry), `Err(errno)` on failure
    /// (not cached).
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno>;

    /// Lists directory `dir`: up to `max` entries after `cookie` (`0`: from the start), as
    /// [`udcache_readdir::Backend::fill`] describes. Called by
    /// [`Dcache::readdir`](crate::Dcache::readdir) with no cache lock held. The default
    /// refuses with `ENOSYS`.
    fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let _ = (dir, cookie, max);
        Err(FillError::Io(libc::ENOSYS))
    }

    /// Whether the cached answer for `name` in `parent` still holds (its timeout passed, or
    /// its directory changed: `cached` says which). With `may_block` false the cache is in
    /// the middle of a lockless walk: answer only from what is at hand, without locks that
    /// may wait or I/O, and say [`Revalidate::NeedsBlock`] otherwise; the cache asks again
    /// with `may_block` true. See `walk/checks.rs` and `reval.rs`.
    ///
    /// The default, [`defaults::revalidate`], blocks for everything: it says `NeedsBlock`,
    /// then asks [`lookup`](Self::lookup) and compares inode numbers.
    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        defaults::revalidate(self, parent, name, cached, may_block)
    }

    /// The rights `cred` has on `ino` (all three asked at once; the cache keeps the answer).
    /// Called with no cache lock held. The default, [`defaults::access`], grants everything
    /// (a filesystem without permissions of its own).
    fn access(&self, ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        defaults::access(ino, cred)
    }
}

/// The default behaviours of [`Filesystem`]'s provided methods, callable by an implementation
/// that overrides a method but wants the default in some cases (an adapter whose callback is
/// optional, say).
pub mod defaults {
    use super::{Cached, Cred, Errno, Filesystem, Mask, Revalidate};

    /// [`Filesystem::revalidate`]'s default: `NeedsBlock` when it may not block; else a fresh
    /// `fs.lookup` of the name, `Valid` (for the configured timeout) if it names the same
    /// inode number as `cached` (or is negative again), `Invalid` otherwise or on an error.
    pub fn revalidate<F: Filesystem + ?Sized>(
        fs: &F,
        parent: u64,
        name: &[u8],
        cached: Cached,
        may_block: bool,
    ) -> Revalidate {
        if !may_block {
            return Revalidate::NeedsBlock;
        }
        match fs.lookup(parent, name) {
            Ok(now) if now.map(|s| s.ino) == cached.inode.map(|s| s.ino) => {
                Revalidate::Valid { ttl: None }
            }
            _ => Revalidate::Invalid,
        }
    }

    /// [`Filesystem::access`]'s default: every right, for everyone.
    pub fn access(ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        let _ = (ino, cred);
        Ok(Mask::ALL)
    }
}

/// What [`Dcache::resolve`](crate::Dcache::resolve) answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The name exists: this inode (one lookup of it has been counted).
    Found(InodeSpec),
    /// The name does not exist.
    Negative,
}

/// What the cache holds for a name it asks [`Filesystem::revalidate`] about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cached {
    /// The inode the name leads to, or `None` for a negative dentry.
    pub inode: Option<InodeSpec>,
    /// Its timeout has passed.
    pub expired: bool,
    /// Its directory changed (a new verifier) since it was filled.
    pub dir_changed: bool,
}

/// A filesystem's answer to [`Filesystem::revalidate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revalidate {
    /// The cached answer still holds: trust it for `ttl` more (`None`: the configured
    /// [`Timeouts`](crate::Timeouts) for its kind).
    Valid {
        /// How long, from now.
        ttl: Option<Duration>,
    },
    /// It no longer holds: the cache drops the dentry. [`Dcache::resolve`](crate::Dcache::resolve) then looks the name
    /// up again; a walk ends there as a [`Walk::Miss`](crate::Walk::Miss).
    Invalid,
    /// The filesystem cannot tell without blocking (only when asked with `may_block = false`;
    /// answered with `may_block = true` it is taken as `Invalid`).
    NeedsBlock,
}
