#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Level callbacks against GLib: from a direct PSI reader's wakeup to each client's first callback.

    tests/bench/bench-levels.py [--out DIR] [--runs N] [--loads N] [--load S] [--vm] [--c-client PATH]

One daemon with `[DBus] LowMemoryMonitor=yes` and its default [Levels], and
at once, listening to the level of the whole system ("/"), GLib and one
client of ours (python and c alternate from run to run; with --together
all three):

  glib    GLib's own GMemoryMonitor (tests/vm/glib-memory-monitor.py,
          GIO_USE_MEMORY_MONITOR=dbus, Debian's /usr/bin/python3 with
          python3-gi), hearing org.freedesktop.LowMemoryMonitor on the
          system bus;
  python  the Python module's blocking pressured.watch_levels("/") (this
          script with --role python, client/python of the build tree);
  c       tests/bench/levels-client.c: a pressure_monitor of libpressure
          on sd-event. Built by meson where libpressure has the monitor
          (1.4); otherwise (or with --c-client PATH) the column says so.

and a direct reader: this script with --role direct, memory locked, holding
its own trigger on /proc/pressure/memory equal to the daemon's low level
(read back from GetStatus: the three [Levels] registrations on "/", the
`some` one with the smallest stall per window). Why GLib and one of ours
by default: the daemon writes to one level stream after the other, and
each write wakes its client, so with both clients of ours the second one
also waits for the first one's wakeup, which GLib's one listener never
does; a program follows its level with one client. Per run: wait until the
system's memory `some` avg10 is below 1% (at most 180 s; the value at the
start is recorded), start the daemon, start the clients (their order
rotates from run to run), let them rest 20 s, then --loads times (default
4): start the reader, then a page-cache loop in a memory-limited cgroup
(write a 160 MiB file, read it twice, again) until every client had a
callback above normal or --load seconds (default 60) passed, and stop
both. The latency of a client is from the reader's first wakeup to its
first callback above normal (CLOCK_MONOTONIC in every process); the
clients' callbacks are timestamped first thing. The Python and the C
client also pass on the level event's own monotonic_us, when the daemon
made it: daemon_ms is that time after the reader's wakeup. Then
everything stops. Before each load starts, no client may have heard
anything for 6 s and every level stream must be at normal (after a load:
the level has stepped down; other work on the machine can raise the
system's pressure; at most 180 s of waiting): a load where that did not
hold is marked in the column callbacks_before_load (not 0), as its
latencies are not comparable.

Where: here by default (a hybrid host: the load runs in a v1 memory cgroup
with limit 48M and the cgroup2 directory of the same name; there is no
system bus, so a private dbus-daemon configured like one, with pressured's
policy file, serves the daemon and GLib through DBUS_SYSTEM_BUS_ADDRESS; the
built daemon; PSI windows here are rounded to 2 s, so the low trigger is
`some 140ms 2s`). --vm runs it in the VM test bed (tests/vm/run.sh, cgroup
v2 memory.max 48M, the installed pressured.service with a drop-in, the
real system bus, under TCG) by --guest inside.

CSV files: levels-here-runs.csv and levels-here-info.csv, or levels-vm-*.
Needs root. Never asserts on times.
"""
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
NAME = 'org.freedesktop.LowMemoryMonitor'
SERVICE = 'pressured.service'
VM_SOCKET = '/run/pressured/io.pressured'
DROPIN = os.path.join(bl.pt.install_dir('sysconfdir'), 'pressured/pressured.conf.d/90-bench-levels.conf')
LOAD_MAX = 48 << 20
LOAD_MB = 160
GLIB_CLIENT = os.path.join(here, '..', 'vm', 'glib-memory-monitor.py')
SYSTEM_PYTHON = '/usr/bin/python3'
GLIB_LEVELS = {50: 'low', 100: 'medium', 255: 'critical'}
CLIENTS = ('glib', 'python', 'c')
# GLib's worker threads end 15 s after their last task, and the clients have just started: let the
# start-up settle before the load.
REST_S = 20.0
# Before the load, no callback for this long (a level's hold: StepDownSec= 2 s plus a window of at most
# 2 s here), and every level stream at normal; at most SETTLE_WAIT_S.
SETTLE_S = 6.0
SETTLE_WAIT_S = 180.0
QUIET_AVG10 = 1.0
QUIET_WAIT_S = 180.0
START_TIMEOUT = 120
HEADER = (['where', 'run', 'load', 'order', 'trigger', 'avg10_start', 'callbacks_before_load', 'direct_wakeups',
           'load_s', 'daemon_ms'] + [f'{c}_{k}' for c in CLIENTS for k in ('ms', 'level')])


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} exited {r.returncode}: {r.stderr.strip()}')
    return r.stdout.strip()


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def some_avg10():
    with open('/proc/pressure/memory') as f:
        return float(f.readline().split()[1].split('=')[1])


def now_us():
    return time.monotonic_ns() // 1000


# --- the roles this script plays in child processes ------------------------------------

def role_direct(trigger):
    """The direct reader: each POLLPRI of @trigger timestamped; the list on stdout at EOF of stdin."""
    json.dump(bl.direct_psi_reader(trigger), sys.stdout)
    print(flush=True)


def role_python(socket):
    """pressured.watch_levels("/"): "ready LEVEL" for the level now, then "LEVEL MONOTONIC_US EVENT_US" per
    change, EVENT_US the event's monotonic_us."""
    import pressured
    first = True
    for lv in pressured.watch_levels('/', socket=socket):
        t = now_us()
        print(f'ready {lv.level}' if first else f'{lv.level} {t} {lv.monotonic_us}', flush=True)
        first = False


# --- the clients ------------------------------------------------------------------

class Client:
    """A child printing "ready [LEVEL]" and then "LEVEL MONOTONIC_US [EVENT_US]" lines, read by a thread."""

    def __init__(self, name, cmd, env):
        self.name = name
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd='/')
        r, _, _ = select.select([self.p.stdout], [], [], START_TIMEOUT)
        line = self.p.stdout.readline().split() if r else []
        pt.check(line[:1] == ['ready'], f'the {name} client did not start', line, self.p.poll())
        self.start_level = line[1] if len(line) > 1 else ''
        self.calls = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            level, t, *made = line.split()
            level = GLIB_LEVELS.get(int(level), level) if level.isdigit() else level
            with self.lock:
                self.calls.append((level, int(t), int(made[0]) if made else None))

    def disturbed(self, t_us):
        """Callbacks in the SETTLE_S before @t_us, plus one if the client's level at @t_us is above normal
        (a level stream's last event before it, else its first; GLib has no level, only callbacks)."""
        with self.lock:
            calls = [c for c in self.calls if c[1] < t_us]
        level = calls[-1][0] if calls else (self.start_level or 'normal')
        recent = sum(1 for c in calls if c[1] >= t_us - SETTLE_S * 1e6)
        return recent + (self.name != 'glib' and level != 'normal')

    def first_above_normal(self, since_us):
        with self.lock:
            return next((c for c in self.calls if c[1] >= since_us and c[0] != 'normal'), None)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)
        self.t.join(timeout=10)


