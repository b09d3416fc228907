#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl watch --kills [CGROUP]: the request it sends, one line per
kill (who killed and why, the count when more than one, missed events),
the header naming the killers, --json passing the events through, --count,
the usage errors, and a daemon that does not know kills, against a fake
daemon with fixed events; then against the built daemon on a fake cgroup
tree, where a rise of oom_kill in memory.events is a kill by the kernel,
with test-kills-oomd's stand-in systemd-oomd on a private system bus."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
WAIT = pt.scaled(20.0)
SCOPE = '/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox.scope'
# 2026-12-01 21:40:03 and 21:41:17 UTC.
T0 = 1796161203 * 1000000 + 250000
T1 = 1796161277 * 1000000
EVENTS = [
    {'kind': 'killed', 'cgroup': SCOPE, 'by': 'systemd-oomd', 'reason': 'memory-pressure', 'count': 1, 'seq': 1,
     'missed': 0, 'time_us': T0, 'monotonic_us': 5000000},
    {'kind': 'killed', 'cgroup': '/user.slice', 'by': 'kernel', 'reason': 'oom_kill', 'count': 2, 'seq': 3,
     'missed': 1, 'time_us': T1, 'monotonic_us': 6000000, 'something_new': True},
]
LINES = [
    f'2026-12-01 21:40:03  killed  {SCOPE}  by systemd-oomd (memory-pressure)',
    '2026-12-01 21:41:17  killed  /user.slice  by kernel (oom_kill, 2 kills)  missed=1',
]
UTC = {'TZ': 'UTC'}


def expect(res, code, what):
    check(res.returncode == code, f'{what}: exit {res.returncode}, expected {code}', res.stdout, res.stderr)
    return res


class Fake(pt.FakeVarlinkServer):
    """A daemon that knows kills: subscribed with self.sources, the EVENTS, then removed."""

    def __init__(self, path):
        self.requests = []
        self.sources = ['kernel', 'systemd-oomd']
        self.unavailable = None  # unavailable_kill_sources, left out when None (a daemon before 0.4)
        self.old = False
        super().__init__(path, self.answer)

    def answer(self, call):
        params = call.get('parameters', {})
        self.requests.append(params)
        if self.old:
            return [{'error': 'org.varlink.service.InvalidParameter', 'parameters': {'parameter': 'kills'}}]
        cgroup = params.get('cgroup', '/')
        sub = {'kind': 'subscribed', 'cgroup': cgroup, 'source': 'kills', 'resource': 'memory', 'trigger': {},
               'adjusted': False, 'state': {'kill_sources': self.sources}}
        if self.unavailable is not None:
            sub['state']['unavailable_kill_sources'] = self.unavailable
        events = [sub] + EVENTS + [{'kind': 'removed', 'cgroup': cgroup, 'seq': 4}]
        return [{'parameters': {'event': e}, 'continues': e['kind'] != 'removed'} for e in events]


