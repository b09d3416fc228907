#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The runner of the vm suite's checks (tests/vm/checks.py), here, outside the VM.

Only an explicit skip is reported as a skip: a check that calls
checks.skip() or the harness's skip() (a helper that finds a feature
missing) is "ok ... # SKIP reason". Every other way out of a check is
"not ok" with its reason: an exception, and an exit of any status
(sys.exit(1), the 143 of a helper killed by SIGTERM, sys.exit(0), the
harness's fail()), which the runner reported as "ok ... # SKIP" before.
A skip cannot be swallowed by an `except Exception` on its way."""
import importlib.util
import io
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..'))
import pressured_test as pt  # noqa: E402

spec = importlib.util.spec_from_file_location('checks', os.path.join(here, 'checks.py'))
checks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checks)


def note():
    return 'measured 42'


def explicit_skip():
    checks.skip('no such feature here')


def harness_skip():
    pt.skip('the harness found it missing')


def swallowed_skip():
    try:
        checks.skip('a skip through except Exception')
    except Exception:  # noqa: B902 - what a helper on the way might do
        return 'swallowed'


def exit_1():
    sys.exit(1)


def exit_143():
    raise SystemExit(143)


def exit_0():
    sys.exit(0)


def exit_bare():
    sys.exit()


def harness_fail():
    pt.fail('the harness failed it')


def assertion():
    pt.check(False, 'a check that does not hold', 1, 2)


CASES = [
    ('returns its note', note, 'ok 1 - returns its note # measured 42 ['),
    ('skips', explicit_skip, 'ok 2 - skips # SKIP no such feature here'),
    ('the harness skips', harness_skip, 'ok 3 - the harness skips # SKIP the harness found it missing'),
    ('a skip under except Exception', swallowed_skip,
     'ok 4 - a skip under except Exception # SKIP a skip through except Exception'),
    ('exits 1', exit_1, 'not ok 5 - exits 1 # SystemExit: exit status 1'),
    ('exits 143', exit_143, 'not ok 6 - exits 143 # SystemExit: exit status 143'),
    ('exits 0', exit_0, 'not ok 7 - exits 0 # SystemExit: exit status 0'),
    ('exits', exit_bare, 'not ok 8 - exits # SystemExit: exit status None'),
    ('the harness fails', harness_fail, 'not ok 9 - the harness fails # SystemExit: exit status 1'),
    ('raises', assertion, 'not ok 10 - raises # AssertionError: a check that does not hold: 1, 2'),
]


def main():
    out = io.StringIO()
    failed = checks.run([(name, fn) for name, fn, _ in CASES], out)
    lines = out.getvalue().splitlines()
    pt.check_eq(lines[0], f'1..{len(CASES)}', 'the TAP plan')
    results = [line for line in lines[1:] if not line.startswith('#')]
    pt.check_eq(len(results), len(CASES), 'one result line per check')
    for line, (name, _, want) in zip(results, CASES):
        pt.check(line.startswith(want), f'{name}: {want!r}', line)
    pt.check_eq(failed, 6, 'failures counted: every exit and the exception')
    # Each failure carries its traceback as TAP comments.
    pt.check(any(line.startswith('# Traceback') for line in lines), 'the tracebacks as comments', lines)
    pt.finish()


if __name__ == '__main__':
    main()
