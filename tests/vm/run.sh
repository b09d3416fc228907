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
# Two guests (PRESSURED_VM_GUEST):
#   bookworm  (default) the VM's root is this machine's own root, as above:
#             Debian 12, systemd 252.
#   sid       Debian sid, systemd 262 or later as PID 1, GLib 2.90: the root
#             is a tree made by sid-root.sh (debootstrap from the Debian
#             mirror this machine uses; its header lists the packages),
#             kept in $PRESSURED_VM_CACHE/sid-<hash of sid-root.sh>
#             (default /var/cache/pressured-vm) and made anew when
#             sid-root.sh changes. Of this machine's files only the source
#             tree, the build directory, the working directory and the
#             colon-separated paths of PRESSURED_VM_BIND are there, at the
#             same paths, each under an overlay in the VM's memory. The
#             project is installed the same way; the guest's own units and
#             services are as its packages set them up (systemd-oomd runs).
#             The guest checks that it runs systemd >= 262. Where the
#             mirror cannot give a tree (sid moves daily and can be half-way
#             through a transition) the run is skipped (77, or TAP) saying
#             why.
#
# Environment:
#   PRESSURED_BUILD_ROOT  build directory to install (default: ./build of
#                         the source tree); the kernel is cached in its vm/
#   PRESSURED_VM_GUEST    bookworm (default) or sid
#   PRESSURED_VM_CACHE    where the sid tree is kept (default
#                         /var/cache/pressured-vm)
#   PRESSURED_VM_BIND     more host paths for the sid guest (colon-separated)
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
#   - When CMD has ended and its results are on this machine, the VM powers
#     off at once (systemctl poweroff -ff): stopping what the checks left
#     running took up to 40 s under TCG.
# The sid guest, measured the same way (see also
# /work/shared/research/newer-systemd.md for how it was found to work):
#   - sid-root.sh takes 1-1.5 min (debootstrap --variant=minbase, about
#     110 packages, 50 MB from the mirror) and leaves a tree of about 230 MB.
#   - It boots Debian 12's kernel (the one above) with the same initramfs,
#     the tree read-only over 9p under an overlay, like the bookworm guest.
#   - systemd 262's systemd.run= alone boots only to sysinit.target: no
#     system bus, no systemd-run --wait. The command line adds
#     systemd.wants=basic.target.
#   - Each boot would rerun ldconfig, sysusers and the catalog update
#     (about 6 s) because the overlay is new: sid-root.sh runs
#     systemd-update-done in the tree once.
#   - sid mounts tmpfs on /tmp (tmp.mount, masked in the tree so that a
#     checkout in /tmp stays visible) and /run (always: nothing of the
#     host's may live there).
#   - sid's dbus-daemon does not read /usr/local/share/dbus-1/system.d,
#     where a build for /usr/local puts pressured's bus policy: guest-run.sh
#     includes it from /etc/dbus-1/system-local.conf, as the administrator
#     of such an install does.
#   - Boot to systemd running the command: 15-73 s of guest uptime (18-109 s
#     of wall time) on the shared 2-CPU development machine at a load of 2-14,
#     then 25-45 s for mkfs, the install, ldconfig and daemon-reload. The
#     vm-sid checks took 65-136 s in the guest, the whole test 1.7-4.7
#     minutes with the tree cached.
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

guest=${PRESSURED_VM_GUEST:-bookworm}
case $guest in
bookworm|sid) ;;
*) say "PRESSURED_VM_GUEST must be bookworm or sid"; exit 2 ;;
esac

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

