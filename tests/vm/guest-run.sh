#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The VM side of tests/vm/run.sh, started by systemd as
# kernel-command-line.service (systemd.run=): mount the scratch disk,
# install the staged build as a package would, run the command and leave
# its stdout, stderr and status in the per-run directory. The VM powers off
# when this exits.
set -u
for opt in $(cat /proc/cmdline); do
        case $opt in
        pressured_vm.run=*) run=${opt#*=} ;;
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
        mkfs.ext4 -q -F -E nodiscard $disk || fail "mkfs.ext4 $disk failed"
        mkdir -p $PRESSURED_VM_SCRATCH
        mount -o noatime $disk $PRESSURED_VM_SCRATCH || fail "cannot mount the scratch disk"

        step "system services"
        # This machine's /etc is the VM's: packages installed here for the
        # vm suite (systemd-oomd, low-memory-monitor) are enabled there and
        # started at boot. Stop and mask them (in /run, so a check can
        # unmask and start one); only the checks that need them start them.
        for unit in low-memory-monitor.service systemd-oomd.service systemd-oomd.socket; do
                [ -n "$(systemctl show -P FragmentPath "$unit")" ] || continue
                systemctl mask --runtime --now --quiet "$unit" || fail "cannot stop and mask $unit"
        done
        # The system bus: the LowMemoryMonitor and systemd-oomd checks need it.
        systemctl start dbus.service || fail "the system bus (dbus.service) does not start"
        busctl --system status org.freedesktop.DBus >/dev/null || fail "the system bus does not answer"

        step "install"
        # Install the staged tree without replacing the merged-/usr symlinks.
        tar -C "$run/destdir" -cf - . | tar -C / -xf - --keep-directory-symlink --no-same-owner ||
                fail "installing the build failed"
        step "ldconfig"
        ldconfig
        step "daemon-reload"
        systemctl daemon-reload || fail "daemon-reload failed"
        # The bus reads the installed policy (share/dbus-1/system.d) anew.
        systemctl reload dbus.service || fail "reloading the system bus failed"
        # daemon-reload above has loaded the units: spare enable a second reload.
        systemctl enable --now --no-reload pressured.socket pressured-memory-pressure.socket \
                pressured-cpu-pressure.socket pressured-io-pressure.socket pressured-prekill.socket ||
                fail "enabling the sockets failed"
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
exit 0