def linked_libpressure(path):
    """The file name of the libpressure @path loads (libpressure.so.1.4.0), from ldd."""
    for line in sh('ldd', path, check=False).splitlines():
        if 'libpressure.so' in line and '=>' in line:
            return os.path.basename(os.path.realpath(line.split('=>')[1].split()[0]))
    return '?'


def c_client_path(args):
    """The C client to run and '' , or None and why not."""
    path = args.c_client or os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'levels-client')
    if os.access(path, os.X_OK):
        return path, ''
    return None, 'not built: libpressure has no pressure_monitor (1.4)'


def start_clients(order, socket, env, c_path):
    # The package as the build puts it together: with its generated _vocabulary.py.
    py_env = dict(env, PYTHONPATH=os.path.join(pt.BUILD_ROOT, 'client', 'python'))
    cmds = {'glib': ([SYSTEM_PYTHON, GLIB_CLIENT], dict(env, GIO_USE_MEMORY_MONITOR='dbus')),
            'python': ([sys.executable, os.path.abspath(__file__), '--role', 'python', socket], py_env),
            'c': ([c_path, '--socket', socket], env)}
    clients = []
    try:
        for name in order:
            clients.append(Client(name, *cmds[name]))
    except BaseException:
        for c in clients:
            c.close()
        raise
    return clients


