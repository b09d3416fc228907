#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fetch-systemd-sid.sh DEST - put Debian sid's systemd (262 or later) under
# DEST for the tests that run real programs of the systemd users run now:
# sd-event clients of cpu, io and memory pressure linked with libsystemd.a,
# varlinkctl, systemd-report and systemd-oomd. sid's libsystemd needs only
# glibc 2.34, so these run on Debian 12.
#
# The packages are fetched with apt-get download through a private apt
# state (its own sources list, lists and cache under DEST, an empty dpkg
# status) and unpacked with dpkg-deb -x: nothing is installed and the
# host's apt state is not touched. Idempotent: an existing DEST/ok is kept.
#
# Result: DEST/root/usr/{include,lib/<triplet>/libsystemd.a,bin/varlinkctl,
# lib/systemd/...}, DEST/ok holding the systemd version.
# Environment: PRESSURED_DEBIAN_MIRROR, the Debian mirror to use.
# Exit status: 0 done; 2 the mirror cannot be reached or has no sid (the
# reason is the one line on stderr; tests skip with it); 1 anything else.
set -euo pipefail

dest=${1:?usage: fetch-systemd-sid.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[[ -s $dest/ok ]] && exit 0

packages=(libsystemd0 libsystemd-dev libsystemd-shared systemd systemd-oomd systemd-report)

# The mirror: $PRESSURED_DEBIAN_MIRROR, else the one the host already uses.
mirror=${PRESSURED_DEBIAN_MIRROR:-}
[[ -n $mirror ]] || mirror=$(grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
         awk '{print $2}' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
state=$dest/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/etc/sources.list.d" "$state/etc/preferences.d"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" > "$state/etc/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$state/etc/sources.list" -o "Dir::Etc::sourceparts=$state/etc/sources.list.d"
          -o "Dir::Etc::preferencesparts=$state/etc/preferences.d"
          -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null"
          -o "APT::Sandbox::User=root" -q)
if ! out=$(apt-get "${apt_opts[@]}" update 2>&1) || grep -qE '^(W|E): Failed to fetch' <<<"$out"; then
        echo "fetch-systemd-sid.sh: the Debian mirror $mirror cannot give sid's package lists: $(grep -E '^(W|E):' <<<"$out" | head -n1)" >&2
        exit 2
fi
version=$(apt-cache "${apt_opts[@]}" policy systemd | awk '/Candidate:/ {print $2}')
case $version in
(26[2-9]*|2[7-9][0-9]*|[3-9][0-9][0-9]*) ;;
(*) echo "fetch-systemd-sid.sh: sid offers systemd '${version:-none}', need >= 262" >&2; exit 1 ;;
esac
cd "$dest"
rm -f ./*.deb
if ! out=$(apt-get "${apt_opts[@]}" download "${packages[@]/%/=$version}" 2>&1); then
        echo "fetch-systemd-sid.sh: the Debian mirror $mirror cannot give sid's systemd $version: $(grep -E '^(W|E):' <<<"$out" | head -n1)" >&2
        exit 2
fi
rm -rf root
for deb in ./*.deb; do
        dpkg-deb -x "$deb" root
done
rm -f ./*.deb
echo "$version" > ok
echo "fetch-systemd-sid.sh: systemd $version in $dest/root"
