#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An explicit vmpressure "low" subscriber on a cgroup v1 memory cgroup
limited to 64M receives pressure events while a process in that cgroup
streams a file larger than the limit through the page cache."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402


def main():
    pt.require_root('vmpressure on a real cgroup v1 memory cgroup')
    with pt.real_cgroups(v1=True, v2=False, limit='64M') as (name, v1, _), pt.Daemon() as d:
        v, ev = kl.subscribe_ok(d, cgroup=name, vmpressure={'level': 'low'})
        pt.check(ev['source'] == 'vmpressure', 'subscribed source', ev)
        pt.check(ev['cgroup'] == name, 'subscribed cgroup', ev)
        pt.check(ev['trigger'].get('vmpressure', {}).get('level') == 'low', 'subscribed trigger', ev)

        start = time.monotonic()
        with pt.memory_load(v1, None, size_mb=200):
            first, secs = kl.wait_pressure(v, start)
            print(f'first vmpressure event {secs:.3f} s after the load started', flush=True)
            # A second one: the stream keeps going while the pressure lasts.
            second, _ = kl.wait_pressure(v, start)
        v.close()

        for e in (first, second):
            pt.check(e['source'] == 'vmpressure', 'event source', e)
            pt.check(e['cgroup'] == name, 'event cgroup', e)
            pt.check(not e.get('synthetic', False), 'a kernel event is marked synthetic', e)
            pt.check(isinstance(e['count'], int) and e['count'] >= 1, 'count', e)
            pt.check(e['missed'] == 0, 'a single reading client missed events', e)
            pt.check(isinstance(e['time_us'], int) and isinstance(e['monotonic_us'], int), 'timestamps', e)
        pt.check(first['seq'] == 1 and second['seq'] == 2, 'seq numbers from 1', first['seq'], second['seq'])
        pt.check(second['monotonic_us'] >= first['monotonic_us'], 'monotonic_us goes backwards', first, second)
        st = d.status()
        pt.check(st['counters']['events_read'] >= 2, 'events_read counter', st['counters'])
    pt.finish()


if __name__ == '__main__':
    main()
