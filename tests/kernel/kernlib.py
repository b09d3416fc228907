# SPDX-License-Identifier: MIT
"""Helpers shared by the kernel tests and measure.py.

These tests drive the built daemon against the real cgroup hierarchies of
the machine (cgroup v1 memory for vmpressure, cgroup2 for PSI), so they need
root; the generic pieces (starting the daemon, making and removing cgroups,
the memory load) live in tests/pressured_test.py.
"""
import collections
import contextlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

# Under valgrind the daemon runs 20-50 times slower: scale waits, not counts
# of kernel notifications (the kernel's pace does not change). In the VM of
# tests/vm/run.sh (emulated) everything is about ten times slower, the
# kernel's reclaim and the memory load included.
SLOW = bool(pt.WRAPPER) or pt.IN_VM
REPLY_TIMEOUT = 60.0 if SLOW else 10.0
# How long a memory load may take before the kernel reports pressure; it
# normally takes well under a second for vmpressure and about one PSI
# window (2 s) for PSI.
PRESSURE_TIMEOUT = 180.0 if pt.IN_VM else 40.0 if SLOW else 30.0

CAP_SYS_RESOURCE = 24

PSI_2S = {'stall': 'some', 'threshold_us': 100000, 'window_us': 2000000}


def event_of(msg):
    """The event of a Subscribe reply, or raise with the error reply shown."""
    if 'error' in msg:
        raise AssertionError(f'unexpected error reply: {msg!r}')
    return msg['parameters']['event']


def subscribe(d, timeout=None, **params):
    """Connect, subscribe with @params and return (client, first reply)."""
    v = pt.Varlink(d.socket, timeout=timeout or REPLY_TIMEOUT)
    v.call('io.pressured.Subscribe', params, more=True)
    return v, v.recv(timeout=timeout or REPLY_TIMEOUT)


def subscribe_ok(d, **params):
    """Subscribe and check the first reply is 'subscribed'; return the client."""
    v, msg = subscribe(d, **params)
    ev = event_of(msg)
    pt.check(ev.get('kind') == 'subscribed', 'first reply is not "subscribed"', msg)
    pt.check(msg.get('continues') is True, 'subscribed reply does not continue', msg)
    return v, ev


def subscribe_many(d, n, **params):
    clients = []
    try:
        for _ in range(n):
            v, _ = subscribe_ok(d, **params)
            clients.append(v)
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


def wait_pressure(v, start, timeout=PRESSURE_TIMEOUT):
    """Read until a 'pressure' event arrives; return (event, seconds since @start)."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no pressure event within {timeout:.0f} s')
        try:
            msg = v.recv(timeout=min(left, 1.0))
        except TimeoutError:
            continue
        ev = event_of(msg)
        pt.check(ev.get('kind') == 'pressure', 'unexpected event while waiting for pressure', msg)
        pt.check(msg.get('continues') is True, 'pressure event does not continue the stream', msg)
        return ev, time.monotonic() - start


def wait_removed(v, timeout=None):
    """Read until the stream ends; return the final message, which must be 'removed'."""
    end = time.monotonic() + (timeout or REPLY_TIMEOUT)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError('the stream did not end with "removed"')
        try:
            msg = v.recv(timeout=min(left, 1.0))
        except TimeoutError:
            continue
        ev = event_of(msg)
        if ev.get('kind') == 'removed':
            return msg
        pt.check(ev.get('kind') == 'pressure', 'unexpected event before "removed"', msg)


def registrations_on(d, cgroup):
    return [r for r in d.status()['registrations'] if r['cgroup'] == cgroup]


def fd_targets(d):
    """The daemon's open fds as a multiset of link targets (fd numbers ignored)."""
    return collections.Counter(d.fds().values())


def settled_fds(d, timeout=None):
    """Wait until the daemon's fds stop changing (e.g. a probe connection closed)."""
    end = time.monotonic() + (timeout or REPLY_TIMEOUT)
    last, stable = None, 0
    while time.monotonic() < end:
        cur = fd_targets(d)
        stable = stable + 1 if cur == last else 0
        if stable >= 5:
            return cur
        last = cur
        time.sleep(0.1)
    raise TimeoutError('the daemon\'s open fds did not settle')


def count_targets(targets, pred):
    return sum(n for t, n in targets.items() if pred(t))


def is_memory_pressure(target):
    return target.endswith('/memory.pressure') or target == '/proc/pressure/memory'


def is_eventfd(target):
    return target == 'anon_inode:[eventfd]'


def has_cap(pid, cap):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('CapEff:'):
                return bool(int(line.split()[1], 16) >> cap & 1)
    return False


