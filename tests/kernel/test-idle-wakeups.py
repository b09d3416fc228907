#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""With no subscriber the daemon holds no kernel registration and does not
wake up at all: over 5 s its threads record no context switch. The same is
measured (and printed, not asserted) with 50 PSI subscribers on a quiet,
empty cgroup2 directory. Then one injected event starts a pressure
episode on that registration; once its "cleared" has come, the daemon is
back to 0 context switches: the episode timer is gone. Runs the daemon directly: under valgrind the
tool's own threads would switch."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

PERIOD = 5.0
N = 50


def switches_over(d, period):
    before = pt.process_context_switches(d.pid)
    time.sleep(period)
    return pt.process_context_switches(d.pid) - before


def main():
    if pt.WRAPPER:
        pt.skip('counts the daemon\'s own context switches; not meaningful under ' + pt.WRAPPER[0])
    pt.require_root('kernel registrations on real cgroups')
    with pt.real_cgroups(v1=False, v2=True) as (name, _, _v2), kl.quiet_daemon() as d:
        kl.settled_fds(d)
        pt.check_eq(d.status()['registrations'], [], 'registrations at idle')
        # Let the daemon finish with the status connection before counting.
        kl.settled_fds(d)
        idle = switches_over(d, PERIOD)
        print(f'idle: {idle} context switches in {PERIOD:.0f} s', flush=True)
        pt.check_eq(idle, 0, f'the idle daemon woke up {idle} times in {PERIOD:.0f} s')

        clients = kl.subscribe_many(d, N, cgroup=name, psi=kl.PSI_2S)
        try:
            kl.settled_fds(d)
            busy = switches_over(d, PERIOD)
            print(f'{N} PSI subscribers, no pressure: {busy} context switches in {PERIOD:.0f} s', flush=True)
            regs = kl.registrations_on(d, name)
            pt.check(len(regs) == 1 and regs[0]['subscribers'] == N, 'subscribers still attached', regs)

            # An episode runs a timer while it lasts, and none after "cleared".
            r = d.inject('medium', cgroup=name)
            pt.check(r['parameters']['delivered'] == N, 'the injection reached every subscriber', r)
            for v in clients:
                kinds = []
                while 'cleared' not in kinds:
                    kinds.append(kl.event_of(v.recv(timeout=kl.PRESSURE_TIMEOUT))['kind'])
                pt.check_eq(kinds, ['pressure', 'cleared'], 'one pressure event, then cleared')
            pt.check('episode' not in kl.registrations_on(d, name)[0], 'the episode is over', None)
            kl.settled_fds(d)
            after = switches_over(d, PERIOD)
            print(f'{N} PSI subscribers after cleared: {after} context switches in {PERIOD:.0f} s', flush=True)
            pt.check_eq(after, 0, f'the daemon woke up {after} times in {PERIOD:.0f} s after cleared')
        finally:
            kl.close_all(clients)
    pt.finish()


if __name__ == '__main__':
    main()
