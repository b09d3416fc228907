#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl top on fake cgroup trees: batch text and --json with and
without the daemon, the daemon calls it makes (GetStatus, and GetProtection
of the subtree shown only while the protection columns are), memory.events
deltas and change marks, cgroups vanishing mid-refresh, cgroup v1 trees
merged with cgroup2 PSI, the active pressure episode per cgroup (from the
GetStatus reply, driven by Inject on a daemon running on the fake tree),
cpu and io pressure columns (cpu.pressure, io.pressure, /proc/pressure),
and the full screen in tmux at 80x24 and 200x50: header, rows, keys,
highlight, resize, and the terminal given back after q, Ctrl-C and
SIGTERM."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402
import top_test as tt  # noqa: E402

check = pt.check
M = 1 << 20
LONG = 'batch-with-a-rather-long-cgroup-name-for-truncation'

TREE = {
    '/': dict(current=2048 * M, some=3.0, full=1.0),
    '/app': dict(current=100 * M, high='max', max=200 * M, min=50 * M, low=80 * M, some=5.0, full=2.0),
    '/app/web': dict(current=60 * M, high=100 * M, max='max', min=0, low=0, some=12.5, full=0.25, cpu=40.0,
                     io=7.5),
    '/app/db': dict(current=40 * M, high='max', max='max', min=0, low=0, some=1.25, full=0.5, cpu=3.0, io=60.0),
    '/' + LONG: dict(current=1024 * M, high='max', max=2048 * M, min=0, low=0, some=30.0, full=0.1),
    '/idle': dict(current=1 * M, high='max', max='max', min=0, low=0, some=0.0, full=0.0),
}


def make_tree(tmp):
    root = os.path.join(tmp, 'v2')
    tt.make_v2_tree(root, TREE)
    return root


def no_daemon(tmp):
    return os.path.join(tmp, 'no-daemon.sock')


def test_usage(tmp):
    root = make_tree(tmp)
    for args, what in ((['--bogus'], 'unknown option'), (['-d', 'soon'], 'bad delay'),
                       (['-d', '-1'], 'negative delay'), (['--iterations', '0'], 'zero iterations'),
                       (['app'], 'relative cgroup'), (['/a/../b'], 'cgroup with ..'),
                       (['/a', '/b'], 'two cgroups')):
        res = tt.run_top(*args, '--batch', '--cgroup-root', root)
        check(res.returncode == 2, f'top {what}: exit 2', res.returncode, res.stderr)
    # The full screen needs a terminal.
    res = subprocess.run([pt.PRESSURECTL, 'top', '--cgroup-root', root], capture_output=True, text=True,
                         timeout=tt.TIMEOUT, stdin=subprocess.DEVNULL)
    check(res.returncode == 2 and '--batch' in res.stderr, 'top without a terminal: exit 2 and a hint',
          res.returncode, res.stderr)
    res = tt.run_top('--help')
    check(res.returncode == 0 and res.stdout.startswith('pressurectl') and '--iterations' in res.stdout,
          'top --help', res.stdout)
    res = pt.run_ctl('--help')
    check(' top ' in res.stdout, 'pressurectl --help lists top', res.stdout)
    # The bash completion knows the command and its options.
    if pt.have_bash_completion('the completion of top'):
        for words, want in ((['pressurectl', 't'], 'top'), (['pressurectl', 'top', '--it'], '--iterations'),
                            (['pressurectl', 'top', '--no'], '--no-protection')):
            got = pt.complete(words)
            check(got == [want], f'completion of {" ".join(words)!r}', got)
    # A subtree that exists nowhere is an error, not an empty screen.
    res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, '/nowhere', socket=no_daemon(tmp))
    check(res.returncode == 0 and 'cannot read /nowhere' in res.stdout, 'top /nowhere says so', res.stdout,
          res.stderr)


def test_batch_text(tmp):
    """Daemon down: everything else is still shown, twice, as a tree sorted by some avg10."""
    root = make_tree(tmp)
    res = tt.run_top('--batch', '--iterations', '2', '-d', '0.01', '--cgroup-root', root, socket=no_daemon(tmp))
    check(res.returncode == 0 and res.stderr == '', 'batch exits 0 quietly', res.returncode, res.stderr)
    out = res.stdout
    check(out.count('pressurectl top ') == 2, 'two refreshes printed', out)
    check(f'daemon down: Cannot reach pressured at {no_daemon(tmp)}: ' in out, 'the daemon is reported down', out)
    check('memory PSI  some avg10' in out and 'MemAvailable' in out, 'system PSI and MemAvailable', out)
    check(re.search(r'\ncpu PSI     some avg10 (\d+\.\d+|-)  io PSI  some avg10 (\d+\.\d+|-)\n', out),
          'system cpu and io some avg10', out)
    table = out.split('\n\n')[1].splitlines()
    check(table[0].split()[:4] == ['CGROUP', 'V', 'USAGE', 'HIGH'], 'column header', table[0])
    check(table[0].split()[5:12] == ['EMIN', 'ELOW', 'SOME', 'FULL', 'CPU', 'IO', 'EPISODE'] and
          table[0].split()[12:] == ['+HIGH', '+MAX', '+OOMK'], 'all columns, in order', table[0])
    names = [line.split()[0] for line in table[1:]]
    check(names == ['/', LONG, 'app', 'web', 'db', 'idle'], 'tree order by some avg10, siblings sorted', names)
    web = next(line for line in table if line.split()[0] == 'web')
    check(web.startswith('    web '), 'grandchildren indented by four', web)
    check(web.split()[1:6] == ['2', '60M', '100M', 'max', '-'], 'web: hierarchy, usage, high, max, no emin', web)
    check(web.split()[7:12] == ['12.50', '0.25', '40.00', '7.50', '-'],
          'web: some and full avg10, cpu and io some avg10, no episode', web)
    db = next(line for line in table if line.split()[0] == 'db')
    check(db.split()[9:11] == ['3.00', '60.00'], 'db: cpu and io some avg10', db)
    app = next(line for line in table if line.split()[0] == 'app')
    check(app.split()[9:11] == ['-', '-'], 'app: no cpu.pressure or io.pressure, no figures', app)
    app = next(line for line in table if line.split()[0] == 'app')
    check(app.split()[-3:] == ['0', '0', '0'], 'app: no events since top started', app)


def test_json_with_daemon(tmp):
    root = make_tree(tmp)
    with pt.Daemon(cgroup_root=root) as d:
        refreshes = tt.run_json('--iterations', '2', '-d', '0.01', '--cgroup-root', root, socket=d.socket)
        check(len(refreshes) == 2, 'one JSON object per refresh', refreshes)
        expected = {n['cgroup']: n for n in
                    pt.Varlink(d.socket).call_sync('io.pressured.GetProtection', {})['parameters']['nodes']}
    first, second = refreshes
    check(first['iteration'] == 1 and second['iteration'] == 2, 'iterations numbered', first['iteration'])
    check(first['daemon']['reachable'] is True and first['daemon']['clients'] >= 1, 'daemon status', first['daemon'])
    check(first['daemon']['events_read_per_sec'] is None and second['daemon']['events_read_per_sec'] == 0,
          'event rates from the second refresh on', first['daemon'], second['daemon'])
    check(first['roots'] == {'v2': root, 'v1_memory': None}, 'roots as given', first['roots'])
    check(first['sort'] == 'some' and first['view'] == 'tree', 'default sort and view', first)
    order = [c['cgroup'] for c in first['cgroups']]
    check(order == ['/', '/' + LONG, '/app', '/app/web', '/app/db', '/idle'], 'JSON rows in table order', order)
    app = tt.row(first, '/app')
    check(app['current'] == 100 * M and app['high'] is None and app['max'] == 200 * M and app['hierarchy'] == 'v2',
          'usage, unlimited high as null, max', app)
    check(app['some_avg10'] == 5.0 and app['full_avg10'] == 2.0 and app['depth'] == 1, 'PSI and depth', app)
    check('cpu_some_avg10' not in app and 'io_some_avg10' not in app, 'no cpu/io figures without the files', app)
    web = tt.row(first, '/app/web')
    check(web['cpu_some_avg10'] == 40.0 and web['io_some_avg10'] == 7.5, 'cpu and io some avg10 as read', web)
    for key in ('cpu_psi', 'io_psi'):
        v = first['system'][key]
        check(v is None if not os.path.exists('/proc/pressure/' + key[:-4]) else
              (set(v) == {'some_avg10'} and 0 <= v['some_avg10'] <= 100), f'system {key}', first['system'])
    check(app['events'] == {'high': 0, 'max': 0, 'oom_kill': 0}, 'event deltas start at 0', app)
    for c in first['cgroups']:
        if c['cgroup'] in expected:
            check(c.get('emin') == expected[c['cgroup']]['emin'] and c.get('elow') == expected[c['cgroup']]['elow'],
                  'emin/elow as the daemon models them', c, expected[c['cgroup']])
    check(tt.row(first, '/app')['emin'] == 50 * M, '/app emin is its memory.min', tt.row(first, '/app'))
    check(not any(c['changed'] for c in second['cgroups']), 'nothing changed between two refreshes', second)
    check(all(c['episode'] is None for c in first['cgroups']) and first['daemon']['active_episodes'] == 0,
          'no subscriber, no episode', first)
    root_row = tt.row(first, '/')
    check(root_row['current'] == 2048 * M and 'max' not in root_row, 'the root has no memory.max: left out',
          root_row)