def settle(clients):
    """Wait until no client heard anything for SETTLE_S and every level stream is at normal: other work
    on the machine may raise the system's pressure at any time."""
    try:
        pt.wait_for(lambda: not any(c.disturbed(now_us()) for c in clients), timeout=SETTLE_WAIT_S,
                    interval=0.5, what='the clients quiet')
    except TimeoutError:
        print(f'the clients were never quiet for {SETTLE_S:.0f} s in {SETTLE_WAIT_S:.0f} s: measuring anyway',
              flush=True)


def low_trigger(socket):
    """The daemon's low level as a trigger text: of its PSI registrations on "/", the `some` one with the
    smallest stall per window."""
    v = pt.Varlink(socket)
    try:
        regs = v.call_sync('io.pressured.GetStatus')['parameters']['registrations']
    finally:
        v.close()
    psi = [r['trigger']['psi'] for r in regs if r['cgroup'] == '/' and r['source'] == 'psi']
    some = [p for p in psi if p['stall'] == 'some']
    pt.check(some, 'the daemon holds no `some` PSI registration on /', regs)
    low = min(some, key=lambda p: p['threshold_us'] / p['window_us'])
    return f"some {low['threshold_us']} {low['window_us']}"


# --- where it runs: here (built daemon, private bus) or the VM (installed unit) -----------

class Here:
    where = 'here'

    def __init__(self, stack):
        import bus_test as bt
        bt.require_gi()
        self.bt = bt
        busdir = tempfile.mkdtemp(prefix='pressured-bench-bus-')
        stack.callback(shutil.rmtree, busdir, ignore_errors=True)
        self.bus = stack.enter_context(bt.PrivateBus(busdir))
        name, self.v1dir, self.v2dir = stack.enter_context(
            pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limit=str(LOAD_MAX), limited=True))
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        self.d = None

    def start(self):
        cfg = '[DBus]\nLowMemoryMonitor=yes\n\n[Limits]\nIdleTimeoutSec=86400\n'
        self.d = pt.Daemon(config_text=cfg, env={'DBUS_SYSTEM_BUS_ADDRESS': self.bus.address}, log_level='warning')
        self.d.start()
        self.bt.wait_owner(self.bus, self.d.pid)
        return self.d.socket

    def stop(self):
        self.d.stop()
        self.d = None

    def load_start(self, script):
        return pt.run_in_cgroups(['sh', '-c', script], self.v1dir, self.v2dir)

    def load_procs(self):
        return open(os.path.join(self.v2dir, 'cgroup.procs')).read().strip()


class VM:
    where = 'vm'
    cg = '/sys/fs/cgroup/bench-levels'

    def __init__(self, stack):
        if not bl.in_vm():
            pt.skip('--guest runs inside tests/vm/run.sh (PRESSURED_VM=1)')
        write('/sys/fs/cgroup/cgroup.subtree_control', '+memory')
        os.makedirs(self.cg, exist_ok=True)
        write(os.path.join(self.cg, 'memory.max'), str(LOAD_MAX))
        stack.callback(os.rmdir, self.cg)
        sh('systemctl', 'stop', SERVICE, check=False)
        self.env = dict(os.environ)

    @staticmethod
    def owned():
        out = sh('busctl', '--system', 'call', 'org.freedesktop.DBus', '/org/freedesktop/DBus',
                 'org.freedesktop.DBus', 'NameHasOwner', 's', NAME)
        return out == 'b true'

    def start(self):
        os.makedirs(os.path.dirname(DROPIN), exist_ok=True)
        write(DROPIN, '[DBus]\nLowMemoryMonitor=yes\n')
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'start', SERVICE)
        pt.wait_for(self.owned, timeout=START_TIMEOUT, interval=0.1, what=f'{NAME} owned by pressured')
        return VM_SOCKET

    def stop(self):
        sh('systemctl', 'stop', SERVICE, check=False)
        os.unlink(DROPIN)
        sh('systemctl', 'daemon-reload', check=False)
        pt.wait_for(lambda: not self.owned(), timeout=START_TIMEOUT, interval=0.1, what=f'{NAME} released')

    def load_start(self, script):
        def enter():
            write(os.path.join(self.cg, 'cgroup.procs'), str(os.getpid()))
        return subprocess.Popen(['sh', '-c', script], preexec_fn=enter, start_new_session=True)

    def load_procs(self):
        return open(os.path.join(self.cg, 'cgroup.procs')).read().strip()


