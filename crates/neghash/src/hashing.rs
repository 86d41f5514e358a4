//! How a table hashes `(parent, name)`: keyed SipHash-1-3, or a keyed folded multiply for keys
//! an adversary cannot choose.
//!
//! - [`KeyHash::SipHash13`] (the default): std's SipHash-1-3 under the table's random keys, a
//!   keyed pseudo-random function. Names come from users (a flood of 000's kind is a user
//!   creating names), so without the keys nobody can compute offline a set of names that
//!   share a bucket. About 20 ns for a short name.
//! - [`KeyHash::FoldedMultiply`]: 64×64→128-bit multiplies folded to 64 bits, one per 8 bytes
//!   of input, under two random per-table words. A few nanoseconds, and it spreads sequential
//!   and strided integers well, but it is not a pseudo-random function: someone who sees
//!   enough bucket choices could work towards collisions. For keys the table's owner assigns —
//!   udcache's inode table is keyed by inode number, which the filesystem chooses — where it
//!   saves a SipHash on every lookup by number.
//!
//! Either way the input is the parent's 8 bytes and then the name, without a length prefix:
//! the parent has a fixed width and the name is the rest, so two keys never give the same
//! input, and both hashes mix in the length.

use std::hash::{BuildHasher, Hasher};

use crate::sync::Seeded;

/// The hash function of a table (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyHash {
    /// Keyed SipHash-1-3: for keys anyone may choose (names). The default.
    #[default]
    SipHash13,
    /// Keyed folded multiply: several times faster, for keys the table's owner assigns.
    FoldedMultiply,
}

/// A table's hash function with its random keys.
pub(crate) struct KeyHasher {
    kind: KeyHash,
    sip: Seeded,
    /// The folded multiply's keys; the second is odd, so no step multiplies by zero.
    fold: [u64; 2],
}

impl KeyHasher {
    pub(crate) fn new(kind: KeyHash) -> Self {
        let sip = Seeded::default();
        let fold = [sip.hash_one(0x5eed_u64), sip.hash_one(0xf01d_u64) | 1];
        KeyHasher { kind, sip, fold }
    }

    /// The 64-bit hash of `(parent, name)`.
    #[inline]
    pub(crate) fn hash(&self, parent: u64, name: &[u8]) -> u64 {
        match self.kind {
            KeyHash::SipHash13 => {
                let mut h = self.sip.build_hasher();
                h.write_u64(parent);
                h.write(name);
                h.finish()
            }
            KeyHash::FoldedMultiply => folded(self.fold, parent, name),
        }
    }
}

/// The product of `a` and `b` as 128 bits, its halves xor-ed.
fn fold(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

/// The folded-multiply hash: the parent, each 8 bytes of the name (the last zero-padded), and
/// the length, each mixed into the state by one multiply under the keys.
fn folded([k0, k1]: [u64; 2], parent: u64, name: &[u8]) -> u64 {
    let mut h = fold(parent ^ k0, k1);
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

    #[test]
    fn sequential_and_strided_numbers_spread_over_the_buckets() {
        let h = KeyHasher::new(KeyHash::FoldedMultiply);
        // 65,536 numbers into 4,096 buckets by the high half, as the table picks them: 16 per
        // bucket on average; a fair spread keeps the fullest bucket far below 64.
        for stride in [1u64, 2, 4096, 1 << 32] {
            let mut load = vec![0u32; 4096];
            for i in 0..65_536u64 {
                let ino = (i * stride).to_le_bytes();
                load[((h.hash(0, &ino) >> 32) & 4095) as usize] += 1;
            }
            let max = *load.iter().max().unwrap();
            assert!(max < 64, "stride {stride}: a bucket got {max}");
        }
    }
}