class FakeDaemon(pt.FakeVarlinkServer):
    """A varlink server that records the calls it gets and answers GetStatus and GetProtection;
    Subscribe (top's kills subscription), recorded apart in self.subscribes, gets subscribed and
    then the killed events of self.kills, and the stream stays open."""

    def __init__(self, path):
        self.calls = []
        self.subscribes = []
        self.kills = []
        super().__init__(path, self.record)

    def record(self, call):
        if call['method'] == 'io.pressured.Subscribe':
            self.subscribes.append(call.get('parameters', {}))
            sub = {'kind': 'subscribed', 'cgroup': '/', 'source': 'kills', 'resource': 'memory', 'trigger': {},
                   'adjusted': False, 'state': {'kill_sources': ['kernel', 'systemd-oomd']}}
            return [{'parameters': {'event': e}, 'continues': True} for e in [sub] + self.kills]
        self.calls.append((call['method'], call.get('parameters', {})))
        return [self.answer(call)]

    # Two episodes on /app/web (top shows the longer; its registration, from a daemon before 0.3,
    # does not say its resource: memory), one of io pressure on /app/db, one on a cgroup not shown,
    # none on /app.
    REGISTRATIONS = [
        {'cgroup': '/app/db', 'source': 'psi', 'resource': 'io',
         'episode': {'active_since_us': 7000000, 'duration_us': 4000000, 'events': 3, 'peak': 12.0}},
        {'cgroup': '/app/web', 'source': 'psi',
         'episode': {'active_since_us': 5000000, 'duration_us': 3000000, 'events': 2, 'peak': 95.0}},
        {'cgroup': '/app/web', 'source': 'vmpressure',
         'episode': {'active_since_us': 1000000, 'duration_us': 184000000, 'events': 7, 'peak_level': 'medium'}},
        {'cgroup': '/elsewhere', 'source': 'psi',
         'episode': {'active_since_us': 2000000, 'duration_us': 9000000, 'events': 1, 'peak': 91.0}},
        {'cgroup': '/app', 'source': 'psi', 'history': []},
    ]

    def answer(self, call):
        if call['method'] == 'io.pressured.GetStatus':
            return {'parameters': {'version': 'fake', 'uptime_us': 1, 'clients': 7, 'subscriptions': 3,
                                   'registrations': self.REGISTRATIONS,
                                   'counters': {'events_read': 0, 'events_delivered': 0}}}
        if call['method'] == 'io.pressured.GetProtection':
            cg = call.get('parameters', {}).get('cgroup', '/')
            return {'parameters': {'nodes': [{'cgroup': cg, 'emin': 7 * M, 'elow': None}]}}
        return {'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': call['method']}}

def test_daemon_calls(tmp):
    """Status always; GetProtection of the subtree shown, only with the protection columns."""
    root = make_tree(tmp)
    fake = FakeDaemon(os.path.join(tmp, 'fake.sock'))
    try:
        refreshes = tt.run_json('--iterations', '2', '-d', '0.01', '--cgroup-root', root, '/app', socket=fake.path)
        check(fake.calls == [('io.pressured.GetStatus', {}), ('io.pressured.GetProtection', {'cgroup': '/app'})] * 2,
              'GetStatus and GetProtection(/app) per refresh', fake.calls)
        app = tt.row(refreshes[0], '/app')
        check(app['emin'] == 7 * M and app['elow'] is None, 'protection from the daemon, null = unlimited', app)
        check([c['cgroup'] for c in refreshes[0]['cgroups']] == ['/app', '/app/web', '/app/db'],
              'only the subtree shown', refreshes[0]['cgroups'])
        d = refreshes[0]['daemon']
        check(d['clients'] == 7 and d['registrations'] == 5 and d['version'] == 'fake', 'status fields', d)
        check(d['active_episodes'] == 4, 'active episodes counted, shown or not', d)
        web = tt.row(refreshes[0], '/app/web')
        check(web['episode'] == {'active_since_us': 1000000, 'duration_us': 184000000, 'events': 7,
                                 'source': 'vmpressure', 'resource': 'memory'}, 'the longest episode of the cgroup',
              web)
        db = tt.row(refreshes[0], '/app/db')
        check(db['episode'] == {'active_since_us': 7000000, 'duration_us': 4000000, 'events': 3,
                                'source': 'psi', 'resource': 'io'}, 'an io pressure episode', db)
        check(app['episode'] is None, 'a registration without an episode: null', app)
        check(not any(c['changed'] for c in refreshes[1]['cgroups']), 'an episode going on is no change',
              refreshes[1])
        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, '/app', socket=fake.path)
        web = next(ln for ln in res.stdout.splitlines() if ln.split()[:1] == ['web'])
        check(web.split()[11] == '3m04s', 'the duration in the table', web)
        check('4 active episodes' in res.stdout, 'the daemon line counts active episodes', res.stdout)
        fake.calls.clear()
        tt.run_top('--batch', '--iterations', '2', '-d', '0.01', '--cgroup-root', root, '/app', socket=fake.path)
        check(fake.calls == [('io.pressured.GetStatus', {}), ('io.pressured.GetProtection', {'cgroup': '/app'})] * 2,
              'episodes cost no extra call', fake.calls)

        fake.calls.clear()
        refreshes = tt.run_json('--iterations', '2', '-d', '0.01', '--no-protection', '--cgroup-root', root,
                                socket=fake.path)
        check(fake.calls == [('io.pressured.GetStatus', {})] * 2, 'no GetProtection without its columns',
              fake.calls)
        check('emin' not in tt.row(refreshes[0], '/app'), 'no emin without its columns', refreshes[0])
        # A daemon without "reclaim" (before 0.3, or the controller off): no column, null per row.
        check(refreshes[0]['daemon']['reclaim_cgroups'] == 0 and
              all(c['reclaim'] is None for c in refreshes[0]['cgroups']), 'no reclaim entries', refreshes[0])
        check('RECLAIM' not in res.stdout, 'no RECLAIM column without the controller', res.stdout)
    finally:
        fake.close()


class FakeReclaimDaemon(FakeDaemon):
    """FakeDaemon whose GetStatus carries the proactive reclaim controller's entries (self.reclaim)."""

    def __init__(self, path):
        self.reclaim = [
            {'cgroup': '/app', 'state': 'probing', 'reclaimed_bytes': 300 * M, 'last_step_bytes': 2 * M,
             'stall_pct': 0.04, 'io_stall_pct': 0.01, 'floor_bytes': 100 * M},
            {'cgroup': '/app/db', 'state': 'backing-off', 'reclaimed_bytes': 12 * M, 'last_step_bytes': 0,
             'stall_pct': 0.5, 'io_stall_pct': 2.0, 'floor_bytes': 64 * M},
            {'cgroup': '/idle', 'state': 'unsupported', 'reclaimed_bytes': 0, 'last_step_bytes': 0,
             'floor_bytes': 100 * M},
            {'cgroup': '/app/web', 'state': 'hibernating', 'reclaimed_bytes': 5 * M, 'stall_pct': None},
            {'cgroup': '/elsewhere', 'state': 'at-floor', 'reclaimed_bytes': M, 'last_step_bytes': 0,
             'stall_pct': 0, 'io_stall_pct': 0, 'floor_bytes': 100 * M},
        ]
        super().__init__(path)

    def answer(self, call):
        reply = super().answer(call)
        if call['method'] == 'io.pressured.GetStatus':
            reply['parameters']['reclaim'] = self.reclaim
        return reply


