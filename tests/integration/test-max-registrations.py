#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""[Limits] MaxRegistrations=1: a subscription that needs a second kernel
registration is refused with io.pressured.LimitExceeded carrying exactly
"limit" (a string) and "value" (an integer), from every path that makes a
registration; the daemon keeps running, the subscriber holding the one
registration keeps getting events, other clients are served, and the slot
can be taken again once the registration is gone."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds


def check_limit_reply(r, what):
    pt.check(r.get('error') == 'io.pressured.LimitExceeded', f'{what}: refused with LimitExceeded', r)
    params = r.get('parameters')
    pt.check(isinstance(params, dict) and sorted(params) == ['limit', 'value'],
             f'{what}: the reply has exactly "limit" and "value"', r)
    pt.check(params['limit'] == 'MaxRegistrations', f'{what}: names MaxRegistrations', r)
    pt.check(type(params['value']) is int and params['value'] == 1, f'{what}: value is the integer 1', r)
    pt.check('continues' not in r, f'{what}: the error ends the call', r)


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-maxreg-')
    try:
        root = os.path.join(tmp, 'cg')
        pt.make_fake_tree(root, {'/': {'current': 0}, '/a': {'current': 0}, '/b': {'current': 0}})
        # A memory.pressure file makes "level" on /a resolve to PSI, as on a
        # real cgroup2 system; the limit is checked before the file is used.
        with open(os.path.join(root, 'a', 'memory.pressure'), 'w') as f:
            f.write('some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')

        with pt.Daemon(config_text='[Limits]\nMaxRegistrations=1\n', cgroup_root=root) as d:
            first = pt.Varlink(d.socket, timeout=WAIT)
            if not os.path.exists('/proc/pressure/memory'):
                # Hold the one registration with memory.events instead of PSI.
                r = first.subscribe(memory_events=True, cgroup='/b')
                held_kind = 'memory_events'
            else:
                r = first.subscribe(level='medium')
                held_kind = 'level'
            pt.check(r.get('parameters', {}).get('event', {}).get('kind') == 'subscribed',
                     'the first subscription takes the one registration', r)

            # The reproduction of the crash: level medium on another cgroup.
            second = pt.Varlink(d.socket, timeout=WAIT)
            check_limit_reply(second.subscribe(level='medium', cgroup='/a'), 'level on /a')
            pt.check(d.proc.poll() is None, 'the daemon is still running')

            # The refused connection stays usable.
            r = second.call_sync('io.pressured.GetStatus')
            pt.check(len(r.get('parameters', {}).get('registrations', [])) == 1,
                     'the refused client is served and one registration exists', r)

            # Another source over the limit, from a third connection.
            third = pt.Varlink(d.socket, timeout=WAIT)
            if held_kind == 'level':
                check_limit_reply(third.subscribe(memory_events=True, cgroup='/b'), 'memory_events on /b')
            else:
                check_limit_reply(third.subscribe(protection=True, cgroup='/a'), 'protection on /a')

            # The subscriber keeps getting events, and a new client is served.
            if held_kind == 'level':
                r = third.call_sync('io.pressured.Inject', {'level': 'medium'})
                pt.check(r.get('parameters', {}).get('delivered') == 1, 'inject reaches the subscriber', r)
                # The held registration is the whole system's (a fake tree has no
                # other PSI): real pressure may come first, numbered before it.
                seen = [first.recv(timeout=WAIT)['parameters']['event']]
                while seen[-1].get('source') != 'inject':
                    seen.append(first.recv(timeout=WAIT)['parameters']['event'])
                ev = seen[-1]
                pt.check(ev['kind'] == 'pressure' and ev['seq'] == len(seen), 'the subscriber got its event', ev,
                         len(seen))
            fresh = pt.Varlink(d.socket, timeout=WAIT)
            r = fresh.call_sync('org.varlink.service.GetInfo')
            pt.check(r.get('parameters', {}).get('vendor') == 'pressured', 'a new client is served', r)

            # Once the registration is gone the slot is free again.
            first.close()
            pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT,
                        what='the registration to be removed')
            cgroup = '/a' if held_kind == 'level' else '/b'
            r = fresh.subscribe(memory_events=True, cgroup=cgroup)
            pt.check(r.get('parameters', {}).get('event', {}).get('kind') == 'subscribed',
                     'a subscription is accepted once the slot is free', r)
            for v in (second, third, fresh):
                v.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
    pt.finish()
