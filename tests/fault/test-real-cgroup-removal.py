#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real cgroups removed under live subscriptions (needs root, a cgroup v1
memory hierarchy and cgroup2 with PSI files): vmpressure (two sharing
one registration), an explicit PSI trigger and a portable level on the
same cgroup all end with "removed", their registrations are freed, a
system-wide subscriber is unaffected, and the cgroup recreated under the
same name can be subscribed again."""

import os
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0
PSI = {'stall': 'some', 'threshold_us': 100000, 'window_us': 2000000}


def subscribe(d, **params):
    v = pt.Varlink(d.socket, timeout=WAIT)
    r = v.subscribe(**params)
    pt.check(r.get('parameters', {}).get('event', {}).get('kind') == 'subscribed', f'Subscribe {params}', r)
    return v, r['parameters']['event']


def main():
    pt.require_root('it makes and removes real cgroups')
    with pt.Daemon(config_text='[Limits]\nIdleTimeoutSec=600\n', log_level='info') as d, \
            pt.real_cgroups(limit='64M') as (name, v1dir, v2dir):
        streams = {
            'vmpressure A': subscribe(d, cgroup=name, vmpressure={'level': 'low'}),
            'vmpressure B': subscribe(d, cgroup=name, vmpressure={'level': 'low'}),
            'psi': subscribe(d, cgroup=name, psi=PSI),
            'level': subscribe(d, cgroup=name, level='medium'),
        }
        system, _ = subscribe(d, level='critical')
        sources = {k: s[1]['source'] for k, s in streams.items()}
        regs = [r for r in d.status()['registrations'] if r['cgroup'] == name]
        pt.check(len(regs) == 3, 'registrations on the cgroup (vmpressure shared, psi, level)', regs)

        delivered = d.inject(cgroup=name)['parameters']['delivered']
        pt.check(delivered == 4, 'inject on the cgroup', delivered)
        for k, (v, _) in streams.items():
            ev = v.recv(timeout=WAIT)['parameters']['event']
            pt.check(ev['kind'] == 'pressure' and ev['seq'] == 1, f'{k}: injected event', ev)

        pt.remove_cgroup(v1dir)
        pt.remove_cgroup(v2dir)
        pt.check(not os.path.exists(v1dir) and not os.path.exists(v2dir), 'the cgroups could not be removed')
        for k, (v, _) in streams.items():
            try:
                ev = v.recv(timeout=WAIT)['parameters']['event']
            except TimeoutError:
                raise AssertionError(f'{k} ({sources[k]}): no "removed" within {WAIT} s of rmdir') from None
            pt.check(ev['kind'] == 'removed' and ev['cgroup'] == name and ev['seq'] == 2, f'{k}: end of stream', ev)
        st = pt.wait_for(lambda: (lambda s: s if not any(r['cgroup'] == name for r in s['registrations'])
                                  else None)(d.status()), timeout=WAIT, what='registrations of the cgroup to go')
        pt.check(st['subscriptions'] == 1, 'subscriptions after removal', st['subscriptions'])

        pt.check_eq(d.inject()['parameters']['delivered'], 1, 'system-wide inject after removal')
        # Real pressure on the machine may have reached / first: those events
        # are numbered before the injected one.
        seen = [system.recv(timeout=WAIT)['parameters']['event']]
        while seen[-1].get('source') != 'inject':
            seen.append(system.recv(timeout=WAIT)['parameters']['event'])
        ev = seen[-1]
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == len(seen) and ev['cgroup'] == '/',
                 'system-wide subscriber', ev, len(seen))

        # Recreated under the same name.
        os.mkdir(v1dir)
        os.mkdir(v2dir)
        again = [subscribe(d, cgroup=name, vmpressure={'level': 'low'})[0], subscribe(d, cgroup=name, psi=PSI)[0]]
        pt.check_eq(d.inject(cgroup=name)['parameters']['delivered'], 2, 'inject on the recreated cgroup')
        for v in again:
            ev = v.recv(timeout=WAIT)['parameters']['event']
            pt.check(ev['seq'] == 1, 'event on the recreated cgroup', ev)
            v.close()
        print(f'real cgroups: rmdir of {name} ended 4 streams ({", ".join(sorted(set(sources.values())))}) with '
              f'removed seq 2, 3 registrations freed, the system-wide stream unaffected, the recreated cgroup '
              f'subscribed again', flush=True)
        for v, _ in streams.values():
            v.close()
        system.close()


if __name__ == '__main__':
    main()
    pt.finish()
