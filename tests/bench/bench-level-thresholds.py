#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Level thresholds under real loads: which PSI triggers a load crosses, when, and in what order.

    tests/bench/bench-level-thresholds.py [--out DIR] [--runs N] [--only WORKLOADS] [--quick] [--vm]

Why: the level stream steps up to the highest level whose trigger fired.
With one task in a cgroup, `some` and `full` stall are the same, so
[Levels] Medium= and Critical= of equal threshold (0.4's `some 100ms 1s`
and `full 100ms 1s`) fire together and a one-task service goes from
normal straight to critical. This measures, for candidate [Levels] sets,
whether a load passes through medium before critical and whether critical
still comes under real thrashing.

Part one, the kernel's own answer: a holder process (this script with
--role holder) keeps one PSI trigger per threshold of a grid, plus GLib
2.86's and ChromeOS resourced's, on the load's pressure file, and
timestamps every notification of each (CLOCK_MONOTONIC). Each candidate
set (low, medium, critical) is judged from those times: when each of its
triggers first fired after the load started, and whether medium's first
notification came before critical's (in a turn of the kernel's poll of
its own, more than 5 ms before: the daemon takes notifications read
together as one change). Part two, the daemon itself: with each
candidate as its [Levels], a level stream on the one-task load's cgroup,
and the levels it went through.

