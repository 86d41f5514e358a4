#!/usr/bin/env bash
# The README's test command: every test that runs without loom or a fuzzer.
#   - Rust unit, integration and doc tests of the whole workspace (stress tests included,
#     bounded in time);
#   - the C tests under c-tests/, once they exist (built with the system C compiler).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release

if [ -f c-tests/Makefile ]; then
    make -C c-tests test
fi
