#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The VM side of tests/vm/run.sh, started by systemd as
# kernel-command-line.service (systemd.run=): mount the scratch disk,
# install the staged build as a package would, run the command and leave
# its stdout, stderr and status in the per-run directory. The VM powers off
# when this exits.
set -u
guest=bookworm
for opt in $(cat /proc/cmdline); do
        case $opt in
        pressured_vm.run=*) run=${opt#*=} ;;
        pressured_vm.guest=*) guest=${opt#*=} ;;
        esac
done
cut -d' ' -f1 /proc/uptime > "$run/booted"
exec 3>"$run/guest.log"

fail() {
        echo "guest-run: $*" >&3
        exit 1
}

step() {
        echo "guest-run: $(cut -d' ' -f1 /proc/uptime) s: $*"
}

{
        step "mkfs"
        # A blank ext4 disk: page cache on it is reclaimable memory.
        export PRESSURED_VM_SCRATCH=/var/lib/pressured-vm-scratch
        disk=/dev/vda
        for _ in $(seq 100); do [ -b $disk ] && break; sleep 0.1; done
        mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 $disk || fail "mkfs.ext4 $disk failed"
        mkdir -p $PRESSURED_VM_SCRATCH
        mount -o noatime $disk $PRESSURED_VM_SCRATCH || fail "cannot mount the scratch disk"

        step "system services"
        if [ "$guest" = sid ]; then
                # The guest's own systemd, with its services as its packages set them up.
                version=$(systemctl --version | awk 'NR == 1 { print $2 }')
                [ "${version%%[!0-9]*}" -ge 262 ] 2>/dev/null ||
                        fail "the sid guest runs systemd '$version', need >= 262"
                echo "systemd $version" > "$run/systemd-version"
        else
                # This machine's /etc is the VM's: packages installed here for the
                # vm suite (systemd-oomd, low-memory-monitor) are enabled there and
                # started at boot. Stop and mask them (in /run, so a check can
                # unmask and start one); only the checks that need them start them.
                for unit in low-memory-monitor.service systemd-oomd.service systemd-oomd.socket; do
                        [ -n "$(systemctl show -P FragmentPath "$unit")" ] || continue
                        systemctl mask --runtime --now --quiet "$unit" || fail "cannot stop and mask $unit"
                done
        fi
        # The system bus: the LowMemoryMonitor and systemd-oomd checks need it.
        systemctl start dbus.service || fail "the system bus (dbus.service) does not start"
        busctl --system status org.freedesktop.DBus >/dev/null || fail "the system bus does not answer"

        step "install"
        # Install the staged tree without replacing the merged-/usr symlinks.
        tar -C "$run/destdir" -cf - . | tar -C / -xf - --keep-directory-symlink --no-same-owner ||
                fail "installing the build failed"
        if [ "$guest" = sid ]; then
                # A package puts its bus policy in /usr/share/dbus-1/system.d; a
                # build for /usr/local puts it where the bus does not look (the
                # bookworm guest has low-memory-monitor's policy from the host
                # instead). Tell the bus, as the administrator of a /usr/local
                # install does.
                includes=
                for d in $(cd "$run/destdir" && find . -path '*/dbus-1/system.d' -type d | sed 's|^\.||'); do
                        case $d in /usr/share/dbus-1/system.d|/etc/dbus-1/system.d) ;;
                        *) includes+="  <includedir>$d</includedir>"$'\n' ;;
                        esac
                done
                [ -z "$includes" ] || printf '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"\n "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n<busconfig>\n%s</busconfig>\n' "$includes" > /etc/dbus-1/system-local.conf
        fi
        step "ldconfig"
        ldconfig
        step "daemon-reload"
        systemctl daemon-reload || fail "daemon-reload failed"
        # The bus reads the installed policy (share/dbus-1/system.d) anew.
        systemctl reload dbus.service || fail "reloading the system bus failed"
        # daemon-reload above has loaded the units: spare enable a second reload.
        # Every socket unit the build installs, as a package's postinst enables them.
        sockets=$(cd "$run/destdir" && find . -path '*/systemd/system/pressured*.socket' -printf '%f\n' | sort)
        [ -n "$sockets" ] || fail "the build installs no pressured*.socket"
        systemctl enable --now --no-reload $sockets || fail "enabling the sockets failed: $sockets"
        step "socket started"
        systemctl is-active --quiet pressured.socket || fail "pressured.socket is not listening"
        systemctl is-active --quiet pressured-memory-pressure.socket ||
                fail "pressured-memory-pressure.socket is not listening"
        test -S /run/pressured/io.pressured || fail "no socket at /run/pressured/io.pressured"
        test -S /run/systemd/oomd.prekill.hook/pressured ||
                fail "no socket at /run/systemd/oomd.prekill.hook/pressured (pressured-prekill.socket)"
} >&3 2>&3

# The command, with the caller's working directory and PRESSURED_* variables.
. "$run/env"
mapfile -d '' cmd < "$run/cmd"
"${cmd[@]}" > "$run/stdout" 2> "$run/stderr" < /dev/null
echo $? > "$run/status.new"
sync
mv "$run/status.new" "$run/status"
# Everything is on the host now: power off at once rather than stop every
# unit the command left (up to 40 s under TCG).
sync
systemctl poweroff --force --force
exit 0