def kernel_psi_error(pressure_file, text):
    """Write a PSI trigger directly; return None if accepted, else the errno."""
    fd = os.open(pressure_file, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode() + b'\0')
        return None
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


NO_V1 = 'no cgroup v1 memory hierarchy (a pure cgroup2 host)'


def no_v1(what):
    """Leave out the cgroup v1 part @what (pt.skip_part(), so that the test
    ends as a skip naming it): the machine has no cgroup v1 memory hierarchy
    (a pure cgroup2 host), so vmpressure does not exist here. Callers check
    instead that the daemon says so."""
    pt.skip_part(f'{what}: {NO_V1}')


def expect_no_vmpressure(d, cgroup):
    """On a pure cgroup2 host: vmpressure on @cgroup is SourceUnavailable, naming the source and why."""
    v, msg = subscribe(d, cgroup=cgroup, vmpressure={'level': 'low'})
    v.close()
    pt.check(msg.get('error') == 'io.pressured.SourceUnavailable', 'vmpressure without cgroup v1', msg)
    p = msg['parameters']
    pt.check(p.get('source') == 'vmpressure' and p.get('reason'), 'SourceUnavailable names vmpressure and why', p)


def quiet_daemon(**kw):
    """A daemon with no systemd notification or watchdog, so it has no reason to wake up."""
    d = pt.Daemon(**kw)
    for k in ('NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES'):
        d.env.pop(k, None)
    return d


# A hybrid host's cgroups for the v1 figures of /metrics and systemd-report
# (test-metrics-v1, test-report-v1).

HOG = 'b = []\nwhile True:\n    b.append(bytearray(1 << 20))\n'


def v1_oom_kill(v1dir):
    """The oom_kill count of @v1dir's memory.oom_control, or None (Linux before 4.13)."""
    with open(os.path.join(v1dir, 'memory.oom_control')) as f:
        for line in f:
            key, _, value = line.partition(' ')
            if key == 'oom_kill':
                return int(value)
    return None


def v1_usage(v1dir):
    with open(os.path.join(v1dir, 'memory.usage_in_bytes')) as f:
        return int(f.read())


@contextlib.contextmanager
def hybrid_cgroup(what, children=('hog',), limit=32 << 20):
    """A uniquely named cgroup P in both real hierarchies, as systemd makes its units on a hybrid host
    (cgroup2 without the memory controller), and @children of it in v1 only, the first with a @limit;
    all removed afterwards. Yields (P as the daemon names it, P's v1 and cgroup2 directories, the
    children's v1 directories). Skips without root, a v1 memory hierarchy with memory.oom_control's
    oom_kill, or where cgroup2 has the memory controller (its own files report there: @what)."""
    pt.require_root('it makes real cgroups and runs a process into a memory limit')
    if not pt.have_v1_memory():
        pt.skip('no cgroup v1 memory hierarchy: nothing of v1 to check')
    with pt.real_cgroups(v1=True, v2=True, limit=None) as (name, v1dir, v2dir):
        if os.path.exists(os.path.join(v2dir, 'memory.current')):
            pt.skip(f'cgroup2 has the memory controller here: its own files report ({what})')
        if v1_oom_kill(v1dir) is None:
            pt.skip('memory.oom_control has no oom_kill line (Linux before 4.13)')
        dirs = [os.path.join(v1dir, c) for c in children]
        try:
            for c in dirs:
                os.mkdir(c)
            for f in ('memory.limit_in_bytes', 'memory.memsw.limit_in_bytes'):
                if os.path.exists(os.path.join(dirs[0], f)):
                    with open(os.path.join(dirs[0], f), 'w') as out:
                        out.write(str(limit))
            yield name, v1dir, v2dir, dirs
        finally:
            for c in dirs:
                if os.path.isdir(c):
                    os.rmdir(c)


def oom_kill_hog(hogdir, parent):
    """Run a process that grows past @hogdir's limit until the kernel kills it; the kills v1 counted there
    (none in @parent: v1 counts a kill only in the victim's cgroup)."""
    hog = pt.run_in_cgroups([sys.executable, '-c', HOG], hogdir, None, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        rc = hog.wait(timeout=PRESSURE_TIMEOUT)
    finally:
        if hog.poll() is None:
            hog.kill()
            hog.wait()
    kills = v1_oom_kill(hogdir)
    pt.check(rc == -9 and kills >= 1, 'the kernel killed the hog in its v1 cgroup', rc, kills)
    pt.check(v1_oom_kill(parent) == 0, 'v1 counted the kill only in the victim\'s cgroup', v1_oom_kill(parent))
    return kills