def test_reclaim(tmp):
    """The RECLAIM column and the rows' "reclaim" from the controller's entries in GetStatus: per
    cgroup shown, unsupported as n/a, a state this pressurectl does not know, entries counted
    whether shown or not; a row is marked changed when its state changes, not its bytes."""
    root = make_tree(tmp)
    fake = FakeReclaimDaemon(os.path.join(tmp, 'fake.sock'))
    try:
        first = tt.run_json('--iterations', '1', '--cgroup-root', root, socket=fake.path)[0]
        check(first['daemon']['reclaim_cgroups'] == 5, 'every entry counted, shown or not', first['daemon'])
        check(tt.row(first, '/app')['reclaim'] == {'state': 'probing', 'reclaimed_bytes': 300 * M,
                                                   'last_step_bytes': 2 * M, 'stall_pct': 0.04,
                                                   'io_stall_pct': 0.01, 'floor_bytes': 100 * M},
              'the entry of /app', tt.row(first, '/app'))
        check(tt.row(first, '/app/db')['reclaim']['state'] == 'backing-off' and
              tt.row(first, '/app/db')['reclaim']['io_stall_pct'] == 2.0, 'the entry of /app/db',
              tt.row(first, '/app/db'))
        check(tt.row(first, '/idle')['reclaim'] == {'state': 'unsupported', 'reclaimed_bytes': 0,
                                                    'last_step_bytes': 0, 'stall_pct': None,
                                                    'io_stall_pct': None, 'floor_bytes': 100 * M},
              'unsupported: no stall figures', tt.row(first, '/idle'))
        check(tt.row(first, '/app/web')['reclaim']['state'] == 'unknown' and
              tt.row(first, '/app/web')['reclaim']['stall_pct'] is None, 'a state newer than top',
              tt.row(first, '/app/web'))
        check(tt.row(first, '/' + LONG)['reclaim'] is None and tt.row(first, '/')['reclaim'] is None,
              'cgroups the controller does not hold: null', first)

        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=fake.path)
        table = res.stdout.split('\n\n')[1].splitlines()
        check(table[0].split()[-4:] == ['+HIGH', '+MAX', '+OOMK', 'RECLAIM'], 'RECLAIM is the last column',
              table[0])
        cells = {ln.split()[0]: ln.split()[-1] for ln in table[1:]}
        check(cells == {'/': '-', LONG: '-', 'app': '300M', 'web': '5M', 'db': '12M', 'idle': 'n/a'},
              'reclaimed bytes, n/a where unsupported, - elsewhere', cells)
        check(all(len(ln) == len(table[0]) for ln in table[1:]), 'the column aligned', table)

        # While top runs: bytes growing are no change, a state changing is.
        proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.05', '--cgroup-root', root, socket=fake.path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            read_until(proc, lambda o: True, 'the first refresh')
            fake.reclaim[0] = dict(fake.reclaim[0], reclaimed_bytes=302 * M, last_step_bytes=2 * M)
            seen = read_until(proc, lambda o: tt.row(o, '/app')['reclaim']['reclaimed_bytes'] == 302 * M,
                              'more bytes reclaimed')
            check(not tt.row(seen, '/app')['changed'], 'bytes reclaimed are no change', tt.row(seen, '/app'))
            fake.reclaim[1] = dict(fake.reclaim[1], state='probing')
            seen = read_until(proc, lambda o: tt.row(o, '/app/db')['reclaim']['state'] == 'probing',
                              'the new state')
            check(tt.row(seen, '/app/db')['changed'], 'a new state is a change', tt.row(seen, '/app/db'))
            del fake.reclaim[2]
            seen = read_until(proc, lambda o: tt.row(o, '/idle')['reclaim'] is None, 'the entry gone')
            check(tt.row(seen, '/idle')['changed'] and seen['daemon']['reclaim_cgroups'] == 4,
                  'a cgroup the controller lets go is a change', tt.row(seen, '/idle'), seen['daemon'])
        finally:
            proc.terminate()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    finally:
        fake.close()


def test_reclaim_with_daemon(tmp):
    """The daemon's reclaim controller on the fake tree ([Reclaim] Cgroups=/app/* /idle): top's
    RECLAIM column and each row's "reclaim" say what GetStatus says."""
    root = make_tree(tmp)
    for cg in ('app/web', 'app/db'):
        tt.write(os.path.join(root, cg, 'memory.reclaim'), '')
    # /idle above MinSize= but without memory.reclaim: unsupported.
    tt.write(os.path.join(root, 'idle', 'memory.current'), f'{10 * M}\n')
    config = '[Reclaim]\nCgroups=/app/* /idle\nInterval=0.2\nMinSize=1M\n'
    with pt.Daemon(cgroup_root=root, config_text=config) as d:
        def settled():
            got = {e['cgroup']: e for e in d.status()['reclaim']}
            ok = ({cg: e['state'] for cg, e in got.items()} ==
                  {'/app/web': 'probing', '/app/db': 'probing', '/idle': 'unsupported'} and
                  all(got[cg]['reclaimed_bytes'] > 0 for cg in ('/app/web', '/app/db')))
            return got if ok else None
        before = pt.wait_for(settled, timeout=tt.TIMEOUT, what='the controller to settle')
        refresh = tt.run_json('--iterations', '1', '--cgroup-root', root, socket=d.socket)[0]
        check(refresh['daemon']['reclaim_cgroups'] == 3, 'three cgroups under the controller', refresh['daemon'])
        # last_step_bytes may be 0: no write is submitted while the one before is in flight.
        for cg in ('/app/web', '/app/db'):
            rc, was = tt.row(refresh, cg)['reclaim'], before[cg]
            check(rc['state'] == 'probing' and rc['reclaimed_bytes'] >= was['reclaimed_bytes'] and
                  rc['floor_bytes'] == was['floor_bytes'] >= M and rc['stall_pct'] == 0.0 and
                  isinstance(rc['last_step_bytes'], int), f'{cg}: the daemon\'s entry', rc, was)
        check(tt.row(refresh, '/idle')['reclaim']['state'] == 'unsupported', '/idle: unsupported',
              tt.row(refresh, '/idle'))
        check(tt.row(refresh, '/app')['reclaim'] is None and tt.row(refresh, '/')['reclaim'] is None,
              'not under the controller: null', refresh)
        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        table = res.stdout.split('\n\n')[1].splitlines()
        check(table[0].split()[-1] == 'RECLAIM', 'the RECLAIM column', table[0])
        cells = {ln.split()[0]: ln.split()[-1] for ln in table[1:]}
        check(cells['idle'] == 'n/a' and cells['app'] == '-' and cells['/'] == '-', 'n/a and -', cells)
        check(all(re.fullmatch(r'\d+(\.\d)?[KMG]', cells[n]) for n in ('web', 'db')), 'bytes reclaimed', cells)
    # The controller off: no column.
    with pt.Daemon(cgroup_root=root) as d:
        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        check('RECLAIM' not in res.stdout and res.returncode == 0, 'no RECLAIM column while it is off', res.stdout)


def kill_event(cgroup, by, reason, count, seq, ago=0.0):
    """A killed event of @ago seconds ago, on the clocks top compares with."""
    return {'kind': 'killed', 'cgroup': cgroup, 'by': by, 'reason': reason, 'count': count, 'seq': seq, 'missed': 0,
            'time_us': int((time.time() - ago) * 1e6), 'monotonic_us': int((time.monotonic() - ago) * 1e6)}


