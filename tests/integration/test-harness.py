#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The harness's verdicts (pressured_test.py): a test passes only by
calling finish(), skips (exit 77) by skip() or by finish() after
skip_part() left a part out, and fails otherwise: by an exception, by
fail(), and by exiting without a verdict at all, which would otherwise be
a pass that checked nothing. A forked child is no test; own_verdict() is
for programs that report by themselves (TAP, benchmarks, helpers). Every
test script of the Python suites ends with finish().

The C tests have the same rule (tests/unit/tests.h): a part left out is
test_skip_part() and main() returns test_finish(), 77 then; no C test
prints that it skips and goes on as a pass, or returns early as root.
test-system-bus leaves its private bus groups out only where dbus-daemon
is not installed and CI is not true. tests/ci-count.py, which
tests/run-all.sh adds up each run with, lists the parts left out. The
tests of "nothing happened" in test-reclaim, test-low-memory-monitor and
test-levels wait on a sync point, not on a fixed sleep."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

TESTS = os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')),
                     'tests')
sys.path.insert(0, TESTS)
import pressured_test as pt  # noqa: E402

check = pt.check

CASES = [
    # (what, the test's body, exit status, a line it must print, a line it must not print)
    ('finish()', 'pt.finish()', 0, 'ok', 'FAIL'),
    ('no verdict', 'pt.check(True, "a check that passed")', 1, 'without a verdict', 'ok'),
    ('an early return of main()', 'def main():\n    return\n    pt.finish()\nmain()', 1, 'without a verdict', 'ok'),
    ('skip_part() then no finish()', 'pt.skip_part("no widget here")', 1, 'without a verdict', 'ok'),
    ('skip_part() then finish()', 'pt.skip_part("no widget here")\npt.finish()', 77, 'left out: no widget here',
     'FAIL'),
    ('skip()', 'pt.skip("no widget here")', 77, 'SKIP: no widget here', 'FAIL'),
    ('an exception', 'pt.check_eq(1, 2, "one")', 1, 'one: expected 2, got 1', 'without a verdict'),
    ('fail()', 'pt.fail("the widget broke")', 1, 'FAIL: the widget broke', 'without a verdict'),
    ('own_verdict()', 'pt.own_verdict()', 0, '', 'without a verdict'),
    ('a forked child that exits', 'import os\npid = os.fork()\nif pid == 0:\n    raise SystemExit(0)\n'
     '_, st = os.waitpid(pid, 0)\nprint("child", os.waitstatus_to_exitcode(st), flush=True)\npt.finish()',
     0, 'child 0', 'without a verdict'),
]


def run_case(body):
    src = f'import sys\nsys.path.insert(0, {TESTS!r})\nimport pressured_test as pt\n' + body + '\n'
    return subprocess.run([sys.executable, '-c', src], capture_output=True, text=True, timeout=pt.scaled(60))


def test_verdicts():
    for what, body, status, want, unwanted in CASES:
        r = run_case(body)
        out = r.stdout + r.stderr
        check(r.returncode == status, f'{what}: exit {status}', r.returncode, out)
        check(want in out, f'{what}: says {want!r}', out)
        said = unwanted in out.splitlines() if unwanted == 'ok' else unwanted in out
        check(not said, f'{what}: does not say {unwanted!r}', out)
        print(f'{what}: exit {r.returncode}', flush=True)


PRINT_OK = 'print(' + "'ok')"  # spelled so that this file does not contain it


def test_every_script_finishes():
    """Each test script states its verdict: a test that is skipped here could
    still end without one elsewhere, where the atexit check would catch it
    only then."""
    scripts = []
    for suite in ('integration', 'fault', 'kernel', 'proxy', 'sid'):
        scripts += glob.glob(os.path.join(TESTS, suite, 'test-*.py'))
    scripts.append(os.path.join(TESTS, 'prometheus', 'check-dashboard.py'))
    missing = []
    for path in sorted(scripts):
        with open(path) as f:
            text = f.read()
        if 'finish()' not in text:
            missing.append(os.path.relpath(path, TESTS))
        check(PRINT_OK not in text, f'{path} prints ok itself instead of calling finish()')
    check(not missing, 'test scripts without finish()', missing)
    print(f'{len(scripts)} test scripts call finish()', flush=True)


# A C test that says it skips and carries on as a pass, or leaves a check out as root by returning.
C_SILENT_SKIP = re.compile(r'printf\([^;]*\b[Ss]kip|geteuid\(\)\s*==\s*0\)\s*return\b')


