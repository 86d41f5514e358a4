//! Errors: `udcache::Error` to negative errno values, and the panic boundary.
//!
//! Every exported function runs its body through [`ffi_call`]: the body returns
//! `Ok(non-negative value)` or `Err(positive errno)`, and `ffi_call` turns that into the C
//! return value. A panic (a bug in this library) is caught there and returned as
//! [`PANICKED`] (`-ENOTRECOVERABLE`); it never unwinds into C, and the process goes on (a FUSE
//! server keeps serving). The cache's mutexes recover from poisoning, so later calls do not
//! deadlock or panic in turn, but an operation that panicked half-way may have left its names
//! inconsistent: the header tells the program to destroy the cache after `-ENOTRECOVERABLE`.
//! No other path returns that errno (a callback's own is reported as a broken contract, `EIO`:
//! see [`crate::callbacks::callback_errno`]), so it always means a panic. Running out of
//! memory aborts (Rust's rule).

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use dcache::Error;

use crate::handle::InCall;

/// What an entry point's body returns: a non-negative result or a positive errno.
pub(crate) type CResult = Result<c_int, c_int>;

/// The positive errno of a cache error (`Error::errno`), for `map_err(fail)?`.
pub(crate) fn fail(e: Error) -> c_int {
    e.errno()
}

/// The positive errno of an error of a call that asked the filesystem: the callback answering
/// a type other than the cached inode's broke its contract (`EIO`); others as [`fail`]. Among
/// them `Error::DirectoryAlias` (`EMLINK`): the lookup callback answered with the root, or
/// with a directory whose cached name kept moving while the cache moved it to the answered
/// name (a directory renamed behind the cache is moved, see `Dcache::resolve`). That is no
/// broken contract, so it is passed on as itself, as the docs of `udc_resolve` and
/// `udc_walk_as` say.
pub(crate) fn fail_fs(e: Error) -> c_int {
    match e {
        Error::KindMismatch { .. } => libc::EIO,
        e => fail(e),
    }
}

/// The errno of a panic caught at the boundary: the cache may be inconsistent, destroy it.
/// Reserved: no callback's error is passed on as it.
pub(crate) const PANICKED: c_int = libc::ENOTRECOVERABLE;

/// Runs an entry point's body: `Ok(v)` returns `v`, `Err(errno)` returns `-errno`, a panic
/// returns `-ENOTRECOVERABLE` ([`PANICKED`]).
pub(crate) fn ffi_call(body: impl FnOnce() -> CResult) -> c_int {
    let _call = InCall::enter();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(errno)) => -errno.max(1),
        Err(_) => -PANICKED,
    }
}

/// Runs the body of an entry point that returns nothing: a panic is swallowed.
pub(crate) fn ffi_void(body: impl FnOnce()) {
    let _call = InCall::enter();
    let _ = catch_unwind(AssertUnwindSafe(body));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_negative_and_panics_are_enotrecoverable() {
        assert_eq!(ffi_call(|| Ok(3)), 3);
        assert_eq!(ffi_call(|| Err(libc::ENOENT)), -libc::ENOENT);
        assert_eq!(ffi_call(|| panic!("bug")), -libc::ENOTRECOVERABLE);
        assert_eq!(fail(Error::UnknownInode(9)), libc::ESTALE);
    }
}
