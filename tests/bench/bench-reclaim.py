#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Proactive reclaim ([Reclaim] of pressured.conf): what a memory.reclaim
write costs, what the controller saves, and what it costs the daemon.

    tests/bench/bench-reclaim.py [--out DIR] [--runs N] [--duration S] [--duration-b S]
                                 [--only latency,a,b,bdisk,c] [--interval T] [--min-size SIZE]
    tests/bench/bench-reclaim.py --cost [--out DIR] [--cgroups N]

Without --cost it boots the VM test bed (tests/vm/run.sh: Debian 12's 6.1
kernel, cgroup v2 with the memory controller, the project installed and run
by its shipped units) and runs there with --guest. It adds a 1 GiB swap
file on the scratch disk, then:

  latency: a cgroup holding 1 GiB of clean page cache (a file on the scratch
    disk read inside it), and one holding 768 MiB of anonymous memory; on
    each, five memory.reclaim writes of 1% of memory.current, of 10 MiB and
    of 100 MiB, each timed (the write blocks until the kernel reclaimed the
    amount or gave up with EAGAIN).
  a: a reader of a large cold data set (600 MiB on the scratch disk, read
    once) that then reads a small hot set (48 MiB) over and over;
    throughput: hot-set MiB read per second. Beside it, outside the
    controlled cgroups, a reference reader reads its own 48 MiB file the
    same way: under TCG the host moves every throughput by tens of percent
    from run to run, and the ratio of the two cancels what moves both.
  b: this project's build in a loop (the source of HEAD, configured once on
    the scratch disk; `ninja -t clean` and `ninja -j2` again and again);
    throughput: build steps completed per second.
  c: a service holding cold anonymous memory (480 MiB, touched once) that
    keeps working on 32 MiB of it, with the swap file; throughput: passes
    over the hot part per second. Python's mmap.mmap(-1, n) maps it shared:
    it is swap-backed and on the anonymous LRU like private memory, but
    memory.stat counts it as shmem, under "file", not "anon".

