#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl reclaim [CGROUP]: the proactive reclaim controller's table
and --json, the CGROUP filter, the line for no controlled cgroup, and every
exit code, against a fake daemon that answers GetStatus with fixtures
(entries the real controller gives only after minutes: every state, a state
newer than pressurectl, missing figures), then against the built daemon on
a fake cgroup tree with [Reclaim] Cgroups= set and with the controller off."""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
M = 1 << 20
G = 1 << 30

ENTRIES = [
    {'cgroup': '/app.slice', 'state': 'probing', 'reclaimed_bytes': 1288490188, 'last_step_bytes': 10 * M,
     'stall_pct': 0.04, 'io_stall_pct': 0.0, 'floor_bytes': 100 * M},
    {'cgroup': '/app.slice/web.service', 'state': 'backing-off', 'reclaimed_bytes': 0, 'last_step_bytes': 0,
     'stall_pct': 0.2512, 'io_stall_pct': 1.5, 'floor_bytes': 2 * G},
    {'cgroup': '/app', 'state': 'at-floor', 'reclaimed_bytes': 512 * 1024, 'last_step_bytes': 0,
     'stall_pct': 0.0, 'io_stall_pct': 0.0, 'floor_bytes': 100 * M},
    {'cgroup': '/batch.slice/job-with-a-long-name.scope', 'state': 'unsupported', 'reclaimed_bytes': 0,
     'last_step_bytes': 0, 'stall_pct': 0.0, 'io_stall_pct': 0.0, 'floor_bytes': 0},
    {'cgroup': '/later', 'state': 'hibernating', 'reclaimed_bytes': 3 * G, 'something_new': [1]},
]


def expect(res, code, what):
    check(res.returncode == code, f'{what}: exit {res.returncode}, expected {code}', res.stdout, res.stderr)
    return res


def ctl(sock, *args):
    return pt.run_ctl(*args, socket=sock)


def table(out):
    """The table's header and rows, split on runs of two or more spaces or one before a column."""
    lines = out.splitlines()
    return lines[0].split(), [line.split() for line in lines[1:]]


class Fake(pt.FakeVarlinkServer):
    """Answers GetStatus with self.reply (parameters) or self.error (an error name)."""

    def __init__(self, path):
        self.reply = {}
        self.error = None
        super().__init__(path, self.answer)

    def answer(self, call):
        if call['method'] != 'io.pressured.GetStatus':
            return [{'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': call['method']}}]
        if self.error:
            return [{'error': self.error, 'parameters': {'reason': 'made up by the test'}}]
        return [{'parameters': dict({'version': 'fake', 'uptime_us': 1, 'clients': 1, 'subscriptions': 0,
                                     'registrations': []}, **self.reply)}]


