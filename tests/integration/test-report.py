#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""systemd-report's io.systemd.Metrics on the report socket ([Report]).

Against a fake tree: every metric equals what the files say (PSI totals
and averages, memory.events, memory.current), effective protection and
headroom equal GetProtection's and GetHeadroom's, reclaim GetStatus's;
a unit's cgroup is named by its unit, every other one by its path;
Describe describes every family List sends. Then sid's systemd 262, not
ours: systemd-report metrics, describe and list-sources (--user, with a
private $XDG_RUNTIME_DIR) list what List sends, and varlinkctl info,
introspect and call work on the socket. The bound: a wide tree cut to
[Report] MaxMetrics= in whole cgroups, in walk order, the rest counted;
MaxCgroups= cuts first. Errors: no "more", unknown methods and
interfaces, parameters, MaxConnections=; a client that does not read is
held to the output buffer and loses nothing. Nothing is read without a
List and no thread runs between them; Lists during a walk share the next
one. A Reexecute with a List held in its walk answers it and keeps the
socket; with the fd store (a restart) the socket the daemon bound comes
back; one passed by the service manager is served and left in place.
The default path: /run/systemd/report/io.pressured for the system daemon
(in a private mount namespace), off with --user; one that cannot be bound
is left off, the daemon serving on.
Last, real cgroups: systemd-report's values equal the kernel's files."""

import ctypes
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
import fdstore_test  # noqa: E402
import prekill_test  # noqa: E402

fail = pt.fail
MAKE_TREE = os.path.join(os.environ['PRESSURED_SOURCE_ROOT'], 'tests', 'make-fake-cgroup-tree.py')
OMITTED = 'io.pressured.Report.CgroupsOmitted'
RESOURCES = ('memory', 'io', 'cpu')
AVGS = (('Avg10', 'avg10'), ('Avg60', 'avg60'), ('Avg300', 'avg300'))
G = 1 << 30


def report_config(path, cgroups=None, extra=''):
    text = '[Report]\nSocket=%s\n%s' % (path, extra)
    if cgroups is not None:
        text += '[Metrics]\nCgroups=%s\n' % cgroups
    return text


def report_daemon(cgroups=None, extra='', prekill=False, **kw):
    """A daemon serving the report socket d.report (and with @prekill the pre-kill hook on d.prekill).
    A fake tree is its only hierarchy: an empty v1 one, not the machine's (test-report-v1 reads that)."""
    d = pt.Daemon(**kw)
    if d.cgroup_root and d.cgroup_root != pt.V2_ROOT and not d.cgroup_v1_root:
        d.cgroup_v1_root = os.path.join(d.tmpdir, 'no-v1')
        os.mkdir(d.cgroup_v1_root)
    d.report = os.path.join(d.tmpdir, 'io.pressured.report')
    d.prekill = os.path.join(d.tmpdir, 'prekill')
    d.write_config(report_config(d.report, cgroups, extra) +
                   ('[Prekill]\nSocket=%s\n' % d.prekill if prekill else ''))
    return d


def stream(v, method):
    """Call @method with "more" on @v; every reply's parameters until the last."""
    v.call(method, {}, more=True)
    out = []
    while True:
        m = v.recv(timeout=pt.scaled(30))
        if 'error' in m:
            raise AssertionError('%s failed: %r' % (method, m))
        out.append(m['parameters'])
        if not m.get('continues'):
            return out


def stream_once(path, method):
    v = pt.Varlink(path)
    try:
        return stream(v, method)
    finally:
        v.close()


def list_metrics(path):
    return stream_once(path, 'io.systemd.Metrics.List')


def describe(path):
    return stream_once(path, 'io.systemd.Metrics.Describe')


def key(m):
    return (m['name'], m.get('object'), json.dumps(m.get('fields'), sort_keys=True))


def by_key(metrics):
    out = {}
    for m in metrics:
        k = key(m)
        pt.check(k not in out, 'each metric once', k)
        out[k] = m['value']
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def put(path, text):
    with open(path, 'w') as f:
        f.write(text)


def psi_lines(text):
    """{stall: {'avg10': float, ..., 'total': int}} of a PSI file's text."""
    out = {}
    for line in (text or '').splitlines():
        words = line.split()
        fields = dict(w.split('=') for w in words[1:])
        out[words[0]] = dict({k: float(fields[k]) for k in ('avg10', 'avg60', 'avg300')}, total=int(fields['total']))
    return out


def object_of(cgroup, unit=None):
    return unit or cgroup


def expected_from_files(d, obj):
    """The metrics of one cgroup directory @d named @obj, as the files say: PSI, memory.events, memory.current."""
    out = {}
    for res in RESOURCES:
        for stall, line in psi_lines(read(os.path.join(d, res + '.pressure'))).items():
            f = json.dumps({'resource': res, 'type': stall}, sort_keys=True)
            out[('io.pressured.Pressure.StallSeconds', obj, f)] = line['total'] / 1e6
            for fam, k in AVGS:
                out[('io.pressured.Pressure.' + fam, obj, f)] = line[k]
    for line in (read(os.path.join(d, 'memory.events')) or '').splitlines():
        name, value = line.split()
        out[('io.pressured.Memory.Events', obj, json.dumps({'type': name}))] = int(value)
    current = read(os.path.join(d, 'memory.current'))
    if current is not None:
        out[('io.pressured.Memory.CurrentBytes', obj, 'null')] = int(current)
    return out


