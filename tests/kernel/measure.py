#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measure the daemon on this machine (run by hand, as root; not a test).

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/kernel/measure.py

Prints the daemon's open fds and context switches over 5 s, idle and with
50 PSI subscribers on a quiet cgroup2 directory, and the time from the start
of a memory load (a 64M cgroup v1 memory cgroup streaming a 200M file) to the
first vmpressure and the first PSI event the daemon delivers. For reference
it also times the same PSI trigger held directly by this script, which shows
how long the kernel itself takes.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

pt.own_verdict()  # a measuring tool: it prints figures, no verdict

PERIOD = 5.0
N = 50
LOAD_TIMEOUT = 30.0


def fd_summary(targets):
    kinds = {}
    for t, n in targets.items():
        k = t.split('[')[0] if t.startswith(('socket:', 'anon_inode:', 'pipe:')) else t
        k = 'memory.pressure' if kl.is_memory_pressure(k) else k
        if t.startswith('anon_inode:'):
            k = t
        kinds[k] = kinds.get(k, 0) + n
    return f'{sum(targets.values())} (' + ', '.join(f'{k} x{n}' for k, n in sorted(kinds.items())) + ')'


def switches_over(pid, period):
    before = pt.process_context_switches(pid)
    time.sleep(period)
    return pt.process_context_switches(pid) - before


def idle_and_subscribed():
    with pt.real_cgroups(v1=False, v2=True) as (name, _, _v2), kl.quiet_daemon(log_level='info') as d:
        idle = kl.settled_fds(d)
        print(f'idle: fds {fd_summary(idle)}')
        print(f'idle: {switches_over(d.pid, PERIOD)} context switches in {PERIOD:.0f} s', flush=True)
        clients = kl.subscribe_many(d, N, cgroup=name, psi=kl.PSI_2S)
        try:
            busy = kl.settled_fds(d)
            print(f'{N} PSI subscribers on a quiet cgroup: fds {fd_summary(busy)}')
            print(f'{N} PSI subscribers on a quiet cgroup: {switches_over(d.pid, PERIOD)} context switches '
                  f'in {PERIOD:.0f} s; registrations {kl.registrations_on(d, name)}', flush=True)
        finally:
            kl.close_all(clients)
        pt.wait_for(lambda: kl.fd_targets(d) == idle, timeout=10, what='idle fds')
        print('after they left: fds equal to idle', flush=True)


def under_load():
    with pt.real_cgroups(v1=True, v2=True, limit='64M') as (name, v1, v2), \
            kl.quiet_daemon(log_level='info') as d:
        vm, _ = kl.subscribe_ok(d, cgroup=name, vmpressure={'level': 'low'})
        psi, _ = kl.subscribe_ok(d, cgroup=name, psi=kl.PSI_2S)
        direct = os.open(os.path.join(v2, 'memory.pressure'), os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.write(direct, b'some 100000 2000000\0')
            poller = select.poll()
            poller.register(vm.sock, select.POLLIN)
            poller.register(psi.sock, select.POLLIN)
            poller.register(direct, select.POLLPRI)
            names = {vm.sock.fileno(): 'vmpressure (daemon)', psi.sock.fileno(): 'PSI some 100ms/2s (daemon)',
                     direct: 'PSI some 100ms/2s (kernel trigger held by this script)'}
            first = {}
            start = time.monotonic()
            with pt.memory_load(v1, v2, size_mb=200):
                while len(first) < len(names) and time.monotonic() - start < LOAD_TIMEOUT:
                    for fd, _ in poller.poll(200):
                        if fd not in first:
                            first[fd] = time.monotonic() - start
                            poller.unregister(fd)
            for fd, what in names.items():
                t = f'{first[fd]:.3f} s' if fd in first else f'none within {LOAD_TIMEOUT:.0f} s'
                print(f'load start to first {what}: {t}')
            with open(os.path.join(v2, 'memory.pressure')) as f:
                print('the cgroup\'s memory.pressure after the load:\n  ' + f.read().strip().replace('\n', '\n  '))
        finally:
            os.close(direct)
            kl.close_all((vm, psi))


def main():
    pt.require_root('it loads real cgroups')
    # Measure the daemon itself, never under a test wrapper.
    pt.WRAPPER = []
    print(f'kernel {os.uname().release}; daemon {pt.PRESSURED}', flush=True)
    idle_and_subscribed()
    under_load()


if __name__ == '__main__':
    main()
