#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl headroom [CGROUP] and pressurectl watch --levels [CGROUP]:
against a fake daemon first (every figure and its null, replies and errors
the real daemon gives only rarely, a daemon before 0.4, a daemon that goes
away and comes back), then against the built daemon: GetHeadroom on a fake cgroup2
tree (a limit of an ancestor, none, a missing cgroup), and on a quiet
cgroup the level now, a change made with inject and --count; with the
usage errors and the bash completion of both."""
import json
import os
import re
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
M = 1 << 20
G = 1 << 30

HEADROOM = {'usage_bytes': 1288490188, 'limit_bytes': 2 * G, 'limiting_cgroup': '/app.slice',
            'headroom_bytes': 812 * M, 'reclaim_target_bytes': 0}
HEADROOM_NULLS = {'usage_bytes': 512, 'limit_bytes': None, 'limiting_cgroup': None, 'headroom_bytes': None,
                  'reclaim_target_bytes': None}


def level(lv, seq, headroom=812 * M, reclaim=0, cgroup='/x', missed=0):
    return {'kind': 'level', 'cgroup': cgroup, 'level': lv, 'headroom_bytes': headroom,
            'reclaim_target_bytes': reclaim, 'seq': seq, 'missed': missed, 'time_us': 1764800000000000 + seq,
            'monotonic_us': 1000 + seq}


def expect(res, code, what):
    check(res.returncode == code, f'{what}: exit {res.returncode}, expected {code}', res.stdout, res.stderr)
    return res


class Fake(pt.FakeVarlinkServer):
    """GetHeadroom answers self.headroom or self.error; Subscribe with "levels" answers self.stream
    (event objects, the last one without "continues" unless self.open) or self.error."""

    def __init__(self, path, stream=()):
        self.headroom = HEADROOM
        self.stream = list(stream)
        self.error = None
        self.calls = []
        self.subscribed = threading.Event()
        super().__init__(path, self.answer)

    def answer(self, call):
        self.calls.append(call)
        if self.error:
            return [{'error': self.error[0], 'parameters': self.error[1]}]
        if call['method'] == 'io.pressured.GetHeadroom':
            return [{'parameters': self.headroom}]
        if call['method'] == 'io.pressured.Subscribe' and call.get('parameters', {}).get('levels'):
            self.subscribed.set()
            return [{'continues': True, 'parameters': {'event': ev}} for ev in self.stream]
        return [{'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': call['method']}}]


def test_headroom_fake(tmp):
    fake = Fake(os.path.join(tmp, 'fake.sock'))
    sock = fake.path
    res = expect(pt.run_ctl('headroom', '/app.slice/web.service/', socket=sock), 0, 'headroom')
    check(res.stdout == 'Cgroup:   /app.slice/web.service\nUsage:    1.2G\nLimit:    2G, set on /app.slice\n'
          'Headroom: 812M\nReclaim:  0B\n', 'five aligned lines, sizes for people', res.stdout)
    check(fake.calls[-1] == {'method': 'io.pressured.GetHeadroom', 'parameters': {'cgroup': '/app.slice/web.service'}},
          'the cgroup in its normal form', fake.calls[-1])
    res = expect(pt.run_ctl('headroom', socket=sock), 0, 'headroom of the whole system')
    check(res.stdout.startswith('Cgroup:   /\n'), 'the whole system is "/"', res.stdout)
    check(fake.calls[-1].get('parameters', {}) == {}, 'no cgroup sent', fake.calls[-1])
    res = expect(pt.run_ctl('--json', 'headroom', '/x', socket=sock), 0, 'headroom --json')
    check(len(res.stdout.splitlines()) == 1 and json.loads(res.stdout) == HEADROOM, 'the reply as one object',
          res.stdout)

    fake.headroom = HEADROOM_NULLS
    res = expect(pt.run_ctl('headroom', '/x', socket=sock), 0, 'headroom with nulls')
    check(res.stdout == 'Cgroup:   /x\nUsage:    512B\nLimit:    no limit\nHeadroom: unknown\nReclaim:  unknown\n',
          '"no limit" and "unknown" for nulls', res.stdout)
    res = expect(pt.run_ctl('headroom', '/x', '--json', socket=sock), 0, 'headroom --json with nulls')
    check(json.loads(res.stdout) == HEADROOM_NULLS, 'nulls kept in JSON', res.stdout)

    fake.headroom = dict(HEADROOM, usage_bytes='lots')
    res = expect(pt.run_ctl('headroom', socket=sock), 1, 'a reply pressurectl cannot read')
    check(res.stderr.startswith('pressurectl: headroom: '), 'said as the other commands say it', res.stderr)
    fake.headroom = HEADROOM

    fake.error = ('org.varlink.service.MethodNotFound', {'method': 'io.pressured.GetHeadroom'})
    res = expect(pt.run_ctl('headroom', socket=sock), 1, 'a daemon before 0.4')
    check('does not know the method io.pressured.GetHeadroom' in res.stderr and 'older than pressurectl' in res.stderr,
          'names the method and says the daemon is older', res.stderr)
    res = expect(pt.run_ctl('--json', 'headroom', socket=sock), 1, 'a daemon before 0.4, --json')
    check(json.loads(res.stderr)['error'] == 'org.varlink.service.MethodNotFound', 'the daemon\'s error', res.stderr)
    fake.error = ('io.pressured.NoSuchCgroup', {'cgroup': '/nope'})
    expect(pt.run_ctl('headroom', '/nope', socket=sock), 1, 'NoSuchCgroup')
    fake.error = ('io.pressured.SourceUnavailable', {'source': 'memory', 'reason': 'no memory controller'})
    res = expect(pt.run_ctl('headroom', socket=sock), 1, 'SourceUnavailable')
    check('no memory controller' in res.stderr, 'the reason', res.stderr)
    fake.close()

    sock = os.path.join(tmp, 'none.sock')
    res = expect(pt.run_ctl('headroom', socket=sock), 3, 'no daemon')
    check(res.stderr.startswith(f'pressurectl: headroom: Cannot reach pressured at {sock}: '), 'says so', res.stderr)
    expect(pt.run_ctl('headroom', '/a', '/b', socket=sock), 2, 'two cgroups')
    expect(pt.run_ctl('headroom', '', socket=sock), 2, 'an empty cgroup')
    expect(pt.run_ctl('headroom', '/a/../b', socket=sock), 2, 'a cgroup with ..')
    expect(pt.run_ctl('headroom', '--level', 'low', socket=sock), 2, 'an option headroom does not take')
    res = expect(pt.run_ctl('headroom', '--help'), 0, 'headroom --help')
    check(res.stdout.startswith('pressurectl [OPTIONS] headroom [CGROUP]'), 'its usage', res.stdout)
    res = expect(pt.run_ctl('--help'), 0, '--help')
    check(re.search(r'^  headroom \[CGROUP\] ', res.stdout, re.M), 'the command list has it', res.stdout)


def human_levels(out):
    """The level lines of watch --levels: [cgroup, level, 'headroom', size, 'reclaim', size, ...] after the time."""
    return [line.split()[2:] for line in out.splitlines()]


def test_watch_fake(tmp):
    fake = Fake(os.path.join(tmp, 'fake2.sock'))
    sock = fake.path
    fake.stream = [level('normal', 1), level('critical', 2, headroom=3 * M, reclaim=97 * M, missed=2),
                   level('low', 3, headroom=None, reclaim=None)]
    res = expect(pt.run_ctl('watch', '--levels', '/x/', '--count', '3', socket=sock), 0, 'watch --levels')
    check(fake.calls[-1] == {'method': 'io.pressured.Subscribe', 'parameters': {'levels': True, 'cgroup': '/x'},
                             'more': True}, 'one streaming Subscribe with "levels"', fake.calls[-1])
    check(human_levels(res.stdout) == [['/x', 'normal', 'headroom', '812M', 'reclaim', '0B'],
                                       ['/x', 'critical', 'headroom', '3M', 'reclaim', '97M', 'missed=2'],
                                       ['/x', 'low', 'headroom', 'unknown', 'reclaim', 'unknown']],
          'one line per level', res.stdout)
    lines = res.stdout.splitlines()
    check(len({line.index('headroom') for line in lines}) == 1 and len({line.index('reclaim') for line in lines}) == 1,
          'the figures aligned', lines)
    check(re.match(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  /x  normal    headroom 812M     reclaim 0B$', lines[0]),
          'the documented format', lines[0])

    res = expect(pt.run_ctl('--json', 'watch', '--levels', '/x', '-n', '2', socket=sock), 0, 'watch --levels --json')
    check([json.loads(line) for line in res.stdout.splitlines()] == fake.stream[:2],
          '--count 2: the first two events as sent', res.stdout)
    expect(pt.run_ctl('watch', '--levels', '-n', '1', socket=sock), 0, 'watch --levels of the whole system')
    check(fake.calls[-1]['parameters'] == {'levels': True}, 'no cgroup for the whole system', fake.calls[-1])
    fake.stream = [level('medium', 1), {'kind': 'removed', 'cgroup': '/x', 'seq': 2, 'missed': 0,
                                        'time_us': 1764800000000002}]
    res = expect(pt.run_ctl('watch', '--levels', '/x', socket=sock), 0, 'a removed cgroup ends the watch')
    check(human_levels(res.stdout)[1] == ['/x', 'removed'], 'said on a line', res.stdout)

    # --timeout: exit 124 with the count of level events seen.
    fake.stream = [level('normal', 1)]
    res = expect(pt.run_ctl('--json', 'watch', '--levels', '/x', '--count', '2', '--timeout', '0.5', socket=sock),
                 124, 'watch --levels --timeout')
    err = json.loads(res.stderr)
    check(err['error'] == 'pressurectl.Timeout' and err['parameters'] == {'command': 'watch', 'events': 1},
          'one event counted', res.stderr)

    # --exec: the hook gets the level event.
    out = os.path.join(tmp, 'hook.out')
    fake.stream = [level('medium', 7, headroom=5 * M, reclaim=11 * M)]
    expect(pt.run_ctl('watch', '--levels', '/x', '-n', '1', '--exec', 'sh', '-c',
                      f'echo "$PRESSURE_KIND $PRESSURE_LEVEL $PRESSURE_CGROUP $PRESSURE_SEQ $PRESSURE_MISSED '
                      f'[$PRESSURE_SOURCE] $PRESSURE_COALESCED" > {out}; echo "$PRESSURE_EVENT" >> {out}',
                      socket=sock), 0, 'watch --levels --exec')
    with open(out) as f:
        env_line, event = f.read().splitlines()
    check(env_line == 'level medium /x 7 0 [] 1', 'the hook\'s variables', env_line)
    check(json.loads(event) == fake.stream[0], 'the event in $PRESSURE_EVENT', event)

    # The daemon goes away: reconnect, say so, and the level now comes again.
    fake.stream = [level('low', 1)]
    fake.subscribed.clear()
    p = pt.subprocess.Popen([pt.PRESSURECTL, '--socket', sock, '--json', 'watch', '--levels', '/x', '-n', '2'],
                            stdout=pt.subprocess.PIPE, stderr=pt.subprocess.PIPE, text=True)
    try:
        check(json.loads(p.stdout.readline()) == fake.stream[0], 'the level now', None)
        fake.stream = [level('medium', 1)]
        fake.drop_connections()
        check(json.loads(p.stdout.readline()) == {'kind': 'reconnected'}, 'the reconnect said', None)
        check(json.loads(p.stdout.readline()) == fake.stream[0], 'the level now after the reconnect', None)
        out, err = p.communicate(timeout=pt.scaled(10))
        check(p.returncode == 0, '--count counts level events only', p.returncode, out, err)
    finally:
        p.kill()
        p.wait()

    # A daemon before 0.4, and the errors of Subscribe.
    fake.error = ('org.varlink.service.InvalidParameter', {'parameter': 'levels'})
    res = expect(pt.run_ctl('watch', '--levels', socket=sock), 1, 'a daemon before 0.4')
    check(res.stderr.startswith('pressurectl: watch: The daemon does not serve level streams'), 'says so',
          res.stderr)
    res = expect(pt.run_ctl('--json', 'watch', '--levels', socket=sock), 1, 'a daemon before 0.4, --json')
    check(json.loads(res.stderr)['error'] == 'org.varlink.service.InvalidParameter', 'the daemon\'s error',
          res.stderr)
    fake.error = ('io.pressured.PermissionDenied', {'reason': 'test'})
    expect(pt.run_ctl('watch', '--levels', '/x', socket=sock), 4, 'PermissionDenied')
    fake.error = ('io.pressured.NoSuchCgroup', {'cgroup': '/x'})
    expect(pt.run_ctl('watch', '--levels', '/x', socket=sock), 1, 'NoSuchCgroup')
    fake.error = ('io.pressured.LimitExceeded', {'limit': 'MaxSubscriptionsPerClient', 'value': 1})
    expect(pt.run_ctl('watch', '--levels', '/x', socket=sock), 1, 'LimitExceeded')
    fake.error = None
    fake.stream = ['not an event']
    res = expect(pt.run_ctl('watch', '--levels', '/x', socket=sock), 1, 'a reply pressurectl cannot read')
    fake.close()
    sock = os.path.join(tmp, 'none.sock')
    expect(pt.run_ctl('watch', '--levels', socket=sock), 3, 'no daemon')
    res = expect(pt.run_ctl('watch', '--levels', '--wait', '--timeout', '0.3', socket=sock), 124,
                 '--wait for a daemon that does not come')
    # --wait for a daemon that comes later: its level now is the first line.
    p = pt.subprocess.Popen([pt.PRESSURECTL, '--socket', sock, '--json', 'watch', '--levels', '/x', '--wait', '-n', '1'],
                            stdout=pt.subprocess.PIPE, stderr=pt.subprocess.PIPE, text=True)
    try:
        late = Fake(sock, [level('low', 1)])
        out, err = p.communicate(timeout=pt.scaled(10))
        check(p.returncode == 0 and json.loads(out) == late.stream[0] and err == '',
              '--wait: the level of a daemon that started later, no reconnect notice', p.returncode, out, err)
        late.close()
    finally:
        p.kill()
        p.wait()


def test_usage():
    for args, what in ((['--levels', '--min-interval', '500'], '--min-interval with --levels'),
                       (['--levels', '--kills'], 'two selectors'),
                       (['--level', 'low', '--levels'], '--level and --levels'),
                       (['--levels', '--until-cleared'], '--until-cleared with --levels'),
                       (['--levels', '--resource', 'cpu'], '--resource cpu with --levels'),
                       (['--levels', '/a', '/b'], 'two cgroups'),
                       (['--levels', ''], 'an empty cgroup')):
        res = expect(pt.run_ctl('watch', *args, socket='/nonexistent'), 2, what)
        check(res.stderr.endswith("Try 'pressurectl watch --help'.\n"), f'{what}: a usage error', res.stderr)
    res = pt.run_ctl('watch', '--levels', '--min-interval', '5', socket='/nonexistent')
    check('StepDownSec' in res.stderr, 'says what the daemon does instead', res.stderr)
    res = expect(pt.run_ctl('watch', '--help'), 0, 'watch --help')
    check('--levels' in res.stdout, 'the usage text has --levels', res.stdout)
    if pt.have_bash_completion('the completion of headroom and --levels'):
        for words, want in ((['pressurectl', 'head'], ['headroom']),
                            (['pressurectl', 'headroom', '--js'], ['--json']),
                            (['pressurectl', 'watch', '--levels'], ['--levels'])):
            got = pt.complete(words)
            check(got == want, f'completion of {" ".join(words)!r}', got)


# ---- against the built daemon ---------------------------------------------------------------------

def test_daemon():
    pt.require_root('Inject is reserved to root')
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Levels]\nStepDownSec=1s\n') as d:
        p = pt.subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch', '--levels', cg, '--count', '2',
                                 '--timeout', str(pt.scaled(60))],
                                stdout=pt.subprocess.PIPE, stderr=pt.subprocess.PIPE, text=True)
        try:
            first = p.stdout.readline().split()
            check(first[2:4] == [cg, 'normal'] and first[4] == 'headroom', 'the level now, as text', first)
            pt.run_ctl('inject', '--level', 'medium', cg, socket=d.socket)
            second = p.stdout.readline().split()
            check(second[2:4] == [cg, 'medium'], 'the injected change', second)
            out, err = p.communicate(timeout=pt.scaled(30))
            check(p.returncode == 0 and err == '', '--count 2 ends it', p.returncode, err)
        finally:
            p.kill()
            p.wait()
        res = expect(pt.run_ctl('--json', 'watch', '--levels', cg, '-n', '1', socket=d.socket), 0,
                     'watch --levels --json against the daemon')
        ev = json.loads(res.stdout)
        check(ev['kind'] == 'level' and ev['cgroup'] == cg and 'headroom_bytes' in ev, 'the event as sent', ev)
        expect(pt.run_ctl('watch', '--levels', cg + '-missing', socket=d.socket), 1, 'NoSuchCgroup from the daemon')
        res = expect(pt.run_ctl('headroom', cg, socket=d.socket), 1 if not v2_has_memory() else 0,
                     'headroom of the quiet cgroup')
        if not v2_has_memory():
            check('The source headroom is not available here' in res.stderr,
                  'no memory controller for it: the daemon\'s SourceUnavailable', res.stderr)


def v2_has_memory():
    with open(os.path.join(pt.cgroup2_mount(), 'cgroup.controllers')) as f:
        return 'memory' in f.read().split()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def test_headroom_daemon(tmp):
    """GetHeadroom of the built daemon on a fake cgroup2 tree: a limit of an ancestor, no limit, an error."""
    v2 = os.path.join(tmp, 'v2')
    write(os.path.join(v2, 'cgroup.controllers'), 'cpu io memory pids\n')
    for cg, current, mx in (('/app', 60 * M, 100 * M), ('/app/web', 10 * M, 'max'), ('/free', 10 * M, 'max')):
        write(os.path.join(v2, cg.lstrip('/'), 'memory.current'), f'{current}\n')
        write(os.path.join(v2, cg.lstrip('/'), 'memory.max'), f'{mx}\n')
        write(os.path.join(v2, cg.lstrip('/'), 'memory.high'), 'max\n')
    with pt.Daemon(cgroup_root=v2, cgroup_v1_root=os.path.join(tmp, 'no-v1')) as d:
        res = expect(pt.run_ctl('headroom', '/app/web', socket=d.socket), 0, 'headroom against the daemon')
        check(res.stdout == 'Cgroup:   /app/web\nUsage:    10M\nLimit:    100M, set on /app\nHeadroom: 40M\n'
              'Reclaim:  unknown\n', 'the limit of an ancestor; no level stream, no reclaim target', res.stdout)
        res = expect(pt.run_ctl('--json', 'headroom', '/app/web', socket=d.socket), 0, 'headroom --json')
        check(json.loads(res.stdout) == {'usage_bytes': 10 * M, 'limit_bytes': 100 * M, 'limiting_cgroup': '/app',
                                         'headroom_bytes': 40 * M, 'reclaim_target_bytes': None},
              'the reply as one object', res.stdout)
        res = expect(pt.run_ctl('headroom', '/free', socket=d.socket), 0, 'headroom without a limit')
        check(res.stdout.splitlines()[2] == 'Limit:    no limit', '"no limit"', res.stdout)
        res = expect(pt.run_ctl('headroom', '/nope', socket=d.socket), 1, 'headroom of a missing cgroup')
        check(res.stderr.startswith('pressurectl: headroom: No cgroup /nope'), 'NoSuchCgroup said', res.stderr)

def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_headroom_fake(tmp)
        test_watch_fake(tmp)
        test_usage()
        test_headroom_daemon(tmp)
    test_daemon()
    pt.finish()


if __name__ == '__main__':
    main()
