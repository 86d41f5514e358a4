//! One shard of a pool: its parked objects, grouped in batches by grace-period cookie.
//!
//! A shard is only ever touched under its mutex (the `&mut self` of every method here is that
//! lock). Batches are kept oldest first and their cookies never decrease, because a cookie is
//! taken (`get_state`) while the lock is held and cookies only grow: so the front batch is the
//! first to complete, and "the oldest reusable object" is found in O(1).

use std::collections::VecDeque;
use std::ptr::NonNull;

use super::slot::Slot;
use crate::GpCookie;

/// Objects freed under the same cookie, the newest last. A list of pointers rather than a
/// link inside each slot: the link would cost every pooled object a word for its whole life,
/// and this costs one only while the object is parked.
pub(crate) struct Batch<T> {
    pub(crate) cookie: GpCookie,
    slots: Vec<NonNull<Slot<T>>>,
}

// SAFETY: a batch owns its slots exclusively (they are parked: no PoolBox or raw holder refers
// to them), so moving a batch between threads moves `T`s.
unsafe impl<T: Send> Send for Batch<T> {}

impl<T> Batch<T> {
    /// Pops the newest slot; `None` leaves the batch empty for the caller to drop.
    fn pop(&mut self) -> Option<NonNull<Slot<T>>> {
        self.slots.pop()
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    /// Every slot of the batch, emptying it.
    pub(crate) fn drain(self) -> impl Iterator<Item = NonNull<Slot<T>>> {
        self.slots.into_iter()
    }
}

/// A shard's parked batches, its spares and the counters only its lock holder updates.
pub(crate) struct Shard<T> {
    batches: VecDeque<Batch<T>>,
    parked: usize,
    /// Objects of a fresh run not yet handed out (never seen by a reader), the next one last.
    pub(crate) spares: Vec<NonNull<Slot<T>>>,
    /// Frees since this shard last asked for a grace period to start.
    pub(crate) frees_since_request: u32,
    /// Objects handed out again from this shard.
    pub(crate) recycled: u64,
}

impl<T> Shard<T> {
    pub(crate) fn new() -> Self {
        Shard {
            batches: VecDeque::new(),
            parked: 0,
            spares: Vec::new(),
            frees_since_request: 0,
            recycled: 0,
        }
    }

    /// Parks `slot` under `cookie`, which must be no older than the newest batch's.
    pub(crate) fn park(&mut self, slot: NonNull<Slot<T>>, cookie: GpCookie) {
        self.parked += 1;
        if let Some(back) = self.batches.back_mut().filter(|b| b.cookie == cookie) {
            back.slots.push(slot);
            return;
        }
        debug_assert!(self.batches.back().is_none_or(|b| b.cookie < cookie), "cookies went back");
        self.batches.push_back(Batch { cookie, slots: vec![slot] });
    }

    /// The oldest parked object, if `ready` says its batch's cookie allows reuse.
    pub(crate) fn take_oldest_if(
        &mut self,
        ready: impl FnOnce(&GpCookie) -> bool,
    ) -> Option<NonNull<Slot<T>>> {
        let front = self.batches.front_mut()?;
        if !ready(&front.cookie) {
            return None;
        }
        let slot = front.pop().expect("batches are never left empty");
        if front.len() == 0 {
            self.batches.pop_front();
        }
        self.parked -= 1;
        Some(slot)
    }

    /// The most recently parked object and its cookie (a slab's LIFO order).
    pub(crate) fn take_newest(&mut self) -> Option<(NonNull<Slot<T>>, GpCookie)> {
        let back = self.batches.back_mut()?;
        let cookie = back.cookie;
        let slot = back.pop().expect("batches are never left empty");
        if back.len() == 0 {
            self.batches.pop_back();
        }
        self.parked -= 1;
        Some((slot, cookie))
    }

    /// Removes the whole oldest batch if `ready` accepts its cookie.
    pub(crate) fn take_oldest_batch_if(
        &mut self,
        ready: impl FnOnce(&GpCookie) -> bool,
    ) -> Option<Batch<T>> {
        if !ready(&self.batches.front()?.cookie) {
            return None;
        }
        let batch = self.batches.pop_front()?;
        self.parked -= batch.len();
        Some(batch)
    }

    /// Adds a batch taken from another shard where its cookie belongs, so cookies stay in
    /// order (it may be newer than this shard's front: that one may have completed since the
    /// caller looked).
    pub(crate) fn insert_batch(&mut self, batch: Batch<T>) {
        self.parked += batch.len();
        let at = self.batches.partition_point(|b| b.cookie <= batch.cookie);
        self.batches.insert(at, batch);
    }

    /// The cookie of the oldest parked object.
    pub(crate) fn oldest_cookie(&self) -> Option<GpCookie> {
        self.batches.front().map(|b| b.cookie)
    }

    /// The cookie of the newest parked object.
    pub(crate) fn newest_cookie(&self) -> Option<GpCookie> {
        self.batches.back().map(|b| b.cookie)
    }

    /// How many objects are parked here.
    pub(crate) fn parked(&self) -> usize {
        self.parked
    }

    /// Every batch, emptying the shard.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Batch<T>> + '_ {
        self.parked = 0;
        self.batches.drain(..)
    }
}