# 3. The sid guest's root: made by sid-root.sh once and kept in the cache
#    under a name with the hash of sid-root.sh (which holds the package
#    list), so that a change there makes a new tree. Each run touches
#    sid-<hash>.used; a tree of another hash unused for a day is removed
#    (another checkout on this machine may still use a recent one).
if [ "$guest" = sid ]; then
        cache=${PRESSURED_VM_CACHE:-/var/cache/pressured-vm}
        mkdir -p "$cache"
        cache=$(cd "$cache" && pwd)
        key=$(sha256sum "$here/sid-root.sh" | cut -c1-16)
        tree=$cache/sid-$key
        exec 8>"$cache/.lock"
        flock 8
        for old in "$cache"/sid-*.used; do
                [ -e "$old" ] && [ "$old" != "$tree.used" ] || continue
                [ -n "$(find "$old" -mmin +1440)" ] || continue
                rm -rf --one-file-system "${old%.used}"
                rm -f "$old"
        done
        if [ ! -s "$tree/.pressured-vm-systemd" ]; then
                # What a failed attempt left (debootstrap's mounts, then the tree).
                grep -o " $tree[./][^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l || true
                rm -rf --one-file-system "$tree" "$tree.new"
                say "making the sid tree $tree (debootstrap from the Debian mirror)"
                made=$(date +%s)
                rc=0
                "$here/sid-root.sh" "$tree.new" >&2 2>"$vmdir/sid-root.log" || rc=$?
                if [ $rc -ne 0 ]; then
                        cat "$vmdir/sid-root.log" >&2
                        reason=$(tail -n1 "$vmdir/sid-root.log")
                        [ $rc -eq 2 ] && skip "no sid guest: ${reason#sid-root.sh: }"
                        say "sid-root.sh failed (exit $rc)"
                        exit 125
                fi
                mv "$tree.new" "$tree"
                say "made the sid tree in $(( $(date +%s) - made )) s"
        fi
        touch "$tree.used"
        flock -u 8
        systemd_version=$(cat "$tree/.pressured-vm-systemd")
        case $systemd_version in
        (26[2-9]*|2[7-9][0-9]*|[3-9][0-9][0-9]*) ;;
        (*) say "the sid tree $tree has systemd $systemd_version, need >= 262"; exit 125 ;;
        esac
fi

# 4. This run's directory, shared writable with the guest at the same path:
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
        printf 'export PRESSURED_VM=1 PRESSURED_VM_GUEST=%s\n' "$guest"
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
append+=" pressured_vm.guest=$guest systemd.show_status=0"
append+=" systemd.run=$here/guest-run.sh systemd.run_success_action=poweroff"
append+=" systemd.run_failure_action=poweroff"
guestroot=()
if [ "$guest" = sid ]; then
        # systemd.run= alone reaches only sysinit.target in systemd 262: no
        # system bus, no systemd-run --wait.
        append+=" systemd.wants=basic.target"
        # The host's paths the command needs, at the same paths: parents first.
        binds=
        for p in $(printf '%s\n' "$top" "$build" "$(pwd)" $(tr : " " <<<"${PRESSURED_VM_BIND:-}") | awk '{ print length, $0 }' |
                   sort -n | cut -d' ' -f2-); do
                case ",$binds" in *",$p,"*) continue ;; esac
                [ "$p" != / ] || continue
                under=
                for b in ${binds//,/ }; do
                        case $p/ in "$b"/*) under=1 ;; esac
                done
                [ -n "$under" ] || binds+="$p,"
        done
        append+=" pressured_vm.bind=${binds%,}"
        guestroot=(-virtfs "local,path=$tree,mount_tag=guestroot,security_model=none,readonly=on,multidevs=remap")
else
        append+=" systemd.unified_cgroup_hierarchy=1"
fi

say "booting Debian $guest ($kver) under $accel ($cpus CPUs, $memory MiB)"
start=$(date +%s.%N)
"$qemu" "${machine[@]}" -smp "$cpus" -m "$memory" \
        -nodefaults -display none -no-reboot -nic none \
        -serial "file:$run/console.log" \
        -kernel "$vmlinuz" -initrd "$initrd" -append "$append" \
        -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
        "${guestroot[@]}" \
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
