//! Loom models of the handle table (`src/table.rs`, included here with loom's atomics): a
//! claim publishes its object with its token, a stale token never reaches the next object of
//! its slot, a claim after a release elsewhere gets a new token, of two releases of one token
//! exactly one gets the object, a stale release leaves alone the next token of an object that
//! came back at the same address, a release of a guessed token ends only the claim that issued
//! it, and two claims never share a slot. Each ordering of `table.rs` weakened by one step (and
//! the second generation load removed) makes one of them fail. Run with
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-ffi --test loom_handles`.
#![cfg(loom)]

use std::ptr::NonNull;

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// What `table.rs` names `crate::sync`: loom's atomics here, and a real scheduling point.
mod sync {
    pub(crate) use loom::sync::atomic;

    pub(crate) fn scheduling_point() {
        loom::thread::yield_now();
    }
}

#[path = "../src/table.rs"]
mod table;

use table::HandleTable;

/// An object whose contents loom checks: reading them without a happens-before edge from
/// their write is reported as a causality violation.
struct Object(UnsafeCell<u64>);

/// A pointer to an [`Object`] that may move to another model thread (ownership moves with it,
/// or it is only compared).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ptr(NonNull<Object>);

// SAFETY: an `Object` is only read through loom's checked cell, and each test says which
// thread owns (frees) it.
unsafe impl Send for Ptr {}

/// A boxed object holding `value`, written after it was made (so the write is a tracked
/// access, not part of the allocation).
fn object(value: u64) -> Ptr {
    let object = Ptr(NonNull::from(Box::leak(Box::new(Object(UnsafeCell::new(0))))));
    write(object, value);
    object
}

/// Sets an unclaimed object's value.
fn write(object: Ptr, value: u64) {
    // SAFETY: made by `object` and not claimed: this thread's alone.
    unsafe { object.0.as_ref() }.0.with_mut(|p| unsafe { *p = value });
}

/// The value of an object.
///
/// # Safety
///
/// `object` is live: no thread frees it during the call.
unsafe fn read(object: Ptr) -> u64 {
    // SAFETY: live (the caller's contract); loom checks the read is ordered after the write.
    unsafe { object.0.as_ref() }.0.with(|p| unsafe { *p })
}

/// Frees an object made by [`object`].
fn free(object: Ptr) {
    // SAFETY: made by `Box::leak` in `object`, and the caller owns it (released or never
    // claimed).
    drop(unsafe { Box::from_raw(object.0.as_ptr()) });
}

type Table<const SLOTS: usize> = HandleTable<Object, SLOTS>;

fn claim<const SLOTS: usize>(table: &Table<SLOTS>, object: Ptr) -> Option<usize> {
    table.claim(object.0)
}

fn live<const SLOTS: usize>(table: &Table<SLOTS>, token: usize) -> Result<Ptr, i32> {
    table.live(token).map(Ptr)
}

fn release<const SLOTS: usize>(table: &Table<SLOTS>, token: usize) -> Option<Ptr> {
    table.release(token).map(Ptr)
}

/// Runs `a` and `b` on two new threads and returns both results. (A race between the model's
/// main thread and one it spawned was, in the first form of these models, explored with the
/// main thread's operations first only: a check that had to fail did not.)
fn race<A: Send + 'static, B: Send + 'static>(
    a: impl FnOnce() -> A + Send + 'static,
    b: impl FnOnce() -> B + Send + 'static,
) -> (A, B) {
    let a = thread::spawn(a);
    let b = thread::spawn(b);
    (a.join().unwrap(), b.join().unwrap())
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// A slot reused: one thread releases the old token and claims the slot for a new object,
/// handing the new token to a second thread through a Relaxed store (no ordering of its
/// own). The old token, checked there meanwhile, is refused or names the old object, never
/// the new one. If the table accepts the new token there, the second thread sees the new
/// object's contents through the table alone (an unordered handover may also be refused: the
/// C contract asks for an ordered one; after the joins the token must be accepted).
#[test]
fn a_reused_slot_publishes_its_new_object_and_refuses_the_old_token() {
    model(|| {
        let table = Arc::new(Table::<1>::new());
        let old = object(1);
        let old_token = claim(&table, old).unwrap();
        let handed = Arc::new(AtomicUsize::new(0));
        let (t1, h1, t2, h2) = (table.clone(), handed.clone(), table.clone(), handed.clone());
        race(
            move || {
                // Made before the old one is freed, so never at its address: a check that
                // answers the new object for the old token is seen as such. Its value is
                // written after the release, so only the claim publishes it.
                let new = object(0);
                free(release(&t1, old_token).unwrap());
                write(new, 2);
                let token = claim(&t1, new).unwrap();
                assert_ne!(token, old_token);
                // Relaxed: the handover orders nothing; the table must.
                h1.store(token, Ordering::Relaxed);
            },
            move || {
                match live(&t2, old_token) {
                    Ok(p) => assert_eq!(p, old), // before the release (compared, not read)
                    Err(e) => assert_eq!(e, libc::EBADF),
                }
                // Relaxed: see the store.
                let token = h2.load(Ordering::Relaxed);
                if token != 0 {
                    match live(&t2, token) {
                        // SAFETY: the main thread releases `token`, after the joins.
                        Ok(new) => assert_eq!(unsafe { read(new) }, 2),
                        Err(e) => assert_eq!(e, libc::EBADF),
                    }
                }
            },
        );
        assert_eq!(live(&table, old_token), Err(libc::EBADF));
        // Relaxed: ordered by the joins.
        let token = handed.load(Ordering::Relaxed);
        free(release(&table, token).unwrap());
    });
}

/// A release and a claim of its slot on two threads: a claim that finds the slot empty
/// reads the generation the release bumped to, so its token is a new one and the released
/// token stays refused.
#[test]
fn a_claim_after_a_release_on_another_thread_gets_a_new_token() {
    model(|| {
        let table = Arc::new(Table::<1>::new());
        let old_token = claim(&table, object(1)).unwrap();
        let new = object(2);
        let (t1, t2) = (table.clone(), table.clone());
        let ((), claimed) =
            race(move || free(release(&t1, old_token).unwrap()), move || claim(&t2, new));
        assert_eq!(live(&table, old_token), Err(libc::EBADF));
        match claimed {
            Some(token) => {
                assert_ne!(token, old_token);
                assert_eq!(live(&table, token), Ok(new));
                free(release(&table, token).unwrap());
            }
            None => free(new), // the slot was not empty yet: EMFILE
        }
    });
}

/// Two releases of one token (a double `udc_cache_destroy`): exactly one gets the object,
/// and the token is refused afterwards.
#[test]
fn of_two_releases_of_one_token_exactly_one_gets_the_object() {
    model(|| {
        let table = Arc::new(Table::<1>::new());
        let token = claim(&table, object(1)).unwrap();
        let (t1, t2) = (table.clone(), table.clone());
        let (a, b) = race(move || release(&t1, token), move || release(&t2, token));
        assert!(a.is_some() != b.is_some(), "{a:?} {b:?}");
        let won = a.or(b).unwrap();
        // SAFETY: released to one thread, joined; no other holds it.
        assert_eq!(unsafe { read(won) }, 1);
        free(won);
        assert_eq!(live(&table, token), Err(libc::EBADF));
        assert_eq!(release(&table, token), None);
    });
}

/// A stale release racing with a release of the same token whose winner claims the object
/// again at once (the same address, under a new token) and uses the new token before the
/// stale one is done: the stale release, whose check may have passed and whose object is at
/// the same address again, takes nothing and disturbs nothing.
#[test]
fn a_stale_release_never_touches_the_next_token_of_the_same_address() {
    model(|| {
        let table = Arc::new(Table::<1>::new());
        let object = object(1);
        let token = claim(&table, object).unwrap();
        let (t1, t2) = (table.clone(), table.clone());
        let (stale, again) = race(
            move || release(&t1, token),
            move || {
                let p = release(&t2, token)?;
                let next = claim(&t2, p).unwrap();
                assert_ne!(next, token);
                assert_eq!(live(&t2, next), Ok(p));
                assert_eq!(release(&t2, next), Some(p));
                assert_eq!(live(&t2, next), Err(libc::EBADF));
                Some(p)
            },
        );
        assert!(stale.is_some() != again.is_some(), "{stale:?} {again:?}");
        assert_eq!(stale.or(again), Some(object));
        assert_eq!(live(&table, token), Err(libc::EBADF));
        free(object);
    });
}

/// A release of a guessed token of the next generation while a claim of the emptied slot
/// runs: it ends the claimed object only if the claim issued exactly that token; never an
/// object whose claim then returns another token.
#[test]
fn a_guessed_release_during_a_claim_ends_only_the_token_it_names() {
    model(|| {
        let table = Arc::new(Table::<1>::new());
        let first = claim(&table, object(1)).unwrap();
        free(release(&table, first).unwrap());
        let (index, generation) = Table::<1>::decode(first).unwrap();
        let guessed = Table::<1>::token(index, generation + 1);
        let new = object(2);
        let (t1, t2) = (table.clone(), table.clone());
        let (claimed, ended) = race(move || claim(&t1, new), move || release(&t2, guessed));
        let claimed = claimed.unwrap();
        match ended {
            Some(p) => {
                assert_eq!((p, claimed), (new, guessed));
                assert_eq!(live(&table, claimed), Err(libc::EBADF));
            }
            None => assert_eq!(release(&table, claimed), Some(new)),
        }
        free(new);
    });
}

/// Concurrent claims: with two slots, both succeed in different slots; with one, exactly
/// one does (`udc_cache_new`'s `EMFILE` for the other).
#[test]
fn concurrent_claims_never_share_a_slot() {
    fn claims<const SLOTS: usize>() -> (Option<usize>, Option<usize>) {
        let table = Arc::new(Table::<SLOTS>::new());
        let (a, b) = (object(1), object(2));
        let (t1, t2) = (table.clone(), table.clone());
        let tokens = race(move || claim(&t1, a), move || claim(&t2, b));
        for (token, object, value) in [(tokens.0, a, 1), (tokens.1, b, 2)] {
            if let Some(token) = token {
                assert_eq!(live(&table, token), Ok(object));
                // SAFETY: claimed, and released by this thread only after the read.
                assert_eq!(unsafe { read(object) }, value);
                assert_eq!(release(&table, token), Some(object));
            }
            free(object);
        }
        tokens
    }
    model(|| {
        let (a, b) = claims::<2>();
        let slot = |t: Option<usize>| Table::<2>::decode(t.unwrap()).unwrap().0;
        assert_ne!(slot(a), slot(b));
        let (a, b) = claims::<1>();
        assert!(a.is_some() != b.is_some(), "{a:?} {b:?}");
    });
}
