#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real workload with and without 100 subscribers of the daemon watching it.

The workload (tests/bench/benchlib.py pressure_workload: a process holding
32 MB of anonymous memory, and rounds of writing a 200 MB file with dd and
reading it back, in a 64M-limited v1 memory cgroup and a cgroup2 directory
of the same name) runs alternately with nobody watching and with 100
subscribers watching its cgroup: "level": "low", vmpressure "low" on the
v1 cgroup and, where the cgroup2 tree has the memory controller,
memory.events, in equal shares. A thread reads
their events as a real client would. Reports the workload's throughput
(MB written plus read, per second of its loop) both ways, the difference and
the run-to-run noise, and what the daemon spent. Needs root. Writes
workload.csv.
"""
import os
import selectors
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

SUBSCRIBERS = 100


class Reader(threading.Thread):
    """Reads and counts the events of @clients until stopped."""

    def __init__(self, clients):
        super().__init__(daemon=True)
        self.clients = clients
        self.events = 0
        self.cpu = 0.0
        self.stopping = False
        self.sel = selectors.DefaultSelector()
        for v in clients:
            v.sock.setblocking(False)
            self.sel.register(v.sock, selectors.EVENT_READ)

    def run(self):
        t0 = time.thread_time()
        self.run_loop()
        self.cpu = time.thread_time() - t0

    def run_loop(self):
        while not self.stopping:
            for key, _ in self.sel.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.sel.unregister(key.fileobj)
                    continue
                self.events += data.count(b'\0')

    def stop(self):
        self.stopping = True
        self.join()
        self.sel.close()
        return self.events, self.cpu


def watchers(d, name, n, with_events):
    """@n subscribers on @name: level, vmpressure and (if available) memory.events alike."""
    per = n // 3 if with_events else n // 2
    clients = bl.subscribe_many(d, n - (2 if with_events else 1) * per, cgroup=name, level='low')
    try:
        clients += bl.subscribe_many(d, per, cgroup=name, vmpressure={'level': 'low'})
        if with_events:
            clients += bl.subscribe_many(d, per, cgroup=name, memory_events=True)
    except BaseException:
        bl.close_all(clients)
        raise
    return clients


def main():
    args = bl.parse_args(__doc__.split('\n')[0])
    pt.require_root()
    reps = 2 if args.quick else 5
    iterations = 3 if args.quick else 6
    runs = {0: [], SUBSCRIBERS: []}
    with pt.real_cgroups(v1=True, v2=True, limit='64M') as (name, v1, v2), bl.daemon() as d:
        # memory.events needs the memory controller in the cgroup2 tree.
        with_events = os.path.exists(os.path.join(v2, 'memory.events'))
        for rep in range(reps):
            # ABBA order, so a drift of the machine does not favour one side.
            order = (0, SUBSCRIBERS) if rep % 2 == 0 else (SUBSCRIBERS, 0)
            for n in order:
                clients, reader = [], None
                if n:
                    clients = watchers(d, name, n, with_events)
                    reader = Reader(clients)
                    reader.start()
                try:
                    c0 = bl.proc_cpu_seconds(d.pid)
                    wall, cpu, mb = bl.pressure_workload(v1, v2, iterations)
                    dcpu = bl.proc_cpu_seconds(d.pid) - c0
                finally:
                    events, rcpu = reader.stop() if reader else (0, 0.0)
                    bl.close_all(clients)
                runs[n].append((mb / wall, wall, cpu, dcpu, events, rcpu))
                print(f'run {rep + 1}/{reps}, {n:3d} subscribers: {mb / wall:7.1f} MB/s ({wall:.2f} s), '
                      f'workload CPU {cpu:.2f} s, daemon CPU {dcpu:.2f} s, {events} events delivered, '
                      f'subscribers\' CPU {rcpu:.2f} s', flush=True)

    header = ['subscribers', 'runs', 'mb_per_s', 'mb_per_s_sd', 'wall_s', 'workload_cpu_s', 'daemon_cpu_s',
              'events_per_run', 'subscribers_cpu_s']
    rows = []
    for n, rs in runs.items():
        tp, tp_sd = bl.mean_sd([r[0] for r in rs])
        rows.append([n, len(rs), tp, tp_sd, bl.mean_sd([r[1] for r in rs])[0], bl.mean_sd([r[2] for r in rs])[0],
                     bl.mean_sd([r[3] for r in rs])[0], round(bl.mean_sd([r[4] for r in rs])[0]),
                     bl.mean_sd([r[5] for r in rs])[0]])
    base, watched = rows[0][2], rows[1][2]
    diff = 100.0 * (watched - base) / base if base else 0.0
    noise = 100.0 * max(rows[0][3], rows[1][3]) / base if base else 0.0
    print(f'\nWorkload throughput ({iterations} x 200 MB written and read per run in a 64M cgroup, '
          f'32 MB anon), {reps} runs each, alternating')
    bl.print_table(header, rows)
    print(f'difference with {SUBSCRIBERS} subscribers: {diff:+.1f}% (run-to-run noise, largest sd: {noise:.1f}%)')
    rows.append(['difference_percent', '', round(diff, 2), round(noise, 2), '', '', '', '', ''])
    bl.write_csv(args.out, 'workload.csv', header, rows)


if __name__ == '__main__':
    main()
