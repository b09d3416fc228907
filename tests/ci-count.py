#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Add up one meson test run for tests/run-all.sh, from its JSON log.

    tests/ci-count.py TESTLOG.json FAILED_LIST LEFT_OUT_LIST LABEL

Prints "PASSED FAILED SKIPPED". Appends to FAILED_LIST one line per test
that failed, and to LEFT_OUT_LIST one line per part a test left out: each
"SKIP: REASON" line a test printed (the Python harness's skip() and
skip_part(), the C tests' test_skip_part(); not the summary line
"SKIP: the rest passed; left out: ..." that finish() adds), each prefixed
with LABEL and the test's name. A TAP test of the vm suite counts each of
its checks, and each "ok ... # SKIP REASON" check is a part left out.
"""
import json
import sys

SUMMARY = 'SKIP: the rest passed; left out: '


def left_out(name, lines):
    """The parts @name left out, from its output @lines."""
    return [f'{name}: {x[len("SKIP: "):]}' for x in lines if x.startswith('SKIP: ') and not x.startswith(SUMMARY)]


def vm(t, names, parts):
    """A TAP run of the vm suite (vm, vm-sid): (passed, failed, skipped) of its checks."""
    which = t.get('name', '').rpartition(' / ')[2]
    lines = t.get('stdout', '').splitlines()
    tp = sum(1 for x in lines if x.startswith('ok ') and '# SKIP' not in x)
    skipped = [x for x in lines if x.startswith(('ok ', '1..0')) and '# SKIP' in x]
    bad = [x for x in lines if x.startswith('not ok ')]
    tf = len(bad)
    names += [f'{which}: ' + x for x in bad]
    parts += [f'{which}: ' + x.split(' - ', 1)[-1].replace(' # SKIP ', ': ', 1) for x in skipped]
    if t.get('result') not in ('OK', 'SKIP') and tf == 0:
        tf = 1
        names.append('%s (%s)' % (which, t.get('result')))
    return tp, tf, len(skipped)


def count(log):
    """(passed, failed, skipped, failed names, parts left out) of the JSON log @log."""
    p = f = s = 0
    names, parts = [], []
    with open(log) as fh:
        for line in fh:
            t = json.loads(line)
            r = t.get('result')
            if t.get('name', '').endswith((':vm / vm', ':vm / vm-sid')):
                tp, tf, ts = vm(t, names, parts)
                p, f, s = p + tp, f + tf, s + ts
                continue
            if r in ('OK', 'EXPECTEDFAIL'):
                p += 1
            elif r == 'SKIP':
                s += 1
            else:
                f += 1
                names.append('%s (%s)' % (t.get('name'), r))
            parts += left_out(t.get('name', '?'), t.get('stdout', '').splitlines())
    return p, f, s, names, parts


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    log, failed_list, left_out_list, label = sys.argv[1:]
    p, f, s, names, parts = count(log)
    with open(failed_list, 'a') as out:
        for n in names:
            out.write('%s: %s\n' % (label, n))
    with open(left_out_list, 'a') as out:
        for n in parts:
            out.write('%s: %s\n' % (label, n))
    print(p, f, s)


if __name__ == '__main__':
    main()
