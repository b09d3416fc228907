#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sharing: N identical subscribers of the daemon vs N processes with their own PSI trigger.

On a fresh pair of cgroups (a 64M-limited v1 memory cgroup and a cgroup2
directory of the same name), with the trigger "some 100 ms / 2 s" on the
cgroup2 directory's memory.pressure:
  1. kernel triggers and descriptors: N subscribers of the daemon, against
     N processes that each open their own trigger (tests/bench/psi-holders,
     like sd_event_add_memory_pressure() in every service). Goal: 1 vs N.
  2. kernel-side cost: a fixed pressure workload in the cgroups (dd writes
     and reads of a file larger than the limit, next to a process holding
     anonymous memory) with no trigger, with the daemon's single trigger
     serving N subscribers, and with N triggers; its CPU time and the CPU
     time of the kernel's PSI polling threads (psimon), over repeated runs.
N is 1000 (200 with --quick). Needs root. Writes sharing.csv and
sharing-cost.csv.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

HOLDERS = os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'psi-holders')


def fds_on(path):
    """(descriptors open on @path over all processes, number of processes holding one)."""
    fds, procs = 0, 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            fd_names = os.listdir(f'/proc/{pid}/fd')
        except OSError:
            continue
        n = 0
        for fd in fd_names:
            try:
                n += os.readlink(f'/proc/{pid}/fd/{fd}') == path
            except OSError:
                pass  # closed meanwhile (e.g. a connection the daemon just let go)
        fds += n
        procs += 1 if n else 0
    return fds, procs


class Holders:
    """psi-holders running: N processes, one trigger each."""

    def __init__(self, path, n):
        self.proc = subprocess.Popen([HOLDERS, path, str(n), bl.PSI_2S_TEXT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        pt.check(line == ['ready', str(n)], 'psi-holders did not register every trigger', line)

    def stop(self):
        """Stop them; return (events received, CPU seconds, context switches)."""
        self.proc.stdin.close()
        words = self.proc.stdout.read().split()
        self.proc.wait()
        vals = dict(zip(words[::2], words[1::2]))
        return int(vals['events']), int(vals['cpu_us']) / 1e6, int(vals['switches'])


def main():
    args = bl.parse_args(__doc__.split('\n')[0])
    pt.require_root()
    if not os.access(HOLDERS, os.X_OK):
        pt.skip(f'{HOLDERS} is not built')
    n = 200 if args.quick else 1000
    reps = 2 if args.quick else 3
    iterations = 3 if args.quick else 8

    with pt.real_cgroups(v1=True, v2=True, limit='64M') as (name, v1, v2), bl.daemon(max_clients=n + 64) as d:
        path = os.path.join(v2, 'memory.pressure')
        params = {'cgroup': name, 'psi': bl.PSI_2S}

        # 1. Triggers and descriptors.
        rows = []
        clients = bl.subscribe_many(d, n, **params)
        try:
            regs = [r for r in d.status()['registrations'] if r['cgroup'] == name]
            fds, procs = fds_on(path)
            rows.append(['daemon', n, len(regs), fds, procs, len(d.fds())])
        finally:
            bl.close_all(clients)
        pt.wait_for(lambda: not [r for r in d.status()['registrations'] if r['cgroup'] == name],
                    what='the registration to go')
        h = Holders(path, n)
        try:
            fds, procs = fds_on(path)
            rows.append(['own-trigger-per-process', n, fds, fds, procs, ''])
        finally:
            h.stop()
        header = ['setup', 'subscribers', 'kernel_triggers', 'fds_on_memory.pressure', 'processes_holding',
                  'daemon_fds_total']
        print(f'\nTriggers on {name}/memory.pressure ({bl.PSI_2S_TEXT}) for {n} watchers')
        bl.print_table(header, rows)
        bl.write_csv(args.out, 'sharing.csv', header, rows)

        # 2. The workload's cost with 0, 1 (shared) and N triggers, interleaved.
        cost = {'no-trigger': [], 'daemon-1-trigger': [], f'{n}-triggers': []}
        extra = {k: [] for k in cost}
        for rep in range(reps):
            for setup in cost:
                clients, h = [], None
                if setup == 'daemon-1-trigger':
                    clients = bl.subscribe_many(d, n, **params)
                elif setup != 'no-trigger':
                    h = Holders(path, n)
                try:
                    k0 = bl.kthreads_cpu('psimon')
                    k1 = {}
                    c0, s0 = bl.proc_cpu_seconds(d.pid), pt.process_context_switches(d.pid)
                    wall, cpu, mb = bl.pressure_workload(v1, v2, iterations)
                    k1 = bl.kthreads_cpu('psimon')
                    kcpu = bl.kthreads_cpu_delta(k0, k1)
                    dcpu, dsw = bl.proc_cpu_seconds(d.pid) - c0, pt.process_context_switches(d.pid) - s0
                finally:
                    events = bl.drain_count(clients)
                    bl.close_all(clients)
                    if h:
                        events, wcpu, wsw = h.stop()
                        dcpu, dsw = wcpu, wsw
                if setup == 'no-trigger':
                    dcpu, dsw = 0.0, 0
                cost[setup].append((wall, cpu, kcpu, len(k1)))
                extra[setup].append((events, dcpu, dsw))
                print(f'run {rep + 1}/{reps} {setup}: {wall:.2f} s, workload CPU {cpu:.2f} s, psimon CPU '
                      f'{kcpu:.3f} s, {events} events to watchers, watchers\' side CPU {dcpu:.2f} s', flush=True)
                pt.wait_for(lambda: not [r for r in d.status()['registrations'] if r['cgroup'] == name],
                            what='the registration to go')

    header = ['setup', 'triggers', 'runs', 'workload_wall_s', 'wall_sd', 'workload_cpu_s', 'cpu_sd',
              'psimon_cpu_s', 'psimon_threads', 'events_to_watchers', 'watcher_side_cpu_s', 'watcher_side_switches']
    rows = []
    for setup, runs in cost.items():
        wall, wall_sd = bl.mean_sd([r[0] for r in runs])
        cpu, cpu_sd = bl.mean_sd([r[1] for r in runs])
        kcpu, _ = bl.mean_sd([r[2] for r in runs])
        kthreads = max(r[3] for r in runs)
        ev, wcpu, wsw = (bl.mean_sd([e[i] for e in extra[setup]])[0] for i in range(3))
        triggers = 0 if setup == 'no-trigger' else 1 if setup.startswith('daemon') else n
        rows.append([setup, triggers, len(runs), wall, wall_sd, cpu, cpu_sd, kcpu, kthreads, round(ev), wcpu, round(wsw)])
    print(f'\nCost of a fixed workload ({iterations} x 200 MB written and read in a 64M cgroup, 32 MB anon), '
          f'mean of {reps} runs; watcher side = the daemon, or the {n} processes')
    bl.print_table(header, rows)
    if not any(r[3] for runs in cost.values() for r in runs):
        print('(no psimon thread: without CAP_SYS_RESOURCE the kernel serves triggers from its shared '
              'averaging work, at 2 s windows, so their cost lands in kworkers and in the workload itself)')
    bl.write_csv(args.out, 'sharing-cost.csv', header, rows)


if __name__ == '__main__':
    main()
