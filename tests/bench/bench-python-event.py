#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a client adds between the daemon's write of a level event and its callback, after a quiet spell.

    tests/bench/bench-python-event.py [--out DIR] [--rounds N] [--events N] [--idle S] [--vm]
                                      [--module DIR] [--c-client PATH]

A server in this script stands in for the daemon, so that only the client is
measured: it answers a client's Subscribe with the level now ("normal"), then
every --idle seconds (default 1; long enough for the client's caches to go
cold, as when pressure comes after a quiet spell) writes one level event, the
daemon's message byte for byte in form, with its monotonic_us stamped just
before the write. Each client takes CLOCK_MONOTONIC first thing in its
callback; the latency is that minus monotonic_us. Clients:

  module   the Python module's blocking pressured.watch_levels()
  asyncio  the Python module's pressured.watch_levels_async() in asyncio.run()
  bare     a socket, recv() and json.loads(): the least a Python program does
  c        libpressure's pressure_monitor on sd-event (tests/bench/levels-client)

Each round starts each client in turn (the order rotates from round to
round) and sends it --events events (default 10). The Python clients run the
module of --module (default: client/python of the build tree), so two
builds can be compared. --vm runs it in the VM test bed (tests/vm/run.sh,
under TCG) by --guest inside.

CSV files: python-event-here.csv (or -vm): one row per event. Never asserts
on times.
"""
import json
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
CLIENTS = ('module', 'asyncio', 'bare', 'c')
HEADER = ['where', 'round', 'client', 'event', 'latency_us']
START_TIMEOUT = 120.0
HEADROOM = 3 << 30

ROLE_MODULE = r'''
import sys, time
import pressured
for lv in pressured.watch_levels("/", socket=sys.argv[1]):
    t = time.monotonic_ns() // 1000
    print(f"{lv.level} {t} {lv.monotonic_us}", flush=True)
'''

ROLE_ASYNCIO = r'''
import asyncio, sys, time
import pressured
async def main():
    async for lv in pressured.watch_levels_async("/", socket=sys.argv[1]):
        t = time.monotonic_ns() // 1000
        print(f"{lv.level} {t} {lv.monotonic_us}", flush=True)
asyncio.run(main())
'''

ROLE_BARE = r'''
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"method":"io.pressured.Subscribe","parameters":{"cgroup":"/","levels":true},"more":true}\0')
buf = b""
while True:
    data = s.recv(65536)
    if not data:
        break
    buf += data
    while b"\0" in buf:
        m, _, buf = buf.partition(b"\0")
        e = json.loads(m)["parameters"]["event"]
        t = time.monotonic_ns() // 1000
        print(f'{e["level"]} {t} {e["monotonic_us"]}', flush=True)
'''


def level_message(seq, level):
    """A level event as the daemon sends it, stamped now."""
    event = {'kind': 'level', 'cgroup': '/', 'level': level, 'headroom_bytes': HEADROOM,
             'reclaim_target_bytes': 0 if level == 'normal' else 64 << 20, 'seq': seq, 'missed': 0,
             'time_us': time.time_ns() // 1000, 'monotonic_us': time.monotonic_ns() // 1000}
    return json.dumps({'parameters': {'event': event}, 'continues': True}, separators=(',', ':')).encode() + b'\0'


def client_cmd(name, path, args):
    if name == 'c':
        return [args.c_client, '--socket', path], None
    code = {'module': ROLE_MODULE, 'asyncio': ROLE_ASYNCIO, 'bare': ROLE_BARE}[name]
    return [sys.executable, '-c', code, path], dict(os.environ, PYTHONPATH=args.module)


def readline(p, what):
    r, _, _ = select.select([p.stdout], [], [], START_TIMEOUT)
    line = p.stdout.readline() if r else ''
    pt.check(line, f'the {what} client said nothing', p.poll())
    return line.split()


def accept_from(srv, pid, name):
    """The connection of process @pid: one left over from an earlier client (reconnecting as it was
    stopped) is dropped."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        srv.settimeout(max(deadline - time.monotonic(), 0.1))
        conn, _ = srv.accept()
        peer = struct.unpack('3i', conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        if peer == pid:
            return conn
        conn.close()
        pt.check(time.monotonic() < deadline, f'the {name} client did not connect')


def one_client(srv, path, name, args):
    """The latencies (µs) of --events events to client @name."""
    cmd, env = client_cmd(name, path, args)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd='/')
    conn = None
    try:
        conn = accept_from(srv, p.pid, name)
        request = conn.recv(65536)
        pt.check(b'io.pressured.Subscribe' in request and b'"levels":true' in request,
                 f'the {name} client did not subscribe to levels', request)
        conn.sendall(level_message(1, 'normal'))
        pt.check(readline(p, name)[:1] in (['normal'], ['ready']), f'the {name} client missed the level now')
        out = []
        for i in range(args.events):
            time.sleep(args.idle)
            level = ('low', 'normal')[i % 2]
            conn.sendall(level_message(i + 2, level))
            got = readline(p, name)
            pt.check(got[0] == level and len(got) == 3, f'the {name} client heard something else', got)
            out.append(int(got[1]) - int(got[2]))
        return out
    finally:
        # The client first: it would connect again when its connection ends.
        p.stdin.close()
        p.terminate()
        p.wait(timeout=60)
        if conn is not None:
            conn.close()


