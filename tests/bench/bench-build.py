#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real workload: this project's own build in a memory-limited cgroup,
with nobody watching, with 100 pressured subscribers, and with 100
processes each holding its own PSI trigger.

    tests/bench/bench-build.py [--out DIR] [--runs N] [--limit SIZE] [--cache cold|warm]
                               [--targets "T..."] [--trigger "some|full US US"]
                               [--build-timeout S] [--vm] [--quick]

Each run copies nothing: the source (git archive of HEAD, extracted once
into a scratch directory) is configured and built from scratch with
`meson setup` and `ninja -j2` in a fresh cgroup, and the build directory
is removed afterwards. The three setups alternate (ABCABC...) after one
unmeasured warm-up run, so that load from other work on the machine falls
on all of them alike. The watched setups use the same trigger on the
build's cgroup, by default `some 150ms 2s` (a window any process may use;
--trigger "some 20000 2000000" for one that fires more often):
  - pressured: one daemon, and one client process holding 100
    subscriptions over 100 connections and reading every event;
  - own-triggers: psi-holders, 100 processes each holding its own trigger
    on the cgroup's memory.pressure, as 100 sd-event services would.
Per run: the build's wall time, the cgroup's some and full stall totals
(memory.pressure total=), and the watchers' on-CPU time (schedstat, the
nanosecond counterpart of utime + stime) and
context switches (voluntary + involuntary) over the build, the daemon's
own share of them (in every setup: with no subscriber it should do
nothing), plus the load average at its start.

By default every run starts with a cold page cache (sync, then
/proc/sys/vm/drop_caches): the compilers, headers and sources are read
inside the build's cgroup and charged to it, as for a build that is the
first to use them, and the limit squeezes them along with the compilers'
anonymous memory. With a warm cache (--cache warm) they stay charged to
whoever read them first and the build's own working set is mostly
anonymous memory, so a tight limit goes from no stall straight to OOM
kills. The default limit (72 MiB on a hybrid host, 80 MiB in the VM) makes
the build stall for seconds but finish. A build that exceeds
--build-timeout (default 900 s, 3600 s in the VM) is killed and counted as
failed. SIGINT, SIGTERM and SIGHUP stop the benchmark after removing its
cgroups and scratch directory.

