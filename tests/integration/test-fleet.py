#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fleet files against a real Prometheus that scrapes the built daemon.

The daemon exports a fake cgroup tree ([Metrics] Cgroups=/fleet.slice/*,
MaxCgroups=2 over three services, so one is left out) whose PSI totals
grow 30 s per second in /fleet.slice/a.service, so that the 5-minute rates
pass the alert thresholds within seconds, and whose oom_kill goes from 0
to 1 while Prometheus watches. A subscriber that does not read gets events
dropped, and a second target of the job does not answer. Prometheus
scrapes every second and loads conf/prometheus/pressured.rules.yml.

Then: every rule of the file is loaded and evaluates without error
(/api/v1/rules), each alert is in the state its series call for (firing,
pending or inactive, for the right cgroup or instance), each rule's expr
answers through /api/v1/query (non-empty where the data calls for it),
and every query of conf/grafana/pressured.json (panels, annotations,
variables; the variables substituted both as "All" and as one value)
answers successfully with a non-empty result. Needs /usr/bin/prometheus
(Debian: apt-get install prometheus)."""

import json
import os
import re
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
import prometheus_test as prom  # noqa: E402

BUDGET = pt.scaled(80.0)
SLICE = '/fleet.slice'
# Stall seconds per second of each service: (memory some, memory full,
# io some, io full, cpu some, cpu full). c.service is left out by
# MaxCgroups=2 (the walk takes siblings in name order).
SPEEDS = {
    'a.service': (40.0, 30.0, 2.0, 1.0, 3.0, 0.5),
    'b.service': (0.01, 0.005, 0.01, 0.005, 0.01, 0.005),
    'c.service': (40.0, 30.0, 2.0, 1.0, 3.0, 0.5),
}
A = SLICE + '/a.service'
B = SLICE + '/b.service'

# What each alert must show here: (state, label, values). None: inactive.
ALERTS = {
    'PressuredCgroupMemoryStall': ('pending', 'cgroup', {A}),
    'PressuredCgroupMemoryStallCritical': ('pending', 'cgroup', {A}),
    'PressuredCgroupOOMKill': ('firing', 'cgroup', {A}),
    'PressuredEventsDropped': ('firing', 'job', {'pressured'}),
    'PressuredProxyEventsDropped': None,
    'PressuredCgroupSeriesOmitted': ('pending', 'job', {'pressured'}),
    'PressuredDown': ('pending', 'instance', set()),  # the dead target, filled in below
    'PressuredAbsent': None,
}


class FakeTree:
    """The fake cgroup2 tree, its PSI totals advanced by a thread."""

    def __init__(self, root):
        self.root = root
        self.totals = {name: [0] * 6 for name in SPEEDS}
        self.kills = {name: 0 for name in SPEEDS}
        pt.make_fake_tree(root, {f'{SLICE}/{name}': dict(current=(i + 1) << 30)
                                 for i, name in enumerate(SPEEDS)})
        self.write_all()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def path(self, name, f):
        return os.path.join(self.root, SLICE.lstrip('/'), name, f)

    def write(self, name, f, text):
        """Replace a file whole, as the kernel's files change: the daemon
        reads it at any moment and must never see it half written."""
        path = self.path(name, f)
        with open(path + '.new', 'w') as out:
            out.write(text)
        os.replace(path + '.new', path)

    def write_all(self):
        for name, t in self.totals.items():
            for i, res in enumerate(('memory', 'io', 'cpu')):
                self.write(name, f'{res}.pressure',
                           ''.join(f'{line} avg10=0.00 avg60=0.00 avg300=0.00 total={t[2 * i + k]}\n'
                                   for k, line in enumerate(('some', 'full'))))
            k = self.kills[name]
            self.write(name, 'memory.events', f'low 0\nhigh 0\nmax 0\noom {k}\noom_kill {k}\noom_group_kill 0\n')

    def run(self):
        last = time.monotonic()
        while not self.stop.wait(0.1):
            now = time.monotonic()
            for name, speeds in SPEEDS.items():
                for i, s in enumerate(speeds):
                    self.totals[name][i] += int(s * (now - last) * 1e6)
            last = now
            self.write_all()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def drop_events(d):
    """A subscriber that does not read, and injected events until some are
    dropped for it. Returns the subscriber (keep it open)."""
    slow = pt.Varlink(d.socket)
    slow.subscribe(level='low')
    v = pt.Varlink(d.socket, timeout=pt.scaled(10))
    call = json.dumps({'method': 'io.pressured.Inject', 'parameters': {'level': 'low'}}).encode() + b'\0'
    sent = 0
    while d.status()['counters']['events_dropped'] == 0:
        pt.check(sent < 20000, 'events dropped for a subscriber that does not read', sent)
        v.send_raw(call * 50)
        for _ in range(50):
            pt.check('delivered' in v.recv(timeout=pt.scaled(10)).get('parameters', {}), 'Inject answered')
        sent += 50
    v.close()
    print(f'{sent} events injected, {d.status()["counters"]["events_dropped"]} dropped', flush=True)
    return slow


def wait_target_up(p, instance, deadline):
    last = None
    while time.monotonic() < deadline:
        p.targets_health('pressured')  # raises if Prometheus exited
        try:
            last = p.api('/api/v1/targets')['data']['activeTargets']
            if any(t['labels'].get('instance') == instance and t['health'] == 'up' for t in last):
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise AssertionError(f'target {instance} never became healthy: {last!r}')


def rule_names():
    with open(prom.RULES) as f:
        text = f.read()
    return (re.findall(r'^\s*- record: (\S+)\s*$', text, re.M),
            re.findall(r'^\s*- alert: (\S+)\s*$', text, re.M))


def loaded_rules(p):
    """{name: rule} of /api/v1/rules once every rule of the file was loaded
    and evaluated at least once, else None."""
    records, alerts = rule_names()
    r = p.api('/api/v1/rules')
    pt.check(r.get('status') == 'success', '/api/v1/rules answers', r)
    rules = {}
    for g in r['data']['groups']:
        pt.check(g['file'] == prom.RULES, 'rules come from pressured.rules.yml', g['file'])
        for rule in g['rules']:
            pt.check(rule['name'] not in rules, 'rule names are unique', rule['name'])
            rules[rule['name']] = rule
    pt.check_eq(sorted(rules), sorted(records + alerts), 'rules loaded')
    for name in records:
        pt.check(rules[name]['type'] == 'recording', f'{name} is a recording rule', rules[name])
    for name in alerts:
        pt.check(rules[name]['type'] == 'alerting', f'{name} is an alert', rules[name])
    for rule in rules.values():
        pt.check(not rule.get('lastError'), f'rule {rule["name"]} evaluates without error', rule)
    if any(rule['health'] != 'ok' for rule in rules.values()):
        return None
    return rules


def answer(p, query):
    """(ok, result, raw answer) of an instant query."""
    q = p.query(query)
    if q.get('status') != 'success':
        return False, None, q
    return True, q['data']['result'], q


def grafana_regex(value):
    """@value as Grafana puts one selected value of a multi-value variable
    into a PromQL =~ string: regex-escaped, the backslashes doubled."""
    return re.escape(value).replace('\\', '\\\\')


def dashboard_checks(live_instance):
    """[(what, promql)] of every dashboard query, substituted as "All" and
    as the one live instance and cgroup a.service."""
    d = prom.load_dashboard()
    builtins = {'__rate_interval': '1m', '__interval': '15s', '__range': '1h',
                '__range_s': '3600', '__interval_ms': '15000'}
    every = dict(builtins, job='pressured', instance='.*', cgroup='.*')
    one = dict(builtins, job='pressured', instance=grafana_regex(live_instance), cgroup=grafana_regex(A))
    out = []
    for where, query, kind in prom.dashboard_queries(d):
        if kind == 'variable':
            out.append((where, prom.variable_to_promql(prom.substitute(query, every))))
            continue
        out.append((where + ' (all)', prom.substitute(query, every)))
        if prom.variables_used(query) & {'instance', 'cgroup'}:
            out.append((where + ' (one)', prom.substitute(query, one)))
    return out


def check_variables(p, live_instance):
    """The variables offer the live instance and the exported cgroups."""
    d = prom.load_dashboard()
    every = {'job': 'pressured', 'instance': '.*'}
    want = {'job': {'pressured'}, 'instance': {live_instance}, 'cgroup': {A, B}}
    for where, query, kind in prom.dashboard_queries(d):
        if kind != 'variable':
            continue
        name = where.split()[-1]
        ok, result, raw = answer(p, prom.variable_to_promql(prom.substitute(query, every)))
        pt.check(ok, f'{where} answers', raw)
        pt.check_eq({r['metric'].get(name) for r in result}, want[name], f'values of {where}')


def check_alerts(rules, dead_instance):
    """Each alert is in the state the data calls for."""
    for name, want in ALERTS.items():
        rule = rules[name]
        if want is None:
            pt.check(rule['state'] == 'inactive' and not rule['alerts'], f'{name} is inactive', rule)
            continue
        state, label, values = want
        if name == 'PressuredDown':
            values = {dead_instance}
        pt.check(rule['state'] == state, f'{name} is {state}', rule)
        pt.check_eq({a['labels'].get(label) for a in rule['alerts']}, values, f'{label} of {name}')
        for a in rule['alerts']:
            pt.check(a['annotations'].get('summary') and a['annotations'].get('description'),
                     f'{name} has its summary and description', a)
            pt.check('{{' not in json.dumps(a['annotations']), f'{name}: templates expanded', a)
            if name.startswith('PressuredCgroupMemoryStall'):
                # The description's query of memory.current found the series.
                pt.check('It uses 1GiB (memory.current).' in a['annotations']['description'],
                         f'{name} tells the memory the cgroup uses', a)


def remaining(deadline):
    return max(1.0, deadline - time.monotonic())


def wait_for_data(p, checks, deadline):
    """Poll until every (what, query) of @checks answers with a non-empty
    result; fail naming those that never did."""
    pending, last = list(checks), {}
    while pending:
        still = []
        for what, query in pending:
            ok, result, raw = answer(p, query)
            if not ok or not result:
                still.append((what, query))
                last[what] = raw
        pending = still
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for what, query in pending:
        print(f'FAIL: {what}: {query}\n  {last[what]!r}', file=sys.stderr)
    pt.check(not pending, 'every query has data', [w for w, _ in pending])


def alerts_settled(p, dead):
    rules = loaded_rules(p)
    if rules is None:
        return None
    try:
        check_alerts(rules, dead)
    except AssertionError:
        return None
    return rules


def main():
    if not os.access(prom.PROMETHEUS, os.X_OK):
        pt.skip(f'{prom.PROMETHEUS} is not installed (apt-get install prometheus)')
    deadline = time.monotonic() + BUDGET
    metrics_port, dead_port = pt.free_port(), pt.free_port()
    live = f'127.0.0.1:{metrics_port}'
    dead = f'127.0.0.1:{dead_port}'
    config = f'[Metrics]\nListen={live}\nCgroups={SLICE}/*\nMaxCgroups=2\n'
    records, alerts = rule_names()
    pt.check_eq(sorted(ALERTS), sorted(alerts), 'the alerts this test expects states of')

    with tempfile.TemporaryDirectory(prefix='pressured-fleet-') as tmp:
        tree_dir = os.path.join(tmp, 'tree')
        with FakeTree(tree_dir) as tree, \
                pt.Daemon(config_text=config, cgroup_root=tree_dir) as d, \
                prom.Prometheus({'pressured': [live, dead]}, rule_files=[prom.RULES]) as p:
            wait_target_up(p, live, deadline)
            slow = drop_events(d)
            # A kill after Prometheus has seen the counter at 0.
            pt.wait_for(lambda: answer(p, f'pressured_cgroup_memory_oom_kills_total{{cgroup="{A}"}}')[1],
                        timeout=remaining(deadline), interval=0.25, what='the kill counter at 0')
            tree.kills['a.service'] = 1

            # Every rule loaded and evaluated once.
            rules = pt.wait_for(lambda: loaded_rules(p), timeout=remaining(deadline),
                                interval=0.25, what='every rule evaluated')
            checks = [(f'recording rule {n}', n) for n in records]
            checks += [(f'expr of recording rule {n}', rules[n]['query']) for n in records]
            checks += [('dashboard ' + w, q) for w, q in dashboard_checks(live)]
            wait_for_data(p, checks, deadline)
            print(f'{len(checks)} queries answered with data: {2 * len(records)} of the recording rules, '
                  f'{len(checks) - 2 * len(records)} of the dashboard', flush=True)

            # Each alert as the data calls for.
            try:
                rules = pt.wait_for(lambda: alerts_settled(p, dead), timeout=remaining(deadline),
                                    interval=0.25, what='the alerts in their states')
            except TimeoutError:
                check_alerts(loaded_rules(p), dead)  # says which one is wrong
                raise
            for name in alerts:
                ok, result, raw = answer(p, rules[name]['query'])
                pt.check(ok, f'the expr of {name} answers', raw)
                pt.check(bool(result) == (ALERTS[name] is not None), f'the expr of {name} has data', raw)
            check_variables(p, live)
            print(f'{len(records) + len(alerts)} rules loaded and evaluated; alerts: '
                  + ', '.join(f'{n} {rules[n]["state"]}' for n in alerts), flush=True)
            slow.close()
    pt.finish()


if __name__ == '__main__':
    main()