def same_value(a, b):
    """Equal, or for reals equal to the kernel's resolution: systemd's JSON
    parser sums decimal digits, and may land one unit in the last place off
    the double Python reads from the same text."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b


def check_equal_files(got, want, what):
    for k, v in want.items():
        if k not in got:
            fail('%s: no metric %r in %r' % (what, k, sorted(x for x in got if x[1] == k[1])))
        if got[k] != v:
            fail('%s: %r is %r, the file says %r' % (what, k, got[k], v))


# ---------------------------------------------------------------------------
# A fake tree with units, slices and a cgroup below a unit.

PSI_FOO = ('some avg10=1.23 avg60=4.56 avg300=7.89 total=4750067\n'
           'full avg10=0.01 avg60=0.02 avg300=0.03 total=1000001\n')


def make_tree(root):
    pt.make_fake_tree(root, {
        '/': {'current': 5 * G},
        '/system.slice': {'current': 3 * G, 'min': 0, 'low': 4 * G},
        '/system.slice/foo.service': {'current': 1 * G, 'min': 256 << 20, 'low': 1 * G,
                                      'events': {'low': 4, 'high': 3, 'max': 2, 'oom': 1, 'oom_kill': 1,
                                                 'oom_group_kill': 0}},
        '/system.slice/foo.service/payload': {'current': 100 << 20},
        '/system.slice/bar.service': {'current': 2 * G, 'low': 0},
        '/user.slice': {'current': 0},
    })
    for cg in ('/system.slice', '/system.slice/foo.service', '/system.slice/foo.service/payload',
               '/system.slice/bar.service', '/user.slice'):
        d = root + cg
        put(os.path.join(d, 'memory.high'), 'max\n')
        put(os.path.join(d, 'memory.max'), 'max\n')
    put(os.path.join(root, 'system.slice/foo.service/memory.max'), '%d\n' % (2 * G))
    for res in RESOURCES:
        put(os.path.join(root, 'system.slice/foo.service', res + '.pressure'), PSI_FOO)
        put(os.path.join(root, 'system.slice', res + '.pressure'), 'some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n')
    # What proactive reclaim reads and writes ([Reclaim] Cgroups=/system.slice/bar.service).
    for res in ('memory', 'io'):
        put(os.path.join(root, 'system.slice/bar.service', res + '.pressure'),
            'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')
    put(os.path.join(root, 'system.slice/bar.service/memory.reclaim'), '')
    # A cgroup name JSON cannot hold (no UTF-8): left out of List, and counted.
    bad = os.path.join(root, 'user.slice').encode() + b'/caf\xe9.scope'
    os.mkdir(bad)
    with open(bad + b'/memory.current', 'w') as f:
        f.write('1\n')


FAKE_OBJECTS = {'/': '/', '/system.slice': '/system.slice', '/system.slice/foo.service': 'foo.service',
                '/system.slice/bar.service': 'bar.service',
                '/system.slice/foo.service/payload': '/system.slice/foo.service/payload'}


def check_fake_values(d, root):
    metrics = list_metrics(d.report)
    got = by_key(metrics)
    objects = {m.get('object') for m in metrics} - {None}
    pt.check_eq(objects, set(FAKE_OBJECTS.values()), 'the objects: units by name, other cgroups by path')
    for cg, obj in FAKE_OBJECTS.items():
        check_equal_files(got, expected_from_files(root + ('' if cg == '/' else cg), obj), cg)
    pt.check_eq(got[('io.pressured.Pressure.StallSeconds', 'foo.service', json.dumps(
        {'resource': 'memory', 'type': 'some'}, sort_keys=True))], 4.750067, 'a total in seconds, exactly')
    pt.check_eq(got[('io.pressured.Pressure.Avg10', 'foo.service', json.dumps(
        {'resource': 'cpu', 'type': 'full'}, sort_keys=True))], 0.01, 'an average in percent, exactly')
    # Protection and headroom as the io.pressured socket answers them.
    v = pt.Varlink(d.socket)
    try:
        for cg in ('/system.slice/foo.service', '/system.slice/bar.service', '/system.slice'):
            obj = FAKE_OBJECTS[cg]
            node = v.call_sync('io.pressured.GetProtection', {'cgroup': cg})['parameters']['nodes'][0]
            pt.check_eq(got[('io.pressured.Protection.EffectiveMinBytes', obj, 'null')], node['emin'], cg + ' emin')
            pt.check_eq(got[('io.pressured.Protection.EffectiveLowBytes', obj, 'null')], node['elow'], cg + ' elow')
            pt.check_eq(got[('io.pressured.Protection.State', obj, 'null')], node['state'], cg + ' state')
        h = v.call_sync('io.pressured.GetHeadroom', {'cgroup': '/system.slice/foo.service'})['parameters']
        pt.check_eq(h['headroom_bytes'], 1 * G, 'GetHeadroom of the limited cgroup')
        pt.check_eq(got[('io.pressured.Headroom.Bytes', 'foo.service', 'null')], h['headroom_bytes'], 'headroom')
    finally:
        v.close()
    pt.check_eq(got[('io.pressured.Protection.State', 'foo.service', 'null')], 'low', 'foo.service is within low')
    pt.check(('io.pressured.Reclaim.ReclaimedBytes', 'foo.service', 'null') not in got, 'no reclaim outside [Reclaim]')
    pt.check_eq(got[(OMITTED, None, 'null')], 1, 'the cgroup whose name is no UTF-8 omitted')
    pt.check_eq(metrics[-1]['name'], OMITTED, 'the omitted count ends the reply')
    return metrics


def reclaimed(d):
    e = [e for e in d.status()['reclaim'] if e['cgroup'] == '/system.slice/bar.service']
    return e[0]['reclaimed_bytes'] if e else None


def check_reclaim(d):
    """ReclaimedBytes of a cgroup under [Reclaim], between GetStatus's before and after."""
    k = ('io.pressured.Reclaim.ReclaimedBytes', 'bar.service', 'null')
    pt.wait_for(lambda: (reclaimed(d) or 0) > 0, what='proactive reclaim of bar.service')
    before = reclaimed(d)
    got = by_key(list_metrics(d.report))
    after = reclaimed(d)
    pt.check(before <= got[k] <= after, 'ReclaimedBytes between GetStatus before and after', before, got[k], after)


