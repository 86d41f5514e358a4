//! The handle table: a fixed array of slots that turns an owned object into an opaque token
//! and back, so that a stale, repeated or forged token is refused rather than followed.
//!
//! # Rules
//!
//! - **Tokens.** A token is a `usize`: the slot index shifted left by one, the slot's
//!   generation above it, and the low bit set (odd, so never NULL and never the address of a
//!   real, aligned object). Generations start at [`FIRST_GEN`], so no small odd number is a
//!   live token. The table never dereferences what a slot points at: it only hands the
//!   pointer back.
//! - **States of a slot**, in order: `(null, g)` → claim: `(BUSY, g)` → `(object, g)` →
//!   release: `(object, LOCKED)` → `(BUSY, LOCKED)` → `(BUSY, g + 1)` → `(null, g + 1)` → ...
//!   A release takes the object out *before* it stores the next generation, and empties the
//!   slot only after; a claim reads the generation while the slot is BUSY, before it stores
//!   the object. So no state pairs an object with a generation other than its own: a check
//!   cannot accept a token of the next generation (not handed out yet: forged, or read
//!   through an unordered channel) for the object being released, nor can a release of such
//!   a token take an object whose claim has not read its generation yet.
//! - **Claim** ([`HandleTable::claim`]): a compare-and-swap of a slot's pointer from null to
//!   BUSY (Acquire: pairs with the Release store that emptied the slot, so the generation
//!   read next, Relaxed, is the one that release stored), then the object stored with
//!   Release (publishes its contents to every check that loads it).
//! - **Check** ([`HandleTable::live`]): loads only, so the per-call path writes nothing
//!   shared. The generation first, with Acquire (pairs with a release's Release store of the
//!   next generation: a check that sees it sees the released object taken out, BUSY or
//!   later); then the pointer, with Acquire (pairs with the claim's Release store: the
//!   object's contents are visible, and so is the generation that claim read); then the
//!   generation again (Relaxed, after that Acquire): a pointer of a later claim comes with a
//!   later generation. Both loads must equal the token's generation and the pointer be an
//!   object, not null or a marker.
//! - **Release** ([`HandleTable::release`]): the check, then a compare-and-swap of the
//!   generation from the token's to [`LOCKED`], which no token carries: generations never
//!   repeat, so of any number of releases of one token, stale ones included, exactly one
//!   wins, and none can win once the slot moved on (Relaxed: the winner owns the object, whose
//!   contents the check's Acquire load of the pointer made visible). The winner then stores
//!   BUSY (Relaxed: published by the next store), the next generation (Release: see the
//!   check) and null (Release: see the claim). A slot whose generation would no longer fit in
//!   a token is *retired* instead of emptied: a marker that no claim replaces and no check
//!   accepts.
//! - What a table cannot catch is a use of a token not ordered after its release (a use
//!   while another thread destroys the handle): the check may pass, then the object is freed
//!   under the user. The caller's contract rules that out.
//!
//! Models: `ffi/tests/loom_handles.rs` (this file included under loom, whose atomics
//! [`crate::sync`] then names) explores claim, check and release racing; `handle.rs` tests the
//! C entry points built on it, from many threads.

use std::ffi::c_int;
use std::ptr::{self, NonNull};

use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The generation of a slot never used: tokens never carry 0.
pub(crate) const FIRST_GEN: usize = 1;

/// The generation of a slot while its release runs: above every generation a token can carry
/// (and above a retired slot's), so no check accepts it and no other release matches it.
const LOCKED: usize = usize::MAX;

/// One slot: the object (null while free, or a marker) and its generation.
struct Slot<T> {
    object: AtomicPtr<T>,
    /// The generation in the token of the slot's current object; bumped at every release.
    generation: AtomicUsize,
}

/// `SLOTS` slots (a power of two) of objects of type `T`, named by tokens.
pub(crate) struct HandleTable<T, const SLOTS: usize> {
    slots: [Slot<T>; SLOTS],
}

impl<T> Slot<T> {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Slot { object: AtomicPtr::new(ptr::null_mut()), generation: AtomicUsize::new(FIRST_GEN) }
    }

    // loom's atomics are made at run time, inside a model.
    #[cfg(loom)]
    fn new() -> Self {
        Slot { object: AtomicPtr::new(ptr::null_mut()), generation: AtomicUsize::new(FIRST_GEN) }
    }
}

