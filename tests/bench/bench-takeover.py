#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Takeover: how long subscribers wait across a restart, an upgrade and a crash.

1,000 subscribers over 100 registrations (10 each: distinct explicit PSI
triggers on a quiet cgroup of the benchmark's own) stay connected while
the daemon is handed to a new process, 50 times per way (10 with --quick):

  reexec   Reexecute(): the daemon executes its binary anew in the same process;
  restart  SIGTERM with systemd's fd store (tests/fdstore_test.py stands in
           for the service manager: it waits for the exit, then starts the
           binary with the stored fds, as a restart job does);
  crash    SIGKILL, then the same start (Restart=on-failure).

With --vm the same runs in the VM test bed (tests/vm/run.sh) against the
installed pressured.service under systemd 252 with its fd store: restart
is `systemctl restart`, crash `systemctl kill -s SIGKILL` and the restart
systemd makes (Restart=on-failure), and the Inject is sent once the old
process is gone; 20 rounds each (5 with --quick), under TCG, where
everything is about ten times slower. Writes takeover-vm.csv.

Right after the signal (or the call) an Inject is sent on a connection that
was open before, so it waits in its socket until a process reads it. The
figure is the time from the signal to the first subscriber receiving that
event, and to the last of the 1,000; p50, p99 and max per way. Every event
is checked to arrive once, with no gap in seq after a restart or
Reexecute. Needs root (Inject; a cgroup). Writes takeover.csv.
"""
import json
import os
import resource
import selectors
import signal
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

import fdstore_test  # noqa: E402  (benchlib put tests/ on the path)


class Subscribers:
    """N raw streams read together; counts the events of each injection by seq."""

    def __init__(self, path, cgroup, n, registrations):
        self.sel = selectors.DefaultSelector()
        self.socks = []
        self.bufs = {}
        self.seq = {}
        for i in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            trigger = {'stall': 'some', 'threshold_us': 100000 + 1000 * (i % registrations), 'window_us': 2000000}
            s.sendall(json.dumps({'method': 'io.pressured.Subscribe', 'more': True,
                                  'parameters': {'cgroup': cgroup, 'psi': trigger}}).encode() + b'\0')
            self.socks.append(s)
            self.bufs[s] = b''
            self.seq[s] = 0
            self.sel.register(s, selectors.EVENT_READ)
        self.wait_events(n, first_kind='subscribed', timeout=120)

    def wait_events(self, n, first_kind='pressure', timeout=60):
        """Read until @n events of @first_kind arrived; returns the monotonic times of the first and the last."""
        got, first, last = 0, None, None
        end = time.monotonic() + timeout
        while got < n:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f'{got} of {n} {first_kind} events')
            for key, _ in self.sel.select(timeout=left):
                s = key.fileobj
                data = s.recv(1 << 16)
                if not data:
                    raise AssertionError('a subscriber saw the end of its connection')
                self.bufs[s] += data
                while b'\0' in self.bufs[s]:
                    msg, _, self.bufs[s] = self.bufs[s].partition(b'\0')
                    ev = json.loads(msg)['parameters']['event']
                    if ev['kind'] != first_kind:
                        continue
                    if first_kind == 'pressure':
                        if ev['seq'] != self.seq[s] + 1 or ev['missed']:
                            raise AssertionError(f'seq {ev["seq"]} missed {ev["missed"]} after {self.seq[s]}')
                        self.seq[s] = ev['seq']
                    now = time.monotonic()
                    first = first or now
                    last = now
                    got += 1
        return first, last

    def close(self):
        for s in self.socks:
            s.close()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def measure(way, rounds, subs, injector, cgroup, handover, answered=None):
    """@handover(): the signal or call; returns after it was made. Then the inject on @injector (connected
    before the subscribers, so that the state a crash leaves knows it), then the wait."""
    firsts, lasts = [], []
    try:
        for i in range(rounds):
            print(f'{way}: round {i + 1} of {rounds}', flush=True)
            t0 = time.monotonic()
            handover()
            injector.call('io.pressured.Inject', {'cgroup': cgroup, 'level': 'critical'})
            first, last = subs.wait_events(len(subs.socks), timeout=120)
            if answered:
                answered()
            reply = injector.recv(timeout=120)
            pt.check(reply.get('parameters', {}).get('delivered') == len(subs.socks), 'delivered', reply)
            firsts.append((first - t0) * 1e3)
            lasts.append((last - t0) * 1e3)
            time.sleep(0.2)
    finally:
        injector.close()
    return [way, rounds, len(subs.socks), f'{statistics.median(firsts):.2f}', f'{percentile(firsts, 99):.2f}',
            f'{max(firsts):.2f}', f'{statistics.median(lasts):.2f}', f'{percentile(lasts, 99):.2f}',
            f'{max(lasts):.2f}']


CONFIG = '[Limits]\nMaxClients=5000\nMaxClientsPerUser=5000\nIdleTimeoutSec=3600\n'


def config(tmp):
    path = os.path.join(tmp, 'bench.conf')
    with open(path, 'w') as f:
        f.write(CONFIG)
    return path


def run_reexec(rounds, n, regs, cgroup):
    with pt.Daemon(log_level='notice', config_text=CONFIG) as d:
        injector = pt.Varlink(d.socket, timeout=120)
        subs = Subscribers(d.socket, cgroup, n, regs)

        # On the injector's own connection: the Inject behind it is answered by the new process.
        def handover():
            injector.call('io.pressured.Reexecute')

        def answered():
            pt.check_eq(injector.recv(timeout=120), {'parameters': {}}, 'Reexecute answered first')
        try:
            row = measure('reexec', rounds, subs, injector, cgroup, handover, answered)
        finally:
            subs.close()
    return row


def run_store(way, rounds, n, regs, cgroup):
    tmp = fdstore_test.tempfile.mkdtemp(prefix='pressured-bench-')
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, 'io.pressured')
    args = ['--socket', sock, '--config', config(tmp), '--log-level', 'notice']
    try:
        with fdstore_test.ServiceManager(args) as sm:
            sm.start()
            injector = pt.Varlink(sock, timeout=120)
            subs = Subscribers(sock, cgroup, n, regs)

            def handover():
                if way == 'restart':
                    sm.proc.send_signal(signal.SIGTERM)
                    sm.proc.wait()
                    sm.drain()
                else:
                    sm.proc.kill()
                    sm.proc.wait()
                    sm.drain()
                sm.start(wait=False)
            try:
                row = measure(way, rounds, subs, injector, cgroup, handover)
            finally:
                subs.close()
    finally:
        fdstore_test.shutil.rmtree(tmp, ignore_errors=True)
    return row


HEADER = ['way', 'rounds', 'subscribers', 'first_p50_ms', 'first_p99_ms', 'first_max_ms', 'all_p50_ms',
          'all_p99_ms', 'all_max_ms']
SOCKET = '/run/pressured/io.pressured'


def run_systemd(way, rounds, n, regs, cgroup):
    """The installed service under systemd: systemctl restart, or SIGKILL and systemd's restart."""
    import subprocess
    injector = pt.Varlink(SOCKET, timeout=120)
    subs = Subscribers(SOCKET, cgroup, n, regs)
    pending = []

    def handover():
        """The signal; returns once the old process is gone, so that the new one answers the Inject."""
        pid = subprocess.run(['systemctl', 'show', '-P', 'MainPID', 'pressured.service'], capture_output=True,
                             text=True).stdout.strip()
        cmd = ['systemctl', 'restart', 'pressured.service'] if way == 'restart' else \
              ['systemctl', 'kill', '-s', 'SIGKILL', 'pressured.service']
        pending.append(subprocess.Popen(cmd))
        pt.wait_for(lambda: not os.path.exists(f'/proc/{pid}'), timeout=120, interval=0.001,
                    what='the old process to be gone')
    try:
        row = measure('systemd-' + way, rounds, subs, injector, cgroup, handover)
    finally:
        for p in pending:
            p.wait()
        subs.close()
    return row


