#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The release tarball is complete: `meson dist` makes it from the
# committed tree (HEAD) of the build directory BUILD's source, and the
# unpacked tarball configures with warnings as errors, builds and passes
# the unit suite. Only the unit suite: the others need the machine's
# cgroups and the daemon's socket, and run from the source tree.
#
# Usage: tests/check-dist.sh BUILD
# Exits 0 if the tarball built and passed, 1 otherwise. Needs git.
set -euo pipefail

build=${1:?usage: check-dist.sh BUILD}
work=$(mktemp -d "${TMPDIR:-/tmp}/pressured-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --no-tests: meson dist would run every suite of the tarball's build;
# the unit suite is run below. --allow-dirty: a work tree with changes
# still checks what HEAD holds.
meson dist -C "$build" --no-tests --allow-dirty --formats xztar
tarball=$(ls -t "$build"/meson-dist/pressured-*.tar.xz | head -n 1)
tar -xf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)

meson setup "$work/build" "$src" -Dwerror=true --buildtype=plain
meson compile -C "$work/build"
meson test -C "$work/build" --suite unit --print-errorlogs --num-processes "$(nproc)"
echo "check-dist: $(basename "$tarball") builds and passes the unit suite"