/// The pointer of a slot being claimed or released: odd, so never an object's address (see
/// [`HandleTable::new`]'s check of `T`'s alignment).
fn busy<T>() -> *mut T {
    ptr::without_provenance_mut(1)
}

/// The pointer of a retired slot: never claimed again (not null) and never accepted (odd).
fn retired<T>() -> *mut T {
    ptr::without_provenance_mut(3)
}

/// Whether a slot's pointer is an object: not null, not a marker.
fn is_object<T>(p: *mut T) -> bool {
    !p.is_null() && p.addr() & 1 == 0
}

impl<T, const SLOTS: usize> HandleTable<T, SLOTS> {
    /// Bits of a token that hold the slot index (above the low bit, which is always 1).
    const INDEX_BITS: u32 = {
        assert!(SLOTS.is_power_of_two(), "SLOTS must be a power of two");
        // The markers are odd addresses; an object's is even.
        assert!(align_of::<T>() >= 2, "T must be aligned to 2 bytes at least");
        SLOTS.trailing_zeros()
    };
    /// The largest generation a token can carry (on 64-bit targets with 1024 slots, 53 bits).
    pub(crate) const GEN_MAX: usize = usize::MAX >> (1 + Self::INDEX_BITS);

    /// An empty table.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        HandleTable { slots: [const { Slot::new() }; SLOTS] }
    }

    /// An empty table.
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        HandleTable { slots: std::array::from_fn(|_| Slot::new()) }
    }

    /// The token of slot `index` at `generation`.
    pub(crate) fn token(index: usize, generation: usize) -> usize {
        debug_assert!(index < SLOTS && (FIRST_GEN..=Self::GEN_MAX).contains(&generation));
        (generation << (1 + Self::INDEX_BITS)) | (index << 1) | 1
    }

    /// The slot index a token names (masked, so always below `SLOTS`) and the generation it
    /// carries; `EBADF` for an even value, which is no token, `EINVAL` for 0 (NULL).
    pub(crate) fn decode(token: usize) -> Result<(usize, usize), c_int> {
        match token {
            0 => Err(libc::EINVAL),
            t if t & 1 == 0 => Err(libc::EBADF),
            t => Ok(((t >> 1) & (SLOTS - 1), t >> (1 + Self::INDEX_BITS))),
        }
    }

    /// Puts `object` in a free slot and returns its token, or `None` if every slot is taken.
    pub(crate) fn claim(&self, object: NonNull<T>) -> Option<usize> {
        self.slots.iter().enumerate().find_map(|(index, slot)| {
            // Acquire: pairs with the Release store that emptied the slot (see the module
            // rules). Relaxed on failure: the slot is taken; nothing was read.
            let claimed = slot.object.compare_exchange(
                ptr::null_mut(),
                busy(),
                Ordering::Acquire,
                Ordering::Relaxed,
            );
            claimed.ok()?;
            // A release of a guessed token that ran here would take the object if it were in
            // the slot already; loom does not run another thread between a compare-and-swap
            // and a load of another location by itself, so the models need this point.
            crate::sync::scheduling_point();
            // Relaxed: ordered by the Acquire above; while the slot is BUSY no release can
            // change it (every check refuses BUSY).
            let generation = slot.generation.load(Ordering::Relaxed);
            // Release: publishes the object's contents, and the generation just read, to the
            // checks' Acquire loads of the pointer.
            slot.object.store(object.as_ptr(), Ordering::Release);
            Some(Self::token(index, generation))
        })
    }

    /// The object of a live token, else `EBADF` (`EINVAL` for 0). Loads only.
    pub(crate) fn live(&self, token: usize) -> Result<NonNull<T>, c_int> {
        self.checked(token).map(|(_, _, object)| object)
    }

    /// The slot, generation and object of a live token.
    fn checked(&self, token: usize) -> Result<(&Slot<T>, usize, NonNull<T>), c_int> {
        let (index, generation) = Self::decode(token)?;
        let slot = &self.slots[index];
        // Acquire: pairs with the bump's Release store in `release` (see the module rules).
        if slot.generation.load(Ordering::Acquire) != generation {
            return Err(libc::EBADF);
        }
        // Acquire: pairs with the claim's Release: the object's contents are visible, and so
        // is the generation its claim saw (the load below cannot be older).
        let object = slot.object.load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire load above; compared only.
        let again = slot.generation.load(Ordering::Relaxed);
        match NonNull::new(object) {
            Some(object) if again == generation && is_object(object.as_ptr()) => {
                Ok((slot, generation, object))
            }
            _ => Err(libc::EBADF),
        }
    }

    /// Ends a live token: its slot is emptied (or retired) and the object returned, to exactly
    /// one of any number of concurrent releases of the token; `None` to the others, and for
    /// anything that is not a live token. The token, and every earlier one of its slot, is
    /// refused from then on, whatever later claims put in the slot.
    pub(crate) fn release(&self, token: usize) -> Option<NonNull<T>> {
        let (slot, generation, object) = self.checked(token).ok()?;
        // Relaxed: the winner is decided by the generation's modification order alone, and
        // it already sees the object's contents (the check's Acquire load of the pointer).
        let locked = slot.generation.compare_exchange(
            generation,
            LOCKED,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        locked.ok()?;
        // Relaxed: published by the Release store of the generation below.
        slot.object.store(busy(), Ordering::Relaxed);
        // Release: pairs with the check's first (Acquire) load; the object was taken out
        // before it.
        slot.generation.store(generation + 1, Ordering::Release);
        let empty = if generation < Self::GEN_MAX { ptr::null_mut() } else { retired() };
        // Release: pairs with the Acquire of the next claim, which then reads the bump.
        slot.object.store(empty, Ordering::Release);
        Some(object)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    type Table = HandleTable<u64, 4>;

    #[test]
    fn tokens_are_odd_and_decode_to_their_slot_and_generation() {
        for (index, generation) in [(0, FIRST_GEN), (3, FIRST_GEN), (2, Table::GEN_MAX)] {
            let t = Table::token(index, generation);
            assert_eq!(t & 1, 1);
            assert_eq!(Table::decode(t), Ok((index, generation)));
        }
        assert_eq!(Table::decode(0), Err(libc::EINVAL));
        assert_eq!(Table::decode(8), Err(libc::EBADF));
    }

    #[test]
    fn a_full_table_claims_nothing_until_a_release() {
        let table = Table::new();
        let mut objects = [1u64, 2, 3, 4, 5];
        let [a, b, c, d, e] = objects.each_mut().map(NonNull::from);
        let tokens: Vec<usize> = [a, b, c, d].map(|o| table.claim(o).unwrap()).into();
        assert_eq!(table.claim(e), None);
        assert_eq!(table.release(tokens[1]), Some(b));
        let again = table.claim(e).unwrap();
        assert_eq!(Table::decode(again).unwrap().0, Table::decode(tokens[1]).unwrap().0);
        assert_eq!(table.live(tokens[1]), Err(libc::EBADF));
        assert_eq!(table.live(again), Ok(e));
        assert_eq!(table.release(tokens[1]), None);
    }

    #[test]
    fn a_slot_whose_generation_runs_out_is_retired() {
        let table = Table::new();
        let mut objects = [1u64, 2, 3, 4];
        let [a, b, c, d] = objects.each_mut().map(NonNull::from);
        let first = table.claim(a).unwrap();
        let (index, _) = Table::decode(first).unwrap();
        let slot = &table.slots[index];
        // Relaxed: one thread.
        slot.generation.store(Table::GEN_MAX, Ordering::Relaxed);
        assert_eq!(table.live(first), Err(libc::EBADF));
        let last = Table::token(index, Table::GEN_MAX);
        assert_eq!(table.live(last), Ok(a));
        assert_eq!(table.release(last), Some(a));
        assert_eq!(table.live(last), Err(libc::EBADF));
        // Relaxed: one thread.
        assert_eq!(slot.object.load(Ordering::Relaxed), retired());
        assert_eq!(slot.generation.load(Ordering::Relaxed), Table::GEN_MAX + 1);
        // The other three slots still take objects; the retired one never again.
        for o in [b, c, d] {
            assert_ne!(Table::decode(table.claim(o).unwrap()).unwrap().0, index);
        }
        assert_eq!(table.claim(a), None);
    }
}