def test_fake(tmp):
    fake = Fake(os.path.join(tmp, 'fake.sock'))
    sock = fake.path
    try:
        res = expect(pt.run_ctl('watch', '--kills', '/user.slice', socket=sock, env=UTC), 0, 'watch --kills')
        check(fake.requests[-1] == {'cgroup': '/user.slice', 'kills': True}, 'Subscribe kills: true on the cgroup',
              fake.requests)
        lines = res.stdout.splitlines()
        check(lines[0] == 'Watching /user.slice: kills by kernel, systemd-oomd', 'the header names the killers',
              lines)
        check(lines[1:3] == LINES, 'one line per kill: time, cgroup, who and why, the count of more than one',
              lines)
        check(len(lines) == 4 and lines[3].split()[2:] == ['/user.slice', 'removed'],
              'removed ends the watch', lines)

        # The whole system by default; --min-interval goes with the request.
        expect(pt.run_ctl('watch', '--kills', '--min-interval', '1500', socket=sock, env=UTC), 0,
               'watch --kills --min-interval')
        check(fake.requests[-1] == {'kills': True, 'min_interval_ms': 1500}, 'no cgroup, the interval',
              fake.requests)

        # --json: the events as sent, one per line, the subscribed one first; nothing on stderr.
        res = expect(pt.run_ctl('--json', 'watch', '--kills', '/user.slice', socket=sock), 0, 'watch --kills --json')
        got = [json.loads(line) for line in res.stdout.splitlines()]
        check(got[0]['kind'] == 'subscribed' and got[0]['state']['kill_sources'] == ['kernel', 'systemd-oomd'],
              'the subscribed event names the killers', got)
        check(got[1:3] == EVENTS and got[3]['kind'] == 'removed', 'the events as the daemon sent them', got)
        pt.check_eq(res.stderr, '', 'nothing on stderr')

        # --count counts kills.
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0,
                     'watch --kills --count 1')
        check(res.stdout.splitlines()[1:] == LINES[:1], 'one kill, then the end', res.stdout)

        # No killer can report yet (systemd-oomd not running, no memory.events watch).
        fake.sources = []
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0, 'no killers')
        check(res.stdout.splitlines()[0] == 'Watching /: kills (no killer reports yet)', 'the header says so',
              res.stdout)

        # The daemon says why the killers cannot report: the header says it too.
        fake.unavailable = [{'source': 'kernel', 'reason': 'no memory controller'},
                            {'source': 'systemd-oomd', 'reason': 'no system bus'}]
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0, 'no killers, why')
        check(res.stdout.splitlines()[0] == 'Watching /: kills; no killer can report here: kernel: no memory '
              'controller; systemd-oomd: no system bus', 'the header says which cannot report and why', res.stdout)
        fake.sources = ['kernel']
        fake.unavailable = fake.unavailable[1:]
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0, 'one killer, why')
        check(res.stdout.splitlines()[0] == 'Watching /: kills by kernel; systemd-oomd cannot report here: '
              'no system bus', 'the header names the one that cannot report', res.stdout)
        fake.unavailable = None

        # A daemon before kills: its InvalidParameter, exit 1.
        fake.old = True
        res = expect(pt.run_ctl('watch', '--kills', socket=sock), 1, 'a daemon without kills')
        check('kills' in res.stderr, 'the error names the parameter', res.stderr)
    finally:
        fake.close()


def test_usage():
    for args, what in ((['--kills', '--level', 'low'], 'kills with another selector'),
                       (['--kills', '--memory-events'], 'kills with memory events'),
                       (['--kills', '--resource', 'cpu'], 'kills of cpu'),
                       (['--kills', '--until-cleared'], 'kills have no episodes')):
        res = expect(pt.run_ctl('watch', *args, socket='/nonexistent'), 2, what)
        check(res.stdout == '' and 'pressurectl' in res.stderr and ('--' in res.stderr),
              f'{what}: says which options clash', res.stderr)
    res = expect(pt.run_ctl('watch', '--help'), 0, 'watch --help')
    check('--kills' in res.stdout, 'watch --help lists --kills', res.stdout)