def test_kills(tmp):
    """One whole-system kills subscription for the whole run; a cgroup killed in the last minute is
    marked (the KILLED column, "killed" in --json), a scope that is gone marks its parent, an older
    kill marks nothing; a daemon without kills is said in the daemon line."""
    root = make_tree(tmp)
    fake = FakeDaemon(os.path.join(tmp, 'fake.sock'))
    fake.kills = [kill_event('/app/web', 'kernel', 'oom_kill', 2, 1),
                  kill_event('/app/web/gone.scope', 'systemd-oomd', 'memory-pressure', 1, 2, ago=1.0),
                  kill_event('/app/gone.scope', 'systemd-oomd', 'memory-used', 1, 3),
                  kill_event('/idle', 'kernel', 'oom_kill', 1, 4, ago=120.0)]
    proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.05', '--cgroup-root', root, socket=fake.path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = read_until(proc, lambda o: tt.row(o, '/app/web')['killed'], 'the kill marked')
        web, app = tt.row(seen, '/app/web'), tt.row(seen, '/app')
        check(web['killed']['cgroup'] == '/app/web' and web['killed']['by'] == 'kernel' and
              web['killed']['reason'] == 'oom_kill' and web['killed']['count'] == 3,
              'the latest kill of the cgroup, with those of its gone scopes counted', web)
        check(abs(web['killed']['time_us'] / 1e6 - time.time()) < 600 and web['killed']['monotonic_us'] > 0,
              'its times', web)
        check(app['killed']['cgroup'] == '/app/gone.scope' and app['killed']['by'] == 'systemd-oomd' and
              app['killed']['reason'] == 'memory-used' and app['killed']['count'] == 1,
              'a scope that is gone marks its parent', app)
        check(tt.row(seen, '/idle')['killed'] is None and tt.row(seen, '/app/db')['killed'] is None,
              'a kill over a minute old, and no kill, mark nothing', seen)
        # (Kills that came before the first refresh change nothing: there is nothing to compare with.)
        check(seen['iteration'] == 1 or (web['changed'] and app['changed']), 'a kill marks the row changed', web, app)
        check(seen['daemon']['kill_sources'] == ['kernel', 'systemd-oomd'] and 'kills_error' not in seen['daemon'],
              'the killers the daemon hears', seen['daemon'])
        later = read_until(proc, lambda o: o['iteration'] >= seen['iteration'] + 3, 'three more refreshes')
        check(tt.row(later, '/app/web')['killed'] == web['killed'] and not tt.row(later, '/app/web')['changed'],
              'the mark stays, the change mark goes', tt.row(later, '/app/web'))
    finally:
        proc.terminate()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    check(fake.subscribes == [{'kills': True}], 'one kills subscription on the whole system', fake.subscribes)
    check({m for m, _ in fake.calls} <= {'io.pressured.GetStatus', 'io.pressured.GetProtection'},
          'no other call', fake.calls)

    # The table: a KILLED column with the seconds since the kill, "-" for the rest.
    res = tt.run_top('--batch', '--iterations', '100', '-d', '0.05', '--no-protection', '--cgroup-root', root,
                     socket=fake.path)
    refresh = next((r for r in res.stdout.split('pressurectl top ') if 'KILLED' in r), None)
    check(refresh is not None, 'a refresh with the KILLED column', res.stdout, res.stderr)
    lines = refresh.split('\n\n')[1].splitlines()
    check(lines[0].split()[-1] == 'KILLED', 'the last column', lines[0])
    cells = {line.split()[0]: line.split()[-1] for line in lines[1:]}
    check(re.fullmatch(r'[0-9]+s', cells['web']) and re.fullmatch(r'[0-9]+s', cells['app']) and
          cells['db'] == '-' and cells['idle'] == '-', 'seconds since the kill, - for none', lines)
    fake.close()

    # The daemon: a rise of oom_kill in a top-level cgroup's memory.events is a kill by the kernel there.
    with pt.Daemon(cgroup_root=root, env={'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/no-bus'}) as d:
        proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.05', '--cgroup-root', root, socket=d.socket),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = read_until(proc, lambda o: o['daemon'].get('kill_sources'), 'the kills subscription confirmed')
            check(first['daemon']['kill_sources'] == ['kernel'], 'the kernel only, without a system bus',
                  first['daemon'])
            fd = os.open(os.path.join(root, 'app', 'memory.events'), os.O_WRONLY)
            try:
                os.pwrite(fd, tt.events_text(oom_kill=2).encode(), 0)
            finally:
                os.close(fd)
            seen = read_until(proc, lambda o: tt.row(o, '/app')['killed'], 'the kernel kill marked')
            killed = tt.row(seen, '/app')['killed']
            check((killed['cgroup'], killed['by'], killed['reason'], killed['count']) ==
                  ('/app', 'kernel', 'oom_kill', 2), 'the kernel kill on /app', killed)
            check(tt.row(seen, '/app/web')['killed'] is None, 'its children are not marked', seen)
        finally:
            proc.terminate()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    # A daemon without kills: said in the daemon line and in --json; no column.
    class OldDaemon(FakeDaemon):
        def record(self, call):
            if call['method'] == 'io.pressured.Subscribe':
                return [{'error': 'org.varlink.service.InvalidParameter', 'parameters': {'parameter': 'kills'}}]
            return super().record(call)
    old = OldDaemon(os.path.join(tmp, 'old.sock'))
    try:
        refreshes = tt.run_json('--iterations', '20', '-d', '0.05', '--cgroup-root', root, socket=old.path)
        check(refreshes[-1]['daemon'].get('kills_error') == 'not reported by this daemon' and
              refreshes[-1]['daemon']['kill_sources'] is None, 'kills not reported', refreshes[-1]['daemon'])
        res = tt.run_top('--batch', '--iterations', '20', '-d', '0.05', '--cgroup-root', root, socket=old.path)
        check(res.stdout.rstrip().split('pressurectl top ')[-1].count('; kills: not reported by this daemon') == 1,
              'the daemon line says so', res.stdout)
        check('KILLED' not in res.stdout, 'no KILLED column', res.stdout)
    finally:
        old.close()


def read_until(proc, pred, what):
    """Read JSON lines from a running top until pred(obj) holds; returns it."""
    end = time.monotonic() + tt.TIMEOUT
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f'top ended before {what}: {proc.stderr.read()}')
        obj = json.loads(line)
        if pred(obj):
            return obj
    raise AssertionError(f'timed out waiting for {what}')


def test_events_and_changes(tmp):
    root = make_tree(tmp)
    events = os.path.join(root, 'app', 'web', 'memory.events')
    tt.write(events, tt.events_text(high=10, max_=3, oom_kill=1))
    proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.05', '--cgroup-root', root, socket=no_daemon(tmp)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_until(proc, lambda o: True, 'the first refresh')
        check(tt.row(first, '/app/web')['events'] == {'high': 0, 'max': 0, 'oom_kill': 0},
              'counts before top started are not shown', tt.row(first, '/app/web'))
        pt.write_file(events, tt.events_text(high=15, max_=3, oom_kill=2))
        pt.write_file(os.path.join(root, 'idle', 'memory.current'), f'{5 * M}\n')
        seen = read_until(proc, lambda o: tt.row(o, '/app/web')['events'].get('high') == 5, 'the high delta')
        web = tt.row(seen, '/app/web')
        check(web['events'] == {'high': 5, 'max': 0, 'oom_kill': 1} and web['changed'], 'deltas and the change mark',
              web)
        later = read_until(proc, lambda o: not tt.row(o, '/app/web')['changed'] and tt.row(o, '/idle')['current']
                           == 5 * M, 'the refresh after the change')
        check(tt.row(later, '/app/web')['events']['high'] == 5, 'deltas stay since top started',
              tt.row(later, '/app/web'))
        # A cgroup made anew (counters back at 0) starts from 0 again.
        pt.write_file(events, tt.events_text())
        read_until(proc, lambda o: tt.row(o, '/app/web')['events'].get('high') == 0, 'the delta reset')
        # A new cgroup appears, marked as changed.
        tt.make_v2_tree(root, {'/app/new': dict(current=M, some=0.5)})
        new = read_until(proc, lambda o: tt.row(o, '/app/new') is not None, 'the new cgroup')
        check(tt.row(new, '/app/new')['changed'], 'a new cgroup is marked changed', tt.row(new, '/app/new'))
    finally:
        proc.terminate()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


# Episodes driven by Inject: the threshold is 90 % of the window and ClearRatio=1, so real
# pressure on a busy machine cannot start or prolong one (as in test-episodes.py).
# An episode holds for ClearAfterSec= after its last event: long enough for several refreshes of
# top -d 0.1, also under valgrind, where a refresh takes most of a second.
EPISODE_CONFIG = f'[Levels]\nMedium=some 900ms 1s\nClearAfterSec={10 if tt.SLOW else 2}\nClearRatio=1\n'


