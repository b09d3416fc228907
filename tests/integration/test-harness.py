#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The harness's verdicts (pressured_test.py): a test passes only by
calling finish(), skips (exit 77) by skip() or by finish() after
skip_part() left a part out, and fails otherwise: by an exception, by
fail(), and by exiting without a verdict at all, which would otherwise be
a pass that checked nothing. A forked child is no test; own_verdict() is
for programs that report by themselves (TAP, benchmarks, helpers). Every
test script of the Python suites ends with finish()."""
import glob
import os
import subprocess
import sys

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


def main():
    test_verdicts()
    test_every_script_finishes()
    pt.finish()


if __name__ == '__main__':
    main()
