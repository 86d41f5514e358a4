//! Cached attributes: a `struct stat`-shaped snapshot with an expiry, read without locks.

use dcache::Attr;
use std::ffi::c_int;

use crate::args;
use crate::errors::{CResult, fail, ffi_call};
use crate::handle::{self, udc_cache};

/// The attributes of an inode, shaped like `struct stat`. Times are seconds and nanoseconds
/// since the epoch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct udc_attr {
    /// The inode number (set by `udc_getattr`; ignored by `udc_setattr`).
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
    /// Hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number, for device files.
    pub rdev: u32,
    /// Preferred I/O block size.
    pub blksize: u32,
    /// Last access, seconds.
    pub atime_sec: i64,
    /// Last modification, seconds.
    pub mtime_sec: i64,
    /// Last status change, seconds.
    pub ctime_sec: i64,
    /// Last access, nanoseconds.
    pub atime_nsec: u32,
    /// Last modification, nanoseconds.
    pub mtime_nsec: u32,
    /// Last status change, nanoseconds.
    pub ctime_nsec: u32,
}

impl udc_attr {
    fn of(ino: u64, a: &Attr) -> Self {
        udc_attr {
            ino,
            size: a.size,
            blocks: a.blocks,
            mode: a.mode,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            rdev: a.rdev,
            blksize: a.blksize,
            atime_sec: a.atime.0,
            mtime_sec: a.mtime.0,
            ctime_sec: a.ctime.0,
            atime_nsec: a.atime.1,
            mtime_nsec: a.mtime.1,
            ctime_nsec: a.ctime.1,
        }
    }

    fn attr(&self) -> Attr {
        Attr {
            size: self.size,
            blocks: self.blocks,
            atime: (self.atime_sec, self.atime_nsec),
            mtime: (self.mtime_sec, self.mtime_nsec),
            ctime: (self.ctime_sec, self.ctime_nsec),
            mode: self.mode,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: self.rdev,
            blksize: self.blksize,
        }
    }
}

/// Copies the cached attributes of `ino` into `*out`: one consistent snapshot, read without
/// locks while another thread may be setting them.
///
/// Returns 0, or `-ENODATA` (never set, or expired), `-ESTALE` (`ino` not cached), `-EINVAL`
/// (NULL `out`), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `out`
/// must be NULL or point to a writable `udc_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_getattr(cache: *mut udc_cache, ino: u64, out: *mut udc_attr) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: NULL or a writable udc_attr (the caller's contract).
        let out = unsafe { args::output(out) }?;
        let attr = cache.dcache.getattr(ino).map_err(fail)?.ok_or(libc::ENODATA)?;
        out.write(udc_attr::of(ino, &attr));
        Ok(0)
    })
}

/// Caches `*attr` for `ino`, valid for `valid_ns` nanoseconds from now on the cache's
/// monotonic clock (0: expired at once, which drops what was cached; `UINT64_MAX`: forever).
/// A change of mode, owner or group forgets the inode's cached access results (see
/// `udc_access`).
///
/// Returns 0, or `-ESTALE`, `-EINVAL` (NULL `attr`), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `attr`
/// must be NULL or point to a `udc_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_setattr(
    cache: *mut udc_cache,
    ino: u64,
    attr: *const udc_attr,
    valid_ns: u64,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: NULL or a udc_attr (the caller's contract).
        let attr = unsafe { args::input(attr) }?.attr();
        cache.dcache.setattr(ino, &attr, args::ttl(valid_ns)).map_err(fail)?;
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_round_trips_through_the_c_struct() {
        let a = Attr {
            size: 1,
            blocks: 2,
            atime: (-3, 4),
            mtime: (5, 6),
            ctime: (7, 8),
            mode: 0o100644,
            nlink: 9,
            uid: 10,
            gid: 11,
            rdev: 12,
            blksize: 13,
        };
        let c = udc_attr::of(42, &a);
        assert_eq!((c.ino, c.attr()), (42, a));
    }
}
