#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cpu and io pressure on the real kernel: Subscribe "resource" with level
and psi on "/" (/proc/pressure/cpu, io) and on a cgroup2 directory
(cpu.pressure, io.pressure), seen in the subscribed event, the daemon's
open files and GetStatus; registrations shared by identical requests and
kept apart by resource; Inject with and without a resource reaching only
that resource's subscriptions; cleared events and history entries naming
their resource; the errors (a resource with vmpressure, memory_events or
protection, a bad resource, cpu "full" on the whole system, cpu level on
a cgroup that is only in cgroup v1); a reload that would make a
system-wide cpu level "full" keeps its trigger; pressurectl watch and
inject --resource, and the bash completion."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
WAIT = 60.0 if pt.WRAPPER else 15.0
PSI_2S = {'stall': 'some', 'threshold_us': 200000, 'window_us': 2000000}
# Episodes end 1 s after their last event on an empty cgroup.
CONFIG = '[Levels]\nClearAfterSec=1\nClearRatio=1\n'
INVALID_PARAMETER = 'org.varlink.service.InvalidParameter'


def subscribe(d, **params):
    v = pt.Varlink(d.socket, timeout=WAIT)
    msg = v.subscribe(**params)
    return v, msg


def subscribed(d, **params):
    v, msg = subscribe(d, **params)
    check('error' not in msg and msg['parameters']['event']['kind'] == 'subscribed', f'subscribed to {params}',
          msg)
    return v, msg['parameters']['event']


def expect_error(d, error, params, key=None, value=None):
    v, msg = subscribe(d, **params)
    v.close()
    check(msg.get('error') == error, f'{params}: {error}', msg)
    if key:
        check(msg['parameters'].get(key) == value, f'{params}: {key} {value!r}', msg)
    return msg


def next_event(v):
    return v.recv(timeout=WAIT)['parameters']['event']


def registrations(d, cgroup):
    return [r for r in d.status()['registrations'] if r['cgroup'] == cgroup]


def has_fd(d, path):
    return path in d.fds().values()


def inject(d, cgroup, resource=None, level='medium'):
    v = pt.Varlink(d.socket)
    try:
        p = {'level': level, 'cgroup': cgroup}
        if resource:
            p['resource'] = resource
        return v.call_sync('io.pressured.Inject', p)
    finally:
        v.close()


def test_system(d):
    """cpu and io on "/": the right /proc/pressure file, the resource everywhere."""
    for resource in ('cpu', 'io'):
        proc = f'/proc/pressure/{resource}'
        check(not has_fd(d, proc), f'{proc} not open before a subscriber', d.fds())
        v, ev = subscribed(d, level='low', resource=resource)
        check(ev['resource'] == resource and ev['source'] == 'psi' and ev['cgroup'] == '/', 'subscribed event', ev)
        check(ev['trigger']['level'] == 'low' and ev['trigger']['psi']['stall'] == 'some', 'the [Levels] trigger', ev)
        check('some_avg10' in ev['state']['psi'], f'the state has {resource} PSI averages', ev)
        check(has_fd(d, proc), f'the trigger sits on {proc}', d.fds())
        check(not has_fd(d, '/proc/pressure/memory'), 'not on memory', d.fds())
        regs = registrations(d, '/')
        check(len(regs) == 1 and regs[0]['resource'] == resource and regs[0]['subscribers'] == 1,
              'GetStatus lists its resource', regs)
        v.close()
        pt.wait_for(lambda: not registrations(d, '/'), timeout=WAIT, what='the registration to go')
        check(not has_fd(d, proc), f'{proc} closed with the last subscriber', d.fds())


