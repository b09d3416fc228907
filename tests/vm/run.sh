#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/vm/run.sh [--] CMD [ARG...]
#
# Boot a throwaway VM that looks like the hosts pressured's users run, run
# CMD in it as root, and exit with CMD's status; CMD's stdout and stderr
# come back on ours. The VM:
#   - runs Debian 12's kernel (linux-image-amd64, fetched with apt-get
#     download and extracted under the build directory, never installed on
#     this machine) and systemd as PID 1 on a unified cgroup v2 hierarchy
#     with the memory controller;
#   - sees this machine's file system read-only at the same paths (9p),
#     under a writable overlay that lives in the VM's memory, so any script
#     here runs there;
#   - has a blank ext4 scratch disk mounted at $PRESSURED_VM_SCRATCH: page
#     cache there is reclaimable, unlike tmpfs, so use it for memory load;
#   - has the project built in the build directory installed the way a
#     package installs it (meson install into a staging tree, unpacked over
#     /, ldconfig, systemctl daemon-reload, pressured.socket and
#     pressured-memory-pressure.socket enabled and listening) before CMD
#     runs.
# CMD runs in the VM's working directory equal to ours, with the PRESSURED_*
# variables of our environment. The boot time goes to stderr.
#
# Environment:
#   PRESSURED_BUILD_ROOT  build directory to install (default: ./build of
#                         the source tree); the kernel is cached in its vm/
#   PRESSURED_VM_ACCEL    kvm, tcg or auto (default auto: see below)
#   PRESSURED_VM_TIMEOUT  seconds before qemu is killed (default 900)
#   PRESSURED_VM_MEMORY   guest memory in MiB (default 2048)
#   PRESSURED_VM_CPUS     guest CPUs (default 2)
#   PRESSURED_VM_CPU      qemu -cpu model (default: host under KVM, max under TCG)
# Exit status: CMD's; 77 if qemu cannot start a guest here; 125 if the VM
# failed before CMD ended (the console log is shown); 124 on the timeout.
#
# Facts measured on the development and CI machines (Debian 12 containers
# on a virtual machine), so nobody has to rediscover them:
#   - /dev/kvm exists, but a KVM guest hangs in early boot: these machines
#     are themselves guests (the "hypervisor" CPU flag) and nested KVM does
#     not work (-cpu qemu64: not one line on the console in 100 s; -cpu
#     host: qemu aborts, "failed to set MSR 0x10a"). TCG boots to systemd in about 30 s, and everything in the
#     guest is about ten times slower. "auto" picks TCG where the CPU flags
#     say we are a guest and KVM where /dev/kvm is usable otherwise.
#   - The host root has /.dockerenv. Unless it is hidden inside the VM,
#     systemd believes it runs in a container and ignores the kernel
#     command line; the initramfs whites it out in the overlay.
#   - systemd-tmpfiles empties /tmp at boot, so nothing the VM needs may
#     live in /tmp: the per-run directory is under the build directory, and
#     the initramfs overrides tmp.conf so that the host's /tmp (and a
#     checkout in it) stays visible and the boot does not spend 40 s
#     writing whiteouts for it.
#   - Debian 12 has a merged /usr: the install step must not replace the
#     /lib or /bin symlinks (tar needs --keep-directory-symlink).
#   - The kernel command line's systemd.run= with
#     systemd.run_success_action=poweroff runs one command as a unit
#     (kernel-command-line.service) and powers off.
#   - The VM's systemd is Debian 12's, version 252.
#   - Two guest CPUs help under TCG (multi-threaded TCG): boot to systemd
#     in 34 s against 42 s with one, `run.sh -- true` 60 s against 73 s.
#   - Before CMD runs, mkfs, the install and ldconfig (which walks every
#     library directory over 9p) and daemon-reload take another 20-40 s.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${PRESSURED_BUILD_ROOT:-$top/build}" && pwd)
timeout_s=${PRESSURED_VM_TIMEOUT:-900}
memory=${PRESSURED_VM_MEMORY:-2048}
cpus=${PRESSURED_VM_CPUS:-2}

