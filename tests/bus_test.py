# SPDX-License-Identifier: MIT
"""Helpers for the tests of the daemon's system bus side: a private
dbus-daemon configured like a system bus (with pressured's installed
policy file), calls on it through GLib's GDBus, and GLib's own
GMemoryMonitor in a child process.

Needs Debian's python3-gi and gir1.2-glib-2.0, and dbus-daemon. Where the
interpreter running the test lacks gi, require_gi() re-executes the test
with /usr/bin/python3; where nothing has it, the test is skipped (77).
"""
import os
import shutil
import subprocess
import sys
import time

import pressured_test as pt

NAME = 'org.freedesktop.LowMemoryMonitor'
PATH = '/org/freedesktop/LowMemoryMonitor'
POLICY = os.path.join(pt.SOURCE_ROOT, 'conf', 'dbus', 'io.pressured.LowMemoryMonitor.conf')
SYSTEM_PYTHON = '/usr/bin/python3'

Gio = GLib = None


def require_gi():
    """Import GLib's bindings, re-executing under Debian's python3 if this
    interpreter has none; skip (77) without them or without dbus-daemon."""
    global Gio, GLib
    if not shutil.which('dbus-daemon'):
        pt.skip('dbus-daemon is not installed (Debian package dbus-daemon)')
    try:
        import gi
        gi.require_version('Gio', '2.0')
        from gi.repository import Gio as _Gio, GLib as _GLib
    except (ImportError, ValueError):
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
        pt.skip('GLib\'s Python bindings are missing (Debian packages python3-gi, gir1.2-glib-2.0)')
    Gio, GLib = _Gio, _GLib


# Like Debian's /usr/share/dbus-1/system.conf: nobody owns a name or calls
# a method unless a policy allows it; pressured's policy file is included
# as installed.
BUS_CONFIG = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  {include}
</busconfig>
'''


class PrivateBus:
    """A dbus-daemon of type system on a unix socket in a temporary
    directory; stop() and start() again keep the address. Without
    @policy, pressured's policy file is left out: nobody may own the name."""

    def __init__(self, tmpdir, policy=True):
        self.dir = tmpdir
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, 'system_bus_socket')
        self.address = 'unix:path=' + self.sock
        self.config = os.path.join(self.dir, 'bus.conf')
        with open(self.config, 'w') as f:
            f.write(BUS_CONFIG.format(sock=self.sock, include=f'<include>{POLICY}</include>' if policy else ''))
        self.proc = None
        self._conn = None

    def start(self):
        self.logf = open(os.path.join(self.dir, 'bus.log'), 'a')
        self.proc = subprocess.Popen(['dbus-daemon', '--nofork', '--nopidfile', '--nosyslog',
                                      '--config-file=' + self.config],
                                     stdout=self.logf, stderr=subprocess.STDOUT)

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f'dbus-daemon exited with {self.proc.returncode}')
            try:
                self.connect()
                return True
            except GLib.Error:
                return False
        pt.wait_for(up, what='the private dbus-daemon')
        return self

    def stop(self):
        if self._conn:
            self._conn.close_sync(None)
            self._conn = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
            self.logf.close()

    def connect(self):
        """A connection of this process, kept until stop()."""
        if self._conn is None or self._conn.is_closed():
            flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
            self._conn = Gio.DBusConnection.new_for_address_sync(self.address, flags, None, None)
        return self._conn

    def call(self, method, args=None, signature=None, reply='()', dest='org.freedesktop.DBus',
             path='/org/freedesktop/DBus', iface='org.freedesktop.DBus'):
        v = GLib.Variant(signature, args) if signature else None
        return self.connect().call_sync(dest, path, iface, method, v, GLib.VariantType(reply),
                                        Gio.DBusCallFlags.NONE, 10000, None).unpack()

    def owner_pid(self, name=NAME):
        """The pid owning @name, or None."""
        try:
            return self.call('GetConnectionUnixProcessID', (name,), '(s)', '(u)')[0]
        except GLib.Error:
            return None

    def connection_pids(self):
        """The pid of every connection on the bus."""
        pids = []
        for n in self.call('ListNames', reply='(as)')[0]:
            if n.startswith(':'):
                try:
                    pids.append(self.call('GetConnectionUnixProcessID', (n,), '(s)', '(u)')[0])
                except GLib.Error:
                    pass  # gone meanwhile
        return pids

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# GLib's GMemoryMonitor as an application uses it: one line per
# low-memory-warning with the level and CLOCK_MONOTONIC in ns.
GLIB_CLIENT = r'''
import sys, time
import gi
gi.require_version('Gio', '2.0')
from gi.repository import Gio, GLib
m = Gio.MemoryMonitor.dup_default()
print('monitor', type(m).__name__, flush=True)
def on_warning(monitor, level):
    print('warning', int(level), time.clock_gettime_ns(time.CLOCK_MONOTONIC), flush=True)
m.connect('low-memory-warning', on_warning)
GLib.MainLoop().run()
'''


class GLibClient:
    """GLib's GMemoryMonitor (GIO_USE_MEMORY_MONITOR=dbus) in a child
    process, as @user when given, reading lines into a queue."""

    def __init__(self, bus, user=None):
        import queue
        import threading
        env = dict(os.environ, GIO_USE_MEMORY_MONITOR='dbus', DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        cmd = [SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else sys.executable, '-c', GLIB_CLIENT]
        if user:
            import pwd
            pw = pwd.getpwnam(user)
            cmd = ['setpriv', f'--reuid={pw.pw_uid}', f'--regid={pw.pw_gid}', '--clear-groups'] + cmd
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd='/')
        self.lines = queue.Queue()

        def reader():
            for line in self.proc.stdout:
                self.lines.put(line.split())
            self.lines.put(None)
        threading.Thread(target=reader, daemon=True).start()
        first = self.next(pt.scaled(20))
        pt.check(first and first[0] == 'monitor', 'the GLib client starts', first)
        pt.check_eq(first[1], 'GMemoryMonitorDBus', 'the memory monitor GLib picked')

    def next(self, timeout):
        import queue
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def warning(self, timeout):
        """The next (level, monotonic ns) received, or None."""
        line = self.next(timeout)
        if line is None:
            return None
        pt.check(line[0] == 'warning', 'the GLib client prints warnings', line)
        return int(line[1]), int(line[2])

    def wait_subscribed(self, d, level='low'):
        """Inject @level on / until the client gets one: it has no sign of
        its own for "listening". Then drain what the last injections sent."""
        end = time.monotonic() + pt.scaled(20)
        while time.monotonic() < end:
            d.inject(level, '/')
            w = self.warning(0.2)
            if w:
                while self.warning(0.5):
                    pass
                return w
        raise TimeoutError('the GLib client never got a LowMemoryWarning')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


def wait_owner(bus, pid, what='the daemon owns ' + NAME):
    pt.wait_for(lambda: bus.owner_pid() == pid, timeout=pt.scaled(20), what=what)


def lmm_config(enabled=True, extra=''):
    """Levels a loaded machine does not reach by itself (real pressure would
    add signals), windows of 2 s as the kernel takes them unprivileged."""
    return ('[Levels]\nLow=some 1800ms 2s\nMedium=some 1900ms 2s\nCritical=full 1900ms 2s\nClearAfterSec=3600\n\n'
            f'[DBus]\nLowMemoryMonitor={"yes" if enabled else "no"}\n' + extra)
