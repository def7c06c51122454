#!/usr/bin/env bash
# Runs the scaling sweep (bench/benches/scaling.rs: ns per schedule and per expiry with 10^4 .. 10^N
# timers pending) and draws its CSV as docs/scaling.svg (bench/examples/plot_scaling.rs).
# docs/benchmarks.md embeds that SVG; rerun this to refresh it.
#
#   bench/scripts/plot_scaling.sh                    # 10^4 .. 10^7, all four systems -> docs/scaling.svg
#   SCALING_MAX_EXP=6 bench/scripts/plot_scaling.sh  # .. 10^6: less memory, a minute or two less
#   SCALING_SYSTEMS=delaywheel,heap bench/scripts/plot_scaling.sh /tmp/sweep.svg
#
# Environment (see bench/benches/scaling.rs): SCALING_MAX_EXP (default 7 here), SCALING_SYSTEMS (default
# here: delaywheel,heap,tokio,hhwt), SCALING_MEASURE_SECS (default 3 here), SCALING_CSV (default
# <target dir>/scaling.csv). Argument: the SVG to write (default docs/scaling.svg).
#
# Cost with the defaults on 2 vCPUs: about 4 minutes (2 with 1-second measurements) and, at 10^7
# pending, about 2 GB resident (one system's timers at a time). The load average before and after is
# printed under the plot's title, since other work on the host skews the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."

export SCALING_MAX_EXP="${SCALING_MAX_EXP:-7}"
export SCALING_SYSTEMS="${SCALING_SYSTEMS:-delaywheel,heap,tokio,hhwt}"
export SCALING_MEASURE_SECS="${SCALING_MEASURE_SECS:-3}"
target="${CARGO_TARGET_DIR:-target}"
export SCALING_CSV="${SCALING_CSV:-${target}/scaling.csv}"
svg="${1:-docs/scaling.svg}"

# Build both first, so that compiling does not overlap the measurements.
cargo bench -p delaywheel-bench --bench scaling --no-run
cargo build --release -p delaywheel-bench --example plot_scaling

rm -f "${SCALING_CSV}"
load_before="$(cut -d' ' -f1 /proc/loadavg)"
cargo bench -p delaywheel-bench --bench scaling
load_after="$(cut -d' ' -f1 /proc/loadavg)"
test -s "${SCALING_CSV}" || { echo "plot_scaling.sh: the sweep wrote no ${SCALING_CSV}" >&2; exit 1; }

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- src bench Cargo.toml 2>/dev/null || commit="${commit}+changes"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | sed 's/ [0-9]*-Core Processor//')"
note="delaywheel ${commit}, $(date -u +%Y-%m-%d), ${cpu:-unknown CPU} x $(nproc), load ${load_before} -> ${load_after}; manual clocks, criterion 10 samples in ${SCALING_MEASURE_SECS} s"

"${target}/release/examples/plot_scaling" "${SCALING_CSV}" "${svg}" "${note}"
echo "plot_scaling.sh: ${svg} from ${SCALING_CSV} (${note})"
