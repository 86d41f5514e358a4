//! A filesystem lent to a cache for the length of a call, for tests whose filesystem borrows
//! their locals (answers, hooks, the cache itself) or changes from one call to the next: the
//! cache owns a [`Lent`], which forwards each call to the filesystem the calling thread lent
//! with [`lend`]. The cache calls its filesystem only on the thread that called it (a miss's
//! caller; its waiters take the caller's answer), so a thread-local suffices.

use std::cell::Cell;
use std::sync::Arc;

use udcache::readdir::{Fill, FillError};
use udcache::{Cached, Config, Cred, Dcache, Errno, Filesystem, InodeSpec, Mask, Revalidate};

type Raw = *const (dyn Filesystem + 'static);

thread_local! {
    static LENT: Cell<Option<Raw>> = const { Cell::new(None) };
}

/// A cache of `config` whose filesystem is the one lent by the calling thread.
pub fn cache(config: Config) -> Dcache {
    Dcache::new(config.with_filesystem(Arc::new(Lent)))
}

/// Runs `f` with `fs` lent to every cache made by [`cache`], on this thread.
pub fn lend<R>(fs: &dyn Filesystem, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Raw>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LENT.set(self.0);
        }
    }
    let raw: *const (dyn Filesystem + '_) = fs;
    // SAFETY: only the pointer's lifetime bound changes (same layout); it is read only by
    // `lent` while `f` runs on this thread, within the borrow of `fs`, and `Restore` takes it
    // back before `lend` returns, even on a panic.
    let raw: Raw = unsafe { std::mem::transmute(raw) };
    let _restore = Restore(LENT.replace(Some(raw)));
    f()
}

/// The cache's filesystem: the one lent on the calling thread.
pub struct Lent;

fn lent() -> &'static dyn Filesystem {
    let raw = LENT.get().expect("a cache asked its filesystem outside `lend`");
    // SAFETY: set by `lend` on this thread, whose borrow of the filesystem lasts until it
    // returns; the reference is used only inside the call that asked (see the module docs).
    unsafe { &*raw }
}

impl Filesystem for Lent {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        lent().lookup(parent, name)
    }

    fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        lent().readdir(dir, cookie, max)
    }

    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        lent().revalidate(parent, name, cached, may_block)
    }

    fn access(&self, ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        lent().access(ino, cred)
    }
}
