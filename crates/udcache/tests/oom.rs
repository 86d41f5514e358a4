//! A cache whose tables do not fit in the memory the process may use: `Dcache::try_new` says
//! so, and changes nothing. Alone in this test binary (its own process), because it lowers the
//! process's address-space limit.
#![cfg(not(loom))]

use udcache::{Config, Dcache, Error, ROOT_INO, epoch};

#[test]
fn tables_that_do_not_fit_are_out_of_memory_and_a_cache_that_fits_still_works() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a live, writable rlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) }, 0);
    // 4 GiB of address space: room for this test, not for 2^28 entries' 8 GiB of tables.
    limit.rlim_cur = limit.rlim_max.min(4 << 30);
    // SAFETY: `limit` is a live rlimit; lowering the soft limit needs no privilege.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);

    assert!(matches!(Dcache::try_new(Config::for_entries(1 << 28)), Err(Error::OutOfMemory)));
    assert_eq!(Error::OutOfMemory.errno(), libc::ENOMEM);
    let cache = Dcache::try_new(Config::for_entries(1 << 16)).unwrap();
    cache.add_negative(ROOT_INO, b"fits").unwrap();
    assert!(matches!(
        cache.lookup(&epoch::pin(), ROOT_INO, b"fits"),
        Ok(udcache::Lookup::Negative)
    ));
}
