#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Removing a subscribed cgroup ends the stream with "removed" and frees the
registration, in both hierarchies: a vmpressure subscription when the
cgroup v1 memory cgroup is removed, a PSI subscription when the cgroup2
directory is removed. A cgroup made again under the same name can then be
subscribed to afresh."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402


def check_removal(d, name, cgroup_dir, source, params):
    created = d.status()['counters']['registrations_created']
    clients = [kl.subscribe_ok(d, cgroup=name, **params)[0] for _ in range(2)]
    try:
        regs = kl.registrations_on(d, name)
        pt.check(len(regs) == 1 and regs[0]['source'] == source and regs[0]['subscribers'] == 2,
                 f'{source}: one shared registration', regs)
        removed_before = d.status()['counters']['registrations_removed']

        pt.remove_cgroup(cgroup_dir)
        pt.check(not os.path.exists(cgroup_dir), f'{cgroup_dir} could not be removed')
        for v in clients:
            msg = kl.wait_removed(v)
            ev = msg['parameters']['event']
            pt.check(ev['cgroup'] == name, f'{source}: removed names the cgroup', msg)
            pt.check(msg.get('continues') is not True, f'{source}: "removed" must end the stream', msg)
            pt.check(ev.get('seq') == 1, f'{source}: removed is the first event after subscribed', msg)
        pt.check(kl.registrations_on(d, name) == [], f'{source}: registration left after removal',
                 kl.registrations_on(d, name))
        st = d.status()
        pt.check(st['counters']['registrations_removed'] == removed_before + 1,
                 f'{source}: registrations_removed', st['counters'])
        pt.check(st['subscriptions'] == 0, f'{source}: subscriptions left', st)
    finally:
        kl.close_all(clients)

    # The same name again: a new directory, a new registration.
    os.mkdir(cgroup_dir)
    v, ev = kl.subscribe_ok(d, cgroup=name, **params)
    try:
        pt.check(ev['source'] == source, f'{source}: resubscribed source', ev)
        regs = kl.registrations_on(d, name)
        pt.check(len(regs) == 1 and regs[0]['subscribers'] == 1, f'{source}: new registration', regs)
        pt.check(d.status()['counters']['registrations_created'] == created + 2,
                 f'{source}: the recreated cgroup got its own registration')
    finally:
        v.close()
    pt.wait_for(lambda: not kl.registrations_on(d, name), timeout=kl.REPLY_TIMEOUT,
                what='the registration on the recreated cgroup to go away')


def main():
    pt.require_root('it makes and removes real cgroups')
    with pt.Daemon() as d:
        with pt.real_cgroups(v1=True, v2=False) as (name, v1, _):
            check_removal(d, name, v1, 'vmpressure', {'vmpressure': {'level': 'low'}})
        with pt.real_cgroups(v1=False, v2=True) as (name, _, v2):
            check_removal(d, name, v2, 'psi', {'psi': kl.PSI_2S})
    pt.finish()


if __name__ == '__main__':
    main()