def episode_of(refresh, cgroup):
    return tt.row(refresh, cgroup)['episode']


def inject_medium(d):
    r = d.inject('medium')
    check(r['parameters']['delivered'] == 1, 'the injection reached the subscriber', r)


def test_episodes(tmp):
    """The daemon on the fake tree; a subscriber on / (the system PSI, the one kernel
    registration a fake tree allows): top shows its episode on the / row while it
    lasts, nothing on the others, and - again once it is cleared."""
    pt.require_root('Inject is reserved to root')
    root = make_tree(tmp)
    with pt.Daemon(cgroup_root=root, config_text=EPISODE_CONFIG) as d:
        sub = pt.Varlink(d.socket, timeout=tt.TIMEOUT)
        ev = sub.subscribe(level='medium')['parameters']['event']
        check(ev['kind'] == 'subscribed' and ev['cgroup'] == '/' and ev['source'] == 'psi', 'subscribed on /', ev)
        proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.1', '--cgroup-root', root, socket=d.socket),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = read_until(proc, lambda o: True, 'the first refresh')
            check(first['daemon']['active_episodes'] == 0 and episode_of(first, '/') is None,
                  'no episode before any event', first['daemon'], tt.row(first, '/'))
            inject_medium(d)
            seen = read_until(proc, lambda o: episode_of(o, '/') is not None, 'the episode')
            read_at = time.monotonic_ns() // 1000
            ep = episode_of(seen, '/')
            want = [r for r in d.status()['registrations'] if r['cgroup'] == '/']
            # >= 1: a test loading memory in parallel may add a real event to the injected one.
            check(ep['events'] >= 1 and ep['source'] == 'psi', 'the episode of /', ep)
            # The daemon measured the duration on CLOCK_MONOTONIC, the clock of time.monotonic(),
            # before top printed it and this test read it.
            check(ep['active_since_us'] + ep['duration_us'] <= read_at,
                  'the duration is at most the time since the episode began', ep, read_at)
            if want and 'episode' in want[0]:
                check(ep['active_since_us'] == want[0]['episode']['active_since_us'], 'the daemon\'s episode',
                      ep, want[0])
            check(seen['daemon']['active_episodes'] == 1, 'counted on the daemon line', seen['daemon'])
            check(all(c['episode'] is None for c in seen['cgroups'] if c['cgroup'] != '/'),
                  'no episode on the other cgroups', seen['cgroups'])
            check(tt.row(seen, '/')['changed'], 'the row is marked changed when the episode begins', tt.row(seen, '/'))
            since = ep['active_since_us']
            durations = [ep['duration_us']]
            # Until it clears: the same episode, growing, and not marked changed for that.
            obj = seen
            while True:
                line = proc.stdout.readline()
                check(line != '', 'top runs until the episode clears', proc.poll())
                obj = json.loads(line)
                ep = episode_of(obj, '/')
                if ep is None:
                    break
                check(ep['active_since_us'] == since and not tt.row(obj, '/')['changed'],
                      'an episode going on is no change', tt.row(obj, '/'))
                durations.append(ep['duration_us'])
            check(len(durations) >= 2 and all(a < b for a, b in zip(durations, durations[1:])),
                  'the duration grows at every refresh while the episode lasts', durations)
            check(tt.row(obj, '/')['changed'] and obj['daemon']['active_episodes'] == 0,
                  'the end of the episode is a change', tt.row(obj, '/'), obj['daemon'])
            kinds = []
            while not kinds or kinds[-1] == 'pressure':
                kinds.append(sub.recv(timeout=tt.TIMEOUT)['parameters']['event']['kind'])
            check(kinds[0] == 'pressure' and kinds[-1] == 'cleared', 'the subscriber got the episode', kinds)
        finally:
            proc.terminate()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()

        # Batch text: the column and the daemon line, during an episode and after it.
        inject_medium(d)
        pt.wait_for(lambda: any('episode' in r for r in d.status()['registrations']), timeout=tt.TIMEOUT,
                    what='the second episode')
        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        rows = {ln.split()[0]: ln.split() for ln in res.stdout.split('\n\n')[1].splitlines()[1:]}
        header = res.stdout.split('\n\n')[1].splitlines()[0].split()
        col = header.index('EPISODE')
        # The episode holds for ClearAfterSec= after the event, long enough for top to start
        # and see it also under valgrind.
        check('1 active episode,' in res.stdout, 'the daemon line counts the episode', res.stdout)
        check(re.fullmatch(r'\d+s', rows['/'][col]), 'the duration of the / episode', rows['/'])
        check(all(r[col] == '-' for n, r in rows.items() if n != '/'), 'the others: -', rows)
        pt.wait_for(lambda: not any('episode' in r for r in d.status()['registrations']), timeout=tt.TIMEOUT,
                    what='the second episode to clear')
        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        rows = {ln.split()[0]: ln.split() for ln in res.stdout.split('\n\n')[1].splitlines()[1:]}
        check(all(r[col] == '-' for r in rows.values()) and '0 active episodes' in res.stdout,
              'no episode after cleared', res.stdout)
        sub.close()


def test_vanishing(tmp):
    """Cgroups removed and made again while top reads them: no error, no noise."""
    root = make_tree(tmp)
    churn = {f'/churn/c{i}': dict(current=M, high='max', max='max', some=1.0, full=0.0) for i in range(60)}
    tt.make_v2_tree(root, churn)
    stop = threading.Event()

    def churner():
        i = 0
        while not stop.is_set():
            p = os.path.join(root, 'churn', f'c{i % 60}')
            shutil.rmtree(p, ignore_errors=True)
            tt.make_v2_tree(root, {f'/churn/c{i % 60}': churn[f'/churn/c{i % 60}']})
            i += 1

    t = threading.Thread(target=churner)
    t.start()
    try:
        res = tt.run_top('--batch', '--iterations', '40', '-d', '0', '--cgroup-root', root, socket=no_daemon(tmp))
    finally:
        stop.set()
        t.join()
    check(res.returncode == 0 and res.stderr == '', 'top survives vanishing cgroups', res.returncode, res.stderr)
    check(res.stdout.count('pressurectl top ') == 40, 'every refresh printed', res.stdout[-2000:])


def test_v1_merged(tmp):
    """A hybrid layout: usage and limits from v1, PSI from cgroup2, one row per path."""
    v2 = os.path.join(tmp, 'unified')
    v1 = os.path.join(tmp, 'memory')
    tt.make_v2_tree(v2, {'/': dict(some=1.0, full=0.5), '/both': dict(some=9.0, full=4.5),
                         '/v2only': dict(some=2.0, full=0.0)})
    tt.make_v1_tree(v1, {'/': dict(usage=900 * M), '/both': dict(usage=64 * M, limit=128 * M, soft=96 * M,
                                                                  failcnt=4, oom_kill=1),
                         '/v1only': dict(usage=8 * M)})
    proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.05', '--cgroup-root', v2, '--cgroup-v1-root', v1,
                                       socket=no_daemon(tmp)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_until(proc, lambda o: True, 'the first refresh')
        check([c['cgroup'] for c in first['cgroups']] == ['/', '/both', '/v2only', '/v1only'],
              'the union of both hierarchies, sorted by some avg10', first['cgroups'])
        both = tt.row(first, '/both')
        check(both['hierarchy'] == 'v1' and both['current'] == 64 * M and both['max'] == 128 * M
              and both['high'] == 96 * M and both['some_avg10'] == 9.0, 'v1 usage/limits with v2 PSI', both)
        check(both['events'] == {'max': 0, 'oom_kill': 0}, 'v1: failcnt and oom_kill, no high counter', both)
        check(tt.row(first, '/v1only')['hierarchy'] == 'v1' and 'some_avg10' not in tt.row(first, '/v1only'),
              'v1 only: no PSI', tt.row(first, '/v1only'))
        check(tt.row(first, '/v2only')['hierarchy'] is None and 'current' not in tt.row(first, '/v2only'),
              'cgroup2 without the memory controller: PSI only', tt.row(first, '/v2only'))
        check(tt.row(first, '/')['max'] is None, 'the v1 "no limit" value is unlimited', tt.row(first, '/'))
        tt.write(os.path.join(v1, 'both', 'memory.failcnt'), '9\n')
        seen = read_until(proc, lambda o: tt.row(o, '/both')['events'].get('max') == 5, 'the failcnt delta')
        check(tt.row(seen, '/both')['changed'], 'the v1 row is marked changed', tt.row(seen, '/both'))
    finally:
        proc.terminate()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', v2, '--cgroup-v1-root', v1,
                     socket=no_daemon(tmp))
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith('  both'))
    check(line.split()[1:5] == ['1', '64M', '96M', '128M'], 'V=1 marks v1 numbers in the table', line)
    # No cgroup2 memory controller, no effective protection: no EMIN/ELOW columns, no emin in JSON.
    header = next(ln for ln in res.stdout.splitlines() if ln.startswith('CGROUP'))
    check('EMIN' not in header and 'ELOW' not in header, 'no protection columns without cgroup2 memory', header)
    check(all('emin' not in c and 'elow' not in c for c in first['cgroups']), 'no emin/elow in --json', first)


