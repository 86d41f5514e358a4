//! # udcache-readdir — a readdir cache indexed by cookie
//!
//! **Status: skeleton.** This crate is laid out by the workspace foundation; the cache itself
//! lands with its own issue. What it will hold:
//!
//! - a directory listing cached as pages of `{name, ino, type, cookie}` entries, where a cookie is
//!   the opaque 64-bit position after an entry (FUSE `off`, NFS cookie);
//! - an exact index from cookie to cached position, so a reader resumes anywhere in O(1) instead
//!   of searching from cookie 0 (O(n²) per listing);
//! - pages stamped with the directory verifier they were filled under, dropped lazily when the
//!   directory changes, while a reader mid-listing continues from its own last cookie;
//! - completeness: a directory cached from cookie 0 to EOF under one verifier answers name
//!   misses without negative entries;
//! - a global page budget with LRU eviction.
