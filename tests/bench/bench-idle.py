#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Idle cost: the daemon's context switches and CPU time while nothing happens.

Two periods of --duration seconds (default 60, 5 with --quick, or
$PRESSURED_BENCH_IDLE_SEC): with no subscriber, then with 100 subscribers
holding one PSI trigger (some 100 ms / 2 s) on a fresh cgroup2 directory
that no process uses, so no pressure can occur there. Without root (no
cgroup to make) the second period uses "level" on "/" and reports how many
events pressure on the machine caused. The watchdog is off (no
WATCHDOG_USEC). Goal: 0 context switches and 0 CPU ticks in both.

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-idle.py [--duration S]
Writes idle.csv.
"""
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

SUBSCRIBERS = 100


def measure(d, duration):
    s0, c0 = pt.process_context_switches(d.pid), bl.proc_cpu_seconds(d.pid)
    time.sleep(duration)
    s1, c1 = pt.process_context_switches(d.pid), bl.proc_cpu_seconds(d.pid)
    return s1 - s0, round((c1 - c0) * bl.CLK_TCK)


@contextlib.contextmanager
def quiet_cgroup():
    """A fresh cgroup2 directory, or None without root or cgroup2 PSI."""
    if os.geteuid() != 0 or not os.path.exists(os.path.join(pt.V2_ROOT, 'memory.pressure')):
        yield None
        return
    with pt.real_cgroups(v1=False, v2=True) as (name, _, _v2):
        yield name


def main():
    def extra(p):
        p.add_argument('--duration', type=float, default=float(os.environ.get('PRESSURED_BENCH_IDLE_SEC', 0) or 0))
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    duration = args.duration or (5.0 if args.quick else 60.0)
    rows = []
    with quiet_cgroup() as cgroup, bl.daemon() as d:
        # Let start-up finish and the readiness probe's connection go away.
        time.sleep(1.0)
        sw, ticks = measure(d, duration)
        rows.append(['none', 0, duration, sw, ticks, 0])
        print(f'0 subscribers: {sw} context switches, {ticks} CPU ticks in {duration:.0f} s', flush=True)

        if cgroup:
            what, params = f'PSI some 100ms/2s on {cgroup} (fresh, no processes)', {'cgroup': cgroup, 'psi': bl.PSI_2S}
        else:
            what, params = 'level medium on / (no root: no fresh cgroup)', {'level': 'medium'}
        clients = bl.subscribe_many(d, SUBSCRIBERS, **params)
        try:
            regs = d.status()['registrations']
            time.sleep(1.0)
            bl.drain_count(clients)
            sw, ticks = measure(d, duration)
            events = bl.drain_count(clients)
        finally:
            bl.close_all(clients)
        rows.append(['psi-quiet-cgroup' if cgroup else 'level-root', SUBSCRIBERS, duration, sw, ticks, events])
        print(f'{SUBSCRIBERS} subscribers ({what}; {len(regs)} registration(s)): {sw} context switches, '
              f'{ticks} CPU ticks, {events} events in {duration:.0f} s', flush=True)

    header = ['phase', 'subscribers', 'seconds', 'context_switches', 'cpu_ticks', 'events']
    print()
    bl.print_table(header, rows)
    print(f'(CPU ticks of 1/{bl.CLK_TCK} s; utime+stime from /proc/PID/stat; watchdog off)')
    bl.write_csv(args.out, 'idle.csv', header, rows)


if __name__ == '__main__':
    main()
