#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Connection churn: thousands of connect/subscribe/disconnect cycles from
several threads at once, mixing clean closes, closes halfway through a
message, and resets (SO_LINGER 0 with unread data, which a Unix socket
peer sees as ECONNRESET), must leave nothing behind: the daemon's open
fds return exactly to their baseline, no registration or subscription
remains, every registration created was removed, and the daemon's memory
(pressured_test.Daemon.own_memory(): RSS, or the heap in use under valgrind
and AddressSanitizer) comes back to within 1 MiB of where it was."""

import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

CYCLES = 1000 if pt.WRAPPER else 10000
WARMUP = 50 if pt.WRAPPER else 300
THREADS = 8
MARGIN_KIB = 1024
WAIT = 120.0 if pt.WRAPPER else 20.0
LEVELS = ('low', 'medium', 'critical')
# On an empty cgroup of the test's own (pt.quiet_cgroup()): no real event
# may follow the first reply that recv_reply() reads.
SUBSCRIBE = b'{"method":"io.pressured.Subscribe","parameters":{"cgroup":"%s","level":"%s"},"more":true}\0'


def recv_reply(s):
    buf = b''
    while not buf.endswith(b'\0'):
        data = s.recv(4096)
        if not data:
            raise EOFError('daemon closed the connection before replying')
        buf += data
    pt.validate(json.loads(buf[:-1]), 'io.pressured.Subscribe', True)
    return buf


def cycle(path, cg, i):
    """One connection's life; the kind of ending depends on @i."""
    kind = i % 5
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    try:
        s.connect(path)
        level = LEVELS[i % len(LEVELS)].encode()
        subscribe = SUBSCRIBE % (cg.encode(), level)
        if kind == 0:
            # Clean: subscribe, read the first reply, close.
            s.sendall(subscribe)
            if b'"subscribed"' not in recv_reply(s):
                raise AssertionError('subscribe failed')
        elif kind == 1:
            # Subscribed, then half of a further call, then gone.
            s.sendall(subscribe)
            recv_reply(s)
            s.sendall(b'{"method":"org.varlink.service.Get')
        elif kind == 2:
            # Half of the first call, then gone.
            msg = subscribe
            s.sendall(msg[:len(msg) // 2])
        elif kind == 3:
            # Reset: the reply is left unread and the socket closed with
            # SO_LINGER 0.
            s.sendall(subscribe)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        else:
            # Reset while the daemon is still answering: subscribe and a
            # pipelined call, nothing read.
            s.sendall(subscribe + b'{"method":"org.varlink.service.GetInfo"}\0')
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    finally:
        s.close()
    return kind


def churn(path, cg, n, start):
    errors, kinds = [], [0] * 5
    lock = threading.Lock()

    def worker(t):
        try:
            for i in range(start + t, start + n, THREADS):
                k = cycle(path, cg, i)
                with lock:
                    kinds[k] += 1
        except Exception as e:  # reported below
            with lock:
                errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pt.check(not errors, 'churn worker failed', errors[:3])
    return kinds


def settle(d):
    """Wait until only the status connection is left and the fd count holds still."""
    pt.wait_for(lambda: d.status()['clients'] == 1, timeout=WAIT, what='clients to leave')
    last, same = -1, 0
    end = time.monotonic() + WAIT
    while same < 5 and time.monotonic() < end:
        n = len(d.fds())
        same = same + 1 if n == last else 0
        last = n
        time.sleep(0.05)
    return last


def main():
    # One registration per level; timeouts long enough not to interfere.
    config = '[Limits]\nIdleTimeoutSec=600\nRequestTimeoutSec=600\n'
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=config, log_level='notice') as d:
        churn(d.socket, cg, WARMUP, 0)
        fds_before = settle(d)
        mem_before, how = d.own_memory()
        st0 = d.status()
        pt.check(st0['registrations'] == [], 'registrations left after warm-up', st0['registrations'])

        t0 = time.monotonic()
        kinds = churn(d.socket, cg, CYCLES, WARMUP)
        elapsed = time.monotonic() - t0

        pt.check(d.proc.poll() is None, 'daemon died during churn')
        st = pt.wait_for(lambda: (lambda s: s if s['clients'] == 1 and not s['registrations'] else None)(d.status()),
                         timeout=WAIT, what='registrations to go')
        try:
            pt.wait_for(lambda: len(d.fds()) == fds_before, timeout=WAIT, what='fds back at baseline')
        except TimeoutError:
            pass
        fds_after = len(d.fds())
        mem_after, _ = d.own_memory()
        c0, c = st0['counters'], st['counters']
        created = c['registrations_created'] - c0['registrations_created']
        removed = c['registrations_removed'] - c0['registrations_removed']

        print(f'churn: {CYCLES} cycles in {THREADS} threads ({elapsed:.1f} s, not asserted): '
              f'{kinds[0]} clean, {kinds[1] + kinds[2]} closed mid-message, {kinds[3] + kinds[4]} reset', flush=True)
        print(f'churn: fds {fds_before} -> {fds_after}, {how} {mem_before} -> {mem_after} KiB '
              f'(margin {MARGIN_KIB} KiB), registrations {len(st["registrations"])}, '
              f'subscriptions {st["subscriptions"]}, registrations created/removed {created}/{removed}', flush=True)

        pt.check(fds_after == fds_before, 'fd count not back at baseline', fds_before, fds_after, d.fds())
        pt.check(st['subscriptions'] == 0, 'subscriptions left', st['subscriptions'])
        pt.check(created == removed and created > 0, 'registrations created != removed', created, removed)
        if mem_before is None:
            pt.skip_part(f'the bound on the memory after the churn: {how}')
        else:
            pt.check(mem_after - mem_before <= MARGIN_KIB, f'{how} did not come back', mem_before, mem_after)

        v = pt.Varlink(d.socket)
        info = v.call_sync('org.varlink.service.GetInfo')
        v.close()
        pt.check(info['parameters']['product'] == 'pressured', 'GetInfo after churn', info)


if __name__ == '__main__':
    main()
    pt.finish()