def check_describe(d, metrics):
    families = describe(d.report)
    names = [f['name'] for f in families]
    pt.check_eq(len(names), len(set(names)), 'each family described once')
    types = {f['name']: f['type'] for f in families}
    for m in metrics:
        t = types.get(m['name'])
        pt.check(t is not None, 'every family of List is described', m['name'])
        pt.check(isinstance(m['value'], str) == (t == 'string'), 'values fit their type', m, t)
    for f in families:
        pt.check(f['name'].startswith('io.pressured.') and f['name'].count('.') == 3, 'io.pressured.<Area>.<Name>',
                 f['name'])
        pt.check(f['description'], 'a description', f)
    return families


def check_daemon_values(d, metrics):
    """The daemon's own metrics equal GetStatus's counters; a call of the pre-kill hook counts."""
    oomd = prekill_test.Oomd(d.prekill)
    try:
        pt.check_eq(oomd.call_sync('/system.slice/foo.service'), {'parameters': {}}, 'Notify with nobody to warn')
    finally:
        oomd.close()
    metrics = list_metrics(d.report)
    got = by_key(metrics)
    status = d.status()
    pt.check_eq(got[('io.pressured.Daemon.Prekill', None, json.dumps({'type': 'nobody'}))], 1,
                'Prekill answered at once, nobody to warn')
    pt.check_eq(got[('io.pressured.Daemon.Prekill', None, json.dumps({'type': 'acknowledged'}))],
                status['prekill']['acknowledged'], 'Prekill acknowledged')
    pt.check_eq(got[('io.pressured.Daemon.PrekillWarned', None, 'null')], status['prekill']['warned'], 'PrekillWarned')
    pt.check_eq(got[('io.pressured.Daemon.PrekillPending', None, 'null')], status['prekill']['pending'],
                'PrekillPending')
    pt.check_eq(got[('io.pressured.Daemon.EventsRead', None, 'null')], status['counters']['events_read'],
                'EventsRead')
    pt.check_eq(got[('io.pressured.Daemon.Kills', None, json.dumps({'by': 'kernel'}))],
                status['counters']['kills_kernel'], 'Kills by the kernel')
    pt.check_eq(got[('io.pressured.Daemon.Takeovers', None, 'null')], status['generation'], 'Takeovers')


# ---------------------------------------------------------------------------
# sid's systemd 262: systemd-report and varlinkctl.

def sid_env(root):
    return dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, 'usr/lib/x86_64-linux-gnu/systemd'))


def systemd_report(sid, runtime, *args):
    exe = os.path.join(sid, 'usr/lib/systemd/systemd-report.standalone')
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, SYSTEMD_PAGER='', SYSTEMD_COLORS='0')
    return subprocess.run([exe, '--user', '--no-pager'] + list(args), capture_output=True, text=True, env=env,
                          timeout=pt.scaled(60))


