//! # udcache-neghash — a concurrent hash table whose negative entries stay bounded
//!
//! **Status: skeleton.** This crate is laid out by the workspace foundation; the table itself
//! lands with its own issue. What it will hold:
//!
//! - entries keyed by `(parent id, name bytes)` on intrusive hash chains from `udcache-rculist`,
//!   looked up without locks under a `udcache-gp` guard;
//! - *negative* entries (remembered misses) bounded per bucket: Linux's 2020 "increase poison
//!   resistance" rule (at most three unreferenced negatives in a row) plus a hard per-bucket cap
//!   that a flood touching every name twice cannot defeat;
//! - an LRU of unused entries with second chance and a `shrink(n)` memory-pressure hook;
//! - `dentry-state`-like statistics (entries, unused, negative, buckets, evictions by rule).
//!
//! The problem it answers: a process that looks up random names fills memory with negative
//! entries (197 GB of 256 GB in half an hour in one report), and they slow every walk of a
//! directory's children.
