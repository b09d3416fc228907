#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Set up a Debian 12 machine, build pressured, and run it in the foreground
# on its embedded defaults (no configuration file needed): as a system
# daemon when run as root, with --user otherwise. Extra arguments are passed
# to pressured, e.g. --log-level debug.
set -euo pipefail
cd "$(dirname "$0")/.."

# A user's daemon listens where pressurectl --user and the Python module's
# user=True look, $XDG_RUNTIME_DIR/pressured/io.pressured: without
# $XDG_RUNTIME_DIR there is no such place, so say so before doing anything.
if [ "$(id -u)" -ne 0 ] && [[ "${XDG_RUNTIME_DIR:-}" != /* ]]; then
        echo "$0: --user: \$XDG_RUNTIME_DIR is not set to an absolute path, so there is no per-user daemon" \
             "to find (pressured --user listens in \$XDG_RUNTIME_DIR/pressured); run in a login session that" \
             "sets it, or start build/daemon/pressured --user --socket PATH and give clients --socket PATH" >&2
        exit 2
fi

packages=(meson ninja-build gcc pkg-config libevent-dev libjansson-dev libsystemd-dev libinih-dev
          libncurses-dev)
missing=()
for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" -eq 0 ]; then
                apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"
        else
                sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
        fi
fi

[ -d build ] || meson setup build
meson compile -C build

if [ "$(id -u)" -eq 0 ]; then
        exec build/daemon/pressured "$@"
else
        exec build/daemon/pressured --user "$@"
fi
