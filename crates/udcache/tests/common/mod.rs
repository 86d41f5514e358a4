//! What the revalidation tests share: a FUSE server's way of resolving a path.

use udcache::{Checked, Cred, Dcache, Filesystem, ROOT_INO, Unblocked, Walk, epoch};

/// How a path resolution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The path names this inode.
    Found(u64),
    /// The last component does not exist.
    Negative,
    /// The credential may not search this directory.
    Denied(u64),
    /// No answer within the walks allowed (the cache kept changing under it).
    GaveUp,
}

/// Resolves `path` from the root the way a FUSE server would: lockless walks, the blocking
/// path ([`Dcache::unblock`]) for what they leave, [`Dcache::resolve`] for misses. Returns the
/// end and how many walks it took (at most `walks`).
pub fn resolve_path(
    cache: &Dcache,
    fs: &dyn Filesystem,
    cred: Option<&Cred>,
    path: &str,
    walks: usize,
) -> (End, usize) {
    let mut after = Unblocked::default();
    for attempt in 1..=walks {
        let guard = epoch::pin();
        let next = match cache.walk_as_after(&guard, fs, cred, ROOT_INO, path, &after).unwrap() {
            Checked::Done(Walk::Found(i)) => return (End::Found(i.ino()), attempt),
            Checked::Done(Walk::Negative { .. }) => return (End::Negative, attempt),
            Checked::Denied { dir, .. } => return (End::Denied(dir), attempt),
            Checked::Done(Walk::Miss { parent, at }) => {
                Err((parent, path[at..].split('/').next().unwrap().to_owned()))
            }
            Checked::Blocked(b) => Ok(b),
            Checked::Done(other) => panic!("{path}: {other:?}"),
        };
        drop(guard);
        match next {
            Ok(b) => after.merge(cache.unblock(fs, cred, &b).unwrap()),
            Err((parent, name)) => drop(cache.resolve(fs, parent, name.as_bytes()).unwrap()),
        }
    }
    (End::GaveUp, walks)
}