def oomd_helpers():
    """Bus and Standin of test-kills-oomd.py: a private system bus and a stand-in org.freedesktop.oom1."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test-kills-oomd.py')
    spec = importlib.util.spec_from_file_location('kills_oomd_test', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Bus, mod.Standin


def set_events(root, cgroup, **counters):
    """Rewrite memory.events of @cgroup in place with one write, as the kernel does."""
    text = ''.join(f'{k} {counters.get(k, 0)}\n' for k in ('low', 'high', 'max', 'oom', 'oom_kill')).encode()
    fd = os.open(os.path.join(root, cgroup.lstrip('/'), 'memory.events'), os.O_WRONLY)
    try:
        os.pwrite(fd, text, 0)
        os.ftruncate(fd, len(text))
    finally:
        os.close(fd)


class Watch:
    """pressurectl watch in the background, its output in files."""

    def __init__(self, tmp, name, socket, *args):
        self.out_path = os.path.join(tmp, name + '.out')
        self.err_path = os.path.join(tmp, name + '.err')
        with open(self.out_path, 'w') as out, open(self.err_path, 'w') as err:
            self.proc = subprocess.Popen(pt.WRAPPER + [pt.PRESSURECTL, '--socket', socket] + list(args),
                                         stdout=out, stderr=err, env=dict(os.environ, **UTC))

    def lines(self):
        with open(self.out_path) as f:
            return f.read().splitlines()

    def wait_lines(self, n, what):
        """Wait for @n lines of output (the header included)."""
        return pt.wait_for(lambda: len(self.lines()) >= n and self.lines(), timeout=WAIT, what=what)

    def wait(self):
        try:
            return self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def kill_sources(d):
    """kill_sources of a new whole-system kills subscription (which then ends)."""
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return v.subscribe(kills=True)['parameters']['event']['state']['kill_sources']
    finally:
        v.close()


def kills_subscribers(d):
    return sum(r['subscribers'] for r in d.status()['registrations'] if r['source'] == 'kills')


TIME = r'[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}'


def test_daemon(tmp):
    Bus, Standin = oomd_helpers()
    fake = os.path.join(tmp, 'v2')
    app = '/user.slice/user-1000.slice/user@1000.service/app.slice'
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/user.slice': {}, '/user.slice/user-1000.slice': {},
                             '/user.slice/user-1000.slice/user@1000.service': {}, app: {},
                             app + '/app-firefox.scope': {}, '/system.slice': {}, '/system.slice/web.service': {}})
    bus = Bus(tmp)
    standin = Standin(bus)
    try:
        standin.do('own')
        with pt.Daemon(cgroup_root=fake, env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
            # The first kills subscriber connects the daemon to the bus; it hears systemd-oomd once it
            # has seen who owns org.freedesktop.oom1.
            holder = pt.Varlink(d.socket, timeout=WAIT)
            holder.subscribe(kills=True)
            pt.wait_for(lambda: 'systemd-oomd' in kill_sources(d), timeout=WAIT, what='the daemon to hear systemd-oomd')
            # The whole system: a kill by systemd-oomd, then two by the kernel on a top-level cgroup.
            w = Watch(tmp, 'system', d.socket, 'watch', '--kills', '--count', '2')
            w.wait_lines(1, 'the header')
            standin.do(f'kill {app}/app-firefox.scope memory-pressure')
            w.wait_lines(2, 'the kill by systemd-oomd')
            set_events(fake, '/system.slice', oom_kill=2)
            lines = w.wait_lines(3, 'the kills by the kernel')
            check(w.wait() == 0, 'watch --count 2 exits 0', w.lines())
            with open(w.err_path) as f:
                err = f.read()
            check(err == '' and len(lines) == 3 and lines[0] == 'Watching /: kills by kernel, systemd-oomd',
                  'the header names both killers', lines, err)
            check(re.fullmatch(TIME + f'  killed  {app}/app-firefox.scope  by systemd-oomd \\(memory-pressure\\)',
                               lines[1]), 'the line of a kill by systemd-oomd', lines[1])
            check(re.fullmatch(TIME + '  killed  /system.slice  by kernel \\(oom_kill, 2 kills\\)', lines[2]),
                  'the line of two kills by the kernel on the top-level cgroup', lines[2])
            print('\n'.join(lines), flush=True)

            # --json on a subtree: the events as the daemon sent them; kills elsewhere do not come.
            w = Watch(tmp, 'json', d.socket, '--json', 'watch', '--kills', app, '--count', '2')
            pt.wait_for(lambda: kills_subscribers(d) == 2, timeout=WAIT, what='the JSON watch subscribed')
            standin.do('kill /system.slice/web.service memory-used')
            standin.do(f'kill {app}/app-firefox.scope memory-used')
            set_events(fake, app, oom_kill=1)
            lines = w.wait_lines(3, 'two kills in the subtree')
            check(w.wait() == 0, 'watch --json --count 2 exits 0', lines)
            got = [json.loads(line) for line in lines]
            check(got[0]['kind'] == 'subscribed' and got[0]['cgroup'] == app, 'subscribed first', got)
            got = got[1:]
            # (The two killers reach the daemon by different ways: either may come first.)
            check(sorted((e['kind'], e['cgroup'], e['by'], e['reason'], e['count']) for e in got) ==
                  [('killed', app, 'kernel', 'oom_kill', 1),
                   ('killed', app + '/app-firefox.scope', 'systemd-oomd', 'memory-used', 1)],
                  'the kills below the cgroup, as sent', got)
            check([e['seq'] for e in got] == [1, 2], 'numbered in order', got)
            holder.close()
    finally:
        standin.stop()
        bus.stop()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_fake(tmp)
    test_usage()
    if not shutil.which('dbus-daemon') or not shutil.which('busctl'):
        pt.skip('dbus-daemon and busctl are needed for the stand-in systemd-oomd (the fake daemon tests passed)')
    with tempfile.TemporaryDirectory() as tmp:
        test_daemon(tmp)
    pt.finish()


if __name__ == '__main__':
    main()
