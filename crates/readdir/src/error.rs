//! Errors, and the errno each maps to for a C ABI.

use std::fmt;

use crate::FillError;

/// Why a read failed. Nothing in the cache changes when a read fails.
///
/// Each variant maps to one errno value ([`Error::errno`]), so a C ABI can return `-errno`:
///
/// | variant | errno |
/// |---|---|
/// | [`Error::Loop`] | `ELOOP` |
/// | [`Error::BadCookie`] | `EINVAL` (what `getdents` returns for a bad offset; the kernel-internal NFS `EBADCOOKIE`, 523, is not a userspace errno) |
/// | [`Error::InvalidArgument`] | `EINVAL` |
/// | [`Error::Backend`] | the backend's own errno (`EIO` if it gave none) |
///
/// ```
/// use udcache_readdir::Error;
/// assert_eq!(Error::Loop { cookie: 5 }.errno(), libc::ELOOP);
/// assert_eq!(Error::BadCookie { cookie: 9 }.errno(), libc::EINVAL);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The backend returned a cookie already returned earlier in the same pass, or the cookie
    /// 0, or an empty fill that is not at the end, or fills whose cached pages lead round in a
    /// cycle: following it would never finish.
    Loop {
        /// The cookie that repeated (or at which the listing could not progress).
        cookie: u64,
    },
    /// The cookie is not in the cache and the backend cannot resume at it.
    BadCookie {
        /// The cookie that was asked for.
        cookie: u64,
    },
    /// A bad argument (such as `max == 0`, or a zero-sized budget).
    InvalidArgument(&'static str),
    /// The backend failed with this errno.
    Backend(i32),
}

impl Error {
    /// The errno value for a C ABI (positive).
    pub fn errno(&self) -> i32 {
        match *self {
            Error::Loop { .. } => libc::ELOOP,
            Error::BadCookie { .. } | Error::InvalidArgument(_) => libc::EINVAL,
            Error::Backend(e) if e > 0 => e,
            Error::Backend(_) => libc::EIO,
        }
    }

    pub(crate) fn from_fill(e: FillError, cookie: u64) -> Self {
        match e {
            FillError::UnknownCookie => Error::BadCookie { cookie },
            FillError::Io(errno) => Error::Backend(errno),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Loop { cookie } => {
                write!(f, "directory listing loops: cookie {cookie:#x} came back in one pass")
            }
            Error::BadCookie { cookie } => {
                write!(f, "unknown directory cookie {cookie:#x}: not cached, backend cannot resume")
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Backend(e) => write!(f, "directory backend failed with errno {e}"),
        }
    }
}

impl std::error::Error for Error {}
