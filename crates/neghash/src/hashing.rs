//! How a table hashes `(parent, name)`: the name by keyed SipHash-1-3 (or, for keys an
//! adversary cannot choose, keyed folded multiplies), then the parent mixed in by two keyed
//! multiplies.
//!
//! - **Two steps.** The name's hash ([`NameHash`]) does not depend on the parent; the parent
//!   joins it afterwards: a keyed 64×64→128-bit multiply of the parent, folded to 64 bits,
//!   xor-ed into the name's hash, and one more such multiply of the two. A path walk knows
//!   a component's name long before it knows its parent (the previous component's lookup), so
//!   it hashes the next name while the current lookup waits on memory
//!   ([`NegHash::name_hash`](crate::NegHash::name_hash) and
//!   [`lookup_hashed`](crate::NegHash::lookup_hashed)): what remains on the walk's chain of
//!   dependent steps is two multiplies, not a whole SipHash.
//! - [`KeyHash::SipHash13`] (the default): SipHash-1-3 of the name — std's hasher for
//!   `HashMap`, computed here a word at a time (module `siphash`) — under the table's random
//!   keys, a keyed pseudo-random function. Names come from users (a flood of negative entries
//!   is a user creating or looking up names), so without the keys nobody can compute offline a set of
//!   names that share a bucket in a directory: for one parent the mix is a fixed function of
//!   an unpredictable hash. Across directories, one name's hashes differ by the parents'
//!   keyed multiplies, which an attacker cannot evaluate without the keys either.
//! - [`KeyHash::FoldedMultiply`]: the name too goes through keyed folded multiplies, one per
//!   8 bytes. A few nanoseconds, and it spreads sequential and strided integers well, but it
//!   is not a pseudo-random function: someone who sees enough bucket choices could work
//!   towards collisions. For keys the table's owner assigns — udcache's inode table is keyed
//!   by inode number, which the filesystem chooses — where it saves a SipHash on every lookup
//!   by number.
//!
//! Both hashes mix in the name's length, and the parent has a fixed width, so two different
//! keys never feed the same input.

use std::hash::BuildHasher;

use crate::siphash::siphash;
use crate::sync::KeySource;

/// The hash function of a table (see the [module docs](self)).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyHash {
    /// Keyed SipHash-1-3 of the name, the parent mixed in by keyed multiplies: for keys
    /// anyone may choose (names). The default.
    #[default]
    SipHash13,
    /// Keyed folded multiplies for the name too: several times faster, for keys the table's
    /// owner assigns.
    FoldedMultiply,
}

/// The hash of a name under one table's keys, before the parent is mixed in (see the
/// [module docs](self)): made by [`NegHash::name_hash`](crate::NegHash::name_hash), used by
/// [`NegHash::lookup_hashed`](crate::NegHash::lookup_hashed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameHash(u64);

/// A table's hash function with its random keys.
pub(crate) struct KeyHasher {
    kind: KeyHash,
    /// SipHash's 128-bit key.
    sip: [u64; 2],
    /// The folded multiplies' keys; the second is odd, so no step multiplies by zero.
    fold: [u64; 2],
}

impl KeyHasher {
    pub(crate) fn new(kind: KeyHash) -> Self {
        // Every key is std's keyed SipHash of a constant under `RandomState`'s random key
        // (the process's own random source): unpredictable without that key.
        let source = KeySource::default();
        let sip = [source.hash_one(0x51b0_u64), source.hash_one(0x51b1_u64)];
        let fold = [source.hash_one(0x5eed_u64), source.hash_one(0xf01d_u64) | 1];
        KeyHasher { kind, sip, fold }
    }

    /// The hash of `name` alone.
    #[inline]
    pub(crate) fn name(&self, name: &[u8]) -> NameHash {
        NameHash(match self.kind {
            KeyHash::SipHash13 => siphash::<1, 3>(self.sip, name),
            KeyHash::FoldedMultiply => folded(self.fold, name),
        })
    }

