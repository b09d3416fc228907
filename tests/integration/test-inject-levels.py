#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Inject honours levels: an injected level reaches what a kernel event of
that level would.

- `level` subscriptions of that level and below get it (a medium
  injection reaches low and medium, not critical), carrying the injected
  level;
- an explicit `psi` subscription, which has no level, gets every level;
- an explicit `vmpressure` subscription (cgroup v1) gets its level and
  those above, as the kernel notifies it;
- Inject's `delivered` counts exactly those;
- `pressurectl watch --level critical --count 1` is not ended by a medium
  injection, in text and in --json, and ends with the critical one.

Everything runs on cgroups of the test's own that no task uses, so the
only events are the injected ones."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

WAIT = pt.scaled(10)


def subscribe(d, **params):
    v = pt.Varlink(d.socket, timeout=WAIT)
    first = v.subscribe(**params)
    pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribed', first)
    return v


def next_event(v):
    return v.recv(timeout=WAIT)['parameters']['event']


def check_levels(d, cg):
    subs = {level: subscribe(d, cgroup=cg, level=level) for level in ('low', 'medium', 'critical')}
    psi = subscribe(d, cgroup=cg, psi={'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000})
    try:
        r = d.inject('medium', cg)
        pt.check_eq(r['parameters']['delivered'], 3, 'a medium injection reaches low, medium and the psi trigger')
        for v in (subs['low'], subs['medium'], psi):
            ev = next_event(v)
            pt.check(ev['kind'] == 'pressure' and ev['level'] == 'medium' and ev['synthetic'] is True and
                     ev['seq'] == 1, 'the injected event carries the injected level', ev)
        r = d.inject('low', cg)
        pt.check_eq(r['parameters']['delivered'], 2, 'a low injection reaches low and the psi trigger')
        for v in (subs['low'], psi):
            ev = next_event(v)
            pt.check(ev['level'] == 'low' and ev['seq'] == 2, 'low is heard by low and psi', ev)
        r = d.inject('critical', cg)
        pt.check_eq(r['parameters']['delivered'], 4, 'a critical injection reaches every subscription')
        ev = next_event(subs['critical'])
        pt.check(ev['level'] == 'critical' and ev['seq'] == 1,
                 'the critical subscriber\'s first event is the critical injection', ev)
        for v, seq in ((subs['low'], 3), (subs['medium'], 2), (psi, 3)):
            ev = next_event(v)
            pt.check(ev['level'] == 'critical' and ev['seq'] == seq, 'critical reaches the lower levels', ev)
    finally:
        for v in list(subs.values()) + [psi]:
            v.close()


def check_vmpressure(d):
    if not pt.have_v1_memory():
        pt.skip_part('no cgroup v1 memory hierarchy for an explicit vmpressure subscription')
        return
    with pt.real_cgroups(v1=True, v2=False, limit=None) as (cg, _, _):
        vm = subscribe(d, cgroup=cg, vmpressure={'level': 'medium'})
        try:
            r = d.inject('low', cg)
            pt.check_eq(r['parameters']['delivered'], 0, 'a vmpressure medium listener does not hear low')
            for level, seq in (('medium', 1), ('critical', 2)):
                r = d.inject(level, cg)
                pt.check_eq(r['parameters']['delivered'], 1, f'a vmpressure medium listener hears {level}')
                ev = next_event(vm)
                pt.check(ev['source'] == 'inject' and ev['level'] == level and ev['seq'] == seq,
                         'the vmpressure listener gets the injected level', ev)
        finally:
            vm.close()


def watch(d, cg, json_mode):
    args = [pt.PRESSURECTL, '--socket', d.socket] + (['--json'] if json_mode else []) + \
        ['watch', cg, '--level', 'critical', '--count', '1', '--timeout', str(int(WAIT * 3))]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_pressurectl(d, cg, json_mode):
    before = d.status()['subscriptions']
    p = watch(d, cg, json_mode)
    try:
        pt.wait_for(lambda: d.status()['subscriptions'] > before, timeout=WAIT, what='the watch to subscribe')
        r = pt.run_ctl('inject', cg, '--level', 'medium', socket=d.socket)
        pt.check(r.returncode == 0 and r.stdout.startswith('Delivered 0 times:'),
                 'a medium injection does not reach a critical watch', r.returncode, r.stdout, r.stderr)
        pt.check(p.poll() is None, 'the critical watch goes on after the medium injection')
        r = pt.run_ctl('inject', cg, '--level', 'critical', socket=d.socket)
        pt.check(r.returncode == 0 and r.stdout.startswith('Delivered 1 time:'),
                 'the critical injection reaches it', r.returncode, r.stdout, r.stderr)
        out, err = p.communicate(timeout=WAIT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    pt.check_eq(p.returncode, 0, 'watch --count 1 ends with the critical event')
    lines = [line for line in out.splitlines() if line.strip()]
    if json_mode:
        events = [json.loads(line) for line in lines]
        pressure = [e for e in events if e.get('kind') == 'pressure']
        pt.check(len(pressure) == 1 and pressure[0]['level'] == 'critical', '--json: one critical event', out)
    else:
        pt.check('medium' not in out and sum('critical' in line for line in lines) >= 1,
                 'text: the event line is the critical one, nothing about medium', out)


def main():
    pt.require_root('Inject is reserved to root')
    with pt.quiet_cgroup() as cg, pt.Daemon() as d:
        check_levels(d, cg)
        check_vmpressure(d)
        check_pressurectl(d, cg, json_mode=False)
        check_pressurectl(d, cg, json_mode=True)
    pt.finish()


if __name__ == '__main__':
    main()
