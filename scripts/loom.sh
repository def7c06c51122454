#!/usr/bin/env bash
# Runs the loom models in loom_tests/ (see docs/loom.md).
#
#   scripts/loom.sh                       every model, LOOM_MAX_PREEMPTIONS=2 and LOOM_MAX_BRANCHES=2000
#                                         unless set
#   scripts/loom.sh cancel_racing_fire    the models whose name contains this filter
#   scripts/loom.sh --fault NAME [FILTER] the same with a seeded bug (cfg delaywheel_loom_fault=NAME):
#                                         a model must FAIL; exits 0 only if some model failed
#
# Builds with --release, debug assertions and overflow checks on, with `--cfg delaywheel_loom`, in its
# own target dir (target/loom, target/loom-fault) so that normal builds keep their cache. Extra
# LOOM_* variables (LOOM_CHECKPOINT_FILE, LOOM_LOG, LOOM_LOCATION, ...) pass through to loom.
set -euo pipefail

# Invoked by cargo as the rustc wrapper of a --fault run: seed the fault into this crate only, so the
# dependencies stay cached across faults (cargo cannot see this flag; the script cleans the crate).
if [[ "${DELAYWHEEL_LOOM_FAULT_WRAPPER:-}" != "" ]]; then
    rustc="$1"
    shift
    args=("$@")
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do
        if [[ "${args[i]}" == "--crate-name" && "${args[i + 1]}" == "delaywheel" ]]; then
            args+=(--cfg "delaywheel_loom_fault=\"${DELAYWHEEL_LOOM_FAULT_WRAPPER}\"" --cap-lints warn)
            break
        fi
    done
    exec "$rustc" "${args[@]}"
fi

cd "$(dirname "$0")/.."

fault=""
if [[ "${1:-}" == "--fault" ]]; then
    fault="${2:?--fault needs a name: see the check-cfg list in Cargo.toml}"
    shift 2
fi

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
# Headroom over loom's default of 1000 operations per execution: at bound 2 every model fits in
# 1000 (LOOM_MAX_BRANCHES=1000 scripts/loom.sh passes), and the models of drive.rs raise their own.
export LOOM_MAX_BRANCHES="${LOOM_MAX_BRANCHES:-2000}"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg delaywheel_loom"
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true

if [[ -z "$fault" ]]; then
    export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
    echo "loom: LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS}, target dir ${CARGO_TARGET_DIR}"
    exec cargo test --release --features async --test loom -- "$@"
fi

export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom-fault}"
export RUSTC_WRAPPER="$PWD/scripts/loom.sh"
export DELAYWHEEL_LOOM_FAULT_WRAPPER="$fault"
cargo clean --release -p delaywheel --quiet
echo "loom: seeded fault '${fault}', LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS}: a model must fail"
if cargo test --release --features async --test loom -- "$@"; then
    echo "loom: no model caught fault '${fault}'" >&2
    exit 1
fi
echo "loom: fault '${fault}' caught (see the failure above)"
