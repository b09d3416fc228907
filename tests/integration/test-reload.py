#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reloading the configuration: Reload() with a changed [Levels] Medium=
moves a live level subscription to the new PSI trigger without ending its
stream, and tells it with a trigger_changed event naming the new trigger
(pressurectl watch prints a new header line, or with --json the event); a
configuration with an unknown key is ConfigurationRejected, naming file,
line and key, and the old one stays in force; SIGHUP reloads too."""

import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
# Windows are multiples of 2 s, so that the kernel takes the triggers as
# they are even where the daemon lacks CAP_SYS_RESOURCE.


def config(medium):
    # Episodes must not end between the injections of this test, however
    # slowly it runs (valgrind): a "cleared" would take the next seq.
    return f'[Daemon]\nLogLevel=debug\n\n[Levels]\nMedium={medium}\nClearAfterSec=3600\n'


def psi_registrations(d):
    return [(r['cgroup'], r['trigger'].get('psi'), r['subscribers'])
            for r in d.status()['registrations'] if r['source'] == 'psi']


def psi(threshold_us, window_us):
    return {'stall': 'some', 'threshold_us': threshold_us, 'window_us': window_us}


def expect_event(sub, seq, d, cg):
    r = d.inject('medium', cg)
    pt.check(r['parameters']['delivered'] == 1, 'Inject reaches the subscriber', r)
    msg = sub.recv(timeout=WAIT)
    ev = msg['parameters']['event']
    pt.check(msg.get('continues') is True and ev['kind'] == 'pressure' and ev['seq'] == seq and ev['missed'] == 0,
             'the stream goes on with the next seq', msg, seq)


def expect_trigger_changed(sub, seq, trigger):
    msg = sub.recv(timeout=WAIT)
    ev = msg['parameters']['event']
    pt.check(msg.get('continues') is True and ev['kind'] == 'trigger_changed' and ev['seq'] == seq and
             ev['level'] == 'medium' and ev['trigger'].get('psi') == trigger and
             ev['trigger'].get('level') == 'medium' and ev['adjusted'] is False and ev['source'] == 'psi',
             'the subscriber is told its new trigger', msg, seq, trigger)


def check_watch(d, cg, json_mode):
    """pressurectl watch shows the new trigger after a reload."""
    d.write_config(config('some 100ms 2s'))
    pt.check(pt.run_ctl('reload', socket=d.socket, timeout=WAIT).returncode == 0, 'reload back to 100ms')
    before = d.status()['subscriptions']
    args = [pt.PRESSURECTL, '--socket', d.socket] + (['--json'] if json_mode else []) + \
        ['watch', cg, '--level', 'medium', '--count', '1', '--timeout', str(int(WAIT * 3))]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pt.wait_for(lambda: d.status()['subscriptions'] > before, timeout=WAIT, what='the watch to subscribe')
        d.write_config(config('some 300ms 4s'))
        pt.check(pt.run_ctl('reload', socket=d.socket, timeout=WAIT).returncode == 0, 'reload to 300ms 4s')
        pt.check(d.inject('medium', cg)['parameters']['delivered'] >= 1, 'the watch gets an event')
        out, err = p.communicate(timeout=WAIT * 3)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    pt.check_eq(p.returncode, 0, 'the watch ends after its one event: trigger_changed is not counted')
    if json_mode:
        events = [json.loads(line) for line in out.splitlines() if line.strip()]
        changed = [e for e in events if e.get('kind') == 'trigger_changed']
        pt.check(len(changed) == 1 and changed[0]['trigger']['psi'] == psi(300000, 4000000),
                 '--json: the trigger_changed event on stdout', out, err)
    else:
        headers = [line for line in out.splitlines() if 'watching' in line.lower()]
        pt.check(len(headers) == 2 and 'some 100ms 2s' in headers[0] and 'some 300ms 4s' in headers[1] and
                 'reload' in headers[1], 'a second header line with the new trigger', out, err)


def stable(regs):
    """GetStatus registrations without what changes by itself: the running
    duration of an active episode (real pressure may start one)."""
    out = []
    for r in regs:
        r = dict(r)
        if 'episode' in r:
            r['episode'] = {k: v for k, v in r['episode'].items() if k != 'duration_us'}
        out.append(r)
    return out


def main():
    pt.require_root('Reload is reserved to root')
    # On an empty cgroup of its own: real pressure on / would add events.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=config('some 100ms 2s')) as d:
        sub = pt.Varlink(d.socket, timeout=WAIT)
        first = sub.subscribe(cgroup=cg, level='medium')
        ev = first['parameters']['event']
        pt.check(ev['trigger'].get('psi') == psi(100000, 2000000) and ev['trigger'].get('level') == 'medium',
                 'subscribed with the configured Medium trigger', ev)
        pt.check(psi_registrations(d) == [(cg, psi(100000, 2000000), 1)], 'one registration, old trigger',
                 psi_registrations(d))
        created = d.status()['counters']['registrations_created']

        # Reload() with a new Medium= trigger.
        d.write_config(config('some 150ms 2s'))
        ctl = pt.Varlink(d.socket, timeout=WAIT)
        r = ctl.call_sync('io.pressured.Reload')
        pt.check('error' not in r and r.get('parameters', {}) == {}, 'Reload succeeds with an empty reply', r)
        pt.check(psi_registrations(d) == [(cg, psi(150000, 2000000), 1)],
                 'the subscription moved to the new trigger; the old registration is gone', psi_registrations(d))
        st = d.status()
        pt.check(st['counters']['registrations_created'] == created + 1, 'one new registration', st['counters'])
        pt.check(st['subscriptions'] == 1, 'still one subscription', st['subscriptions'])
        expect_trigger_changed(sub, 1, psi(150000, 2000000))
        expect_event(sub, 2, d, cg)

        # A new subscriber to the same level shares the moved registration.
        other = pt.Varlink(d.socket, timeout=WAIT)
        ev = other.subscribe(cgroup=cg, level='medium')['parameters']['event']
        pt.check(ev['trigger'].get('psi') == psi(150000, 2000000), 'new subscribers get the new trigger', ev)
        pt.check(psi_registrations(d) == [(cg, psi(150000, 2000000), 2)], 'shared', psi_registrations(d))
        other.close()
        pt.wait_for(lambda: psi_registrations(d) == [(cg, psi(150000, 2000000), 1)], timeout=WAIT,
                    what='the second subscriber to leave')

        # A bad configuration is rejected and changes nothing.
        before = d.status()
        d.write_config('[Levels]\nMedium=some 300ms 2s\nBogusKey=1\n')
        r = ctl.call_sync('io.pressured.Reload')
        pt.check(r.get('error') == 'io.pressured.ConfigurationRejected', 'a bad configuration is rejected', r)
        reason = r.get('parameters', {}).get('reason', '')
        pt.check(f'{d.config}:3' in reason, 'the reason names file:line', reason)
        pt.check('BogusKey' in reason, 'the reason names the key', reason)
        after = d.status()
        pt.check(stable(after['registrations']) == stable(before['registrations']), 'registrations unchanged',
                 before['registrations'], after['registrations'])
        for k in ('registrations_created', 'registrations_removed'):
            pt.check(after['counters'][k] == before['counters'][k], f'{k} unchanged', after['counters'])
        # The old [Levels] stay in force for new subscribers.
        other = pt.Varlink(d.socket, timeout=WAIT)
        ev = other.subscribe(cgroup=cg, level='medium')['parameters']['event']
        pt.check(ev['trigger'].get('psi') == psi(150000, 2000000), 'the previous configuration is still used', ev)
        other.close()
        expect_event(sub, 3, d, cg)

        # SIGHUP reloads as well.
        d.write_config(config('some 200ms 4s'))
        os.kill(d.pid, signal.SIGHUP)
        pt.wait_for(lambda: psi_registrations(d) == [(cg, psi(200000, 4000000), 1)], timeout=WAIT,
                    what='SIGHUP to move the subscription to the new trigger')
        expect_trigger_changed(sub, 4, psi(200000, 4000000))
        expect_event(sub, 5, d, cg)

        # Reload as root through pressurectl, if it was built.
        if os.path.exists(pt.PRESSURECTL):
            d.write_config(config('some 250ms 6s'))
            p = pt.run_ctl('reload', socket=d.socket, timeout=WAIT)
            pt.check(p.returncode == 0, 'pressurectl reload', p.returncode, p.stdout, p.stderr)
            pt.check(psi_registrations(d) == [(cg, psi(250000, 6000000), 1)], 'reloaded via pressurectl',
                     psi_registrations(d))
            expect_trigger_changed(sub, 6, psi(250000, 6000000))
            expect_event(sub, 7, d, cg)
        ctl.close()
        sub.close()
        if os.path.exists(pt.PRESSURECTL):
            check_watch(d, cg, json_mode=False)
            check_watch(d, cg, json_mode=True)
    pt.finish()


if __name__ == '__main__':
    main()
