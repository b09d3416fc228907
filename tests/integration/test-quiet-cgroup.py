#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The harness's quiet cgroup (pressured_test.quiet_cgroup()): an empty
cgroup2 directory named as the daemon names it, where a level subscription
is PSI and only injected events arrive; removed at exit, also when the test
fails or is stopped with SIGTERM (meson's timeout); skipped (exit 77) with a reason without root, cgroup2 or
memory.pressure; the cgroup2 mount found in mountinfo as the daemon finds
it."""
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
check_eq = pt.check_eq


def skipped(fn):
    """The exit status and output of fn() run where pt.skip() exits."""
    try:
        fn()
    except SystemExit as e:
        return e.code
    return None


def test_mountinfo():
    text = ('24 29 0:22 / /sys rw,nosuid - sysfs sysfs rw\n'
            '30 24 0:26 /sub /sys/fs/cgroup/elsewhere rw - cgroup2 cgroup2 rw\n'
            '31 24 0:26 / /sys/fs/cgroup/with\\040blank rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n'
            '32 24 0:27 / /sys/fs/cgroup/second rw - cgroup2 cgroup2 rw\n')
    check_eq(pt.cgroup2_mount(text), '/sys/fs/cgroup/with blank',
             'the first cgroup2 mount of the root, octal escapes decoded')
    check_eq(pt.cgroup2_mount('24 29 0:22 / /sys rw - sysfs sysfs rw\n'), None, 'no cgroup2 mount')


def test_quiet(d):
    root = pt.cgroup2_mount()
    with pt.quiet_cgroup() as cg:
        check(re.fullmatch(rf'/pressured-test-{os.getpid()}-[0-9a-f]{{8}}', cg), 'named after the test', cg)
        path = os.path.join(root, cg.lstrip('/'))
        with open(os.path.join(path, 'cgroup.procs')) as f:
            check_eq(f.read(), '', 'no task in the quiet cgroup')
        v = pt.Varlink(d.socket, timeout=pt.scaled(10))
        ev = v.subscribe(cgroup=cg, level='medium')['parameters']['event']
        check(ev['kind'] == 'subscribed' and ev['cgroup'] == cg and ev['source'] == 'psi',
              'a level subscription on it is PSI of that cgroup', ev)
        check_eq(d.inject('medium', cg)['parameters']['delivered'], 1, 'Inject on it')
        ev = v.recv(timeout=pt.scaled(10))['parameters']['event']
        check(ev['source'] == 'inject' and ev['seq'] == 1, 'the injected event, first', ev)
        v.close()
        # No task ever stalled in it: the kernel has nothing to report.
        with open(os.path.join(path, 'memory.pressure')) as f:
            totals = re.findall(r'total=(\d+)', f.read())
        check(totals and all(t == '0' for t in totals), 'no stall was ever accounted to it', totals)
        pt.wait_for(lambda: d.status()['registrations'] == [], what='the registration to go')
    check(not os.path.exists(path), 'removed at exit', path)

    # Removed when the body fails too.
    try:
        with pt.quiet_cgroup() as cg:
            path = os.path.join(root, cg.lstrip('/'))
            raise KeyError('a failing test')
    except KeyError:
        pass
    check(not os.path.exists(path), 'removed after an exception', path)


def test_skips():
    print('the skip paths, each saying why:', flush=True)
    real = pt.cgroup2_mount

    def enter():
        with pt.quiet_cgroup():
            raise AssertionError('the body ran')
    try:
        pt.cgroup2_mount = lambda mountinfo=None: None
        check_eq(skipped(enter), 77, 'no cgroup2 mount: exit 77')
        with tempfile.TemporaryDirectory() as fake:
            # A directory that is no cgroup2 hierarchy.
            pt.cgroup2_mount = lambda mountinfo=None: fake
            check_eq(skipped(enter), 77, 'no cgroup.procs at the mount point: exit 77')
            # Subdirectories without memory.pressure: PSI is off in cgroup2.
            open(os.path.join(fake, 'cgroup.procs'), 'w').close()
            check_eq(skipped(enter), 77, 'no memory.pressure: exit 77')
            check_eq(os.listdir(fake), ['cgroup.procs'], 'the directory made is removed when skipping')
    finally:
        pt.cgroup2_mount = real

    def as_nobody():
        try:
            with pt.quiet_cgroup():
                return 'the body ran'
        except SystemExit as e:
            return e.code
    check_eq(pt.run_as('nobody', as_nobody), 77, 'without root: exit 77')


WAIT = 60.0 if pt.WRAPPER else 10.0

SIGTERM_CHILD = """
import os, sys, time
sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt
with pt.quiet_cgroup() as cg:
    r, w = os.pipe()
    if os.fork() == 0:  # a forked child that is stopped too must not remove it
        os.write(w, b'x')  # past fork: a signal now reaches the handler
        time.sleep(600)
    os.read(r, 1)
    print(cg, flush=True)
    time.sleep(600)
"""


def test_sigterm():
    """A test stopped with SIGTERM (meson's timeout) still removes its quiet
    cgroup, and exits with 128 + SIGTERM; its forked children don't remove it."""
    proc = subprocess.Popen([sys.executable, '-c', SIGTERM_CHILD], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        cg = proc.stdout.readline().strip()
        path = pt.cgroup2_mount() + cg
        pt.check(cg.startswith('/pressured-test-') and os.path.isdir(path), 'the child made its quiet cgroup', cg)
        children = [int(x) for x in open(f'/proc/{proc.pid}/task/{proc.pid}/children').read().split()]
        pt.check(len(children) == 1, 'the child forked once', children)
        os.kill(children[0], signal.SIGTERM)
        pt.wait_for(lambda: not os.path.exists(f'/proc/{children[0]}/cmdline') or
                    open(f'/proc/{children[0]}/stat').read().rpartition(')')[2].split()[0] == 'Z',
                    timeout=WAIT, what='the forked child to exit')
        pt.check(os.path.isdir(path), 'a forked child stopped by SIGTERM leaves the cgroup alone', path)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=WAIT)
        pt.check_eq(rc, 128 + signal.SIGTERM, 'exit status on SIGTERM')
        pt.check(not os.path.exists(path), 'the quiet cgroup is removed on SIGTERM', path)
    finally:
        pt.kill_group(proc)


def main():
    pt.require_root('the quiet cgroup is made in the machine\'s cgroup2 hierarchy')
    test_mountinfo()
    test_skips()
    if pt.cgroup2_mount() is None:
        pt.skip('no cgroup2 hierarchy (the helper itself was checked)')
    test_sigterm()
    with pt.Daemon() as d:
        test_quiet(d)
    pt.finish()


if __name__ == '__main__':
    main()
