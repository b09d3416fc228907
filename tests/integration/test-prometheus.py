#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real Prometheus scrapes the daemon: the target comes up healthy (so
Prometheus' own parser accepted the exposition) and a pressured_ series
can be queried through its HTTP API, per-cgroup series of a fake tree
([Metrics] Cgroups=) arrive with their exact values, and promtool's
linter accepts the exposition. Needs /usr/bin/prometheus (Debian: apt-get install
prometheus); the whole test is bounded to 60 seconds."""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

PROMETHEUS = '/usr/bin/prometheus'
PROMTOOL = '/usr/bin/promtool'
MAKE_TREE = os.path.join(os.environ['PRESSURED_SOURCE_ROOT'], 'tests', 'make-fake-cgroup-tree.py')
BUDGET = 60.0


fail = pt.fail


def api(web_port, path, params=None):
    url = 'http://127.0.0.1:%d%s' % (web_port, path)
    if params:
        url += '?' + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def main():
    if not os.access(PROMETHEUS, os.X_OK):
        pt.skip('%s is not installed (apt-get install prometheus)' % PROMETHEUS)

    start = time.monotonic()
    deadline = start + BUDGET
    metrics_port, web_port = pt.free_port(), pt.free_port()

    with tempfile.TemporaryDirectory(prefix='pressured-prometheus-') as tmp:
        tree = os.path.join(tmp, 'tree')
        subprocess.run([sys.executable, MAKE_TREE, tree, '--flat', '3', '--psi'], check=True)
        with pt.Daemon(config_text='[Metrics]\nListen=127.0.0.1:%d\nCgroups=/cg*\n' % metrics_port,
                       cgroup_root=tree):
            run(tmp, tree, metrics_port, web_port, start, deadline)
    pt.finish()


def psi_total_seconds(path, stall):
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields[0] == stall:
                usec = int(dict(x.split('=') for x in fields[1:])['total'])
                return float('%d.%06d' % (usec // 10**6, usec % 10**6))
    return None


def check_cgroup_series(web_port, tree, deadline):
    """The per-cgroup families, as Prometheus stored them, equal the files."""
    want = {'/cg%d' % i: psi_total_seconds(os.path.join(tree, 'cg%d' % i, 'memory.pressure'), 'some')
            for i in (1, 2, 3)}
    got = None
    while time.monotonic() < deadline:
        q = api(web_port, '/api/v1/query', {'query': 'pressured_cgroup_pressure_memory_waiting_seconds_total'})
        if q.get('status') == 'success':
            got = {r['metric']['cgroup']: float(r['value'][1]) for r in q['data']['result']}
            if got == want:
                break
        time.sleep(0.25)
    else:
        fail('pressured_cgroup_pressure_memory_waiting_seconds_total through Prometheus: %r, want %r' % (got, want))
    for name in ('pressured_cgroup_pressure_io_stalled_seconds_total', 'pressured_cgroup_memory_oom_kills_total',
                 'pressured_cgroup_memory_current_bytes', 'pressured_cgroup_pressure_cpu_waiting_seconds_total'):
        q = api(web_port, '/api/v1/query', {'query': 'count(%s)' % name})
        if q.get('status') != 'success' or [r['value'][1] for r in q['data']['result']] != ['3']:
            fail('count(%s) through Prometheus: %r, want 3' % (name, q))
    q = api(web_port, '/api/v1/query', {'query': 'pressured_cgroup_series_omitted_cgroups'})
    if [r['value'][1] for r in q['data']['result']] != ['0']:
        fail('pressured_cgroup_series_omitted_cgroups through Prometheus: %r' % q)


def run(tmp, tree, metrics_port, web_port, start, deadline):
    """Prometheus scrapes the daemon at @metrics_port until the checks pass."""
    config = os.path.join(tmp, 'prometheus.yml')
    with open(config, 'w') as f:
        f.write('global:\n'
                '  scrape_interval: 1s\n'
                '  scrape_timeout: 1s\n'
                'scrape_configs:\n'
                '  - job_name: pressured\n'
                '    static_configs:\n'
                "      - targets: ['127.0.0.1:%d']\n" % metrics_port)
    log = open(os.path.join(tmp, 'prometheus.log'), 'w+')
    prom = subprocess.Popen([PROMETHEUS,
                             '--config.file=' + config,
                             '--storage.tsdb.path=' + os.path.join(tmp, 'data'),
                             '--web.listen-address=127.0.0.1:%d' % web_port,
                             '--log.level=warn'],
                            stdout=log, stderr=log, cwd=tmp)
    try:
        # Prometheus answers its API, then the target turns healthy.
        health, last = None, None
        while time.monotonic() < deadline:
            if prom.poll() is not None:
                fail('prometheus exited with %d' % prom.returncode)
            try:
                targets = api(web_port, '/api/v1/targets')['data']['activeTargets']
                last = targets
                health = [t['health'] for t in targets if t['labels'].get('job') == 'pressured']
                if health == ['up']:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.25)
        else:
            fail('target never became healthy: %r' % last)
        up_at = time.monotonic() - start
        print('prometheus target up after %.1fs' % up_at)

        # A pressured_ series and the histogram are queryable.
        result = None
        while time.monotonic() < deadline:
            result = api(web_port, '/api/v1/query', {'query': 'pressured_clients'})
            if result.get('status') == 'success' and result['data']['result']:
                break
            time.sleep(0.25)
        else:
            fail('pressured_clients not queryable: %r' % result)
        sample = result['data']['result'][0]
        if sample['metric'].get('job') != 'pressured' or float(sample['value'][1]) < 0:
            fail('unexpected pressured_clients sample %r' % sample)

        q = api(web_port, '/api/v1/query',
                {'query': 'pressured_delivery_latency_seconds_bucket{le="+Inf"}'})
        if q.get('status') != 'success' or not q['data']['result']:
            fail('histogram bucket not queryable: %r' % q)
        check_cgroup_series(web_port, tree, deadline)
        up = api(web_port, '/api/v1/query', {'query': 'up{job="pressured"}'})
        if [r['value'][1] for r in up['data']['result']] != ['1']:
            fail('up{job="pressured"} is %r' % up)

        # promtool's linter (naming and type conventions), shipped alongside.
        if os.access(PROMTOOL, os.X_OK):
            with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % metrics_port, timeout=5) as r:
                text = r.read()
            if b'pressured_cgroup_pressure_cpu_stalled_seconds_total{cgroup="/cg1"}' not in text:
                fail('the exposition linted lacks the per-cgroup series')
            lint = subprocess.run([PROMTOOL, 'check', 'metrics'], input=text,
                                  capture_output=True, timeout=30)
            if lint.returncode != 0:
                fail('promtool check metrics:\n%s%s' % (lint.stdout.decode(), lint.stderr.decode()))
    except SystemExit:
        log.seek(0)
        sys.stderr.write('--- prometheus log ---\n' + log.read())
        raise
    finally:
        prom.terminate()
        try:
            prom.wait(10)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        log.close()


if __name__ == '__main__':
    main()
    pt.finish()
