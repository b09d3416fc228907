#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The memory-pressure proxy with a real sd-event client (libsystemd >=
254): the client gets injected events through pressured; 100 clients in
one cgroup with one trigger hold one kernel registration; a client killed
with SIGKILL releases its share; a garbage MEMORY_PRESSURE_WRITE gets the
default trigger and a warning naming the pid; no write at all gets the
default too. Every GetStatus reply is checked against the interface.

The clients run in an empty cgroup2 directory of the test's own
(pt.quiet_cgroup()), so that their registration is PSI on a cgroup where
only they, idle, live: in the test runner's own cgroup (often "/", the
whole system's PSI) real pressure on the machine would add events to the
injected ones."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

pt = proxylib.pt
WAIT = 60.0 if pt.WRAPPER else 15.0
CLIENTS = 20 if pt.WRAPPER else 100


def proxied(d):
    """{pid: (registration, entry)} from GetStatus."""
    out = {}
    for r in d.status()['registrations']:
        for p in r['proxied']:
            out[p['pid']] = (r, p)
    return out


def main():
    proxylib.build_client()
    d = pt.Daemon()
    mp = os.path.join(d.tmpdir, 'memory-pressure')
    d.write_config(f'[MemoryPressure]\nSocket={mp}\n')
    clients = []
    with pt.quiet_cgroup() as quiet, d:
        # The clients' cgroups: v1 as the test runner's, v2 the quiet one.
        cgroups = (None, os.path.join(pt.cgroup2_mount(), quiet.lstrip('/')))
        pt.check(oct(os.stat(mp).st_mode & 0o777) == '0o666', 'socket mode 0666', oct(os.stat(mp).st_mode))

        # pressurectl memory-pressure-env prints a drop-in that works as is.
        r = pt.run_ctl('memory-pressure-env', '--psi', 'some 150ms 2s', socket=d.socket)
        pt.check_eq(r.returncode, 0, 'memory-pressure-env exit status')
        lines = r.stdout.splitlines()
        pt.check_eq(lines[:2], ['[Service]', 'MemoryPressureWatch=skip'], 'drop-in head')
        env = dict(line.split('=', 2)[1:] for line in lines if line.startswith('Environment='))
        pt.check_eq(env['MEMORY_PRESSURE_WATCH'], mp, 'watch path next to the varlink socket')
        pt.check_eq(env['MEMORY_PRESSURE_WRITE'], proxylib.write_value(b'some 150000 2000000'), 'write value')

        # One client: its registration is in its own cgroup, and Inject reaches it.
        c = proxylib.Client(env['MEMORY_PRESSURE_WATCH'], env['MEMORY_PRESSURE_WRITE'], cgroups=cgroups)
        clients.append(c)
        pt.wait_for(lambda: c.pid in proxied(d), timeout=WAIT, what='client listed as proxied')
        reg, entry = proxied(d)[c.pid]
        with open(f'/proc/{c.pid}/cgroup') as f:
            own = f.read()
        pt.check(f':{entry["cgroup"]}\n' in own, 'the registration is on the peer\'s own cgroup', entry, own)
        pt.check_eq(entry['cgroup'], quiet, 'the peer\'s cgroup2 cgroup, which has memory.pressure')
        if reg['source'] == 'psi':
            pt.check_eq(reg['trigger']['psi']['threshold_us'] * 2000000 // reg['trigger']['psi']['window_us'],
                        150000, 'trigger ratio kept')
        cgroup = entry['cgroup']
        r = d.inject('medium', cgroup)
        pt.check(r['parameters']['delivered'] >= 1, 'Inject counted the proxied client', r)
        pt.wait_for(lambda: c.count() == 1, timeout=WAIT, what='sd-event callback ran once')

        # 100 clients, same cgroup and trigger: one kernel registration.
        for _ in range(CLIENTS - 1):
            clients.append(proxylib.Client(mp, proxylib.write_value(b'some 150000 2000000'), cgroups=cgroups))
        pt.wait_for(lambda: len(proxied(d)) == CLIENTS, timeout=WAIT, what=f'{CLIENTS} proxied clients')
        regs = {(r['cgroup'], r['source'], str(r['trigger'])) for r, _ in proxied(d).values()}
        pt.check_eq(len(regs), 1, 'one shared registration')
        st = d.status()
        pt.check_eq(st['proxied_clients'], CLIENTS, 'proxied_clients')
        pt.check_eq(len(st['registrations']), 1, 'one kernel registration in all')
        # A varlink subscriber of the same (cgroup, source, trigger) shares it too.
        v = pt.Varlink(d.socket)
        if reg['source'] == 'psi':
            first = v.subscribe(cgroup=cgroup, psi=reg['trigger']['psi'])
        else:
            first = v.subscribe(cgroup=cgroup, vmpressure=reg['trigger']['vmpressure'])
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'varlink subscriber', first)
        st = d.status()
        # subscribers counts both, as Inject counts what it reached.
        pt.check_eq([(r['subscribers'], len(r['proxied'])) for r in st['registrations']], [(CLIENTS + 1, CLIENTS)],
                    'varlink subscriber and proxied clients on one registration')
        pt.check_eq(d.inject('medium', cgroup)['parameters']['delivered'], CLIENTS + 1,
                    'Inject reaches the subscribers GetStatus counts')
        pt.wait_for(lambda: all(x.count() >= (2 if x is c else 1) for x in clients), timeout=WAIT,
                    what='every client called back')
        ev = v.recv(timeout=WAIT)['parameters']['event']
        if ev['kind'] == 'cleared':
            # The episode of the first Inject ended while the clients started (slow on a loaded machine).
            ev = v.recv(timeout=WAIT)['parameters']['event']
        pt.check_eq(ev['kind'], 'pressure', 'varlink subscriber got it')
        v.close()

        # SIGKILL releases the share; the last one out closes the registration.
        victim = clients.pop()
        victim.stop(signal.SIGKILL)
        pt.wait_for(lambda: victim.pid not in proxied(d), timeout=WAIT, what='killed client released')
        pt.check_eq(d.status()['proxied_clients'], CLIENTS - 1, 'proxied_clients after kill')
        for x in clients:
            x.stop(signal.SIGKILL)
        clients.clear()
        pt.wait_for(lambda: not d.status()['registrations'], timeout=WAIT, what='registration released')

        # Garbage: a warning naming the pid, and the default trigger.
        g = proxylib.Client(mp, proxylib.write_value(b'\x01\x02 not a trigger'), cgroups=cgroups)
        clients.append(g)
        pt.wait_for(lambda: g.pid in proxied(d), timeout=WAIT, what='garbage client attached')
        pt.wait_for(lambda: f'pid {g.pid}' in d.log() and 'did not ask for a valid PSI trigger' in d.log(),
                    timeout=WAIT, what='warning about the garbage')
        reg, _ = proxied(d)[g.pid]
        if reg['source'] == 'psi':
            t = reg['trigger']['psi']
            pt.check_eq((t['stall'], t['threshold_us'] * 2000000 // t['window_us']), ('some', 200000), 'default')
        else:
            pt.check_eq(reg['trigger']['vmpressure']['level'], 'medium', 'default trigger mapped to medium')
        pt.check_eq(d.status()['counters']['proxy_invalid_requests'], 1, 'invalid request counted')

        # No MEMORY_PRESSURE_WRITE: nothing written, the default after the deadline.
        n = proxylib.Client(mp, None, cgroups=cgroups)
        clients.append(n)
        pt.wait_for(lambda: n.pid in proxied(d), timeout=WAIT, what='silent client attached')
        pt.check_eq(proxied(d)[n.pid][0]['trigger'], reg['trigger'], 'silent client shares the default')
        d.inject('low', cgroup)
        pt.wait_for(lambda: g.count() == 1 and n.count() == 1, timeout=WAIT, what='default clients called back')
        pt.check('connected' in d.log() and 'disconnected' in d.log(), 'connect/disconnect logged')
        for x in clients:
            x.stop()
    pt.finish()


if __name__ == '__main__':
    main()
