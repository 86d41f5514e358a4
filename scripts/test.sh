#!/usr/bin/env bash
# The README's test command: every test that runs without loom or a fuzzer.
#   - Rust unit, integration and doc tests of the whole workspace (stress tests included,
#     bounded in time), in release;
#   - udcache-gp's pool tests once more in the debug profile, for the misuse checks that exist
#     only with debug assertions (double free, free into the wrong pool): under a second once
#     built, about 20 s more from a clean checkout on two cores;
#   - udcache-readdir's unit and integration tests in the debug profile too, for its
#     debug_assert!s on the cached listing (a page's slot, its verifier, the inflight fills):
#     about 10 s of tests and 20 s of building on two cores;
#   - the C tests under c-tests/, once they exist (built with the system C compiler);
#   - the udcfs mount tests (c-tests/fuse/mount-test.sh: mounts a FUSE filesystem; skips with a
#     message where /dev/fuse cannot be used, fails there if UDCFS_REQUIRE_MOUNT=1).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release
cargo test -p udcache-gp --test pool
cargo test -p udcache-readdir --lib --tests

if [ -f c-tests/Makefile ]; then
    make -C c-tests test
fi

c-tests/fuse/mount-test.sh
