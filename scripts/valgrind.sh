#!/usr/bin/env bash
# Runs the crate's lib unit tests under valgrind's memcheck (invalid reads/writes, double frees, uses of
# uninitialised bytes, leaks), a second opinion next to scripts/asan.sh that needs no instrumented build.
#
#   scripts/valgrind.sh                  the `inline_task` and `shard::lock` tests: two of the `unsafe` modules
#   scripts/valgrind.sh FILTER [ARGS]    lib tests whose name contains FILTER; ARGS go to the harness
#
# Any error or definite/indirect/possible leak fails the run (exit 1). scripts/valgrind.supp silences
# the one "possibly lost" block that the test harness itself leaves (std's main-thread handle).
# Debug build: nothing optimised away. RUST_BACKTRACE=0 keeps the panicking tests from loading debug info.
#
# `scripts/valgrind.sh ''` runs the whole lib suite.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -eq 0 ]]; then
    set -- inline_task shard::lock
fi

bin="$(cargo test --lib --no-run 2>&1 | sed -n 's/.*Executable unittests src\/lib.rs (\(.*\))$/\1/p' | tail -n1)"
if [[ -z "$bin" ]]; then
    echo "valgrind: could not find the lib test binary" >&2
    exit 2
fi
echo "valgrind: ${bin}, filter '${1}'"
RUST_BACKTRACE=0 exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 \
    --suppressions=scripts/valgrind.supp "$bin" "$@"