Workloads:
  one-task  tests/pressured_test.py memory_load() (one shell loop: dd then
            cat of a 200 MB file, one process at a time) in a cgroup
            limited to 64M, for LOAD_S seconds; the cgroup's memory.pressure;
  build     this project's daemon and pressurectl built (meson setup, ninja
            -j2, cold page cache) in a cgroup limited to 80M in the VM, 72M
            here (tests/bench/bench-build.py's build); the cgroup's
            memory.pressure;
  thrash    the VM only: tests/bench/bench-thrash.py's hog leaving 96 and
            48 MiB of MemAvailable while 3 GiB of files are re-read for
            20 s each; /proc/pressure/memory.

Here (default): the hybrid host (v1 memory limit beside the cgroup2
directory), without CAP_SYS_RESOURCE, so every 1 s window is taken as the
daemon takes it, 2 s with the threshold doubled. --vm: the VM test bed
(tests/vm/run.sh, cgroup v2 memory.max, 1 s windows, the installed
pressured.service, whose [Levels] a drop-in sets, under TCG).

CSV: thresholds[-vm]-triggers.csv (per run and trigger: first
notification and count), thresholds[-vm]-candidates.csv (per run and
candidate), thresholds[-vm]-streams.csv (part two), thresholds[-vm]-info.csv.
Needs root. Never asserts on times.
"""
import importlib.util
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
VM_SOCKET = '/run/pressured/io.pressured'
SERVICE = 'pressured.service'
DROPIN = '/etc/pressured/pressured.conf.d/90-bench-level-thresholds.conf'
LOAD_S = {'here': 30.0, 'vm': 60.0}
STREAM_LOAD_S = {'here': 30.0, 'vm': 60.0}
BUILD_LIMIT = {'here': '72M', 'vm': '80M'}
BUILD_TARGETS = ['daemon/pressured', 'client/pressurectl/pressurectl']
BUILD_TIMEOUT = {'here': 900, 'vm': 3600}
THRASH_ROOMS = [96, 48]
THRASH_LOAD_S = 20
TOGETHER_US = 5000
WORKLOADS = ('one-task', 'build', 'thrash')

# The grid, per 1 s window (each becomes a 2 s window with twice the stall where 1 s is refused).
GRID = ([f'some {ms}ms 1s' for ms in (50, 70, 100, 150, 200, 300)] +
        [f'full {ms}ms 1s' for ms in (50, 100, 150, 200, 300, 500)])
# (name, low, medium, critical); the first is pressured 0.4's default, low-memory-monitor's levels.
CANDIDATES = [
    ('0.4', 'some 70ms 1s', 'some 100ms 1s', 'full 100ms 1s'),
    ('glib-2.86', 'some 70ms 2s', 'some 100ms 2s', 'full 100ms 2s'),
    ('chromeos', 'some 200ms 1s', 'full 50ms 1s', 'full 500ms 1s'),
    ('A', 'some 70ms 1s', 'some 100ms 1s', 'full 200ms 1s'),
    ('B', 'some 70ms 1s', 'some 150ms 1s', 'full 300ms 1s'),
    ('C', 'some 70ms 1s', 'some 100ms 1s', 'full 300ms 1s'),
    ('D', 'some 70ms 1s', 'some 150ms 1s', 'full 200ms 1s'),
]
TRIGGER_HEADER = ['where', 'workload', 'run', 'trigger', 'first_s', 'notifications', 'load_s', 'some_pct',
                  'full_pct']
CANDIDATE_HEADER = ['where', 'workload', 'run', 'candidate', 'low', 'medium', 'critical', 'low_s', 'medium_s',
                    'critical_s', 'medium_before_critical', 'gap_ms']
STREAM_HEADER = ['where', 'workload', 'run', 'candidate', 'levels', 'medium_before_critical', 'critical_s']


def parse_trigger(text):
    """'some 70ms 1s' -> (stall, threshold_us, window_us)."""
    stall, thr, win = text.split()

    def us(v):
        for unit, mult in (('ms', 1000), ('us', 1), ('s', 1000000)):
            if v.endswith(unit):
                return int(float(v[:-len(unit)]) * mult)
        return int(v)
    return stall, us(thr), us(win)


def kernel_form(text, privileged):
    """The trigger the kernel gets: as written, or (without CAP_SYS_RESOURCE) a window rounded up to a
    multiple of 2 s with the threshold scaled alike, as the daemon does."""
    stall, thr, win = parse_trigger(text)
    if not privileged and win % 2000000:
        new = (win + 1999999) // 2000000 * 2000000
        thr, win = thr * new // win, new
    return f'{stall} {thr} {win}'


def may_use_1s_windows():
    try:
        fd = os.open('/proc/pressure/memory', os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, b'some 100000 1000000\0')
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def all_triggers(privileged):
    texts = GRID + [t for c in CANDIDATES for t in c[1:]]
    out = []
    for t in texts:
        k = kernel_form(t, privileged)
        if k not in out:
            out.append(k)
    return out


# --- the holder (its own process) ---------------------------------------------------

def role_holder(path, triggers):
    """Hold each of @triggers on @path; print "ready"; timestamp every notification until stdin ends;
    print {trigger: [µs, ...]} as JSON."""
    bl.mlock_self()
    fds = {}
    for t in triggers:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        os.write(fd, t.encode() + b'\0')
        fds[fd] = t
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLPRI)
    p.register(0, select.POLLIN)
    times = {t: [] for t in triggers}
    print('ready', flush=True)
    while True:
        for fd, ev in p.poll():
            if fd == 0:
                json.dump(times, sys.stdout)
                print(flush=True)
                return
            if ev & select.POLLERR:
                raise SystemExit(f'the trigger {fds[fd]} failed (POLLERR)')
            times[fds[fd]].append(time.monotonic_ns() // 1000)


class Holder:
    def __init__(self, path, triggers):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--role', 'holder', path,
                                   json.dumps(triggers)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().strip()
        pt.check(line == 'ready', 'the trigger holder did not start', line, self.p.poll())

    def stop(self):
        self.p.stdin.close()
        out = self.p.stdout.read()
        self.p.wait(timeout=120)
        return json.loads(out)


def totals(path):
    """(some, full) total stall in µs of a pressure file."""
    out = {}
    with open(path) as f:
        for line in f:
            kind, *fields = line.split()
            out[kind] = int(dict(x.split('=') for x in fields)['total'])
    return out['some'], out['full']


def now_us():
    return time.monotonic_ns() // 1000


# --- part one: the grid --------------------------------------------------------------

def judge(where, workload, run, t0, times, privileged):
    rows = []
    for name, *levels in CANDIDATES:
        firsts = []
        for text in levels:
            ts = [t for t in times[kernel_form(text, privileged)] if t >= t0]
            firsts.append(ts[0] if ts else None)
        low, med, crit = firsts
        before = med is not None and (crit is None or med < crit - TOGETHER_US)
        gap = (crit - med) / 1000 if med is not None and crit is not None else ''
        rows.append([where, workload, run, name] + [kernel_form(t, privileged) for t in levels] +
                    [f'{(x - t0) / 1e6:.3f}' if x is not None else '' for x in firsts] +
                    [int(before), f'{gap:.1f}' if gap != '' else ''])
    return rows


def measure_grid(where, workload, run, path, triggers, privileged, run_load):
    """Hold the grid on @path while run_load() runs; the rows of both CSV files."""
    h = Holder(path, triggers)
    try:
        s0, f0 = totals(path)
        t0 = now_us()
        run_load()
        t1 = now_us()
        s1, f1 = totals(path)
    finally:
        times = h.stop()
    load_s = (t1 - t0) / 1e6
    some_pct = 100 * (s1 - s0) / (t1 - t0)
    full_pct = 100 * (f1 - f0) / (t1 - t0)
    trows = []
    for t in triggers:
        ts = [x for x in times[t] if x >= t0]
        trows.append([where, workload, run, t, f'{(ts[0] - t0) / 1e6:.3f}' if ts else '', len(ts),
                      f'{load_s:.1f}', f'{some_pct:.2f}', f'{full_pct:.2f}'])
    crows = judge(where, workload, run, t0, times, privileged)
    print(f'{workload} run {run}: {load_s:.0f} s, some {some_pct:.1f}%, full {full_pct:.1f}% of the time', flush=True)
    for r in crows:
        print(f'  {r[3]:>9}: low {r[7] or "-":>7} s, medium {r[8] or "-":>7} s, critical {r[9] or "-":>7} s, '
              f'medium first: {"yes" if r[10] else "no"} (gap {r[11] or "-"} ms)', flush=True)
    return trows, crows


def timed_load(v1dir, v2dir, seconds):
    def run():
        with pt.memory_load(v1dir, v2dir):
            time.sleep(seconds)   # the load's length, not a synchronisation
    return run


def load_bench_build():
    spec = importlib.util.spec_from_file_location('bench_build', os.path.join(here, 'bench-build.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Build:
    """bench-build.py's build of the daemon and pressurectl in a fresh memory-limited cgroup per run."""

    def __init__(self, where, scratch):
        self.bb = load_bench_build()
        self.where, self.scratch = where, scratch
        self.results = []
        self.src = os.path.join(scratch, 'src')
        shutil.rmtree(self.src, ignore_errors=True)
        os.makedirs(self.src)
        archive = subprocess.run(['git', '-C', pt.SOURCE_ROOT, 'archive', 'HEAD'], capture_output=True, check=True)
        subprocess.run(['tar', '-x', '-C', self.src], input=archive.stdout, check=True)

    def cgroup(self):
        return self.bb.Cgroup(self.bb.parse_size(BUILD_LIMIT[self.where]))

    def runner(self, cg):
        def run():
            self.bb.drop_caches()
            rc, wall = self.bb.build_once(self.src, self.scratch, cg, BUILD_TARGETS, BUILD_TIMEOUT[self.where])
            self.results.append(f'rc {rc} in {wall:.0f} s')
            print(f'build: rc {rc}, {wall:.1f} s', flush=True)
        return run

    def close(self):
        shutil.rmtree(self.src, ignore_errors=True)


def load_bench_thrash():
    spec = importlib.util.spec_from_file_location('bench_thrash', os.path.join(here, 'bench-thrash.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def thrash_runs(where, triggers, privileged, runs):
    """The VM's thrash steps, system-wide."""
    bt = load_bench_thrash()
    scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
    files = bt.make_files(scratch)
    hog = bt.Hog()
    trows, crows = [], []
    try:
        for run in range(1, runs + 1):
            for room in THRASH_ROOMS:
                if hog.killed():
                    hog.mib = 0
                want = hog.mib + max(0, bl.meminfo_kib('MemAvailable') // 1024 - room)
                if not hog.grow_to(want):
                    print(f'thrash: the hog did not reach {want} MiB; step skipped', flush=True)
                    continue

                def load():
                    p = subprocess.Popen(['sh', '-c', 'while :; do cat ' + ' '.join(files) + ' > /dev/null; done'],
                                         start_new_session=True)
                    time.sleep(THRASH_LOAD_S)   # the load's length, not a synchronisation
                    bt.kill_group(p)
                t, c = measure_grid(where, f'thrash-{room}M', run, '/proc/pressure/memory', triggers, privileged,
                                    load)
                trows += t
                crows += c
    finally:
        hog.stop()
        for f in files:
            os.unlink(f)
    return trows, crows


# --- part two: the daemon's level stream -------------------------------------------

class HereDaemon:
    where = 'here'

    def __init__(self):
        self.d = None

    def start(self, low, medium, critical):
        cfg = f'[Levels]\nLow={low}\nMedium={medium}\nCritical={critical}\n'
        self.d = bl.daemon(extra_config=cfg)
        self.d.__enter__()
        return self.d.socket

    def stop(self):
        self.d.__exit__(None, None, None)
        self.d = None


class VMDaemon:
    where = 'vm'

    def start(self, low, medium, critical):
        os.makedirs(os.path.dirname(DROPIN), exist_ok=True)
        with open(DROPIN, 'w') as f:
            f.write(f'[Levels]\nLow={low}\nMedium={medium}\nCritical={critical}\n')
        subprocess.run(['systemctl', 'restart', SERVICE], check=True)
        return VM_SOCKET

    def stop(self):
        os.unlink(DROPIN)
        subprocess.run(['systemctl', 'stop', SERVICE], check=False)


def follow_stream(sock, cgroup, seconds, start_load):
    """A level stream on @cgroup while the load runs @seconds, and until it is back at normal (at most
    60 s); returns [(µs, level), ...] from the load's start."""
    v = pt.Varlink(sock, timeout=120)
    levels = []
    try:
        v.call('io.pressured.Subscribe', {'cgroup': cgroup, 'levels': True}, more=True)
        first = v.recv()['parameters']['event']
        levels.append((now_us(), first['level']))
        with start_load():
            t0 = now_us()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    ev = v.recv(timeout=max(end - time.monotonic(), 0.01))['parameters']['event']
                except TimeoutError:
                    break
                levels.append((now_us(), ev['level']))
        end = time.monotonic() + 60
        while levels[-1][1] != 'normal' and time.monotonic() < end:
            try:
                ev = v.recv(timeout=max(end - time.monotonic(), 0.01))['parameters']['event']
            except TimeoutError:
                break
            levels.append((now_us(), ev['level']))
    finally:
        v.close()
    return [(t - t0, lv) for t, lv in levels]


def stream_row(where, workload, run, name, levels):
    names = [lv for _, lv in levels]
    med = names.index('medium') if 'medium' in names else None
    crit = names.index('critical') if 'critical' in names else None
    crit_s = f'{max(levels[crit][0], 0) / 1e6:.3f}' if crit is not None else ''
    before = med is not None and (crit is None or med < crit)
    print(f'  stream {name:>9}: {" > ".join(names)}', flush=True)
    return [where, workload, run, name, '>'.join(names), int(before), crit_s]


def streams(daemon, runs):
    rows = []
    for run in range(1, runs + 1):
        for name, low, medium, critical in CANDIDATES:
            sock = daemon.start(low, medium, critical)
            try:
                with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limited=True) as (cg, v1dir, v2dir):
                    levels = follow_stream(sock, cg, STREAM_LOAD_S[daemon.where],
                                           lambda: pt.memory_load(v1dir, v2dir))
            finally:
                daemon.stop()
            rows.append(stream_row(daemon.where, 'one-task', run, name, levels))
    return rows


# --- the whole run -----------------------------------------------------------------

def measure_all(args, where, emit=None):
    """Every part; @emit(trows, crows, srows, builds), if given, after each workload with what was
    measured so far (a VM that dies later keeps it)."""
    privileged = may_use_1s_windows()
    triggers = all_triggers(privileged)
    only = args.only.split(',') if args.only else [w for w in WORKLOADS if where == 'vm' or w != 'thrash']
    print(f'{where}: 1 s windows {"allowed" if privileged else "refused (2 s, threshold doubled)"}; '
          f'{len(triggers)} triggers; workloads {", ".join(only)}; {args.runs} runs', flush=True)
    trows, crows, srows = [], [], []
    builds = []
    if 'one-task' in only:
        for run in range(1, args.runs + 1):
            with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limited=True) as (_, v1dir, v2dir):
                t, c = measure_grid(where, 'one-task', run, os.path.join(v2dir, 'memory.pressure'), triggers,
                                    privileged, timed_load(v1dir, v2dir, LOAD_S[where]))
            trows += t
            crows += c
        if emit:
            emit(privileged, trows, crows, srows, builds)
    if 'build' in only:
        scratch = os.path.join(os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp'),
                               f'pressured-bench-thresholds-{os.getpid()}')
        os.makedirs(scratch, exist_ok=True)
        b = Build(where, scratch)
        try:
            for run in range(1, args.runs + 1):
                cg = b.cgroup()
                try:
                    t, c = measure_grid(where, 'build', run, os.path.join(cg.v2, 'memory.pressure'), triggers,
                                        privileged, b.runner(cg))
                finally:
                    cg.remove()
                trows += t
                crows += c
        finally:
            builds = b.results
            b.close()
            shutil.rmtree(scratch, ignore_errors=True)
        if emit:
            emit(privileged, trows, crows, srows, builds)
    if 'thrash' in only and where == 'vm':
        t, c = thrash_runs(where, triggers, privileged, args.runs)
        trows += t
        crows += c
        if emit:
            emit(privileged, trows, crows, srows, builds)
    if 'streams' in only or not args.only:
        srows = streams(VMDaemon() if where == 'vm' else HereDaemon(), args.runs)
    return privileged, trows, crows, srows, builds


def report(where, privileged, trows, crows, srows, builds, emit, args):
    sfx = '-vm' if where == 'vm' else ''
    with open('/proc/loadavg') as f:
        load = f.read().split()[0]
    info = [['where', where], ['kernel', os.uname().release], ['cpus', os.cpu_count()],
            ['memtotal_kib', bl.meminfo_kib('MemTotal')], ['windows_1s', int(privileged)], ['runs', args.runs],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_end', load],
            ['builds', '; '.join(builds)], ['build_limit', BUILD_LIMIT[where]]]
    emit(f'thresholds{sfx}-triggers.csv', TRIGGER_HEADER, trows)
    emit(f'thresholds{sfx}-candidates.csv', CANDIDATE_HEADER, crows)
    emit(f'thresholds{sfx}-streams.csv', STREAM_HEADER, srows)
    emit(f'thresholds{sfx}-info.csv', ['key', 'value'], info)


def guest(args):
    args.runs = args.runs or (1 if args.quick else 3)
    pt.require_root('the VM test bed runs as root')
    if not bl.in_vm():
        pt.skip('--guest runs inside tests/vm/run.sh (PRESSURED_VM=1)')
    bl.mlock_self()

    def emit(privileged, trows, crows, srows, builds):
        report('vm', privileged, trows, crows, srows, builds, bl.emit_csv, args)
    emit(*measure_all(args, 'vm', emit))


def host(args):
    args.runs = args.runs or (1 if args.quick else 3)
    pt.require_root('real cgroups and PSI')
    if args.vm:
        load0 = bl.loadavg()
        fwd = ['--guest', '--runs', str(args.runs)] + (['--only', args.only] if args.only else [])
        rc = bl.run_in_vm(__file__, fwd, args.out, 4 * 3600)
        with open(os.path.join(args.out, 'thresholds-vm-host.csv'), 'w') as f:
            f.write(f'key,value\nhost_load_start,{load0}\nhost_load_end,{bl.loadavg()}\n')
        sys.exit(rc)
    privileged, trows, crows, srows, builds = measure_all(args, 'here')
    report('here', privileged, trows, crows, srows, builds, lambda n, h, r: bl.write_csv(args.out, n, h, r), args)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == '--role':
        role_holder(sys.argv[3], json.loads(sys.argv[4]))
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))

    def options(p):
        p.add_argument('--runs', type=int, default=None, help='runs of each workload (default 3, quick 1)')
        p.add_argument('--only', default='', help='a comma-separated list of one-task, build, thrash, streams')
        p.add_argument('--vm', action='store_true', help='run in the VM test bed')
    bl.vm_main(__doc__.splitlines()[0], guest, host, options)


if __name__ == '__main__':
    main()
