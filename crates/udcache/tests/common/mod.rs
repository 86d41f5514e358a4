//! What the revalidation tests share: a path resolution, and how many walks it took.

use udcache::{Cred, Dcache, Error, OnMiss, PathEnd, ROOT_INO};

/// How a path resolution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The path names this inode.
    Found(u64),
    /// A component does not exist.
    Negative,
    /// The credential may not search this directory.
    Denied(u64),
    /// No answer within the walks allowed (the cache kept changing under it).
    GaveUp,
}

/// Resolves `path` from the root with [`Dcache::resolve_path`], looking misses up. Returns the
/// end and how many walks it took (the first, and the change of
/// [`udcache::Stats::path_rewalks`]: exact while no other thread resolves a path in `cache`).
pub fn resolve_path(cache: &Dcache, cred: Option<&Cred>, path: &str) -> (End, usize) {
    let before = cache.stats().path_rewalks;
    let end = match cache.resolve_path(cred, ROOT_INO, path, OnMiss::Lookup) {
        Ok(PathEnd::Found(spec)) => End::Found(spec.ino),
        Ok(PathEnd::Negative { .. }) => End::Negative,
        Ok(PathEnd::Denied { dir, .. }) => End::Denied(dir),
        Err(Error::Unsettled) => End::GaveUp,
        other => panic!("{path}: {other:?}"),
    };
    (end, 1 + (cache.stats().path_rewalks - before) as usize)
}