def test_fixtures(tmp):
    fake = Fake(os.path.join(tmp, 'fake.sock'))
    sock = fake.path
    try:
        fake.reply = {'reclaim': ENTRIES}
        res = expect(ctl(sock, 'reclaim'), 0, 'reclaim')
        check(res.stderr == '', 'nothing on stderr', res.stderr)
        header, rows = table(res.stdout)
        check(header == ['CGROUP', 'STATE', 'RECLAIMED', 'STEP', 'STALL', 'IO-STALL', 'FLOOR'], 'the header',
              header)
        check([r[0] for r in rows] == [e['cgroup'] for e in ENTRIES], 'one row per entry, in the daemon\'s order',
              rows)
        check(rows[0] == ['/app.slice', 'probing', '1.2G', '10M', '0.04%', '0.00%', '100M'],
              'sizes and percentages for people', rows[0])
        check(rows[1] == ['/app.slice/web.service', 'backing-off', '0B', '0B', '0.25%', '1.50%', '2G'],
              'a cgroup backing off', rows[1])
        check(rows[2] == ['/app', 'at-floor', '512K', '0B', '0.00%', '0.00%', '100M'], 'a cgroup at its floor',
              rows[2])
        check(rows[3][1:] == ['unsupported', '0B', '-', '-', '-', '-'],
              'unsupported: no step, stall figures or floor', rows[3])
        check(rows[4][1:] == ['unknown', '3G', '0B', '-', '-', '0B'],
              'a state newer than pressurectl; stall figures it did not send', rows[4])
        lines = res.stdout.splitlines()
        check(len({len(line) for line in lines}) == 1, 'columns aligned to the longest cgroup', lines)
        for line in lines[1:]:
            check(line.index(line.split()[1]) == lines[0].index('STATE'), 'the state column aligned', lines)

        # CGROUP: itself and below; a sibling that shares a prefix is not below; trailing slashes.
        for arg, want in (('/app.slice', ['/app.slice', '/app.slice/web.service']),
                          ('/app.slice/', ['/app.slice', '/app.slice/web.service']),
                          ('/app', ['/app']),
                          ('/app.slice/web.service', ['/app.slice/web.service']),
                          ('/batch.slice', ['/batch.slice/job-with-a-long-name.scope']),
                          ('/', [e['cgroup'] for e in ENTRIES]),
                          ('//', [e['cgroup'] for e in ENTRIES])):
            res = expect(ctl(sock, 'reclaim', arg), 0, f'reclaim {arg}')
            check([r[0] for r in table(res.stdout)[1]] == want, f'reclaim {arg}: the rows at or below it',
                  res.stdout)
        res = expect(ctl(sock, 'reclaim', '/app.slice'), 0, 'reclaim /app.slice')
        check(res.stdout.splitlines()[0].index('STATE') == len('/app.slice/web.service') + 2,
              'the filtered table as wide as its own rows', res.stdout)
        res = expect(ctl(sock, 'reclaim', '/nothing'), 0, 'reclaim of a cgroup not under the controller')
        check(res.stdout == 'No cgroup under proactive reclaim at or below /nothing.\n', 'says so in one line',
              res.stdout)

        # --json: one object, the daemon's entries as sent (unknown members too), filtered alike.
        res = expect(ctl(sock, '--json', 'reclaim'), 0, 'reclaim --json')
        check(len(res.stdout.splitlines()) == 1, 'one line', res.stdout)
        check(json.loads(res.stdout) == {'reclaim': ENTRIES}, 'the entries as the daemon sent them', res.stdout)
        res = expect(ctl(sock, 'reclaim', '/app.slice/', '--json'), 0, 'reclaim CGROUP --json')
        check(json.loads(res.stdout) == {'reclaim': ENTRIES[:2]}, 'filtered by CGROUP', res.stdout)
        res = expect(ctl(sock, '--json', 'reclaim', '/nothing'), 0, 'reclaim --json of nothing')
        check(json.loads(res.stdout) == {'reclaim': []}, 'an empty list', res.stdout)

        # The controller off, and a daemon before 0.3: one line, exit 0; --json: an empty list.
        for reply, what in (({'reclaim': []}, 'an empty list'), ({}, 'no "reclaim"'), ({'reclaim': None}, 'null')):
            fake.reply = reply
            res = expect(ctl(sock, 'reclaim'), 0, f'reclaim with {what}')
            check(res.stdout == 'Proactive reclaim is off: [Reclaim] Cgroups= is empty or matches no cgroup.\n',
                  f'{what}: the controller is off', res.stdout)
            res = expect(ctl(sock, 'reclaim', '/app'), 0, f'reclaim /app with {what}')
            check(res.stdout.startswith('Proactive reclaim is off'), f'{what}: off, whatever CGROUP', res.stdout)
            res = expect(ctl(sock, '--json', 'reclaim'), 0, f'reclaim --json with {what}')
            check(json.loads(res.stdout) == {'reclaim': []}, f'{what}: an empty list', res.stdout)

        # A reply that breaks the protocol: exit 1, one sentence.
        fake.reply = {'reclaim': [{'state': 'probing'}]}
        res = expect(ctl(sock, 'reclaim'), 1, 'a reclaim entry without its cgroup')
        check(res.stdout == '' and len(res.stderr.splitlines()) == 1 and 'reclaim' in res.stderr,
              'one line on stderr', res.stderr)
        # The daemon's errors: exit 1, or 4 for PermissionDenied; --json: one object on stderr.
        fake.error = 'io.pressured.InternalError'
        res = expect(ctl(sock, 'reclaim'), 1, 'an error of the daemon')
        check(res.stderr.startswith('pressurectl: reclaim: ') and 'made up by the test' in res.stderr,
              'the daemon\'s reason', res.stderr)
        res = expect(ctl(sock, '--json', 'reclaim'), 1, 'an error of the daemon, --json')
        err = json.loads(res.stderr)
        check(err['error'] == 'io.pressured.InternalError' and res.stdout == '', 'as one JSON object', err)
        fake.error = 'io.pressured.PermissionDenied'
        expect(ctl(sock, 'reclaim'), 4, 'permission denied')
    finally:
        fake.close()


