//! The atomics the handle table ([`crate::table`]) is written against: std's in this library.
//! `tests/loom_handles.rs` includes `table.rs` in a crate whose `sync` names loom's instead,
//! so the loom model explores the same code.

pub(crate) use std::sync::atomic;

/// Where the loom models must be able to run another thread, and loom's explorer does not
/// switch on its own (see the call): nothing here; `loom::thread::yield_now` in the models.
#[inline(always)]
pub(crate) fn scheduling_point() {}
