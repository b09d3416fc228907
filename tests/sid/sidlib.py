# SPDX-License-Identifier: MIT
"""Helpers for the tests of Debian sid's systemd programs (tests/sid, and
the sid guest's checks in tests/vm/checks-sid.py): the sd-event client of
systemd 262 (sd-event-client.c) linked statically with sid's libsystemd.a,
started pointed at one of the daemon's pressure sockets, with its callbacks
and its CPU time counted; varlinkctl 262 with the library directory it
needs."""

import base64
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import pressured_test as pt  # noqa: E402

RESOURCES = ('memory', 'cpu', 'io')
SOURCE = os.path.join(pt.SOURCE_ROOT, 'tests', 'sid', 'sd-event-client.c')
CLIENT = os.path.join(pt.BUILD_ROOT, 'tests', 'sid', 'sd-event-client')
TRIPLET = 'x86_64-linux-gnu'
CLK_TCK = os.sysconf('SC_CLK_TCK')


def watch_vars(resource):
    """The variables sd-event reads for @resource: (WATCH, WRITE)."""
    prefix = resource.upper()
    return f'{prefix}_PRESSURE_WATCH', f'{prefix}_PRESSURE_WRITE'


def write_value(trigger):
    """$X_PRESSURE_WRITE for @trigger (bytes without the NUL): base64 over it and a NUL, as systemd sets it."""
    return base64.b64encode(trigger + b'\0').decode()


def build_client(root):
    """The sd-event client, compiled on first use against sid's headers and
    libsystemd.a under @root (pt.systemd_sid()); it needs only libc then."""
    lib = os.path.join(root, 'usr', 'lib', TRIPLET, 'libsystemd.a')
    pt.check(os.path.exists(lib), f'no {lib} in sid\'s libsystemd-dev')
    if os.path.exists(CLIENT) and os.path.getmtime(CLIENT) >= max(os.path.getmtime(SOURCE), os.path.getmtime(lib)):
        return CLIENT
    os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
    tmp = CLIENT + f'.tmp{os.getpid()}'
    r = subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-Wall', '-Werror', '-o', tmp, SOURCE,
                        '-I', os.path.join(root, 'usr', 'include'), lib],
                       capture_output=True, text=True)
    pt.check(r.returncode == 0, f'building {CLIENT} with sid\'s libsystemd.a failed', r.stderr)
    os.rename(tmp, CLIENT)
    return CLIENT


def cpu_seconds(pid):
    """utime + stime of @pid, in seconds."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rpartition(')')[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Client:
    """One sd-event client of @resource pointed at @watch (a socket path);
    its "event" lines are counted by a reader thread."""

    def __init__(self, client, resource, watch, write=None, cgroups=(None, None)):
        env = {k: v for k, v in os.environ.items() if not k.endswith('_PRESSURE_WATCH')
               and not k.endswith('_PRESSURE_WRITE')}
        watch_var, write_var = watch_vars(resource)
        env[watch_var] = watch
        if write is not None:
            env[write_var] = write
        self.resource = resource
        self.events = 0
        self.ready = False
        self.lock = threading.Lock()
        self.proc = pt.run_in_cgroups([client, resource], cgroups[0], cgroups[1], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        pt.wait_for(lambda: self.ready or self.proc.poll() is not None, timeout=pt.scaled(30),
                    what=f'{resource} sd-event client ready')
        if not self.ready:
            raise AssertionError(f'{resource} sd-event client failed: {self.proc.stderr.read().decode()}')

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                if line == b'ready\n':
                    self.ready = True
                elif line.startswith(b'event '):
                    self.events += 1

    @property
    def pid(self):
        return self.proc.pid

    def count(self):
        with self.lock:
            return self.events

    def cpu(self):
        return cpu_seconds(self.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def varlinkctl(root, *args, **kw):
    """varlinkctl 262 from @root, with its libsystemd-shared found."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, 'usr', 'lib', TRIPLET, 'systemd'),
               SYSTEMD_PAGER='cat', SYSTEMD_COLORS='0')
    return [os.path.join(root, 'usr', 'bin', 'varlinkctl'), *args], env