# ---- the full screen in tmux ----------------------------------------------------------------------

def table_names(screen):
    """The first word of each table row (between the column header and the key line)."""
    lines = screen.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('CGROUP'))
    return [ln.split()[0] for ln in lines[start + 1:] if ln.strip() and not ln.startswith('s sort')
            and not ln.startswith('filter by path')]


def start_top(term, root, tmp, extra='', socket=None):
    """Start top in the terminal from a script that reports its exit status as EXIT=N.

    The script ignores SIGINT itself (top does not: it catches it), so that a
    Ctrl-C ends top but not the script that prints the status.
    """
    n = time.monotonic_ns()
    pidfile = os.path.join(tmp, f'top-{n}.pid')
    script = os.path.join(tmp, f'run-{n}.sh')
    tt.write(script, f"""trap '' INT
sh -c 'echo $$ > {pidfile}; exec "$@"' sh {pt.PRESSURECTL} --socket {socket or no_daemon(tmp)} top --cgroup-root {root} -d 0.2 {extra}
echo EXIT=$?
""")
    term.type(f'sh {script}')
    term.wait_text('pressurectl top ')
    pt.wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), what='the pid file')
    with open(pidfile) as f:
        return int(f.read())


def test_screen(tmp, width, height):
    root = make_tree(tmp)
    with tt.Terminal(width, height) as term:
        start_top(term, root, tmp)
        screen = term.wait_for(lambda s: 'idle' in s, 'the cgroup rows')
        lines = screen.splitlines()
        check(lines[0].startswith('pressurectl top ') and 'sort: some' in lines[0], 'title line', lines[0])
        check(lines[1].startswith('memory PSI') and lines[2].startswith('cpu PSI') and
              lines[3].startswith('daemon down'), 'header lines', lines[:5])
        check(len(lines) <= height and all(len(ln) <= width for ln in lines), 'fits the terminal', lines)
        check(table_names(screen)[:2] == ['/', LONG if width >= 120 else tt.cut(LONG, len(table_names(screen)[1]))],
              'sorted by some avg10', table_names(screen))
        check(['app', 'web', 'db', 'idle'] == [n for n in table_names(screen) if n in ('app', 'web', 'db', 'idle')],
              'tree rows', table_names(screen))
        header = next(ln for ln in lines if ln.startswith('CGROUP'))
        if width < 120:
            check(' CPU ' not in header and ' IO ' not in header,
                  'no room for the cpu and io columns at 80 columns', header)
        else:
            check(' CPU ' in header and ' IO ' in header, 'the cpu and io columns where they fit', header)
        if width < 120:
            check(LONG not in screen and tt.cut(LONG, 8) in screen, 'long names cut in the middle to fit 80 columns',
                  screen)
            check(' app ' in screen and '  web ' in screen and '   web ' not in screen,
                  'indented by one column per level where names do not fit', screen)
        else:
            check(LONG in screen, 'long names whole at 200 columns', screen)

        # s: sort by full avg10: app (2.0) before the long one (0.1).
        term.send('s')
        screen = term.wait_for(lambda s: 'sort: full' in s, 'sort: full')
        names = table_names(screen)
        check(names.index('app') < [i for i, n in enumerate(names) if n.startswith('ba')][0],
              'sorted by full avg10', names)
        # s again: by usage: the long one (1G) first again; then events, then path, then back to some.
        term.send('s')
        term.wait_for(lambda s: 'sort: current' in s, 'sort: current')
        term.send('s', 's', 's')
        term.wait_for(lambda s: 'sort: episode' in s, 'sort: episode')
        # cpu and io some avg10: web (40) before db (3), then db (60) before web (7.5).
        term.send('s')
        screen = term.wait_for(lambda s: 'sort: cpu' in s, 'sort: cpu')
        names = table_names(screen)
        check(names.index('web') < names.index('db'), 'sorted by cpu some avg10', names)
        term.send('s')
        screen = term.wait_for(lambda s: 'sort: io' in s, 'sort: io')
        names = table_names(screen)
        check(names.index('db') < names.index('web'), 'sorted by io some avg10', names)
        term.send('s')
        term.wait_for(lambda s: 'sort: reclaim' in s, 'sort: reclaim, the last key')
        term.send('s')
        term.wait_for(lambda s: 'sort: some' in s, 'the sort keys cycle')

        # /: filter by path, live; Enter keeps it.
        term.send('/', 'w', 'e')
        screen = term.wait_for(lambda s: 'filter by path: we' in s, 'the filter prompt')
        term.send('Enter')
        screen = term.wait_for(lambda s: 'filter: we ' in s and 'idle' not in s, 'the filter applied')
        check(table_names(screen) == ['/', 'app', 'web'], 'matches with their ancestors', table_names(screen))
        # t: flat, full paths, only matches.
        term.send('t')
        screen = term.wait_for(lambda s: 'view: flat' in s, 'the flat view')
        check(table_names(screen) == ['/app/web'], 'flat view shows matching paths', table_names(screen))
        # Esc cancels an edit; an empty filter shows everything again.
        term.send('/', 'x', 'Escape')
        term.wait_for(lambda s: 'filter: we ' in s and 'filter by path' not in s, 'Esc keeps the old filter')
        term.send('/', 'BSpace', 'BSpace', 'Enter', 't')
        screen = term.wait_for(lambda s: 'filter: - ' in s and 'view: tree' in s and 'idle' in s, 'no filter')
        # p: protection columns off and on.
        check('EMIN' in screen, 'protection columns shown by default', screen)
        term.send('p')
        term.wait_for(lambda s: 'EMIN' not in s and 'ELOW' not in s, 'protection columns hidden')
        term.send('p')
        term.wait_for(lambda s: 'EMIN' in s, 'protection columns back')

        # A row that changed is highlighted (bold) for one refresh. A refresh lasts 0.2 s,
        # less than a capture may take on a loaded machine, so the row changes before
        # every capture until one shows it bold.
        bold = re.compile(r'\x1b\[(?:[0-9;]*;)?1(?:;[0-9;]*)?m[^\n]*idle')
        current = [7]

        def changed_row_bold(screen):
            if bold.search(screen):
                return True
            current[0] += 1
            pt.write_file(os.path.join(root, 'idle', 'memory.current'), f'{current[0] * M}\n')
            return False
        pt.write_file(os.path.join(root, 'idle', 'memory.current'), f'{current[0] * M}\n')
        term.wait_for(changed_row_bold, 'the changed row in bold', escapes=True)
        term.wait_for(lambda s: 'idle' in s and bold.search(s) is None, 'the highlight gone after a refresh',
                      escapes=True)

        # q: exit 0, terminal restored.
        term.send('q')
        term.wait_text('EXIT=0')
        tt.check_terminal_sane(term, tmp)


def column_header(screen):
    return next(ln for ln in screen.splitlines() if ln.startswith('CGROUP'))


