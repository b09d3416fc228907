#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""systemd-report on a hybrid host: a cgroup that lives in the cgroup v1
memory hierarchy ([Metrics] Cgroups=) has, in systemd-report 262's
`metrics`, the figures /metrics gives it (test-metrics-v1), under the
families cgroup2's would have, from the real hierarchy.

A uniquely named cgroup P is made in both hierarchies (as systemd makes its
units on a hybrid host, cgroup2 without the memory controller), and P/hog
in v1 only, with a 32M limit. systemd-report lists P with its cgroup2 PSI
and io.pressured.Memory.CurrentBytes from v1's memory.usage_in_bytes, and
P/hog, which cgroup2 does not have, with its memory figures and its
headroom below the limit; both with io.pressured.Memory.Events
type=oom_kill 0 and no effective protection (v1 has none). After a
process that grows past P/hog's limit is killed by the kernel, P/hog's
count and P's (v1 counts a kill only in the victim's cgroup; the metric
adds up the subtree as memory.events does) say the kills
memory.oom_control counted. Last, with three more v1-only children of P,
the least [Report] MaxMetrics= that holds P keeps whole cgroups in walk
order and counts the rest in CgroupsOmitted. All cgroups are removed
afterwards. Skipped without root, sid's systemd-report, a v1
memory hierarchy with memory.oom_control's oom_kill (Linux 4.13), or where
cgroup2 has the memory controller (its own files report there:
test-report)."""
import importlib.util
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402


def _load(name, *path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(pt.SOURCE_ROOT, 'tests', *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tr = _load('test_report', 'integration', 'test-report.py')
CURRENT = 'io.pressured.Memory.CurrentBytes'
EVENTS = 'io.pressured.Memory.Events'
HEADROOM = 'io.pressured.Headroom.Bytes'
OOM_KILL = json.dumps({'type': 'oom_kill'})
LIMIT = 32 << 20


def report(sid, runtime):
    """Every metric systemd-report 262 lists, by (name, object, fields)."""
    r = tr.systemd_report(sid, runtime, '--json=short', 'metrics')
    pt.check_eq(r.returncode, 0, 'systemd-report metrics: ' + r.stderr)
    return tr.by_key(tr.json_lines(r.stdout))


def of(metrics, cgroup):
    """{(name, fields): value} of @cgroup's metrics."""
    return {(k[0], k[2]): v for k, v in metrics.items() if k[1] == cgroup}


def check_memory(sid, runtime, cgroup, v1dir, kills, with_psi, limit=None):
    """One systemd-report metrics of @cgroup against its v1 files, read around it."""
    before = kl.v1_usage(v1dir)
    got = of(report(sid, runtime), cgroup)
    after = kl.v1_usage(v1dir)
    lo, hi = min(before, after), max(before, after)
    pt.check(lo <= got.get((CURRENT, 'null'), -1) <= hi,
             f'{cgroup}: {CURRENT} is memory.usage_in_bytes of the v1 cgroup', got, before, after)
    pt.check_eq(got.get((EVENTS, OOM_KILL)), kills, f'{cgroup}: {EVENTS} oom_kill counts memory.oom_control\'s')
    pt.check_eq(sorted(t for n, t in got if n == EVENTS), [OOM_KILL], f'{cgroup}: oom_kill is all v1 has of the events')
    pt.check(not any(n.startswith('io.pressured.Protection.') for n, _ in got),
             f'{cgroup}: no effective protection in v1', got)
    pt.check_eq(any(n.startswith('io.pressured.Pressure.') for n, _ in got), with_psi,
                f'{cgroup}: PSI {"from cgroup2" if with_psi else "none"}')
    if limit is not None:
        pt.check(limit - hi <= got.get((HEADROOM, 'null'), -1) <= limit - lo,
                 f'{cgroup}: {HEADROOM} is the room below its v1 limit', got, limit, before, after)
    return got


def check_cut(d, sid, runtime, cgroups):
    """The least MaxMetrics= that holds the daemon's own and P: whole cgroups in walk order (@cgroups, P first),
    the v1 ones among them, the rest cut and counted."""
    everything = report(sid, runtime)
    own = sum(1 for k in everything if k[1] is None)  # CgroupsOmitted included
    need = {cg: sum(1 for k in everything if k[1] == cg) for cg in cgroups}
    max_metrics = max(64, own + need[cgroups[0]])
    left, want = max_metrics - own, []
    for cg in cgroups:
        if need[cg] > left:
            break
        left -= need[cg]
        want.append(cg)
    pt.check(len(want) < len(cgroups), 'MaxMetrics=%d cuts %r' % (max_metrics, need))
    d.write_config(tr.report_config(d.report, f'{cgroups[0]} {cgroups[0]}/*', f'MaxMetrics={max_metrics}\n'))
    pt.check_eq(pt.run_ctl('reload', socket=d.socket).returncode, 0, 'reload')
    got = report(sid, runtime)
    pt.check_eq(sorted({k[1] for k in got if k[1] is not None}), sorted(want),
                f'MaxMetrics={max_metrics}: the cgroups that fit, in walk order')
    pt.check_eq(got[(tr.OMITTED, None, 'null')], len(cgroups) - len(want), 'the rest counted in CgroupsOmitted')
    pt.check(len(got) <= max_metrics, 'at most MaxMetrics= metrics', len(got))


def main():
    with kl.hybrid_cgroup('test-report', ('hog', 'v1-a', 'v1-b', 'v1-c')) as (name, v1dir, v2dir, children):
        sid = pt.systemd_sid()
        hogdir = children[0]
        psi = os.path.exists(os.path.join(v2dir, 'memory.pressure'))
        with tempfile.TemporaryDirectory(prefix='pressured-report-v1-') as tmp, \
                tr.report_daemon(f'{name} {name}/*') as d:
            runtime = tr.report_runtime(tmp, d.report)
            check_memory(sid, runtime, name, v1dir, 0, with_psi=psi)
            check_memory(sid, runtime, name + '/hog', hogdir, 0, with_psi=False, limit=LIMIT)
            kills = kl.oom_kill_hog(hogdir, v1dir)
            got = check_memory(sid, runtime, name + '/hog', hogdir, kills, with_psi=False, limit=LIMIT)
            check_memory(sid, runtime, name, v1dir, kills, with_psi=psi)
            print(f'{name}/hog: {got}', flush=True)
            check_cut(d, sid, runtime, [name] + [name + '/' + os.path.basename(c) for c in children])
    pt.finish()


if __name__ == '__main__':
    main()