def test_usage(tmp):
    for args, what in ((('reclaim', 'app.slice'), 'a relative cgroup'), (('reclaim', '/a', '/b'), 'two cgroups'),
                       (('reclaim', '--level', 'low'), 'an option it lacks')):
        res = expect(pt.run_ctl(*args, socket=os.path.join(tmp, 'none.sock')), 2, what)
        check('pressurectl reclaim --help' in res.stderr, f'{what}: where to look', res.stderr)
    res = expect(pt.run_ctl('reclaim', 'app.slice'), 2, 'a relative cgroup')
    check('absolute path' in res.stderr, 'says what is wrong', res.stderr)
    res = expect(pt.run_ctl('reclaim', '--help'), 0, 'reclaim --help')
    check(res.stdout.startswith('pressurectl [OPTIONS] reclaim [CGROUP]') and '--json' in res.stdout,
          'its own usage', res.stdout)
    res = expect(pt.run_ctl('--help'), 0, '--help')
    check(re.search(r'\n  reclaim \[CGROUP\] +\S', res.stdout), '--help lists reclaim', res.stdout)
    path = os.path.join(tmp, 'missing.sock')
    res = expect(pt.run_ctl('reclaim', socket=path), 3, 'no daemon')
    check(res.stderr.startswith(f'pressurectl: reclaim: Cannot reach pressured at {path}: '), 'says so',
          res.stderr)
    res = expect(pt.run_ctl('--json', 'reclaim', socket=path), 3, 'no daemon, --json')
    check(json.loads(res.stderr)['error'] == 'pressurectl.DaemonUnreachable', 'as JSON', res.stderr)
    # The bash completion knows the command and completes its CGROUP like the others'.
    if pt.have_bash_completion('the completion of reclaim'):
        for words, want in ((['pressurectl', 'rec'], ['reclaim']), (['pressurectl', 'reclaim', '--js'], ['--json'])):
            got = pt.complete(words)
            check(got == want, f'completion of {" ".join(words)!r}', got)


# ---- against the built daemon ---------------------------------------------------------------------

