//! The one reader step shared by every lock-free iterator: load the next pointer with Acquire.

use crate::Adapter;
use crate::sync::Ordering;

/// A link with a forward pointer that readers follow.
pub(crate) trait Forward: Sized {
    /// The following link, loaded with Acquire: pairs with the writers' Release stores of
    /// `next` (publish and unlink), so the node it points to is seen initialised.
    fn next_acquire(&self) -> *const Self;
}

/// Yields the node at `*cursor` and advances `*cursor` to its successor.
///
/// # Safety
///
/// `*cursor` is null or a link of an `A` node that was loaded from a list under a guard of the
/// default collector that lives for `'g`: that node's release is deferred past the guard.
#[inline(always)]
pub(crate) unsafe fn step<'g, A: Adapter>(cursor: &mut *const A::Link) -> Option<&'g A::Value>
where
    A::Link: Forward,
{
    let cur = *cursor;
    if cur.is_null() {
        return None;
    }
    // SAFETY: by the contract, `cur` points into a node kept alive for `'g`.
    *cursor = unsafe { &*cur }.next_acquire();
    // SAFETY: as above; list links are made by `A::link_ptr`.
    Some(unsafe { &*A::value_ptr(cur) })
}

impl Forward for crate::Link {
    #[inline(always)]
    fn next_acquire(&self) -> *const Self {
        self.next.load(Ordering::Acquire)
    }
}

impl Forward for crate::HLink {
    #[inline(always)]
    fn next_acquire(&self) -> *const Self {
        self.next_pointer()
    }
}
