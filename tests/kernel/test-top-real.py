#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl top on the machine's real cgroups, found from mountinfo as
the daemon finds them: a uniquely named cgroup made in the v1 memory
hierarchy and in cgroup2 shows in batch text and --json with the v1 usage
and limits and the cgroup2 PSI (on a hybrid host), its memory.failcnt
delta counts hits of its limit, and the built daemon's status is in the
header. The cgroups are always removed."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import top_test as tt  # noqa: E402

check = pt.check
M = 1 << 20


def main():
    pt.require_root()
    if not os.path.exists(os.path.join(pt.V1_MEMORY_ROOT, 'memory.usage_in_bytes')):
        pt.skip('no cgroup v1 memory hierarchy at ' + pt.V1_MEMORY_ROOT)
    if not os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')):
        pt.skip('no cgroup2 hierarchy at ' + pt.V2_ROOT)

    with pt.real_cgroups(limit='64M') as (name, v1dir, v2dir), pt.Daemon() as d:
        with open(os.path.join(v1dir, 'memory.soft_limit_in_bytes'), 'w') as f:
            f.write('32M')
        child_v1 = os.path.join(v1dir, 'child')
        os.mkdir(child_v1)
        try:
            refreshes = tt.run_json('--iterations', '2', '-d', '0.05', socket=d.socket)
            first = refreshes[0]
            check(first['roots'] == {'v2': pt.V2_ROOT, 'v1_memory': pt.V1_MEMORY_ROOT},
                  'the hierarchies found from mountinfo', first['roots'])
            check(first['daemon']['reachable'] and first['daemon']['clients'] >= 1, 'the daemon is up',
                  first['daemon'])
            row = tt.row(first, name)
            check(row is not None, f'{name} is shown', [c['cgroup'] for c in first['cgroups']])
            check(row['hierarchy'] == 'v1' and row['max'] == 64 * M and row['high'] == 32 * M
                  and isinstance(row['current'], int), 'v1 usage, limit and soft limit', row)
            check('some_avg10' in row and 'full_avg10' in row, 'PSI from the cgroup2 directory of the same name', row)
            check(0 <= row['cpu_some_avg10'] <= 100 and 0 <= row['io_some_avg10'] <= 100,
                  'cpu and io pressure from its cpu.pressure and io.pressure', row)
            for key in ('cpu_psi', 'io_psi'):
                check(0 <= first['system'][key]['some_avg10'] <= 100, f'the system\'s {key}', first['system'])
            check(row['events'] == {'max': 0, 'oom_kill': 0}, 'v1 counters: failcnt and oom_kill', row)
            child = tt.row(first, name + '/child')
            check(child is not None and child['depth'] == row['depth'] + 1 and 'some_avg10' not in child
                  and child['max'] is None, 'a v1-only child: no PSI, no limit of its own', child)

            # Only the subtree asked for, and the text table.
            res = tt.run_top('--batch', '--iterations', '1', name, socket=d.socket)
            check(res.returncode == 0 and res.stderr == '', 'batch on a real subtree exits 0', res.returncode,
                  res.stderr)
            lines = res.stdout.splitlines()
            check(lines[2].startswith('cpu PSI     some avg10 ') and '  io PSI  some avg10 ' in lines[2],
                  'the cpu and io PSI line', lines[2])
            check(lines[3].startswith('daemon ') and 'client' in lines[3], 'the daemon status line', lines[3])
            table = lines[lines.index(next(ln for ln in lines if ln.startswith('CGROUP'))) + 1:]
            check(table[0].split()[0] == name and table[1].split()[0] == 'child' and len(table) == 2,
                  'the subtree as a tree', table)
            check(table[0].split()[1:5] == ['1', table[0].split()[2], '32M', '64M'], 'v1 numbers in the row',
                  table[0])

            # Hitting the limit counts in +MAX: a process that touches more than the limit.
            proc = subprocess.Popen(tt.top_cmd('--json', '-d', '0.1', name, socket=d.socket, wrap=False),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = proc.stdout.readline()
                check(line, 'top printed a refresh', proc.poll())
                hog = pt.run_in_cgroups(['sh', '-c', 'head -c 100000000 /dev/zero | tail > /dev/null'],
                                        v1dir, v2dir)
                hog.wait(timeout=kl.PRESSURE_TIMEOUT)
                seen = None
                for _ in range(int(kl.PRESSURE_TIMEOUT / 0.1)):
                    obj = json.loads(proc.stdout.readline())
                    r = tt.row(obj, name)
                    if r and r['events'].get('max', 0) > 0:
                        seen = r
                        break
                check(seen is not None, 'failcnt delta after hitting the limit', obj)
            finally:
                proc.terminate()
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()
        finally:
            pt.remove_cgroup(child_v1)
    pt.finish()


if __name__ == '__main__':
    main()
