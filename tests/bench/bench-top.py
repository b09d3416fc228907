#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU cost of one `pressurectl top` refresh over fake cgroup2 trees of 100,
1,000 and 10,000 cgroups (tests/make-fake-cgroup-tree.py --top: memory.current,
.high, .max, .events and .pressure in every cgroup).

A refresh = read /proc/pressure/memory and /proc/meminfo, walk the tree and
read each cgroup's files, ask the daemon for its status (and, with the
protection columns, GetProtection of the tree), sort, and print the table.
top's CPU time per refresh is measured as the difference between a run of
N+1 refreshes and a run of 1 (rusage of the child, so process start-up and
the first refresh, which opens every file, cancel out), divided by N; the
median of the repetitions is reported. With the daemon, its own CPU time
per refresh (GetStatus + GetProtection) is reported apart.

Scenarios: text without the daemon and without protection columns; the
same with --json; text with the daemon running on the tree and the
protection columns on (the default view).

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-top.py [--quick] [--sizes N,N]
Writes top.csv. Goal: under 50 ms of CPU per refresh at 1,000 cgroups.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

GENERATOR = os.path.join(pt.SOURCE_ROOT, 'tests', 'make-fake-cgroup-tree.py')


def run_top(args, socket):
    """Run top to completion with stdout to /dev/null; returns (cpu seconds, wall seconds)."""
    cmd = [pt.PRESSURECTL, '--socket', socket, 'top', '--batch', '-d', '0'] + args
    t0 = time.monotonic()
    with open(os.devnull, 'w') as null:
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f'{cmd} exited {proc.returncode}: {err}')
    return ru.ru_utime + ru.ru_stime, wall


def per_refresh(args, socket, n, reps, daemon_pid=None):
    """Median CPU ms, wall ms (and daemon CPU ms) of one refresh."""
    cpu, wall, dcpu = [], [], []
    for _ in range(reps):
        c1, w1 = run_top(args + ['--iterations', '1'], socket)
        d0 = bl.proc_cpu_seconds(daemon_pid) if daemon_pid else 0
        cn, wn = run_top(args + ['--iterations', str(n + 1)], socket)
        d1 = bl.proc_cpu_seconds(daemon_pid) if daemon_pid else 0
        cpu.append((cn - c1) / n * 1e3)
        wall.append((wn - w1) / n * 1e3)
        dcpu.append((d1 - d0) / (n + 1) * 1e3)
    return statistics.median(cpu), statistics.median(wall), statistics.median(dcpu) if daemon_pid else None


def main():
    def extra(p):
        p.add_argument('--sizes', help='tree sizes, comma-separated (default 100,1000,10000; --quick 100,1000)')
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(',')]
    else:
        sizes = [100, 1000] if args.quick else [100, 1000, 10000]
    n, reps = (5, 3) if args.quick else (20, 5)
    rows = []
    for size in sizes:
        tmp = tempfile.mkdtemp(prefix='pressured-bench-top-')
        try:
            tree = os.path.join(tmp, 'tree')
            subprocess.run([sys.executable, GENERATOR, tree, '--nodes', str(size), '--top', '--seed', '1'],
                           check=True)
            no_daemon = os.path.join(tmp, 'none.sock')
            count = max(2, n // 10) if size >= 10000 else n
            common = ['--cgroup-root', tree]
            cpu, wall, _ = per_refresh(common + ['--no-protection'], no_daemon, count, reps)
            rows.append([size, 'text, no daemon, no protection', count, reps, round(cpu, 2), round(wall, 2), ''])
            cpu, wall, _ = per_refresh(common + ['--no-protection', '--json'], no_daemon, count, reps)
            rows.append([size, 'json, no daemon, no protection', count, reps, round(cpu, 2), round(wall, 2), ''])
            with pt.Daemon(cgroup_root=tree, log_level='warning') as d:
                cpu, wall, dcpu = per_refresh(common, d.socket, count, reps, daemon_pid=d.pid)
            rows.append([size, 'text, daemon, protection columns', count, reps, round(cpu, 2), round(wall, 2),
                         round(dcpu, 2)])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()

    header = ['cgroups', 'scenario', 'refreshes', 'repetitions', 'top_cpu_ms', 'top_wall_ms', 'daemon_cpu_ms']
    bl.print_table(header, rows)
    bl.write_csv(args.out, 'top.csv', header, rows)
    at_1000 = [r[4] for r in rows if r[0] == 1000]
    if at_1000:
        worst = max(at_1000)
        print(f'goal: under 50 ms of CPU per refresh at 1,000 cgroups: worst {worst:.1f} ms — '
              f'{"met" if worst < 50 else "missed"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
