#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Daemon CPU and memory per event for subscribers in a cgroup namespace, against the same number on the host.

A container with many subscribers: K connections from one process in a
new cgroup namespace (unshare -C) whose root is a uniquely named cgroup2
directory D, each subscribed to "level": "low" on its "/" (D). A peer in
a namespace sees cgroup names relative to its root, so the daemon
rewrites each event for it. Against: the same K subscriptions made from
the host (naming D; no rewriting). Two workloads:
  - reading: the host injects E events into D, one at a time, waiting
    until every connection has read it; the figure is the daemon's CPU
    time (the scheduler's, from /proc/PID/task/*/schedstat) per event;
  - not reading (a frozen or stuck container): nobody reads while the
    host injects S events, enough to fill every connection's socket
    buffer and the daemon's queue ([Limits] OutputBufferBytes=); the
    figure is the growth of the daemon's resident memory (VmRSS).

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-ns-fanout.py [--quick] [--daemon PATH]
Needs root, a cgroup2 hierarchy and unshare(1); exits 77 otherwise.
Writes ns-fanout.csv and ns-fanout-info.csv.
"""
import os
import selectors
import shutil
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402


def agent(sock, k, cgroup, read=True):
    """K subscriptions on @cgroup; per line on stdin, drain one event from each and answer
    (without @read: read nothing until stdin ends)."""
    conns = []
    for _ in range(k):
        c = pt.Varlink(sock)
        first = c.subscribe(level='low', cgroup=cgroup)
        if 'error' in first:
            print(f'error {first}', flush=True)
            return 1
        c.sock.setblocking(False)
        conns.append(c.sock)
    sel = selectors.DefaultSelector()
    for s in conns:
        sel.register(s, selectors.EVENT_READ)
    print('ready', flush=True)
    if not read:
        sys.stdin.read()
        return 0
    pending = {s: 0 for s in conns}
    for _ in sys.stdin:
        waiting = set(conns)
        while waiting:
            for key, _ in sel.select(timeout=60):
                s = key.fileobj
                data = s.recv(1 << 16)
                if not data:
                    print('error: the daemon closed a connection', flush=True)
                    return 1
                pending[s] += data.count(b'\0')
                if pending[s] > 0:
                    pending[s] -= 1
                    waiting.discard(s)
        print('done', flush=True)
    return 0


def cpu_ns(pid):
    """CPU time of every thread of @pid so far, in ns (the scheduler's count, not clock ticks)."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
            total += int(f.read().split()[0])
    return total


def rss_kib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise RuntimeError('no VmRSS')


def start_agent(d, cg, k, namespaced, read):
    def enter():
        with open(os.path.join(pt.V2_ROOT + cg, 'cgroup.procs'), 'w') as f:
            f.write(str(os.getpid()))
    cmd = [sys.executable, '-u', os.path.abspath(__file__), '--agent' if read else '--agent-stalled', d.socket, str(k),
           '/' if namespaced else cg]
    if namespaced:
        cmd = ['unshare', '-C'] + cmd
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=enter)
    line = p.stdout.readline().strip()
    if line != 'ready':
        p.kill()
        raise RuntimeError(f'agent: {line or "ended"}')
    return p


def label(namespaced):
    return 'in a cgroup namespace' if namespaced else 'on the host'


def phase_stalled(d, cg, k, events, namespaced):
    p = start_agent(d, cg, k, namespaced, False)
    inj = pt.Varlink(d.socket)
    try:
        before = rss_kib(d.pid)
        for _ in range(events):
            reply = inj.call_sync('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
            if 'parameters' not in reply:
                raise RuntimeError(f'Inject: {reply}')
        grown = rss_kib(d.pid) - before
    finally:
        inj.close()
        p.stdin.close()
        p.wait(timeout=60)
    return [label(namespaced) + ', not reading', k, events, '', '', '', round(grown / 1024, 1)]


def phase(d, cg, k, events, namespaced):
    p = start_agent(d, cg, k, namespaced, True)
    inj = pt.Varlink(d.socket)
    try:
        before = cpu_ns(d.pid)
        t0 = time.monotonic()
        for _ in range(events):
            reply = inj.call_sync('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
            if reply.get('parameters', {}).get('delivered') != k:
                raise RuntimeError(f'Inject: {reply}')
            p.stdin.write('\n')
            p.stdin.flush()
            line = p.stdout.readline().strip()
            if line != 'done':
                raise RuntimeError(f'agent: {line or "ended"}')
        wall = time.monotonic() - t0
        used_ns = cpu_ns(d.pid) - before
    finally:
        inj.close()
        p.stdin.close()
        p.wait(timeout=60)
    cpu_us = used_ns / 1e3 / events
    return [label(namespaced) + ', reading', k, events, round(cpu_us, 1), round(cpu_us / k, 3),
            round(wall * 1e3 / events, 2), '']


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ('--agent', '--agent-stalled'):
        return agent(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[1] == '--agent')

    def extra(p):
        p.add_argument('--subscribers', type=int, help='subscriptions per phase (default 1000; --quick: 100)')
        p.add_argument('--events', type=int, help='injected events per phase (default 300; --quick: 50)')
        p.add_argument('--stalled-events', type=int,
                       help='events injected while nobody reads (default 2000; --quick: 200)')
        p.add_argument('--daemon', help='the pressured binary to measure (default: this build)')
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    k = args.subscribers or (100 if args.quick else 1000)
    events = args.events or (50 if args.quick else 300)
    stalled = args.stalled_events or (200 if args.quick else 2000)
    if args.daemon:
        pt.PRESSURED = os.path.abspath(args.daemon)
    if os.geteuid() != 0 or not shutil.which('unshare') or not os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')):
        print('SKIP: needs root, unshare(1) and a cgroup2 hierarchy')
        return 77
    u = os.uname()
    info = [['machine', u.nodename], ['kernel', u.release], ['cpus', os.cpu_count()],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_start', bl.loadavg()],
            ['daemon', pt.PRESSURED], ['quick', int(args.quick)]]
    cg = f'/pressured-bench-ns-{uuid.uuid4().hex[:8]}'
    os.mkdir(pt.V2_ROOT + cg)
    try:
        cfg = f'[Limits]\nMaxClients={2 * k + 16}\nMaxClientsPerUser={2 * k + 16}\nIdleTimeoutSec=86400\n'
        with pt.Daemon(config_text=cfg, log_level='warning') as d:
            rows = [phase(d, cg, k, events, False), phase(d, cg, k, events, True)]
        # A daemon of its own per workload: memory freed by the reading phases stays in its heap.
        for namespaced in (False, True):
            with pt.Daemon(config_text=cfg, log_level='warning') as d:
                rows.append(phase_stalled(d, cg, k, stalled, namespaced))
    finally:
        os.rmdir(pt.V2_ROOT + cg)
    header = ['subscribers', 'count', 'events', 'daemon_cpu_us_per_event', 'per_subscriber_us', 'wall_ms_per_event',
              'rss_growth_mib']
    bl.print_table(header, rows)
    bl.write_csv(args.out, 'ns-fanout.csv', header, rows)
    info.append(['load_end', bl.loadavg()])
    bl.write_csv(args.out, 'ns-fanout-info.csv', ['key', 'value'], info)
    return 0


if __name__ == '__main__':
    sys.exit(main())