def test_c_tests_report_parts():
    """No C test leaves a part out silently; one that may leave one out returns test_finish()."""
    sources = glob.glob(os.path.join(TESTS, 'unit', 'test-*.c')) + glob.glob(os.path.join(TESTS, 'client', '*.c'))
    silent, unfinished = [], []
    for path in sorted(sources):
        with open(path) as f:
            text = f.read()
        silent += [f'{os.path.relpath(path, TESTS)}: {m.group(0)!r}' for m in C_SILENT_SKIP.finditer(text)]
        if 'test_skip_part(' in text and 'return test_finish();' not in text:
            unfinished.append(os.path.relpath(path, TESTS))
    check(not silent, 'C tests that skip a part without saying so to meson', silent)
    check(not unfinished, 'C tests that leave parts out but do not return test_finish()', unfinished)
    print(f'{len(sources)} C test sources: no silent skip', flush=True)


def test_system_bus_part():
    """test-system-bus without dbus-daemon on $PATH: a skip naming the part, or under CI=true a failure."""
    exe = os.path.join(pt.BUILD_ROOT, 'tests', 'unit', 'test-system-bus')
    if not os.access(exe, os.X_OK):
        pt.skip_part(f'{exe} is not built')
        return
    with tempfile.TemporaryDirectory(prefix='pressured-harness-') as empty:
        env = {k: v for k, v in os.environ.items() if k != 'CI'}
        env['PATH'] = empty
        r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=pt.scaled(120))
        lines = r.stdout.splitlines()
        check(r.returncode == 77 and any(x.startswith('SKIP: dbus-daemon is not installed') for x in lines) and
              lines[-1].startswith('SKIP: the rest passed; left out: dbus-daemon is not installed'),
              'without dbus-daemon: a skip that names the part left out', r.returncode, r.stdout, r.stderr)
        r = subprocess.run([exe], capture_output=True, text=True, env=dict(env, CI='true'), timeout=pt.scaled(120))
        check(r.returncode not in (0, 77), 'under CI=true without dbus-daemon: a failure', r.returncode, r.stdout)


# Tests whose checks that nothing happened wait on a sync point (an answered call, a step of a
# cgroup that always takes one, the daemon waiting with no timer armed), never on the clock.
NO_FIXED_SLEEP = ('integration/test-reclaim.py', 'integration/test-low-memory-monitor.py',
                  'integration/test-levels.py')


def test_no_fixed_sleep():
    for rel in NO_FIXED_SLEEP:
        with open(os.path.join(TESTS, rel)) as f:
            text = f.read()
        check('time.sleep(' not in text, f'{rel} waits on the clock', rel)
    print(f'{len(NO_FIXED_SLEEP)} tests without a fixed sleep', flush=True)


def test_ci_count():
    """tests/ci-count.py adds a run up and lists every part left out, with its test and reason."""
    tests = [
        {'name': 'pressured:unit / a', 'result': 'OK', 'stdout': 'ok\n'},
        {'name': 'pressured:unit / b', 'result': 'SKIP',
         'stdout': 'SKIP: no widget here\nSKIP: the rest passed; left out: no widget here\n'},
        {'name': 'pressured:integration / c', 'result': 'SKIP', 'stdout': 'SKIP: not root\n'},
        {'name': 'pressured:unit / d', 'result': 'FAIL', 'stdout': 'boom\n'},
        {'name': 'pressured:vm / vm', 'result': 'OK',
         'stdout': '1..3\nok 1 - one # fine [1 s]\nok 2 - two # SKIP no v1 here\nok 3 - three # x\n'},
    ]
    with tempfile.TemporaryDirectory(prefix='pressured-harness-') as tmp:
        log, failed, parts = (os.path.join(tmp, n) for n in ('testlog.json', 'failed', 'left-out'))
        with open(log, 'w') as f:
            f.write(''.join(json.dumps(t) + '\n' for t in tests))
        r = subprocess.run([sys.executable, os.path.join(TESTS, 'ci-count.py'), log, failed, parts, 'build-ci'],
                           capture_output=True, text=True, timeout=pt.scaled(60))
        pt.check_eq((r.returncode, r.stdout), (0, '3 1 3\n'), 'passed, failed, skipped')
        with open(failed) as f:
            pt.check_eq(f.read(), 'build-ci: pressured:unit / d (FAIL)\n', 'the failed test')
        with open(parts) as f:
            pt.check_eq(f.read().splitlines(), ['build-ci: pressured:unit / b: no widget here',
                                                'build-ci: pressured:integration / c: not root',
                                                'build-ci: vm: two: no v1 here'], 'the parts left out')


def main():
    test_verdicts()
    test_every_script_finishes()
    test_c_tests_report_parts()
    test_no_fixed_sleep()
    test_system_bus_part()
    test_ci_count()
    pt.finish()


if __name__ == '__main__':
    main()
