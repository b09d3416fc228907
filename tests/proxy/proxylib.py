# SPDX-License-Identifier: MIT
"""Helpers for the memory-pressure proxy tests and benchmark: the sd-event
client built against libsystemd >= 254 (fetched by fetch-libsystemd.sh into
the build tree, never installed), and starting it pointed at a socket or a
pressure file."""

import base64
import glob
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

BUILD = os.environ['PRESSURED_BUILD_ROOT']
SOURCE = os.environ['PRESSURED_SOURCE_ROOT']
LIBSYSTEMD = os.environ.get('PRESSURED_LIBSYSTEMD_254', os.path.join(BUILD, 'libsystemd-254'))
CLIENT = os.path.join(BUILD, 'tests', 'proxy', 'sd-event-client')


def build_client():
    """The sd-event client, compiled on first use; skips (77) without libsystemd >= 254."""
    root = os.path.join(LIBSYSTEMD, 'root')
    if not os.path.exists(os.path.join(LIBSYSTEMD, 'ok')):
        pt.skip(f'libsystemd >= 254 not found in {LIBSYSTEMD}; run tests/proxy/fetch-libsystemd.sh {LIBSYSTEMD}')
    libdirs = [os.path.dirname(p) for p in glob.glob(os.path.join(root, 'usr/lib/*/libsystemd.so'))]
    if not libdirs:
        pt.skip(f'{LIBSYSTEMD} holds no libsystemd.so')
    src = os.path.join(SOURCE, 'tests', 'proxy', 'sd-event-client.c')
    if os.path.exists(CLIENT) and os.path.getmtime(CLIENT) >= os.path.getmtime(src):
        return CLIENT
    os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
    tmp = CLIENT + f'.tmp{os.getpid()}'
    subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-Wall', '-Werror', '-o', tmp, src,
                    '-I', os.path.join(root, 'usr/include'), '-L', libdirs[0],
                    '-Wl,-rpath,' + libdirs[0], '-lsystemd'], check=True)
    os.rename(tmp, CLIENT)
    return CLIENT


def write_value(trigger):
    """MEMORY_PRESSURE_WRITE for @trigger (bytes without the NUL): base64 over it and a NUL."""
    return base64.b64encode(trigger + b'\0').decode()


class Client:
    """One sd-event client; its "event" lines are counted by a reader thread."""

    def __init__(self, watch, write=None, cgroups=(None, None), prefix=()):
        """@prefix: a command the client runs under, e.g. ['chrt', '-f', '50']."""
        env = dict(os.environ)
        env['MEMORY_PRESSURE_WATCH'] = watch
        env.pop('MEMORY_PRESSURE_WRITE', None)
        if write is not None:
            env['MEMORY_PRESSURE_WRITE'] = write
        self.events = []
        self.ready = False
        self.lock = threading.Lock()
        self.proc = pt.run_in_cgroups([*prefix, build_client()], cgroups[0], cgroups[1], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        pt.wait_for(lambda: self.ready or self.proc.poll() is not None, what='sd-event client ready')
        if not self.ready:
            raise AssertionError(f'sd-event client failed: {self.proc.stderr.read().decode()}')

    def _read(self):
        for line in self.proc.stdout:
            line = line.decode().split()
            with self.lock:
                if line == ['ready']:
                    self.ready = True
                elif line and line[0] == 'event':
                    self.events.append(int(line[1]))

    @property
    def pid(self):
        return self.proc.pid

    def count(self):
        with self.lock:
            return len(self.events)

    def stop(self, sig=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=10)