Each workload runs in a fresh leaf of /bench-reclaim, with the page cache
dropped before; once it reached its steady part (cold set read, anonymous
memory touched: start_s) it runs for --duration seconds (default 45; for
the build --duration-b, default 60), once with the controller off (no
[Reclaim] Cgroups=) and once on (a drop-in with Cgroups=/bench-reclaim/*,
Interval=--interval, default 1s: six times the default pace, so that a
one-minute run shows what six would, and MinSize=--min-size, default 32M:
the VM has 2 GiB and these workloads hold hundreds of MiB, not the GiBs
the default 100M floor is meant for), alternating off/on, --runs times
each (default 3). Every second it samples memory.current; over the run
the cgroup's memory and io `some` stall totals. The on-runs also read the
daemon's GetStatus `reclaim` entry at the end.

--cost runs here (no VM): a fake cgroup2 tree (make-fake-cgroup-tree.py
--flat N, default 100) where memory.reclaim is a plain file, a daemon with
[Reclaim] Cgroups= matching all of them and Interval=1s, and the daemon's
on-CPU time over 60 intervals after a warm-up: CPU per interval, and per
interval per cgroup.

Besides memory.current it samples memory.stat every second (file and
anonymous memory, active and inactive file: their averages over the run)
and reports over the run the cgroup's workingset refaults (file and
anonymous), the VM's pages swapped in and out (/proc/vmstat), the swap the
cgroup holds at the end, and the CPU time of the workload's cgroup and of
pressured.service (where the memory.reclaim writes run).

CSV files: reclaim-latency.csv, reclaim-runs-W@INTERVAL.csv (one line per
run of workload W), reclaim-series-W@INTERVAL.csv (its samples),
reclaim-cost.csv, reclaim-info.csv.
Needs root. Never asserts on times.
"""
import json
import mmap
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
MIB = 1 << 20
CGROOT = '/sys/fs/cgroup'
PARENT = 'bench-reclaim'
SOCKET = '/run/pressured/io.pressured'
SERVICE = 'pressured.service'
DROPIN = os.path.join(bl.pt.install_dir('sysconfdir'), 'pressured/pressured.conf.d/90-bench-reclaim.conf')
PAGE = os.sysconf('SC_PAGE_SIZE')
COLD_MB, HOT_MB = 600, 48
ANON_COLD_MB, ANON_HOT_MB = 480, 32
LAT_CACHE_MB, LAT_ANON_MB = 1024, 768
# Under TCG the whole tree takes about 1,000 s to build; the daemon and the client, a fraction.
BUILD_TARGETS = 'daemon/pressured client/pressurectl/pressurectl'
SWAP_MB = 1024


# --- small helpers ------------------------------------------------------------

def cg(name=''):
    return os.path.join(CGROOT, PARENT, name) if name else os.path.join(CGROOT, PARENT)


def read(path):
    with open(path) as f:
        return f.read().strip()


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def stall_totals(d):
    """(memory some total, io some total) of cgroup dir @d, in microseconds."""
    out = []
    for res in ('memory', 'io'):
        line = read(os.path.join(d, f'{res}.pressure')).splitlines()[0]
        out.append(int(line.split('total=')[1]))
    return out


def spawn_in(d, cmd, **kw):
    def enter():
        write(os.path.join(d, 'cgroup.procs'), str(os.getpid()))
    return subprocess.Popen(cmd, preexec_fn=enter, start_new_session=True, **kw)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def rm_cgroup(d):
    if not os.path.isdir(d):
        return
    for sub in os.listdir(d):
        if os.path.isdir(os.path.join(d, sub)):
            rm_cgroup(os.path.join(d, sub))
    for p in read(os.path.join(d, 'cgroup.procs')).split():
        try:
            os.kill(int(p), signal.SIGKILL)
        except ProcessLookupError:
            pass
    pt.wait_for(lambda: not read(os.path.join(d, 'cgroup.procs')), timeout=120, interval=0.1,
                what=f'{d} to empty')

    def gone():
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True
    pt.wait_for(gone, timeout=120, interval=0.1, what=f'rmdir {d}')


def drop_caches():
    subprocess.run(['sync'], check=True)
    write('/proc/sys/vm/drop_caches', '3')


def make_file(path, size_mb):
    if os.path.exists(path) and os.path.getsize(path) == size_mb * MIB:
        return
    # Random bytes: nothing below may store or compress it as zeros.
    subprocess.run(['dd', 'if=/dev/urandom', f'of={path}', 'bs=1M', f'count={size_mb}', 'conv=fsync',
                    'status=none'], check=True)


def swap_on(scratch):
    if bl.meminfo_kib('SwapTotal') > 0:
        return
    f = os.path.join(scratch, 'swapfile')
    subprocess.run(['dd', 'if=/dev/zero', f'of={f}', 'bs=1M', f'count={SWAP_MB}', 'status=none'], check=True)
    os.chmod(f, 0o600)
    subprocess.run(['mkswap', f], check=True, capture_output=True)
    subprocess.run(['swapon', f], check=True)


# --- the anonymous-memory holder (its own process) ----------------------------

def role_anon(total_mb, hot_mb):
    """Touch @total_mb of anonymous memory once, then pass over the first @hot_mb forever.

    Prints "ready" once everything is touched, and on SIGUSR1 the number of
    passes over the hot part since "ready".
    """
    m = mmap.mmap(-1, total_mb * MIB)
    pattern = os.urandom(PAGE)
    for off in range(0, total_mb * MIB, PAGE):
        m[off:off + PAGE] = pattern
    passes = 0
    # os.write, not print: a handler running inside print() would re-enter the buffered writer.
    signal.signal(signal.SIGUSR1, lambda *_: os.write(1, f'{passes}\n'.encode()))
    os.write(1, b'ready\n')
    hot = hot_mb * MIB
    while True:
        for off in range(0, hot, PAGE):
            m[off] = (m[off] + 1) & 0xff
        passes += 1


def role_hot_reader(path):
    """Read the file @path from start to end over and over; print bytes read on SIGUSR1."""
    done = 0
    signal.signal(signal.SIGUSR1, lambda *_: os.write(1, f'{done}\n'.encode()))
    os.write(1, b'ready\n')
    fd = os.open(path, os.O_RDONLY)
    while True:
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            n = len(os.read(fd, MIB))
            if n == 0:
                break
            done += n


def self_cmd(*args):
    return [sys.executable, os.path.abspath(__file__)] + list(args)


# --- latency of memory.reclaim writes -----------------------------------------

def reclaim_write(d, nbytes):
    """Write @nbytes to @d/memory.reclaim: (milliseconds, errno or 0, bytes memory.current fell)."""
    before = int(read(os.path.join(d, 'memory.current')))
    fd = os.open(os.path.join(d, 'memory.reclaim'), os.O_WRONLY)
    t0 = time.perf_counter()
    err = 0
    try:
        os.write(fd, str(nbytes).encode())
    except OSError as e:
        err = e.errno
    ms = (time.perf_counter() - t0) * 1000
    os.close(fd)
    return ms, err, before - int(read(os.path.join(d, 'memory.current')))


def latency_series(d, memory, refill):
    rows = []
    for kind in ('1%', '10M', '100M'):
        refill()
        for i in range(5):
            cur = int(read(os.path.join(d, 'memory.current')))
            n = cur // 100 if kind == '1%' else (10 if kind == '10M' else 100) * MIB
            ms, err, freed = reclaim_write(d, n)
            rows.append([memory, kind, i + 1, cur, n, f'{ms:.2f}', freed, os.strerror(err) if err else 'ok'])
            print(f'latency {memory} {kind} #{i + 1}: current {cur >> 20} MiB, asked {n >> 20} MiB, '
                  f'{ms:.1f} ms, fell {freed >> 20} MiB, {rows[-1][-1]}', flush=True)
    return rows


def latency(scratch):
    rows = []
    d = cg('latency-cache')
    os.mkdir(d)
    f = os.path.join(scratch, 'latency-cache')
    make_file(f, LAT_CACHE_MB)
    try:
        def refill_cache():
            drop_caches()
            p = spawn_in(d, ['cat', f], stdout=subprocess.DEVNULL)
            pt.check(p.wait() == 0, 'cat of the cache file failed')
        rows += latency_series(d, 'page cache', refill_cache)
    finally:
        rm_cgroup(d)
        os.unlink(f)
    d = cg('latency-anon')
    os.mkdir(d)
    holder = None
    try:
        def refill_anon():
            nonlocal holder
            if holder:
                kill_group(holder)
            holder = spawn_in(d, self_cmd('--role', 'anon', str(LAT_ANON_MB), '0'), stdout=subprocess.PIPE,
                              text=True)
            pt.check(holder.stdout.readline().strip() == 'ready', 'the anonymous holder did not start')
        rows += latency_series(d, 'anonymous, swap on disk', refill_anon)
    finally:
        if holder:
            kill_group(holder)
        rm_cgroup(d)
    return rows


# --- the workloads ------------------------------------------------------------

class Workload:
    """start() begins the workload in cgroup dir d; done() returns its amount of work so far.

    reference() returns the work so far of a reference running beside the
    workload outside the controlled cgroups, or None when there is none.
    """

    def __init__(self, scratch):
        self.scratch = scratch
        self.procs = []

    def reference(self):
        return None

    def stop(self):
        for p in self.procs:
            kill_group(p)
        self.procs = []


class ColdHot(Workload):
    name, unit = 'a', 'hot MiB/s'

    def prepare(self):
        self.cold = os.path.join(self.scratch, 'cold')
        self.hot = os.path.join(self.scratch, 'hot')
        self.hot_ref = os.path.join(self.scratch, 'hot-reference')
        make_file(self.cold, COLD_MB)
        make_file(self.hot, HOT_MB)
        make_file(self.hot_ref, HOT_MB)

    def start(self, d):
        p = spawn_in(d, ['cat', self.cold], stdout=subprocess.DEVNULL)
        pt.check(p.wait() == 0, 'cat of the cold set failed')
        r = spawn_in(d, self_cmd('--role', 'hot-reader', self.hot), stdout=subprocess.PIPE, text=True)
        # The reference stays in this script's cgroup, which no [Reclaim] glob matches.
        ref = subprocess.Popen(self_cmd('--role', 'hot-reader', self.hot_ref), stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
        self.procs = [r, ref]
        for p in self.procs:
            pt.check(p.stdout.readline().strip() == 'ready', 'a hot reader did not start')

    @staticmethod
    def _bytes_read(p):
        p.send_signal(signal.SIGUSR1)
        return int(p.stdout.readline()) / MIB

    def done(self):
        return self._bytes_read(self.procs[0])

    def reference(self):
        return self._bytes_read(self.procs[1])


class Build(Workload):
    name, unit = 'b', 'build steps/s'

    def prepare(self):
        self.src = os.path.join(self.scratch, 'src')
        self.bdir = os.path.join(self.scratch, 'src-build')
        if not os.path.isdir(self.src):
            os.makedirs(self.src)
            arch = subprocess.run(['git', '-C', pt.SOURCE_ROOT, 'archive', 'HEAD'], check=True,
                                  capture_output=True).stdout
            subprocess.run(['tar', '-x', '-C', self.src], input=arch, check=True)
            t0 = time.monotonic()
            subprocess.run(['meson', 'setup', self.bdir, self.src], check=True, capture_output=True)
            print(f'build: meson setup took {time.monotonic() - t0:.0f} s', flush=True)

    def start(self, d):
        subprocess.run(['ninja', '-C', self.bdir, '-t', 'clean'], check=True, capture_output=True)
        self.count_file = os.path.join(self.scratch, 'build-steps')
        write(self.count_file, '')
        write(os.path.join(self.scratch, 'build-log'), '')
        # Finished builds add their step counts to the count file; done() adds the running
        # build's from its log (ninja prints one "[n/m]" line per step it finished).
        self.log = os.path.join(self.scratch, 'build-log')
        script = (f'while :; do ninja -C {self.bdir} -j2 > {self.log}; '
                  f'grep -c "^\\[" {self.log} >> {self.count_file}; '
                  f'ninja -C {self.bdir} -t clean > /dev/null; done')
        self.procs = [spawn_in(d, ['sh', '-c', script])]

    def done(self):
        finished = sum(int(x) for x in read(self.count_file).split())
        try:
            with open(self.log) as f:
                running = sum(1 for line in f if line.startswith('['))
        except OSError:
            running = 0
        return finished + running


# What the build reads besides its source: copied to the scratch disk for bdisk.
TOOLCHAIN_DIRS = ['/usr/include', '/usr/lib/gcc']
TOOLCHAIN_BINS = ['/usr/bin/cc', '/usr/bin/gcc', '/usr/bin/as', '/usr/bin/ld', '/usr/bin/ninja',
                  '/usr/lib/gcc/x86_64-linux-gnu/12/cc1']
TOOLCHAIN_LIBDIR = '/usr/lib/x86_64-linux-gnu'
TOOLCHAIN_LIBS = ['crt1.o', 'crti.o', 'crtn.o', 'Scrt1.o', 'libc.so', 'libc_nonshared.a', 'libm.so']


def toolchain_files():
    files = {os.path.realpath(b) for b in TOOLCHAIN_BINS[:-1]}
    for b in TOOLCHAIN_BINS:
        out = subprocess.run(['ldd', os.path.realpath(b)], capture_output=True, text=True).stdout
        files |= {os.path.realpath(w) for line in out.splitlines() for w in line.split() if w.startswith('/')}
    files |= {os.path.realpath(os.path.join(TOOLCHAIN_LIBDIR, n)) for n in TOOLCHAIN_LIBS
              if os.path.exists(os.path.join(TOOLCHAIN_LIBDIR, n))}
    return sorted(f for f in files if os.path.isfile(f))


class BuildOnDisk(Build):
    name = 'bdisk'

    def prepare(self):
        super().prepare()
        top = os.path.join(self.scratch, 'toolchain')
        if os.path.isdir(top):
            return
        t0 = time.monotonic()
        paths = TOOLCHAIN_DIRS + toolchain_files()
        for path in paths:
            copy = top + path
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            subprocess.run(['cp', '-a', path, copy], check=True)
        for path in paths:
            subprocess.run(['mount', '--bind', top + path, path], check=True)
        mib = int(subprocess.run(['du', '-sm', top], check=True, capture_output=True, text=True).stdout.split()[0])
        print(f'bdisk: {len(paths)} paths ({mib} MiB) copied to the scratch disk and bind-mounted in '
              f'{time.monotonic() - t0:.0f} s', flush=True)


class ColdAnon(Workload):
    name, unit = 'c', 'hot passes/s'

    def prepare(self):
        swap_on(self.scratch)

    def start(self, d):
        r = spawn_in(d, self_cmd('--role', 'anon', str(ANON_COLD_MB + ANON_HOT_MB), str(ANON_HOT_MB)),
                     stdout=subprocess.PIPE, text=True)
        self.procs = [r]
        pt.check(r.stdout.readline().strip() == 'ready', 'the anonymous holder did not start')

    def done(self):
        r = self.procs[0]
        r.send_signal(signal.SIGUSR1)
        return int(r.stdout.readline())


def reload_daemon():
    subprocess.run(['systemctl', 'reload', SERVICE], check=True)


def controller(on, args):
    os.makedirs(os.path.dirname(DROPIN), exist_ok=True)
    if on:
        write(DROPIN, f'[Reclaim]\nCgroups=/{PARENT}/*\nInterval={args.interval}\nMinSize={args.min_size}\n')
    elif os.path.exists(DROPIN):
        os.unlink(DROPIN)
    reload_daemon()


def reclaim_status(path):
    try:
        v = pt.Varlink(SOCKET, timeout=30)
        try:
            msg = v.call_sync('io.pressured.GetStatus', {})
        finally:
            v.close()
        for e in msg.get('parameters', {}).get('reclaim', []):
            if e.get('cgroup') == path:
                return e
    except (OSError, TimeoutError, ValueError) as e:
        print(f'GetStatus failed: {e}', flush=True)
    return {}


STAT_AVG = ['file', 'anon', 'active_file', 'inactive_file']
STAT_DELTA = ['workingset_refault_file', 'workingset_refault_anon', 'workingset_activate_file',
              'workingset_activate_anon']
VMSTAT_DELTA = ['pswpin', 'pswpout']


def memory_stat(d):
    return {k: int(v) for k, v in (line.split() for line in read(os.path.join(d, 'memory.stat')).splitlines())}


def vmstat():
    return {k: int(v) for k, v in (line.split() for line in read('/proc/vmstat').splitlines())}


def cpu_usec(d):
    try:
        return int(dict(line.split() for line in read(os.path.join(d, 'cpu.stat')).splitlines())['usage_usec'])
    except (OSError, KeyError, ValueError):
        return 0


DAEMON_CG = os.path.join(CGROOT, 'system.slice', SERVICE)


def counters(d):
    st, vm = memory_stat(d), vmstat()
    c = {k: st.get(k, 0) for k in STAT_DELTA}
    c.update({k: vm.get(k, 0) for k in VMSTAT_DELTA})
    c['cpu_usec'] = cpu_usec(d)
    c['daemon_cpu_usec'] = cpu_usec(DAEMON_CG)
    return c


def one_run(w, setup, run, args, series):
    duration = args.duration_b if w.name.startswith('b') else args.duration
    key = f'{w.name}@{args.interval}'
    name = f'{w.name}-{setup}-{run}'
    d = cg(name)
    path = f'/{PARENT}/{name}'
    drop_caches()
    os.mkdir(d)
    try:
        controller(setup == 'on', args)
        ts = time.monotonic()
        w.start(d)
        # The run's clock starts when the workload reached its steady part (the cold set read, the
        # anonymous memory touched): what the controller can give back is there from then on.
        s0 = stall_totals(d)
        c0 = counters(d)
        t0 = time.monotonic()
        start_s = t0 - ts
        work0, ref0 = w.done(), w.reference()
        t_work = time.monotonic()
        mem, stat_sum = [], dict.fromkeys(STAT_AVG, 0)
        next_t = t0
        while time.monotonic() - t0 < duration:
            next_t += 1.0
            time.sleep(max(0.0, next_t - time.monotonic()))
            cur = int(read(os.path.join(d, 'memory.current')))
            mem.append(cur)
            st = memory_stat(d)
            for k in STAT_AVG:
                stat_sum[k] += st.get(k, 0)
            series.append([key, setup, run, f'{time.monotonic() - t0:.1f}', cur])
        work, ref = w.done() - work0, w.reference()
        t_end = time.monotonic()
        if ref is not None:
            ref -= ref0
        s1 = stall_totals(d)
        c1 = counters(d)
        swap_end = int(read(os.path.join(d, 'memory.swap.current')))
        st = reclaim_status(path) if setup == 'on' else {}
        stat = dict(line.split() for line in read(os.path.join(d, 'memory.stat')).splitlines())
    finally:
        w.stop()
        rm_cgroup(d)
    wall = t_end - t0
    row = [w.name, setup, run, f'{start_s:.1f}', f'{wall:.1f}', f'{sum(mem) / len(mem) / MIB:.1f}', f'{mem[-1] / MIB:.1f}',
           f'{max(mem) / MIB:.1f}', f'{(s1[0] - s0[0]) / wall / 1e4:.4f}', f'{(s1[1] - s0[1]) / wall / 1e4:.4f}',
           f'{work / (t_end - t_work):.3f}', w.unit, st.get('reclaimed_bytes', ''), st.get('state', ''),
           int(stat.get('workingset_refault_file', 0)) + int(stat.get('workingset_refault_anon', 0)),
           args.interval, duration]
    row += [f'{stat_sum[k] / len(mem) / MIB:.1f}' for k in STAT_AVG]
    row += [c1[k] - c0[k] for k in STAT_DELTA + VMSTAT_DELTA]
    row += [f'{swap_end / MIB:.1f}', f'{(c1["cpu_usec"] - c0["cpu_usec"]) / 1e6:.2f}',
            f'{(c1["daemon_cpu_usec"] - c0["daemon_cpu_usec"]) / 1e6:.2f}']
    row += ['', ''] if ref is None else [f'{ref / (t_end - t_work):.3f}', f'{work / ref:.4f}' if ref else '']
    row[0] = key
    print('run ' + ' '.join(str(x) for x in row), flush=True)
    return row


RUN_HEADER = ['workload', 'controller', 'run', 'start_s', 'wall_s', 'avg_mib', 'end_mib', 'max_mib', 'some_stall_pct',
              'io_some_stall_pct', 'throughput', 'unit', 'reclaimed_bytes', 'state', 'refaults', 'interval',
              'duration_s'] + [f'{k}_mib' for k in STAT_AVG] + STAT_DELTA + VMSTAT_DELTA + [
              'swap_end_mib', 'cpu_s', 'daemon_cpu_s', 'reference_throughput', 'relative_throughput']


def guest(args):
    pt.require_root('the VM test bed runs as root')
    if not bl.in_vm():
        pt.skip('runs inside tests/vm/run.sh (PRESSURED_VM=1)')
    bl.mlock_self()
    scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
    only = args.only.split(',')
    os.makedirs(cg(), exist_ok=True)
    write(os.path.join(CGROOT, 'cgroup.subtree_control'), '+memory +io')
    write(os.path.join(cg(), 'cgroup.subtree_control'), '+memory +io')
    info = [['kernel', os.uname().release], ['cpus', os.cpu_count()],
            ['memtotal_kib', bl.meminfo_kib('MemTotal')]]
    # Socket activation starts the daemon on the first client; reloads need it running.
    subprocess.run(['systemctl', 'start', SERVICE], check=True)
    try:
        swap_on(scratch)
        info.append(['swap_kib', bl.meminfo_kib('SwapTotal')])
        if 'latency' in only:
            rows = latency(scratch)
            bl.emit_csv('reclaim-latency.csv', ['memory', 'step', 'rep', 'current_bytes', 'asked_bytes', 'ms',
                                                'fell_bytes', 'result'], rows)
        loads = [w for w in (ColdHot(scratch), Build(scratch), BuildOnDisk(scratch), ColdAnon(scratch))
                 if w.name in only]
        for w in loads:
            t0 = time.monotonic()
            w.prepare()
            print(f'workload {w.name}: prepared in {time.monotonic() - t0:.0f} s', flush=True)
            runs, series = [], []
            for run in range(1, args.runs + 1):
                for setup in ('off', 'on'):
                    runs.append(one_run(w, setup, run, args, series))
            bl.emit_csv(f'reclaim-runs-{w.name}@{args.interval}.csv', RUN_HEADER, runs)
            bl.emit_csv(f'reclaim-series-{w.name}@{args.interval}.csv', ['workload', 'controller', 'run', 't_s', 'current_bytes'],
                        series)
        info += [['duration_s', args.duration], ['duration_b_s', args.duration_b], ['interval', args.interval],
                 ['min_size', args.min_size], ['runs', args.runs]]
        bl.emit_csv('reclaim-info.csv', ['key', 'value'], info)
    finally:
        if os.path.exists(DROPIN):
            os.unlink(DROPIN)
            reload_daemon()
        rm_cgroup(cg())


def host(args):
    start = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    fwd = ['--guest', '--runs', str(args.runs), '--duration', str(args.duration), '--duration-b',
           str(args.duration_b), '--only', args.only, '--interval', args.interval, '--min-size', args.min_size]
    os.makedirs(args.out, exist_ok=True)
    # The VM's timeout: boot, preparation, and every run with its set-up, generously.
    longest = max(args.duration, args.duration_b) + 90
    rc = bl.run_in_vm(__file__, fwd, args.out, 900 + len(args.only.split(',')) * args.runs * 2 * longest)
    with open(os.path.join(args.out, f'reclaim-host-{args.only.replace(",", "")}.csv'), 'w') as f:
        f.write(f'key,value\ndate,{start}\nhost_load_end,{bl.loadavg()}\n')
    sys.exit(rc)


# --- the controller's own cost, on a fake tree --------------------------------

COST_WARMUP_S, COST_S = 5, 60


def reclaim_entries(d):
    v = pt.Varlink(d.socket, timeout=30)
    try:
        msg = v.call_sync('io.pressured.GetStatus', {})
    finally:
        v.close()
    return msg.get('parameters', {}).get('reclaim') or []


def cost_run(root, setup, n):
    conf = f'[Reclaim]\nCgroups=/cg*\nInterval=1s\nMinSize=0\n' if setup == 'on' else ''
    d = pt.Daemon(config_text='[Limits]\nIdleTimeoutSec=86400\n' + conf, cgroup_root=root, log_level='warning')
    with d:
        time.sleep(COST_WARMUP_S)
        before = reclaim_entries(d)
        c0 = bl.oncpu_seconds(d.pid)
        t0 = time.monotonic()
        time.sleep(COST_S)
        c1 = bl.oncpu_seconds(d.pid)
        wall = time.monotonic() - t0
        after = reclaim_entries(d)
    pt.check(setup == 'off' or len(after) == n, f'{len(after)} reclaim entries for {n} cgroups', after[:3])
    took = sum(e['reclaimed_bytes'] for e in after) - sum(e['reclaimed_bytes'] for e in before)
    states = sorted({e['state'] for e in after})
    intervals = wall / 1.0
    cpu = c1 - c0
    return [setup, n if setup == 'on' else 0, f'{intervals:.0f}', f'{cpu:.4f}', f'{cpu / intervals * 1e3:.3f}',
            f'{cpu / intervals / n * 1e6:.1f}' if setup == 'on' else '', took, ' '.join(states)]


def cost(args):
    tmp = tempfile.mkdtemp(prefix='bench-reclaim-')
    try:
        root = os.path.join(tmp, 'cg')
        subprocess.run([sys.executable, os.path.join(pt.SOURCE_ROOT, 'tests', 'make-fake-cgroup-tree.py'), root,
                        '--flat', str(args.cgroups), '--psi'], check=True, stdout=subprocess.DEVNULL)
        for name in os.listdir(root):
            d = os.path.join(root, name)
            if os.path.isdir(d):
                write(os.path.join(d, 'memory.current'), str(2 << 30))
                write(os.path.join(d, 'memory.reclaim'), '')
        rows = [cost_run(root, setup, args.cgroups) for setup in ('off', 'on')]
        header = ['controller', 'cgroups', 'intervals', 'cpu_s', 'cpu_ms_per_interval',
                  'cpu_us_per_interval_per_cgroup', 'reclaimed_bytes', 'states']
        bl.write_csv(args.out, 'reclaim-cost.csv', header, rows)
        bl.print_table(header, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == '--role':
        if sys.argv[2] == 'anon':
            role_anon(int(sys.argv[3]), int(sys.argv[4]))
        else:
            role_hot_reader(sys.argv[3])
        return

    def options(p):
        p.add_argument('--runs', type=int, default=3)
        p.add_argument('--duration', type=int, default=45)
        p.add_argument('--duration-b', type=int, default=60)
        p.add_argument('--interval', default='1s')
        p.add_argument('--min-size', default='32M')
        p.add_argument('--only', default='latency,a,b,c')
        p.add_argument('--cgroups', type=int, default=100)
        p.add_argument('--cost', action='store_true')
    bl.vm_main(__doc__.splitlines()[0], guest, lambda args: (cost if args.cost else host)(args), options)

if __name__ == '__main__':
    main()
