#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Numbers as the kernel writes them: a PSI average with the kernel's two
decimals (18.12) leaves the daemon, libpressure and pressurectl as 18.12,
never as 18.120000000000001, and the daemon's other figures (peaks,
stall percentages) come out as the daemon wrote them.

- pressurectl --json top on a fake cgroup2 tree;
- pressurectl --json watch, history and reclaim against a stand-in daemon
  whose figures are decimals that doubles cannot hold exactly;
- the daemon's own replies: every real in the subscribed event of a
  whole-system level subscription and in GetStatus has at most the
  digits the daemon means (checked on the bytes, not on parsed values)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402
import top_test as tt  # noqa: E402

WAIT = pt.scaled(10)
# Decimals a double holds only approximately, each printed with 17 digits
# as something longer than itself.
FIGURES = [18.12, 0.07, 33.33, 99.99, 12.34]
# A JSON real with more than 6 decimals: binary noise.
NOISE = re.compile(r'\d\.\d{7,}')


def reals(text, key):
    """The raw text of every value of "key" in JSON text."""
    return re.findall(r'"%s":\s*(-?[0-9][0-9.eE+-]*)' % re.escape(key), text)


def check_clean(text, what):
    pt.check(not NOISE.search(text), f'{what}: no real with binary noise', NOISE.search(text), text[:2000])


def psi(avg):
    return {'some_avg10': avg, 'some_avg60': 0.07, 'some_avg300': 33.33, 'some_total_us': 5,
            'full_avg10': 99.99, 'full_avg60': 12.34, 'full_avg300': 0.07, 'full_total_us': 2}


class Fake(pt.FakeVarlinkServer):
    """A stand-in daemon: a subscription with one pressure event, GetStatus
    with a history and reclaim entries."""

    def __init__(self, path):
        super().__init__(path, self.answer)

    def answer(self, call):
        method = call['method']
        if method == 'io.pressured.Subscribe':
            sub = {'kind': 'subscribed', 'cgroup': '/', 'source': 'psi', 'resource': 'memory',
                   'trigger': {'psi': {'stall': 'some', 'threshold_us': 100000, 'window_us': 2000000},
                               'level': 'medium'}, 'adjusted': False, 'state': {'psi': psi(18.12)}}
            ev = {'kind': 'pressure', 'cgroup': '/', 'source': 'psi', 'resource': 'memory', 'level': 'medium',
                  'seq': 1, 'count': 1, 'missed': 0, 'time_us': 1, 'monotonic_us': 1, 'psi': psi(18.12)}
            return [{'parameters': {'event': sub}, 'continues': True},
                    {'parameters': {'event': ev}, 'continues': True}]
        if method == 'io.pressured.GetStatus':
            past = {'start_us': 1, 'end_us': 2, 'start_time_us': 1, 'end_time_us': 2, 'duration_us': 1, 'events': 1,
                    'peak': 18.12, 'resource': 'memory'}
            reg = {'cgroup': '/', 'source': 'psi', 'resource': 'memory', 'subscribers': 1, 'proxied': [],
                   'trigger': {'psi': {'stall': 'some', 'threshold_us': 100000, 'window_us': 2000000}},
                   'history': [past]}
            entry = {'cgroup': '/a', 'reclaimed_bytes': 1, 'last_step_bytes': 1, 'stall_pct': 0.07,
                     'io_stall_pct': 33.33, 'floor_bytes': 1, 'state': 'probing'}
            return [{'parameters': {'version': 'fake', 'uptime_us': 1, 'clients': 1, 'subscriptions': 0,
                                    'registrations': [reg], 'reclaim': [entry]}}]
        return [{'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': method}}]


def ctl(sock, *args):
    return subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, '--socket', sock, '--json'] + list(args),
                          capture_output=True, text=True, timeout=WAIT * 3)


def test_top(tmp):
    root = os.path.join(tmp, 'tree')
    tt.make_v2_tree(root, {'/': {'current': 1, 'some': 18.12, 'full': 0.07},
                           '/app': {'current': 1, 'some': 33.33, 'full': 99.99, 'cpu': 12.34, 'io': 18.12}})
    res = tt.run_top('--json', '--iterations', '1', '--cgroup-root', root, socket=os.path.join(tmp, 'none'))
    pt.check_eq(res.returncode, 0, 'top --json without a daemon')
    for key, want in (('some_avg10', {'18.12', '33.33'}), ('full_avg10', {'0.07', '99.99'}),
                      ('cpu_some_avg10', {'12.34'}), ('io_some_avg10', {'18.12'})):
        got = set(reals(res.stdout, key)) & want
        pt.check_eq(got, want, f'top --json: {key} as the kernel wrote it')
    check_clean(res.stdout, 'top --json')


def test_stand_in(tmp):
    fake = Fake(os.path.join(tmp, 'fake.sock'))
    try:
        res = ctl(fake.path, 'watch', '--count', '1', '--timeout', str(int(WAIT)))
        pt.check_eq(res.returncode, 0, 'watch --json --count 1')
        pt.check('18.12' in reals(res.stdout, 'some_avg10') and '99.99' in reals(res.stdout, 'full_avg10'),
                 'watch --json: the averages as the daemon sent them', res.stdout)
        check_clean(res.stdout + res.stderr, 'watch --json')

        res = ctl(fake.path, 'history')
        pt.check_eq(res.returncode, 0, 'history --json')
        pt.check_eq(reals(res.stdout, 'peak'), ['18.12'], 'history --json: the peak as the daemon sent it')
        check_clean(res.stdout, 'history --json')

        res = ctl(fake.path, 'reclaim')
        pt.check_eq(res.returncode, 0, 'reclaim --json')
        pt.check(reals(res.stdout, 'stall_pct') == ['0.07'] and reals(res.stdout, 'io_stall_pct') == ['33.33'],
                 'reclaim --json: the stall figures as the daemon sent them', res.stdout)
        check_clean(res.stdout, 'reclaim --json')
    finally:
        fake.close()


def test_daemon():
    with pt.Daemon() as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        try:
            v.call('io.pressured.Subscribe', {'level': 'low'}, more=True)
            while b'\0' not in v.buf:
                v.buf += v.sock.recv(65536)
            raw = v.buf.partition(b'\0')[0].decode()
        finally:
            v.close()
        pt.check('"some_avg10"' in raw, 'the subscribed event carries the averages', raw)
        for key in ('some_avg10', 'some_avg60', 'some_avg300'):
            for value in reals(raw, key):
                pt.check(re.fullmatch(r'\d+(\.\d{1,2})?', value), f'{key} with at most two decimals', value, raw)
        check_clean(raw, 'the subscribed event')


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-json-numbers-')
    try:
        test_top(tmp)
        test_stand_in(tmp)
        if os.path.exists('/proc/pressure/memory'):
            test_daemon()
        else:
            pt.skip_part('no /proc/pressure/memory: the daemon\'s own averages are not checked')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