[ "${1:-}" = -- ] && shift
if [ $# -eq 0 ]; then
        echo "usage: $0 [--] CMD [ARG...]" >&2
        exit 2
fi

say() { echo "vm: $*" >&2; }

# Exit 77, and under meson's TAP protocol (PRESSURED_VM_TAP=1) say so in TAP.
skip() {
        echo "SKIP: $*" >&2
        if [ "${PRESSURED_VM_TAP:-0}" = 1 ]; then
                echo "1..0 # SKIP $*"
                exit 0
        fi
        exit 77
}

qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || skip "qemu-system-x86_64 is not installed"
for tool in busybox cpio apt-get dpkg-deb depmod python3; do
        if ! command -v $tool >/dev/null; then
                say "$tool is missing (install busybox-static, cpio, apt, kmod, python3)"
                exit 125
        fi
done
busybox=$(command -v busybox)
if ! "$busybox" --list | grep -qx switch_root || ldd "$busybox" >/dev/null 2>&1; then
        say "$busybox is not a static busybox with switch_root (install busybox-static)"
        exit 125
fi

vmdir=$build/vm
mkdir -p "$vmdir"

# 1. The kernel, downloaded once per build directory.
kdir=$vmdir/kernel
exec 9>"$vmdir/.lock"
flock 9
if [ ! -e "$kdir/.done" ]; then
        rm -rf "$kdir"
        mkdir -p "$kdir/deb"
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
              awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
        if [ -z "$pkg" ]; then
                say "apt-cache knows no linux-image-amd64 (run apt-get update)"
                exit 125
        fi
        say "downloading $pkg"
        (cd "$kdir/deb" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2) || exit 125
        dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root"
        rm -rf "$kdir/deb"
        # The package leaves modules.dep to its postinst.
        depmod -b "$kdir/root" "$(ls "$kdir/root/lib/modules")" || exit 125
        touch "$kdir/.done"
fi
kver=$(ls "$kdir/root/lib/modules" | head -n1)
vmlinuz=$kdir/root/boot/vmlinuz-$kver
moddir=$kdir/root/lib/modules/$kver

# 2. The initramfs: static busybox, the modules to reach the root (virtio,
#    9p, overlay) in load order, and init. Rebuilt when init changes.
initrd=$vmdir/initramfs-$kver.cpio.gz
if [ ! -e "$initrd" ] || [ "$here/init" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
        ird=$vmdir/initramfs.d
        rm -rf "$ird"
        mkdir -p "$ird/bin" "$ird/modules" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/lower" \
                 "$ird/upper" "$ird/newroot"
        cp "$busybox" "$ird/bin/busybox"
        cp "$here/init" "$ird/init"
        chmod 755 "$ird/init"
        # Dependencies first, as modprobe would load them.
        python3 - "$moddir" virtio_pci virtio_blk 9pnet_virtio 9p overlay > "$ird/modules/order" <<'PY'
import sys
moddir, wanted = sys.argv[1], sys.argv[2:]
deps = {}
for line in open(moddir + '/modules.dep'):
    mod, _, rest = line.partition(':')
    deps[mod] = rest.split()
byname = {m.rsplit('/', 1)[-1].split('.ko')[0].replace('-', '_'): m for m in deps}
order = []
def visit(m):
    if m in order:
        return
    for d in deps[m]:
        visit(d)
    order.append(m)
for w in wanted:
    if w in byname:
        visit(byname[w])
    # else: built into the kernel
for m in order:
    print(m)
PY
        while read -r m; do
                cp "$moddir/$m" "$ird/modules/"
        done < "$ird/modules/order"
        sed -i 's|.*/||' "$ird/modules/order"
        (cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.new"
        mv "$initrd.new" "$initrd"
        rm -rf "$ird"
fi
flock -u 9

# 3. This run's directory, shared writable with the guest at the same path:
#    the command, the staged install, and the results.
run=$(mktemp -d "$vmdir/run.XXXXXX")
cleanup() {
        [ "${PRESSURED_VM_KEEP:-0}" = 1 ] && { say "kept $run"; run=; }
        [ -n "${qpid:-}" ] && kill "$qpid" 2>/dev/null
        [ -n "$run" ] && rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

DESTDIR= meson install -C "$build" --no-rebuild --quiet --destdir "$run/destdir" >"$run/install.log" 2>&1 || {
        cat "$run/install.log" >&2
        say "meson install of $build failed"
        exit 125
}
printf '%s\0' "$@" > "$run/cmd"
{
        printf 'cd %q\n' "$(pwd)"
        while IFS='=' read -r -d '' name value; do
                case $name in
                PRESSURED_VM_*) ;;
                PRESSURED_*|PYTHONDONTWRITEBYTECODE) printf 'export %s=%q\n' "$name" "$value" ;;
                esac
        done < <(env -0)
        printf 'export PRESSURED_VM=1\n'
} > "$run/env"
truncate -s 4G "$run/scratch.img"

accel=${PRESSURED_VM_ACCEL:-auto}
if [ "$accel" = auto ]; then
        if grep -qw hypervisor /proc/cpuinfo || ! [ -r /dev/kvm -a -w /dev/kvm ]; then
                accel=tcg
        else
                accel=kvm
        fi
fi
case $accel in
kvm) machine=(-machine q35,accel=kvm -cpu "${PRESSURED_VM_CPU:-host}") ;;
tcg) machine=(-machine q35,accel=tcg -cpu "${PRESSURED_VM_CPU:-max}") ;;
*) say "PRESSURED_VM_ACCEL must be kvm, tcg or auto"; exit 2 ;;
esac

