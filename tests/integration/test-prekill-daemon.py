#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Warnings before a kill from the built daemon to every client, with
prekill_test's stand-in for systemd-oomd: a varlink client that calls
io.systemd.oom.Prekill.Notify(cgroup) on the daemon's hook socket
([Prekill] Socket= in the test's configuration, Deadline=30s) as
systemd-oomd 260 does before it kills, and waits for the reply.

Three programs follow a quiet cgroup of the test's own, the victim:
pressurectl watch --kills with --exec (the hook saves a file), a
libpressure monitor (prekill-probe monitor: its handler puts the
acknowledgement off and its loop saves, then acknowledges) and the Python
module's watch_levels() in a child process (saves, then acknowledges).
Each gets the warning, with the victim, "systemd-oomd", one id and one
deadline; each saves its file and acknowledges; the Notify reply comes
after all three (every file is there when it comes, and long before the
30 s deadline), and GetStatus counts one warned call, acknowledged.
Then a warned subscriber that does not acknowledge holds the reply until
the deadline ([Prekill] Deadline=2s), and an acknowledgement of a warning
answered already is NoSuchPrekill in each client.
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402
import prekill_test  # noqa: E402

check = pt.check
WAIT = pt.scaled(20.0)
PROBE = os.path.join(pt.BUILD_ROOT, 'tests', 'integration', 'prekill-probe')
MODULE_DIR = os.path.join(pt.BUILD_ROOT, 'client', 'python')

# The Python subscriber: says "ready" at its first level, then saves and acknowledges the warning; once
# told that systemd-oomd was answered, acknowledges again (then NoSuchPrekill: before, it would count for
# another warned subscriber of root's).
PYTHON_SUBSCRIBER = '''
import sys, pressured
cgroup, socket_path, save = sys.argv[1:4]
for ev in pressured.watch_levels(cgroup, socket=socket_path):
    if isinstance(ev, pressured.LevelEvent):
        print('ready', flush=True)
        continue
    print(f'prekill {ev.cgroup} id={ev.id} deadline={ev.deadline_us} by={ev.by}', flush=True)
    with open(save, 'w') as f:
        f.write(f'saved {ev.id}\\n')
    ev.acknowledge()
    print(f'acknowledged {ev.id}', flush=True)
    sys.stdin.readline()  # the daemon has answered systemd-oomd
    try:
        ev.acknowledge()  # once: a second call does nothing
        pressured.Client(socket_path).acknowledge_prekill(ev.id)
    except pressured.NoSuchPrekill as e:
        print(f'no-such {e.id}', flush=True)
    break
'''


class Lines:
    """A program in the background whose stdout is read line by line, with a deadline."""

    def __init__(self, cmd, env=None):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env)
        self.buf = b''
        self.lines = []

    def line(self, timeout=WAIT):
        end = time.monotonic() + timeout
        while b'\n' not in self.buf:
            r, _, _ = select.select([self.proc.stdout], [], [], max(end - time.monotonic(), 0))
            data = os.read(self.proc.stdout.fileno(), 4096) if r else b''
            if not data:
                raise AssertionError(f'no line from {self.proc.args!r} (exit {self.proc.poll()}), so far: '
                                     f'{self.lines!r}')
            self.buf += data
        line, self.buf = self.buf.split(b'\n', 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    def wait_line(self, pred, what):
        while True:
            line = self.line()
            if pred(line):
                return line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


def notify(hook, cgroup, files=(), timeout=WAIT):
    """systemd-oomd's call through the stand-in of prekill_test: Notify(@cgroup), then its answer, how
    long it took, and which of @files existed when it came."""
    oomd = prekill_test.Oomd(hook)
    try:
        start = time.monotonic()
        oomd.notify(cgroup)
        reply = oomd.answer(timeout=timeout)
        return reply, time.monotonic() - start, [os.path.exists(f) for f in files]
    finally:
        oomd.close()


def prekill_fields(line):
    words = line.split()
    return words[0], words[1], dict(w.split('=', 1) for w in words[2:] if '=' in w)


def config(hook, deadline):
    return f'[Prekill]\nSocket={hook}\nDeadline={deadline}\n'


def test_every_client(tmp, cg):
    hook = os.path.join(tmp, 'oomd.prekill.hook', 'pressured')
    saved = {name: os.path.join(tmp, f'saved-{name}') for name in ('pressurectl', 'monitor', 'python')}
    with pt.Daemon(config_text=config(hook, '30s')) as d:
        pt.wait_for(lambda: os.path.exists(hook), timeout=WAIT, what='the hook socket')
        script = (f'[ "$PRESSURE_KIND" = prekill ] || exit 0; echo "saved $PRESSURE_DEADLINE_US" > '
                  f'{saved["pressurectl"]}')
        ctl = Lines(pt.WRAPPER + [pt.PRESSURECTL, '--socket', d.socket, 'watch', cg, '--kills', '--count', '1',
                                  '--exec', 'sh', '-c', script])
        monitor = Lines(pt.WRAPPER + [PROBE, 'monitor', cg],
                        env=dict(os.environ, PRESSURED_SOCKET=d.socket, PREKILL_SAVE=saved['monitor']))
        python = Lines([sys.executable, '-c', PYTHON_SUBSCRIBER, cg, d.socket, saved['python']],
                       env=dict(os.environ, PYTHONPATH=MODULE_DIR))
        try:
            check(ctl.line().startswith(f'Watching {cg}: kills'), 'pressurectl subscribed', ctl.lines)
            check(monitor.line() == 'level normal', 'the monitor follows the level', monitor.lines)
            check(python.line() == 'ready', 'the Python module follows the level', python.lines)

            reply, waited, present = notify(hook, cg, list(saved.values()))
            check('error' not in reply and not reply.get('parameters'), 'Notify answered', reply)
            check(all(present), 'every state file was saved before the reply', present)
            check(waited < 25, 'answered when all acknowledged, not at the 30 s deadline', waited)

            kind, victim, kv = prekill_fields(monitor.wait_line(lambda x: x.startswith('prekill'), 'monitor'))
            check(victim == cg and kv['by'] == 'systemd-oomd', 'the monitor: the victim, by systemd-oomd', kv)
            check(monitor.line() == f'saved {kv["id"]}' and monitor.line() == f'acknowledged {kv["id"]}',
                  'the monitor saved, then acknowledged', monitor.lines)
            _, victim_py, kv_py = prekill_fields(python.line())
            check(victim_py == cg and kv_py == kv, 'Python: the same warning', kv_py, kv)
            python.proc.stdin.write(b'again\n')
            python.proc.stdin.flush()
            check(python.line() == f'acknowledged {kv["id"]}' and python.line() == f'no-such {kv["id"]}',
                  'Python: acknowledged once; another acknowledgement is NoSuchPrekill', python.lines)
            line = ctl.line()
            check(line.split()[2:4] == ['prekill', cg] and 'by systemd-oomd (deadline in' in line,
                  'pressurectl: the prekill line', line)
            with open(saved['pressurectl']) as f:
                check(f.read().split() == ['saved', kv['deadline']], 'the hook had $PRESSURE_DEADLINE_US', kv)
            check(ctl.proc.wait(timeout=WAIT) == 0, 'pressurectl ends at --count 1', ctl.lines)
            st = d.status()['prekill']
            check(st == {'warned': 1, 'acknowledged': 1, 'deadline_reached': 0, 'pending': 0},
                  'GetStatus: one warned call, acknowledged', st)
        finally:
            for p in (ctl, monitor, python):
                p.stop()


def test_deadline(tmp, cg):
    """A subscriber that does not acknowledge holds the reply until the deadline; an acknowledgement
    after it is NoSuchPrekill, said by pressurectl only before the deadline."""
    hook = os.path.join(tmp, 'hook2', 'pressured')
    deadline = pt.scaled(2.0)
    with pt.Daemon(config_text=config(hook, f'{int(deadline * 1000)}ms')) as d:
        pt.wait_for(lambda: os.path.exists(hook), timeout=WAIT, what='the hook socket')
        # A kills subscription that never acknowledges: pressurectl's hook outlives the deadline.
        ctl = Lines(pt.WRAPPER + [pt.PRESSURECTL, '--socket', d.socket, 'watch', cg, '--kills', '--count', '1',
                                  '--exec', 'sh', '-c', '[ "$PRESSURE_KIND" = prekill ] && exec sleep 60; :'])
        try:
            check(ctl.line().startswith(f'Watching {cg}: kills'), 'pressurectl subscribed', ctl.lines)
            reply, waited, _ = notify(hook, cg, timeout=WAIT + deadline)
            check('error' not in reply, 'answered', reply)
            check(waited >= deadline * 0.9, 'not before the deadline', waited)
            check(ctl.proc.wait(timeout=WAIT) == 0, 'pressurectl ends after its hook', ctl.lines)
            err = ctl.proc.stderr.read().decode()
            check("is still running at the warning's deadline, sending SIGTERM" in err, 'the hook terminated', err)
            check('cannot acknowledge' not in err, 'its acknowledgement past the deadline goes unsaid', err)
            st = d.status()['prekill']
            check(st['warned'] == 1 and st['deadline_reached'] == 1 and st['pending'] == 0,
                  'GetStatus: the deadline reached', st)
        finally:
            ctl.stop()


def main():
    pt.require_root('the victim is a cgroup of the test\'s own, and Notify is taken from root')
    tmp = tempfile.mkdtemp(prefix='pressured-prekill-daemon-')
    os.chmod(tmp, 0o755)
    try:
        with pt.quiet_cgroup() as cg:
            test_every_client(tmp, cg)
            test_deadline(tmp, cg)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
