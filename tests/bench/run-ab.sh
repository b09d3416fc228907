#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Compare two builds of pressured on this machine: the fan-out, memory,
# idle, proxy and top benchmarks, run for both builds interleaved, several
# rounds, so that drift of the machine (load, caches, frequency) hits both
# alike, and the spread between rounds of one build gives the run-to-run
# noise next to each before/after ratio.
#
#   tests/bench/run-ab.sh BEFORE_BUILDDIR AFTER_BUILDDIR [--quick] [--rounds N]
#       [--before-label TEXT] [--after-label TEXT] [--harness BUILDDIR] [--out DIR]
#
# Each round runs every benchmark once per build, back to back, the builds'
# order swapped every round (before/after, then after/before, ...); an even
# number of rounds (default 4, 2 with --quick) puts each build first as
# often as the other. The benchmark programs are the same for both builds:
# the Python scripts of this source tree and bench-fanout of the --harness
# build (default: AFTER); only the daemon, pressurectl and libpressure
# (pressurectl's own, found through its run path) come from the build under
# test.
#
# Writes, in --out (default AFTER_BUILDDIR/tests/bench/out-ab): ab-fanout.csv,
# ab-memory.csv, ab-idle.csv, ab-proxy.csv and ab-top.csv (each benchmark's
# CSV with the columns build (before or after) and round in front),
# ab-runs.csv (exit status, wall time and load of every run), ab-info.txt
# (the builds, their commits, the machine), ab.md (the comparison table) and
# raw/ROUND-BUILD/ (each run's own files). A full run (no --quick) also
# regenerates tests/bench/results.md when AFTER_BUILDDIR holds the output of
# a full run-benchmarks.sh (tests/bench/out/machine.txt): its sections, then
# the comparison; otherwise it puts the comparison alone in its marked section
# of results.md. Quick runs never touch results.md.
#
# Labels name the builds in the table; by default each is the commit its
# build directory was configured from (git -C SOURCE rev-parse, "+dirty"
# when the tree has uncommitted changes). The proxy benchmark needs
# libsystemd >= 254 (tests/proxy/fetch-libsystemd.sh) in the harness build,
# BEFORE or AFTER, or $PRESSURED_LIBSYSTEMD_254; without it, and without
# root, benchmarks are skipped as in run-benchmarks.sh. Exits 1 if a
# benchmark failed.
set -u

usage() {
        echo "Usage: $0 BEFORE_BUILDDIR AFTER_BUILDDIR [--quick] [--rounds N]" >&2
        echo "       [--before-label TEXT] [--after-label TEXT] [--harness BUILDDIR] [--out DIR]" >&2
        exit 2
}

[ $# -ge 2 ] || usage
before=$(cd "$1" 2>/dev/null && pwd) || { echo "No build directory $1" >&2; exit 2; }
after=$(cd "$2" 2>/dev/null && pwd) || { echo "No build directory $2" >&2; exit 2; }
shift 2
quick=0
rounds=
before_label=
after_label=
harness=$after
out=
while [ $# -gt 0 ]; do
        case "$1" in
        --quick) quick=1 ;;
        --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
        --before-label) [ $# -ge 2 ] || usage; before_label=$2; shift ;;
        --after-label) [ $# -ge 2 ] || usage; after_label=$2; shift ;;
        --harness) [ $# -ge 2 ] || usage; harness=$(cd "$2" 2>/dev/null && pwd) ||
                { echo "No build directory $2" >&2; exit 2; }; shift ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
        *) usage ;;
        esac
        shift
done
case $rounds in
'') if [ "$quick" = 1 ]; then rounds=2; else rounds=4; fi ;;
*[!0-9]*|0) echo "--rounds needs a positive number" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
out=${out:-$after/tests/bench/out-ab}

for b in "$before" "$after" "$harness"; do
        meson compile -C "$b" >/dev/null || { echo "Build failed in $b" >&2; exit 1; }
done
# pressurectl of build $1: client/pressurectl/pressurectl, or client/pressurectl in a build from
# before client/ was cut into lib/ and pressurectl/, so that either can be the "before".
pressurectl_of() {
        if [ -f "$1/client/pressurectl/pressurectl" ]; then
                echo "$1/client/pressurectl/pressurectl"
        else
                echo "$1/client/pressurectl"
        fi
}
for b in "$before" "$after"; do
        [ -x "$b/daemon/pressured" ] || { echo "No daemon/pressured in $b" >&2; exit 1; }
        [ -x "$(pressurectl_of "$b")" ] || { echo "No pressurectl in $b" >&2; exit 1; }
