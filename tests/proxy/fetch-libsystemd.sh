#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fetch-libsystemd.sh DEST - put libsystemd >= 254 (for
# sd_event_add_memory_pressure()) under DEST, for the sd-event test client
# only. Debian 12 ships 252; bookworm-backports has newer. The packages are
# fetched with apt-get download through a private apt state (its own
# sources list and lists directory under DEST), and unpacked with dpkg-deb
# -x: nothing is installed on the host and the host's apt state is not
# touched. Idempotent: an existing DEST/ok is kept.
#
# Result: DEST/root/usr/include, DEST/root/usr/lib/<triplet>/libsystemd.so*,
# and DEST/ok holding the version. Exits non-zero if it could not be had.
set -euo pipefail

dest=${1:?usage: fetch-libsystemd.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[[ -s $dest/ok ]] && exit 0

# The mirror the host already uses.
mirror=$(grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
         awk '{print $2}' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
state=$dest/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/etc/sources.list.d" "$state/etc/preferences.d"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" \
        > "$state/etc/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$state/etc/sources.list" -o "Dir::Etc::sourceparts=$state/etc/sources.list.d"
          -o "Dir::Etc::preferencesparts=$state/etc/preferences.d"
          -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null"
          -o "APT::Default-Release=bookworm-backports" -o "APT::Sandbox::User=root" -q)
apt-get "${apt_opts[@]}" update >/dev/null
version=$(apt-cache "${apt_opts[@]}" policy libsystemd-dev | awk '/Candidate:/ {print $2}')
case $version in
(25[4-9]*|2[6-9][0-9]*) ;;
(*) echo "fetch-libsystemd.sh: bookworm-backports offers libsystemd-dev '${version:-none}', need >= 254" >&2; exit 1 ;;
esac
cd "$dest"
rm -f ./*.deb
apt-get "${apt_opts[@]}" download "libsystemd0=$version" "libsystemd-dev=$version" >/dev/null
rm -rf root
for deb in ./*.deb; do
        dpkg-deb -x "$deb" root
done
echo "$version" > ok
echo "fetch-libsystemd.sh: libsystemd $version in $dest/root"
