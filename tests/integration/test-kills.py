#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kills subscriptions and the kernel's kills, on a fake cgroup2 tree
(--cgroup-root) and without any system bus: raising oom_kill in a cgroup's
memory.events gives a "killed" event by the kernel with the rise as its
count; other counters give nothing; identical subscribers share one
registration; min_interval_ms merges kills; "/" watches every top-level
cgroup, also one made later, up to the limit of 256, and survives an
inotify queue overflow; the first subscription waits a bounded time for a
system bus that does not answer, and what happens meanwhile comes after
"subscribed"; the registration goes
with its last subscriber; removing the cgroup ends the stream with
"removed"; an unprivileged peer may subscribe where it can read; a resource
other than memory is InvalidParameter; GetStatus and /metrics count the
kills."""

import http.client
import os
import re
import shutil
import signal
import socket
import stat
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
KEYS = ('low', 'high', 'max', 'oom', 'oom_kill')
# No system bus at all: systemd-oomd cannot be heard, the kernel can.
NO_BUS = {'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/pressured-test-no-bus'}
TOPLEVEL_MAX = 256  # KILLS_TOPLEVEL_MAX in daemon/sources/source-kills.c


def set_events(root, cgroup, **counters):
    """Rewrite memory.events of @cgroup in place with one write, as the kernel does."""
    text = ''.join(f'{k} {counters.get(k, 0)}\n' for k in KEYS).encode()
    fd = os.open(os.path.join(root, cgroup.lstrip('/'), 'memory.events'), os.O_WRONLY | os.O_CREAT)
    try:
        os.pwrite(fd, text, 0)
        os.ftruncate(fd, len(text))
    finally:
        os.close(fd)


def event(v):
    return v.recv(timeout=WAIT)['parameters']['event']


def kill_state(ev, sources, unavailable, what):
    """The "subscribed" state of a kills stream: who reports, and who cannot,
    each with a reason that contains the needle @unavailable gives it."""
    st = ev['state']
    got = {u['source']: u['reason'] for u in st.get('unavailable_kill_sources', [])}
    pt.check(set(st) == {'kill_sources', 'unavailable_kill_sources'} and st['kill_sources'] == sources and
             set(got) == set(unavailable) and all(needle in got[k] for k, needle in unavailable.items()), what, ev)


NO_BUS_REASON = 'the system bus at unix:path=/nonexistent/pressured-test-no-bus cannot be reached'


def check_killed(ev, cgroup, count, seq, what):
    pt.check(ev['kind'] == 'killed' and ev['cgroup'] == cgroup and ev['by'] == 'kernel' and
             ev['reason'] == 'oom_kill', f'{what}: a kernel kill in {cgroup}', ev)
    pt.check(ev['count'] == count and ev['seq'] == seq and ev['missed'] == 0, f'{what}: count {count}, seq {seq}', ev)
    pt.check(isinstance(ev['time_us'], int) and isinstance(ev['monotonic_us'], int) and 'source' not in ev,
             f'{what}: the timestamps and no source', ev)


def metrics(port):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=WAIT)
    try:
        c.request('GET', '/metrics')
        return c.getresponse().read().decode()
    finally:
        c.close()


def test_cgroup(tmp):
    fake = os.path.join(tmp, 'v2')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/a': {'current': 1 << 28}, '/b': {'current': 1 << 20}})
    port = pt.free_port()
    with pt.Daemon(cgroup_root=fake, env=NO_BUS, config_text=f'[Metrics]\nListen=127.0.0.1:{port}\n') as d:
        pt.check(d.status()['registrations'] == [], 'no registration before a subscriber', d.status())
        first = pt.Varlink(d.socket, timeout=WAIT)
        ev = first.subscribe(cgroup='/a', kills=True)['parameters']['event']
        pt.check(ev['kind'] == 'subscribed' and ev['cgroup'] == '/a' and ev['source'] == 'kills' and
                 ev['resource'] == 'memory' and ev['trigger'] == {} and ev['adjusted'] is False,
                 'subscribed to kills', ev)
        kill_state(ev, ['kernel'], {'systemd-oomd': NO_BUS_REASON}, 'without a bus only the kernel reports')
        pt.check('did not tell about systemd-oomd in time' in d.log(), 'the first one waited for the bus in vain')
        second = pt.Varlink(d.socket, timeout=WAIT)
        second.subscribe(cgroup='/a', kills=True)
        regs = d.status()['registrations']
        pt.check(len(regs) == 1 and regs[0]['source'] == 'kills' and regs[0]['subscribers'] == 2 and
                 regs[0]['cgroup'] == '/a', 'one shared kills registration', regs)
        pt.check(d.log().count('did not tell about systemd-oomd in time') == 1,
                 'once the wait ran out, the next subscription does not wait')

        set_events(fake, '/a', oom_kill=2)
        check_killed(event(first), '/a', 2, 1, 'first subscriber')
        check_killed(event(second), '/a', 2, 1, 'second subscriber')
        # Other counters are no kill; a change elsewhere is not ours.
        set_events(fake, '/a', oom_kill=2, high=5, oom=3)
        set_events(fake, '/b', oom_kill=4)
        set_events(fake, '/a', oom_kill=3, high=5, oom=3)
        check_killed(event(first), '/a', 1, 2, 'only the oom_kill rise')
        second.close()
        pt.wait_for(lambda: d.status()['registrations'][0]['subscribers'] == 1, timeout=WAIT,
                    what='the second subscriber to leave')

        # min_interval_ms: the first kill at once, the next ones merged.
        merged = pt.Varlink(d.socket, timeout=WAIT)
        merged.subscribe(cgroup='/a', kills=True, min_interval_ms=2000)
        set_events(fake, '/a', oom_kill=4, high=5, oom=3)
        check_killed(event(merged), '/a', 1, 1, 'the first kill under min_interval_ms')
        check_killed(event(first), '/a', 1, 3, 'the subscriber without an interval')
        set_events(fake, '/a', oom_kill=6, high=5, oom=3)
        check_killed(event(first), '/a', 2, 4, 'two kills at once')
        set_events(fake, '/a', oom_kill=7, high=5, oom=3)
        check_killed(event(first), '/a', 1, 5, 'one more')
        check_killed(event(merged), '/a', 3, 2, 'the kills within the interval, merged')

        st = d.status()
        pt.check(st['counters']['kills_kernel'] == 7 and st['counters']['kills_systemd_oomd'] == 0,
                 'kills_kernel counts kills heard, not deliveries', st['counters'])
        text = metrics(port)
        pt.check(re.search(r'^pressured_kills_total\{by="kernel"\} 7$', text, re.M) and
                 re.search(r'^pressured_kills_total\{by="systemd-oomd"\} 0$', text, re.M) and
                 text.count('# TYPE pressured_kills_total counter') == 1,
                 'pressured_kills_total by who killed', [x for x in text.split('\n') if 'kills' in x])

        # The cgroup goes: every stream ends with "removed", the registration goes.
        shutil.rmtree(os.path.join(fake, 'a'))
        for who, v, seq in (('first', first, 6), ('merged', merged, 3)):
            msg = v.recv(timeout=WAIT)
            ev = msg['parameters']['event']
            pt.check(ev['kind'] == 'removed' and ev['cgroup'] == '/a' and ev.get('seq') == seq and
                     not msg.get('continues'), f'the {who} stream ends with removed', msg)
        pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registration to go')

        # A cgroup without memory.events (no memory controller) hears nobody here, and still ends.
        os.makedirs(os.path.join(fake, 'nomem'))
        v = pt.Varlink(d.socket, timeout=WAIT)
        ev = v.subscribe(cgroup='/nomem', kills=True)['parameters']['event']
        kill_state(ev, [], {'kernel': 'the cgroup has no memory.events in the cgroup2 hierarchy', 'systemd-oomd':
                            NO_BUS_REASON}, 'no memory.events and no bus: nobody reports, and the state says why')
        os.rmdir(os.path.join(fake, 'nomem'))
        pt.check(event(v)['kind'] == 'removed', 'a cgroup without memory.events ends with removed too')

        r = v.subscribe(cgroup='/a', kills=True)
        pt.check(r.get('error') == 'io.pressured.NoSuchCgroup', 'a missing cgroup is NoSuchCgroup', r)
        r = v.subscribe(kills=True, resource='cpu')
        pt.check(r.get('error') == 'org.varlink.service.InvalidParameter' and
                 r['parameters'] == {'parameter': 'resource'}, 'kills of cpu is InvalidParameter resource', r)
        r = v.subscribe(kills=True, memory_events=True, cgroup='/b')
        pt.check(r.get('error') == 'org.varlink.service.InvalidParameter', 'kills is one selector among others', r)
        v.close()
        first.close()
        merged.close()
        pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='no registration left')
        st = d.status()
        pt.check(st['counters']['registrations_created'] == st['counters']['registrations_removed'] == 2,
                 'every kills registration was removed', st['counters'])


def test_system(tmp):
    fake = os.path.join(tmp, 'v2-system')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/system.slice': {}, '/user.slice': {},
                             '/user.slice/u': {}})
    with pt.Daemon(cgroup_root=fake, env=NO_BUS) as d:
        whole = pt.Varlink(d.socket, timeout=WAIT)
        ev = whole.subscribe(kills=True)['parameters']['event']
        pt.check(ev['cgroup'] == '/', 'subscribed on /', ev)
        kill_state(ev, ['kernel'], {'systemd-oomd': NO_BUS_REASON},
                   'the whole system: the kernel reports through the top-level cgroups')
        user = pt.Varlink(d.socket, timeout=WAIT)
        user.subscribe(cgroup='/user.slice', kills=True)
        pt.check(len(d.status()['registrations']) == 2, 'one registration each', d.status()['registrations'])

        set_events(fake, '/system.slice', oom_kill=1)
        check_killed(event(whole), '/system.slice', 1, 1, 'a kill in system.slice on /')
        set_events(fake, '/user.slice', oom_kill=3)
        check_killed(event(user), '/user.slice', 3, 1, 'a kill in user.slice on user.slice')
        check_killed(event(whole), '/user.slice', 3, 2, 'the same kill on /')
        pt.check(d.status()['counters']['kills_kernel'] == 7,
                 'a kill two registrations saw counts in each', d.status()['counters'])

        # A top-level cgroup made later (whole, as cgroupfs makes one: moved in with its files).
        pt.make_fake_tree(os.path.join(tmp, 'staging'), {'/machine.slice': {}})
        os.rename(os.path.join(tmp, 'staging', 'machine.slice'), os.path.join(fake, 'machine.slice'))
        pt.wait_for(lambda: 'Watching top-level cgroup /machine.slice for kills.' in d.log(), timeout=WAIT,
                    what='the new top-level cgroup to be watched')
        set_events(fake, '/machine.slice', oom_kill=2)
        check_killed(event(whole), '/machine.slice', 2, 3, 'a kill in a top-level cgroup made later')
        # One that goes is forgotten; "/" itself never goes.
        shutil.rmtree(os.path.join(fake, 'machine.slice'))
        set_events(fake, '/system.slice', oom_kill=2)
        check_killed(event(whole), '/system.slice', 1, 4, 'the stream on / goes on')
        user.close()
        whole.close()
        pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registrations to go')


def test_toplevel_limit(tmp):
    fake = os.path.join(tmp, 'v2-wide')
    n = TOPLEVEL_MAX + 20
    pt.make_fake_tree(fake, dict({'/': {'current': 1 << 30}}, **{f'/cg{i}': {} for i in range(n)}))
    with pt.Daemon(cgroup_root=fake, env=NO_BUS) as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        v.subscribe(kills=True)
        pt.wait_for(lambda: f'More than {TOPLEVEL_MAX} top-level cgroups' in d.log(), timeout=WAIT,
                    what='the limit to be logged')
        for i in range(n):
            set_events(fake, f'/cg{i}', oom_kill=1)
        seen = set()
        while len(seen) < TOPLEVEL_MAX:
            ev = event(v)
            seen.add(ev['cgroup'])
        # inotify keeps the order: a second kill in a watched cgroup comes after everything before it.
        last = sorted(seen)[0]
        set_events(fake, last, oom_kill=2)
        ev = event(v)
        pt.check(ev['cgroup'] == last and ev['count'] == 1,
                 f'exactly {TOPLEVEL_MAX} top-level cgroups are watched, no more', ev, len(seen))
        pt.check(d.log().count(f'More than {TOPLEVEL_MAX} top-level cgroups') == 1, 'the limit is logged once')
        v.close()


def test_overflow(tmp):
    """More inotify events than the kernel queues (IN_Q_OVERFLOW) while the
    daemon is stopped: it re-reads every counter and finds the top-level
    cgroup whose creation was lost."""
    fake = os.path.join(tmp, 'v2-overflow')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/a': {}, '/b': {}})
    with open('/proc/sys/fs/inotify/max_queued_events') as f:
        queued_max = int(f.read())
    with pt.Daemon(cgroup_root=fake, env=NO_BUS) as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        v.subscribe(kills=True)
        fds = [os.open(os.path.join(fake, cg, 'memory.events'), os.O_WRONLY) for cg in ('a', 'b')]
        os.kill(d.pid, signal.SIGSTOP)
        try:
            # Alternating, so that inotify cannot merge them into one event.
            for i in range(queued_max // 2 + 10):
                for fd in fds:
                    text = ''.join(f'{k} {i + 1 if k == "oom_kill" else 0}\n' for k in KEYS).encode()
                    os.pwrite(fd, text, 0)
            pt.make_fake_tree(os.path.join(tmp, 'staging-overflow'), {'/late': {}})
            os.rename(os.path.join(tmp, 'staging-overflow', 'late'), os.path.join(fake, 'late'))
        finally:
            os.kill(d.pid, signal.SIGCONT)
            for fd in fds:
                os.close(fd)
        total = queued_max // 2 + 10
        got = {}
        while sum(got.values()) < 2 * total:
            ev = event(v)
            got[ev['cgroup']] = got.get(ev['cgroup'], 0) + ev['count']
        pt.check(got == {'/a': total, '/b': total}, 'every kill counted once despite the overflow', got)
        pt.wait_for(lambda: 'inotify events were lost, re-reading every top-level cgroup' in d.log(),
                    timeout=WAIT, what='the overflow to be noticed')
        pt.wait_for(lambda: 'Watching top-level cgroup /late for kills.' in d.log(), timeout=WAIT,
                    what='the rescan after the overflow to find the new cgroup')
        set_events(fake, '/late', oom_kill=1)
        ev = event(v)
        pt.check(ev['cgroup'] == '/late' and ev['count'] == 1, 'a kill in the cgroup found by the rescan', ev)
        v.close()


def test_hung_bus(tmp):
    """A system bus that accepts the connection and never answers: the
    first kills subscription's "subscribed" waits for it a bounded time,
    and what happens meanwhile (a kill, the cgroup's removal) comes after
    "subscribed", in order."""
    fake = os.path.join(tmp, 'v2-hung')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/a': {}, '/b': {}})
    path = os.path.join(tmp, 'hung-bus')
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    try:
        with pt.Daemon(cgroup_root=fake, env={'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=' + path}) as d:
            v = pt.Varlink(d.socket, timeout=WAIT)
            v.call('io.pressured.Subscribe', {'cgroup': '/a', 'kills': True}, more=True)
            # Once the registration exists (its base read), while "subscribed" waits:
            pt.wait_for(lambda: d.status()['registrations'] != [], timeout=WAIT, what='the registration')
            set_events(fake, '/a', oom_kill=1)
            set_events(fake, '/a', oom_kill=3)
            ev = event(v)
            pt.check(ev['kind'] == 'subscribed', '"subscribed" comes first', ev)
            kill_state(ev, ['kernel'], {'systemd-oomd': 'the system bus at unix:path=' + path},
                       'without systemd-oomd, which a bus that never answers cannot tell of')
            got = 0
            while got < 3:
                ev = event(v)
                pt.check(ev['kind'] == 'killed' and ev['seq'] in (1, 2), 'then the kills', ev)
                got += ev['count']
            pt.check_eq(got, 3, 'the kills made while "subscribed" waited')

            w = pt.Varlink(d.socket, timeout=WAIT)
            v.close()
            pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registration to go')
            w.call('io.pressured.Subscribe', {'cgroup': '/b', 'kills': True}, more=True)
            pt.wait_for(lambda: d.status()['registrations'] != [], timeout=WAIT, what='the registration')
            shutil.rmtree(os.path.join(fake, 'b'))
            ev = event(w)
            pt.check(ev['kind'] == 'subscribed' and ev['cgroup'] == '/b', '"subscribed" before "removed"', ev)
            msg = w.recv(timeout=WAIT)
            pt.check(msg['parameters']['event']['kind'] == 'removed' and not msg.get('continues'),
                     'then "removed" ends the stream', msg)
            w.close()
    finally:
        listener.close()


def subscribe_as_nobody(sock, cgroups):
    out = []
    for cg in cgroups:
        v = pt.Varlink(sock, timeout=WAIT)
        try:
            params = {'kills': True}
            if cg:
                params['cgroup'] = cg
            v.call('io.pressured.Subscribe', params, more=True)
            out.append(v.recv(timeout=WAIT))
        finally:
            v.close()
    return out


def test_unprivileged(tmp):
    fake = os.path.join(tmp, 'v2-auth')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/open': {}, '/closed': {}})
    os.chmod(os.path.join(fake, 'open'), 0o755)
    os.chmod(os.path.join(fake, 'closed'), 0o700)
    pt.check_eq(os.stat(os.path.join(fake, 'open')).st_uid, 0, 'the open cgroup belongs to root')
    pt.check(os.stat(os.path.join(fake, 'open')).st_mode & stat.S_IROTH, 'the open cgroup is world-readable')
    with pt.Daemon(cgroup_root=fake, env=NO_BUS) as d:
        replies = pt.run_as('nobody', subscribe_as_nobody, d.socket, [None, '/open', '/closed'])
        for r, what in ((replies[0], '"/"'), (replies[1], 'a root-owned, world-readable cgroup')):
            pt.check(r.get('parameters', {}).get('event', {}).get('kind') == 'subscribed',
                     f'nobody may subscribe to kills on {what}', r)
        pt.check(replies[2].get('error') == 'io.pressured.PermissionDenied',
                 'a cgroup nobody cannot read is PermissionDenied', replies[2])


def main():
    pt.require_root('the unprivileged part runs as nobody')
    tmp = tempfile.mkdtemp(prefix='pressured-kills-')
    try:
        test_cgroup(tmp)
        test_system(tmp)
        test_toplevel_limit(tmp)
        test_overflow(tmp)
        test_hung_bus(tmp)
        test_unprivileged(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
