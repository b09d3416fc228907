#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Proactive reclaim ([Reclaim]) against a fake cgroup tree.

In a fake tree memory.reclaim is a plain file (or a FIFO the test reads),
so the test sees each step the daemon writes; it edits memory.pressure,
io.pressure, memory.current and memory.min between intervals. Covered:
the steps written and their sum in GetStatus and /metrics, backoff on
memory and on io stall (nothing written meanwhile), EAGAIN from the
kernel (a full FIFO) backs off, the floor from MinSize= and from
memory.min through the protection model and its journal line, a cgroup
without memory.reclaim (unsupported, one log line), a cgroup that
vanishes, Reload() turning it on, changing and off again, and that off
means no thread. Then a host without a cgroup2 hierarchy, and a real
cgroup2 cgroup without the memory controller (this machine's unified
hierarchy has none): both "unsupported", the daemon serving on."""

import importlib.util
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('test_metrics', os.path.join(HERE, 'test-metrics.py'))
tm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tm)

GIB = 1 << 30
MIB = 1 << 20
PAGE = 4096
FULL_STEP = (10 * GIB // 100) // PAGE * PAGE   # MaxStep=1% of 10G, in pages


fail = pt.fail


class Tree:
    """A fake cgroup2 tree of flat cgroups with the files the controller reads."""

    def __init__(self, root):
        self.root = root
        self.totals = {}
        os.mkdir(root)
        self.write('/', 'memory.current', 64 * GIB)

    def path(self, cg, name=None):
        d = self.root + (cg if cg != '/' else '')
        return os.path.join(d, name) if name else d

    def write(self, cg, name, value):
        if name in ('memory.current', 'memory.min', 'memory.low'):
            # Rewritten in place: the protection reader keeps these open and pread()s them.
            with open(self.path(cg, name), 'w') as f:
                f.write('%s\n' % value)
            return
        # Replaced whole, never seen half written: the walk opens these by name each interval.
        tmp = self.path(cg, '.tmp-' + name)
        with open(tmp, 'w') as f:
            f.write('%s\n' % value if value != '' else '')
        os.rename(tmp, self.path(cg, name))

    def read(self, cg, name):
        with open(self.path(cg, name)) as f:
            return f.read()

    def psi(self, cg, name, total):
        self.totals[(cg, name)] = total
        self.write(cg, name, 'some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n'
                   'full avg10=0.00 avg60=0.00 avg300=0.00 total=0' % total)

    def bump(self, cg, name, usec):
        self.psi(cg, name, self.totals[(cg, name)] + usec)

    def add(self, cg, current, minimum=0, reclaim=True):
        os.mkdir(self.path(cg))
        self.write(cg, 'memory.current', current)
        self.write(cg, 'memory.min', minimum)
        self.write(cg, 'memory.low', 0)
        self.psi(cg, 'memory.pressure', 0)
        self.psi(cg, 'io.pressure', 0)
        if reclaim:
            self.write(cg, 'memory.reclaim', '')


def config(cgroups, interval='0.2', extra=''):
    return '[Reclaim]\nCgroups=%s\nInterval=%s\n%s' % (cgroups, interval, extra)


def entries(d):
    return {e['cgroup']: e for e in d.status()['reclaim']}


def entry(d, cg):
    return entries(d).get(cg)


def wait_state(d, cg, state, bump=None):
    """Wait until @cg is in @state; @bump() is called at each poll (to keep a stall up)."""
    def pred():
        if bump:
            bump()
        e = entry(d, cg)
        return e if e and e['state'] == state else None
    return pt.wait_for(pred, what='%s %s' % (cg, state))


def threads(d):
    return len(os.listdir('/proc/%d/task' % d.pid))


def reload(d, text):
    d.write_config(text)
    p = pt.run_ctl('reload', socket=d.socket)
    if p.returncode != 0:
        fail('pressurectl reload: %d %s%s' % (p.returncode, p.stdout, p.stderr))


def intervals(t, n=2):
    """Wait until the controller wrote @n more steps to /pace, a cgroup that always takes one: the
    sync point of a check that nothing is written elsewhere, since each interval goes through every
    controlled cgroup, and the writer writes in the order the steps were decided (so a write
    decided before, still in flight, has landed too)."""
    for i in range(n):
        t.write('/pace', 'memory.reclaim', '')
        pt.wait_for(lambda: t.read('/pace', 'memory.reclaim') == str(FULL_STEP), what=f'step {i + 1} of /pace')


def wait_timerless(d, what):
    """Wait until the daemon waits for I/O only, with no timer armed: nothing can step any more."""
    if pt.WRAPPER:
        return  # valgrind has threads and timers of its own
    pt.wait_for(lambda: pt.epoll_wait_timeout(d.pid) == -1, what=f'no timer armed ({what})')


def check_steps(d, t):
    # No stall: full steps of 1% of 10G, each written whole; GetStatus sums them.
    e = pt.wait_for(lambda: (entry(d, '/a') or {}).get('reclaimed_bytes', 0) >= 2 * FULL_STEP and entry(d, '/a'),
                    what='two steps on /a')
    pt.check_eq(t.read('/a', 'memory.reclaim'), str(FULL_STEP), 'memory.reclaim of /a')
    pt.check(e['reclaimed_bytes'] % FULL_STEP == 0, 'reclaimed_bytes is a sum of steps', e)
    pt.check_eq(e['floor_bytes'], 100 * MIB, 'floor_bytes of /a (MinSize=)')
    pt.check(e['state'] == 'probing', '/a probing', e)
    # Too small for MinSize=: at the floor, nothing written.
    pt.check_eq(entry(d, '/small')['state'], 'at-floor', '/small state')
    pt.check_eq(t.read('/small', 'memory.reclaim'), '', 'memory.reclaim of /small')
    print('steps: %d bytes in steps of %d' % (e['reclaimed_bytes'], FULL_STEP))


class Stall:
    """While open, a thread adds 100 ms to a PSI total every 20 ms: far above
    0.1%, in every interval, however slowly the test itself runs."""

    def __init__(self, t, cg, name):
        self.t, self.cg, self.name = t, cg, name
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            self.t.bump(self.cg, self.name, 100000)
            self.stop.wait(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def check_backoff(d, t):
    for name, field in (('memory.pressure', 'stall_pct'), ('io.pressure', 'io_stall_pct')):
        with Stall(t, '/a', name):
            e = wait_state(d, '/a', 'backing-off')
            pt.check(e[field] > 0.1, '%s above the target while backing off' % field, e)
            pt.check_eq(e['last_step_bytes'], 0, 'last_step_bytes while backing off')
            # Let a write already in flight land, then nothing more is written.
            intervals(t, 1)
            t.write('/a', 'memory.reclaim', '')
            intervals(t)
            pt.check_eq(t.read('/a', 'memory.reclaim'), '', 'memory.reclaim while backing off on %s' % name)
            pt.check_eq(entry(d, '/a')['state'], 'backing-off', 'state under %s stall' % name)
        # Quiet again: probing, and steps resume.
        pt.wait_for(lambda: t.read('/a', 'memory.reclaim') == str(FULL_STEP), what='steps after backoff')
        print('backoff on %s: ok' % name)


def full_fifo(path):
    """A FIFO at @path, full, with its reading end open: a write fails with
    EAGAIN, as the kernel's memory.reclaim does when it cannot reclaim the
    amount. Returns (read fd, write fd)."""
    os.mkfifo(path)
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(wfd, b'x' * 4096)
    except BlockingIOError:
        pass
    return rfd, wfd


def check_eagain(d, t, rfd, wfd):
    e = wait_state(d, '/eagain', 'backing-off')
    pt.check(e['stall_pct'] == 0 and e['io_stall_pct'] == 0, 'EAGAIN backs off without a stall', e)
    pt.check_eq(e['reclaimed_bytes'], 0, 'nothing counted after EAGAIN')
    # Drained, the FIFO takes the next step: the controller tries again.
    os.close(wfd)
    while _read_some(rfd):
        pass
    got = pt.wait_for(lambda: _read_some(rfd), what='a step into the FIFO')
    pt.check_eq(got, str(FULL_STEP).encode(), 'the step written into the FIFO')
    pt.wait_for(lambda: entry(d, '/eagain')['reclaimed_bytes'] >= FULL_STEP, what='reclaimed after EAGAIN')
    print('EAGAIN: backed off, then %s' % got.decode())


def _read_some(fd):
    try:
        return os.read(fd, 64) or None
    except BlockingIOError:
        return None


def check_floor(d, t):
    # memory.min of a child of the root is its effective memory.min: the
    # floor, above MinSize=; the step stops at it.
    t.write('/a', 'memory.min', 10 * GIB - MIB)
    t.write('/a', 'memory.reclaim', '')
    pt.wait_for(lambda: entry(d, '/a')['floor_bytes'] == 10 * GIB - MIB, what='floor from memory.min')
    pt.wait_for(lambda: t.read('/a', 'memory.reclaim') == str(MIB), what='a 1M step down to the floor')
    t.write('/a', 'memory.current', 10 * GIB - MIB)
    e = wait_state(d, '/a', 'at-floor')
    before = e['reclaimed_bytes']
    t.write('/a', 'memory.reclaim', '')
    intervals(t)
    pt.check_eq(t.read('/a', 'memory.reclaim'), '', 'memory.reclaim at the floor')
    log = d.log()
    pt.check_eq(log.count('Reclaim: /a reached its floor of %d bytes' % (10 * GIB - MIB)), 1, 'floor journal lines')
    pt.check_eq(log.count('Reclaim: /small reached its floor'), 1, 'floor journal line of /small')
    # /metrics agrees with GetStatus while nothing moves.
    port = d.metrics_port
    _, samples = tm.parse_exposition(tm.get(port, '/metrics')[2])
    pt.check_eq(samples[('pressured_reclaim_bytes_total', (('cgroup', '/a'),))], float(before),
                'pressured_reclaim_bytes_total of /a')
    for state in ('probing', 'backing-off', 'at-floor', 'unsupported'):
        pt.check_eq(samples[('pressured_reclaim_state', (('cgroup', '/a'), ('state', state)))],
                    1.0 if state == 'at-floor' else 0.0, 'pressured_reclaim_state %s of /a' % state)
    types, _ = tm.parse_exposition(tm.get(port, '/metrics')[2])
    pt.check_eq(types.get('pressured_reclaim_bytes_total'), 'counter', 'TYPE of pressured_reclaim_bytes_total')
    pt.check_eq(types.get('pressured_reclaim_state'), 'gauge', 'TYPE of pressured_reclaim_state')
    print('floor: %d bytes, metrics agree' % (10 * GIB - MIB))


def check_unsupported_and_vanished(d, t):
    e = wait_state(d, '/noreclaim', 'unsupported')
    pt.check_eq(e['reclaimed_bytes'], 0, 'nothing reclaimed without memory.reclaim')
    pt.check_eq(d.log().count('cannot be reclaimed'), 1, '"cannot be reclaimed" lines')
    shutil.rmtree(t.path('/small'))
    pt.wait_for(lambda: '/small' not in entries(d), what='/small leaving')
    print('unsupported and vanished: ok')


def check_reload(d, t, port):
    reload(d, config('/a', extra='MaxStep=2%%\n[Metrics]\nListen=127.0.0.1:%d\n' % port))
    pt.wait_for(lambda: set(entries(d)) == {'/a'}, what='only /a after reload')
    t.write('/a', 'memory.min', 0)
    t.write('/a', 'memory.current', 10 * GIB)
    two = (10 * GIB * 2 // 100) // PAGE * PAGE
    pt.wait_for(lambda: t.read('/a', 'memory.reclaim') == str(two), what='MaxStep=2% after reload')
    reload(d, config('', extra='[Metrics]\nListen=127.0.0.1:%d\n' % port))
    pt.wait_for(lambda: d.status()['reclaim'] == [], what='reclaim off')
    pt.check_eq(threads(d), 1, 'threads with [Reclaim] off')
    _, samples = tm.parse_exposition(tm.get(port, '/metrics')[2])
    pt.check(not any(k[0].startswith('pressured_reclaim_') for k in samples), 'no reclaim series when off',
             sorted(samples)[:5])
    t.write('/a', 'memory.reclaim', '')
    wait_timerless(d, '[Reclaim] off')
    pt.check_eq(t.read('/a', 'memory.reclaim'), '', 'memory.reclaim after turning it off')
    reload(d, config('/a', extra='[Metrics]\nListen=127.0.0.1:%d\n' % port))
    pt.wait_for(lambda: t.read('/a', 'memory.reclaim') == str(FULL_STEP), what='steps after turning it on')
    pt.check_eq(threads(d), 2, 'threads with [Reclaim] on')
    print('reload: on, changed, off, on')


def fake_tree_checks(tmp):
    t = Tree(os.path.join(tmp, 'tree'))
    t.add('/a', 10 * GIB)
    t.add('/small', 50 * MIB)
    t.add('/noreclaim', 10 * GIB, reclaim=False)
    t.add('/eagain', 10 * GIB, reclaim=False)
    t.add('/other', 10 * GIB)
    t.add('/pace', 10 * GIB)
    rfd, wfd = full_fifo(t.path('/eagain', 'memory.reclaim'))
    port = pt.free_port()
    d = pt.Daemon(config_text=config('/a /small /noreclaim /eagain /nothere /pace',
                                     extra='[Metrics]\nListen=127.0.0.1:%d\n' % port), cgroup_root=t.root)
    d.metrics_port = port
    with d:
        tm.wait_listening(port)
        pt.check_eq(threads(d), 2, 'threads with [Reclaim] on (the loop and the writer)')
        if not pt.WRAPPER:
            # What wait_timerless() tells apart: on, the loop waits with the interval's timer.
            pt.wait_for(lambda: 0 < (pt.epoll_wait_timeout(d.pid) or -1) <= 200, what='the interval\'s timer armed')
        check_steps(d, t)
        pt.check('/other' not in entries(d), 'a cgroup no pattern matches is not controlled', entries(d))
        check_backoff(d, t)
        check_eagain(d, t, rfd, wfd)
        check_floor(d, t)
        check_unsupported_and_vanished(d, t)
        check_reload(d, t, port)
    os.close(rfd)


def off_checks(tmp):
    # Off (Cgroups= empty, the other keys set): no thread, an empty list, no wakeup.
    with pt.Daemon(config_text=config('', extra='MaxStep=5%\nMinSize=1G\n')) as d:
        pt.check_eq(d.status()['reclaim'], [], 'reclaim when off')
        pt.check_eq(threads(d), 1, 'threads when off')
        # No timer: it cannot wake but for a client.
        wait_timerless(d, 'an idle daemon with [Reclaim] off')
    # No cgroup2 hierarchy (a v1-only host): the patterns are listed unsupported, once in the log.
    with pt.Daemon(config_text=config('/system.slice/*.service'),
                   cgroup_root=os.path.join(tmp, 'does-not-exist')) as d:
        got = d.status()['reclaim']
        pt.check_eq(got, [{'cgroup': '/system.slice/*.service', 'reclaimed_bytes': 0, 'last_step_bytes': 0,
                           'stall_pct': 0.0, 'io_stall_pct': 0.0, 'floor_bytes': 0, 'state': 'unsupported'}],
                    'reclaim without a cgroup2 hierarchy')
        pt.check_eq(d.log().count('no cgroup2 hierarchy, so [Reclaim]'), 1, 'log lines without a hierarchy')
        pt.check_eq(threads(d), 1, 'threads without a hierarchy')
    print('off and no hierarchy: ok')


def real_tree_check():
    v2 = pt.V2_ROOT
    with pt.v2_cgroup_part('reclaim') as name:
        if name is None:
            return
        with pt.Daemon(config_text=config(name)) as d:
            if os.path.exists(v2 + name + '/memory.reclaim'):
                # A kernel with the memory controller on cgroup2: an empty
                # cgroup is below MinSize=, so at its floor.
                e = wait_state(d, name, 'at-floor')
            else:
                e = wait_state(d, name, 'unsupported')
                pt.check_eq(d.log().count('cannot be reclaimed'), 1, 'log lines for the real cgroup')
            print('real cgroup %s: %s' % (name, e['state']))


def main():
    with tempfile.TemporaryDirectory(prefix='pressured-reclaim-') as tmp:
        fake_tree_checks(tmp)
        off_checks(tmp)
    real_tree_check()
    pt.finish()


if __name__ == '__main__':
    main()
