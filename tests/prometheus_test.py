# SPDX-License-Identifier: MIT
"""Shared helpers for the tests that use Prometheus and the fleet files.

A real Prometheus server (Debian's /usr/bin/prometheus) on a free port,
scraping the targets it is given and optionally loading rule files, with
its HTTP API; and the queries of the shipped Grafana dashboard
(conf/grafana/pressured.json) with its template variables substituted.
Standard library only."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pressured_test as pt

PROMETHEUS = '/usr/bin/prometheus'
PROMTOOL = '/usr/bin/promtool'
SOURCE_ROOT = os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..'))
RULES = os.path.join(SOURCE_ROOT, 'conf', 'prometheus', 'pressured.rules.yml')
DASHBOARD = os.path.join(SOURCE_ROOT, 'conf', 'grafana', 'pressured.json')

# Grafana's own variables a dashboard may use without defining them.
GRAFANA_BUILTINS = ('__rate_interval', '__interval', '__range', '__range_s', '__interval_ms')


class Prometheus:
    """A Prometheus server scraping @targets ({job: ['host:port', ...]})
    every @interval (a Prometheus duration), evaluating @rule_files on the
    same interval; stopped, and its data removed, on exit. On an exception
    inside the with block its log is written to stderr."""

    def __init__(self, targets, interval='1s', rule_files=()):
        self.targets = targets
        self.interval = interval
        self.rule_files = list(rule_files)
        self.port = pt.free_port()
        self.proc = None

    def config_text(self):
        lines = ['global:',
                 f'  scrape_interval: {self.interval}',
                 f'  scrape_timeout: {self.interval}',
                 f'  evaluation_interval: {self.interval}']
        if self.rule_files:
            lines.append('rule_files:')
            lines += [f'  - {json.dumps(f)}' for f in self.rule_files]
        lines.append('scrape_configs:')
        for job, targets in self.targets.items():
            lines += [f'  - job_name: {json.dumps(job)}',
                      '    static_configs:',
                      f'      - targets: {json.dumps(list(targets))}']
        return '\n'.join(lines) + '\n'

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix='pressured-prometheus-')
        config = os.path.join(self.tmp.name, 'prometheus.yml')
        with open(config, 'w') as f:
            f.write(self.config_text())
        self.log = open(os.path.join(self.tmp.name, 'prometheus.log'), 'w+')
        self.proc = subprocess.Popen([PROMETHEUS,
                                      '--config.file=' + config,
                                      '--storage.tsdb.path=' + os.path.join(self.tmp.name, 'data'),
                                      '--web.listen-address=127.0.0.1:%d' % self.port,
                                      '--log.level=warn'],
                                     stdout=self.log, stderr=self.log, cwd=self.tmp.name)
        return self

    def __exit__(self, *exc):
        try:
            if exc[0] is not None:
                self.log.seek(0)
                sys.stderr.write('--- prometheus log ---\n' + self.log.read())
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            self.log.close()
            self.tmp.cleanup()

    def api(self, path, params=None):
        """The decoded JSON answer of GET @path?@params; an HTTP error's JSON
        body (Prometheus explains a bad query there) is returned too."""
        url = 'http://127.0.0.1:%d%s' % (self.port, path)
        if params:
            url += '?' + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return json.loads(body)
            except ValueError:
                return {'status': 'error', 'error': f'HTTP {e.code}: {body[:200]!r}'}

    def query(self, expr):
        return self.api('/api/v1/query', {'query': expr})

    def targets_health(self, job):
        """[health] of the active targets of @job, or None while the API is not up."""
        if self.proc.poll() is not None:
            raise RuntimeError(f'prometheus exited with {self.proc.returncode}')
        try:
            targets = self.api('/api/v1/targets')['data']['activeTargets']
        except (OSError, ValueError, KeyError):
            return None
        return [t['health'] for t in targets if t['labels'].get('job') == job]

    def wait_up(self, job, deadline):
        """Wait until every target of @job is healthy, until time.monotonic() @deadline."""
        last = None
        while time.monotonic() < deadline:
            last = self.targets_health(job)
            if last and all(h == 'up' for h in last):
                return
            time.sleep(0.25)
        raise AssertionError(f'targets of job {job} never became healthy: {last!r}')


def _walk_panels(panels):
    for p in panels:
        yield p
        yield from _walk_panels(p.get('panels', []))


def load_dashboard(path=DASHBOARD):
    with open(path) as f:
        return json.load(f)


def dashboard_panels(dashboard):
    """Every panel, those inside rows included."""
    return list(_walk_panels(dashboard.get('panels', [])))


def dashboard_queries(dashboard):
    """[(where, query, kind)] of every PromQL text in the dashboard: each
    panel target's expr, each Prometheus annotation's expr and each query
    variable's query (kind 'expr' or 'variable'), unsubstituted."""
    out = []
    for v in dashboard.get('templating', {}).get('list', []):
        if v.get('type') == 'query':
            q = v.get('query')
            if isinstance(q, dict):
                q = q.get('query')
            out.append((f'variable {v.get("name")}', q, 'variable'))
    for a in dashboard.get('annotations', {}).get('list', []):
        if 'expr' in a:
            out.append((f'annotation {a.get("name")}', a['expr'], 'expr'))
    for p in dashboard_panels(dashboard):
        for t in p.get('targets', []):
            out.append((f'panel "{p.get("title")}" target {t.get("refId")}', t.get('expr'), 'expr'))
    return out


VARIABLE = re.compile(r'\$(?:\{(\w+)(?::\w+)?\}|(\w+))')


def variables_used(query):
    return {a or b for a, b in VARIABLE.findall(query)}


def substitute(query, values):
    """@query with each $name and ${name} replaced by values[name]."""
    def repl(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            raise KeyError(f'no value for ${name} in {query!r}')
        return values[name]
    return VARIABLE.sub(repl, query)


def variable_to_promql(query):
    """The PromQL that answers a label_values(SELECTOR, LABEL) variable
    query: one series per value of LABEL."""
    m = re.fullmatch(r'\s*label_values\((.*),\s*(\w+)\s*\)\s*', query, re.S)
    if not m:
        raise ValueError(f'not a label_values() query: {query!r}')
    return f'count by ({m.group(2)}) ({m.group(1)})'
