#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""[DBus] LowMemoryMonitor=yes on a private system bus (dbus-daemon with
pressured's policy file), heard by GLib's own GMemoryMonitor running as
nobody: injected low, medium and critical events on / arrive as 50, 100
and 255; the object is introspectable by anyone; the three whole-system
registrations are held, with no wakeup while there is no pressure;
GetStatus and /metrics count the signals; the bus
restarting is survived (the daemon reconnects and owns the name again, a
restarted GLib client hears it); Reload turns the service off (name,
registrations and bus connection gone) and on again. Prints the latency
from the Inject call to GLib's callback (test-low-memory-monitor-name
prints the RSS the service costs)."""

import http.client
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
import bus_test as bt  # noqa: E402

LEVELS = (('low', 50), ('medium', 100), ('critical', 255))


def metric(port, name):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=pt.scaled(10))
    c.request('GET', '/metrics')
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    raise AssertionError(f'{name} missing from /metrics')


def root_registrations(d):
    return sorted((r['trigger']['psi']['stall'], r['trigger']['psi']['threshold_us'])
                  for r in d.status()['registrations'] if r['cgroup'] == '/' and r['source'] == 'psi')


HELD = [('full', 1900000), ('some', 1800000), ('some', 1900000)]


def check_levels(d, client, latencies):
    """Each level injected on / arrives as its byte, in order, once."""
    for level, byte in LEVELS:
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = d.inject(level, '/')
        pt.check_eq(r['parameters']['delivered'], 1, f'Inject {level} reaches the service once')
        w = client.warning(pt.scaled(10))
        pt.check(w is not None, f'GLib got a low-memory-warning for {level}')
        pt.check_eq(w[0], byte, f'the GMemoryMonitorWarningLevel of {level}')
        latencies.append((w[1] - t0) / 1e6)
    pt.check(client.warning(0.5) is None, 'one signal per event, nothing more')


def check_introspection(bus):
    """Anyone (nobody) may introspect the object: the interface and its signal."""
    out = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'busctl',
                          '--address=' + bus.address, 'call', bt.NAME, bt.PATH,
                          'org.freedesktop.DBus.Introspectable', 'Introspect'],
                         capture_output=True, text=True, timeout=pt.scaled(10))
    pt.check(out.returncode == 0, 'nobody may call Introspect', out.stderr)
    xml = out.stdout.replace('\\"', '"')
    pt.check('<interface name="org.freedesktop.LowMemoryMonitor">' in xml and
             '<signal name="LowMemoryWarning">' in xml and '<arg type="y" name="level"/>' in xml,
             'the interface and its signal are introspectable', xml)


def part_signals(bus, d, port):
    bt.wait_owner(bus, d.pid)
    st = d.status()['dbus']
    pt.check_eq(st, {'connected': True, 'low_memory_monitor': 'owner', 'low_memory_warnings': 0},
                'GetStatus dbus while serving')
    pt.check_eq(root_registrations(d), HELD, 'the three [Levels] registrations on / are held')
    if not pt.WRAPPER:  # valgrind has threads and timers of its own
        # No wakeup without pressure while serving the name: no timer armed, only I/O can wake it.
        pt.wait_for(lambda: pt.epoll_wait_timeout(d.pid) == -1, what='the daemon to wait with no timer armed')
    check_introspection(bus)
    client = bt.GLibClient(bus, user='nobody')
    try:
        client.wait_subscribed(d)
        before = d.status()['dbus']['low_memory_warnings']
        latencies = []
        check_levels(d, client, latencies)
        pt.check_eq(d.status()['dbus']['low_memory_warnings'], before + 3, 'GetStatus counts the signals')
        pt.check_eq(metric(port, 'pressured_low_memory_warnings_total'), before + 3, '/metrics counts them')
        pt.check_eq(metric(port, 'pressured_low_memory_monitor_owner'), 1, '/metrics: the name is ours')
        pt.check_eq(metric(port, 'pressured_dbus_connected'), 1, '/metrics: connected')
        print('latency from Inject to the GLib callback (ms): ' + ', '.join(f'{x:.2f}' for x in latencies))
    finally:
        client.stop()


def part_restart(bus, d):
    """The bus goes away and comes back at the same address."""
    bus.stop()
    pt.wait_for(lambda: d.status()['dbus']['connected'] is False, what='the daemon notices the bus is gone')
    pt.check_eq(d.status()['dbus']['low_memory_monitor'], 'waiting-for-bus', 'state without a bus')
    pt.check('Lost the connection to the system bus, reconnecting' in d.log(), 'the loss is logged')
    r = d.inject('critical', '/')
    pt.check_eq(r['parameters']['delivered'], 0, 'no signal without a bus')
    bus.start()
    bt.wait_owner(bus, d.pid, 'the daemon owns the name again on the new bus')
    pt.check_eq(d.status()['dbus']['low_memory_monitor'], 'owner', 'state after the reconnect')
    client = bt.GLibClient(bus, user='nobody')
    try:
        client.wait_subscribed(d)
        check_levels(d, client, [])
    finally:
        client.stop()


def part_reload(bus, d):
    """Reload turns the service off and on."""
    d.write_config(bt.lmm_config(False))
    pt.check('error' not in pt.Varlink(d.socket).call_sync('io.pressured.Reload'), 'Reload to off succeeds')
    pt.check_eq(d.status()['dbus'], {'connected': False, 'low_memory_monitor': 'off',
                                     'low_memory_warnings': d.status()['dbus']['low_memory_warnings']},
                'GetStatus dbus after turning it off')
    pt.check_eq(root_registrations(d), [], 'the registrations are released')
    pt.wait_for(lambda: bus.owner_pid() is None, what='the name is released')
    pt.wait_for(lambda: d.pid not in bus.connection_pids(), what='the daemon leaves the bus')

    d.write_config(bt.lmm_config(True))
    pt.check('error' not in pt.Varlink(d.socket).call_sync('io.pressured.Reload'), 'Reload to on succeeds')
    bt.wait_owner(bus, d.pid, 'the daemon owns the name after Reload')
    pt.check_eq(root_registrations(d), HELD, 'the registrations are held again')


def main():
    pt.require_root('the private system bus lets root own the name, and the GLib client runs as nobody')
    bt.require_gi()
    port = pt.free_port()
    with bt.PrivateBus(tempfile.mkdtemp(prefix='pressured-bus-')) as bus, \
            pt.Daemon(config_text=bt.lmm_config(True, f'\n[Metrics]\nListen=127.0.0.1:{port}\n'),
                      env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
        part_signals(bus, d, port)
        part_restart(bus, d)
        part_reload(bus, d)
        pt.check(d.proc.poll() is None, 'the daemon is still running')
    pt.finish()


if __name__ == '__main__':
    main()