done
[ -x "$harness/tests/bench/bench-fanout" ] || { echo "No tests/bench/bench-fanout in $harness" >&2; exit 1; }

# The source tree and commit a build directory was configured from.
build_source() {
        python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
                "$1/meson-info/meson-info.json" 2>/dev/null
}
build_commit() {
        src=$(build_source "$1")
        c=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; return; }
        [ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] || c="$c+dirty"
        echo "$c"
}
build_subject() {
        git -C "$(build_source "$1")" log -1 --format=%s 2>/dev/null
}
# Where pressurectl of build $1 finds libpressure (its run path should keep it in the build).
libpressure_of() {
        ldd "$(pressurectl_of "$1")" 2>/dev/null | awk '/libpressure/ { print $3 }'
}

before_commit=$(build_commit "$before")
after_commit=$(build_commit "$after")
before_label=${before_label:-$before_commit}
after_label=${after_label:-$after_commit}
for b in "$before" "$after"; do
        case $(libpressure_of "$b") in
        "$b"/*) ;;
        *) echo "warning: $(pressurectl_of "$b") loads libpressure from '$(libpressure_of "$b")'," \
                "not from its build" >&2 ;;
        esac
done

if [ -z "${PRESSURED_LIBSYSTEMD_254:-}" ]; then
        for b in "$harness" "$before" "$after"; do
                if [ -s "$b/libsystemd-254/ok" ]; then
                        PRESSURED_LIBSYSTEMD_254=$b/libsystemd-254
                        export PRESSURED_LIBSYSTEMD_254
                        break
                fi
        done
fi

# Per-run settings: shorter than run-benchmarks.sh's so that rounds fit
# (a round takes about 3 minutes and a quick round 1.5 on 2 cores).
if [ "$quick" = 1 ]; then
        fanout_args="--quick"
        idle_seconds=3
        proxy_seconds=5
        top_args="--quick"
else
        fanout_args=""
        idle_seconds=15
        proxy_seconds=10
        top_args="--sizes 100,1000"
fi

rm -rf "$out"
mkdir -p "$out/raw"

export PRESSURED_SOURCE_ROOT="$source_root"
export PRESSURED_BENCH_QUICK="$quick"
export BENCH_PROXY_CLIENTS="${BENCH_PROXY_CLIENTS:-1 100}"
export PYTHONDONTWRITEBYTECODE=1
# Measure the daemon, never under a service manager's watchdog.
unset WATCHDOG_USEC WATCHDOG_PID NOTIFY_SOCKET LISTEN_FDS LISTEN_PID

{
        echo "before_label=$before_label"
        echo "before_commit=$before_commit"
        echo "before_subject=$(build_subject "$before")"
        echo "before_build=$before"
        echo "after_label=$after_label"
        echo "after_commit=$after_commit"
        echo "after_subject=$(build_subject "$after")"
        echo "after_build=$after"
        echo "harness=$harness"
        echo "rounds=$rounds"
        echo "quick=$quick"
        echo "idle_seconds=$idle_seconds"
        echo "proxy_seconds=$proxy_seconds"
        echo "proxy_clients=$BENCH_PROXY_CLIENTS"
        echo "top_args=$top_args"
        echo "machine=$(uname -n)"
        echo "kernel=$(uname -r)"
        echo "cpus=$(nproc)"
        echo "memory=$(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "load_start=$(cut -d' ' -f1 /proc/loadavg)"
} > "$out/ab-info.txt"
echo "build,round,benchmark,status,seconds,load_start" > "$out/ab-runs.csv"

failed=0
t_start=$(date +%s)

# run_one BUILD_NAME BUILDDIR ROUND BENCH: one benchmark against one build.
run_one() {
        name=$1 dir=$2 round=$3 bench=$4
        raw="$out/raw/$round-$name"
        mkdir -p "$raw"
        load=$(cut -d' ' -f1 /proc/loadavg)
        t0=$(date +%s.%N)
        echo "=== round $round, $name: $bench"
        case $bench in
        fanout)
                # shellcheck disable=SC2086 # word splitting of the optional arguments is wanted
                PRESSURED_BUILD_ROOT="$dir" "$harness/tests/bench/bench-fanout" --out "$raw" \
                        --daemon "$dir/daemon/pressured" $fanout_args > "$raw/$bench.log" 2>&1 ;;
        idle)
                PRESSURED_BUILD_ROOT="$dir" python3 "$here/bench-idle.py" --out "$raw" \
                        --duration "$idle_seconds" > "$raw/$bench.log" 2>&1 ;;
        proxy)
                PRESSURED_BUILD_ROOT="$dir" python3 "$here/bench-proxy.py" --out "$raw" \
                        --seconds "$proxy_seconds" --rounds 1 > "$raw/$bench.log" 2>&1 ;;
        top)
                # shellcheck disable=SC2086
                PRESSURED_BUILD_ROOT="$dir" python3 "$here/bench-top.py" --out "$raw" \
                        $top_args > "$raw/$bench.log" 2>&1 ;;
        esac
        rc=$?
        secs=$(echo "$(date +%s.%N) - $t0" | bc)
        case $rc in
        0) status=ok ;;
        77) status=skipped ;;
        *) status="failed ($rc)"; failed=1
           echo "--- $bench failed (exit $rc) for $name, round $round; $raw/$bench.log ends:"
           tail -n 5 "$raw/$bench.log" ;;
        esac
        echo "$name,$round,$bench,$status,$secs,$load" >> "$out/ab-runs.csv"
        [ "$status" = skipped ] && grep -m1 '^SKIP:' "$raw/$bench.log"
        echo "    $status, $(printf '%.1f' "$secs") s"
}

# append NAME ROUND CSV: add CSV's rows to ab-<CSV> with build and round in front.
# shellcheck disable=SC2094 # reads raw/..., appends to ab-...: never the same file
append() {
        [ -f "$out/raw/$2-$1/$3" ] || return 0
        awk -v b="$1" -v r="$2" -v have="$([ -f "$out/ab-$3" ] && echo 1)" '
                NR == 1 { if (have != 1) print "build,round," $0; next }
                { print b "," r "," $0 }' "$out/raw/$2-$1/$3" >> "$out/ab-$3"
}

round=1
while [ "$round" -le "$rounds" ]; do
        if [ $((round % 2)) = 1 ]; then
                order="before after"
        else
                order="after before"
        fi
        for bench in fanout idle proxy top; do
                for name in $order; do
                        if [ "$name" = before ]; then dir=$before; else dir=$after; fi
                        run_one "$name" "$dir" "$round" "$bench"
                done
        done
        round=$((round + 1))
done

# Files with a build column, before's rows first (make-results.py does not
# depend on the order).
for name in before after; do
        round=1
        while [ "$round" -le "$rounds" ]; do
                for csv in fanout.csv memory.csv idle.csv proxy.csv top.csv; do
                        append "$name" "$round" "$csv"
                done
                round=$((round + 1))
        done
done

{
        echo "load_end=$(cut -d' ' -f1 /proc/loadavg)"
        echo "wall_seconds=$(( $(date +%s) - t_start ))"
} >> "$out/ab-info.txt"

python3 "$here/make-results.py" --ab "$out" > "$out/ab.md" || failed=1
cat "$out/ab.md"
echo "=== wrote $out (ab-*.csv, ab.md); $(( $(date +%s) - t_start )) s"

single="$after/tests/bench/out"
if [ "$quick" = 0 ] && [ -f "$single/machine.txt" ] && ! grep -qx 'quick=1' "$single/machine.txt"; then
        python3 "$here/make-results.py" "$single" --ab "$out" > "$here/results.md.tmp" &&
                mv "$here/results.md.tmp" "$here/results.md" && echo "=== wrote $here/results.md"
elif [ "$quick" = 0 ]; then
        # No full single-build output to regenerate everything from: put the
        # comparison in place of the previous one in results.md (between its
        # markers), or after the rest, leaving the other sections as they are.
        python3 - "$here/results.md" "$out/ab.md" <<'PY' && echo "=== updated the before/after section of $here/results.md"
import sys
path, ab = sys.argv[1], open(sys.argv[2]).read()
begin, end = '<!-- before-after: generated by tests/bench/run-ab.sh -->', '<!-- before-after end -->'
text = open(path).read()
block = f'{begin}\n{ab.rstrip()}\n{end}\n'
if begin in text and end in text:
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end) + 1:]
else:
    text = text.rstrip('\n') + '\n\n' + block
open(path, 'w').write(text)
PY
fi
exit $failed
