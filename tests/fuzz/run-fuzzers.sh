#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-fuzzers.sh BUILDDIR SECONDS
#
# Runs every libFuzzer binary built in BUILDDIR (configured with
# CC=clang and -Dfuzzing=true) for SECONDS each, over a scratch copy of its
# checked-in corpus (tests/fuzz/corpus/<name>/), and prints the number of
# executions per target. Crash inputs are left in BUILDDIR/fuzz-artifacts/;
# the exit status is non-zero if any fuzzer failed. New interesting inputs
# stay in the scratch copy and are not added to the source tree.
set -u

if [ $# -ne 2 ]; then
        echo "Usage: $0 BUILDDIR SECONDS" >&2
        exit 2
fi
builddir=$1
seconds=$2
srcdir=$(cd "$(dirname "$0")" && pwd)
artifacts="$builddir/fuzz-artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/pressured-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$artifacts" || exit 1

found=0
failed=0
for bin in "$builddir"/tests/fuzz/*-libfuzzer; do
        [ -x "$bin" ] || continue
        found=$((found + 1))
        name=$(basename "$bin" -libfuzzer)
        corpus="$work/$name"
        mkdir -p "$corpus"
        if [ -d "$srcdir/corpus/$name" ]; then
                cp "$srcdir/corpus/$name"/* "$corpus"/ 2>/dev/null
        fi
        log="$work/$name.log"

        "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=1024 \
               -artifact_prefix="$artifacts/$name-" "$corpus" >"$log" 2>&1
        rc=$?
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
        if [ $rc -eq 0 ]; then
                printf '%-24s ok      %12s execs  cov %s\n' "$name" "${execs:-?}" "${cov:-?}"
        else
                failed=$((failed + 1))
                printf '%-24s FAILED  %12s execs  (exit %d)\n' "$name" "${execs:-?}" "$rc"
                tail -n 40 "$log" | sed 's/^/    /'
        fi
done

if [ $found -eq 0 ]; then
        echo "No libFuzzer binaries in $builddir/tests/fuzz (configure with CC=clang and -Dfuzzing=true)" >&2
        exit 1
fi
[ $failed -eq 0 ]