def report_runtime(tmp, path):
    """A $XDG_RUNTIME_DIR whose systemd/report/ holds the daemon's socket (a symlink, as systemd-report takes)."""
    runtime = os.path.join(tmp, 'runtime')
    os.makedirs(os.path.join(runtime, 'systemd', 'report'), exist_ok=True)
    link = os.path.join(runtime, 'systemd', 'report', 'io.pressured')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(path, link)
    return runtime


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def check_systemd_report(d, tmp, ours, families):
    sid = pt.systemd_sid('systemd-report 262')
    if sid is None:
        return
    runtime = report_runtime(tmp, d.report)
    r = systemd_report(sid, runtime, 'list-sources')
    pt.check(r.returncode == 0 and 'io.pressured' in r.stdout, 'systemd-report list-sources', r.stdout, r.stderr)
    r = systemd_report(sid, runtime, '--json=short', 'metrics')
    pt.check_eq(r.returncode, 0, 'systemd-report metrics: ' + r.stderr)
    theirs = json_lines(r.stdout)
    # What does not move between two reads: the files of the tree (not MemAvailable, not reclaim under way).
    moving = ('io.pressured.Headroom.Bytes', 'io.pressured.Reclaim.ReclaimedBytes')
    cgroup_metrics = lambda ms: {k: v for k, v in by_key(ms).items()  # noqa: E731
                                 if k[1] is not None and k[0] not in moving}
    theirs_c, ours_c = cgroup_metrics(theirs), cgroup_metrics(ours)
    pt.check_eq(sorted(theirs_c), sorted(ours_c), 'systemd-report metrics: the cgroups\' metrics as List sends them')
    for k, v in ours_c.items():
        pt.check(same_value(theirs_c[k], v), 'systemd-report metrics: the value List sends', k, theirs_c[k], v)
    pt.check_eq({key(m) for m in theirs}, {key(m) for m in ours}, 'systemd-report metrics: every metric')
    r = systemd_report(sid, runtime, 'metrics')
    pt.check(r.returncode == 0 and '%d metrics listed.' % len(ours) in r.stdout, 'systemd-report metrics, the table',
             r.stdout[-300:], r.stderr)
    r = systemd_report(sid, runtime, '--json=short', 'describe')
    pt.check_eq(r.returncode, 0, 'systemd-report describe: ' + r.stderr)
    pt.check_eq(sorted(json_lines(r.stdout), key=lambda f: f['name']), sorted(families, key=lambda f: f['name']),
                'systemd-report describe')
    # A match: a family and a prefix at a dot.
    r = systemd_report(sid, runtime, '--json=short', 'metrics', 'io.pressured.Protection')
    names = {m['name'] for m in json_lines(r.stdout)}
    pt.check_eq(names, {'io.pressured.Protection.EffectiveMinBytes', 'io.pressured.Protection.EffectiveLowBytes',
                        'io.pressured.Protection.State'}, 'systemd-report metrics io.pressured.Protection')


def check_varlinkctl(d):
    sid = pt.systemd_sid('varlinkctl 262')
    if sid is None:
        return
    ctl = [os.path.join(sid, 'usr/bin/varlinkctl')]
    env = sid_env(sid)
    addr = 'unix:' + d.report

    def run(*args):
        return subprocess.run(ctl + list(args), capture_output=True, text=True, env=env, timeout=pt.scaled(30))

    r = run('info', addr)
    pt.check(r.returncode == 0 and 'io.systemd.Metrics' in r.stdout, 'varlinkctl info', r.stdout, r.stderr)
    r = run('introspect', addr, 'io.systemd.Metrics')
    pt.check(r.returncode == 0 and 'method List() -> (' in r.stdout and 'type MetricFamilyType(' in r.stdout,
             'varlinkctl introspect', r.stdout, r.stderr)
    r = run('call', '--more', '-j', addr, 'io.systemd.Metrics.List', '{}')
    pt.check(r.returncode == 0, 'varlinkctl call --more List', r.stderr)
    pt.check_eq(json_lines(r.stdout)[-1], {'name': OMITTED, 'value': 1}, 'varlinkctl call --more List, the last')
    r = run('call', addr, 'io.systemd.Metrics.List', '{}')
    pt.check(r.returncode != 0 and 'more' in r.stderr, 'varlinkctl call List without --more fails', r.stderr)


# ---------------------------------------------------------------------------
# Errors and limits.

def expect_error(v, method, params, more, error, parameters=None):
    v.call(method, params, more=more)
    m = v.recv()
    pt.check_eq(m.get('error'), error, '%s error' % method)
    if parameters is not None:
        pt.check_eq(m.get('parameters'), parameters, '%s error parameters' % method)


