//! # udcache — a userspace directory-entry cache
//!
//! **Status: skeleton.** This crate is laid out by the workspace foundation and composes the
//! mechanism crates once they land:
//!
//! - `udcache-gp`: grace-period cookies and a pool that never hands a freed dentry or inode to
//!   a new owner while a lockless walker may still see it;
//! - `udcache-rculist`: the hash chains, child lists and LRU that dentries sit on;
//! - `udcache-neghash`: the name table with bounded negative entries;
//! - `udcache-readdir`: per-directory listings indexed by cookie.
//!
//! It will offer the vocabulary of a filesystem — `lookup`, a lockless path walk validated by
//! sequence counts with a locked fallback, `add`, `unlink`, `rename`, `forget`, `readdir`,
//! `getattr`/`setattr` — to Rust callers, and through `udcache-ffi` to C.
