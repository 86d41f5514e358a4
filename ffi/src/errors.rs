//! Errors: `udcache::Error` to negative errno values, and the panic boundary.
//!
//! Every exported function runs its body through [`ffi_call`]: the body returns
//! `Ok(non-negative value)` or `Err(positive errno)`, and `ffi_call` turns that into the C
//! return value. A panic (a bug in this library) is caught there and returned as `-EIO`; it never
//! unwinds into C. The cache stays usable after one: its writers change shared state only
//! through single atomic steps, and its mutexes recover from poisoning.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use dcache::{Error, InvalidName};

/// What an entry point's body returns: a non-negative result or a positive errno.
pub(crate) type CResult = Result<c_int, c_int>;

/// The positive errno that reports `e`.
pub(crate) fn errno(e: &Error) -> c_int {
    match e {
        Error::InvalidName(InvalidName::TooLong(_)) => libc::ENAMETOOLONG,
        Error::InvalidName(_) => libc::EINVAL,
        Error::UnknownInode(_) => libc::ESTALE,
        Error::NotDirectory(_) => libc::ENOTDIR,
        Error::Exists => libc::EEXIST,
        Error::NotFound => libc::ENOENT,
        // An inode number cached with another type: the filesystem contradicts itself.
        Error::KindMismatch { .. } => libc::EINVAL,
        // A second name for a directory (a directory hard link, as link(2) refuses it).
        Error::DirectoryAlias(_) => libc::EMLINK,
        Error::BadForget { .. } => libc::EINVAL,
        Error::Backend(errno) => *errno,
    }
}

/// `Err(errno)` of a cache error, for `?`.
pub(crate) fn fail(e: Error) -> c_int {
    errno(&e)
}

/// Runs an entry point's body: `Ok(v)` returns `v`, `Err(errno)` returns `-errno`, a panic
/// returns `-EIO`.
pub(crate) fn ffi_call(body: impl FnOnce() -> CResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(errno)) => -errno.max(1),
        Err(_) => -libc::EIO,
    }
}

/// Runs the body of an entry point that returns nothing: a panic is swallowed.
pub(crate) fn ffi_void(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_negative_and_panics_are_eio() {
        assert_eq!(ffi_call(|| Ok(3)), 3);
        assert_eq!(ffi_call(|| Err(libc::ENOENT)), -libc::ENOENT);
        assert_eq!(ffi_call(|| panic!("bug")), -libc::EIO);
        assert_eq!(errno(&Error::InvalidName(InvalidName::TooLong(256))), libc::ENAMETOOLONG);
        assert_eq!(errno(&Error::UnknownInode(9)), libc::ESTALE);
    }
}
