//! The atomics the handle table ([`crate::table`]) is written against: std's in this library.
//! `tests/loom_handles.rs` includes `table.rs` in a crate whose `sync` names loom's instead,
//! so the loom model explores the same code.

pub(crate) use std::sync::atomic;