def check_errors(d):
    v = pt.Varlink(d.report)
    try:
        expect_error(v, 'io.systemd.Metrics.List', {}, False, 'org.varlink.service.ExpectedMore', {})
        expect_error(v, 'io.systemd.Metrics.Describe', {}, False, 'org.varlink.service.ExpectedMore', {})
        expect_error(v, 'io.systemd.Metrics.List', {'x': 1}, True, 'org.varlink.service.InvalidParameter',
                     {'parameter': 'x'})
        expect_error(v, 'io.systemd.Metrics.Get', {}, True, 'org.varlink.service.MethodNotFound',
                     {'method': 'io.systemd.Metrics.Get'})
        expect_error(v, 'io.pressured.GetStatus', {}, False, 'org.varlink.service.InterfaceNotFound',
                     {'interface': 'io.pressured'})
        expect_error(v, 'org.varlink.service.GetInterfaceDescription', {'interface': 'io.pressured'}, False,
                     'org.varlink.service.InterfaceNotFound', {'interface': 'io.pressured'})
        info = v.call_sync('org.varlink.service.GetInfo')['parameters']
        pt.check_eq(info['interfaces'], ['org.varlink.service', 'io.systemd.Metrics'], 'GetInfo interfaces')
        desc = v.call_sync('org.varlink.service.GetInterfaceDescription',
                           {'interface': 'io.systemd.Metrics'})['parameters']['description']
        with open(os.path.join(os.environ['PRESSURED_SOURCE_ROOT'], 'daemon/protocol/io.systemd.Metrics.varlink')) as f:
            pt.check_eq(desc, f.read(), 'GetInterfaceDescription of io.systemd.Metrics')
        # A oneway List is no call to answer; pipelined calls are answered in order.
        v.call('io.systemd.Metrics.List', {}, more=True, oneway=True)
        v.send_raw(b'{"method":"io.systemd.Metrics.Describe","more":true}\0'
                   b'{"method":"org.varlink.service.GetInfo"}\0')
        first = v.recv()
        pt.check('name' in first['parameters'] and 'description' in first['parameters'], 'Describe first', first)
        while first.get('continues'):
            first = v.recv()
        pt.check('vendor' in v.recv()['parameters'], 'then GetInfo')
        pt.check(not v.is_closed(0.2), 'the connection stays after its errors')
    finally:
        v.close()


def check_max_connections(d):
    """[Report] MaxConnections=2: a third connection is told LimitExceeded and closed; the io.pressured socket is not."""
    held = [pt.Varlink(d.report) for _ in range(2)]
    try:
        for v in held:
            pt.check('vendor' in v.call_sync('org.varlink.service.GetInfo')['parameters'], 'a connection within')
        over = pt.Varlink(d.report)
        m = over.recv()
        pt.check_eq(m, {'error': 'io.pressured.LimitExceeded', 'parameters': {'limit': 'MaxConnections', 'value': 2}},
                    'the connection over MaxConnections=')
        pt.check(over.is_closed(), 'the connection over the limit is closed')
        over.close()
        pt.check('version' in d.status(), 'the io.pressured socket has its own limit')
        held.pop().close()
        pt.wait_for(lambda: try_list(d.report), what='a connection once one left')
    finally:
        for v in held:
            v.close()


def try_list(path):
    try:
        return list_metrics(path)
    except (AssertionError, EOFError, OSError):
        return None


# ---------------------------------------------------------------------------
# The bound: whole cgroups in walk order within [Report] MaxMetrics=.

def tree_metrics(root, name):
    """How many metrics the cgroup @name of a --flat tree takes with everything read."""
    n = len(expected_from_files(os.path.join(root, name), name))
    return n + (4 if os.path.exists(os.path.join(root, name, 'memory.current')) else 0)


def check_bound(tmp):
    root = os.path.join(tmp, 'wide')
    subprocess.run([sys.executable, MAKE_TREE, root, '--flat', '300', '--seed', '7'], check=True)
    names = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
    for n in names:  # no limit: the headroom is the machine's
        put(os.path.join(root, n, 'memory.high'), 'max\n')
        put(os.path.join(root, n, 'memory.max'), 'max\n')
    with report_daemon('/*', cgroup_root=root) as d:
        check_cut(d, root, names, 1024, 1000)
        # Each applied by a reload, as [Metrics] Cgroups= is.
        for extra, cgroups, max_metrics, max_cgroups in (('MaxMetrics=2000\n', '/*', 2000, 1000),
                                                         ('MaxMetrics=64\n', '/*', 64, 1000),
                                                         ('', '/*\nMaxCgroups=10', 1024, 10)):
            d.write_config(report_config(d.report, cgroups, extra))
            pt.check_eq(pt.run_ctl('reload', socket=d.socket).returncode, 0, 'reload')
            check_cut(d, root, names, max_metrics, max_cgroups)


def check_cut(d, root, names, max_metrics, max_cgroups):
    metrics = list_metrics(d.report)
    pt.check(len(metrics) <= max_metrics, 'at most MaxMetrics=%d metrics' % max_metrics, len(metrics))
    own = sum(1 for m in metrics if 'object' not in m)
    left = max_metrics - own
    want = []
    for n in names[:max_cgroups]:
        need = tree_metrics(root, n)
        if need > left:
            break
        left -= need
        want.append('/' + n)
    listed = []
    for m in metrics:
        if 'object' in m and m['object'] not in listed:
            listed.append(m['object'])
    pt.check_eq(listed, want, 'the cgroups listed: a prefix of the walk order that fits')
    got = by_key(metrics)
    for cg in want:
        n = sum(1 for k in got if k[1] == cg)
        pt.check_eq(n, tree_metrics(root, cg[1:]), 'all of %s\'s metrics' % cg)
    pt.check_eq(got[(OMITTED, None, 'null')], len(names) - len(want), 'CgroupsOmitted with MaxMetrics=%d' % max_metrics)
    if max_metrics == 1024 and max_cgroups == 1000:
        pt.check(len(metrics) > 1024 - 40 and len(want) < len(names), 'the default bound cuts the wide tree',
                 len(metrics), len(want))


