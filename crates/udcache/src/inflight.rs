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
//! - The list of calls is locked twice by every miss (to look for a call, and to end one),
//!   for tens of nanoseconds each time, and threads that miss the same names do so at the same
//!   moments. A thread that finds it locked spins, trying it, for up to `SPIN` before it
//!   blocks, as an adaptive mutex does: the unlock wakes a blocked thread, and a scheduler may
//!   place a woken thread on its waker's CPU (a KVM guest's does when the host has taken the
//!   woken one's idle vCPU away), where the two then share one CPU in whole scheduler ticks,
//!   milliseconds, until a load balance separates them.
//! - An ended call stays with the list, off it, among at most `KEPT` ended calls; once no one
//!   else holds it, the next miss's call is made anew in its memory, writing only what a new
//!   call sets (of the inline name, the new name's bytes). So a call's memory is freed by the
//!   list (when it drops an ended call for room, or at the end), never by the waiter that
//!   drops it last: a free on another thread than the allocation's takes the allocator's lock
//!   (glibc's arena lock), the lock that the caller of the next miss's call takes to allocate,
//!   at the same moments when threads miss the same names.

use std::sync::Arc;
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

use crate::error::{Errno, Error};
use crate::fs::Resolved;
use crate::name::NAME_MAX;
use crate::sync::{AtomicBool, Condvar, Mutex, MutexGuard, Ordering, lock, spin};

/// What one call settled: an answer, or `None` when a revalidation alone dropped the dentry.
pub(crate) type Settle = Result<Option<Resolved>, Error>;

/// How long a waiter spins before it sleeps: about what a sleep and a wake-up cost, so a
/// waiter of a call that ends sooner never sleeps, and one of a slower call spins for no more
/// than it then spends sleeping anyway.
#[cfg(not(loom))]
const SPIN: Duration = Duration::from_micros(20);

/// Ended calls kept for reuse (see the rules): one per thread that may call at once, and a
/// few for waiters that have not dropped theirs yet.
const KEPT: usize = 8;

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

    /// Makes this ended call, which no one else holds, the call for `(parent, name)`: writes
    /// what a new call sets and, of the inline buffer, only the name's bytes (each line it
    /// writes is one a waiter of an earlier call may still have, and must give up).
    fn renew(&mut self, parent: u64, name: &[u8]) {
        self.parent = parent;
        self.len = name.len();
        self.name[..name.len()].copy_from_slice(name);
        self.answered = AtomicBool::new(false);
        self.state = Mutex::new(CallState { answer: None, waiters: 0 });
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

/// The calls in flight, and ended ones kept for reuse (see the rules).
pub(crate) struct Calls {
    listed: Vec<Arc<Call>>,
    /// Oldest first; at most `KEPT`.
    ended: Vec<Arc<Call>>,
}

impl Calls {
    /// The call listed for `(parent, name)`, if there is one.
    pub(crate) fn find(&self, parent: u64, name: &[u8]) -> Option<&Arc<Call>> {
        self.listed.iter().find(|c| c.is_for(parent, name))
    }

    /// Lists a new call for `(parent, name)`: made anew in an ended call that no one else
    /// holds, else allocated.
    pub(crate) fn start(&mut self, parent: u64, name: &[u8]) -> Arc<Call> {
        // `get_mut` succeeds only on the last reference, and its Acquire check pairs with the
        // Release decrements of the others' drops: their reads of the call are done.
        let call = match self.ended.iter_mut().position(|c| Arc::get_mut(c).is_some()) {
            Some(at) => {
                let mut call = self.ended.remove(at);
                let only = Arc::get_mut(&mut call).expect("no other reference: found so above");
                only.renew(parent, name);
                call
            }
            None => Arc::new(Call::new(parent, name)),
        };
        self.listed.push(call.clone());
        call
    }

    /// Takes `call` off the list and keeps it among the ended calls.
    fn end(&mut self, call: &Call) {
        let at = self.listed.iter().position(|c| std::ptr::eq(&**c, call));
        let ended =
            self.listed.swap_remove(at.expect("a call stays listed until its caller ends it"));
        if self.ended.len() == KEPT {
            self.ended.remove(0);
        }
        self.ended.push(ended);
    }
}

/// The calls in flight. On lines of its own: every miss writes its lock, and the cache's
/// other fields beside it are read by every walk.
#[repr(align(128))]
pub(crate) struct Inflight {
    calls: Mutex<Calls>,
    /// Set while a thread holds `calls`: what a thread that found it locked watches, reading,
    /// until it is worth trying again (see the rules).
    held: AtomicBool,
}

/// The list, locked (see [`Inflight::lock`]).
pub(crate) struct CallsGuard<'a> {
    calls: MutexGuard<'a, Calls>,
    held: &'a AtomicBool,
}

