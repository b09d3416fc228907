#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real reclaim reaches an sd-event client through pressured: the client
runs in fresh cgroups (v1 memory limited to 64M, plus a cgroup2 directory
with memory.pressure), asks for some 150ms per 2 s, and its callback runs
while a process in the same cgroups streams a file larger than the limit.
The registration is on the client's own cgroup."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

pt = proxylib.pt
WAIT = 90.0


def main():
    pt.require_root('real cgroups')
    proxylib.build_client()
    with pt.real_cgroups(v1=True, v2=True, limit='64M') as (name, v1, v2):
        d = pt.Daemon()
        mp = os.path.join(d.tmpdir, 'memory-pressure')
        d.write_config(f'[MemoryPressure]\nSocket={mp}\n')
        with d:
            c = proxylib.Client(mp, proxylib.write_value(b'some 150000 2000000'), cgroups=(v1, v2))
            try:
                def attached():
                    for r in d.status()['registrations']:
                        for p in r['proxied']:
                            if p['pid'] == c.pid:
                                return r
                    return None
                pt.wait_for(lambda: attached() is not None, timeout=WAIT, what='client attached')
                r = attached()
                pt.check_eq(r['cgroup'], name, "the client's own cgroup")
                pt.check_eq(r['source'], 'psi', 'PSI where the cgroup2 directory has memory.pressure')
                with pt.memory_load(v1, v2, size_mb=200):
                    pt.wait_for(lambda: c.count() >= 1, timeout=WAIT, what='sd-event callback under reclaim')
                pt.check(d.status()['counters']['proxy_events_sent'] >= 1, 'counted')
            finally:
                c.stop()
    pt.finish()


if __name__ == '__main__':
    main()
