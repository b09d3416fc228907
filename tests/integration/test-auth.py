#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Authorization and cgroup path checks, with calls made by an unprivileged
user (nobody) from a forked child: the system-wide level source is open to
everyone; Inject, Reload and other users' cgroups are PermissionDenied; a
cgroup delegated to the user (its directory chowned) may be subscribed;
paths with "..", symlinks out of the hierarchy, excessive length or control
characters are InvalidCgroupPath."""

import os
import pwd
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
PSI = {'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000}


def calls_as_user(sock, calls):
    """Make each (method, params, more) call on a fresh connection; return the first replies."""
    out = []
    for method, params, more in calls:
        v = pt.Varlink(sock, timeout=WAIT)
        try:
            v.call(method, params, more=more)
            out.append(v.recv(timeout=WAIT))
        except (EOFError, TimeoutError, ConnectionResetError) as e:
            out.append({'exception': repr(e)})
        finally:
            v.close()
    return out


def kind(reply):
    return reply.get('parameters', {}).get('event', {}).get('kind')


def test_real_cgroups():
    with pt.Daemon() as d, pt.real_cgroups(v1=False) as (name, _, v2dir):
        # Make sure the root-owned cgroup really is root's.
        pt.check_eq(os.stat(v2dir).st_uid, 0, 'the test cgroup belongs to root')
        replies = pt.run_as('nobody', calls_as_user, d.socket, [
            ('io.pressured.Subscribe', {'level': 'medium'}, True),
            ('io.pressured.Subscribe', {'cgroup': '/', 'psi': PSI}, True),
            ('io.pressured.Inject', {'level': 'medium'}, False),
            ('io.pressured.Reload', {}, False),
            ('io.pressured.Subscribe', {'cgroup': name, 'psi': PSI}, True),
            ('io.pressured.Subscribe', {'cgroup': name, 'level': 'medium'}, True),
            ('io.pressured.GetProtection', {'cgroup': name}, False),
            ('io.pressured.GetStatus', {}, False),
        ])
        pt.check(kind(replies[0]) == 'subscribed', 'nobody may subscribe to a level on "/"', replies[0])
        pt.check(kind(replies[1]) == 'subscribed', 'nobody may subscribe to PSI on "/"', replies[1])
        for i, what in ((2, 'Inject'), (3, 'Reload'), (4, 'psi on a root-owned cgroup'),
                        (5, 'level on a root-owned cgroup')):
            r = replies[i]
            pt.check(r.get('error') == 'io.pressured.PermissionDenied', f'{what} is PermissionDenied for nobody', r)
            pt.check(isinstance(r.get('parameters', {}).get('reason'), str), 'PermissionDenied has a reason', r)
        pt.check(replies[7].get('parameters', {}).get('version'), 'GetStatus is open to everyone', replies[7])

        # Nothing the denied calls asked for was registered; the allowed
        # subscriptions ended with their connections.
        st = d.status()
        pt.check(all(r['cgroup'] == '/' for r in st['registrations']),
                 'no registration on the denied cgroup', st['registrations'])
        pt.check(st['counters']['events_injected'] == 0, 'the denied Inject injected nothing', st['counters'])

        # Delegation: once the directory is nobody's, nobody may subscribe.
        nobody = pwd.getpwnam('nobody')
        os.chown(v2dir, nobody.pw_uid, nobody.pw_gid)
        replies = pt.run_as('nobody', calls_as_user, d.socket, [
            ('io.pressured.Subscribe', {'cgroup': name, 'psi': PSI}, True),
            ('io.pressured.Subscribe', {'cgroup': name, 'level': 'critical'}, True),
        ])
        for r in replies:
            ev = r.get('parameters', {}).get('event', {})
            pt.check(ev.get('kind') == 'subscribed' and ev.get('cgroup') == name and ev.get('source') == 'psi',
                     'nobody may subscribe on its delegated cgroup', r)
        os.chown(v2dir, 0, 0)


def test_paths():
    tmp = tempfile.mkdtemp(prefix='pressured-fake-')
    fake = os.path.join(tmp, 'fake')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/a': {'current': 1 << 20}})
    os.symlink('/etc', os.path.join(fake, 'escape'))
    os.symlink('/etc', os.path.join(fake, 'a', 'deeper'))
    long_path = '/' + '/'.join(['x' * 99] * 50)
    bad = ['/../../etc', '/a/../../etc', 'relative/path', long_path, '/a\x01b', '/a\nb', '/a\x7f']
    symlinks = ['/escape', '/a/deeper', '/escape/passwd']
    try:
        with pt.Daemon(cgroup_root=fake) as d:
            calls = []
            for path in bad:
                calls.append(('io.pressured.Subscribe', {'cgroup': path, 'level': 'medium'}, True))
                calls.append(('io.pressured.Subscribe', {'cgroup': path, 'memory_events': True}, True))
                calls.append(('io.pressured.GetProtection', {'cgroup': path}, False))
            for path in symlinks:
                calls.append(('io.pressured.Subscribe', {'cgroup': path, 'memory_events': True}, True))
                calls.append(('io.pressured.Subscribe', {'cgroup': path, 'protection': True}, True))
                calls.append(('io.pressured.GetProtection', {'cgroup': path}, False))
            # The same answers for root and for an unprivileged user.
            for who in ('root', 'nobody'):
                if who == 'root':
                    replies = calls_as_user(d.socket, calls)
                else:
                    replies = pt.run_as('nobody', calls_as_user, d.socket, calls)
                for (method, params, _), r in zip(calls, replies):
                    pt.check(r.get('error') == 'io.pressured.InvalidCgroupPath',
                             f'{method} on {params["cgroup"][:40]!r} as {who} is InvalidCgroupPath', r)
                    pt.check(r.get('parameters', {}).get('cgroup') == params['cgroup'],
                             'InvalidCgroupPath names the path as given', r.get('parameters', {}).get('cgroup', '')[:40])
            st = d.status()
            pt.check(st['registrations'] == [], 'no registration was made for a bad path', st['registrations'])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    pt.require_root('it compares root with other users')
    test_paths()
    test_real_cgroups()
    pt.finish()


if __name__ == '__main__':
    main()