def test_cgroup(d, cg, v2dir):
    """A cgroup2 directory: cpu.pressure, io.pressure; an explicit trigger; "full" is fine on cpu here."""
    for resource, params in (('cpu', {'level': 'medium'}), ('io', {'psi': PSI_2S}),
                             ('cpu', {'psi': dict(PSI_2S, stall='full')})):
        path = os.path.join(v2dir, f'{resource}.pressure')
        v, ev = subscribed(d, cgroup=cg, resource=resource, **params)
        check(ev['resource'] == resource and ev['cgroup'] == cg and ev['source'] == 'psi', 'subscribed event', ev)
        if 'psi' in params:
            check(ev['trigger']['psi'] == params['psi'], 'the trigger asked for', ev)
        check(has_fd(d, path), f'the trigger sits on {path}', d.fds())
        v.close()
        pt.wait_for(lambda: not registrations(d, cg), timeout=WAIT, what='the registration to go')


def test_sharing(d, cg):
    """Identical requests share; the same trigger on another resource does not."""
    subs = []
    try:
        for resource in ('cpu', 'cpu', None, 'memory', 'io'):
            params = {'cgroup': cg, 'psi': PSI_2S}
            if resource:
                params['resource'] = resource
            subs.append(subscribed(d, **params)[0])
        regs = {r['resource']: r for r in registrations(d, cg)}
        check(sorted(regs) == ['cpu', 'io', 'memory'], 'one registration per resource', regs)
        check(regs['cpu']['subscribers'] == 2 and regs['memory']['subscribers'] == 2 and
              regs['io']['subscribers'] == 1, 'identical requests share (memory named or not)', regs)
        check(all(r['trigger']['psi'] == PSI_2S for r in regs.values()), 'the same trigger on each', regs)
        c = d.status()['counters']

        # Inject reaches its resource's subscriptions only, and says so in the event.
        for resource, want, idx in (('cpu', 2, (0, 1)), (None, 2, (2, 3)), ('io', 1, (4,))):
            r = inject(d, cg, resource)
            check(r['parameters']['delivered'] == want, f'inject {resource}: {want} subscribers', r)
            for i in idx:
                ev = next_event(subs[i])
                check(ev['kind'] == 'pressure' and ev['resource'] == (resource or 'memory') and
                      ev['source'] == 'inject' and ev['synthetic'] is True and ev['level'] == 'medium',
                      f'the injected event of subscriber {i}', ev)
        # Each stream saw exactly its own: the next message is its "cleared", naming the resource.
        for i, resource in enumerate(('cpu', 'cpu', 'memory', 'memory', 'io')):
            ev = next_event(subs[i])
            check(ev['kind'] == 'cleared' and ev['resource'] == resource and ev['events'] == 1 and ev['seq'] == 2,
                  f'subscriber {i}: one pressure event, then cleared', ev)
        regs = {r['resource']: r for r in registrations(d, cg)}
        for resource, reg in regs.items():
            check(len(reg['history']) == 1 and reg['history'][0]['resource'] == resource,
                  f'the {resource} history entry names its resource', reg)
        check(d.status()['counters']['registrations_created'] == c['registrations_created'],
              'no registration made by Inject', c)
        # pressurectl history shows the resource of each registration.
        res = pt.run_ctl('history', cg, socket=d.socket)
        check(res.returncode == 0 and f'{cg} psi (cpu some 200ms 2s)' in res.stdout and
              f'{cg} psi (io some 200ms 2s)' in res.stdout and f'{cg} psi (some 200ms 2s)' in res.stdout,
              'pressurectl history names cpu and io', res.stdout)
        res = pt.run_ctl('--json', 'history', cg, socket=d.socket)
        lines = json.loads(res.stdout)['history']
        check(sorted(ln['resource'] for ln in lines) == ['cpu', 'io', 'memory'], 'history --json resources', lines)
        res = pt.run_ctl('status', socket=d.socket)
        check('cpu some 200ms 2s' in res.stdout and 'io some 200ms 2s' in res.stdout, 'status names cpu and io',
              res.stdout)
    finally:
        for v in subs:
            v.close()


