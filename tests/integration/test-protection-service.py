#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The protection service on a fake cgroup2 tree (--cgroup-root):
GetProtection lists the subtree parents before children with every
PROTECTION_NODE field and null for "max" settings; a protection
subscription starts with the cgroup's node and reports a change of its
effective-protection state within a few refresh periods; refreshes that
change nothing are counted as skipped propagations."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 15.0  # bound on waits that normally take a few refresh periods
REFRESH = 0.2
M = 1 << 20
G = 1 << 30
MAX = 'max'
FIELDS = ('cgroup', 'usage', 'min', 'low', 'emin', 'elow', 'min_usage', 'low_usage',
          'children_min_usage', 'children_low_usage', 'state')
NULLABLE = ('min', 'low', 'emin', 'elow')

# The root's children take their own settings as effective protection; the
# only child of /a gets min(usage, low) as elow while its parent's elow
# covers it.
TREE = {
    '/': {'current': 8 * G},
    '/a': {'current': 1536 * M, 'min': 0, 'low': 2 * G},
    '/a/leaf': {'current': 512 * M, 'min': 0, 'low': 1 * G},
    '/b': {'current': 1 * G, 'min': MAX, 'low': MAX},
    '/b/c': {'current': 256 * M, 'min': 64 * M, 'low': 128 * M},
}


def check_node(n):
    for f in FIELDS:
        pt.check(f in n, f'node field {f}', n)
    for f in FIELDS[1:-1]:
        v = n[f]
        if f in NULLABLE and v is None:
            continue
        pt.check(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63,
                 f'{f} is a byte count', n)
        pt.check(v != 18446744073709551615, f'{f} is not the "max" sentinel', n)
    pt.check(n['state'] in ('min', 'low', 'none'), 'state', n)


def parent_of(path):
    return '/' if path.count('/') == 1 else path.rsplit('/', 1)[0]


def nodes_by_path(nodes):
    return {n['cgroup']: n for n in nodes}


def test_get_protection(d):
    v = pt.Varlink(d.socket)
    r = v.call_sync('io.pressured.GetProtection', {'cgroup': '/'})
    nodes = r.get('parameters', {}).get('nodes')
    pt.check(isinstance(nodes, list), 'GetProtection returns nodes', r)
    paths = [n['cgroup'] for n in nodes]
    pt.check(sorted(paths) == sorted(TREE), 'every cgroup of the tree is listed once', paths)
    for i, n in enumerate(nodes):
        check_node(n)
        if n['cgroup'] != '/':
            pt.check(parent_of(n['cgroup']) in paths[:i], 'parents come before children', paths)
    by = nodes_by_path(nodes)

    a, leaf, b, c = by['/a'], by['/a/leaf'], by['/b'], by['/b/c']
    pt.check(b['min'] is None and b['low'] is None, '"max" settings are null', b)
    pt.check(b['usage'] == 1 * G and b['min_usage'] == 1 * G and b['low_usage'] == 1 * G,
             'an unlimited setting protects the whole usage', b)
    pt.check(a['usage'] == 1536 * M and a['min'] == 0 and a['low'] == 2 * G, 'settings and usage are read', a)
    pt.check(a['emin'] == 0 and a['elow'] == 2 * G, 'a child of the root takes its own settings', a)
    pt.check(a['min_usage'] == 0 and a['low_usage'] == 1536 * M, 'protected usage = min(usage, setting)', a)
    pt.check(a['children_min_usage'] == 0 and a['children_low_usage'] == 512 * M,
             'children sums', a)
    pt.check(leaf['elow'] == 512 * M and leaf['low_usage'] == 512 * M and leaf['state'] == 'low',
             'the leaf is within its effective low', leaf)
    pt.check(a['state'] == 'low', '/a is within its elow', a)
    pt.check(c['min_usage'] == 64 * M and c['low_usage'] == 128 * M, '/b/c protected usage', c)
    pt.check(by['/b']['children_min_usage'] == 64 * M and by['/b']['children_low_usage'] == 128 * M,
             '/b children sums', by['/b'])

    # A subtree starts at its top.
    r = v.call_sync('io.pressured.GetProtection', {'cgroup': '/a'})
    sub = [n['cgroup'] for n in r['parameters']['nodes']]
    pt.check(sub == ['/a', '/a/leaf'], 'GetProtection of a subtree', sub)
    r = v.call_sync('io.pressured.GetProtection', {'cgroup': '/nope'})
    pt.check(r.get('error') == 'io.pressured.NoSuchCgroup', 'GetProtection of a missing cgroup', r)
    v.close()


def protection_of(d, cgroup):
    """GetProtection of @cgroup: its nodes by path."""
    v = pt.Varlink(d.socket)
    try:
        r = v.call_sync('io.pressured.GetProtection', {'cgroup': cgroup})
    finally:
        v.close()
    pt.check('parameters' in r, f'GetProtection of {cgroup} answers', r)
    return nodes_by_path(r['parameters']['nodes'])


