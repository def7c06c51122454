#!/usr/bin/env bash
# Runs the crate's lib unit tests under AddressSanitizer (use-after-free, double free, out-of-bounds,
# leaks via LeakSanitizer), on the machine's stable toolchain.
#
#   scripts/asan.sh                  the tests of the `unsafe` modules `inline_task`, `task_slab`, `shard::{lock, reserve, slab}`
#   scripts/asan.sh FILTER [ARGS]    lib tests whose name contains FILTER, e.g. `scripts/asan.sh ''`
#                                    for the whole lib suite; ARGS go to the test harness
#   ASAN_CARGO="--features async --test async_tick_groups" scripts/asan.sh ''
#                                    other test targets instead of the lib's (default `--lib`): the
#                                    tick groups' `unsafe` (`sleep/group/`) has no lib unit tests
#
# `-Zsanitizer` is a nightly flag: the stable compiler takes it with RUSTC_BOOTSTRAP=1. The standard
# library is not rebuilt with ASan (that needs nightly's `-Zbuild-std`), so only this crate and its
# dependencies are instrumented; frees and leaks are still caught everywhere (ASan intercepts malloc).
# An explicit --target keeps the flags off build scripts and proc macros; a separate target dir
# (target/asan) keeps normal builds' cache.
#
# `scripts/asan.sh ''` runs the whole lib suite.
set -euo pipefail
cd "$(dirname "$0")/.."

target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="${RUSTFLAGS:-} -Zsanitizer=address"
export CARGO_TARGET_DIR="${ASAN_TARGET_DIR:-target/asan}"
# detect_leaks: LeakSanitizer at exit; a report fails the run with a nonzero exit code.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1}"

if [[ $# -eq 0 ]]; then
    set -- inline_task task_slab shard::lock shard::reserve shard::slab
fi

echo "asan: target ${target}, target dir ${CARGO_TARGET_DIR}, filter '${1}'"
# shellcheck disable=SC2086 # ASAN_CARGO is a list of cargo arguments.
exec cargo test ${ASAN_CARGO:---lib} --target "${target}" -- "$@"
