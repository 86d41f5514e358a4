//! The caller-supplied source of directory entries.

use std::sync::Arc;

use crate::{Entry, Verifier};

/// The result of one backend call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// The entries after the requested cookie, in listing order; at most `max` of them is the
    /// norm, more are accepted. Each entry's cookie must be non-zero and differ from the
    /// requested cookie and from the others in the same fill (else [`Error::Loop`]).
    ///
    /// [`Error::Loop`]: crate::Error::Loop
    pub entries: Vec<Entry>,
    /// True when the last entry is the last of the directory. A fill with no entries must set
    /// it (an empty, non-final fill makes no progress and is reported as a loop).
    pub eof: bool,
    /// The directory's verifier at the moment the entries were read.
    pub verifier: Verifier,
}

/// Why a backend call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillError {
    /// The backend cannot resume at this cookie (it never issued it, or has forgotten it).
    /// The cache reports it as [`Error::BadCookie`](crate::Error::BadCookie).
    UnknownCookie,
    /// Any other failure, as an errno value; reported as
    /// [`Error::Backend`](crate::Error::Backend).
    Io(i32),
}

/// Reads a directory from the filesystem: the one thing the cache cannot do itself.
///
/// The cache calls it without holding any lock, only for ranges it does not hold, and at most
/// once at a time per (directory, cookie): concurrent readers needing the same range wait for
/// the one call in flight.
///
/// ```
/// use udcache_readdir::{Backend, DType, Entry, Fill, FillError, Verifier};
///
/// /// Three fixed entries with cookies 1, 2, 3.
/// struct Three;
/// impl Backend for Three {
///     fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
///         if cookie > 3 {
///             return Err(FillError::UnknownCookie);
///         }
///         let entries: Vec<Entry> = (cookie + 1..=3)
///             .take(max)
///             .map(|c| Entry::new(format!("f{c}"), 100 + c, DType::REG, c))
///             .collect();
///         let eof = entries.last().is_none_or(|e| e.cookie == 3);
///         Ok(Fill { entries, eof, verifier: Verifier::new(1) })
///     }
/// }
/// assert_eq!(Three.fill(1, 10).unwrap().entries.len(), 2);
/// ```
pub trait Backend: Send + Sync {
    /// Returns up to `max` entries after `cookie` (`0`: from the start).
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError>;
}

impl<T: Backend + ?Sized> Backend for Arc<T> {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        (**self).fill(cookie, max)
    }
}
