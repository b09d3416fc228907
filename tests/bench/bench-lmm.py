#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Side by side with low-memory-monitor: the same GLib client, the same pressure.

    tests/bench/bench-lmm.py [--out DIR] [--runs N] [--idle S] [--load S] [--only lmm|pressured]

Boots the VM test bed (tests/vm/run.sh: Debian 12, 2 GiB, systemd, the
project installed by its shipped units, the system bus running) and runs
there with --guest. Two providers of org.freedesktop.LowMemoryMonitor, one
at a time, alternating, --runs times each (default 3):

  low-memory-monitor  Debian's package (2.1), its shipped unit. Its levels,
                      from its source: low = some 70 ms per 1 s window,
                      medium = some 100 ms / 1 s, critical = full 100 ms /
                      1 s on /proc/pressure/memory; a level is signalled
                      again only 15 s after the last time.
  pressured           the shipped pressured.service with a drop-in
                      [DBus] LowMemoryMonitor=yes and the default [Levels]
                      (the same three triggers).

In each run, GLib's own GMemoryMonitor (tests/vm/glib-memory-monitor.py,
GIO_USE_MEMORY_MONITOR=dbus, python3-gi) listens, and:

  idle   after 20 s of rest, the provider's context switches over --idle
         seconds (default 60) with no pressure: voluntary ones (each is a
         wakeup that went back to sleep) summed over all its threads from
         /proc/PID/task/*/status, and its memory from /proc/PID/smaps_rollup
         (Pss, Rss, Pss_Anon) at the end.
  load   a direct PSI reader (its own trigger `some 70000 1000000` on
         /proc/pressure/memory: the low level of both) is started, then a
         page-cache loop in a cgroup with memory.max 48M (write a 160 MiB
         file on the scratch disk, read it twice, again) for --load seconds
         (default 20). The latency of a run is from the reader's first
         wakeup to the GLib client's first low-memory-warning callback
         (CLOCK_MONOTONIC in both processes); also the first callback of
         level 50, and the callbacks and wakeups during the load.

The provider is stopped after each run, and the next run waits until the
system's memory `some` avg10 is below 1%. Each is measured as its unit
ships (pressured.service sets no WatchdogSec=). If the installed pressured
has no LowMemoryMonitor= key (pressured --dump-config), only
low-memory-monitor is measured, and the CSV says so.

CSV files: lmm-runs.csv (one line per run and provider), lmm-info.csv.
Needs root. Never asserts on times.
"""
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
CGROOT = '/sys/fs/cgroup'
LOAD_CG = os.path.join(CGROOT, 'bench-lmm')
LOAD_MAX = 48 << 20
LOAD_MB = 160
NAME = 'org.freedesktop.LowMemoryMonitor'
SERVICE = 'pressured.service'
LMM_SERVICE = 'low-memory-monitor.service'
DROPIN = os.path.join(bl.pt.install_dir('sysconfdir'), 'pressured/pressured.conf.d/90-bench-lmm.conf')
TRIGGER_TEXT = 'some 70000 1000000'
GLIB_CLIENT = os.path.join(here, '..', 'vm', 'glib-memory-monitor.py')
# GLib's worker threads end 15 s after their last task: let start-up settle.
REST_S = 20.0
QUIET_AVG10 = 1.0
HEADER = ['provider', 'run', 'idle_s', 'idle_wakeups', 'idle_switches', 'wakeups_per_min', 'threads',
          'pss_kib', 'rss_kib', 'pss_anon_kib', 'load_s', 'direct_wakeups', 'callbacks', 'levels',
          'first_ms', 'first_level', 'first50_ms', 'steady50_ms']


def steady_latency(calls, direct):
    """The median, over the level-50 callbacks of a load, of the time from the direct reader's
    last wakeup before the callback (within half a second: the same kernel poll) to the callback,
    in ms; '' when none matched. The first callback pays for whatever was cold; these do not."""
    lat = []
    for level, t in calls:
        before = [d for d in direct if d <= t]
        if level == 50 and before and t - before[-1] < 500_000:
            lat.append((t - before[-1]) / 1000)
    return f'{statistics.median(lat):.1f}' if lat else ''


# --- helpers --------------------------------------------------------------------

def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} exited {r.returncode}: {r.stderr.strip()}')
    return r.stdout.strip()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def name_owned():
    out = sh('busctl', '--system', 'call', 'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
             'NameHasOwner', 's', NAME)
    return out == 'b true'


def thread_switches(pid):
    """{tid: (voluntary, all)} context switches of each thread of @pid."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        vol = nonvol = 0
        try:
            with open(f'/proc/{pid}/task/{tid}/status') as f:
                for line in f:
                    if line.startswith('voluntary_ctxt_switches:'):
                        vol = int(line.split()[1])
                    elif line.startswith('nonvoluntary_ctxt_switches:'):
                        nonvol = int(line.split()[1])
        except FileNotFoundError:
            continue
        out[tid] = (vol, vol + nonvol)
    return out


def idle_switches(pid, seconds):
    """(voluntary, all) context switches of @pid's threads over @seconds, sampled each second so that a
    thread that starts or ends in between counts with what it did while we saw it (from 0 if it started)."""
    first, last = thread_switches(pid), {}
    end = time.monotonic() + seconds
    while True:
        for tid, v in thread_switches(pid).items():
            last[tid] = v
        left = end - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(1.0, left))
    vol = sum(v[0] - first.get(tid, (0, 0))[0] for tid, v in last.items())
    total = sum(v[1] - first.get(tid, (0, 0))[1] for tid, v in last.items())
    return vol, total


def rollup(pid):
    out = {}
    with open(f'/proc/{pid}/smaps_rollup') as f:
        for line in f:
            k, _, v = line.partition(':')
            if v.strip().endswith('kB'):
                out[k] = int(v.split()[0])
    return out


def some_avg10():
    with open('/proc/pressure/memory') as f:
        return float(f.readline().split()[1].split('=')[1])


def has_lmm_key():
    r = subprocess.run(['pressured', '--dump-config'], capture_output=True, text=True)
    return 'LowMemoryMonitor' in r.stdout


# --- the providers ------------------------------------------------------------------

class Provider:
    def __init__(self, name):
        self.name = name

    def start(self):
        if self.name == 'low-memory-monitor':
            sh('systemctl', 'unmask', '--runtime', LMM_SERVICE)
            sh('systemctl', 'start', LMM_SERVICE)
            unit = LMM_SERVICE
        else:
            write(DROPIN, '[DBus]\nLowMemoryMonitor=yes\n')
            sh('systemctl', 'daemon-reload')
            sh('systemctl', 'start', SERVICE)
            unit = SERVICE
        pt.wait_for(name_owned, timeout=120, interval=0.1, what=f'{NAME} owned by {self.name}')
        self.pid = int(sh('systemctl', 'show', '-P', 'MainPID', unit))
        return self.pid

    def stop(self):
        if self.name == 'low-memory-monitor':
            sh('systemctl', 'mask', '--runtime', '--now', LMM_SERVICE, check=False)
        else:
            sh('systemctl', 'stop', SERVICE, check=False)
            if os.path.exists(DROPIN):
                os.unlink(DROPIN)
            sh('systemctl', 'daemon-reload', check=False)
        pt.wait_for(lambda: not name_owned(), timeout=120, interval=0.1, what=f'{NAME} released')


class GLibClient:
    """tests/vm/glib-memory-monitor.py; its callbacks as (level, monotonic µs), read by a thread."""

    def __init__(self):
        self.p = subprocess.Popen(['/usr/bin/python3', GLIB_CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=dict(os.environ, GIO_USE_MEMORY_MONITOR='dbus'))
        r, _, _ = select.select([self.p.stdout], [], [], 120)
        line = self.p.stdout.readline().strip() if r else ''
        pt.check(line == 'ready', 'the GLib client did not start', line, self.p.poll())
        self.calls = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            level, t = line.split()
            with self.lock:
                self.calls.append((int(level), int(t)))

    def since(self, t_us):
        with self.lock:
            return [c for c in self.calls if c[1] >= t_us]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)
        self.t.join(timeout=10)


def role_direct():
    """The direct reader: the low level's trigger, each POLLPRI timestamped; the list on stdout at EOF of stdin."""
    json.dump(bl.direct_psi_reader(TRIGGER_TEXT), sys.stdout)
    print(flush=True)


def load_start():
    os.makedirs(LOAD_CG, exist_ok=True)
    write(os.path.join(LOAD_CG, 'memory.max'), str(LOAD_MAX))
    scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
    f = os.path.join(scratch, 'bench-lmm-load')
    script = (f'while :; do dd if=/dev/zero of={f} bs=1M count={LOAD_MB} status=none; '
              f'cat {f} > /dev/null; cat {f} > /dev/null; rm -f {f}; done')

    def enter():
        write(os.path.join(LOAD_CG, 'cgroup.procs'), str(os.getpid()))
    return subprocess.Popen(['sh', '-c', script], preexec_fn=enter, start_new_session=True)


def load_stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    procs = os.path.join(LOAD_CG, 'cgroup.procs')
    pt.wait_for(lambda: not open(procs).read().strip(), timeout=120, interval=0.1, what='the load to end')


# --- one run --------------------------------------------------------------------------

def one_run(prov, run, args):
    pt.wait_for(lambda: some_avg10() < QUIET_AVG10, timeout=300, interval=1.0, what='the system quiet')
    pid = prov.start()
    client = GLibClient()
    try:
        time.sleep(REST_S)
        t0 = time.monotonic()
        vol, total = idle_switches(pid, args.idle)
        idle = time.monotonic() - t0
        mem = rollup(pid)
        threads = len(os.listdir(f'/proc/{pid}/task'))
        row = [prov.name, run, f'{idle:.1f}', vol, total,
               f'{vol * 60 / idle:.1f}', threads, mem.get('Pss', 0), mem.get('Rss', 0),
               mem.get('Pss_Anon', 0)]
        reader = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--role', 'direct'],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = reader.stdout.readline().strip()
        pt.check(line == 'ready', 'the direct reader did not start', line)
        start_us = time.monotonic_ns() // 1000
        lp = load_start()
        try:
            time.sleep(args.load)
        finally:
            load_stop(lp)
            reader.stdin.close()
            direct = json.loads(reader.stdout.read())
            reader.wait(timeout=60)
        time.sleep(2.0)
        calls = client.since(start_us)
        direct = [t for t in direct if t >= start_us]
        first = first50 = ''
        first_level = ''
        if direct and calls:
            first = f'{(calls[0][1] - direct[0]) / 1000:.1f}'
            first_level = calls[0][0]
            c50 = [c for c in calls if c[0] == 50]
            if c50:
                first50 = f'{(c50[0][1] - direct[0]) / 1000:.1f}'
        levels = ' '.join(str(c[0]) for c in calls)
        return row + [args.load, len(direct), len(calls), levels, first, first_level, first50,
                      steady_latency(calls, direct)]
    finally:
        client.close()
        prov.stop()
        scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
        try:
            os.unlink(os.path.join(scratch, 'bench-lmm-load'))
        except FileNotFoundError:
            pass


def guest(args):
    pt.require_root('the VM test bed runs as root')
    if not bl.in_vm():
        pt.skip('runs inside tests/vm/run.sh (PRESSURED_VM=1)')
    bl.mlock_self()
    write(os.path.join(CGROOT, 'cgroup.subtree_control'), '+memory')
    # Neither provider may run while the other is measured; socket activation would start pressured.
    sh('systemctl', 'stop', SERVICE, check=False)
    names = ['low-memory-monitor', 'pressured']
    if args.only:
        names = [{'lmm': 'low-memory-monitor'}.get(args.only, args.only)]
    pressured_ok = has_lmm_key()
    if not pressured_ok and 'pressured' in names:
        print('the installed pressured has no [DBus] LowMemoryMonitor=: measuring low-memory-monitor alone',
              flush=True)
        names.remove('pressured')
    info = [['kernel', os.uname().release], ['cpus', os.cpu_count()], ['memtotal_kib', bl.meminfo_kib('MemTotal')],
            ['lmm_version', sh('dpkg-query', '-W', '-f=${Version}', 'low-memory-monitor', check=False)],
            ['glib_version', sh('dpkg-query', '-W', '-f=${Version}', 'libglib2.0-0', check=False)],
            ['pressured_lmm', 'yes' if pressured_ok else 'no'], ['trigger', TRIGGER_TEXT],
            ['load', f'{LOAD_MB} MiB page-cache loop, memory.max {LOAD_MAX >> 20}M'],
            ['idle_s', args.idle], ['load_s', args.load], ['runs', args.runs]]
    rows = []
    try:
        for run in range(1, args.runs + 1):
            # Alternate which goes first.
            for name in (names if run % 2 else list(reversed(names))):
                t0 = time.monotonic()
                row = one_run(Provider(name), run, args)
                rows.append(row)
                print(f'{name} run {run} ({time.monotonic() - t0:.0f} s): ' + ', '.join(
                    f'{h}={v}' for h, v in zip(HEADER, row)), flush=True)
    finally:
        bl.emit_csv('lmm-runs.csv', HEADER, rows)
        bl.emit_csv('lmm-info.csv', ['key', 'value'], info)
        try:
            os.rmdir(LOAD_CG)
        except OSError:
            pass


def host(args):
    start = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    fwd = ['--guest', '--runs', str(args.runs), '--idle', str(args.idle), '--load', str(args.load)]
    if args.only:
        fwd += ['--only', args.only]
    os.makedirs(args.out, exist_ok=True)
    rc = bl.run_in_vm(__file__, fwd, args.out, 1800)
    with open(os.path.join(args.out, 'lmm-host.csv'), 'w') as f:
        f.write(f'key,value\ndate,{start}\nhost_load_end,{bl.loadavg()}\n')
    sys.exit(rc)


def main():
    if sys.argv[1:3] == ['--role', 'direct']:
        role_direct()
        return

    def options(p):
        p.add_argument('--runs', type=int, default=3)
        p.add_argument('--idle', type=float, default=60.0)
        p.add_argument('--load', type=float, default=20.0)
        p.add_argument('--only', choices=('lmm', 'pressured'))
    bl.vm_main(__doc__.splitlines()[0], guest, host, options)

if __name__ == '__main__':
    main()
