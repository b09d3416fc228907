#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run every benchmark side by side on this machine, collect their CSV files
# under BUILDDIR/tests/bench/out/, and regenerate tests/bench/results.md and
# tests/bench/latency.png and thrash.png (gnuplot).
#
#   tests/bench/run-benchmarks.sh BUILDDIR [--quick]
#
# --quick runs fewer rounds and 5 s idle periods instead of 60 s (a smoke
# run; publish only full runs). The kernel-facing benchmarks (sharing,
# workload, and the idle one's quiet cgroup) need root; without it they are
# reported as skipped. A benchmark that fails does not stop the others; the
# script exits 1 if any failed. To compare two builds (before and after a
# change), see run-ab.sh.
set -u

usage() {
        echo "Usage: $0 BUILDDIR [--quick]" >&2
        exit 2
}

[ $# -ge 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || { echo "No build directory $1" >&2; exit 2; }
shift
quick=0
for arg in "$@"; do
        case "$arg" in
        --quick) quick=1 ;;
        *) usage ;;
        esac
done

here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
out="$build/tests/bench/out"

meson compile -C "$build" >/dev/null || { echo "Build failed in $build" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

export PRESSURED_BUILD_ROOT="$build"
export PRESSURED_SOURCE_ROOT="$source_root"
export PRESSURED_BENCH_OUT="$out"
export PRESSURED_BENCH_QUICK="$quick"
export PYTHONDONTWRITEBYTECODE=1
# Measure the daemon, never under a service manager's watchdog.
unset WATCHDOG_USEC WATCHDOG_PID NOTIFY_SOCKET LISTEN_FDS LISTEN_PID

{
        echo "machine=$(uname -n)"
        echo "kernel=$(uname -r)"
        echo "cpus=$(nproc)"
        echo "memory=$(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "quick=$quick"
        echo "load_start=$(cut -d' ' -f1 /proc/loadavg)"
} > "$out/machine.txt"

failed=0

# run NAME COMMAND...: run one benchmark, log its output, record its outcome.
run() {
        name=$1
        shift
        echo "=== $name"
        "$@" 2>&1 | tee "$out/$name.log"
        rc=$(cat "$out/.rc")
        case $rc in
        0) echo "ok" > "$out/$name.status" ;;
        77) grep -m1 '^SKIP:' "$out/$name.log" | sed 's/^SKIP: /skipped: /' > "$out/$name.status"
            [ -s "$out/$name.status" ] || echo "skipped" > "$out/$name.status" ;;
        *) echo "failed (exit $rc), see $name.log" > "$out/$name.status"; failed=1 ;;
        esac
}

# Keep the benchmark's exit code past the pipe into tee.
rc_of() {
        "$@"
        echo $? > "$out/.rc"
}

if [ "$quick" = 1 ]; then
        protection_args="--iterations 3"
else
        protection_args=""
fi

run fanout rc_of "$build/tests/bench/bench-fanout" --out "$out"
run idle rc_of python3 "$here/bench-idle.py" --out "$out"
run sharing rc_of python3 "$here/bench-sharing.py" --out "$out"
run workload rc_of python3 "$here/bench-workload.py" --out "$out"
# Needs libsystemd >= 254 in $build/libsystemd-254 (tests/proxy/fetch-libsystemd.sh).
run proxy rc_of python3 "$here/bench-proxy.py" --out "$out"
# shellcheck disable=SC2086 # word splitting of the optional arguments is wanted
run protection rc_of "$build/tests/bench/bench-protection" --csv "$out/bench-protection.csv" \
        --generator "$source_root/tests/make-fake-cgroup-tree.py" $protection_args
run top rc_of python3 "$here/bench-top.py" --out "$out"
run takeover rc_of python3 "$here/bench-takeover.py" --out "$out"
run metrics rc_of python3 "$here/bench-metrics.py" --out "$out"
run scrape-delay rc_of python3 "$here/bench-scrape-delay.py" --out "$out"
run ns-fanout rc_of python3 "$here/bench-ns-fanout.py" --out "$out"
run prekill rc_of python3 "$here/bench-prekill.py" --out "$out"
# Real systemd-oomd 262 in the sid guest of tests/vm/run.sh (PRESSURED_VM_GUEST=sid):
# the margin of the default deadline, and from its call to a saver's state on disk.
run prekill-oomd rc_of python3 "$here/bench-prekill-oomd.py" --out "$out"
# This project's build in a memory-limited cgroup, here; then the thrash
# steps and the daemon and pressurectl built the same way in the VM test bed
# (tests/vm/run.sh; under TCG the whole tree takes about 1,000 s a build).
run build rc_of python3 "$here/bench-build.py" --out "$out"
run thrash rc_of python3 "$here/bench-thrash.py" --out "$out"
run build-vm rc_of python3 "$here/bench-build.py" --vm --targets "daemon/pressured client/pressurectl/pressurectl" --out "$out"
rm -f "$out/.rc"

echo "load_end=$(cut -d' ' -f1 /proc/loadavg)" >> "$out/machine.txt"

python3 "$here/make-results.py" "$out" > "$here/results.md.tmp" && mv "$here/results.md.tmp" "$here/results.md"
echo "=== wrote $here/results.md"
if [ -f "$out/fanout.csv" ]; then
        if command -v gnuplot >/dev/null; then
                gnuplot -e "csv='$out/fanout.csv'; png='$here/latency.png'" "$here/plot.gp" &&
                        echo "=== wrote $here/latency.png"
        else
                echo "gnuplot is not installed: latency.png not regenerated" >&2
        fi
fi
if [ -f "$out/thrash-delays.csv" ] && command -v gnuplot >/dev/null; then
        gnuplot -e "dir='$out'; png='$here/thrash.png'" "$here/thrash.gp" && echo "=== wrote $here/thrash.png"
fi
exit $failed
