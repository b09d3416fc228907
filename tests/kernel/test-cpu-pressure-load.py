#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real cpu pressure: three busy loops in a cgroup2 directory of their own
on a machine of at most two cores keep one of them waiting for a CPU all
the time, so the cgroup's cpu.pressure "some" crosses a 2 s-window
trigger. The subscriber of Subscribe(psi, resource: cpu) gets a kernel
"pressure" event with resource "cpu" and the cpu averages; when the loops
are gone the episode ends with a "cleared" naming cpu, and GetStatus keeps
it in the registration's history. A subscriber of the same trigger on the
cgroup's memory.pressure shares nothing with it."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

# One busy loop more than the cores the loops may use: pinned to at most two CPUs.
LOOPS = 3
TRIGGER = {'stall': 'some', 'threshold_us': 500000, 'window_us': 2000000}


def wait_kind(v, kind, timeout):
    """Read until an event of @kind arrives; pressure events may come before it."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no "{kind}" event within {timeout:.0f} s')
        try:
            msg = v.recv(timeout=min(left, 1.0))
        except TimeoutError:
            continue
        ev = kl.event_of(msg)
        if ev['kind'] == kind:
            return ev
        pt.check(ev['kind'] == 'pressure', f'only pressure events before "{kind}"', ev)


def busy_loops(v2dir):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    procs = []
    for _ in range(LOOPS):
        procs.append(pt.run_in_cgroups(['taskset', '-c', ','.join(map(str, cpus)), 'sh', '-c', 'while :; do :; done'],
                                       None, v2dir))
    return procs


def main():
    pt.require_root('real cgroups')
    if not os.path.exists('/proc/pressure/cpu'):
        pt.skip('/proc/pressure/cpu is missing: PSI is off')
    with pt.real_cgroups(v1=False, v2=True, limit=None) as (name, _, v2dir), kl.quiet_daemon() as d:
        if not os.path.exists(os.path.join(v2dir, 'cpu.pressure')):
            pt.skip(f'{v2dir} has no cpu.pressure')
        cpu, ev = kl.subscribe_ok(d, cgroup=name, psi=TRIGGER, resource='cpu')
        pt.check(ev['resource'] == 'cpu' and ev['trigger']['psi'] == TRIGGER and ev['adjusted'] is False,
                 'subscribed to cpu.pressure as asked', ev)
        mem, ev = kl.subscribe_ok(d, cgroup=name, psi=TRIGGER)
        pt.check(ev['resource'] == 'memory', 'the memory subscriber', ev)
        regs = kl.registrations_on(d, name)
        pt.check(sorted(r['resource'] for r in regs) == ['cpu', 'memory'] and
                 all(r['subscribers'] == 1 for r in regs), 'two registrations, one per resource', regs)
        start = time.monotonic()
        procs = busy_loops(v2dir)
        try:
            ev, took = kl.wait_pressure(cpu, start)
            pt.check(ev['source'] == 'psi' and ev['resource'] == 'cpu' and ev['cgroup'] == name and
                     'synthetic' not in ev and ev['psi']['some_total_us'] > 0, 'a kernel cpu pressure event', ev)
            print(f'# cpu pressure event {took:.2f} s after the loops started, some avg10 '
                  f'{ev["psi"]["some_avg10"]:.2f}')
        finally:
            for p in procs:
                pt.kill_group(p)
        ev = wait_kind(cpu, 'cleared', kl.PRESSURE_TIMEOUT)
        pt.check(ev['resource'] == 'cpu' and ev['source'] == 'psi' and ev['events'] >= 1 and
                 0 < ev['peak'] <= 100, 'the episode ends with cleared, naming cpu', ev)
        reg = next(r for r in kl.registrations_on(d, name) if r['resource'] == 'cpu')
        pt.check(len(reg['history']) == 1 and reg['history'][0]['resource'] == 'cpu' and
                 reg['history'][0]['events'] == ev['events'], 'the history keeps the cpu episode', reg)
        cpu.close()
        mem.close()
    pt.finish()


if __name__ == '__main__':
    main()
