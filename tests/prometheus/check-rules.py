#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shipped Prometheus rules (conf/prometheus/pressured.rules.yml).

  check-rules.py check   promtool check rules, then the file's own
                         conventions: recording rules named
                         level:metric:operations (no _total after a rate),
                         every alert with a severity label and a summary and
                         a description, and the unit tests covering every
                         recording rule and every alert both firing and not
                         firing.
  check-rules.py test    promtool test rules on
                         tests/prometheus/pressured.rules.test.yml.

Skipped (exit 77) without promtool (Debian: apt-get install prometheus).
Standard library only: the YAML is read line by line, which the layout of
these two files allows."""

import os
import re
import shutil
import subprocess
import sys

SOURCE_ROOT = os.environ.get('PRESSURED_SOURCE_ROOT',
                             os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')))
RULES = os.path.join(SOURCE_ROOT, 'conf', 'prometheus', 'pressured.rules.yml')
TESTS = os.path.join(SOURCE_ROOT, 'tests', 'prometheus', 'pressured.rules.test.yml')
RECORD_NAME = re.compile(r'^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$')


def promtool():
    path = shutil.which('promtool') or '/usr/bin/promtool'
    if not os.access(path, os.X_OK):
        print('SKIP: promtool is not installed (apt-get install prometheus)', flush=True)
        sys.exit(77)
    return path


def run(*args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return r.returncode


def read_rules(text):
    """[(kind, name, {key: True})] for each rule: kind 'record' or 'alert',
    with the keys (labels, annotations) its block sets."""
    rules = []
    for line in text.splitlines():
        m = re.match(r'^\s*- (record|alert): (\S+)\s*$', line)
        if m:
            rules.append((m.group(1), m.group(2), {}))
            continue
        m = re.match(r'^\s*([a-z_]+):', line)
        if m and rules:
            rules[-1][2][m.group(1)] = True
    return rules


def read_tests(text):
    """({alertname: set of 'firing'/'quiet'}, set of promql_expr_test exprs)."""
    alerts, exprs = {}, set()
    current = None
    for line in text.splitlines():
        m = re.match(r'^\s*(?:- )?alertname: (\S+)\s*$', line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r'^\s*exp_alerts:\s*(\S*)\s*$', line)
        if m and current:
            alerts.setdefault(current, set()).add('quiet' if m.group(1) == '[]' else 'firing')
            current = None
            continue
        m = re.match(r'^\s*- expr: (\S+)\s*$', line)
        if m:
            exprs.add(m.group(1))
    return alerts, exprs


def lint(rules_text, tests_text):
    """The list of problems with the rules and their tests' coverage."""
    problems = []
    rules = read_rules(rules_text)
    alerts, exprs = read_tests(tests_text)
    if not rules:
        problems.append('no rules found')
    for kind, name, keys in rules:
        if kind == 'record':
            if not RECORD_NAME.match(name):
                problems.append(f'{name}: not named level:metric:operations')
            elif '_total:' in name:
                problems.append(f'{name}: a rate of a counter drops _total from the name')
            if name not in exprs:
                problems.append(f'{name}: no promql_expr_test checks its value')
            continue
        for key in ('severity', 'summary', 'description'):
            if key not in keys:
                problems.append(f'alert {name}: no {key}')
        for state in ('firing', 'quiet'):
            if state not in alerts.get(name, set()):
                problems.append(f'alert {name}: no test where it is '
                                + ('firing' if state == 'firing' else 'not firing'))
    names = {name for _, name, _ in rules}
    for name in sorted(set(alerts) - names):
        problems.append(f'the tests name an alert the rules do not have: {name}')
    return problems


def self_test():
    """The linter finds what it is meant to find."""
    rules = ('groups:\n  - name: g\n    rules:\n'
             '      - record: job:x:rate5m\n        expr: rate(x_total[5m])\n'
             '      - record: job:x_total:rate5m\n        expr: rate(x_total[5m])\n'
             '      - record: x_rate\n        expr: rate(x_total[5m])\n'
             '      - alert: A\n        expr: x > 1\n        labels:\n          severity: warning\n'
             '        annotations:\n          summary: s\n          description: d\n'
             '      - alert: B\n        expr: x > 2\n        annotations:\n          summary: s\n')
    tests = ('tests:\n  - promql_expr_test:\n      - expr: job:x:rate5m\n'
             '    alert_rule_test:\n      - alertname: A\n        exp_alerts: []\n'
             '      - alertname: A\n        exp_alerts:\n          - exp_labels: {}\n'
             '      - alertname: B\n        exp_alerts: []\n'
             '      - alertname: C\n        exp_alerts: []\n')
    got = set(lint(rules, tests))
    want = {'job:x_total:rate5m: a rate of a counter drops _total from the name',
            'job:x_total:rate5m: no promql_expr_test checks its value',
            'x_rate: not named level:metric:operations',
            'x_rate: no promql_expr_test checks its value',
            'alert B: no severity', 'alert B: no description',
            'alert B: no test where it is firing',
            'the tests name an alert the rules do not have: C'}
    if got != want:
        print(f'FAIL: linter self-test: missing {sorted(want - got)}, unexpected {sorted(got - want)}',
              file=sys.stderr)
        return False
    return True


def main():
    if sys.argv[1:] == ['test']:
        rc = run(promtool(), 'test', 'rules', TESTS)
        if rc != 0:
            print('FAIL: promtool test rules', file=sys.stderr)
        return 1 if rc else 0
    if sys.argv[1:] != ['check']:
        print('usage: check-rules.py check|test', file=sys.stderr)
        return 2
    tool = promtool()
    if not self_test():
        return 1
    if run(tool, 'check', 'rules', RULES) != 0:
        print('FAIL: promtool check rules', file=sys.stderr)
        return 1
    with open(RULES) as f, open(TESTS) as g:
        problems = lint(f.read(), g.read())
    for p in problems:
        print('FAIL: ' + p, file=sys.stderr)
    if problems:
        return 1
    print('ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
