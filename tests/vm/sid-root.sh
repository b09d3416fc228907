#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/vm/sid-root.sh ROOT - make the root file system of the Debian sid
# guest of tests/vm/run.sh (PRESSURED_VM_GUEST=sid) in ROOT, which must
# not exist: Debian 12's debootstrap, variant minbase, from the Debian
# mirror the host uses, with the packages below, then made ready to boot
# many times from a read-only copy. run.sh caches the tree keyed by a hash
# of this file: change the package list or a step here and the next run
# makes a new tree.
#
# What the guest needs, and why:
#   systemd systemd-sysv udev       PID 1 (262 or later), its daemons that
#                                   call sd_event_add_memory_pressure()
#                                   (journald, logind, ...), systemctl,
#                                   systemd-run, journalctl, varlinkctl
#   systemd-oomd systemd-report     the 260+ interfaces pressured serves
#   dbus                            the system bus (LowMemoryMonitor)
#   python3 python3-gi
#   gir1.2-glib-2.0                 the checks, and a real GLib GMemoryMonitor
#   kmod libbpf1                    Recommends of systemd that minbase skips
#   procps util-linux e2fsprogs     ps, setpriv, mkfs.ext4 (the scratch disk)
#   libevent-2.1-7t64 libjansson4
#   libinih1 libncursesw6 libtinfo6 what a pressured built on Debian 12 links
#                                   (libsystemd0 comes with systemd)
#
# Then: a machine id (no first-boot logic at each boot), tmp.mount masked
# (sid mounts a tmpfs on /tmp, which would hide a checkout there), apt's
# lists, caches and the documentation removed, and systemd-update-done run
# once, so that a boot does not rerun ldconfig, sysusers and the catalog
# update (about 6 s under TCG) because its overlay is always new.
#
# Environment: PRESSURED_DEBIAN_MIRROR, the mirror (default: the host's).
# Exit status: 0 done; 2 the mirror cannot give a tree (sid moves daily and
# can be in the middle of a transition; the reason is the last line on
# stderr); 1 anything else.
set -euo pipefail

root=${1:?usage: sid-root.sh ROOT}
[ -e "$root" ] && { echo "sid-root.sh: $root exists" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "sid-root.sh: debootstrap is missing (install debootstrap)" >&2; exit 1; }

packages=(systemd systemd-sysv udev systemd-oomd systemd-report dbus
          python3 python3-gi gir1.2-glib-2.0 kmod libbpf1
          procps util-linux e2fsprogs
          libevent-2.1-7t64 libjansson4 libinih1 libncursesw6 libtinfo6)

mirror=${PRESSURED_DEBIAN_MIRROR:-}
[[ -n $mirror ]] || mirror=$(grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
         awk '{print $2}' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
        --keyring=/usr/share/keyrings/debian-archive-keyring.gpg sid "$root" "$mirror" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        # What debootstrap left mounted in the tree, then the tree.
        grep -o " $root/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l || true
        rm -rf --one-file-system "$root"
        echo "sid-root.sh: the Debian mirror $mirror cannot give a sid tree: $(grep -E '^(E|W):' "$log" | tail -n1)" >&2
        exit 2
fi

version=$(chroot "$root" dpkg-query -W -f '${Version}' systemd)
case $version in
(26[2-9]*|2[7-9][0-9]*|[3-9][0-9][0-9]*) ;;
(*) echo "sid-root.sh: sid gave systemd '$version', need >= 262" >&2; exit 1 ;;
esac

# systemd's postinst made one; a tree without would boot as a first boot.
grep -qx '[0-9a-f]\{32\}' "$root/etc/machine-id" 2>/dev/null ||
        od -An -tx1 -N16 /dev/urandom | tr -d ' \n' | sed 's/$/\n/' > "$root/etc/machine-id"
echo pressured-vm-sid > "$root/etc/hostname"
ln -sf /dev/null "$root/etc/systemd/system/tmp.mount"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
chroot "$root" /usr/lib/systemd/systemd-update-done
echo "$version" > "$root/.pressured-vm-systemd"
echo "sid-root.sh: Debian sid with systemd $version in $root ($(du -sm "$root" | cut -f1) MiB)"
