#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon is killed (SIGKILL) while 100 raw clients are subscribed:
every one of them sees the end of its connection (EOF or reset) rather
than hanging; a new daemon started on the same socket path (the old
socket file is still there) comes up, starts from a clean state, and
serves subscriptions and injected events again."""

import os
import selectors
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

CLIENTS = 50 if pt.WRAPPER else 100
WAIT = 120.0 if pt.WRAPPER else 15.0
CONFIG = '[Limits]\nIdleTimeoutSec=600\n'


def wait_all_closed(socks, timeout):
    """Read every socket until EOF or reset; return how many ended."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    ended = 0
    end = time.monotonic() + timeout
    while ended < len(socks) and time.monotonic() < end:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b''
            if not data:
                sel.unregister(s)
                ended += 1
    sel.close()
    return ended


def main():
    pt.require_root('Inject is reserved to root')
    sockdir = tempfile.mkdtemp(prefix='pressured-restart-')
    os.chmod(sockdir, 0o755)
    path = os.path.join(sockdir, 'io.pressured')
    # The subscriptions are on an empty cgroup of the test's own: real
    # pressure on / would add events to the injected ones.
    with pt.quiet_cgroup() as cg:
        run(sockdir, path, cg)


def run(sockdir, path, cg):
    try:
        first = pt.Daemon(config_text=CONFIG, socket_path=path, log_level='notice').start()
        try:
            clients = []
            for _ in range(CLIENTS):
                v = pt.Varlink(path, timeout=WAIT)
                r = v.subscribe(cgroup=cg, level='critical')
                pt.check(r['parameters']['event']['kind'] == 'subscribed', 'subscribe', r)
                clients.append(v)
            st = first.status()
            pt.check(st['subscriptions'] == CLIENTS, 'subscriptions before the kill', st['subscriptions'])
            pt.check_eq(first.inject('critical', cg)['parameters']['delivered'], CLIENTS, 'inject before the kill')
            for v in clients:
                ev = v.recv(timeout=WAIT)['parameters']['event']
                pt.check(ev['seq'] == 1, 'event before the kill', ev)

            first.kill()
            t0 = time.monotonic()
            ended = wait_all_closed([v.sock for v in clients], WAIT)
            took = time.monotonic() - t0
            print(f'restart: SIGKILL with {CLIENTS} subscribed clients: {ended}/{CLIENTS} saw EOF or reset '
                  f'({took:.2f} s, not asserted)', flush=True)
            pt.check(ended == CLIENTS, 'clients still waiting after the daemon died', CLIENTS - ended)
            for v in clients:
                v.close()
        finally:
            first.kill()
            shutil.rmtree(first.tmpdir, ignore_errors=True)

        pt.check(os.path.exists(path), 'the killed daemon left no socket file to test a restart over')
        with pt.Daemon(config_text=CONFIG, socket_path=path, log_level='notice') as second:
            # The start-up probe's connection may still be closing.
            st = pt.wait_for(lambda: (lambda s: s if s['clients'] == 1 else None)(second.status()),
                             timeout=WAIT, what='only the status client')
            pt.check(st['registrations'] == [] and st['subscriptions'] == 0,
                     'restarted daemon does not start clean', st)
            subs = []
            for _ in range(10):
                v = pt.Varlink(path, timeout=WAIT)
                r = v.subscribe(cgroup=cg, level='critical')
                pt.check(r['parameters']['event']['kind'] == 'subscribed', 'subscribe after restart', r)
                subs.append(v)
            d = second.inject('critical', cg)['parameters']['delivered']
            for v in subs:
                ev = v.recv(timeout=WAIT)['parameters']['event']
                pt.check(ev['seq'] == 1 and ev['missed'] == 0, 'event after restart', ev)
                v.close()
            print(f'restart: new daemon on the same socket path started clean and delivered to {d}/10 '
                  f'new subscribers', flush=True)
            pt.check(d == 10, 'inject after restart', d)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


if __name__ == '__main__':
    main()
    pt.finish()
