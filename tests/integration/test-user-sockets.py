#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A per-user daemon (--user) makes every socket it binds its user's alone:
the varlink socket and the memory, cpu and io pressure proxy sockets, at
their default places in $XDG_RUNTIME_DIR/pressured and at a configured one
elsewhere, are 0600 in a 0700 directory it made, another user cannot
connect to any of them, and the socket bound again on reload after it was
removed is as private. A system daemon's proxy sockets stay open to every service
(0666): the rule is the per-user daemon's."""
import os
import signal
import socket
import stat
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def connect_errors(paths):
    """For each path, what connecting to it gives (run as another user)."""
    out = {}
    for p in paths:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(p)
            out[p] = 'connected'
        except OSError as e:
            out[p] = e.__class__.__name__
        finally:
            s.close()
    return out


def main():
    pt.require_root('binds sockets for a per-user daemon and connects as another user (nobody)')
    with tempfile.TemporaryDirectory(prefix='pressured-user-sockets-') as tmp:
        os.chmod(tmp, 0o755)
        runtime = os.path.join(tmp, 'runtime')
        os.mkdir(runtime, 0o700)
        own_dir = os.path.join(runtime, 'pressured')
        elsewhere = os.path.join(runtime, 'elsewhere', 'cpu.sock')
        sockets = {
            'varlink': os.path.join(own_dir, 'io.pressured'),
            'memory-pressure': os.path.join(own_dir, 'memory-pressure'),
            'io-pressure': os.path.join(own_dir, 'io-pressure'),
            'cpu-pressure ([MemoryPressure] CpuSocket=)': elsewhere,
        }
        d = pt.Daemon(args=['--user'], socket_path=sockets['varlink'], env={'XDG_RUNTIME_DIR': runtime},
                      config_text=f'[MemoryPressure]\nCpuSocket={elsewhere}\n')
        with d:
            for name, path in sockets.items():
                pt.wait_for(lambda p=path: os.path.exists(p), timeout=pt.scaled(10), what=f'the {name} socket')
                check(stat.S_ISSOCK(os.stat(path).st_mode) and mode(path) == 0o600,
                      f'--user: the {name} socket is 0600', path, oct(mode(path)))
            for folder in (own_dir, os.path.dirname(elsewhere)):
                check(mode(folder) == 0o700, f'--user: {folder} is made 0700', oct(mode(folder)))
            got = pt.run_as('nobody', connect_errors, list(sockets.values()))
            check(all(v == 'PermissionError' for v in got.values()), 'another user can connect to none of them',
                  got)

            # Removed, the varlink socket is bound again on reload, as private.
            os.unlink(sockets['varlink'])
            os.kill(d.pid, signal.SIGHUP)
            pt.wait_for(lambda: os.path.exists(sockets['varlink']), timeout=pt.scaled(10),
                        what='the varlink socket bound again')
            check(mode(sockets['varlink']) == 0o600, 'the socket bound again is 0600', oct(mode(sockets['varlink'])))

        # The system daemon's proxy socket is for every service on the machine.
        with pt.Daemon() as sysd:
            proxy = os.path.join(os.path.dirname(sysd.socket), 'memory-pressure')
            pt.wait_for(lambda: os.path.exists(proxy), timeout=pt.scaled(10), what='the memory-pressure socket')
            check(mode(proxy) == 0o666 and mode(sysd.socket) == 0o666, 'the system daemon\'s sockets are 0666',
                  oct(mode(proxy)), oct(mode(sysd.socket)))
    pt.finish()


if __name__ == '__main__':
    main()
