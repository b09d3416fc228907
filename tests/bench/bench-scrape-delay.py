#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Delivery delay of events while a /metrics scrape reads 10,000 cgroups.

The daemon runs on a fake cgroup2 tree of N sibling cgroups
(tests/make-fake-cgroup-tree.py --flat N --psi) with Cgroups=/cg* and
MaxCgroups=100000, so every scrape reads all N. One subscriber listens on
the root ("level": "low"); a second connection calls io.pressured.Inject
on the root, one event at a time, E times with a short pause between. The
delay of one event is from just before the Inject call is written to the
subscriber's reading the event. Two phases: no scrape, then scrapes back
to back on a kept-alive connection from another thread for the whole
phase. Per phase: the p50 and p99 of the delays and the scrapes made.

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-scrape-delay.py [--quick]
Writes scrape-delay.csv and scrape-delay-info.csv. Goal: with a scrape, p99 within 2 ms of the p99 without.
"""
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

GENERATOR = os.path.join(pt.SOURCE_ROOT, 'tests', 'make-fake-cgroup-tree.py')
PAUSE_S = 0.01


def wait_listening(port):
    deadline = time.monotonic() + 30
    while True:
        try:
            http.client.HTTPConnection('127.0.0.1', port, timeout=1).connect()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Scraper(threading.Thread):
    """Scrapes back to back until stopped; counts them."""

    def __init__(self, port, expect_series):
        super().__init__(daemon=True)
        self.port, self.expect = port, expect_series
        self.stop = threading.Event()
        self.count = 0
        self.error = None

    def run(self):
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=120)
        try:
            while not self.stop.is_set():
                conn.request('GET', '/metrics')
                r = conn.getresponse()
                body = r.read()
                series = body.count(b'\npressured_cgroup_memory_current_bytes{')
                if r.status != 200 or series != self.expect:
                    raise RuntimeError(f'GET /metrics: {r.status}, {series} cgroups, expected {self.expect}')
                self.count += 1
        except Exception as e:  # handed to the main thread
            self.error = e
        finally:
            conn.close()


def delays(d, sub, events):
    """@events Inject delays in ms, each to the one subscriber."""
    inj = pt.Varlink(d.socket)
    out = []
    try:
        for _ in range(events):
            t0 = time.monotonic()
            inj.call('io.pressured.Inject', {'level': 'critical'})
            ev = sub.recv(timeout=60)
            t1 = time.monotonic()
            if 'event' not in ev.get('parameters', {}):
                raise RuntimeError(f'not an event: {ev}')
            reply = inj.recv(timeout=60)
            if reply.get('parameters', {}).get('delivered') != 1:
                raise RuntimeError(f'Inject: {reply}')
            out.append((t1 - t0) * 1e3)
            time.sleep(PAUSE_S)
    finally:
        inj.close()
    return out


def phase(d, port, n, events, scrape):
    sub = pt.Varlink(d.socket)
    scraper = Scraper(port, n) if scrape else None
    try:
        first = sub.subscribe(level='low')
        if 'error' in first:
            raise RuntimeError(f'Subscribe: {first}')
        if scraper:
            scraper.start()
            while scraper.count == 0 and scraper.error is None:
                time.sleep(0.01)  # the first scrape done: the tree is in the page cache
        ms = delays(d, sub, events)
    finally:
        if scraper:
            scraper.stop.set()
            scraper.join()
        sub.close()
    if scraper and scraper.error:
        raise scraper.error
    label = f'scrapes of {n:,} cgroups back to back' if scrape else 'no scrape'
    return [label, n, events, round(bl.percentile(ms, 50), 3), round(bl.percentile(ms, 99), 3),
            round(max(ms), 3), scraper.count if scraper else 0]


def main():
    def extra(p):
        p.add_argument('--cgroups', type=int, help='fake tree size (default 10000; --quick: 1000)')
        p.add_argument('--events', type=int, help='injected events per phase (default 1000; --quick: 100)')
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    n = args.cgroups or (1000 if args.quick else 10000)
    events = args.events or (100 if args.quick else 1000)
    u = os.uname()
    info = [['machine', u.nodename], ['kernel', u.release], ['cpus', os.cpu_count()],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_start', bl.loadavg()],
            ['quick', int(args.quick)]]
    tmp = tempfile.mkdtemp(prefix='pressured-bench-scrape-delay-')
    try:
        root = os.path.join(tmp, 'tree')
        subprocess.run([sys.executable, GENERATOR, root, '--flat', str(n), '--psi'], check=True)
        port = pt.free_port()
        cfg = f'[Metrics]\nListen=127.0.0.1:{port}\nCgroups=/cg*\nMaxCgroups=100000\n'
        with pt.Daemon(config_text=cfg, cgroup_root=root, log_level='warning') as d:
            wait_listening(port)
            rows = [phase(d, port, n, events, False), phase(d, port, n, events, True)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    header = ['phase', 'cgroups', 'events', 'p50_ms', 'p99_ms', 'max_ms', 'scrapes']
    bl.print_table(header, rows)
    bl.write_csv(args.out, 'scrape-delay.csv', header, rows)
    info.append(['load_end', bl.loadavg()])
    bl.write_csv(args.out, 'scrape-delay-info.csv', ['key', 'value'], info)
    return 0


if __name__ == '__main__':
    sys.exit(main())
