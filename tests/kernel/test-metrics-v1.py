#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""/metrics on a hybrid host: the per-cgroup series of a cgroup that lives in
the cgroup v1 memory hierarchy ([Metrics] Cgroups=) under the names
cgroup2 would give them, from the real hierarchy.

A uniquely named cgroup P is made in both hierarchies (as systemd makes its
units on a hybrid host, cgroup2 without the memory controller), and P/hog
in v1 only, with a 32M limit. /metrics reports P with its cgroup2 PSI
series and pressured_cgroup_memory_current_bytes from v1's
memory.usage_in_bytes, and P/hog, which cgroup2 does not have, with its
memory series; both with pressured_cgroup_memory_oom_kills_total 0. A
process that grows past P/hog's limit is killed by the kernel: P/hog's
count and P's (v1 counts a kill only in the victim's cgroup; the series
adds up the subtree as memory.events does) say the kills memory.oom_control
counted. All cgroups are removed afterwards. Skipped without root, a v1
memory hierarchy with memory.oom_control's oom_kill (Linux 4.13), or where
cgroup2 has the memory controller (its own files report there:
test-metrics-cgroups)."""
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    'test_metrics', os.path.join(pt.SOURCE_ROOT, 'tests', 'integration', 'test-metrics.py'))
tm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tm)

CURRENT = 'pressured_cgroup_memory_current_bytes'
KILLS = 'pressured_cgroup_memory_oom_kills_total'
PSI_MEMORY = 'pressured_cgroup_pressure_memory_waiting_seconds_total'


def series(port, cgroup):
    """{family: value} of @cgroup's per-cgroup series in one scrape."""
    code, _, body = tm.get(port, '/metrics')
    pt.check(code == 200, 'GET /metrics', code)
    _, samples = tm.parse_exposition(body)
    return {name: v for (name, labels), v in samples.items() if labels == (('cgroup', cgroup),)}


def check_memory(port, cgroup, v1dir, kills, with_psi):
    """One scrape's series of @cgroup against its v1 files, read around the scrape."""
    before = kl.v1_usage(v1dir)
    got = series(port, cgroup)
    after = kl.v1_usage(v1dir)
    pt.check(CURRENT in got and min(before, after) <= got[CURRENT] <= max(before, after),
             f'{cgroup}: {CURRENT} is memory.usage_in_bytes of the v1 cgroup', got, before, after)
    pt.check(got.get(KILLS) == kills, f'{cgroup}: {KILLS} counts the kills of memory.oom_control', got, kills)
    pt.check((PSI_MEMORY in got) == with_psi, f'{cgroup}: PSI series {"from cgroup2" if with_psi else "none"}',
             got)
    return got


def main():
    with kl.hybrid_cgroup('test-metrics-cgroups') as (name, v1dir, v2dir, (hogdir,)):
        psi = os.path.exists(os.path.join(v2dir, 'memory.pressure'))
        port = pt.free_port()
        config = f'[Metrics]\nListen=127.0.0.1:{port}\nCgroups={name} {name}/*\n'
        with pt.Daemon(config_text=config):
            tm.wait_listening(port)
            check_memory(port, name, v1dir, 0, with_psi=psi)
            check_memory(port, name + '/hog', hogdir, 0, with_psi=False)
            kills = kl.oom_kill_hog(hogdir, v1dir)
            got = check_memory(port, name + '/hog', hogdir, kills, with_psi=False)
            check_memory(port, name, v1dir, kills, with_psi=psi)
            print(f'{name}/hog: {got}', flush=True)
    pt.finish()


if __name__ == '__main__':
    main()
