#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""50 identical subscribers share one kernel registration: GetStatus lists
one registration with 50 subscribers and the daemon holds exactly one more
pressure fd than at idle (a cgroup2 memory.pressure trigger for PSI, an
eventfd for cgroup v1 vmpressure). When they leave the registration is gone
and the daemon's open files are exactly those it had at idle. On a pure
cgroup2 host the vmpressure part is left out, saying so, and vmpressure
must be SourceUnavailable instead."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

N = 50


def check_shared(d, name, source, idle, pred, what):
    regs = kl.registrations_on(d, name)
    pt.check(len(regs) == 1, f'{source}: registrations on {name}', regs)
    pt.check(regs[0]['source'] == source and regs[0]['subscribers'] == N,
             f'{source}: one registration with {N} subscribers', regs)
    now = kl.fd_targets(d)
    pt.check(kl.count_targets(now, pred) == kl.count_targets(idle, pred) + 1,
             f'{source}: exactly one more {what} fd than at idle',
             sorted(t for t in now.elements() if pred(t)), sorted(t for t in idle.elements() if pred(t)))


def check_back_to_idle(d, name, idle):
    pt.wait_for(lambda: not kl.registrations_on(d, name), timeout=kl.REPLY_TIMEOUT,
                what='the registrations to go away')
    try:
        pt.wait_for(lambda: kl.fd_targets(d) == idle, timeout=kl.REPLY_TIMEOUT, what='idle fds')
    except TimeoutError:
        now = kl.fd_targets(d)
        raise AssertionError(f'open fds differ from idle: extra {dict(now - idle)}, '
                             f'missing {dict(idle - now)}') from None


def main():
    pt.require_root('kernel registrations on real cgroups')
    with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limit=None) as (name, v1, v2), pt.Daemon() as d:
        idle = kl.settled_fds(d)
        pt.check(kl.count_targets(idle, kl.is_memory_pressure) == 0, 'memory.pressure open at idle', idle)

        # PSI on the cgroup2 directory.
        clients = kl.subscribe_many(d, N, cgroup=name, psi=kl.PSI_2S)
        try:
            check_shared(d, name, 'psi', idle, lambda t: t == os.path.join(v2, 'memory.pressure'),
                         'memory.pressure')
        finally:
            kl.close_all(clients)
        check_back_to_idle(d, name, idle)

        # vmpressure on the cgroup v1 memory cgroup.
        sources = 1
        if v1:
            clients = kl.subscribe_many(d, N, cgroup=name, vmpressure={'level': 'low'})
            try:
                check_shared(d, name, 'vmpressure', idle, kl.is_eventfd, 'eventfd')
            finally:
                kl.close_all(clients)
            check_back_to_idle(d, name, idle)
            sources += 1
        else:
            kl.no_v1('50 vmpressure subscribers sharing one registration')
            kl.expect_no_vmpressure(d, name)
            check_back_to_idle(d, name, idle)

        c = d.status()['counters']
        pt.check(c['registrations_created'] == sources and c['registrations_removed'] == sources,
                 'one registration made and removed per source', c)
    pt.finish()


if __name__ == '__main__':
    main()
