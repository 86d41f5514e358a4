//! # udcache-rculist — intrusive lists that readers walk without locks
//!
//! **Status: skeleton.** Filled by its own issue: `List`/`Link` (doubly linked) and
//! `HList`/`HLink` (one-word hash-chain heads, optionally with a bit lock), intrusive through
//! adapters, with readers bound to a crossbeam-epoch guard and writers holding a lock token.
