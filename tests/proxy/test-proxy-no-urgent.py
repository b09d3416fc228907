#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The pressure sockets never send out-of-band data. GLib 2.90's memory
monitor, pointed at one through $MEMORY_PRESSURE_WATCH, connects but waits
for POLLPRI only: a plain byte never wakes it, and urgent data, which it
never reads, would make it spin (pressured(8) says why GLib programs
follow pressured over D-Bus instead). sd-event reads plain bytes.

Raw clients of the memory, cpu and io sockets, in an empty cgroup of the
test's own: on each, one that reads every byte, as sd-event does, and one
that never reads, as GLib does. Each injection (low, medium, critical of
every resource) comes to the reader as a readable byte, and at no point
does poll() report POLLPRI, ioctl(SIOCATMARK) find the urgent mark or
recv(MSG_OOB) find an urgent byte on any of them; the bytes pile up on
the GLib-like ones as plain data, one per injection. The same after a
Reexecute, which takes the connections over. The detector is checked
first on a socket pair with one urgent byte; a kernel without AF_UNIX
out-of-band data (CONFIG_AF_UNIX_OOB), where nothing could send any, skips
the test."""

import errno
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import termios

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 15.0
RESOURCES = ('memory', 'cpu', 'io')
LEVELS = ('low', 'medium', 'critical')
SIOCATMARK = 0x8905
TRIGGER = b'some 200000 2000000\n'


def urgent(s):
    """What on @s says urgent data is there (empty: nothing)."""
    found = []
    p = select.poll()
    p.register(s, select.POLLIN | select.POLLPRI)
    if any(ev & select.POLLPRI for _, ev in p.poll(0)):
        found.append('POLLPRI')
    if struct.unpack('i', fcntl.ioctl(s, SIOCATMARK, b'\0' * 4))[0]:
        found.append('SIOCATMARK')
    try:
        found.append(f'MSG_OOB {s.recv(1, socket.MSG_OOB | socket.MSG_PEEK | socket.MSG_DONTWAIT)!r}')
    except OSError as e:
        if e.errno != errno.EINVAL:
            found.append(f'recv(MSG_OOB): {e}')
    return found


def queued(s):
    return struct.unpack('i', fcntl.ioctl(s, termios.FIONREAD, b'\0' * 4))[0]


def self_test():
    a, b = socket.socketpair()
    with a, b:
        a.send(b'x')
        pt.check_eq(urgent(b), [], 'the detector on a plain byte')
        try:
            a.send(b'!', socket.MSG_OOB)
        except OSError as e:
            if e.errno == errno.EOPNOTSUPP:
                pt.skip('the kernel has no AF_UNIX out-of-band data (CONFIG_AF_UNIX_OOB): no socket can send any')
            raise
        pt.check('POLLPRI' in urgent(b) and any(f.startswith('MSG_OOB') for f in urgent(b)),
                 'the detector on an urgent byte', urgent(b))


def connect_from(cgroup_dir, paths):
    """Two connections to each of @paths from a child process that moved
    itself into @cgroup_dir and stays there until killed. Returns (its pid,
    {resource: (reader, leaver)})."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            with open(os.path.join(cgroup_dir, 'cgroup.procs'), 'w') as f:
                f.write('0')
            conns = [pt.unix_connect(paths[r], TRIGGER) for r in RESOURCES for _ in range(2)]
            socket.send_fds(there, [b'x'], [c.fileno() for c in conns])
            while True:
                signal.pause()
        finally:
            os._exit(0)
    there.close()
    _, fds, _, _ = socket.recv_fds(here, 1, 2 * len(RESOURCES))
    here.close()
    pt.check_eq(len(fds), 2 * len(RESOURCES), 'the child passed its connections')
    socks = [socket.socket(fileno=fd) for fd in fds]
    return pid, {r: (socks[2 * i], socks[2 * i + 1]) for i, r in enumerate(RESOURCES)}


def round_of_injections(d, cgroup, clients, when):
    v = pt.Varlink(d.socket)
    try:
        for resource in RESOURCES:
            reader, leaver = clients[resource]
            for level in LEVELS:
                before = queued(leaver)
                r = v.call_sync('io.pressured.Inject', {'cgroup': cgroup, 'level': level, 'resource': resource})
                pt.check_eq(r['parameters']['delivered'], 2, f'{when}: {resource} {level} reaches both clients')
                pt.check(select.select([reader], [], [], WAIT)[0], f'{when}: {resource} {level}: nothing to read')
                pt.wait_for(lambda: queued(leaver) > before, timeout=WAIT, what=f'{when}: the byte at the leaver')
                for name, s in (('reader', reader), ('GLib-like', leaver)):
                    pt.check_eq(urgent(s), [], f'{when}: urgent data for the {resource} {name} after {level}')
                data = reader.recv(64)
                pt.check(len(data) >= 1 and urgent(reader) == [], f'{when}: {resource} {level}: a plain byte', data)
    finally:
        v.close()


def main():
    pt.require_root('Inject and Reexecute are reserved to root')
    self_test()
    d = pt.Daemon()
    paths = {r: os.path.join(d.tmpdir, f'{r}-pressure') for r in RESOURCES}
    d.write_config(f'[MemoryPressure]\nSocket={paths["memory"]}\nCpuSocket={paths["cpu"]}\n'
                   f'IoSocket={paths["io"]}\n')
    with pt.quiet_cgroup() as quiet, d:
        child, clients = connect_from(pt.cgroup2_mount() + quiet, paths)
        try:
            pt.wait_for(lambda: d.status()['proxied_clients'] == 2 * len(RESOURCES), timeout=WAIT,
                        what='every client served')
            round_of_injections(d, quiet, clients, 'at first')
            v = pt.Varlink(d.socket, timeout=WAIT)
            try:
                pt.check_eq(v.call_sync('io.pressured.Reexecute'), {'parameters': {}}, 'Reexecute')
            finally:
                v.close()
            pt.check_eq(d.status()['takeover']['proxied_clients'], 2 * len(RESOURCES), 'connections taken over')
            round_of_injections(d, quiet, clients, 'after Reexecute')
            for resource, (_, leaver) in clients.items():
                pt.check_eq(queued(leaver), 2 * len(LEVELS), f'plain bytes left unread at the {resource} GLib-like '
                            'client')
                pt.check_eq(urgent(leaver), [], f'urgent data at the end for the {resource} GLib-like client')
        finally:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            for pair in clients.values():
                for s in pair:
                    s.close()
    pt.finish()


if __name__ == '__main__':
    main()
