# SPDX-License-Identifier: MIT
"""Helpers shared by the Python benchmarks in tests/bench/.

Where results go (--out DIR, else $PRESSURED_BENCH_OUT, else
$PRESSURED_BUILD_ROOT/tests/bench/out), quick mode (--quick or
PRESSURED_BENCH_QUICK=1), a daemon started for measuring (limits raised, no
watchdog, never under a test wrapper), CPU time and context switches of a
process from /proc, and a workload in a memory-limited cgroup.
Benchmarks print tables and write CSV; they never assert on times.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')),
                                'tests'))
import pressured_test as pt  # noqa: E402

# A benchmark reports its figures, not a verdict: the test harness's
# "finish() or skip()" rule is not for it.
pt.own_verdict()

# Benchmarks measure the daemon itself, never under valgrind, and never
# with a service manager's watchdog or notification socket.
pt.WRAPPER = []
for _k in ('WATCHDOG_USEC', 'WATCHDOG_PID', 'NOTIFY_SOCKET', 'LISTEN_FDS', 'LISTEN_PID'):
    os.environ.pop(_k, None)

CLK_TCK = os.sysconf('SC_CLK_TCK')
PSI_2S = {'stall': 'some', 'threshold_us': 100000, 'window_us': 2000000}
PSI_2S_TEXT = 'some 100000 2000000'


def parse_args(description, extra=None):
    """Common options: --out DIR, --quick; @extra(parser) adds more."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument('--out', default=os.environ.get('PRESSURED_BENCH_OUT',
                                                    os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'out')))
    p.add_argument('--quick', action='store_true', default=os.environ.get('PRESSURED_BENCH_QUICK') == '1')
    if extra:
        extra(p)
    return p.parse_args()


def vm_main(description, guest, host, extra=None):
    """The main() of a benchmark that boots the VM test bed: the common options, --guest, and @extra's;
    @guest(args) runs the steps inside the VM (--guest), @host(args) starts it from outside."""
    def options(p):
        p.add_argument('--guest', action='store_true', help='run the steps here (inside the VM)')
        if extra:
            extra(p)
    args = parse_args(description, options)
    (guest if args.guest else host)(args)


def write_csv(out_dir, name, header, rows):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print(f'CSV: {path}', flush=True)
    return path