def test_screen_narrow(tmp, width, height):
    """A narrow screen: the names shrink first, down to 8 columns, then the columns give way,
    least useful first; the column of the sort key stays whatever it is (the three counters for
    "events", CPU, IO and RECLAIM too, which a wider screen shows only where they fit)."""
    root = make_tree(tmp)
    # A column's title as the header shows it: each right-aligned after a space.
    want = {'some': [' SOME'], 'full': [' FULL'], 'current': ['USAGE'], 'events': ['+HIGH', ' +MAX', '+OOMK'],
            'path': [], 'episode': ['EPISODE'], 'cpu': ['  CPU'], 'io': ['   IO'], 'reclaim': ['RECLAIM']}
    with tt.Terminal(width, height) as term:
        start_top(term, root, tmp)
        screen = term.wait_for(lambda s: 'idle' in s, 'the cgroup rows')
        for key in ('some', 'full', 'current', 'events', 'path', 'episode', 'cpu', 'io', 'reclaim'):
            if key != 'some':
                term.send('s')
                # The key line names the sort key (the title line is cut on a narrow screen).
                screen = term.wait_for(lambda s: f's sort ({key})' in s, f'sort: {key}')
            header = column_header(screen)
            check(all(len(ln) <= width for ln in screen.splitlines()), f'sort {key}: fits {width} columns', screen)
            check(all(w in header for w in want[key]), f'sort {key}: its column is shown at {width} columns',
                  header)
            # Each column after the name is a space and its title right-aligned in its width.
            widths = {'V': 1, 'EPISODE': 7, 'RECLAIM': 7, 'KILLED': 7}
            names = len(header.rstrip()) - sum(1 + widths.get(w, 5) for w in header.split()[1:])
            check(names >= 8, f'sort {key}: the names keep at least 8 columns', header)
            check(LONG not in screen and tt.cut(LONG, names - 1) in screen, 'long names cut in the middle to fit',
                  screen)
            if width <= 50:
                check('+HIGH' not in header or key == 'events', f'sort {key}: +HIGH gave way first', header)
        term.send('q')
        term.wait_text('EXIT=0')


def check_daemon_line(line, width, clauses, what):
    """The daemon's line of a screen @width wide: all of @clauses (regexes, in order), or the first
    few of them whole and the ellipsis; never a sentence cut in the middle."""
    line = line.rstrip()
    check(len(line) <= width, f'{what}: the daemon line fits', line)
    forms = [''.join(clauses[:k]) for k in range(1, len(clauses) + 1)]
    if re.fullmatch(forms[-1], line):
        return line
    check(line.endswith(' \u2026') and any(re.fullmatch(f, line[:-2]) for f in forms),
          f'{what}: the daemon line cut between clauses, ending with the ellipsis', line)
    return line


def test_screen_cut(tmp, width):
    """Names and the daemon's line on a narrow screen: a parent and its child (flat view: the
    child's path is the parent's and more) cut in the middle to different texts; the daemon's line
    whole clauses only; and on a hybrid layout (memory from v1) no protection columns."""
    root = make_tree(tmp)
    child = '/' + LONG + '/child-of-the-long-one'
    tt.make_v2_tree(root, {child: dict(current=8 * M, high='max', max='max', min=0, low=0, some=29.0, full=0.0)})
    with tt.Terminal(width, 24) as term:
        start_top(term, root, tmp)
        screen = term.wait_for(lambda s: 'idle' in s, 'the cgroup rows')
        lines = screen.splitlines()
        check_daemon_line(lines[3], width, [r'daemon down', r': Cannot reach pressured at \S+: [^()]*',
                                            r' \(protection columns empty\)'], 'no daemon')
        term.send('t')
        screen = term.wait_for(lambda s: ' t tree ' in s, 'the flat view')
        names = table_names(screen)
        shown = [n for n in names if '\u2026' in n]
        w = len(shown[0]) if shown else 0
        check(sorted(shown) == sorted([tt.cut('/' + LONG, w), tt.cut(child, w)]) and len(set(shown)) == 2,
              'parent and child cut in the middle, to different texts', names)
        term.send('q')
        term.wait_text('EXIT=0')

    with pt.Daemon(cgroup_root=root) as d, tt.Terminal(width, 24) as term:
        start_top(term, root, tmp, socket=d.socket)
        screen = term.wait_for(lambda s: 'idle' in s and 'daemon down' not in s, 'the rows, the daemon up')
        check_daemon_line(screen.splitlines()[3], width,
                          [r'daemon \S+: \d+ clients?', r', \d+ registrations?', r', \d+ active episodes?',
                           r', events \S+/s read, \S+/s delivered'], 'the daemon up')
        term.send('q')
        term.wait_text('EXIT=0')

    v2, v1 = os.path.join(tmp, 'unified'), os.path.join(tmp, 'memory')
    tt.make_v2_tree(v2, {'/': dict(some=1.0, full=0.5), '/both': dict(some=9.0, full=4.5)})
    tt.make_v1_tree(v1, {'/': dict(usage=900 * M), '/both': dict(usage=64 * M)})
    with tt.Terminal(width, 24) as term:
        start_top(term, v2, tmp, extra=f'--cgroup-v1-root {v1}')
        screen = term.wait_for(lambda s: 'both' in s, 'the hybrid rows')
        check('EMIN' not in screen and 'ELOW' not in screen and 'protection' not in screen.splitlines()[-1],
              'hybrid: no protection columns, no protection key', screen)
        term.send('q')
        term.wait_text('EXIT=0')


def episode_cells(screen):
    """{first word of a table row: its EPISODE cell}, by the column header's position."""
    lines = screen.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('CGROUP'))
    end = lines[start].index('EPISODE') + len('EPISODE')
    return {ln.split()[0]: ln[end - 7:end].strip() for ln in lines[start + 1:]
            if ln.strip() and not ln.startswith('s sort') and len(ln) >= end}


def row_sgr(screen, name):
    """The SGR attributes (1 bold, 31 red, ...) a row starting with @name is drawn with, from
    a capture with escapes; an empty set if the row is not there."""
    for ln in screen.splitlines():
        m = re.match(r'((?:\x1b\[[0-9;]*m)*)(.*)', ln)
        if re.sub(r'\x1b\[[0-9;]*m', '', m.group(2)).startswith(name + ' '):
            return {int(p) for p in re.findall(r'\d+', m.group(1))}
    return set()


def column_cells(screen, title):
    """{first word of a table row: the 7 columns that end under the column header @title}, or {}
    when the table has no such column (yet)."""
    lines = screen.splitlines()
    header = next((ln for ln in lines if ln.startswith('CGROUP')), '')
    if title not in header:
        return {}
    end = header.index(title) + len(title)
    return {ln.split()[0]: ln[end - 7:end].strip() for ln in lines[lines.index(header) + 1:]
            if ln.strip() and not ln.startswith('s sort')}


def test_screen_episode(tmp, width, height):
    """An episode on / in the full screen: its duration in the EPISODE column, the row in
    red, bold only in the refresh it began; - everywhere once it cleared."""
    pt.require_root('Inject is reserved to root')
    root = make_tree(tmp)
    with pt.Daemon(cgroup_root=root, config_text=EPISODE_CONFIG) as d, tt.Terminal(width, height) as term:
        sub = pt.Varlink(d.socket, timeout=tt.TIMEOUT)
        sub.subscribe(level='medium')
        start_top(term, root, tmp, socket=d.socket)
        screen = term.wait_for(lambda s: 'idle' in s and 'daemon 0' in s, 'the rows with the daemon up')
        check(set(episode_cells(screen).values()) == {'-'}, 'no episode yet', screen)
        check(all(len(ln) <= width for ln in screen.splitlines()), 'fits the terminal', screen)
        inject_medium(d)
        screen = term.wait_for(lambda s: re.fullmatch(r'\d+s', episode_cells(s).get('/', '')) is not None,
                               'the episode on /')
        check('1 active episode' in screen, 'the daemon line counts it', screen)
        check(all(v == '-' for k, v in episode_cells(screen).items() if k != '/'), 'the others show -', screen)
        # Red while the episode lasts, and bold only in the refresh where it began: the
        # highlight of changes is not taken over by a duration that grows.
        term.wait_for(lambda s: row_sgr(s, '/') >= {31} and 1 not in row_sgr(s, '/'), 'the / row red, not bold',
                      escapes=True)
        screen = term.wait_for(lambda s: episode_cells(s).get('/') == '-', 'the episode cleared')
        check('0 active episodes' in screen, 'the daemon line counts none', screen)
        term.wait_for(lambda s: 31 not in row_sgr(s, '/'), 'the / row no longer red', escapes=True)
        term.send('q')
        term.wait_text('EXIT=0')
        sub.close()


