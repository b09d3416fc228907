#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The memory-pressure socket with raw sockets (no libsystemd needed): a
newline-terminated trigger; a line longer than the bound is a warning and
the default trigger, and what follows is read and discarded; MaxClients=
counts proxied and varlink clients together and refuses beyond it; one
byte per Inject; an empty [MemoryPressure] Socket= turns the socket off.
The memory-pressure socket is ready before the varlink socket listens. A
peer whose /proc/PID/cgroup cannot be read (it handed its connection on and
exited) is logged and watches the whole system."""

import os
import socket
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0


def proxied(d):
    return [(r, p) for r in d.status()['registrations'] for p in r['proxied']]


def connect_and_exit(path):
    """Connect to @path in a child that passes the connection back and exits:
    the peer credentials name a process that is gone. Returns (its pid, the
    connection)."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            s = pt.unix_connect(path)
            socket.send_fds(there, [b'x'], [s.fileno()])
        finally:
            os._exit(0)
    there.close()
    _, fds, _, _ = socket.recv_fds(here, 1, 1)
    here.close()
    os.waitpid(pid, 0)
    pt.check(len(fds) == 1 and not os.path.exists(f'/proc/{pid}'), 'the child passed its connection and is gone', fds)
    return pid, socket.socket(fileno=fds[0])


def main():
    d = pt.Daemon()
    mp = os.path.join(d.tmpdir, 'mp')
    d.write_config(f'[MemoryPressure]\nSocket={mp}\n[Limits]\nMaxClients=3\n')
    with d:
        # Both sockets are in place once the varlink socket accepts (which is
        # what Daemon waits for): the memory-pressure one is bound first. The
        # line saying so may trail the listen() by a moment under valgrind.
        pt.wait_for(lambda: f'Listening on {d.socket}' in d.log(), timeout=WAIT, what='the listening line')
        log = d.log()
        pt.check(0 <= log.find(f'memory-pressure protocol on {mp}') < log.find(f'Listening on {d.socket}'),
                 'the memory-pressure socket is bound before the varlink socket listens', log)
        pt.check_eq(os.stat(mp).st_mode & 0o777, 0o666, 'memory-pressure socket mode once the daemon is ready')
        a = pt.unix_connect(mp, b'some 150ms 2s\n')
        pt.wait_for(lambda: len(proxied(d)) == 1, timeout=WAIT, what='newline-terminated trigger attached')
        t1 = proxied(d)[0][0]['trigger']

        # Too long: warning, default trigger, the rest discarded.
        b = pt.unix_connect(mp, b'x' * 200)
        b.sendall(b'y' * 100000)
        pt.wait_for(lambda: len(proxied(d)) == 2, timeout=WAIT, what='long line attached')
        pt.wait_for(lambda: 'longer than a trigger line' in d.log(), timeout=WAIT, what='warning')
        other = [r['trigger'] for r, _ in proxied(d) if r['trigger'] != t1]
        pt.check(len(other) == 1 and (other[0].get('vmpressure', {}).get('level') == 'medium' or
                                      other[0].get('psi', {}).get('threshold_us') == 200000),
                 'the long line got the default trigger', other)

        # MaxClients=3: two proxied plus one varlink call; a third proxied is refused.
        held = pt.Varlink(d.socket)
        held.call_sync('org.varlink.service.GetInfo')
        c = pt.unix_connect(mp)
        c.settimeout(WAIT)
        pt.check_eq(c.recv(1), b'', 'refused beyond MaxClients')
        pt.check('Limit MaxClients=3 reached, refusing a memory-pressure client' in d.log(), 'refusal logged')
        c.close()
        held.close()

        # GetStatus counts the proxied clients among a registration's subscribers, and
        # pressurectl status shows that, as Inject counts them among those it reached.
        st = d.status()
        for r in st['registrations']:
            pt.check_eq(r['subscribers'], len(r['proxied']), f'subscribers of {r["cgroup"]} {r["trigger"]}')
        text = pt.run_ctl('status', socket=d.socket).stdout
        col = next(ln for ln in text.splitlines() if 'SUBSCRIBERS' in ln).index('SUBSCRIBERS')
        rows = [ln for ln in text.splitlines() if ln.startswith('  /')]
        pt.check(len(rows) == 2 and all(ln[col:].split()[0] == '1' for ln in rows),
                 'pressurectl status: SUBSCRIBERS 1 on each registration', text)
        # Inject reaches each proxied client with one byte.
        for cg in {r['cgroup'] for r in st['registrations']}:
            n = sum(r['subscribers'] for r in st['registrations'] if r['cgroup'] == cg)
            res = pt.run_ctl('inject', cg, '--level', 'low', socket=d.socket)
            pt.check(res.stdout.startswith(f'Delivered {n} time{"" if n == 1 else "s"}: once to each subscriber of '
                                           'each registration'), 'inject reached as many as status counts',
                     res.stdout)
        for s in (a, b):
            s.settimeout(WAIT)
            pt.check_eq(s.recv(1), b'\n', 'one byte per event')
        st = d.status()
        pt.check_eq(st['counters']['proxy_invalid_requests'], 1, 'invalid requests')
        pt.check(st['counters']['proxy_events_sent'] >= 2, 'sent', st['counters'])
        a.close()
        b.close()
        pt.wait_for(lambda: d.status()['proxied_clients'] == 0, timeout=WAIT, what='closed clients released')

        # A peer that handed its connection on and exited before sending its
        # trigger: its /proc/PID/cgroup cannot be read; logged, and it
        # watches the whole system.
        pid, held_on = connect_and_exit(mp)
        held_on.sendall(b'some 150ms 2s\n')
        pt.wait_for(lambda: len(proxied(d)) == 1, timeout=WAIT, what='the handed-on connection attached')
        pt.check(f'Cannot read /proc/{pid}/cgroup of proxied client' in d.log() and
                 'it watches the whole system' in d.log(), 'unreadable /proc/PID/cgroup logged', d.log())
        reg, peer = proxied(d)[0]
        pt.check(reg['cgroup'] == '/' and peer['pid'] == pid and peer['cgroup'] == '/',
                 'a peer whose cgroup cannot be read watches the whole system', reg)
        held_on.close()
        pt.wait_for(lambda: d.status()['proxied_clients'] == 0, timeout=WAIT, what='the handed-on client released')

    off = pt.Daemon(config_text='[MemoryPressure]\nSocket=\n')
    with off:
        pt.check(not os.path.exists(os.path.join(off.tmpdir, 'memory-pressure')), 'Socket= empty: no socket')
        pt.check('memory-pressure' not in off.log() or 'is off' in off.log(), 'no memory-pressure socket served')
    pt.finish()


if __name__ == '__main__':
    main()