def test_errors(d, cg):
    for params in ({'vmpressure': {'level': 'low'}}, {'memory_events': True}, {'protection': True}):
        for resource in ('cpu', 'io'):
            expect_error(d, INVALID_PARAMETER, dict(params, cgroup=cg, resource=resource), 'parameter', 'resource')
    for bad in ('disk', 'CPU', '', 3, ['cpu'], {'cpu': True}):
        expect_error(d, INVALID_PARAMETER, {'level': 'low', 'resource': bad}, 'parameter', 'resource')
    # cpu "full" does not exist for the whole system: the default critical level is such a trigger.
    for params in ({'level': 'critical'}, {'psi': dict(PSI_2S, stall='full')}):
        msg = expect_error(d, 'io.pressured.InvalidTrigger', dict(params, resource='cpu'))
        check('cpu "full" pressure is not defined for the whole system' in msg['parameters']['reason'],
              'the reason says why', msg)
    check(not registrations(d, '/'), 'nothing registered by the refusals', d.status()['registrations'])
    # io "full" exists system-wide.
    v, ev = subscribed(d, level='critical', resource='io')
    check(ev['trigger']['psi']['stall'] == 'full' and ev['resource'] == 'io', 'io critical on "/"', ev)
    v.close()
    # Inject's resource is checked too.
    for bad in ('disk', 7):
        v = pt.Varlink(d.socket)
        r = v.call_sync('io.pressured.Inject', {'level': 'low', 'resource': bad})
        v.close()
        check(r.get('error') == INVALID_PARAMETER and r['parameters']['parameter'] == 'resource',
              f'Inject resource {bad!r}', r)
    # The refusals go to the log once each, no more loudly than other refused calls.
    check('Subscribe from client' in d.log(), 'refused calls are logged', d.log()[-2000:])


def test_v1_only(d):
    """A cgroup only in the v1 memory hierarchy: no cpu.pressure anywhere, no vmpressure for cpu."""
    with pt.real_cgroups(v1=True, v2=False, limit=None) as (name, _, _):
        for resource in ('cpu', 'io'):
            msg = expect_error(d, 'io.pressured.SourceUnavailable', {'cgroup': name, 'level': 'low',
                                                                      'resource': resource})
            check(msg['parameters']['source'] == 'psi' and 'cgroup2' in msg['parameters']['reason'],
                  'a reason naming cgroup2', msg)
        # Memory still falls back to vmpressure there.
        v, ev = subscribed(d, cgroup=name, level='low')
        check(ev['source'] == 'vmpressure' and ev['resource'] == 'memory', 'memory level: vmpressure', ev)
        v.close()


def test_reload(d):
    """A system-wide cpu level cannot follow a reload to a "full" trigger: it keeps its own."""
    v, ev = subscribed(d, level='low', resource='cpu')
    before = ev['trigger']['psi']
    d.write_config(CONFIG + 'Low=full 100ms 2s\n')
    ctl = pt.Varlink(d.socket)
    r = ctl.call_sync('io.pressured.Reload')
    ctl.close()
    check('error' not in r, 'Reload', r)
    regs = registrations(d, '/')
    check(len(regs) == 1 and regs[0]['trigger']['psi'] == before and regs[0]['resource'] == 'cpu',
          'the cpu subscription keeps its trigger', regs)
    pt.wait_for(lambda: 'Keeping the old trigger of a cpu low subscription on /' in d.log(), timeout=WAIT,
                what='the warning in the log')
    # A memory one on "/" moves as before.
    m, ev = subscribed(d, level='low')
    check(ev['trigger']['psi']['stall'] == 'full', 'memory low is the new trigger', ev)
    v.close()
    m.close()
    d.write_config(CONFIG)
    ctl = pt.Varlink(d.socket)
    ctl.call_sync('io.pressured.Reload')
    ctl.close()


