#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memory_events subscriptions on a fake cgroup2 tree (--cgroup-root): the
subscribed state carries the counters; rewriting memory.events in place
produces an event with the counters and their change; removing the cgroup
ends the stream with "removed" and frees the registration; a cgroup that
exists only in the v1 hierarchy is SourceUnavailable."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
KEYS = ('low', 'high', 'max', 'oom', 'oom_kill')


def events_text(**counters):
    return ''.join(f'{k} {counters.get(k, 0)}\n' for k in KEYS)


def rewrite(path, text):
    """Rewrite @path in place with one write, as the kernel updates memory.events.

    (Truncating first would let the daemon read an empty file in between.)
    The counters only grow, so the new text is never shorter.
    """
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, text.encode(), 0)
        os.ftruncate(fd, len(text.encode()))
    finally:
        os.close(fd)


def zero():
    return {k: 0 for k in KEYS}


def test_events(tmp):
    fake = os.path.join(tmp, 'v2')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30},
                             '/a': {'current': 1 << 28, 'events': dict(zero(), low=3)},
                             '/b': {'current': 1 << 20}})
    with pt.Daemon(cgroup_root=fake) as d:
        sub = pt.Varlink(d.socket, timeout=WAIT)
        first = sub.subscribe(cgroup='/a', memory_events=True)
        ev = first['parameters']['event']
        pt.check(ev['kind'] == 'subscribed' and ev['cgroup'] == '/a' and ev['source'] == 'memory_events',
                 'subscribed to memory_events', ev)
        pt.check(ev['state'].get('counters') == dict(zero(), low=3), 'the subscribed state has the counters', ev)
        # A second subscriber shares the registration.
        other = pt.Varlink(d.socket, timeout=WAIT)
        other.subscribe(cgroup='/a', memory_events=True)
        regs = d.status()['registrations']
        pt.check(len(regs) == 1 and regs[0]['source'] == 'memory_events' and regs[0]['subscribers'] == 2,
                 'one shared memory_events registration', regs)

        path = os.path.join(fake, 'a', 'memory.events')
        rewrite(path, events_text(low=3, high=1))
        for who, v in (('first', sub), ('second', other)):
            msg = v.recv(timeout=WAIT)
            ev = msg['parameters']['event']
            pt.check(msg.get('continues') is True and ev['kind'] == 'memory_events' and ev['seq'] == 1,
                     f'the {who} subscriber gets a memory_events event', msg)
            pt.check(ev['counters'] == dict(zero(), low=3, high=1), 'the event has the counters', ev)
            delta = {k: n for k, n in ev['delta'].items() if n}
            pt.check(delta == {'high': 1}, 'the delta is {high: 1}', ev['delta'])
            pt.check(ev['cgroup'] == '/a' and ev['missed'] == 0 and ev['count'] == 1, 'event fields', ev)
            pt.check(isinstance(ev['time_us'], int) and isinstance(ev['monotonic_us'], int), 'timestamps', ev)
        other.close()

        # Several counters at once.
        rewrite(path, events_text(low=3, high=1, max=2, oom=1, oom_kill=1))
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['seq'] == 2 and {k: n for k, n in ev['delta'].items() if n} == {'max': 2, 'oom': 1, 'oom_kill': 1},
                 'the delta has every changed counter', ev)

        # A change elsewhere in the tree does not reach this subscriber.
        rewrite(os.path.join(fake, 'b', 'memory.events'), events_text(high=7))
        # The cgroup goes away: the stream ends with "removed".
        shutil.rmtree(os.path.join(fake, 'a'))
        msg = sub.recv(timeout=WAIT)
        ev = msg['parameters']['event']
        pt.check(ev['kind'] == 'removed' and ev['cgroup'] == '/a', 'the stream ends with removed', msg)
        pt.check(not msg.get('continues'), 'removed is the last reply', msg)
        pt.check(ev.get('seq') == 3, 'removed carries the next seq', ev)
        pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registration to go')
        st = d.status()
        pt.check(st['counters']['registrations_removed'] == st['counters']['registrations_created'] == 1,
                 'the registration was removed', st['counters'])
        # The connection can make calls again once its stream ended.
        r = sub.call_sync('io.pressured.GetStatus')
        pt.check('parameters' in r, 'the connection is usable after removed', r)
        # A missing cgroup is NoSuchCgroup.
        r = sub.subscribe(cgroup='/a', memory_events=True)
        pt.check(r.get('error') == 'io.pressured.NoSuchCgroup' and r['parameters'].get('cgroup') == '/a',
                 'subscribing to a removed cgroup is NoSuchCgroup', r)
        sub.close()


def test_v1_only(tmp):
    fake = os.path.join(tmp, 'v2-only-root')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/y': {'current': 1 << 20}})
    v1 = os.path.join(tmp, 'v1')
    os.makedirs(os.path.join(v1, 'x'))
    with pt.Daemon(cgroup_root=fake, cgroup_v1_root=v1) as d:
        st = d.status()
        pt.check(st['cgroup']['v2_root'] == fake and st['cgroup']['v1_memory_root'] == v1,
                 'the daemon uses the given hierarchies', st['cgroup'])
        v = pt.Varlink(d.socket, timeout=WAIT)
        r = v.subscribe(cgroup='/x', memory_events=True)
        pt.check(r.get('error') == 'io.pressured.SourceUnavailable', 'a v1-only cgroup is SourceUnavailable', r)
        p = r.get('parameters', {})
        pt.check(p.get('source') == 'memory_events' and isinstance(p.get('reason'), str) and p['reason'],
                 'SourceUnavailable names the source and a reason', p)
        r = v.subscribe(cgroup='/nowhere', memory_events=True)
        pt.check(r.get('error') == 'io.pressured.NoSuchCgroup', 'a cgroup in neither hierarchy is NoSuchCgroup', r)
        r = v.subscribe(cgroup='/y', memory_events=True)
        pt.check(r['parameters']['event']['kind'] == 'subscribed', 'a v2 cgroup works in the same daemon', r)
        v.close()


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-memory-events-')
    try:
        test_events(tmp)
        test_v1_only(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