# ---------------------------------------------------------------------------
# A client that does not read.

def check_slow_reader(d):
    before, how = d.own_memory()
    slow = pt.Varlink(d.report)
    n = 300
    try:
        slow.send_raw(b'{"method":"io.systemd.Metrics.List","more":true}\0' * n)
        pt.wait_for(lambda: 'does not read its replies' in d.log(), timeout=pt.scaled(60),
                    what='the daemon to stop reading the slow client\'s calls')
        # Meanwhile the others are served.
        pt.check(try_list(d.report), 'another client is answered while one does not read')
        if before is None:
            pt.skip_part('the daemon\'s memory under a client that does not read: ' + how)
        else:
            after, _ = d.own_memory()
            pt.check(after - before < 32 * 1024, 'the daemon holds no more than the output buffer for a client '
                     'that does not read (%s)' % how, before, after)
        # Nothing is lost: every List is answered once it reads.
        done = 0
        while done < n:
            m = slow.recv(timeout=pt.scaled(60))
            pt.check('error' not in m, 'a List of the slow client', m)
            done += not m.get('continues')
    finally:
        slow.close()


# ---------------------------------------------------------------------------
# No listener, no work; Lists during a walk share the next one; Reexecute.

class Inotify:
    """IN_OPEN events of one directory, through libc."""
    IN_OPEN = 0x20

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        pt.check(self.fd >= 0 and self.libc.inotify_add_watch(self.fd, path.encode(), self.IN_OPEN) >= 0,
                 'inotify on ' + path)

    def opened(self):
        """How many opens happened since the last call."""
        n = 0
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return n
            off = 0
            while off < len(data):
                _, mask, _, length = struct.unpack_from('iIII', data, off)
                n += bool(mask & self.IN_OPEN)
                off += 16 + length

    def close(self):
        os.close(self.fd)


def thread_count(pid):
    return len(os.listdir('/proc/%d/task' % pid))


PSI_FED = 'some avg10=1.00 avg60=2.00 avg300=3.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'


def feed(fifo, total):
    with open(fifo, 'w') as f:
        f.write(PSI_FED % total)


def fed_total(metrics):
    return by_key(metrics)[('io.pressured.Pressure.StallSeconds', '/slow',
                            json.dumps({'resource': 'memory', 'type': 'some'}, sort_keys=True))]


def start_list(path):
    v = pt.Varlink(path, timeout=pt.scaled(30))
    v.call('io.systemd.Metrics.List', {}, more=True)
    return v


def finish_list(v):
    out = []
    try:
        while True:
            m = v.recv(timeout=pt.scaled(30))
            pt.check('error' not in m, 'a held List', m)
            out.append(m['parameters'])
            if not m.get('continues'):
                return out
    finally:
        v.close()


def check_held(tmp):
    root = os.path.join(tmp, 'held')
    pt.make_fake_tree(root, {'/slow': {}, '/other': {'current': 1}})
    os.unlink(os.path.join(root, 'slow', 'memory.events'))
    fifo = os.path.join(root, 'slow', 'memory.pressure')
    os.mkfifo(fifo)
    watch = Inotify(os.path.join(root, 'other'))
    try:
        with report_daemon('/slow /other', cgroup_root=root) as d:
            # Nothing read and no thread without a List; Describe reads nothing either.
            pt.check_eq(thread_count(d.pid), 1, 'threads before any List')
            pt.check(describe(d.report), 'Describe')
            pt.check('version' in d.status(), 'GetStatus')
            pt.check_eq(watch.opened(), 0, 'files of the tree opened before any List')
            held = start_list(d.report)
            pt.wait_for(lambda: thread_count(d.pid) == 2, what='the walk thread, held on the FIFO')
            pt.check(d.inject()['parameters'] is not None and 'version' in d.status(), 'the loop serves meanwhile')
            waiting = [start_list(d.report) for _ in range(3)]
            feed(fifo, 111)
            pt.check_eq(fed_total(finish_list(held)), 111 / 1e6, 'the held List reads what its walk read')
            pt.wait_for(lambda: thread_count(d.pid) == 2, what='the next walk, shared by the Lists that waited')
            feed(fifo, 222)
            for v in waiting:
                pt.check_eq(fed_total(finish_list(v)), 222 / 1e6, 'a List that waited shares the next walk')
            pt.wait_for(lambda: thread_count(d.pid) == 1, what='the walk thread to end')
            pt.check(watch.opened() > 0, 'the tree is read for a List')
            check_reexec_held(d, fifo)
    finally:
        watch.close()