def test_not_utf8(d, fake):
    """A cgroup whose name is not UTF-8 (JSON cannot carry it) is left out of GetProtection's list, the rest is
    answered, and its usage still counts in its parent's sums, as the kernel counts it."""
    bad = os.path.join(fake, 'b', 'c').encode() + b'/caf\xe9'
    os.mkdir(bad)
    try:
        for name, value in (('memory.current', 32 * M), ('memory.min', 32 * M), ('memory.low', 32 * M),
                            ('memory.events', 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0'), ('cgroup.procs', '')):
            with open(bad + b'/' + name.encode(), 'w') as f:
                f.write(f'{value}\n' if value != '' else '')
        by = pt.wait_for(lambda: (lambda n: n if n['/b/c']['children_min_usage'] == 32 * M else None)(
            protection_of(d, '/b')), timeout=WAIT, what='a refresh to count the cgroup /b/c/caf\\xe9')
        pt.check(sorted(by) == ['/b', '/b/c'], 'the cgroup whose name is not UTF-8 is left out of the list',
                 sorted(by))
    finally:
        shutil.rmtree(bad)
    pt.wait_for(lambda: protection_of(d, '/b')['/b/c']['children_min_usage'] == 0, timeout=WAIT,
                what='a refresh without it')


def set_usage(fake, path, value):
    """Rewrite memory.current in place with one write, so that the daemon
    never reads a half-written file; the test's values never get shorter."""
    data = f'{value}\n'.encode()
    fd = os.open(os.path.join(fake, path.lstrip('/'), 'memory.current'), os.O_WRONLY)
    try:
        pt.check(os.fstat(fd).st_size <= len(data), 'the new value is not shorter', path, value)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def test_subscription(d, fake):
    sub = pt.Varlink(d.socket, timeout=WAIT)
    first = sub.subscribe(cgroup='/a/leaf', protection=True)
    ev = first['parameters']['event']
    pt.check(ev['kind'] == 'subscribed' and ev['source'] == 'protection' and ev['cgroup'] == '/a/leaf',
             'subscribed to protection', ev)
    node = ev['state'].get('node')
    pt.check(isinstance(node, dict), 'the subscribed state has the node', ev)
    check_node(node)
    pt.check(node['cgroup'] == '/a/leaf' and node['state'] == 'low' and node['usage'] == 512 * M,
             'the node is the leaf\'s', node)

    # Nothing changes for a while: refreshes happen and skip propagation.
    st0 = d.status()['counters']
    pt.wait_for(lambda: d.status()['counters']['protection_refreshes'] >= st0['protection_refreshes'] + 3,
                timeout=WAIT, what='three refreshes')
    st1 = d.status()['counters']
    pt.check(st1['propagations_skipped'] > st0['propagations_skipped'],
             'unchanged refreshes count as skipped propagations', st0, st1)
    pt.check(st1['propagations_applied'] == st0['propagations_applied'],
             'nothing was propagated while nothing changed', st0, st1)

    # The leaf grows past its effective low (1 GiB): state low -> none.
    set_usage(fake, '/a/leaf', 1536 * M)
    set_usage(fake, '/a', 2560 * M)
    msg = sub.recv(timeout=WAIT)
    ev = msg['parameters']['event']
    pt.check(ev['kind'] == 'protection' and ev['cgroup'] == '/a/leaf' and ev['source'] == 'protection',
             'a protection event', msg)
    pt.check(ev['state'] == 'none' and ev['previous'] == 'low', 'the state went from low to none', ev)
    pt.check(ev['seq'] == 1 and ev['missed'] == 0, 'seq of the first event', ev)
    check_node(ev['node'])
    pt.check(ev['node']['usage'] == 1536 * M and ev['node']['elow'] == 1 * G, 'the event carries the new node',
             ev['node'])
    st2 = d.status()['counters']
    pt.check(st2['propagations_applied'] > st1['propagations_applied'],
             'a changed protected usage was propagated', st1, st2)

    # And back.
    set_usage(fake, '/a/leaf', 1 * G)
    set_usage(fake, '/a', 2 * G)
    ev = sub.recv(timeout=WAIT)['parameters']['event']
    pt.check(ev['kind'] == 'protection' and ev['state'] == 'low' and ev['previous'] == 'none' and ev['seq'] == 2,
             'the state went back to low', ev)

    # The cgroup goes away: the stream ends.
    shutil.rmtree(os.path.join(fake, 'a', 'leaf'))
    msg = sub.recv(timeout=WAIT)
    ev = msg['parameters']['event']
    pt.check(ev['kind'] == 'removed' and ev['cgroup'] == '/a/leaf' and not msg.get('continues'),
             'removing the cgroup ends the stream', msg)
    pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registration to go')
    # With no protection subscriber, no refresh timer runs.
    n = d.status()['counters']['protection_refreshes']
    pt.check(not sub.is_closed(timeout=3 * REFRESH + 0.5), 'the connection stays open after removed')
    pt.check_eq(d.status()['counters']['protection_refreshes'], n, 'no refreshes without subscribers')
    sub.close()


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-protection-')
    try:
        fake = os.path.join(tmp, 'v2')
        pt.make_fake_tree(fake, TREE)
        with pt.Daemon(cgroup_root=fake, config_text=f'[Protection]\nRefreshSec={REFRESH}\n'
                                                     'RecursiveProtection=no\n') as d:
            test_get_protection(d)
            test_not_utf8(d, fake)
            test_subscription(d, fake)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
