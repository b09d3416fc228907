#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel-side faults on fake trees (no real cgroups needed).

1. A cgroup v1 root that is an empty directory, not a hierarchy:
   vmpressure on a missing cgroup is NoSuchCgroup; on "/" (which exists
   but has no memory.pressure_level or cgroup.event_control) it is
   SourceUnavailable with a reason; nothing is registered or leaked.
2. memory_events on a fake cgroup2 directory that is removed (rm -rf):
   every subscriber's stream ends with "removed" (seq one past the last
   event), the registration is freed, a subscriber of another cgroup is
   unaffected, and the cgroup recreated under the same name can be
   subscribed again with counters read afresh."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0
ZERO = {'low': 0, 'high': 0, 'max': 0, 'oom': 0, 'oom_kill': 0}


def events_text(**counts):
    c = dict(ZERO, **counts)
    return ''.join(f'{k} {v}\n' for k, v in c.items())


def rewrite(path, text):
    """Replace a fake counter file's content with one write(2), as the kernel
    presents a cgroup file (pt.write_file truncates first, and a reader
    woken in between would see an empty file)."""
    data = text.encode()
    fd = os.open(path, os.O_WRONLY)
    try:
        pt.check(len(data) >= os.fstat(fd).st_size, 'rewrite() needs text at least as long as the old', path)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


def expect_error(d, name, param, **sub):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        r = v.subscribe(**sub)
    finally:
        v.close()
    pt.check(r.get('error') == name, f'Subscribe {sub}', r)
    if param:
        for k, want in param.items():
            pt.check(k in r['parameters'] and (want is None or r['parameters'][k] == want),
                     f'{name} parameter {k}', r)
    return r


def v1_not_a_hierarchy(d):
    fds = d.non_socket_fds()
    r1 = expect_error(d, 'io.pressured.NoSuchCgroup', {'cgroup': '/x'}, vmpressure={'level': 'low'}, cgroup='/x')
    r2 = expect_error(d, 'io.pressured.SourceUnavailable', {'source': 'vmpressure', 'reason': None},
                      vmpressure={'level': 'critical', 'mode': 'hierarchy'})
    r3 = expect_error(d, 'io.pressured.SourceUnavailable', {'source': 'vmpressure', 'reason': None},
                      vmpressure={'level': 'low'}, cgroup='/')
    r4 = expect_error(d, 'io.pressured.NoSuchCgroup', {'cgroup': '/x'}, level='low', cgroup='/x')
    print(f'fake trees: v1 root not a hierarchy: vmpressure on /x -> {r1["error"]}; vmpressure on / -> '
          f'{r2["error"]} ({r2["parameters"]["reason"]!r}), with cgroup "/" -> {r3["error"]}; '
          f'level on /x -> {r4["error"]}', flush=True)
    st = d.status()
    pt.check(st['registrations'] == [], 'a failed subscription left a registration', st['registrations'])
    pt.check(st['counters']['registrations_created'] == 0, 'registrations created', st['counters'])
    pt.wait_for(lambda: d.non_socket_fds() == fds, timeout=WAIT, what='fds back after failed subscriptions')


def subscribe_events(d, cgroup):
    v = pt.Varlink(d.socket, timeout=WAIT)
    r = v.subscribe(memory_events=True, cgroup=cgroup)
    pt.check(r['parameters']['event']['kind'] == 'subscribed', f'subscribe memory_events {cgroup}', r)
    return v, r['parameters']['event']


def memory_events_removed(d, root):
    a_events = os.path.join(root, 'a', 'memory.events')
    subs = [subscribe_events(d, '/a')[0] for _ in range(3)]
    other, _ = subscribe_events(d, '/b')
    regs = d.status()['registrations']
    pt.check(sorted((r['cgroup'], r['subscribers']) for r in regs) == [('/a', 3), ('/b', 1)],
             'registrations before removal', regs)

    # The source works: a counter change reaches every subscriber.
    rewrite(a_events, events_text(high=2))
    for v in subs:
        ev = v.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'memory_events' and ev['seq'] == 1 and ev['delta']['high'] == 2,
                 'memory_events before removal', ev)

    shutil.rmtree(os.path.join(root, 'a'))
    ends = []
    for i, v in enumerate(subs):
        try:
            ev = v.recv(timeout=WAIT)['parameters']['event']
        except TimeoutError:
            raise AssertionError(f'subscriber {i}: no "removed" within {WAIT} s after rm -rf of the fake '
                                 f'cgroup /a; registrations now {d.status()["registrations"]}') from None
        ends.append(ev)
        pt.check(ev['kind'] == 'removed' and ev['cgroup'] == '/a' and ev['seq'] == 2,
                 f'subscriber {i} end of stream', ev)
    st = pt.wait_for(lambda: (lambda s: s if len(s['registrations']) == 1 else None)(d.status()),
                     timeout=WAIT, what='the registration of /a to go')
    pt.check(st['registrations'][0]['cgroup'] == '/b', 'the wrong registration went', st['registrations'])

    # The stream ended but the connection serves calls again.
    subs[0].call('org.varlink.service.GetInfo')
    pt.check_eq(subs[0].recv(timeout=WAIT)['parameters']['product'], 'pressured', 'GetInfo after removed')

    # The other cgroup's subscriber did not notice.
    rewrite(os.path.join(root, 'b', 'memory.events'), events_text(low=1))
    ev = other.recv(timeout=WAIT)['parameters']['event']
    pt.check(ev['kind'] == 'memory_events' and ev['cgroup'] == '/b' and ev['seq'] == 1, 'other cgroup', ev)

    # Recreated under the same name: a new registration, counters read afresh.
    pt.make_fake_tree(root, {'/a': {'current': 4096, 'events': dict(ZERO, oom=7)}})
    v, sub = subscribe_events(d, '/a')
    pt.check(sub['state']['counters']['oom'] == 7, 'recreated cgroup state', sub)
    rewrite(os.path.join(root, 'a', 'memory.events'), events_text(oom=8, oom_kill=1))
    ev = v.recv(timeout=WAIT)['parameters']['event']
    pt.check(ev['seq'] == 1 and ev['delta']['oom'] == 1 and ev['delta']['oom_kill'] == 1,
             'event of the recreated cgroup', ev)
    st = d.status()
    print(f'fake trees: rm -rf of /a ended 3 streams with removed (seq {[e["seq"] for e in ends]}), '
          f'registration freed; /b unaffected; /a recreated and subscribed again; registrations '
          f'{[(r["cgroup"], r["subscribers"]) for r in st["registrations"]]}, created/removed '
          f'{st["counters"]["registrations_created"]}/{st["counters"]["registrations_removed"]}', flush=True)
    for x in subs + [other, v]:
        x.close()


def main():
    root = tempfile.mkdtemp(prefix='pressured-fake-v2-')
    v1 = tempfile.mkdtemp(prefix='pressured-fake-v1-')
    try:
        pt.make_fake_tree(root, {'/': {'current': 1 << 30}, '/a': {'current': 4096}, '/b': {'current': 4096}})
        with pt.Daemon(cgroup_root=root, cgroup_v1_root=v1, log_level='info',
                       config_text='[Limits]\nIdleTimeoutSec=600\n') as d:
            v1_not_a_hierarchy(d)
            memory_events_removed(d, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(v1, ignore_errors=True)


if __name__ == '__main__':
    main()
    pt.finish()