def socket_ino(path):
    return os.stat(path).st_ino


def check_reexec_held(d, fifo):
    """Reexecute while a List waits in its walk: the walk ends first and the List is answered; the socket stays."""
    ino = socket_ino(d.report)
    held = start_list(d.report)
    pt.wait_for(lambda: thread_count(d.pid) == 2, what='the walk thread, held on the FIFO')
    v = pt.Varlink(d.socket)
    try:
        v.call('io.pressured.Reexecute')
        pt.wait_for(lambda: 'Finishing the cgroup walk of systemd-report' in d.log(),
                    what='the Reexecute to wait for the walk')
        feeder = threading.Thread(target=feed, args=(fifo, 333))
        feeder.start()
        metrics = finish_list(held)
        feeder.join()
        pt.check_eq(fed_total(metrics), 333 / 1e6, 'the List held across Reexecute is answered whole')
        pt.check('error' not in v.recv(timeout=pt.scaled(30)), 'Reexecute')
    finally:
        v.close()
    pt.check_eq(d.status()['generation'], 1, 'generation after Reexecute')
    pt.check_eq(socket_ino(d.report), ino, 'the report socket is the one handed over, never bound anew')
    feeder = threading.Thread(target=feed, args=(fifo, 444))
    feeder.start()
    metrics = list_metrics(d.report)
    feeder.join()
    pt.check_eq(fed_total(metrics), 444 / 1e6, 'a List of the new process')
    pt.check_eq(by_key(metrics)[('io.pressured.Daemon.Takeovers', None, 'null')], 1, 'Takeovers after Reexecute')


# ---------------------------------------------------------------------------
# Restarts with the fd store, and a socket passed by the service manager.

def check_fdstore(tmp):
    path = os.path.join(tmp, 'fdstore-report')
    conf = os.path.join(tmp, 'fdstore.conf')
    with open(conf, 'w') as f:
        f.write(report_config(path))
    sm = fdstore_test.ServiceManager(['--socket', os.path.join(tmp, 'fdstore.sock'), '--config', conf,
                                      '--log-level', 'debug'])
    try:
        sm.start()
        pt.check(try_list(path), 'a List before the restart')
        sm.wait_names(lambda names: 'report' in names, 'the report socket in the fd store')
        ino = socket_ino(path)
        sm.restart()
        pt.check(try_list(path), 'a List after the restart')
        pt.check_eq(socket_ino(path), ino, 'the report socket came back from the fd store')
    finally:
        sm.stop()
        sm.close()


def check_activated(tmp):
    """The socket passed as "report" (pressured-report.socket) is served, and left to the service manager."""
    paths = {n: os.path.join(tmp, 'act.' + n) for n in ('varlink', 'report')}
    socks = []
    for n in ('varlink', 'report'):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.bind(paths[n])
        s.listen(16)
        socks.append(s)
    sm = fdstore_test.ServiceManager(['--log-level', 'debug'])
    try:
        with sm.lock:
            sm.store = [('report', os.dup(socks[1].fileno()), False), ('varlink', os.dup(socks[0].fileno()), False)]
        sm.start()
        pt.check(try_list(paths['report']), 'a List on the passed socket')
        pt.check('the socket passed by the service manager' in sm.log(), 'served as passed', sm.log()[-500:])
        sm.terminate()
        pt.check(os.path.exists(paths['report']), 'the passed socket stays: it is the service manager\'s')
    finally:
        sm.stop()
        sm.close()
        for s in socks:
            s.close()


def check_default_path(tmp):
    """The system daemon on its default socket serves /run/systemd/report/io.pressured; --user does not."""
    if not shutil.which('unshare'):
        return pt.skip_part('the default path: no unshare(1) for a private /run')
    log = os.path.join(tmp, 'ns.log')
    script = ('mount -t tmpfs tmpfs /run && exec "$@"')
    proc = subprocess.Popen(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh'] + pt.WRAPPER +
                            [pt.PRESSURED, '--log-level', 'debug'], stdout=open(log, 'w'), stderr=subprocess.STDOUT)
    try:
        path = '/proc/%d/root/run/systemd/report/io.pressured' % proc.pid
        pt.wait_for(lambda: try_list(path), timeout=pt.scaled(30), what='the default report socket')
        pt.check(os.path.exists('/proc/%d/root/run/pressured/io.pressured' % proc.pid), 'on the default varlink socket')
    finally:
        proc.terminate()
        proc.wait(timeout=pt.scaled(30))
    # A socket that cannot be bound: said once and left off, the daemon serves on.
    d = report_daemon()
    d.write_config(report_config('/proc/no-such-dir/io.pressured'))
    with d:
        pt.check('version' in d.status(), 'the daemon serves without its report socket')
        pt.check_eq(d.log().count('Cannot serve metrics for systemd-report on /proc/no-such-dir/io.pressured, '
                                  'going on without it'), 1, 'the unbound report socket, said once')
    runtime = os.path.join(tmp, 'user-runtime')
    os.makedirs(runtime, mode=0o700)
    d = pt.Daemon(args=['--user'], env={'XDG_RUNTIME_DIR': runtime}, socket_path=os.path.join(runtime, 'x'))
    with d:
        pt.check('version' in d.status(), 'the --user daemon serves')
        pt.check(not os.path.exists(os.path.join(runtime, 'systemd', 'report')), 'no report socket with --user')
        pt.check('The report socket is off.' in d.log(), 'off with --user', d.log()[-800:])


