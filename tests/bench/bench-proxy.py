#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The memory-pressure proxy: time from a kernel PSI wakeup to the sd-event
callback, through pressured and with the same client watching
memory.pressure directly.

Phases alternate (direct, proxied, direct, proxied, ...: --rounds pairs of
--seconds each), each in the same fresh
cgroups while a process there streams a file larger than the 128M limit:
in a direct phase N sd-event clients each hold their own trigger on the
cgroup's memory.pressure (N kernel triggers); in a proxied phase N clients
go through pressured's memory-pressure socket (one shared kernel trigger).
Running the two sets apart keeps the direct clients from competing with the
proxied ones and the daemon for the CPUs. In every phase one more direct
client, with the same trigger under SCHED_FIFO, stands for the kernel
wakeup: identical triggers on one cgroup are updated by the same PSI poll,
and a real-time task runs as soon as it is woken. Latency = callback - the
reference callback nearest to it (within 100 ms); overhead = proxied minus
direct at the same percentile. Needs root and libsystemd >= 254
(tests/proxy/fetch-libsystemd.sh). Never asserts times.
"""
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, '..', 'proxy'))
import benchlib as bl  # noqa: E402
import proxylib  # noqa: E402

pt = bl.pt
TRIGGER = b'some 20000 2000000'   # 20 ms per 2 s: a window unprivileged processes may use
MATCH_US = 100000                 # a callback belongs to the reference callback within this
REFERENCE = ['chrt', '-f', '50']  # the reference client runs as soon as the kernel wakes it


def pct(values, p):
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def latencies(ref, events):
    """Each of @events minus the nearest of @ref; (latencies, events without a reference)."""
    out, unmatched = [], 0
    ref = sorted(ref)
    for t in events:
        nearest = min(ref, key=lambda r: abs(t - r), default=None)
        if nearest is None or abs(t - nearest) > MATCH_US:
            unmatched += 1
        else:
            out.append(t - nearest)
    return out, unmatched


def oncpu_seconds(pid):
    """Time @pid has spent on a CPU, in seconds (/proc/PID/schedstat, nanoseconds)."""
    with open(f'/proc/{pid}/schedstat') as f:
        return int(f.read().split()[0]) / 1e9


def phase(mode, n, seconds, d, v1, v2, mp):
    """One phase: the reference client and @n clients of @mode under load. Returns its figures."""
    pressure = os.path.join(v2, 'memory.pressure')
    write = proxylib.write_value(TRIGGER)
    clients = []
    try:
        ref = proxylib.Client(pressure, write, cgroups=(v1, v2), prefix=REFERENCE)
        clients.append(ref)
        for _ in range(n):
            clients.append(proxylib.Client(pressure if mode == 'direct' else mp, write, cgroups=(v1, v2)))
        if mode == 'proxied':
            try:
                pt.wait_for(lambda: d.status()['proxied_clients'] == n, timeout=20, what='all proxied')
            except TimeoutError:
                pass   # reported as attached < clients
        attached = d.status()['proxied_clients']
        regs = len(d.status()['registrations'])
        cpu0 = oncpu_seconds(d.pid)
        with pt.memory_load(v1, v2, size_mb=400):
            time.sleep(seconds)   # the measurement period, not a synchronisation
        cpu = oncpu_seconds(d.pid) - cpu0
        for c in clients:
            c.stop()
    finally:
        for c in clients:
            if c.proc.poll() is None:
                c.stop(9)
    lat, unmatched = latencies(ref.events, [t for c in clients[1:] for t in c.events])
    return {'lat': lat, 'unmatched': unmatched, 'wakeups': len(ref.events), 'attached': attached,
            'kernel_triggers': n + 1 if mode == 'direct' else regs + 1, 'daemon_cpu_s': cpu}


def run(n, seconds, rounds):
    # The clients share the cgroup with the load: 128M keeps the memcg OOM
    # killer away from them at 100 clients.
    with pt.real_cgroups(v1=True, v2=True, limit='128M') as (name, v1, v2):
        d = pt.Daemon(log_level='info')
        mp = os.path.join(d.tmpdir, 'memory-pressure')
        d.write_config(f'[MemoryPressure]\nSocket={mp}\n[Limits]\nMaxClientsPerUser=10000\n')
        res = {'direct': [], 'proxied': []}
        with d:
            for _ in range(rounds):
                for mode in ('direct', 'proxied'):
                    res[mode].append(phase(mode, n, seconds, d, v1, v2, mp))
            counters = d.status()['counters']
    lat = {m: [x for p in res[m] for x in p['lat']] for m in res}
    wakeups = {m: sum(p['wakeups'] for p in res[m]) for m in res}
    return {
        'clients': n, 'seconds': seconds * rounds, 'attached': min(p['attached'] for p in res['proxied']),
        'wakeups_direct': wakeups['direct'], 'wakeups_proxied': wakeups['proxied'],
        'kernel_triggers_direct': n, 'kernel_triggers_proxied': res['proxied'][0]['kernel_triggers'] - 1,
        'direct_callbacks': len(lat['direct']), 'proxied_callbacks': len(lat['proxied']),
        'unmatched': sum(p['unmatched'] for m in res for p in res[m]),
        'direct_p50_us': pct(lat['direct'], 50), 'direct_p99_us': pct(lat['direct'], 99),
        'proxied_p50_us': pct(lat['proxied'], 50), 'proxied_p99_us': pct(lat['proxied'], 99),
        'overhead_p50_us': pct(lat['proxied'], 50) - pct(lat['direct'], 50),
        'overhead_p99_us': pct(lat['proxied'], 99) - pct(lat['direct'], 99),
        'daemon_cpu_us_per_wakeup': (sum(p['daemon_cpu_s'] for p in res['proxied']) * 1e6
                                     / max(1, wakeups['proxied'])),
        'proxy_events_dropped': counters['proxy_events_dropped'], 'proxy_events_sent': counters['proxy_events_sent'],
        'loadavg_1m': os.getloadavg()[0],
    }


def main():
    def extra(p):
        p.add_argument('--seconds', type=int, help='length of each phase (default 20, --quick 10)')
        p.add_argument('--rounds', type=int, default=2, help='direct/proxied phase pairs (default 2)')
    args = bl.parse_args(__doc__.splitlines()[0], extra)
    pt.require_root('real cgroups and PSI')
    proxylib.build_client()
    seconds = args.seconds or (10 if args.quick else 20)
    rows = [run(n, seconds, args.rounds) for n in [int(x) for x in os.environ.get('BENCH_PROXY_CLIENTS', '1 100').split()]]
    keys = list(rows[0].keys())
    print(' | '.join(keys))
    for r in rows:
        print(' | '.join(str(r[k]) for k in keys))
    bl.write_csv(args.out, 'proxy.csv', keys, [[r[k] for k in keys] for r in rows])


if __name__ == '__main__':
    main()