def test_pressurectl(d, cg):
    proc = subprocess.Popen(([*pt.WRAPPER] if pt.WRAPPER else []) +
                            [pt.PRESSURECTL, '--socket', d.socket, 'watch', cg, '--resource', 'cpu', '--psi',
                             'some 200ms 2s', '--count', '1', '--timeout', str(int(WAIT))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        header = proc.stdout.readline()
        check(header.startswith(f'Watching {cg}: psi on cpu (some 200ms 2s)'), 'watch header names cpu', header)
        res = pt.run_ctl('inject', cg, '--level', 'low', '--resource', 'cpu', socket=d.socket)
        check(res.returncode == 0 and res.stdout.startswith('Delivered 1 time:'), 'inject --resource cpu',
              res.stdout, res.stderr)
        out, err = proc.communicate(timeout=WAIT)
        check(proc.returncode == 0, 'watch exits 0 after one event', proc.returncode, err)
        check(f'{cg} pressure low source=inject resource=cpu synthetic count=1 seq=1' in out,
              'the event line names cpu', out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # --json: the events as received, with their resource; memory stays unsaid in the line.
    proc = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, '--json', 'watch', cg, '--resource', 'io',
                             '--level', 'low', '--count', '1', '--timeout', str(int(WAIT))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pt.wait_for(lambda: any(r['resource'] == 'io' for r in registrations(d, cg)), timeout=WAIT,
                    what='the io subscription')
        res = pt.run_ctl('inject', cg, '--level', 'medium', '--resource', 'io', socket=d.socket)
        check(res.returncode == 0, 'inject --resource io', res.stderr)
        out, err = proc.communicate(timeout=WAIT)
        sub, ev = [json.loads(line) for line in out.splitlines()]
        check(sub['kind'] == 'subscribed' and sub['resource'] == 'io' and sub['trigger']['level'] == 'low',
              'the subscribed event names io', sub)
        check(ev['kind'] == 'pressure' and ev['resource'] == 'io' and ev['level'] == 'medium', '--json event', ev)
        check(err == '', 'nothing on stderr with --json', err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # Usage errors, and the daemon's InvalidTrigger in words.
    for args, what in ((['--resource', 'cpu', '--vmpressure', 'low'], 'needs --level or --psi'),
                       (['--resource', 'disk'], "invalid resource 'disk'")):
        res = pt.run_ctl('watch', *args, socket=d.socket)
        check(res.returncode == 2 and what in res.stderr, f'watch {args}: usage error', res.returncode, res.stderr)
    res = pt.run_ctl('inject', '--level', 'low', '--resource', 'gpu', socket=d.socket)
    check(res.returncode == 2 and "invalid resource 'gpu'" in res.stderr, 'inject --resource gpu', res.stderr)
    res = pt.run_ctl('watch', '--resource', 'cpu', '--level', 'critical', '--timeout', '5', socket=d.socket)
    # The daemon's InvalidTrigger is a usage error (exit 2), as a trigger pressurectl cannot parse.
    check(res.returncode == 2 and 'Invalid trigger: cpu "full" pressure is not defined for the whole system' in
          res.stderr and 'STALL THRESHOLD WINDOW' not in res.stderr, 'watch cpu critical on "/"', res.stderr)
    # The bash completion offers the resources.
    if pt.have_bash_completion('the completion of --resource'):
        for words, want in ((['pressurectl', 'watch', '--resource', ''], ['cpu', 'io', 'memory']),
                            (['pressurectl', 'inject', '--res'], ['--resource'])):
            got = pt.complete(words)
            check(sorted(got) == want, f'completion of {" ".join(words)!r}', got)


def main():
    pt.require_root('real cgroups and Inject')
    for resource in ('cpu', 'io'):
        if not os.path.exists(f'/proc/pressure/{resource}'):
            pt.skip(f'/proc/pressure/{resource} is missing: PSI is off (psi=0 on the kernel command line?)')
    with pt.real_cgroups(v1=False, v2=True, limit=None) as (cg, _, v2dir), pt.Daemon(config_text=CONFIG) as d:
        for f in ('cpu.pressure', 'io.pressure'):
            if not os.path.exists(os.path.join(v2dir, f)):
                pt.skip(f'{v2dir} has no {f}')
        test_system(d)
        test_cgroup(d, cg, v2dir)
        test_sharing(d, cg)
        test_errors(d, cg)
        if pt.have_v1_memory():
            test_v1_only(d)
        else:
            pt.skip_part('no cgroup v1 memory hierarchy: the v1-only cgroup case is left out')
        test_reload(d)
        test_pressurectl(d, cg)
    pt.finish()


if __name__ == '__main__':
    main()