def test_screen_reclaim(tmp, width, height):
    """The RECLAIM column on the full screen: before CPU and IO, only where it leaves the names
    16 columns (not at 80 columns, alone at 100, with CPU and IO at 200)."""
    root = make_tree(tmp)
    fake = FakeReclaimDaemon(os.path.join(tmp, 'fake.sock'))
    try:
        with tt.Terminal(width, height) as term:
            start_top(term, root, tmp, socket=fake.path)

            def reclaim_shown(cells):
                return cells.get('app') == '300M' and cells.get('idle') == 'n/a' and cells.get('/') == '-'

            # A capture may catch a redraw halfway: the daemon line written and the column header
            # not yet, or the rows' changed cells written from the top down to some row only. Wait
            # for the whole of it; at 100 columns and more, for the RECLAIM cells as well (or fail
            # with the last screen).
            screen = term.wait_for(lambda s: 'idle' in s and 'daemon fake' in s and
                                   (width < 100 or reclaim_shown(column_cells(s, 'RECLAIM'))),
                                   'the rows with the daemon up')
            lines = screen.splitlines()
            header = next(ln for ln in lines if ln.startswith('CGROUP'))
            check(all(len(ln) <= width for ln in lines), 'fits the terminal', screen)
            if width < 100:
                check('RECLAIM' not in header and ' CPU ' not in header, 'no room at 80 columns', header)
            else:
                check(header.rstrip().endswith('+OOMK RECLAIM'), 'the RECLAIM column last', header)
                check((' CPU ' in header) == (width >= 200), 'CPU and IO only where they fit as well', header)
                check(reclaim_shown(column_cells(screen, 'RECLAIM')), 'the cells under RECLAIM',
                      column_cells(screen, 'RECLAIM'))
            # s up to "reclaim": siblings by the bytes reclaimed, those the controller holds first.
            term.send(*['s'] * 8)

            def reclaim_order(names):
                return (names[:2] == ['/', 'app'] and names.index('db') < names.index('web') < names.index('idle') and
                        names.index('idle') < [i for i, n in enumerate(names) if n.startswith('ba')][0])
            # A capture may catch the key line of the new order over rows of the old one (a slow
            # build redraws row by row): wait for a whole frame in the new order, or fail with the last.
            screen = term.wait_for(lambda s: 's sort (reclaim)' in s and reclaim_order(table_names(s)),
                                   'sort: reclaim, siblings by the bytes reclaimed and those the controller '
                                   'holds before one it does not')
            term.send('q')
            term.wait_text('EXIT=0')
    finally:
        fake.close()


def test_screen_kills(tmp, width, height):
    """The KILLED column on the full screen: only where it leaves the names 16 columns (not at 80
    columns, at 100 before CPU and IO, with them at 200), the seconds since the kill in it; a killed
    row drawn in red, whether the column fits or not."""
    root = make_tree(tmp)
    fake = FakeDaemon(os.path.join(tmp, 'fake.sock'))
    # (A kill reported on / itself, which the daemon never does, gives a row with no indentation.)
    fake.kills = [kill_event('/app/web', 'kernel', 'oom_kill', 1, 1), kill_event('/', 'kernel', 'oom_kill', 1, 2)]
    try:
        with tt.Terminal(width, height) as term:
            start_top(term, root, tmp, socket=fake.path)
            screen = term.wait_for(lambda s: 'idle' in s and 'daemon fake' in s, 'the rows with the daemon up')
            # The kill came with the subscription; wait for a refresh that has taken it in.
            term.wait_for(lambda s: 31 in row_sgr(s, '/'), 'the killed / row in red', escapes=True)

            def kills_shown(cells):
                return (re.fullmatch(r'[0-9]+s', cells.get('web', '')) is not None and
                        re.fullmatch(r'[0-9]+s', cells.get('/', '')) is not None and
                        cells.get('db') == '-' and cells.get('idle') == '-')
            # That refresh writes its changed cells from the top down: the red / row can be on the
            # screen before the rows under it. Wait for the whole of it (or fail with the last screen).
            screen = term.wait_for(lambda s: 'idle' in s and (width < 100 or kills_shown(column_cells(s, 'KILLED'))),
                                   'the table')
            lines = screen.splitlines()
            header = next(ln for ln in lines if ln.startswith('CGROUP'))
            check(all(len(ln) <= width for ln in lines), 'fits the terminal', screen)
            if width < 100:
                check('KILLED' not in header, 'no room at 80 columns', header)
            else:
                check(header.rstrip().endswith('+OOMK  KILLED'), 'the KILLED column last', header)
                check((' CPU ' in header) == (width >= 200), 'CPU and IO only where they fit as well', header)
                check(kills_shown(column_cells(screen, 'KILLED')), 'the cells under KILLED',
                      column_cells(screen, 'KILLED'))
            term.send('q')
            term.wait_text('EXIT=0')
    finally:
        fake.close()


def test_resize(tmp):
    root = make_tree(tmp)
    with tt.Terminal(80, 24) as term:
        start_top(term, root, tmp)
        term.wait_for(lambda s: 'idle' in s and LONG not in s, 'the 80-column screen')
        term.resize(200, 50)
        screen = term.wait_for(lambda s: LONG in s, 'the redraw at 200 columns (SIGWINCH)')
        check(max(len(ln) for ln in screen.splitlines()) > 80, 'uses the wider terminal', screen)
        term.resize(60, 12)
        screen = term.wait_for(lambda s: 'idle' not in s or max(len(ln) for ln in s.splitlines()) <= 60,
                               'the redraw at 60x12')
        check(all(len(ln) <= 60 for ln in screen.splitlines()), 'fits 60 columns', screen)
        term.send('q')
        term.wait_text('EXIT=0')
        tt.check_terminal_sane(term, tmp)


def test_signals(tmp):
    root = make_tree(tmp)
    with tt.Terminal(80, 24) as term:
        # SIGTERM: the terminal is restored, then top dies of the signal (143).
        pid = start_top(term, root, tmp)
        term.wait_text('idle')
        os.kill(pid, signal.SIGTERM)
        term.wait_text(f'EXIT={128 + signal.SIGTERM}')
        tt.check_terminal_sane(term, tmp)
        # Ctrl-C in the terminal: SIGINT, likewise (130).
        term.type('clear')
        start_top(term, root, tmp)
        term.wait_text('idle')
        term.send('C-c')
        term.wait_text(f'EXIT={128 + signal.SIGINT}')
        tt.check_terminal_sane(term, tmp)
        # --iterations ends the full screen too, with 0.
        term.type('clear')
        start_top(term, root, tmp, '--iterations 2')
        term.wait_text('EXIT=0')
        tt.check_terminal_sane(term, tmp)


def main():
    tests = [test_usage, test_batch_text, test_json_with_daemon, test_daemon_calls, test_reclaim,
             test_reclaim_with_daemon, test_kills,
             test_events_and_changes,
             test_episodes, test_vanishing, test_v1_merged]
    screen_tests = [lambda tmp: test_screen(tmp, 80, 24), lambda tmp: test_screen(tmp, 200, 50), test_resize,
                    test_signals, lambda tmp: test_screen_episode(tmp, 80, 24),
                    lambda tmp: test_screen_episode(tmp, 200, 50),
                    lambda tmp: test_screen_reclaim(tmp, 80, 24), lambda tmp: test_screen_reclaim(tmp, 100, 30),
                    lambda tmp: test_screen_reclaim(tmp, 200, 50),
                    lambda tmp: test_screen_kills(tmp, 80, 24), lambda tmp: test_screen_kills(tmp, 100, 30),
                    lambda tmp: test_screen_kills(tmp, 200, 50),
                    lambda tmp: test_screen_narrow(tmp, 50, 24), lambda tmp: test_screen_narrow(tmp, 80, 24),
                    lambda tmp: test_screen_narrow(tmp, 36, 24), lambda tmp: test_screen_cut(tmp, 50)]
    if tt.have_tmux():
        tests += screen_tests
    else:
        print('tmux is not installed: the full-screen tests do not run', flush=True)
    for t in tests:
        tmp = tempfile.mkdtemp(prefix='pressured-top-')
        try:
            t(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if not tt.have_tmux():
        pt.skip('tmux is not installed (the batch tests passed)')
    pt.finish()


if __name__ == '__main__':
    main()