impl std::ops::Deref for CallsGuard<'_> {
    type Target = Calls;
    fn deref(&self) -> &Calls {
        &self.calls
    }
}

impl std::ops::DerefMut for CallsGuard<'_> {
    fn deref_mut(&mut self) -> &mut Calls {
        &mut self.calls
    }
}

impl Drop for CallsGuard<'_> {
    fn drop(&mut self) {
        // Relaxed: a hint of when to try the lock; the mutex, released after this, orders the
        // list itself.
        self.held.store(false, Ordering::Relaxed);
    }
}

impl Inflight {
    pub(crate) fn new() -> Self {
        Inflight {
            calls: Mutex::new(Calls { listed: Vec::new(), ended: Vec::new() }),
            held: AtomicBool::new(false),
        }
    }

    /// The list, locked: a thread that finds it locked watches `held` for up to `SPIN`,
    /// trying again when it clears, before it blocks (see the rules).
    pub(crate) fn lock(&self) -> CallsGuard<'_> {
        let calls = self.acquire();
        // Relaxed: a hint, as in the guard's drop.
        self.held.store(true, Ordering::Relaxed);
        CallsGuard { calls, held: &self.held }
    }

    #[cfg(not(loom))]
    fn acquire(&self) -> MutexGuard<'_, Calls> {
        use std::sync::TryLockError;
        let (mut since, mut spins) = (None, 0);
        loop {
            match self.calls.try_lock() {
                Ok(calls) => return calls,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
            // Reading until the holder is done: a try would take the lock's line from it.
            // Relaxed: a hint (see the guard's drop).
            loop {
                if !Call::spin_on(spins, *since.get_or_insert_with(Instant::now)) {
                    return lock(&self.calls);
                }
                spin();
                spins += 1;
                if !self.held.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
    }

    /// Under loom, the lock alone: the model explores who holds it, not how long one spins.
    #[cfg(loom)]
    fn acquire(&self) -> MutexGuard<'_, Calls> {
        lock(&self.calls)
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
        self.inflight.lock().end(self.call);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_new_call_reuses_an_ended_one_that_no_one_holds() {
        let inflight = Inflight::new();
        let first = inflight.lock().start(1, b"a");
        let waiter = first.clone();
        let at = Arc::as_ptr(&first);
        inflight.lock().end(&first);
        drop(first);
        // A waiter still holds it: a new allocation.
        let second = inflight.lock().start(1, b"b");
        assert_ne!(Arc::as_ptr(&second), at);
        inflight.lock().end(&second);
        drop(waiter);
        // Held by the list alone now: made anew in place, for its new name, unanswered.
        let third = inflight.lock().start(2, b"c");
        assert_eq!(Arc::as_ptr(&third), at);
        assert!(third.is_for(2, b"c") && !third.is_for(1, b"a"));
        assert!(!third.answered.load(Ordering::Relaxed));
        assert!(inflight.lock().find(2, b"c").is_some_and(|c| Arc::ptr_eq(c, &third)));
    }

    #[test]
    fn a_renewed_call_holds_its_own_name_and_no_earlier_answer() {
        let inflight = Inflight::new();
        let first = inflight.lock().start(1, b"longer");
        // Ended, answered.
        drop(Ending { inflight: &inflight, call: &first, answer: Some(Ok(None)) });
        assert!(first.answered.load(Ordering::Relaxed));
        let at = Arc::as_ptr(&first);
        drop(first);
        // A shorter name in the same memory: the old name's tail is no part of it.
        let second = inflight.lock().start(1, b"long");
        assert_eq!(Arc::as_ptr(&second), at);
        assert!(second.is_for(1, b"long"));
        assert!(!second.is_for(1, b"longer") && !second.is_for(1, b"lon"));
        assert!(!second.answered.load(Ordering::Relaxed));
        let state = lock(&second.state);
        assert!(state.answer.is_none() && state.waiters == 0);
    }

    #[test]
    fn at_most_kept_ended_calls_stay() {
        let inflight = Inflight::new();
        let held: Vec<Arc<Call>> = (0..KEPT as u64 + 3)
            .map(|i| {
                let call = inflight.lock().start(i, b"x");
                inflight.lock().end(&call);
                call
            })
            .collect();
        let calls = inflight.lock();
        assert_eq!((calls.listed.len(), calls.ended.len()), (0, KEPT));
        // The oldest went first: the newest are kept.
        assert!(Arc::ptr_eq(&calls.ended[KEPT - 1], &held[held.len() - 1]));
    }
}
