//! What the revalidation tests share: a FUSE server's way of resolving a path.

use udcache::{Checked, Cred, Dcache, Filesystem, ROOT_INO, Resolved, Unblocked, Walk, epoch};

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

/// Resolves `path` from the root the way a FUSE server would: lockless walks, the blocking
/// path ([`Dcache::unblock`]) for what they leave, [`Dcache::resolve`] for misses, whose
/// answer decides the missed component as [`Walk::Miss`] says (a negative one ends the path,
/// a positive one goes on from its inode with the rest of the path). Returns the end and how
/// many walks it took (at most `walks`).
pub fn resolve_path(
    cache: &Dcache,
    fs: &dyn Filesystem,
    cred: Option<&Cred>,
    path: &str,
    walks: usize,
) -> (End, usize) {
    let mut after = Unblocked::default();
    // Where the walks start: the root and the whole path, then the inode each resolved miss
    // named and what follows that component.
    let (mut root, mut rest) = (ROOT_INO, path);
    for attempt in 1..=walks {
        let guard = epoch::pin();
        let next = match cache.walk_as_after(&guard, fs, cred, root, rest, &after).unwrap() {
            Checked::Done(Walk::Found(i)) => return (End::Found(i.ino()), attempt),
            Checked::Done(Walk::Negative { .. }) => return (End::Negative, attempt),
            Checked::Denied { dir, .. } => return (End::Denied(dir), attempt),
            Checked::Done(Walk::Miss { parent, at }) => Err((parent, at)),
            Checked::Blocked(b) => Ok(b),
            Checked::Done(other) => panic!("{path}: {other:?}"),
        };
        drop(guard);
        match next {
            Ok(b) => after.merge(cache.unblock(fs, cred, &b).unwrap()),
            Err((parent, at)) => {
                let name = rest[at..].split('/').next().unwrap();
                match cache.resolve(fs, parent, name.as_bytes()).unwrap() {
                    Resolved::Negative => return (End::Negative, attempt),
                    Resolved::Found(spec) => (root, rest) = (spec.ino, &rest[at + name.len()..]),
                }
            }
        }
    }
    (End::GaveUp, walks)
}
