#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of the per-cgroup series on /metrics ([Metrics] Cgroups=).

Scrapes: the daemon runs on a fake cgroup2 tree of N sibling cgroups
(tests/make-fake-cgroup-tree.py --flat N --psi: memory/io/cpu.pressure,
memory.events and memory.current in each) with Cgroups=/cg* and
MaxCgroups=100000, for N = 100, 1,000 and 10,000, and 10,000 cut to
MaxCgroups=1000; a row with Cgroups= empty gives the cost of the
daemon's own series alone. As root, a row on
the real cgroup2 hierarchy too: 1,000 empty cgroups made for the run under
a uniquely named parent, removed after it. After warm-up scrapes, S
scrapes in a row: the daemon's CPU time per scrape from /proc/PID/stat
(utime + stime over all S), the body's bytes, and the client's wall time
per scrape (median and p99).

Idle: the daemon with Cgroups= matching 1,000 fake cgroups and no
scrape at all for 60 s (--quick: 5 s), then the same after one scrape:
its context switches (voluntary + nonvoluntary, /proc/PID/task/*/status)
and CPU ticks over each period. Nothing may run between scrapes.

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-metrics.py [--quick]
Writes metrics.csv, metrics-idle.csv and metrics-info.csv (the machine). Goal: under 50 ms of CPU per
scrape at 1,000 cgroups, and 0 context switches while nobody scrapes.
"""
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

GENERATOR = os.path.join(pt.SOURCE_ROOT, 'tests', 'make-fake-cgroup-tree.py')


def get_metrics(conn):
    conn.request('GET', '/metrics')
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f'GET /metrics: {r.status}')
    return body


def wait_listening(port):
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def metrics_daemon(port, patterns, root, max_cgroups=100000):
    cfg = f'[Metrics]\nListen=127.0.0.1:{port}\nCgroups={patterns}\nMaxCgroups={max_cgroups}\n'
    return pt.Daemon(config_text=cfg, cgroup_root=root, log_level='warning')


def measure_scrapes(d, port, scrapes, expect_series):
    """(CPU ms per scrape, bytes, wall median ms, wall p99 ms, per-cgroup series)."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    for _ in range(3):
        body = get_metrics(conn)
    series = sum(1 for line in body.split(b'\n') if line.startswith(b'pressured_cgroup_pressure_memory_waiting'))
    if series != expect_series:
        raise RuntimeError(f'{series} cgroups in the scrape, expected {expect_series}')
    walls = []
    c0 = bl.proc_cpu_seconds(d.pid)
    for _ in range(scrapes):
        t0 = time.monotonic()
        body = get_metrics(conn)
        walls.append((time.monotonic() - t0) * 1e3)
    c1 = bl.proc_cpu_seconds(d.pid)
    conn.close()
    walls.sort()
    return ((c1 - c0) / scrapes * 1e3, len(body), statistics.median(walls),
            walls[min(len(walls) - 1, int(len(walls) * 0.99))], series)


def fake_rows(sizes, quick):
    rows = []
    for n in sizes:
        tmp = tempfile.mkdtemp(prefix='pressured-bench-metrics-')
        try:
            root = os.path.join(tmp, 'tree')
            subprocess.run([sys.executable, GENERATOR, root, '--flat', str(n), '--psi'], check=True)
            runs = [('/cg*', 'fake', 100000)] if n else [('', 'off (Cgroups= empty)', 100000)]
            if n > 1000:
                runs.append(('/cg*', 'fake, MaxCgroups=1000', 1000))
            for patterns, label, max_cgroups in runs:
                port = pt.free_port()
                kept = min(n, max_cgroups)
                scrapes = max(10, min(200, (50000 if not quick else 10000) // max(kept, 100)))
                with metrics_daemon(port, patterns, root, max_cgroups) as d:
                    wait_listening(port)
                    cpu, size, wall, p99, _ = measure_scrapes(d, port, scrapes, kept)
                rows.append([label, n, scrapes, round(cpu, 3), size, round(wall, 3), round(p99, 3)])
                print(f'{label} {n}: {cpu:.2f} ms CPU, {size} bytes, {wall:.2f} ms wall per scrape', flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


def real_row(n, quick):
    """n empty cgroups on the real cgroup2 hierarchy, under a parent made for the run."""
    v2 = pt.V2_ROOT
    if os.geteuid() != 0 or not v2 or not os.path.exists(os.path.join(v2, 'cgroup.procs')):
        print('SKIP: the real cgroup2 row needs root and a cgroup2 hierarchy', flush=True)
        return []
    parent = f'/pressured-bench-metrics-{uuid.uuid4().hex[:8]}'
    made = []
    try:
        os.mkdir(v2 + parent)
        made.append(v2 + parent)
        for i in range(1, n + 1):
            os.mkdir(f'{v2}{parent}/cg{i}')
            made.append(f'{v2}{parent}/cg{i}')
        port = pt.free_port()
        scrapes = 40 if quick else 200
        cfg = f'[Metrics]\nListen=127.0.0.1:{port}\nCgroups={parent}/*\nMaxCgroups=100000\n'
        with pt.Daemon(config_text=cfg, log_level='warning') as d:
            wait_listening(port)
            cpu, size, wall, p99, _ = measure_scrapes(d, port, scrapes, n)
        print(f'real cgroup2 {n}: {cpu:.2f} ms CPU, {size} bytes, {wall:.2f} ms wall per scrape', flush=True)
        return [['real cgroup2', n, scrapes, round(cpu, 3), size, round(wall, 3), round(p99, 3)]]
    finally:
        for p in reversed(made):
            os.rmdir(p)


def idle_rows(seconds):
    rows = []
    tmp = tempfile.mkdtemp(prefix='pressured-bench-metrics-idle-')
    try:
        root = os.path.join(tmp, 'tree')
        subprocess.run([sys.executable, GENERATOR, root, '--flat', '1000', '--psi'], check=True)
        port = pt.free_port()
        with metrics_daemon(port, '/cg*', root) as d:
            wait_listening(port)
            time.sleep(1)  # let start-up settle
            for phase in ('never scraped', 'after one scrape'):
                if phase == 'after one scrape':
                    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
                    body = get_metrics(conn)
                    conn.close()
                    if body.count(b'\npressured_cgroup_memory_current_bytes{') != 1000:
                        raise RuntimeError('the scrape did not carry 1000 cgroups')
                    time.sleep(1)  # the connection's close is handled
                s0, c0 = pt.process_context_switches(d.pid), bl.proc_cpu_seconds(d.pid)
                time.sleep(seconds)
                s1, c1 = pt.process_context_switches(d.pid), bl.proc_cpu_seconds(d.pid)
                ticks = round((c1 - c0) * bl.CLK_TCK)
                rows.append([phase, 1000, seconds, s1 - s0, ticks])
                print(f'idle, {phase}: {s1 - s0} context switches, {ticks} CPU ticks in {seconds} s', flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main():
    def extra(p):
        p.add_argument('--sizes', help='fake tree sizes, comma-separated (default 0,100,1000,10000)')
        p.add_argument('--no-idle', action='store_true', help='skip the idle periods')
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    sizes = [int(x) for x in args.sizes.split(',')] if args.sizes else [0, 100, 1000, 10000]
    u = os.uname()
    info = [['machine', u.nodename], ['kernel', u.release], ['cpus', os.cpu_count()],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_start', bl.loadavg()],
            ['quick', int(args.quick)]]
    rows = fake_rows(sizes, args.quick) + real_row(1000, args.quick)
    header = ['tree', 'cgroups', 'scrapes', 'cpu_ms', 'bytes', 'wall_ms', 'wall_p99_ms']
    bl.print_table(header, rows)
    bl.write_csv(args.out, 'metrics.csv', header, rows)
    if not args.no_idle:
        idle = idle_rows(5 if args.quick else 60)
        header = ['phase', 'cgroups', 'seconds', 'context_switches', 'cpu_ticks']
        bl.print_table(header, idle)
        bl.write_csv(args.out, 'metrics-idle.csv', header, idle)
    info.append(['load_end', bl.loadavg()])
    bl.write_csv(args.out, 'metrics-info.csv', ['key', 'value'], info)
    return 0


if __name__ == '__main__':
    sys.exit(main())