def print_table(header, rows):
    cells = [[str(c) for c in header]] + [[fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print('  '.join(c.rjust(w) for c, w in zip(r, widths)))
    sys.stdout.flush()


def fmt(v):
    if isinstance(v, float):
        return f'{v:.3f}' if abs(v) < 100 else f'{v:.1f}'
    return str(v)


def proc_cpu_seconds(pid):
    """utime + stime of @pid (all its threads) in seconds, from /proc/PID/stat."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    # fields[0] is the state (field 3): utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def kthreads_cpu(comm):
    """{pid: cpu seconds} of kernel threads named @comm (e.g. psimon)."""
    out = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/comm') as f:
                if f.read().strip() != comm:
                    continue
            out[int(pid)] = proc_cpu_seconds(pid)
        except OSError:
            pass
    return out


def kthreads_cpu_delta(before, after):
    """CPU seconds used between two kthreads_cpu() samples (threads that came and went count from 0)."""
    return sum(v - before.get(pid, 0.0) for pid, v in after.items())


def loadavg():
    with open('/proc/loadavg') as f:
        return float(f.read().split()[0])


def daemon(max_clients=5000, extra_config=''):
    """A pt.Daemon configured for measuring: limits raised, no idle timeout, quiet log."""
    cfg = (f'[Limits]\nMaxClients={max_clients}\nMaxClientsPerUser={max_clients}\n'
           'IdleTimeoutSec=86400\n' + extra_config)
    return pt.Daemon(config_text=cfg, log_level='warning')


def subscribe_many(d, n, **params):
    """@n connections subscribed with @params; the 'subscribed' replies are checked."""
    clients = []
    try:
        for _ in range(n):
            v = pt.Varlink(d.socket, timeout=30)
            v.call('io.pressured.Subscribe', params, more=True)
            clients.append(v)
        for v in clients:
            msg = v.recv(timeout=30)
            ev = msg.get('parameters', {}).get('event', {})
            pt.check(ev.get('kind') == 'subscribed', 'Subscribe failed', msg)
    except BaseException:
        close_all(clients)
        raise
    return clients


def close_all(clients):
    for v in clients:
        try:
            v.close()
        except OSError:
            pass


def drain_count(clients):
    """Read what is buffered on @clients without blocking; return the number of messages."""
    n = 0
    for v in clients:
        v.sock.setblocking(False)
        try:
            while True:
                data = v.sock.recv(65536)
                if not data:
                    break
                n += data.count(b'\0')
        except (BlockingIOError, InterruptedError):
            pass
        finally:
            v.sock.setblocking(True)
    return n


def mean_sd(values):
    if not values:
        return 0.0, 0.0
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def children_cpu():
    """CPU seconds of all waited-for children so far (user + system)."""
    r = os.times()
    return r.children_user + r.children_system


def now():
    return time.monotonic()


def pressure_workload(v1dir, v2dir, iterations, size_mb=200, anon_mb=32):
    """Run a fixed amount of memory-pressure work in the cgroups and wait for it.

    A process holding @anon_mb of anonymous memory, and @iterations rounds of
    writing a @size_mb file with dd and reading it back, all inside the
    cgroups (a memory-limited v1 one and a v2 one for PSI), as
    tests/pressured_test.py memory_load does. Returns (wall seconds, CPU
    seconds of the workload's processes, MB moved).
    """
    tmp = tempfile.mkdtemp(prefix='pressured-bench-', dir='/var/tmp')
    f = os.path.join(tmp, 'f')
    hog = f'import time; b = bytearray({anon_mb} << 20); time.sleep(3600)'
    script = (f'python3 -c "{hog}" & hog=$!; sleep 0.3; date +%s%N; i=0; while [ $i -lt {iterations} ]; do '
              f'dd if=/dev/zero of={f} bs=1M count={size_mb} status=none; cat {f} > /dev/null; '
              f'rm -f {f}; i=$((i+1)); done; date +%s%N; kill $hog; wait $hog 2>/dev/null; exit 0')
    try:
        cpu0 = children_cpu()
        proc = pt.run_in_cgroups(['sh', '-c', script], v1dir, v2dir, stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate()
        cpu = children_cpu() - cpu0
        pt.check(proc.returncode == 0, 'the workload failed', proc.returncode)
        start, end = (int(x) for x in out.split()[:2])
        # The loop's own time, without the start of the memory hog.
        return (end - start) / 1e9, cpu, iterations * size_mb * 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- benchmarks run inside the VM test bed (tests/vm/run.sh) ----------------

CSV_BEGIN = '@csv '
CSV_END = '@end'


def in_vm():
    return os.environ.get('PRESSURED_VM') == '1'


def emit_csv(name, header, rows):
    """In the VM: print a CSV file between markers, for run_in_vm() to write out on the host."""
    print(CSV_BEGIN + name)
    w = csv.writer(sys.stdout, lineterminator='\n')
    w.writerow(header)
    w.writerows(rows)
    print(CSV_END, flush=True)


def run_in_vm(script, args, out_dir, timeout_s, python=sys.executable):
    """Run @script with @args by @python in a VM of tests/vm/run.sh; write the CSV files it emits to @out_dir.
    (The sid guest, PRESSURED_VM_GUEST=sid, has its own root: its /usr/bin/python3, not this one.)

    The guest's other output is passed through. Returns the exit status of
    the script in the VM (run.sh's: 77 when no VM can start here, 124 on
    the timeout).
    """
    run_sh = os.path.join(pt.SOURCE_ROOT, 'tests', 'vm', 'run.sh')
    env = dict(os.environ, PRESSURED_VM_TIMEOUT=str(timeout_s), PYTHONDONTWRITEBYTECODE='1')
    proc = subprocess.Popen([run_sh, '--', python, os.path.abspath(script)] + args,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        _relay_vm_output(proc, out_dir)
    finally:
        if proc.poll() is None:
            # Interrupted: run.sh stops the VM and removes its directory on SIGTERM.
            proc.terminate()
            proc.wait()
    return proc.wait()


def _relay_vm_output(proc, out_dir):
    """Copy the guest's output through, writing its CSV blocks to @out_dir."""
    name, lines = None, []
    for line in proc.stdout:
        line = line.rstrip('\n')
        if name is None and line.startswith(CSV_BEGIN):
            name, lines = line[len(CSV_BEGIN):].strip(), []
        elif name is not None and line == CSV_END:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, os.path.basename(name))
            with open(path, 'w') as f:
                f.write('\n'.join(lines) + '\n')
            print(f'CSV: {path}', flush=True)
            name = None
        elif name is not None:
            lines.append(line)
        else:
            print(line, flush=True)


def mlock_self():
    """Lock this process's memory and keep the OOM killer off it (root). Lowering oom_score_adj takes
    CAP_SYS_RESOURCE, which root lacks in some containers (this development machine): there the
    memory is locked and the OOM score left as it is."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(1 | 2) != 0:   # MCL_CURRENT | MCL_FUTURE
        raise OSError(ctypes.get_errno(), 'mlockall failed')
    try:
        with open('/proc/self/oom_score_adj', 'w') as f:
            f.write('-1000')
    except PermissionError:
        pass


def direct_psi_reader(trigger_text):
    """The reference a benchmark measures the daemon against: this process, memory locked, holds
    its own PSI trigger on /proc/pressure/memory, prints "ready", and timestamps each POLLPRI
    (CLOCK_MONOTONIC, microseconds) until its stdin ends; returns the timestamps."""
    import select
    mlock_self()
    fd = os.open('/proc/pressure/memory', os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    os.write(fd, trigger_text.encode() + b'\0')
    p = select.poll()
    p.register(fd, select.POLLPRI)
    p.register(0, select.POLLIN)
    times = []
    print('ready', flush=True)
    while True:
        for f, ev in p.poll():
            if f != fd:
                os.close(fd)
                return times
            if ev & select.POLLERR:
                raise SystemExit('the trigger failed (POLLERR)')
            times.append(time.monotonic_ns() // 1000)


def proc_stat_fields(pid):
    """/proc/PID/stat as a list indexed by field number (1-based; [0] unused)."""
    with open(f'/proc/{pid}/stat') as f:
        data = f.read()
    head, _, tail = data.rpartition(')')
    pid_s, _, comm = head.partition(' (')
    return [None, pid_s, comm] + tail.split()


def major_faults(pid):
    """Major page faults of @pid so far (/proc/PID/stat field 12)."""
    return int(proc_stat_fields(pid)[12])


def status_kib(pid, key):
    """A field of /proc/PID/status in KiB (VmRSS, RssFile, ...)."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    return 0


def oncpu_seconds(pid):
    """On-CPU time of every thread of @pid in seconds (/proc/PID/task/*/schedstat, ns resolution)."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


def meminfo_kib(key):
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    """The @p-th percentile (nearest rank) of @values, NaN if empty."""
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
