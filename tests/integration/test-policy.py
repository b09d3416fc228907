#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fast-trigger policy as far as it shows without CAP_SYS_RESOURCE:
GetStatus reports [Policy] MaxFastTriggersPerUser= (default 4, 0, a
reloaded value) and its use per uid; a bad value is refused at start and
on Reload, naming file, line and key; a daemon that the kernel holds to
2 s windows rounds every fast trigger, says why in adjusted_reason and
charges nobody, and pressurectl watch prints that reason. The quota itself
needs a daemon with CAP_SYS_RESOURCE: the vm suite checks it
(tests/vm/checks.py)."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
FAST = {'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000}


def fast(n):
    """The n-th distinct fast trigger: windows 1 s, 1.1 s, ..."""
    return {'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000 + n * 100000}


def policy(d):
    return d.status()['fast_triggers']


def test_reported():
    with pt.Daemon() as d:
        pt.check_eq(policy(d), {'max_per_user': 4, 'users': []}, 'the default quota, nothing in use')
        out = pt.run_ctl('status', socket=d.socket)
        pt.check(out.returncode == 0 and 'Fast PSI triggers: at most 4 per user other than root; none in use'
                 in out.stdout, 'pressurectl status shows the quota', out.returncode, out.stdout)

    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    d = pt.Daemon(config_text=f'[Policy]\nMaxFastTriggersPerUser=0\n[Metrics]\nListen=127.0.0.1:{port}\n')
    with d:
        pt.check_eq(policy(d)['max_per_user'], 0, 'MaxFastTriggersPerUser=0 is reported')
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=WAIT)
        c.request('GET', '/metrics')
        text = c.getresponse().read().decode()
        c.close()
        pt.check('\npressured_fast_triggers_max_per_user 0\n' in text and
                 '# TYPE pressured_fast_triggers gauge\n' in text, '/metrics has the quota', text)
        d.write_config(f'[Policy]\nMaxFastTriggersPerUser=7\n[Metrics]\nListen=127.0.0.1:{port}\n')
        v = pt.Varlink(d.socket, timeout=WAIT)
        r = v.call_sync('io.pressured.Reload')
        v.close()
        pt.check('error' not in r, 'Reload with a new quota', r)
        pt.check_eq(policy(d)['max_per_user'], 7, 'the reloaded quota is reported')

        d.write_config('[Policy]\n\nMaxFastTriggersPerUser=many\n')  # line 3
        v = pt.Varlink(d.socket, timeout=WAIT)
        r = v.call_sync('io.pressured.Reload')
        v.close()
        reason = r.get('parameters', {}).get('reason', '')
        pt.check(r.get('error') == 'io.pressured.ConfigurationRejected', 'a bad quota is rejected on Reload', r)
        pt.check(f'{d.config}:3' in reason and 'MaxFastTriggersPerUser=' in reason
                 and 'between 0 and 1000000' in reason, 'the rejection names file:line, key and range', reason)
        pt.check_eq(policy(d)['max_per_user'], 7, 'the quota in force stays')


def test_bad_start():
    for value in ('-1', '1000001', '4x'):
        d = pt.Daemon(config_text=f'[Policy]\nMaxFastTriggersPerUser={value}\n')
        d.start(wait=False)
        try:
            rc = d.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            d.kill()
            raise AssertionError(f'the daemon started with MaxFastTriggersPerUser={value}')
        d.logf.close()
        log = d.log()
        pt.check(rc != 0, f'MaxFastTriggersPerUser={value} at start is a non-zero exit', rc)
        pt.check(f'{d.config}:2' in log and 'MaxFastTriggersPerUser' in log,
                 'the log names file:line and key', log)
        shutil.rmtree(d.tmpdir, ignore_errors=True)


def hold_fast_triggers(sock, n):
    """As the calling user: hold @n distinct fast subscriptions on "/" at
    once; return their subscribed events and GetStatus seen meanwhile."""
    subs, events = [], []
    try:
        for i in range(n):
            v = pt.Varlink(sock, timeout=WAIT)
            subs.append(v)
            msg = v.subscribe(cgroup='/', psi=fast(i))
            events.append(msg.get('parameters', {}).get('event', msg))
        v = pt.Varlink(sock, timeout=WAIT)
        st = v.call_sync('io.pressured.GetStatus')['parameters']
        v.close()
        return events, st
    finally:
        for v in subs:
            v.close()


def test_unprivileged_daemon():
    with pt.Daemon() as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        ev = v.subscribe(cgroup='/', psi=FAST)['parameters']['event']
        v.close()
        if not ev['adjusted']:
            pt.skip('the daemon has CAP_SYS_RESOURCE here: the vm suite checks the quota')
        pt.check('CAP_SYS_RESOURCE' in ev['adjusted_reason'], 'root: the reason names the capability', ev)
        pt.check_eq(ev['trigger']['psi'], {'stall': 'some', 'threshold_us': 200000, 'window_us': 2000000},
                    'rounded to 2 s, threshold scaled')

        # Six fast triggers of nobody, more than the quota: each rounded by the
        # kernel's rule, and none charged, since none is fast once registered.
        events, st = pt.run_as('nobody', hold_fast_triggers, d.socket, 6)
        for i, e in enumerate(events):
            pt.check(e.get('kind') == 'subscribed' and e['adjusted'] is True, f'fast trigger {i} adjusted', e)
            pt.check('CAP_SYS_RESOURCE' in e['adjusted_reason'] and 'MaxFastTriggersPerUser' not in
                     e['adjusted_reason'], f'fast trigger {i}: the kernel is the reason', e)
            pt.check_eq(e['trigger']['psi']['window_us'] % 2000000, 0, f'fast trigger {i}: a 2 s multiple')
        pt.check_eq(st['fast_triggers']['users'], [], 'rounded triggers are charged to nobody')
        pt.check(all('fast_trigger_uid' not in r for r in st['registrations']),
                 'no registration counts against a uid', st['registrations'])

        # A window the kernel takes from anyone is not adjusted and gives no reason.
        v = pt.Varlink(d.socket, timeout=WAIT)
        ev = v.subscribe(cgroup='/', psi={'stall': 'full', 'threshold_us': 150000, 'window_us': 4000000})
        v.close()
        ev = ev['parameters']['event']
        pt.check(ev['adjusted'] is False and 'adjusted_reason' not in ev, 'a 4 s window is kept as is', ev)


def watch_one(d, cgroup, *args):
    """pressurectl [ARGS] watch CGROUP --psi 'some 100ms 1s' --count 1 until
    one injected event; return (stdout, stderr)."""
    pt.wait_for(lambda: d.status()['subscriptions'] == 0, timeout=WAIT, what='earlier subscriptions to go')
    proc = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket] + list(args) +
                            ['watch', cgroup, '--psi', 'some 100ms 1s', '--count', '1'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def subscribed():
            if proc.poll() is not None:
                return 'exited'
            return d.status()['subscriptions'] >= 1
        pt.check(pt.wait_for(subscribed, timeout=WAIT, what='the watch to subscribe') is True,
                 'watch subscribed', proc.returncode, proc.stderr.read() if proc.poll() is not None else '')
        res = pt.run_ctl('inject', cgroup, '--level', 'low', socket=d.socket, timeout=WAIT)
        pt.check(res.returncode == 0, 'inject on the watched cgroup', res.returncode, res.stderr)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    pt.check(proc.returncode == 0, 'watch --count 1 exits 0', proc.returncode, out, err)
    return out, err


def test_watch_prints_reason():
    """pressurectl watch shows why the daemon adjusted the trigger. An empty
    cgroup of our own gets no kernel events, only the injected one."""
    with pt.real_cgroups(v1=False) as (cgroup, _, _), pt.Daemon() as d:
        v = pt.Varlink(d.socket, timeout=WAIT)
        ev = v.subscribe(cgroup=cgroup, psi=FAST)['parameters']['event']
        v.close()
        if not ev['adjusted']:
            pt.skip_part('the header of an adjusted trigger: the daemon has CAP_SYS_RESOURCE here, nothing is adjusted')
            return
        reason = ev['adjusted_reason']
        header = f'Watching {cgroup}: psi (some 200ms 2s), adjusted by the daemon: {reason}'

        out, err = watch_one(d, cgroup)
        lines = out.splitlines()
        pt.check(len(lines) == 2, 'a header and one event line', out, err)
        pt.check_eq(lines[0], header, 'the header names the reason')
        pt.check('CAP_SYS_RESOURCE' in lines[0], 'the reason names the capability', lines[0])
        pt.check(f' {cgroup} pressure low source=inject synthetic' in lines[1], 'the event line', lines[1])

        # --json: no header; the subscribed event, reason included, then the event, nothing on stderr.
        out, err = watch_one(d, cgroup, '--json')
        pt.check_eq(err, '', 'nothing on stderr with --json')
        evs = [json.loads(line) for line in out.splitlines()]
        pt.check(len(evs) == 2 and evs[0]['kind'] == 'subscribed' and evs[0]['adjusted'] is True and
                 evs[0]['adjusted_reason'] == reason and evs[1]['kind'] == 'pressure',
                 'the subscribed event names the reason, then the event', out)

        # Nothing adjusted, nothing said.
        pt.wait_for(lambda: d.status()['subscriptions'] == 0, timeout=WAIT, what='the watches to go')
        line = pt.first_line([pt.PRESSURECTL, '--socket', d.socket, 'watch', cgroup, '--psi', 'some 200ms 2s'])
        pt.check_eq(line, f'Watching {cgroup}: psi (some 200ms 2s)\n', 'a kept trigger has no adjustment note')


def main():
    pt.require_root('it runs clients as nobody')
    test_reported()
    test_bad_start()
    test_watch_prints_reason()
    test_unprivileged_daemon()


if __name__ == '__main__':
    main()
    pt.finish()
