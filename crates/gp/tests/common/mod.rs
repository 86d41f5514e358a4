//! What the loom models share: a reader that pins and reads a published object.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicPtr, Ordering};
use loom::thread::JoinHandle;
use udcache_gp::pin;

/// Spawns a lockless reader: it pins, loads `published` and, if an object is there, passes
/// it to `read` while still pinned (the window in which the pool must neither re-initialise
/// nor release it).
pub fn spawn_pinned_reader<T: 'static>(
    published: &Arc<AtomicPtr<T>>,
    read: impl FnOnce(*mut T) + Send + 'static,
) -> JoinHandle<()> {
    let published = published.clone();
    loom::thread::spawn(move || {
        let guard = pin();
        // Acquire: pairs with the store that published the object (its initialisation).
        let p = published.load(Ordering::Acquire);
        if !p.is_null() {
            read(p);
        }
        drop(guard);
    })
}
