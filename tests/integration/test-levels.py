#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The level stream (Subscribe "levels"), end to end with the built daemon.

- The first event is the level now ("normal" on a quiet cgroup), with
  seq 1 and missed 0; no "subscribed" comes before it.
- Injections step the level up at once (an injected critical is one
  change, not three); a level steps down only after [Levels] StepDownSec=
  plus its trigger's window with no event at that level, and to the
  highest level still held; back to "normal" is a change too.
- A client that does not read gets, once it reads, the level it was last
  sent and then only the newest level, with "missed" counting the
  changes folded; nothing stale in between.
- Every subscriber of a cgroup shares the three [Levels] registrations
  with "level" subscribers; the registrations go with the last stream,
  and so does the /proc/meminfo the headroom is read from.
- Errors: "levels" with another selector, with min_interval_ms, with a
  resource other than memory, not a boolean; a cgroup that does not
  exist; a cgroup not delegated to the caller; the removal of the cgroup
  ends the stream with "removed".
- `pressurectl watch --levels` prints the levels.
"""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

WAIT = pt.scaled(10)
# Short enough for the test, long enough that an injection is seen while it holds.
STEP_DOWN = 1.0


def event(v, timeout=WAIT):
    return v.recv(timeout=timeout)['parameters']['event']


def levels(d, cg, **extra):
    v = pt.Varlink(d.socket, timeout=WAIT)
    first = v.subscribe(levels=True, cgroup=cg, **extra)['parameters']['event']
    return v, first


def level_regs(d, cg):
    return sorted((r['source'], r.get('level') or r.get('trigger', {}).get('level'))
                  for r in d.status()['registrations'] if r['cgroup'] == cg)


def meminfo_open(d):
    return '/proc/meminfo' in d.fds().values()


def check_first(d, cg):
    pt.check(not meminfo_open(d), 'no level stream: /proc/meminfo is not open', d.fds())
    v, first = levels(d, cg)
    try:
        # The headroom reader keeps it while a stream lives.
        pt.check(meminfo_open(d), 'a level stream: /proc/meminfo kept open', d.fds())
        pt.check(first['kind'] == 'level' and first['level'] == 'normal' and first['seq'] == 1 and
                 first['missed'] == 0 and first['cgroup'] == cg, 'the first event is the level now', first)
        for key in ('headroom_bytes', 'reclaim_target_bytes', 'time_us', 'monotonic_us'):
            pt.check(key in first, f'the level event has {key}', first)
        regs = [r for r in d.status()['registrations'] if r['cgroup'] == cg]
        pt.check_eq(len(regs), 3, 'one registration per [Levels] level')
        # A "level" subscriber shares them.
        w = pt.Varlink(d.socket, timeout=WAIT)
        w.subscribe(cgroup=cg, level='medium')
        pt.check_eq(len([r for r in d.status()['registrations'] if r['cgroup'] == cg]), 3,
                    'a "level" subscription shares the level stream\'s registration')
        w.close()
    finally:
        v.close()
    pt.wait_for(lambda: not [r for r in d.status()['registrations'] if r['cgroup'] == cg], timeout=WAIT,
                what='the registrations to go with the last stream')
    pt.check(not meminfo_open(d), '/proc/meminfo closed with the last stream', d.fds())


def check_steps(d, cg):
    v, first = levels(d, cg)
    try:
        pt.check_eq(first['level'], 'normal', 'normal before any injection')
        t0 = time.monotonic()
        r = d.inject('critical', cg)
        pt.check_eq(r['parameters']['delivered'], 3, 'a critical injection reaches the three levels')
        ev = event(v)
        pt.check(ev['level'] == 'critical' and ev['seq'] == 2 and ev['missed'] == 0,
                 'an injected critical is one change to critical', ev)
        # Medium keeps being heard while critical goes quiet.
        deadline = time.monotonic() + WAIT * 3
        down = None
        while time.monotonic() < deadline and down is None:
            d.inject('medium', cg)
            try:
                down = event(v, timeout=0.3)
            except TimeoutError:
                pass
        pt.check(down is not None and down['level'] == 'medium' and down['seq'] == 3,
                 'critical steps down to medium, still held', down)
        pt.check(time.monotonic() - t0 >= STEP_DOWN, 'not before StepDownSec=', time.monotonic() - t0)
        last = time.monotonic()
        back = event(v, timeout=WAIT * 3)
        pt.check(back['level'] == 'normal' and back['seq'] == 4 and back['reclaim_target_bytes'] in (0, None),
                 'back to normal once nothing is held', back)
        pt.check(time.monotonic() - last >= STEP_DOWN * 0.9, 'normal only after the hold', time.monotonic() - last)
    finally:
        v.close()


def check_folding(d, cg):
    v, first = levels(d, cg)
    try:
        # Fill nothing; just stop reading while the level changes several times.
        d.inject('low', cg)
        pt.wait_for(lambda: _unread(v) > 0, timeout=WAIT, what='the low change to reach the socket')
        d.inject('medium', cg)
        d.inject('critical', cg)
        # The sync point: a call answered after the injections, so the daemon has settled and folded
        # both changes (the settle runs in the loop turn of the injection, before the next call is read).
        d.status()
        ev = event(v)
        pt.check(ev['level'] == 'low' and ev['seq'] == 2, 'the change sent before the client stopped reading', ev)
        ev = event(v)
        pt.check(ev['level'] == 'critical' and ev['seq'] == 3 and ev['missed'] == 1,
                 'then only the newest level, the one folded counted in missed', ev)
    finally:
        v.close()


def _unread(v):
    import fcntl
    import termios
    buf = bytearray(4)
    fcntl.ioctl(v.sock.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


def reexecute(d, generation):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        pt.check_eq(v.call_sync('io.pressured.Reexecute'), {'parameters': {}}, 'Reexecute reply')
    finally:
        v.close()
    pt.wait_for(lambda: d.status()['generation'] == generation, timeout=WAIT, what='the new process')


def check_reexecute(d, cg):
    """A level stream goes on across Reexecute: no EOF, seq goes on, the
    level the new process finds is the news, the registrations are shared."""
    v, first = levels(d, cg)
    try:
        d.inject('critical', cg)
        ev = event(v)
        pt.check(ev['level'] == 'critical' and ev['seq'] == 2, 'critical before the takeover', ev)
        generation = d.status()['generation']
        reexecute(d, generation + 1)
        pt.check_eq(len([r for r in d.status()['registrations'] if r['cgroup'] == cg]), 3,
                    'the three registrations are taken over, not doubled')
        ev = event(v, timeout=WAIT * 3)
        pt.check(ev['kind'] == 'level' and ev['level'] == 'normal' and ev['seq'] == 3,
                 'the stream goes on after the takeover, numbered on', ev)
        d.inject('medium', cg)
        ev = event(v)
        pt.check(ev['level'] == 'medium' and ev['seq'] == 4, 'the new process follows the level', ev)
        # The kept /proc/meminfo went with the old process (close-on-exec): the new one reads its own.
        pt.check((ev['headroom_bytes'] is None) == (first['headroom_bytes'] is None),
                 'the new process reads the headroom as the old one did', first, ev)
        pt.check(meminfo_open(d), 'the new process keeps its own /proc/meminfo open', d.fds())
    finally:
        v.close()


def check_reload(d, cg):
    """A reload that changes a [Levels] trigger moves the stream's listener
    to the new registration; the stream goes on."""
    v, first = levels(d, cg)
    try:
        before = sorted(json.dumps(r['trigger'], sort_keys=True) for r in d.status()['registrations']
                        if r['cgroup'] == cg)
        d.write_config(f'[Levels]\nStepDownSec={STEP_DOWN}s\nLow=some 50ms 2s\n')
        r = pt.Varlink(d.socket, timeout=WAIT)
        pt.check_eq(r.call_sync('io.pressured.Reload'), {'parameters': {}}, 'Reload')
        r.close()
        after = sorted(json.dumps(r['trigger'], sort_keys=True) for r in d.status()['registrations']
                       if r['cgroup'] == cg)
        pt.check(len(after) == 3 and after != before, 'the low registration is the new trigger', before, after)
        d.inject('low', cg)
        ev = event(v)
        pt.check(ev['kind'] == 'level' and ev['level'] == 'low' and ev['seq'] == 2,
                 'the stream follows the new low trigger', ev)
    finally:
        v.close()
        d.write_config(f'[Levels]\nStepDownSec={STEP_DOWN}s\n')


def check_limit(cg):
    """MaxRegistrations=2: a level stream needs three; refused with
    LimitExceeded, and the two it made are released."""
    with pt.Daemon(config_text='[Limits]\nMaxRegistrations=2\n') as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        try:
            v.call('io.pressured.Subscribe', {'levels': True, 'cgroup': cg}, more=True)
            r = v.recv(timeout=WAIT)
        finally:
            v.close()
        pt.check(r.get('error') == 'io.pressured.LimitExceeded' and
                 r.get('parameters') == {'limit': 'MaxRegistrations', 'value': 2}, 'LimitExceeded', r)
        pt.check_eq(d.status()['registrations'], [], 'nothing is left registered')


def check_headroom():
    """Level events carry GetHeadroom's numbers: on a cgroup with a 64M
    limit in the v1 memory hierarchy (its PSI in cgroup2), the headroom is
    the limit's room and the reclaim target the level's margin minus it (0
    at normal); GetHeadroom gives the same target while a stream follows
    the cgroup, and none once nobody does."""
    config = '[Levels]\nStepDownSec=1s\nMarginLow=128M\n'
    with pt.real_cgroups(v1=True, v2=True, limit='64M') as (name, v1dir, _), pt.Daemon(config_text=config) as d:
        v, first = levels(d, name)
        try:
            pt.check(first['level'] == 'normal' and first['reclaim_target_bytes'] == 0 and
                     0 < first['headroom_bytes'] <= 64 << 20, 'normal: the room under the limit, nothing to free',
                     first)
            d.inject('low', name)
            ev = event(v)
            pt.check(ev['level'] == 'low' and ev['reclaim_target_bytes'] == (128 << 20) - ev['headroom_bytes'],
                     'low: MarginLow= minus the headroom', ev)
            h = pt.Varlink(d.socket, timeout=WAIT).call_sync('io.pressured.GetHeadroom', {'cgroup': name})
            h = h['parameters']
            pt.check(h['limit_bytes'] == 64 << 20 and h['limiting_cgroup'] == name and
                     h['reclaim_target_bytes'] == (128 << 20) - h['headroom_bytes'],
                     'GetHeadroom: the target of the level the stream follows', h)
        finally:
            v.close()
        pt.wait_for(lambda: not [r for r in d.status()['registrations'] if r['cgroup'] == name], timeout=WAIT,
                    what='the stream to end')
        h = pt.Varlink(d.socket, timeout=WAIT).call_sync('io.pressured.GetHeadroom', {'cgroup': name})
        pt.check(h['parameters']['reclaim_target_bytes'] is None, 'no stream: no level, no target', h)


def check_errors(d, cg):
    cases = [
        ({'levels': True, 'level': 'low'}, 'InvalidParameter', {'parameter': 'level'}),
        ({'levels': True, 'min_interval_ms': 100}, 'InvalidParameter', {'parameter': 'min_interval_ms'}),
        ({'levels': True, 'resource': 'cpu'}, 'InvalidParameter', {'parameter': 'resource'}),
        ({'levels': 'yes'}, 'InvalidParameter', {'parameter': 'levels'}),
        ({'levels': True, 'cgroup': cg + '/missing'}, 'NoSuchCgroup', {'cgroup': cg + '/missing'}),
        ({'levels': True, 'cgroup': cg + '/../x'}, 'InvalidCgroupPath', {'cgroup': cg + '/../x'}),
    ]
    for params, name, want in cases:
        v = pt.Varlink(d.socket, timeout=WAIT)
        try:
            v.call('io.pressured.Subscribe', params, more=True)
            r = v.recv(timeout=WAIT)
            pt.check(r.get('error', '').endswith('.' + name) and r.get('parameters') == want,
                     f'Subscribe {params}: {name} {want}', r)
        finally:
            v.close()
    # Not delegated: nobody may follow root's cgroup.
    def as_nobody():
        v = pt.Varlink(d.socket, timeout=WAIT)
        v.call('io.pressured.Subscribe', {'levels': True, 'cgroup': cg}, more=True)
        return v.recv(timeout=WAIT)
    r = pt.run_as('nobody', as_nobody)
    pt.check(r.get('error') == 'io.pressured.PermissionDenied', 'a cgroup not delegated to the caller', r)


def check_removed(d):
    with pt.quiet_cgroup() as cg:
        v, first = levels(d, cg)
        root = pt.cgroup2_mount()
        os.rmdir(root + cg)
        ev = event(v, timeout=WAIT * 3)
        pt.check(ev['kind'] == 'removed' and ev['cgroup'] == cg and ev['seq'] == 2, 'removal ends the stream', ev)
        os.mkdir(root + cg)
        v.close()


def check_pressurectl(d, cg):
    p = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, '--json', 'watch', '--levels', cg],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        ev = json.loads(line)
        pt.check(ev.get('kind') == 'level' and ev.get('level') == 'normal', 'watch --levels: the level now', line)
        d.inject('medium', cg)
        ev = json.loads(p.stdout.readline())
        pt.check(ev.get('level') == 'medium', 'watch --levels: the change', ev)
    finally:
        p.kill()
        p.wait()


def main():
    pt.require_root('Inject is reserved to root')
    config = f'[Levels]\nStepDownSec={STEP_DOWN}s\n'
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=config) as d:
        check_first(d, cg)
        check_steps(d, cg)
        check_folding(d, cg)
        check_errors(d, cg)
        check_removed(d)
        check_reexecute(d, cg)
        check_reload(d, cg)
        check_pressurectl(d, cg)
        check_limit(cg)
    check_headroom()
    pt.finish()


if __name__ == '__main__':
    main()