    /// The 64-bit hash of `(parent, name)` given the name's hash: two keyed multiplies.
    #[inline]
    pub(crate) fn with_parent(&self, name: NameHash, parent: u64) -> u64 {
        let [k0, k1] = self.fold;
        fold(name.0 ^ fold(parent ^ k0, k1), k1)
    }

    /// The 64-bit hash of `(parent, name)` in one call.
    #[cfg(test)]
    fn hash(&self, parent: u64, name: &[u8]) -> u64 {
        self.with_parent(self.name(name), parent)
    }
}

/// The product of `a` and `b` as 128 bits, its halves xor-ed.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

/// The folded-multiply hash of a name: each 8 bytes (the last zero-padded) and the length,
/// each mixed into the state by one multiply under the keys.
fn folded([k0, k1]: [u64; 2], name: &[u8]) -> u64 {
    let mut h = k0;
    let mut words = name.chunks_exact(8);
    for w in &mut words {
        h = fold(h ^ u64::from_le_bytes(w.try_into().expect("8 bytes")), k1);
    }
    let rest = words.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    h = fold(h ^ u64::from_le_bytes(last), k1);
    fold(h ^ name.len() as u64 ^ k0, k1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_hashes_tell_close_keys_apart() {
        for kind in [KeyHash::SipHash13, KeyHash::FoldedMultiply] {
            let h = KeyHasher::new(kind);
            let keys: [(u64, &[u8]); 7] = [
                (0, b""),
                (0, b"\0"),
                (0, b"\0\0\0\0\0\0\0\0"),
                (1, b""),
                (0, b"a"),
                (0, b"b"),
                (1, b"a"),
            ];
            let mut seen: Vec<u64> = keys.iter().map(|&(p, n)| h.hash(p, n)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), keys.len(), "{kind:?}");
            assert_eq!(h.hash(7, b"name"), h.hash(7, b"name"), "{kind:?} is a function");
        }
    }

    /// Asserts that `hash(i * stride)` for 65,536 values of `i` spreads over 4,096 buckets
    /// (picked by the high half, as the table does) for sequential and strided inputs: 16
    /// per bucket on average; a fair spread keeps the fullest far below 64.
    fn assert_spread(what: &str, hash: impl Fn(u64) -> u64) {
        for stride in [1u64, 2, 4096, 1 << 32] {
            let mut load = vec![0u32; 4096];
            for i in 0..65_536u64 {
                load[((hash(i * stride) >> 32) & 4095) as usize] += 1;
            }
            let max = *load.iter().max().unwrap();
            assert!(max < 64, "{what}, stride {stride}: a bucket got {max}");
        }
    }

    #[test]
    fn sequential_and_strided_numbers_spread_over_the_buckets() {
        let h = KeyHasher::new(KeyHash::FoldedMultiply);
        assert_spread("numbers as names", |n| h.hash(0, &n.to_le_bytes()));
    }

    #[test]
    fn one_name_in_many_directories_spreads_over_the_buckets() {
        // The parent is mixed in after the name's hash: the same name under sequential or
        // strided directory numbers must still land all over the table.
        for kind in [KeyHash::SipHash13, KeyHash::FoldedMultiply] {
            let h = KeyHasher::new(kind);
            let name = h.name(b"Makefile");
            assert_spread(&format!("{kind:?}"), |parent| h.with_parent(name, parent));
        }
    }

    #[test]
    fn a_hash_made_ahead_is_the_hash_made_at_once() {
        for kind in [KeyHash::SipHash13, KeyHash::FoldedMultiply] {
            let h = KeyHasher::new(kind);
            let ahead = h.name(b"component");
            assert_eq!(h.with_parent(ahead, 42), h.hash(42, b"component"), "{kind:?}");
            assert_ne!(h.with_parent(ahead, 42), h.with_parent(ahead, 43), "{kind:?}");
        }
    }
}