def guest(args):
    import subprocess
    pt.require_root('the VM test bed runs as root')
    if not bl.in_vm():
        pt.skip('runs inside tests/vm/run.sh (PRESSURED_VM=1)')
    rounds, n, regs = (5, 200, 20) if args.quick else (20, 1000, 100)
    dropins = os.path.join(pt.install_dir('sysconfdir'), 'pressured', 'pressured.conf.d')
    os.makedirs(dropins, exist_ok=True)
    with open(os.path.join(dropins, '90-bench-takeover.conf'), 'w') as f:
        f.write(CONFIG)
    # Twenty restarts in a row are past systemd's default start limit (5 starts in 10 s), after which it
    # fails the unit and empties its fd store; an administrator never restarts that often.
    os.makedirs('/run/systemd/system/pressured.service.d', exist_ok=True)
    with open('/run/systemd/system/pressured.service.d/90-bench-takeover.conf', 'w') as f:
        f.write('[Unit]\nStartLimitIntervalSec=0\n')
    subprocess.run(['systemctl', 'daemon-reload'], check=True)
    subprocess.run(['systemctl', 'restart', 'pressured.service'], check=True)
    if os.environ.get('PRESSURED_BENCH_SYSTEMD_DEBUG'):
        subprocess.run(['systemd-analyze', 'log-level', 'debug'], check=False)
    rows = []
    try:
        with pt.quiet_cgroup() as cgroup:
            rows.append(run_systemd('restart', rounds, n, regs, cgroup))
            rows.append(run_systemd('crash', rounds, n, regs, cgroup))
    except BaseException:
        log = subprocess.run(['journalctl', '-u', 'pressured.service', '--no-pager', '-o', 'short-monotonic'],
                             capture_output=True, text=True).stdout.splitlines()
        print('\n'.join(line for line in log if 'Registered the' not in line), flush=True)
        raise
    bl.print_table(HEADER, rows)
    bl.emit_csv('takeover-vm.csv', HEADER, rows)


def host(args):
    if args.vm:
        fwd = ['--guest'] + (['--quick'] if args.quick else [])
        sys.exit(bl.run_in_vm(__file__, fwd, args.out, 1800))
    pt.require_root('Inject is reserved to root; the quiet cgroup is made in cgroup2')
    rounds, n, regs = (10, 200, 20) if args.quick else (50, 1000, 100)
    rows = []
    with pt.quiet_cgroup() as cgroup:
        rows.append(run_reexec(rounds, n, regs, cgroup))
        rows.append(run_store('restart', rounds, n, regs, cgroup))
        rows.append(run_store('crash', rounds, n, regs, cgroup))
    bl.print_table(HEADER, rows)
    bl.write_csv(args.out, 'takeover.csv', HEADER, rows)


def main():
    # 1,000 subscribers, and as many fds again in the stand-in's store.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    bl.vm_main(__doc__.splitlines()[0], guest, host,
               lambda p: p.add_argument('--vm', action='store_true', help='measure under systemd in the VM test bed'))


if __name__ == '__main__':
    main()
