#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Removing a subscribed cgroup ends the stream with "removed" and frees the
registration, in both hierarchies: a vmpressure subscription when the
cgroup v1 memory cgroup is removed, a PSI subscription when the cgroup2
directory is removed. A cgroup made again under the same name can then be
subscribed to afresh.

One true line per removal: the kernel removes a cgroup's files (its
pressure files first) before the directory, so a PSI trigger's error can
come while the directory is still there. On a hybrid host, with the
cgroup's v1 twin staying, the cgroup2 directory under many triggers of
every resource is removed again and again: each registration logs that
the cgroup is gone, once, and never that it "stays" or that PSI was
disabled. A cgroup whose PSI is switched off (cgroup.pressure=0) ends its
streams with the line that says so, and not that it is gone."""
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


# Distinct triggers of each resource on the cgroup: many files for the kernel to remove before the
# directory. The kernel removes io.pressure, memory.pressure and cpu.pressure, then cgroup.pressure,
# then the directory; a trigger's error can come between. On 0.4 that gave a false line in about one
# round in 20 here.
TRIGGERS = [{'stall': 'some', 'threshold_us': ms * 1000, 'window_us': 2000000} for ms in range(100, 900, 100)]
ROUNDS = 10


def subscribe_all(d, name):
    clients = []
    for resource in ('memory', 'cpu', 'io'):
        for t in TRIGGERS:
            clients.append(kl.subscribe_ok(d, cgroup=name, psi=t, resource=resource)[0])
    return clients


def check_one_line_per_removal(d):
    """Remove the cgroup2 directory of a twin (its v1 memory cgroup stays where the host has one)
    under 24 registrations, ROUNDS times: one "is gone" line per registration, no other."""
    for rnd in range(ROUNDS):
        with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True) as (name, v1, v2):
            clients = subscribe_all(d, name)
            try:
                n = len(kl.registrations_on(d, name))
                pt.check_eq(n, 3 * len(TRIGGERS), 'a registration per trigger')
                mark = len(d.log())
                pt.remove_cgroup(v2)
                pt.check(not os.path.exists(v2) and (v1 is None or os.path.isdir(v1)),
                         'the cgroup2 directory removed, its twin kept')
                for v in clients:
                    kl.wait_removed(v)
                pt.wait_for(lambda: not kl.registrations_on(d, name), timeout=kl.REPLY_TIMEOUT,
                            what='every registration to go')
                lines = [line for line in d.log()[mark:].splitlines() if name in line]
                gone = [line for line in lines if f'Cgroup {name} is gone, ending ' in line]
                other = [line for line in lines if ' is gone, ' not in line and 'Removed the ' not in line]
                pt.check(len(gone) == n and not other, f'round {rnd + 1}: one true line per registration',
                         len(gone), n, other)
            finally:
                kl.close_all(clients)


def check_psi_disabled(d):
    """cgroup.pressure=0 ends the cgroup's PSI streams with the line that says so."""
    with pt.real_cgroups(v1=False, v2=True) as (name, _, v2):
        if not os.path.exists(os.path.join(v2, 'cgroup.pressure')):
            pt.skip_part('no cgroup.pressure here (kernel before 6.1) to switch PSI off for a cgroup')
            return
        v, _ = kl.subscribe_ok(d, cgroup=name, psi=kl.PSI_2S)
        try:
            mark = len(d.log())
            with open(os.path.join(v2, 'cgroup.pressure'), 'w') as f:
                f.write('0')
            kl.wait_removed(v)
            pt.check(os.path.isdir(v2), 'the cgroup stays')
            lines = [line for line in d.log()[mark:].splitlines() if name in line and 'Removed the ' not in line]
            pt.check_eq(lines, [f'pressured: warning: Ending 1 psi stream(s) on {name}, which stays: PSI was '
                                'disabled for it (cgroup.pressure=0).'], 'the one true line')
        finally:
            v.close()


def main():
    pt.require_root('it makes and removes real cgroups')
    with pt.Daemon() as d:
        with pt.real_cgroups(v1=True, v2=False) as (name, v1, _):
            check_removal(d, name, v1, 'vmpressure', {'vmpressure': {'level': 'low'}})
        with pt.real_cgroups(v1=False, v2=True) as (name, _, v2):
            check_removal(d, name, v2, 'psi', {'psi': kl.PSI_2S})
        check_one_line_per_removal(d)
        check_psi_disabled(d)
    pt.finish()


if __name__ == '__main__':
    main()