# --- one run --------------------------------------------------------------------------

def wait_quiet():
    try:
        pt.wait_for(lambda: some_avg10() < QUIET_AVG10, timeout=QUIET_WAIT_S, interval=1.0, what='the system quiet')
    except TimeoutError:
        print(f'memory some avg10 still {some_avg10()}% after {QUIET_WAIT_S:.0f} s: measuring anyway', flush=True)
    return some_avg10()


def load_script():
    scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
    f = os.path.join(tempfile.mkdtemp(prefix='pressured-bench-levels-', dir=scratch), 'f')
    return f, (f'while :; do dd if=/dev/zero of={f} bs=1M count={LOAD_MB} status=none; '
               f'cat {f} > /dev/null; cat {f} > /dev/null; rm -f {f}; done')


def load_stop(env, p, f):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    pt.wait_for(lambda: not env.load_procs(), timeout=START_TIMEOUT, interval=0.1, what='the load to end')
    for path in (f, os.path.dirname(f)):
        try:
            (os.unlink if path == f else os.rmdir)(path)
        except FileNotFoundError:
            pass


def measure(env, clients, trigger, args):
    """Start the reader and the load, wait for every client's first callback above normal (or --load s);
    (direct wakeups, load seconds, {client: (level, µs)})."""
    reader = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--role', 'direct', trigger],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = reader.stdout.readline().strip()
    pt.check(line == 'ready', 'the direct reader did not start', line)
    start_us = now_us()
    f, script = load_script()
    lp = env.load_start(script)
    try:
        try:
            pt.wait_for(lambda: all(c.first_above_normal(start_us) for c in clients), timeout=args.load,
                        interval=0.05, what='every client above normal')
        except TimeoutError:
            print(f'not every client heard the load within {args.load:.0f} s', flush=True)
        load_s = (now_us() - start_us) / 1e6
    finally:
        load_stop(env, lp, f)
        reader.stdin.close()
        direct = json.loads(reader.stdout.read())
        reader.wait(timeout=60)
    direct = [t for t in direct if t >= start_us]
    before = sum(c.disturbed(start_us) for c in clients)
    return direct, load_s, before, {c.name: c.first_above_normal(start_us) for c in clients}


def load_row(run, n, order, trigger, avg10, measured):
    direct, load_s, before, first = measured
    made = [first[k][2] for k in ('python', 'c') if first.get(k) and first[k][2] is not None]
    daemon = f'{(min(made) - direct[0]) / 1000:.1f}' if made and direct else ''
    row = [run, n, ' '.join(order), trigger, f'{avg10:.2f}', before, len(direct), f'{load_s:.1f}', daemon]
    for name in CLIENTS:
        hit = first.get(name)
        if hit and direct:
            row += [f'{(hit[1] - direct[0]) / 1000:.1f}', hit[0]]
        else:
            row += ['', '']
    return row


