//! # udcache-gp — grace-period cookies and a pool that reuses objects only after them
//!
//! **Status: skeleton.** Filled by its own issue: polled grace-period cookies on top of
//! crossbeam-epoch (`get_state`, `start_poll`, `poll`, `cond_synchronize`) and `GpPool<T>`,
//! which parks freed objects by cookie and reuses only those whose grace period has passed.
