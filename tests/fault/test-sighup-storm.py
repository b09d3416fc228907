#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A burst of 50 SIGHUPs (each a configuration reload; the file alternates
between two Critical= triggers, so level subscriptions move between
registrations) while injected events flow to 20 subscribers: the daemon
survives, every subscriber keeps its stream and sees every event with
consecutive seq and nothing missed (each move told by a trigger_changed
event in the same numbering), and afterwards one registration is
shared by all 20 and the daemon holds no more fds than before."""

import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

SUBSCRIBERS = 20
SIGNALS = 50
WAIT = 120.0 if pt.WRAPPER else 20.0
# Two configurations the storm alternates between; both valid.
CONFIGS = [
    '[Daemon]\nLogLevel=info\n[Limits]\nIdleTimeoutSec=600\n[Levels]\nCritical=full 100ms 1s\n',
    '[Daemon]\nLogLevel=info\n[Limits]\nIdleTimeoutSec=600\n[Levels]\nCritical=full 150ms 2s\n',
]


class Reader(threading.Thread):
    def __init__(self, v):
        super().__init__(daemon=True)
        self.v = v
        self.events = []
        self.error = None

    def run(self):
        try:
            while True:
                self.events.append(self.v.recv(timeout=WAIT * 2)['parameters']['event'])
        except (EOFError, OSError, TimeoutError) as e:
            self.error = e


class Injector(threading.Thread):
    """Injects over one connection, a few calls in flight, until stopped."""

    def __init__(self, path, cg):
        super().__init__(daemon=True)
        self.v = pt.Varlink(path, timeout=WAIT)
        self.cg = cg
        self.stop = threading.Event()
        self.sent = 0
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                for _ in range(5):
                    self.v.call('io.pressured.Inject', {'cgroup': self.cg, 'level': 'critical'})
                for _ in range(5):
                    r = self.v.recv(timeout=WAIT)
                    if 'error' in r:
                        raise AssertionError(f'Inject failed: {r}')
                    self.sent += 1
                time.sleep(0.002)
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            self.v.close()


def write_config(d, text):
    tmp = d.config + '.new'
    with open(tmp, 'w') as f:
        f.write(text)
    os.rename(tmp, d.config)


def main():
    pt.require_root('Inject is reserved to root')
    # On an empty cgroup of its own: real pressure on / would add events.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=CONFIGS[0], log_level='info') as d:
        subs = []
        for _ in range(SUBSCRIBERS):
            v = pt.Varlink(d.socket)
            first = v.subscribe(cgroup=cg, level='critical')
            pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribe', first)
            subs.append(v)
        readers = [Reader(v) for v in subs]
        for r in readers:
            r.start()
        fds_before = d.non_socket_fds()

        inj = Injector(d.socket, cg)
        inj.start()
        pt.wait_for(lambda: inj.sent >= 20 or inj.error, timeout=WAIT, what='injects to flow')
        sent_at_storm = inj.sent
        for i in range(SIGNALS):
            if i % 5 == 0:
                write_config(d, CONFIGS[(i // 5) % 2])
            os.kill(d.pid, signal.SIGHUP)
            time.sleep(0.001)
        storm_sent = inj.sent - sent_at_storm
        # Keep injecting a little after the storm, so events cross the last reloads.
        target = inj.sent + 50
        pt.wait_for(lambda: inj.sent >= target or inj.error, timeout=WAIT, what='injects after the storm')
        inj.stop.set()
        inj.join(WAIT)
        pt.check(inj.error is None, 'injector failed', inj.error)
        pt.check(d.proc.poll() is None, 'daemon died in the SIGHUP storm', d.proc.returncode)
        n = inj.sent
        pt.wait_for(lambda: all(sum(e.get('kind') == 'pressure' for e in r.events) >= n or r.error
                                for r in readers), timeout=WAIT, what=f'{n} pressure events at every subscriber')

        bad = []
        for i, r in enumerate(readers):
            # Each move to another trigger is told (trigger_changed) in the same numbering.
            seqs = [e.get('seq') for e in r.events]
            kinds = {e.get('kind') for e in r.events}
            pressure = sum(e.get('kind') == 'pressure' for e in r.events)
            missed = sum(e.get('missed', 0) for e in r.events)
            if r.error or seqs != list(range(1, len(seqs) + 1)) or pressure != n or missed or \
                    not kinds <= {'pressure', 'trigger_changed'}:
                bad.append(f'subscriber {i}: {len(seqs)} events, seq {seqs[:3]}..{seqs[-3:]}, '
                           f'missed {missed}, kinds {kinds}, error {r.error!r}')

        st = d.status()
        regs = st['registrations']
        # The injector's and the status call's connections close asynchronously.
        try:
            pt.wait_for(lambda: d.non_socket_fds() == fds_before, timeout=WAIT, what='fds back at baseline')
        except TimeoutError:
            pass
        fds_after = d.non_socket_fds()
        reloads = d.log().count('Configuration reloaded')
        rejected = d.log().count('Configuration rejected')
        moves_failed = d.log().count('Could not move')
        print(f'SIGHUP storm: {SIGNALS} SIGHUPs in a burst, {reloads} reloads logged '
              f'({rejected} rejected, {moves_failed} subscription moves refused), '
              f'{storm_sent} injects during the burst, {n} in all', flush=True)
        print(f'SIGHUP storm: {SUBSCRIBERS - len(bad)}/{SUBSCRIBERS} subscribers got seq 1..{n} with missed 0; '
              f'registrations {[(x["trigger"], x["subscribers"]) for x in regs]}; non-socket fds {len(fds_before)} -> {len(fds_after)}',
              flush=True)
        pt.check(not bad, 'streams broken by the SIGHUP storm', *bad[:5])
        pt.check(len(regs) == 1 and regs[0]['subscribers'] == SUBSCRIBERS,
                 'subscribers not on one shared registration after the storm', regs)
        # The burst ends on the second configuration (2 s windows, never adjusted).
        pt.check(regs[0]['trigger']['psi']['threshold_us'] == 150000,
                 'the subscriptions did not follow the last configuration', regs[0]['trigger'])
        pt.check(fds_after == fds_before, 'fds leaked by reloads', fds_before, fds_after)
        pt.check(reloads >= 1, 'no reload happened')

        v = pt.Varlink(d.socket)
        info = v.call_sync('org.varlink.service.GetInfo')
        v.close()
        pt.check(info['parameters']['product'] == 'pressured', 'GetInfo after the storm', info)
        for v in subs:
            v.sock.shutdown(socket.SHUT_RDWR)
        for r in readers:
            r.join(WAIT)
        for v in subs:
            v.close()


if __name__ == '__main__':
    main()
    pt.finish()
