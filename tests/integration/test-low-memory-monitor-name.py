#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The system bus only when asked, and a name that is not ours.

On a private system bus: with [DBus] LowMemoryMonitor=no (the default)
and no kills subscriber the daemon holds no bus connection, whatever it
serves; turned on by Reload it connects (the RSS it costs is printed).
pressurectl status says so in text as --json does: off, serving (with
the signals sent), the name another's.
With the name already owned by another connection (low-memory-monitor in
real life) the daemon logs one line naming the owner's pid, says
"name-taken", keeps serving varlink, and takes the name once the owner
releases it. A bus without pressured's policy refuses the name: the log
names the policy file. A level the registry refuses (MaxRegistrations=)
is logged and left out. The service's three registrations of "/" count
one subscriber each in status, and take an injected event only by
sending the signal: status and inject say what they count. Turned off,
the daemon logs "Stopped serving" only for a name it served."""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
import bus_test as bt  # noqa: E402


def subscribe_and_inject(d):
    """A varlink level subscription on / answers and gets an injected event."""
    sub = pt.Varlink(d.socket, timeout=pt.scaled(10))
    first = sub.subscribe(cgroup='/', level='critical')
    pt.check_eq(first['parameters']['event']['kind'], 'subscribed', 'Subscribe answers')
    d.inject('critical', '/')
    ev = sub.recv(timeout=pt.scaled(10))['parameters']['event']
    pt.check(ev['kind'] == 'pressure' and ev['level'] == 'critical', 'the injected event arrives', ev)
    return sub


def status_text(d, *lines):
    """pressurectl status (text) has each of @lines; returns its output."""
    res = pt.run_ctl('status', socket=d.socket)
    pt.check(res.returncode == 0 and all(x in res.stdout for x in lines), 'pressurectl status says', lines,
             res.stdout)
    return res.stdout


def inject_text(d, n, level='critical'):
    """pressurectl inject says how many deliveries, and what it counted."""
    res = pt.run_ctl('inject', '/', '--level', level, socket=d.socket)
    want = (f'Delivered {n} time{"" if n == 1 else "s"}: once to each subscriber of each registration on / '
            f'that took the {level} event (a level stream is one on each of its levels up to it; '
            'LowMemoryMonitor only when it sent the signal).\n')
    pt.check_eq((res.returncode, res.stdout), (0, want), f'pressurectl inject {level}')


def part_off(bus):
    """Off: no connection, not even while serving a subscriber; then on by Reload."""
    with pt.Daemon(config_text=bt.lmm_config(False), env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
        sub = subscribe_and_inject(d)
        pt.check_eq(d.status()['dbus'], {'connected': False, 'low_memory_monitor': 'off', 'low_memory_warnings': 0},
                    'GetStatus dbus while off')
        pids = bus.connection_pids()
        pt.check(os.getpid() in pids, 'the bus lists connections with their pid (this test is one)', pids)
        pt.check(d.pid not in pids, 'the daemon holds no bus connection while off', d.pid, pids)
        pt.check('system bus' not in d.log(), 'nothing about the system bus in the log', d.log())
        status_text(d, 'LowMemoryMonitor: off ([DBus] LowMemoryMonitor=no)', 'System bus:     not connected')
        sub.close()

        mem_off, how = d.own_memory()
        d.write_config(bt.lmm_config(True))
        pt.check('error' not in pt.Varlink(d.socket).call_sync('io.pressured.Reload'), 'Reload to on succeeds')
        bt.wait_owner(bus, d.pid)
        pt.check(d.pid in bus.connection_pids(), 'now the daemon is on the bus')
        time.sleep(0.5)  # let the first signals' buffers settle before measuring (a figure, not asserted)
        mem_on, _ = d.own_memory()
        if mem_off is not None:
            print(f'daemon {how}: {mem_off} KiB off, {mem_on} KiB with LowMemoryMonitor=yes on the bus '
                  f'({mem_on - mem_off:+d} KiB)', flush=True)


def part_taken(bus):
    """The name is someone else's: one line, no crash, the rest works; released, it is ours."""
    r = bus.call('RequestName', (bt.NAME, 4), '(su)', '(u)')[0]  # DO_NOT_QUEUE
    pt.check_eq(r, 1, 'the test owns the name first')
    with pt.Daemon(config_text=bt.lmm_config(True), env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
        line = f'The name {bt.NAME} is owned by pid {os.getpid()} '
        pt.wait_for(lambda: line in d.log(), timeout=pt.scaled(20), what='the log line naming the owner')
        pt.check_eq(d.log().count(line), 1, 'one line')
        pt.check('low-memory-monitor.service' in d.log(), 'the line says how to stop low-memory-monitor')
        st = d.status()['dbus']
        pt.check_eq((st['connected'], st['low_memory_monitor']), (True, 'name-taken'), 'GetStatus dbus')
        pt.check_eq(bus.owner_pid(), os.getpid(), 'the name stays with its owner')
        sub = subscribe_and_inject(d)
        r = d.inject('critical', '/')
        # Inject reaches the pressure subscriptions on / of its level and below: the varlink one, not the service.
        pt.check_eq(r['parameters']['delivered'], 1, 'no signal without the name')
        pt.check_eq(d.status()['dbus']['low_memory_warnings'], 0, 'nothing sent without the name')
        status_text(d, "LowMemoryMonitor: on, but the name org.freedesktop.LowMemoryMonitor is another program's",
                    'System bus:     connected')
        inject_text(d, 1)

        pt.check_eq(bus.call('ReleaseName', (bt.NAME,), '(s)', '(u)')[0], 1, 'the test releases the name')
        bt.wait_owner(bus, d.pid, 'the daemon takes the released name')
        pt.check_eq(d.status()['dbus']['low_memory_monitor'], 'owner', 'state once the name is ours')
        pt.check(f'The name {bt.NAME} was released; asking for it.' in d.log(), 'the log says so')
        r = d.inject('critical', '/')
        pt.check_eq(r['parameters']['delivered'], 2, 'now the service signals too')
        pt.check_eq(d.status()['dbus']['low_memory_warnings'], 1, 'and counts it')
        status_text(d, 'LowMemoryMonitor: serving org.freedesktop.LowMemoryMonitor, 1 LowMemoryWarning signal sent')
        inject_text(d, 2)
        sub.close()
        pt.check(d.proc.poll() is None, 'the daemon is still running')
        # Turned off after serving: the one line that says it stopped.
        d.write_config(bt.lmm_config(False))
        pt.check('error' not in pt.Varlink(d.socket).call_sync('io.pressured.Reload'), 'Reload to off succeeds')
        pt.check_eq(d.log().count(f'Stopped serving {bt.NAME}.'), 1, 'a name served, then given back: said once')
        pt.check('was not ours' not in d.log(), 'and nothing else', d.log())


def part_no_policy():
    """A bus without pressured's policy file refuses the name."""
    with bt.PrivateBus(tempfile.mkdtemp(prefix='pressured-bus-'), policy=False) as bus, \
            pt.Daemon(config_text=bt.lmm_config(True), env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
        # Where this build installs it, which the line names.
        with open(os.path.join(pt.BUILD_ROOT, 'meson-info', 'intro-installed.json')) as f:
            where = next(os.path.dirname(v) for k, v in json.load(f).items()
                         if k.endswith('/io.pressured.LowMemoryMonitor.conf'))
        pt.wait_for(lambda: f'io.pressured.LowMemoryMonitor.conf installed in {where}/?' in d.log(),
                    timeout=pt.scaled(20), what=f'the log line naming the policy file in {where}')
        pt.check('org.freedesktop.DBus.Error.AccessDenied' in d.log(), 'the log gives the bus\'s error')
        pt.check_eq(d.status()['dbus']['low_memory_monitor'], 'name-taken', 'GetStatus dbus')
        subscribe_and_inject(d).close()
        # The service holds the three registrations of "/" (one subscriber each in status), and takes no
        # injected event without the name: both numbers say what they count.
        pt.wait_for(lambda: d.status()['subscriptions'] == 0, what='the varlink subscriber to go')
        regs = [r for r in d.status()['registrations'] if r['cgroup'] == '/']
        pt.check(len(regs) == 3 and all(r['subscribers'] == 1 for r in regs), 'three held registrations', regs)
        text = status_text(d, '(SUBSCRIBERS: what holds the registration')
        pt.check('LowMemoryMonitor service counted once' in text, 'status says who holds them', text)
        inject_text(d, 0, 'low')
        # Turned off without ever serving: no "Stopped serving", a line that says what happened.
        d.write_config(bt.lmm_config(False))
        pt.check('error' not in pt.Varlink(d.socket).call_sync('io.pressured.Reload'), 'Reload to off succeeds')
        pt.check('Stopped serving' not in d.log(), 'never served, so not "Stopped serving"', d.log())
        pt.check(f'[DBus] LowMemoryMonitor=no: releasing the level registrations of the whole system; the name '
                 f'{bt.NAME} was not ours (name-taken).' in d.log(), 'the true line', d.log())


def part_limit(bus):
    """A level that cannot be registered ([Limits] MaxRegistrations=) is left out, logged; the rest serve."""
    with pt.Daemon(config_text=bt.lmm_config(True, '\n[Limits]\nMaxRegistrations=2\n'),
                   env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
        bt.wait_owner(bus, d.pid)
        pt.check('Failed to register the critical level on the whole system for LowMemoryWarning '
                 '(io.pressured.LimitExceeded), leaving it out' in d.log(), 'the level left out is logged', d.log())
        pt.check_eq(len([r for r in d.status()['registrations'] if r['cgroup'] == '/']), 2, 'low and medium held')
        pt.check_eq(d.inject('medium', '/')['parameters']['delivered'], 1, 'the service still signals')


def main():
    pt.require_root('the private system bus lets root own the name')
    bt.require_gi()
    with bt.PrivateBus(tempfile.mkdtemp(prefix='pressured-bus-')) as bus:
        part_off(bus)
        part_taken(bus)
        part_limit(bus)
    part_no_policy()
    pt.finish()


if __name__ == '__main__':
    main()
