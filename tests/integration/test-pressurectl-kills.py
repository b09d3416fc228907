#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl watch --kills [CGROUP]: the request it sends, one line per
kill (who killed and why, the count when more than one, missed events),
the header naming the killers, --json passing the events through, --count,
the usage errors, and a daemon that does not know kills, against a fake
daemon with fixed events; then against the built daemon on a fake cgroup
tree, where a rise of oom_kill in memory.events is a kill by the kernel."""
import json
import os
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

        # --json: the events as sent, one per line; the header goes to stderr.
        res = expect(pt.run_ctl('--json', 'watch', '--kills', '/user.slice', socket=sock), 0, 'watch --kills --json')
        got = [json.loads(line) for line in res.stdout.splitlines()]
        check(got[:2] == EVENTS and got[2]['kind'] == 'removed', 'the events as the daemon sent them', got)
        check('kills by kernel, systemd-oomd' in res.stderr, 'the header on stderr', res.stderr)

        # --count counts kills.
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0,
                     'watch --kills --count 1')
        check(res.stdout.splitlines()[1:] == LINES[:1], 'one kill, then the end', res.stdout)

        # No killer can report yet (systemd-oomd not running, no memory.events watch).
        fake.sources = []
        res = expect(pt.run_ctl('watch', '--kills', '--count', '1', socket=sock, env=UTC), 0, 'no killers')
        check(res.stdout.splitlines()[0] == 'Watching /: kills (no killer reports yet)', 'the header says so',
              res.stdout)

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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_fake(tmp)
    test_usage()
    pt.finish()


if __name__ == '__main__':
    main()