def run_clients(run, names, together):
    """The clients of run @run in the order they start: all of @names, each first, middle and last in turn;
    or (the default) GLib and one client of ours, ours alternating from run to run and starting first
    every other pair of runs."""
    if together:
        k = (run - 1) % len(names)
        return names[k:] + names[:k]
    ours = [n for n in names if n != 'glib']
    pair = ['glib', ours[(run - 1) % len(ours)]]
    return pair if ((run - 1) // len(ours)) % 2 == 0 else pair[::-1]


def one_run(env, run, names, c_path, args):
    """The rows of run @run: one per load."""
    avg10 = wait_quiet()
    order = run_clients(run, names, args.together)
    socket = env.start()
    try:
        clients = start_clients(order, socket, env.env, c_path)
        try:
            for c in clients:
                if c.start_level not in ('', 'normal'):
                    print(f'the {c.name} client started at level {c.start_level}', flush=True)
            trigger = low_trigger(socket)
            time.sleep(REST_S)
            rows = []
            for n in range(1, args.loads + 1):
                settle(clients)
                rows.append([env.where] + load_row(run, n, order, trigger, avg10,
                                                   measure(env, clients, trigger, args)))
        finally:
            for c in clients:
                c.close()
    finally:
        env.stop()
    return rows


def summary(rows, names):
    b = HEADER.index('callbacks_before_load')
    clean = [r for r in rows if r[b] == 0]
    print(f'\nfirst callback above normal after the direct reader\'s first wakeup, ms, over the {len(clean)} '
          f'loads of {len(rows)} with nothing heard before the load:')
    rows = clean
    o = HEADER.index('order')
    for name in names:
        i = HEADER.index(f'{name}_ms')
        ran = [r for r in rows if name in r[o].split()]
        vals = [float(r[i]) for r in ran if r[i] != '']
        if vals:
            print(f'  {name:7} median {statistics.median(vals):8.1f}  min {min(vals):8.1f}  '
                  f'max {max(vals):8.1f}  ({len(vals)} of {len(ran)} loads)', flush=True)
        else:
            print(f'  {name:7} no callback in any run', flush=True)


def measure_all(args):
    import contextlib
    pt.require_root('it makes real cgroups, loads them and starts the daemon with a system bus name')
    bl.mlock_self()
    c_path, c_why = c_client_path(args)
    names = [n for n in CLIENTS if n != 'c' or c_path]
    if not c_path:
        print(f'C client {c_why}', flush=True)
    rows = []
    with contextlib.ExitStack() as stack:
        env = (VM if args.guest else Here)(stack)
        info = [['machine', os.uname().nodename], ['kernel', os.uname().release], ['cpus', os.cpu_count()],
                ['memtotal_kib', bl.meminfo_kib('MemTotal')],
                ['glib_version', sh('dpkg-query', '-W', '-f=${Version}', 'libglib2.0-0', check=False)],
                ['python', sys.version.split()[0]], ['c_client', 'yes' if c_path else c_why],
                ['c_client_libpressure', linked_libpressure(c_path) if c_path else ''],
                ['load', f'{LOAD_MB} MiB page-cache loop, limit {LOAD_MAX >> 20}M'],
                ['load_max_s', args.load], ['runs', args.runs], ['loads_per_run', args.loads],
                ['clients_per_run', 'all' if args.together else 'glib and one of ours'],
                ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_start', bl.loadavg()]]
        try:
            for run in range(1, args.runs + 1):
                t0 = time.monotonic()
                got = one_run(env, run, names, c_path, args)
                rows += got
                for row in got:
                    print(f'{env.where} run {run} ({time.monotonic() - t0:.0f} s): ' + ', '.join(
                        f'{h}={v}' for h, v in zip(HEADER, row)), flush=True)
        finally:
            info += [['load_end', bl.loadavg()]]
            emit = bl.emit_csv if args.guest else lambda n, h, r: bl.write_csv(args.out, n, h, r)
            emit(f'levels-{env.where}-runs.csv', HEADER, rows)
            emit(f'levels-{env.where}-info.csv', ['key', 'value'], info)
    summary(rows, names)


def main():
    if sys.argv[1:2] == ['--role']:
        {'direct': role_direct, 'python': role_python}[sys.argv[2]](sys.argv[3])
        return

    def options(p):
        p.add_argument('--guest', action='store_true', help='run the steps here, inside the VM test bed')
        p.add_argument('--vm', action='store_true', help='boot the VM test bed and run there')
        p.add_argument('--runs', type=int, default=10, help='daemon starts')
        p.add_argument('--loads', type=int, default=4, help='loads per daemon start')
        p.add_argument('--load', type=float, default=60.0, help='most seconds of load per run')
        p.add_argument('--c-client', help='the C client to run (default: the build\'s tests/bench/levels-client)')
        p.add_argument('--together', action='store_true', help='GLib and both clients of ours in every run')
    args = bl.parse_args(__doc__.splitlines()[0], options)
    if not args.vm:
        measure_all(args)
        return
    fwd = ['--guest', '--runs', str(args.runs), '--loads', str(args.loads), '--load', str(args.load)]
    if args.together:
        fwd.append('--together')
    if args.c_client:
        fwd += ['--c-client', os.path.abspath(args.c_client)]
    os.makedirs(args.out, exist_ok=True)
    per_load = args.load + SETTLE_WAIT_S
    sys.exit(bl.run_in_vm(__file__, fwd, args.out, 600 + int(args.runs * (QUIET_WAIT_S + 180 + args.loads * per_load))))


if __name__ == '__main__':
    main()
