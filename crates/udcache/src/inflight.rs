//! The filesystem calls in flight, one per name, and how their waiters get the answer (the
//! protocol of a miss is in `fetch.rs`).
//!
//! # Rules
//!
//! - A waiter first spins on the call's `answered` flag, for at most `SPIN` (20 µs) from when
//!   it began to wait: a call that answers from memory or with one quick system call ends
//!   sooner than a sleep and a wake-up would (tens of microseconds), so sleeping would cost
//!   the waiter more than the call it saves. A call still running after that is a slow one
//!   (a network round trip), and its waiters sleep: they count themselves in the call (under
//!   its mutex) and sleep on its condition variable; the caller wakes them only if there are
//!   any (a wake is a system call). Spinning or sleeping, a waiter never calls the
//!   filesystem itself: one call per name however long it takes.
//! - A call costs its caller one allocation (the name is kept inline, at most `NAME_MAX`
//!   bytes) and no clock read: only waiters read the clock.

use std::sync::Arc;
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

use crate::error::{Errno, Error};
use crate::fs::Resolved;
use crate::name::NAME_MAX;
use crate::sync::{AtomicBool, Condvar, Mutex, Ordering, lock, spin};

/// What one call settled: an answer, or `None` when a revalidation alone dropped the dentry.
pub(crate) type Settle = Result<Option<Resolved>, Error>;

/// How long a waiter spins before it sleeps: about what a sleep and a wake-up cost, so a
/// waiter of a call that ends sooner never sleeps, and one of a slower call spins for no more
/// than it then spends sleeping anyway.
#[cfg(not(loom))]
const SPIN: Duration = Duration::from_micros(20);

/// One filesystem call in flight for the name `(parent, name)`.
pub(crate) struct Call {
    parent: u64,
    /// The name's length, and its bytes at the front of `name`.
    len: usize,
    name: [u8; NAME_MAX],
    /// Set once `state` holds the answer; what spinning waiters watch.
    answered: AtomicBool,
    state: Mutex<CallState>,
    done: Condvar,
}

/// A call's answer, once there is one, and how many threads wait for it.
struct CallState {
    answer: Option<Settle>,
    waiters: usize,
}

impl Call {
    /// A call for `(parent, name)`, a validated name (at most [`NAME_MAX`] bytes).
    pub(crate) fn new(parent: u64, name: &[u8]) -> Self {
        let mut inline = [0; NAME_MAX];
        inline[..name.len()].copy_from_slice(name);
        Call {
            parent,
            len: name.len(),
            name: inline,
            answered: AtomicBool::new(false),
            state: Mutex::new(CallState { answer: None, waiters: 0 }),
            done: Condvar::new(),
        }
    }

    pub(crate) fn is_for(&self, parent: u64, name: &[u8]) -> bool {
        self.parent == parent && self.name[..self.len] == *name
    }

    /// Whether a waiter that began to wait at `since` and has spun `spins` times spins on.
    /// The clock is read every 8 spins: a spin is one pause instruction (a few to about a
    /// hundred cycles, by CPU), a read some tens of nanoseconds, so the spin overshoots `SPIN`
    /// by a few microseconds at most.
    #[cfg(not(loom))]
    fn spin_on(spins: u32, since: Instant) -> bool {
        !spins.is_multiple_of(8) || since.elapsed() < SPIN
    }

    /// Under loom, one spin: the model explores a waiter that finds the answer while it spins
    /// and one that goes on to sleep.
    #[cfg(loom)]
    fn spin_on(spins: u32, _since: Instant) -> bool {
        spins < 1
    }

    /// The caller's answer, waited for as the rules say by a waiter that began to wait at
    /// `since`: spinning at first, then asleep. Also whether this waiter slept.
    pub(crate) fn answer(&self, since: Instant) -> (Settle, bool) {
        let mut spins = 0;
        // Acquire: pairs with the Release store in `Ending::drop`, made after the answer was
        // set; the answer itself is read under the mutex below, so this only ends the spin.
        while !self.answered.load(Ordering::Acquire) && Self::spin_on(spins, since) {
            spin();
            spins += 1;
        }
        let mut state = lock(&self.state);
        let slept = state.answer.is_none();
        if slept {
            // Counted under the lock the caller sets the answer under: it sees this count and
            // wakes this waiter, or this waiter sees the answer and does not sleep.
            state.waiters += 1;
            while state.answer.is_none() {
                state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        (state.answer.clone().expect("woken with an answer"), slept)
    }
}

/// The calls in flight. On lines of its own: every miss writes its lock, and the cache's
/// other fields beside it are read by every walk.
#[repr(align(128))]
pub(crate) struct Inflight {
    pub(crate) calls: Mutex<Vec<Arc<Call>>>,
}

impl Inflight {
    pub(crate) fn new() -> Self {
        Inflight { calls: Mutex::new(Vec::new()) }
    }
}

/// Ends a call when its caller is done with it, answered or not: takes it off the list and
/// wakes its waiters with the answer. A filesystem that panics unwinds through it, so the
/// waiters get `EIO` (and the next miss calls again) instead of sleeping for ever.
pub(crate) struct Ending<'a> {
    pub(crate) inflight: &'a Inflight,
    pub(crate) call: &'a Call,
    /// The caller's answer; `None` while the filesystem runs.
    pub(crate) answer: Option<Settle>,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        // Off the list first: a waiter whose answer sends it to look again (`Ok(None)`) must
        // not find this call still listed and wait on it again.
        {
            let mut calls = lock(&self.inflight.calls);
            let at = calls.iter().position(|c| std::ptr::eq(&**c, self.call));
            calls.swap_remove(at.expect("a call stays listed until its caller ends it"));
        }
        let answer = self.answer.take().unwrap_or(Err(Error::Backend(Errno::EIO)));
        let waiters = {
            let mut state = lock(&self.call.state);
            state.answer = Some(answer);
            // Release: pairs with the Acquire load of spinning waiters (`Call::answer`); set
            // after the answer, so a waiter that sees it finds the answer under the lock.
            self.call.answered.store(true, Ordering::Release);
            state.waiters
        };
        // A waiter counts itself before it sleeps, under the same lock: none is missed.
        if waiters > 0 {
            self.call.done.notify_all();
        }
    }
}
