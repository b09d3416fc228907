#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Set up a Debian 12 machine, build pressured, and run it in the foreground
# on its embedded defaults (no configuration file needed): as a system
# daemon when run as root, with --user otherwise. Extra arguments are passed
# to pressured, e.g. --log-level debug.
set -euo pipefail
cd "$(dirname "$0")/.."

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
elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
        exec build/daemon/pressured --user "$@"
else
        exec build/daemon/pressured --user --socket "/tmp/pressured-$(id -u)/io.pressured" "$@"
fi