append="console=ttyS0 panic=-1 oops=panic loglevel=4 rdinit=/init"
append+=" pressured_vm.kver=$kver pressured_vm.run=$run pressured_vm.moddir=$moddir"
append+=" systemd.unified_cgroup_hierarchy=1 systemd.show_status=0"
append+=" systemd.run=$here/guest-run.sh systemd.run_success_action=poweroff"
append+=" systemd.run_failure_action=poweroff"

say "booting Debian $kver under $accel ($cpus CPUs, $memory MiB)"
start=$(date +%s.%N)
"$qemu" "${machine[@]}" -smp "$cpus" -m "$memory" \
        -nodefaults -display none -no-reboot -nic none \
        -serial "file:$run/console.log" \
        -kernel "$vmlinuz" -initrd "$initrd" -append "$append" \
        -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
        -virtfs "local,path=$run,mount_tag=pvmrun,security_model=none,multidevs=remap" \
        -drive "file=$run/scratch.img,if=virtio,format=raw,cache=unsafe,discard=unmap" \
        </dev/null >"$run/qemu.log" 2>&1 &
qpid=$!

booted=
deadline=$(( $(date +%s) + timeout_s ))
while kill -0 "$qpid" 2>/dev/null; do
        if [ -z "$booted" ] && [ -s "$run/booted" ]; then
                booted=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
                         "$start" "$(date +%s.%N)")
                say "booted to systemd in ${booted} s (guest uptime $(cat "$run/booted") s); running $1"
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
                say "timed out after $timeout_s s; killing qemu"
                kill "$qpid" 2>/dev/null
                wait "$qpid" 2>/dev/null
                qpid=
                tail -n 40 "$run/console.log" >&2
                [ -f "$run/stdout" ] && cat "$run/stdout"
                [ -f "$run/stderr" ] && cat "$run/stderr" >&2
                exit 124
        fi
        sleep 0.2
done
wait "$qpid" && qrc=0 || qrc=$?
qpid=
end=$(date +%s.%N)

[ -f "$run/stdout" ] && cat "$run/stdout"
[ -f "$run/stderr" ] && cat "$run/stderr" >&2
if [ ! -s "$run/status" ]; then
        if [ -z "$booted" ] && ! grep -q 'Linux version' "$run/console.log" 2>/dev/null; then
                cat "$run/qemu.log" >&2
                skip "qemu could not start a guest here (exit $qrc)"
        fi
        say "the VM stopped before the command ended (qemu exit $qrc); console:"
        tail -n 60 "$run/console.log" >&2
        [ -f "$run/guest.log" ] && cat "$run/guest.log" >&2
        exit 125
fi
say "VM ran $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$end") s in all"
exit "$(cat "$run/status")"