# ---------------------------------------------------------------------------
# Real cgroups: systemd-report's values are the kernel's.

def check_real(tmp):
    sid = pt.systemd_sid('real cgroups through systemd-report 262')
    if sid is None:
        return
    with pt.v2_cgroup_part('report') as cg:
        if cg is None:
            return
        d = report_daemon('/ %s' % cg, cgroup_root=pt.V2_ROOT)
        with d:
            runtime = report_runtime(tmp, d.report)
            # A cgroup that held a process, now empty: its totals stay, its averages only fall.
            burner = subprocess.Popen(['sh', '-c', 'echo $$ > %s/cgroup.procs && exec timeout 1 sh -c "while :; do :; done"'
                                       % (pt.V2_ROOT + cg)])
            burner.wait(timeout=pt.scaled(30))
            before = {r: psi_lines(read('%s%s/%s.pressure' % (pt.V2_ROOT, cg, r))) for r in RESOURCES}
            root_before = {r: psi_lines(read('%s/%s.pressure' % (pt.V2_ROOT, r))) for r in RESOURCES}
            r = systemd_report(sid, runtime, '--json=short', 'metrics', 'io.pressured.Pressure')
            after = {r_: psi_lines(read('%s%s/%s.pressure' % (pt.V2_ROOT, cg, r_))) for r_ in RESOURCES}
            root_after = {r_: psi_lines(read('%s/%s.pressure' % (pt.V2_ROOT, r_))) for r_ in RESOURCES}
            pt.check_eq(r.returncode, 0, 'systemd-report metrics on real cgroups: ' + r.stderr)
            got = by_key(json_lines(r.stdout))
            checked = 0
            for res in RESOURCES:
                for stall, line in before[res].items():
                    f = json.dumps({'resource': res, 'type': stall}, sort_keys=True)
                    pt.check(same_value(got[('io.pressured.Pressure.StallSeconds', cg, f)], line['total'] / 1e6),
                             '%s %s %s total, the kernel\'s' % (cg, res, stall),
                             got[('io.pressured.Pressure.StallSeconds', cg, f)], line['total'])
                    pt.check_eq(after[res][stall]['total'], line['total'], 'an empty cgroup\'s total stays')
                    for fam, k in AVGS:
                        v = got[('io.pressured.Pressure.' + fam, cg, f)]
                        lo, hi = sorted((after[res][stall][k], line[k]))
                        pt.check(lo - 1e-9 <= v <= hi + 1e-9, '%s %s %s %s between the kernel\'s before and after' %
                                 (cg, res, stall, k), lo, v, hi)
                    k = ('io.pressured.Pressure.StallSeconds', '/', f)
                    if stall in root_before[res]:
                        pt.check(root_before[res][stall]['total'] / 1e6 - 1e-9 <= got[k] <=
                                 root_after[res][stall]['total'] / 1e6 + 1e-9,
                                 'the root\'s %s %s total between the kernel\'s before and after' % (res, stall))
                    checked += 1
            pt.check(checked >= 3, 'PSI of every resource', checked)


def main():
    pt.require_root('the fake trees, the real cgroup and Reexecute')
    with tempfile.TemporaryDirectory(prefix='pressured-report-') as tmp:
        root = os.path.join(tmp, 'tree')
        make_tree(root)
        cgroups = '/ /system.slice /system.slice/*.service /system.slice/*/payload /user.slice/*'
        reclaim = '[Reclaim]\nCgroups=/system.slice/bar.service\nInterval=100ms\n'
        # Calls a client does not read wait RequestTimeoutSec= at most: longer than the slow reader's part.
        limits = '[Limits]\nOutputBufferBytes=64K\nRequestTimeoutSec=600\n'
        with report_daemon(cgroups, reclaim + limits, prekill=True, cgroup_root=root) as d:
            metrics = check_fake_values(d, root)
            check_reclaim(d)
            families = check_describe(d, metrics)
            check_daemon_values(d, metrics)
            check_systemd_report(d, tmp, list_metrics(d.report), families)
            check_varlinkctl(d)
            check_errors(d)
            check_slow_reader(d)
        with report_daemon(cgroups, 'MaxConnections=2\n', cgroup_root=root) as d:
            check_max_connections(d)
        check_bound(tmp)
        check_held(tmp)
        check_fdstore(tmp)
        check_activated(tmp)
        check_default_path(tmp)
        check_real(tmp)
    pt.finish()


if __name__ == '__main__':
    main()
