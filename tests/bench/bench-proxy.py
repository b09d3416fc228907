#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The memory-pressure proxy: time from a kernel PSI wakeup to the sd-event
callback, through pressured and with the same client watching
memory.pressure directly.

N sd-event clients watch the cgroup's memory.pressure directly (N kernel
triggers) and N more go through pressured's memory-pressure socket (one
shared kernel trigger), all with the same trigger, in the same fresh
cgroups, while a process there streams a file larger than the 128M limit.
Identical triggers on one cgroup are updated by the same PSI poll, so one
kernel wakeup makes every client's callback run; callbacks are grouped
into wakeups by time, and the earliest direct callback of a wakeup stands
for the kernel wakeup. Latency = callback - that reference. Needs root and
libsystemd >= 254 (tests/proxy/fetch-libsystemd.sh). Never asserts times.
"""
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, '..', 'proxy'))
import benchlib as bl  # noqa: E402
import proxylib  # noqa: E402

pt = bl.pt
TRIGGER = b'some 20000 2000000'   # 20 ms per 2 s: a window unprivileged processes may use
GAP_US = 100000                   # callbacks further apart belong to different wakeups


def pct(values, p):
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def run(n, seconds):
    # 200 client processes share the cgroup with the load: 128M keeps the
    # memcg OOM killer away from them at 100 clients each way.
    with pt.real_cgroups(v1=True, v2=True, limit='128M') as (name, v1, v2):
        d = pt.Daemon(log_level='info')
        mp = os.path.join(d.tmpdir, 'memory-pressure')
        d.write_config(f'[MemoryPressure]\nSocket={mp}\n[Limits]\nMaxClientsPerUser=10000\n')
        with d:
            direct, proxied = [], []
            try:
                write = proxylib.write_value(TRIGGER)
                for _ in range(n):
                    direct.append(proxylib.Client(os.path.join(v2, 'memory.pressure'), write, cgroups=(v1, v2)))
                    proxied.append(proxylib.Client(mp, write, cgroups=(v1, v2)))
                try:
                    pt.wait_for(lambda: d.status()['proxied_clients'] == n, timeout=20, what='all proxied')
                except TimeoutError:
                    pass   # reported below as attached < clients
                attached = d.status()['proxied_clients']
                regs = d.status()['registrations']
                with pt.memory_load(v1, v2, size_mb=400):
                    time.sleep(seconds)   # the measurement period, not a synchronisation
                for c in direct + proxied:
                    c.stop()
                counters = d.status()['counters']
            finally:
                for c in direct + proxied:
                    if c.proc.poll() is None:
                        c.stop(9)
    events = sorted([(t, 'd') for c in direct for t in c.events] + [(t, 'p') for c in proxied for t in c.events])
    groups, cur = [], []
    for e in events:
        if cur and e[0] - cur[-1][0] > GAP_US:
            groups.append(cur)
            cur = []
        cur.append(e)
    if cur:
        groups.append(cur)
    lat_d, lat_p, wakeups = [], [], 0
    for g in groups:
        ds = [t for t, k in g if k == 'd']
        if not ds:
            continue
        wakeups += 1
        ref = min(ds)
        lat_d += [t - ref for t in ds]
        lat_p += [t - ref for t, k in g if k == 'p']
    return {
        'clients': n, 'attached': attached, 'seconds': seconds, 'wakeups': wakeups,
        'kernel_triggers_direct': n, 'kernel_triggers_proxied': len(regs),
        'direct_callbacks': len(lat_d), 'proxied_callbacks': len(lat_p),
        'direct_p50_us': pct(lat_d, 50), 'direct_p99_us': pct(lat_d, 99),
        'proxied_p50_us': pct(lat_p, 50), 'proxied_p99_us': pct(lat_p, 99),
        'overhead_p50_us': pct(lat_p, 50) - pct(lat_d, 50), 'overhead_p99_us': pct(lat_p, 99) - pct(lat_d, 99),
        'proxy_events_dropped': counters['proxy_events_dropped'], 'daemon_events_read': counters['events_read'], 'proxy_events_sent': counters['proxy_events_sent'],
    }


def main():
    args = bl.parse_args(__doc__.splitlines()[0])
    pt.require_root('real cgroups and PSI')
    proxylib.build_client()
    seconds = 10 if args.quick else 30
    rows = [run(n, seconds) for n in [int(x) for x in os.environ.get('BENCH_PROXY_CLIENTS', '1 100').split()]]
    keys = list(rows[0].keys())
    print(' | '.join(keys))
    for r in rows:
        print(' | '.join(str(r[k]) for k in keys))
    bl.write_csv(args.out, 'proxy.csv', keys, [[r[k] for k in keys] for r in rows])


if __name__ == '__main__':
    main()