Where the cgroup2 hierarchy has the memory controller (the VM test bed),
the limit is memory.max; on a hybrid host it is the v1
memory.limit_in_bytes, and the build also runs in a cgroup2 directory for
PSI. --vm boots the VM test bed (tests/vm/run.sh) and runs there, using the
daemon installed by its shipped units. Needs root. Never asserts on times.
"""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
WATCHERS = 100
TRIGGER_TEXT = 'some 150000 2000000'   # --trigger: STALL THRESHOLD_US WINDOW_US
SETUPS = ['none', 'pressured', 'own-triggers']
VM_SOCKET = '/run/pressured/io.pressured'
VM_SERVICE = 'pressured.service'


# --- the subscriber client (its own process) --------------------------------

def parse_trigger(text):
    """The trigger "some|full THRESHOLD_US WINDOW_US" as a varlink PsiTrigger."""
    parts = text.split()
    if len(parts) != 3 or parts[0] not in ('some', 'full') or not all(x.isdigit() for x in parts[1:]):
        sys.exit(f'bad --trigger "{text}": some|full THRESHOLD_US WINDOW_US')
    return {'stall': parts[0], 'threshold_us': int(parts[1]), 'window_us': int(parts[2])}


def role_subscribe(sock_path, cgroup, n, trigger_text):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.connect(sock_path)
        msg = {'method': 'io.pressured.Subscribe', 'parameters': {'cgroup': cgroup,
                                                                  'psi': parse_trigger(trigger_text)},
               'more': True}
        s.sendall(json.dumps(msg).encode() + b'\0')
        socks.append(s)
    p = select.poll()
    for s in socks:
        p.register(s.fileno(), select.POLLIN)
    p.register(0, select.POLLIN)
    subscribed, events, cleared, errors = 0, 0, 0, []
    bufs = {s.fileno(): b'' for s in socks}
    ready = False
    while True:
        for f, _ in p.poll():
            if f == 0:
                json.dump({'events': events, 'cleared': cleared, 'errors': errors}, sys.stdout)
                print(flush=True)
                return
            data = os.read(f, 1 << 16)
            if not data:
                errors.append('connection closed')
                p.unregister(f)
                continue
            bufs[f] += data
            *msgs, bufs[f] = bufs[f].split(b'\0')
            for m in msgs:
                msg = json.loads(m)
                if 'error' in msg:
                    errors.append(msg['error'])
                    continue
                kind = msg['parameters']['event']['kind']
                if kind == 'subscribed':
                    subscribed += 1
                elif kind == 'pressure':
                    events += 1
                elif kind == 'cleared':
                    # The end of an episode, from the daemon's timer: no kernel event.
                    cleared += 1
        if not ready and (subscribed == n or errors):
            ready = True
            print('ready' if not errors else f'failed {errors}', flush=True)


# --- cgroups ----------------------------------------------------------------

def unified_memory():
    try:
        with open('/sys/fs/cgroup/cgroup.controllers') as f:
            return 'memory' in f.read().split()
    except OSError:
        return False


class Cgroup:
    """A fresh cgroup with a memory limit: v2 memory.max, or v1 limit plus a cgroup2 dir for PSI."""

    def __init__(self, limit):
        name = f'pressured-bench-build-{uuid.uuid4().hex[:8]}'
        self.made = []
        if unified_memory():
            self.v1, self.v2 = None, os.path.join('/sys/fs/cgroup', name)
            os.mkdir(self.v2)
            self.made.append(self.v2)
            self._write(self.v2, 'memory.max', str(limit))
            self._write(self.v2, 'memory.swap.max', '0')
        else:
            self.v1, self.v2 = os.path.join(pt.V1_MEMORY_ROOT, name), os.path.join(pt.V2_ROOT, name)
            os.mkdir(self.v1)
            self.made.append(self.v1)
            self._write(self.v1, 'memory.limit_in_bytes', str(limit))
            os.mkdir(self.v2)
            self.made.append(self.v2)
        self.name = '/' + name

    @staticmethod
    def _write(d, f, v):
        try:
            with open(os.path.join(d, f), 'w') as fh:
                fh.write(v)
        except FileNotFoundError:
            if f != 'memory.swap.max':   # absent without swap accounting
                raise

    def pressure(self):
        """{'some': total_us, 'full': total_us} of memory.pressure."""
        out = {}
        with open(os.path.join(self.v2, 'memory.pressure')) as f:
            for line in f:
                kind, *fields = line.split()
                out[kind] = int(dict(x.split('=') for x in fields)['total'])
        return out

    def remove(self):
        for d in reversed(self.made):
            pt.remove_cgroup(d)


# --- watchers ---------------------------------------------------------------

def children(pid):
    out = []
    for tid in os.listdir(f'/proc/{pid}/task'):
        with open(f'/proc/{pid}/task/{tid}/children') as f:
            out += [int(x) for x in f.read().split()]
    return out


def cost(pids):
    """(on-CPU seconds, context switches) summed over @pids (schedstat: clock ticks are too coarse)."""
    cpu = sw = 0
    for p in pids:
        try:
            cpu += bl.oncpu_seconds(p)
            sw += pt.process_context_switches(p)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return cpu, sw


class Watchers:
    def __init__(self, setup, cg, daemon_socket, daemon_pid, trigger):
        self.setup, self.procs, self.pids = setup, [], []
        if setup == 'pressured':
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--role', daemon_socket, cg.name,
                                  str(WATCHERS), trigger], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            line = p.stdout.readline().strip()
            pt.check(line == 'ready', 'the subscribers did not start', line)
            self.pids = [daemon_pid, p.pid]
        elif setup == 'own-triggers':
            holders = os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'psi-holders')
            p = subprocess.Popen([holders, os.path.join(cg.v2, 'memory.pressure'), str(WATCHERS), trigger],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            line = p.stdout.readline().strip()
            pt.check(line == f'ready {WATCHERS}', 'psi-holders did not start', line)
            self.pids = children(p.pid)
            pt.check(len(self.pids) == WATCHERS, 'psi-holders children', self.pids)

    def stop(self):
        """Stop the watchers; return the pressure events and the "cleared" events they received."""
        events = cleared = 0
        for p in self.procs:
            p.stdin.close()
            out = p.stdout.read()
            p.wait(timeout=120)
            if self.setup == 'pressured':
                r = json.loads(out)
                pt.check(not r['errors'], 'subscriber errors', r['errors'])
                events += r['events']
                cleared += r['cleared']
            else:
                events += int(out.split('events')[1].split()[0])
        return events, cleared


def drop_caches():
    """Write back dirty pages, then drop the clean page cache."""
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('1')


def build_once(src, scratch, cg, targets, timeout):
    """Build in @cg; returns (exit status, or 'timeout', wall seconds)."""
    bdir = os.path.join(scratch, 'build')
    shutil.rmtree(bdir, ignore_errors=True)
    script = (f'meson setup {bdir} {src} > {scratch}/setup.log 2>&1 && '
              f'ninja -C {bdir} -j2 {" ".join(targets)} > {scratch}/ninja.log 2>&1')
    t0 = time.monotonic()
    p = pt.run_in_cgroups(['sh', '-c', script], cg.v1, cg.v2)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = 'timeout'
    finally:
        wall = time.monotonic() - t0
        # The build runs in a session of its own: stop all of it (on the
        # timeout, or when the benchmark itself is interrupted).
        pt.kill_group(p)
        pt.wait_for(lambda: not pt.process_group_alive(p.pid), timeout=60, what='the build to exit')
        shutil.rmtree(bdir, ignore_errors=True)
    return rc, wall


def one_run(setup, src, scratch, args, daemon_socket, daemon_pid):
    cg = Cgroup(args.limit)
    w = None
    try:
        w = Watchers(setup, cg, daemon_socket, daemon_pid, args.trigger)
        if args.cache == 'cold':
            drop_caches()
        load = bl.loadavg()
        p0 = cg.pressure()
        c0, d0 = cost(w.pids), cost([daemon_pid])
        rc, wall = build_once(src, scratch, cg, args.targets.split(), args.build_timeout)
        c1, d1 = cost(w.pids), cost([daemon_pid])
        p1 = cg.pressure()
        events, cleared = w.stop()
        w = None
    finally:
        if w:
            for p in w.procs:
                p.kill()
                p.wait()
        cg.remove()
    return {'setup': setup, 'rc': rc, 'wall_s': wall, 'some_s': (p1['some'] - p0['some']) / 1e6,
            'full_s': (p1['full'] - p0['full']) / 1e6, 'watch_cpu_s': c1[0] - c0[0],
            'watch_switches': c1[1] - c0[1], 'events': events, 'cleared': cleared, 'load': load,
            'daemon_cpu_s': d1[0] - d0[0], 'daemon_switches': d1[1] - d0[1]}


def measure(args, daemon_socket, daemon_pid, scratch):
    src = os.path.join(scratch, 'src')
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    archive = subprocess.run(['git', '-C', pt.SOURCE_ROOT, 'archive', 'HEAD'], capture_output=True, check=True)
    subprocess.run(['tar', '-x', '-C', src], input=archive.stdout, check=True)
    print(f'source: git archive of HEAD in {src}; limit {args.limit}; targets {args.targets or "all"}; '
          f'trigger {args.trigger}; {args.cache} cache; {args.runs} runs per setup after a warm-up', flush=True)
    warm = one_run('none', src, scratch, args, daemon_socket, daemon_pid)
    print(f'warm-up: {warm["wall_s"]:.1f} s, rc {warm["rc"]}', flush=True)
    rows = []
    for rep in range(args.runs):
        for setup in SETUPS:
            r = one_run(setup, src, scratch, args, daemon_socket, daemon_pid)
            r['run'] = rep + 1
            rows.append(r)
            print(f'run {rep + 1}/{args.runs} {setup:>12}: rc {r["rc"]}, {r["wall_s"]:.2f} s, some '
                  f'{r["some_s"]:.3f} s, full {r["full_s"]:.3f} s, watchers {r["watch_cpu_s"]:.3f} s CPU '
                  f'{r["watch_switches"]} switches, {r["events"]} events ({r["cleared"]} cleared), '
                  f'load {r["load"]:.2f}; daemon '
                  f'{r["daemon_cpu_s"]:.3f} s CPU {r["daemon_switches"]} switches', flush=True)
    shutil.rmtree(src, ignore_errors=True)
    return warm, rows


def summarize(rows):
    out = []
    for setup in SETUPS:
        rs = [r for r in rows if r['setup'] == setup]
        ok = [r for r in rs if r['rc'] == 0]
        line = [setup, len(rs), len(rs) - len(ok)]
        for k in ('wall_s', 'some_s', 'full_s', 'watch_cpu_s', 'watch_switches', 'events'):
            m, sd = bl.mean_sd([float(r[k]) for r in ok])
            line += [f'{m:.3f}', f'{sd:.3f}']
        walls = [r['wall_s'] for r in ok] or [float('nan')]
        line += [f'{min(walls):.3f}', f'{max(walls):.3f}', f'{min(r["load"] for r in rs):.2f}',
                 f'{max(r["load"] for r in rs):.2f}']
        out.append(line)
    return out


SUMMARY_HEADER = ['setup', 'runs', 'failed', 'wall_s', 'wall_sd', 'some_s', 'some_sd', 'full_s', 'full_sd',
                  'watch_cpu_s', 'watch_cpu_sd', 'watch_switches', 'watch_switches_sd', 'events', 'events_sd',
                  'wall_min', 'wall_max', 'load_min', 'load_max']
RUN_KEYS = ['run', 'setup', 'rc', 'wall_s', 'some_s', 'full_s', 'watch_cpu_s', 'watch_switches', 'events', 'cleared',
            'load', 'daemon_cpu_s', 'daemon_switches']


def report(args, where, warm, rows, emit):
    summary = summarize(rows)
    bl.print_table(SUMMARY_HEADER, summary)
    info = [['where', where], ['kernel', os.uname().release], ['cpus', os.cpu_count()],
            ['limit', args.limit], ['runs', args.runs], ['trigger', args.trigger], ['watchers', WATCHERS],
            ['targets', args.targets or 'all'], ['cache', args.cache], ['build_timeout_s', args.build_timeout],
            ['warmup_wall_s', f'{warm["wall_s"]:.3f}'],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())],
            ['v2_memory_controller', int(unified_memory())]]
    suffix = '-vm' if where == 'vm' else ''
    emit(f'build{suffix}.csv', SUMMARY_HEADER, summary)
    emit(f'build{suffix}-runs.csv', RUN_KEYS, [[r[k] if not isinstance(r[k], float) else f'{r[k]:.4f}'
                                                for k in RUN_KEYS] for r in rows])
    emit(f'build{suffix}-info.csv', ['key', 'value'], info)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == '--role':
        role_subscribe(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return

    def extra(p):
        p.add_argument('--runs', type=int, default=None, help='measured runs per setup (default 5)')
        p.add_argument('--limit', default=None, help='memory limit in bytes, or with K/M/G')
        p.add_argument('--targets', default='', help='ninja targets (default: all)')
        p.add_argument('--vm', action='store_true', help='run in the VM test bed')
        p.add_argument('--trigger', default=TRIGGER_TEXT, help='some|full THRESHOLD_US WINDOW_US')
        p.add_argument('--cache', choices=('cold', 'warm'), default='cold',
                       help='drop the page cache before each build (cold, the default) or not')
        p.add_argument('--build-timeout', type=float, default=None,
                       help='seconds after which a build is killed and counted as failed')
        p.add_argument('--guest', action='store_true', help=argparse_hidden())
    args = bl.parse_args(__doc__.splitlines()[0], extra)
    if args.runs is None:
        args.runs = 2 if args.quick else 5
    parse_trigger(args.trigger)
    pt.require_root('real cgroups and PSI')
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    if args.vm:
        fwd = ['--guest', '--runs', str(args.runs)] + (['--limit', args.limit] if args.limit else [])
        fwd += ['--targets', args.targets] if args.targets else []
        fwd += ['--trigger', args.trigger, '--cache', args.cache]
        fwd += ['--build-timeout', str(args.build_timeout)] if args.build_timeout else []
        load0 = bl.loadavg()
        rc = bl.run_in_vm(__file__, fwd, args.out, 6 * 3600)
        with open(os.path.join(args.out, 'build-vm-host.csv'), 'w') as f:
            f.write(f'key,value\nhost_load_start,{load0}\nhost_load_end,{bl.loadavg()}\n')
        sys.exit(rc)
    args.limit = parse_size(args.limit or ('80M' if args.guest else '72M'))
    if args.build_timeout is None:
        args.build_timeout = 3600.0 if args.guest else 900.0
    if args.guest:
        pid = int(subprocess.run(['systemctl', 'show', '-P', 'MainPID', VM_SERVICE], capture_output=True,
                                 text=True).stdout.strip() or 0)
        if pid == 0:
            # Socket-activated: a connection starts it.
            pt.Varlink(VM_SOCKET, timeout=120).call_sync('io.pressured.GetStatus')
            pid = int(subprocess.run(['systemctl', 'show', '-P', 'MainPID', VM_SERVICE], capture_output=True,
                                     text=True).stdout.strip())
        scratch = os.path.join(os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp'), 'bench-build')
        os.makedirs(scratch, exist_ok=True)
        warm, rows = measure(args, VM_SOCKET, pid, scratch)
        report(args, 'vm', warm, rows, bl.emit_csv)
        return
    scratch = os.path.join('/var/tmp', f'pressured-bench-build-{os.getpid()}')
    os.makedirs(scratch)
    try:
        with bl.daemon() as d:
            warm, rows = measure(args, d.socket, d.proc.pid, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(args, 'host', warm, rows, lambda name, h, r: bl.write_csv(args.out, name, h, r))


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


def parse_size(s):
    s = str(s).strip()
    mult = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}.get(s[-1:].upper(), 1)
    try:
        return int(s[:-1] if mult > 1 else s) * mult
    except ValueError:
        sys.exit(f'bad --limit "{s}": bytes, or a number with K, M or G')


if __name__ == '__main__':
    main()