def measure_all(args):
    names = [n for n in CLIENTS if n != 'c' or args.c_client]
    where = 'vm' if args.guest else 'here'
    rows = []
    with tempfile.TemporaryDirectory(prefix='pressured-bench-event-') as d:
        path = os.path.join(d, 'io.pressured')
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen()
        for rnd in range(1, args.rounds + 1):
            k = (rnd - 1) % len(names)
            for name in names[k:] + names[:k]:
                lat = one_client(srv, path, name, args)
                rows += [[where, rnd, name, i + 1, v] for i, v in enumerate(lat)]
                print(f'{where} round {rnd} {name}: median {statistics.median(lat)} us', flush=True)
        srv.close()
    info = [['machine', os.uname().nodename], ['kernel', os.uname().release], ['cpus', os.cpu_count()],
            ['python', sys.version.split()[0]], ['module', args.module], ['idle_s', args.idle],
            ['rounds', args.rounds], ['events', args.events],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())]]
    emit = bl.emit_csv if args.guest else lambda n, h, r: bl.write_csv(args.out, n, h, r)
    emit(f'python-event-{where}.csv', HEADER, rows)
    emit(f'python-event-{where}-info.csv', ['key', 'value'], info)
    print(f'\n{where}: from the write of a level event to the callback, µs, after {args.idle:g} s idle:')
    for name in names:
        vals = [r[4] for r in rows if r[2] == name]
        print(f'  {name:8} median {statistics.median(vals):8.0f}  p10 {bl.percentile(vals, 10):8.0f}  '
              f'p90 {bl.percentile(vals, 90):8.0f}  ({len(vals)} events)', flush=True)


def main():
    def options(p):
        p.add_argument('--guest', action='store_true', help='run the steps here, inside the VM test bed')
        p.add_argument('--vm', action='store_true', help='boot the VM test bed and run there')
        p.add_argument('--rounds', type=int, default=6)
        p.add_argument('--events', type=int, default=10, help='events per client and round')
        p.add_argument('--idle', type=float, default=1.0, help='seconds between two events')
        p.add_argument('--module', default=os.path.join(pt.BUILD_ROOT, 'client', 'python'),
                       help='the directory holding the Python module to measure')
        p.add_argument('--c-client', default=None, help='the C client (default: the build\'s levels-client)')
    args = bl.parse_args(__doc__.splitlines()[0], options)
    if args.c_client is None:
        c = os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'levels-client')
        args.c_client = c if os.access(c, os.X_OK) else ''
    args.module = os.path.abspath(args.module)
    if not args.vm:
        measure_all(args)
        return
    fwd = ['--guest', '--rounds', str(args.rounds), '--events', str(args.events), '--idle', str(args.idle),
           '--module', args.module, '--c-client', os.path.abspath(args.c_client) if args.c_client else '']
    os.makedirs(args.out, exist_ok=True)
    timeout = 600 + int(args.rounds * len(CLIENTS) * (args.events * (args.idle + 2) + 60))
    sys.exit(bl.run_in_vm(__file__, fwd, args.out, timeout))


if __name__ == '__main__':
    main()
