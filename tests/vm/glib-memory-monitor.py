#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""GLib's GMemoryMonitor as a GNOME application uses it, for the vm suite
and tests/bench/bench-lmm.py.

    GIO_USE_MEMORY_MONITOR=dbus /usr/bin/python3 glib-memory-monitor.py

Needs Debian's python3-gi and gir1.2-glib-2.0. Gets the default monitor
(Gio.MemoryMonitor.dup_default(), GMemoryMonitorDBus with
GIO_USE_MEMORY_MONITOR=dbus: it watches org.freedesktop.LowMemoryMonitor on
the system bus) and prints, flushed:
  - "ready" once org.freedesktop.LowMemoryMonitor has an owner and a proxy
    of our own, made after the monitor's, is in place: the monitor's proxy
    and signal match were set up before it on the same connection. Our
    name watch takes the steps of the monitor's (GLib watches the name with
    G_BUS_NAME_WATCHER_FLAGS_AUTO_START: StartServiceByName, then
    GetNameOwner), one after it, so each of our replies comes after the
    monitor's; a watch without that flag would see the name one round trip
    sooner and could say "ready" before the monitor listens;
  - "LEVEL MONOTONIC_US" for each low-memory-warning: the level GLib passes
    (50, 100 or 255) and CLOCK_MONOTONIC in microseconds when the callback ran.
Exits when stdin is closed, or on SIGTERM or SIGINT. Exit 2 if the default
monitor is not the D-Bus one.

    GIO_USE_MEMORY_MONITOR=psi /usr/bin/python3 glib-memory-monitor.py --psi

GLib's PSI monitor instead (GMemoryMonitorPsi; GLib 2.90 reads
$MEMORY_PRESSURE_WATCH and connects to a socket there): "ready" once the
main loop runs, the monitor set up before it; the same lines per warning.
Exit 2 if the default monitor is not the PSI one.
"""
import os
import signal
import sys
import time

os.environ.setdefault('GIO_USE_MEMORY_MONITOR', 'psi' if sys.argv[1:] == ['--psi'] else 'dbus')

import gi  # noqa: E402

gi.require_version('Gio', '2.0')
gi.require_version('GLib', '2.0')
from gi.repository import Gio, GLib  # noqa: E402

NAME = 'org.freedesktop.LowMemoryMonitor'
PATH = '/org/freedesktop/LowMemoryMonitor'


def main():
    psi = sys.argv[1:] == ['--psi']
    want = 'GMemoryMonitorPsi' if psi else 'GMemoryMonitorDBus'
    loop = GLib.MainLoop()
    monitor = Gio.MemoryMonitor.dup_default()
    kind = type(monitor).__gtype__.name
    if kind != want:
        print(f'glib-memory-monitor: the default GMemoryMonitor is {kind}, not {want}',
              file=sys.stderr, flush=True)
        return 2

    def warning(_monitor, level):
        print(f'{int(level)} {time.monotonic_ns() // 1000}', flush=True)
    monitor.connect('low-memory-warning', warning)

    said = []
    if psi:
        def running():
            print('ready', flush=True)
            return GLib.SOURCE_REMOVE
        GLib.idle_add(running)

    def proxy_ready(_source, result, _data=None):
        Gio.DBusProxy.new_finish(result)
        if not said:
            said.append(True)
            print('ready', flush=True)

    def appeared(connection, _name, _owner):
        Gio.DBusProxy.new(connection, Gio.DBusProxyFlags.DO_NOT_AUTO_START, None, NAME, PATH, NAME, None,
                          proxy_ready, None)

    if not psi:
        Gio.bus_watch_name(Gio.BusType.SYSTEM, NAME, Gio.BusNameWatcherFlags.AUTO_START, appeared, None)

    def stdin_closed(*_args):
        loop.quit()
        return GLib.SOURCE_REMOVE
    GLib.io_add_watch(GLib.IOChannel.unix_new(0), GLib.PRIORITY_DEFAULT, GLib.IOCondition.HUP
                      | GLib.IOCondition.IN | GLib.IOCondition.ERR, stdin_closed)
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, stdin_closed)
    loop.run()
    return 0


if __name__ == '__main__':
    sys.exit(main())