PAGE = 4096
FULL_STEP = (10 * G // 100) // PAGE * PAGE  # MaxStep=1% of 10G, in whole pages


def write(root, cg, name, value):
    """Replace a file of the fake tree whole (the daemon opens them by name at every interval)."""
    d = os.path.join(root, cg.lstrip('/'))
    tmp = os.path.join(d, '.tmp-' + name)
    with open(tmp, 'w') as f:
        f.write(f'{value}\n' if value != '' else '')
    os.rename(tmp, os.path.join(d, name))


def make_tree(root):
    """/app.slice/a reclaimable (probing), /app.slice/b without memory.reclaim (unsupported),
    /small under MinSize= and /prot under its memory.min (both at their floor), /other and /app
    unmatched."""
    psi = 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0'
    os.mkdir(root)
    write(root, '/', 'memory.current', 64 * G)
    for cg, current, minimum, reclaim in (('/app.slice', 20 * G, 0, False), ('/app.slice/a', 10 * G, 0, True),
                                          ('/app.slice/b', 10 * G, 0, False), ('/small', 50 * M, 0, True),
                                          ('/prot', G, 2 * G, True), ('/other', 10 * G, 0, True),
                                          ('/app', G, 0, True)):
        os.mkdir(os.path.join(root, cg.lstrip('/')))
        for name, value in (('memory.current', current), ('memory.min', minimum), ('memory.low', 0),
                            ('memory.pressure', psi), ('io.pressure', psi), ('cgroup.procs', '')):
            write(root, cg, name, value)
        if reclaim:
            write(root, cg, 'memory.reclaim', '')


def settled(d):
    """GetStatus's entries by cgroup, once /app.slice/a took two steps and the others are where they stay."""
    def ready():
        got = {e['cgroup']: e for e in d.status()['reclaim']}
        states = {cg: e['state'] for cg, e in got.items()}
        if states == {'/app.slice/a': 'probing', '/app.slice/b': 'unsupported', '/small': 'at-floor',
                      '/prot': 'at-floor'} and got['/app.slice/a']['reclaimed_bytes'] >= 2 * FULL_STEP:
            return got
        return None
    return pt.wait_for(ready, timeout=pt.scaled(30), what='the controller to settle')


def size_pattern(v):
    """What pressurectl shows for @v bytes (format_size in client/pressurectl/cli.c), as a regular expression."""
    return r'\d+(\.\d)?[KMGTPE]' if v >= 1024 else rf'{v}B'


def test_daemon(tmp):
    """[Reclaim] Cgroups= on a fake tree: pressurectl reclaim shows what GetStatus says."""
    root = os.path.join(tmp, 'tree')
    make_tree(root)
    config = '[Reclaim]\nCgroups=/app.slice/* /small /prot\nInterval=0.2\n'
    with pt.Daemon(config_text=config, cgroup_root=root) as d:
        want = settled(d)
        order = [e['cgroup'] for e in d.status()['reclaim']]
        res = expect(ctl(d.socket, 'reclaim'), 0, 'reclaim')
        header, rows = table(res.stdout)
        check(header == ['CGROUP', 'STATE', 'RECLAIMED', 'STEP', 'STALL', 'IO-STALL', 'FLOOR'], 'the header',
              res.stdout)
        check([r[0] for r in rows] == order, 'one row per controlled cgroup, in the daemon\'s order',
              res.stdout, order)
        got = {r[0]: r for r in rows}
        check(got['/small'] == ['/small', 'at-floor', '0B', '0B', '0.00%', '0.00%', '100M'],
              '/small: at the floor of MinSize=', got['/small'])
        check(got['/prot'] == ['/prot', 'at-floor', '0B', '0B', '0.00%', '0.00%', '2G'],
              '/prot: at the floor of its memory.min, from the protection model', got['/prot'])
        check(got['/app.slice/b'] == ['/app.slice/b', 'unsupported', '0B', '-', '-', '-', '-'],
              '/app.slice/b: no memory.reclaim', got['/app.slice/b'])
        a = got['/app.slice/a']
        # STEP is the write submitted at the last interval: 0B when the one
        # before was still in flight then (a slow machine, or valgrind).
        check(a[1] == 'probing' and re.fullmatch(size_pattern(want['/app.slice/a']['reclaimed_bytes']), a[2])
              and a[3] in ('102M', '0B') and a[4:6] == ['0.00%', '0.00%'] and a[6] == '100M',
              '/app.slice/a: probing, steps of 1% of 10G', a)
        print(f'the table of the daemon:\n{res.stdout}', end='')

        # --json: GetStatus's entries; those at their floor do not move, /app.slice/a only grows.
        before = d.status()['reclaim']
        res = expect(ctl(d.socket, '--json', 'reclaim'), 0, 'reclaim --json')
        out = json.loads(res.stdout)['reclaim']
        check([e['cgroup'] for e in out] == order, 'the entries in the daemon\'s order', out)
        for e in out:
            if e['cgroup'] != '/app.slice/a':
                check(e == want[e['cgroup']], f'{e["cgroup"]}: as GetStatus has it', e, want[e['cgroup']])
        mine = next(e for e in out if e['cgroup'] == '/app.slice/a')
        old = next(e for e in before if e['cgroup'] == '/app.slice/a')
        check(set(mine) == set(old) and mine['reclaimed_bytes'] >= old['reclaimed_bytes'] and
              mine['reclaimed_bytes'] % FULL_STEP == 0 and mine['last_step_bytes'] in (FULL_STEP, 0),
              '/app.slice/a: the same members, the sum of its steps', mine, old)

        # CGROUP: the subtree; a sibling sharing the prefix is not in it.
        res = expect(ctl(d.socket, 'reclaim', '/app.slice'), 0, 'reclaim /app.slice')
        check([r[0] for r in table(res.stdout)[1]] == [c for c in order if c.startswith('/app.slice/')],
              'the controlled cgroups below /app.slice', res.stdout)
        res = expect(ctl(d.socket, '--json', 'reclaim', '/prot'), 0, 'reclaim --json /prot')
        check(json.loads(res.stdout) == {'reclaim': [want['/prot']]}, 'one entry', res.stdout)
        res = expect(ctl(d.socket, 'reclaim', '/app'), 0, 'reclaim /app')
        check(res.stdout == 'No cgroup under proactive reclaim at or below /app.\n', 'none below /app',
              res.stdout)
        res = expect(ctl(d.socket, 'reclaim', '/other'), 0, 'reclaim of a cgroup no pattern matches')
        check(res.stdout.startswith('No cgroup under proactive reclaim at or below /other.'), 'none', res.stdout)
        # A cgroup that does not exist is the daemon's NoSuchCgroup, exit 1, as for every command.
        res = expect(ctl(d.socket, 'reclaim', '/nope'), 1, 'reclaim of a cgroup that does not exist')
        check(res.stdout == '' and res.stderr.startswith('pressurectl: reclaim: No cgroup /nope: '),
              'the daemon\'s sentence', res.stderr)

    # The controller off ([Reclaim] Cgroups= empty, the default): one line, exit 0.
    with pt.Daemon(cgroup_root=root) as d:
        check(d.status()['reclaim'] == [], 'off: GetStatus has no entries', d.status())
        res = expect(ctl(d.socket, 'reclaim'), 0, 'reclaim, controller off')
        check(res.stdout == 'Proactive reclaim is off: [Reclaim] Cgroups= is empty or matches no cgroup.\n',
              'says so in one line', res.stdout)
        res = expect(ctl(d.socket, '--json', 'reclaim'), 0, 'reclaim --json, controller off')
        check(json.loads(res.stdout) == {'reclaim': []}, 'an empty list', res.stdout)
        res = expect(ctl(d.socket, 'reclaim', '/app.slice'), 0, 'reclaim CGROUP, controller off')
        check(res.stdout.startswith('Proactive reclaim is off'), 'off, whatever CGROUP', res.stdout)


def main():
    if not os.access(pt.PRESSURECTL, os.X_OK):
        pt.skip(f'{pt.PRESSURECTL} is not built')
    for t in (test_usage, test_fixtures, test_daemon):
        tmp = tempfile.mkdtemp(prefix='pressurectl-reclaim-')
        try:
            t(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
