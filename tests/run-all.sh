#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Set up a Debian 12 machine and run pressured's whole test suite:
#   1. install the build and test dependencies with apt-get;
#   2. build with -Dwerror=true and run every suite (unit, integration,
#      fault, kernel, fuzz corpus replay, client, sid, and vm: the checks in
#      a VM with systemd as PID 1 on cgroup v2, in Debian 12 and in Debian
#      sid with systemd 262, each counted);
#   3. rebuild with ASan+UBSan and run every suite but vm again;
#   4. run the unit and integration suites under valgrind memcheck;
#   5. build the libFuzzer targets with clang and fuzz each for a bounded time;
#   6. make the release tarball with meson dist and check that it builds and
#      passes the unit suite (tests/check-dist.sh), counted as one test.
# It ends with the parts tests left out here, each with its reason (a test
# that left one out is counted as skipped), the failed tests, and one line:
# "N passed, N failed, N skipped".
#
# Needs root (apt-get, real cgroups); re-runs itself with sudo otherwise.
# Environment: FUZZ_SECONDS (default 60), SKIP_APT=1 to skip installing.
set -uo pipefail

cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then
                exec sudo --preserve-env=FUZZ_SECONDS,SKIP_APT "$0" "$@"
        fi
        echo "run-all.sh: needs root (apt-get and real cgroups); run it as root." >&2
        exit 1
fi

packages=(meson ninja-build gcc g++ clang libclang-rt-14-dev pkg-config python3
          libevent-dev libjansson-dev libsystemd-dev libinih-dev
          valgrind systemd util-linux prometheus bash-completion
          libncurses-dev tmux dbus-daemon dunst xvfb python3-gi gir1.2-glib-2.0
          qemu-system-x86 busybox-static cpio kmod e2fsprogs passwd debootstrap
          dbus systemd-oomd low-memory-monitor
          universal-ctags cscope groff-base mandoc zsh fish)
if [ "${SKIP_APT:-0}" != 1 ]; then
        echo "== Installing dependencies"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || exit 1
        apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null || exit 1
fi

total_pass=0
total_fail=0
failed_list=$(mktemp)
left_out_list=$(mktemp)
trap 'rm -f "$failed_list" "$left_out_list"' EXIT
total_skip=0
status=0

# Add up one meson test run from its JSON log (tests/ci-count.py: a TAP test
# of the vm suite, vm and vm-sid, counts each of its checks), noting the failed tests and
# the parts that tests left out.
count() {
        local log=$1/meson-logs/testlog$2.json
        [ -f "$log" ] || return 0
        read -r p f s < <(python3 tests/ci-count.py "$log" "$failed_list" "$left_out_list" "$1$2")
        echo "   $1$2: $p passed, $f failed, $s skipped"
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
        total_skip=$((total_skip + s))
}

run() {
        echo "== $*"
        "$@" || status=1
}

rm -rf build-ci build-ci-asan build-ci-fuzz

# 1. The plain build, warnings as errors, every suite.
run meson setup build-ci -Dwerror=true --buildtype=debugoptimized
run meson compile -C build-ci
# libsystemd >= 254 for the sd-event memory-pressure client (tests/proxy):
# downloaded from bookworm-backports with a private apt state and unpacked
# into the build tree, never installed on the host.
run tests/proxy/fetch-libsystemd.sh build-ci/libsystemd-254
# Debian sid's systemd (262) for the tests of its programs (tests/sid):
# fetched the same private way; where the mirror cannot give it (exit 2)
# those tests skip and say why.
tests/sid/fetch-systemd-sid.sh build-ci/systemd-sid
case $? in 0|2) ;; *) status=1 ;; esac
run meson test -C build-ci --print-errorlogs --num-processes 2
count build-ci ""

# 2. AddressSanitizer + UndefinedBehaviorSanitizer, every suite.
run meson setup build-ci-asan -Dwerror=true --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
run meson compile -C build-ci-asan
ln -sfn ../build-ci/libsystemd-254 build-ci-asan/libsystemd-254
ln -sfn ../build-ci/systemd-sid build-ci-asan/systemd-sid
run meson test -C build-ci-asan --setup=sanitize --no-suite vm --print-errorlogs --num-processes 2
count build-ci-asan "-sanitize"

# 3. valgrind memcheck on the unit and integration suites.
run meson test -C build-ci --setup=valgrind --suite unit --suite integration --print-errorlogs --num-processes 2
count build-ci "-valgrind"

# 4. Bounded fuzzing with libFuzzer.
if command -v clang >/dev/null; then
        run env CC=clang meson setup build-ci-fuzz -Dwerror=true -Dfuzzing=true -Db_lundef=false --buildtype=debugoptimized
        run meson compile -C build-ci-fuzz
        if [ -x tests/fuzz/run-fuzzers.sh ]; then
                echo "== fuzzing, ${FUZZ_SECONDS:-60} s per target"
                if tests/fuzz/run-fuzzers.sh build-ci-fuzz "${FUZZ_SECONDS:-60}"; then
                        total_pass=$((total_pass + 1))
                else
                        total_fail=$((total_fail + 1))
                        echo "fuzz: tests/fuzz/run-fuzzers.sh" >>"$failed_list"
                fi
        fi
fi

# 5. The release tarball builds and passes the unit suite.
echo "== tests/check-dist.sh build-ci"
if tests/check-dist.sh build-ci; then
        total_pass=$((total_pass + 1))
else
        total_fail=$((total_fail + 1))
        echo "dist: tests/check-dist.sh" >>"$failed_list"
fi

if [ $status -ne 0 ] && [ $total_fail -eq 0 ]; then
        # A setup or build step failed before any test could.
        total_fail=$((total_fail + 1))
        echo "setup: a build or setup step failed (see above)" >>"$failed_list"
fi
if [ -s "$left_out_list" ]; then
        # Every part a test could not run here, with its reason: skipped tests and parts of passed ones.
        echo "== Left out ($(wc -l <"$left_out_list"))"
        sed 's/^/   /' "$left_out_list"
fi
if [ -s "$failed_list" ]; then
        echo "== Failed"
        sed 's/^/   /' "$failed_list"
fi
echo "${total_pass} passed, ${total_fail} failed, ${total_skip} skipped"
[ $total_fail -eq 0 ]
