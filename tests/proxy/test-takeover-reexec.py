#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reexecute under load: 50 varlink subscribers (level low, medium and
critical, and an explicit PSI trigger) and 10 unmodified sd-event clients
through the memory-pressure proxy (libsystemd >= 254), an injection every
10 ms, and 20 re-executions of the daemon meanwhile. No subscriber sees an
end of file, a second "subscribed", a gap in seq or a "missed"; every
sd-event client's callback count rises by at most the injections that
reached it (sd-event folds the bytes that arrive before it runs into one
callback; it spins on a closed socket and would count hundreds of
thousands), and by one for an injection made alone after the last
re-execution; the daemon's pid stays, its generation is 20,
GetStatus says what each takeover took over, and /metrics (bound again by
each process) counts 20 takeovers. Each Reexecute call is
answered by the new process, and a call pipelined behind it too, in order.

Everything runs in an empty cgroup of the test's own (pt.quiet_cgroup()),
so that only the injected events reach the subscribers."""

import json
import os
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

pt = proxylib.pt
REEXECS = 20
SUBSCRIBERS = 50
SD_CLIENTS = 10
WAIT = 240.0 if pt.WRAPPER else 90.0
SELECTORS = [{'level': 'low'}, {'level': 'medium'}, {'level': 'critical'},
             {'psi': {'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000}}]


class Subscriber:
    """A raw varlink stream; a reader thread checks every event as it comes."""

    def __init__(self, path, cgroup, selector):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        params = dict(selector, cgroup=cgroup)
        self.sock.sendall(json.dumps({'method': 'io.pressured.Subscribe', 'parameters': params,
                                      'more': True}).encode() + b'\0')
        self.lock = threading.Lock()
        self.subscribed = 0
        self.events = 0
        self.last_seq = 0
        self.problems = []
        self.eof = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _event(self, msg):
        ev = msg.get('parameters', {}).get('event', {})
        with self.lock:
            if ev.get('kind') == 'subscribed':
                self.subscribed += 1
                if self.subscribed > 1:
                    self.problems.append('a second "subscribed"')
                return
            if ev.get('kind') != 'pressure':
                self.problems.append(f'unexpected event {ev}')
                return
            if ev.get('seq') != self.last_seq + 1:
                self.problems.append(f'seq {ev.get("seq")} after {self.last_seq}')
            if ev.get('missed') != 0:
                self.problems.append(f'missed {ev.get("missed")} at seq {ev.get("seq")}')
            self.last_seq = ev.get('seq', self.last_seq)
            self.events += 1

    def _read(self):
        buf = b''
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b''
            if not data:
                with self.lock:
                    self.eof = True
                return
            buf += data
            while b'\0' in buf:
                msg, _, buf = buf.partition(b'\0')
                self._event(json.loads(msg))

    def snapshot(self):
        with self.lock:
            return self.subscribed, self.events, list(self.problems), self.eof

    def close(self):
        self.sock.close()


class Injector:
    """Inject(critical) every 10 ms on one connection, counting what each call says it reached."""

    def __init__(self, path, cgroup):
        self.v = pt.Varlink(path, timeout=WAIT)
        self.cgroup = cgroup
        self.stop = threading.Event()
        self.calls = 0
        self.delivered = 0
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self.stop.is_set():
                r = self.v.call_sync('io.pressured.Inject', {'cgroup': self.cgroup, 'level': 'critical'})
                self.calls += 1
                self.delivered += r['parameters']['delivered']
                time.sleep(0.01)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = e

    def finish(self):
        self.stop.set()
        self.thread.join(WAIT)
        self.v.close()


def wait_delivered(subs, injector):
    """Until every subscriber has the event of every injection; returns the events that arrived."""
    pt.wait_for(lambda: all(s.snapshot()[1] >= injector.calls for s in subs), timeout=WAIT,
                what='every injected event to reach every subscriber')
    time.sleep(0.5)  # anything beyond an event per injection would show now
    return sum(s.snapshot()[1] for s in subs)


def check_sd_clients(d, cgroup, clients, calls):
    """One injection alone reaches every sd-event client; none counts more than it was sent."""
    before = [c.count() for c in clients]
    pt.check_eq(d.inject(cgroup=cgroup, level='critical')['parameters']['delivered'], SUBSCRIBERS + SD_CLIENTS,
                'an injection after the last re-execution')
    pt.wait_for(lambda: all(c.count() > b for c, b in zip(clients, before)), timeout=WAIT,
                what='every sd-event client to hear the injection after the last re-execution')
    time.sleep(0.5)  # a client spinning on a closed socket would show now
    for i, c in enumerate(clients):
        pt.check(c.count() <= calls + 1, f'sd-event client {i}: at most one callback per injection',
                 (c.count(), calls + 1))
        pt.check_eq(c.proc.poll(), None, f'sd-event client {i} still runs')


def reexec(d, expect_generation):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        r = v.call_sync('io.pressured.Reexecute')
    finally:
        v.close()
    pt.check_eq(r, {'parameters': {}}, 'Reexecute reply')
    st = d.status()
    pt.check_eq(st['generation'], expect_generation, 'generation after Reexecute')
    return st


def main():
    pt.require_root('Reexecute and Inject are reserved to root')
    proxylib.build_client()
    d = pt.Daemon(log_level='info')
    mp = os.path.join(d.tmpdir, 'memory-pressure')
    port = pt.free_port()
    d.write_config(f'[MemoryPressure]\nSocket={mp}\n[Limits]\nIdleTimeoutSec=600\nMaxClientsPerUser=1000\n'
                   f'[Metrics]\nListen=127.0.0.1:{port}\n')
    subs, clients = [], []
    with pt.quiet_cgroup() as quiet, d:
        pid = d.pid
        cgroups = (None, os.path.join(pt.cgroup2_mount(), quiet.lstrip('/')))
        try:
            for i in range(SUBSCRIBERS):
                subs.append(Subscriber(d.socket, quiet, SELECTORS[i % len(SELECTORS)]))
            for _ in range(SD_CLIENTS):
                clients.append(proxylib.Client(mp, cgroups=cgroups))
            pt.wait_for(lambda: all(s.snapshot()[0] == 1 for s in subs), timeout=WAIT, what='every subscription')
            pt.wait_for(lambda: sum(len(r['proxied']) for r in d.status()['registrations']) == SD_CLIENTS,
                        timeout=WAIT, what='every sd-event client attached')
            injector = Injector(d.socket, quiet)
            for g in range(1, REEXECS + 1):
                st = reexec(d, g)
                pt.check_eq(st['takeover']['connections'] >= SUBSCRIBERS + 1, True,
                            'connections taken over (subscribers, the injector, the caller)')
                pt.check_eq(st['takeover']['proxied_clients'], SD_CLIENTS, 'memory-pressure connections taken over')
                pt.check_eq(st['takeover']['closed'], 0, 'connections closed at the takeover')
                pt.check_eq(st['takeover']['clean'], True, 'clean takeover')
                time.sleep(0.1)
            pt.check_eq(d.pid, pid, 'the daemon keeps its pid')
            injector.finish()
            if injector.error:
                raise AssertionError(f'Inject failed across Reexecute: {injector.error!r}')
            pt.check(injector.calls > REEXECS, 'injections were made meanwhile', injector.calls)
            pt.check_eq(injector.delivered, injector.calls * (SUBSCRIBERS + SD_CLIENTS),
                        'every injection reached every subscriber and sd-event client')
            total = wait_delivered(subs, injector)
            pt.check_eq(total, injector.calls * SUBSCRIBERS, 'events arrived (no more)')
            for i, s in enumerate(subs):
                subscribed, events, problems, eof = s.snapshot()
                pt.check_eq(problems, [], f'subscriber {i}: every event in order')
                pt.check_eq(eof, False, f'subscriber {i}: no end of file')
                pt.check_eq(events, injector.calls, f'subscriber {i}: one event per injection')
            check_sd_clients(d, quiet, clients, injector.calls)
            st = d.status()
            pt.check_eq(st['subscriptions'], SUBSCRIBERS, 'subscriptions after the last takeover')
            metrics = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=WAIT).read().decode()
            pt.check(f'\npressured_takeovers_total {REEXECS}\n' in metrics, '/metrics counts the takeovers',
                     [line for line in metrics.splitlines() if 'takeover' in line])
            # A call sent behind Reexecute on the same connection is answered after it, by the new process.
            v = pt.Varlink(d.socket, timeout=WAIT)
            v.call('io.pressured.Reexecute')
            v.call('io.pressured.GetStatus')
            pt.check_eq(v.recv(timeout=WAIT), {'parameters': {}}, 'Reexecute answered first')
            pt.check_eq(v.recv(timeout=WAIT)['parameters']['generation'], REEXECS + 1,
                        'the call behind it answered by the new process')
            v.close()
            print(f'{injector.calls} injections, {REEXECS} re-executions, {total} events, all in order', flush=True)
        finally:
            for c in clients:
                c.stop()
            for s in subs:
                s.close()
    pt.finish()


if __name__ == '__main__':
    main()
