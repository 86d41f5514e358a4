#!/usr/bin/env bash
# The README's test command: every test that runs without loom or a fuzzer.
#   - Rust unit, integration and doc tests of the whole workspace (stress tests included,
#     bounded in time);
#   - the C tests under c-tests/, once they exist (built with the system C compiler);
#   - the udcfs mount tests (c-tests/fuse/mount-test.sh: mounts a FUSE filesystem; skips with a
#     message where /dev/fuse cannot be used, fails there if UDCFS_REQUIRE_MOUNT=1).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release

if [ -f c-tests/Makefile ]; then
    make -C c-tests test
fi

c-tests/fuse/mount-test.sh
