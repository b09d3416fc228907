#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shipped Grafana dashboard (conf/grafana/pressured.json) is a
dashboard Grafana can import and that shows what it promises:

- Grafana's dashboard JSON model with schemaVersion 36 or later, a uid, a
  "datasource" variable of type datasource (Prometheus) that every panel,
  target, annotation and query variable uses, and "job", "instance" and
  "cgroup" query variables from label_values();
- panels with unique ids, inside the 24-column grid and not overlapping,
  each target with a unique refId and an expr, every variable an expr uses
  defined (or one of Grafana's own);
- every recording rule a query uses defined in
  conf/prometheus/pressured.rules.yml;
- the panels the documentation lists: stall of memory, IO and CPU per
  cgroup, top cgroups (topk), OOM kills, memory.current, and the daemon's
  up, events read/delivered/dropped, clients and registrations.

That each query returns data from a real daemon is test-fleet's part."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import prometheus_test as prom  # noqa: E402

DATASOURCE = {'type': 'prometheus', 'uid': '${datasource}'}

# What must be drawn somewhere: a regular expression over the dashboard's
# exprs, and what it stands for.
REQUIRED = [
    (r'pressured_cgroup_pressure_memory_stalled_seconds', 'memory stall per cgroup'),
    (r'pressured_cgroup_pressure_memory_waiting_seconds', 'memory waiting per cgroup'),
    (r'pressured_cgroup_pressure_io_stalled_seconds', 'IO stall per cgroup'),
    (r'pressured_cgroup_pressure_io_waiting_seconds', 'IO waiting per cgroup'),
    (r'pressured_cgroup_pressure_cpu_waiting_seconds', 'CPU stall per cgroup'),
    (r'topk\(\d+, instance_cgroup:pressured_cgroup_pressure_memory_', 'top cgroups by memory stall'),
    (r'topk\(\d+, instance_cgroup:pressured_cgroup_pressure_io_', 'top cgroups by IO stall'),
    (r'topk\(\d+, instance_cgroup:pressured_cgroup_pressure_cpu_', 'top cgroups by CPU stall'),
    (r'pressured_cgroup_memory_oom_kills_total', 'OOM kills'),
    (r'pressured_cgroup_memory_current_bytes', 'memory.current'),
    (r'\bup\{', 'the daemon up'),
    (r'pressured_events_read_total', 'events read'),
    (r'pressured_events_delivered_total', 'events delivered'),
    (r'pressured_events_dropped_total', 'events dropped'),
    (r'pressured_clients\{', 'clients'),
    (r'pressured_registrations\{', 'registrations'),
]

problems = []


def problem(msg):
    problems.append(msg)


def check_variables(d):
    names = {}
    for v in d.get('templating', {}).get('list', []):
        names[v.get('name')] = v
    ds = names.get('datasource')
    if not ds or ds.get('type') != 'datasource' or ds.get('query') != 'prometheus':
        problem(f'no "datasource" variable of type datasource for prometheus: {ds!r}')
    for name in ('job', 'instance', 'cgroup'):
        v = names.get(name)
        if not v or v.get('type') != 'query':
            problem(f'no query variable "{name}"')
            continue
        q = v.get('query')
        q = q.get('query') if isinstance(q, dict) else q
        if not re.fullmatch(rf'label_values\(.*, {name}\)', q or ''):
            problem(f'variable {name}: not label_values(..., {name}): {q!r}')
        if v.get('datasource') != DATASOURCE:
            problem(f'variable {name}: datasource is not ${{datasource}}: {v.get("datasource")!r}')
    return set(names)


def check_panels(d, defined):
    ids = set()
    cells = {}
    for p in prom.dashboard_panels(d):
        where = f'panel {p.get("id")} "{p.get("title")}"'
        if p.get('id') in ids or not isinstance(p.get('id'), int):
            problem(f'{where}: id missing or not unique')
        ids.add(p.get('id'))
        g = p.get('gridPos', {})
        if not all(isinstance(g.get(k), int) for k in 'xywh') or g['x'] < 0 or g['x'] + g['w'] > 24:
            problem(f'{where}: gridPos outside the 24-column grid: {g!r}')
            continue
        for x in range(g['x'], g['x'] + g['w']):
            for y in range(g['y'], g['y'] + g['h']):
                if (x, y) in cells:
                    problem(f'{where} overlaps {cells[(x, y)]}')
                    break
                cells[(x, y)] = where
            else:
                continue
            break
        if p.get('type') == 'row':
            continue
        if not p.get('title') or not p.get('description'):
            problem(f'{where}: no title or no description')
        if p.get('datasource') != DATASOURCE:
            problem(f'{where}: datasource is not ${{datasource}}')
        targets = p.get('targets', [])
        if not targets:
            problem(f'{where}: no targets')
        refs = [t.get('refId') for t in targets]
        if len(set(refs)) != len(refs) or None in refs:
            problem(f'{where}: refIds missing or repeated: {refs!r}')
        for t in targets:
            if t.get('datasource') != DATASOURCE or not t.get('expr'):
                problem(f'{where} target {t.get("refId")}: no expr or datasource not ${{datasource}}')
    for a in d.get('annotations', {}).get('list', []):
        if 'expr' in a and a.get('datasource') != DATASOURCE:
            problem(f'annotation {a.get("name")}: datasource is not ${{datasource}}')
    known = defined | set(prom.GRAFANA_BUILTINS)
    for where, q, _ in prom.dashboard_queries(d):
        for name in prom.variables_used(q or '') - known:
            problem(f'{where}: uses ${name}, which is not defined')


def check_contents(d):
    with open(prom.RULES) as f:
        records = set(re.findall(r'^\s*- record: (\S+)\s*$', f.read(), re.M))
    exprs = [q for _, q, kind in prom.dashboard_queries(d) if kind == 'expr' and q]
    for e in exprs:
        for name in re.findall(r'[a-z_]+:[a-z0-9_]+:[a-z0-9_]+', e):
            if name not in records:
                problem(f'{e!r}: recording rule {name} is not in pressured.rules.yml')
    for pattern, what in REQUIRED:
        if not any(re.search(pattern, e) for e in exprs):
            problem(f'no panel shows {what} (/{pattern}/)')


def main():
    d = prom.load_dashboard()
    if not isinstance(d.get('schemaVersion'), int) or d['schemaVersion'] < 36:
        problem(f'schemaVersion {d.get("schemaVersion")!r} is older than 36')
    if not d.get('uid') or not d.get('title') or d.get('id') is not None:
        problem('the dashboard needs a uid and a title, and no id (Grafana assigns it on import)')
    defined = check_variables(d)
    check_panels(d, defined)
    check_contents(d)
    for p in problems:
        print('FAIL: ' + p, file=sys.stderr)
    if problems:
        prom.pt.fail(f'{len(problems)} problem(s) in the dashboard')
    n = len([q for q in prom.dashboard_queries(d) if q[2] == 'expr'])
    print(f'{len(prom.dashboard_panels(d))} panels, {n} queries', flush=True)
    prom.pt.finish()


if __name__ == '__main__':
    main()
