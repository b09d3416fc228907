#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A client that subscribes and then never reads must not hold anyone up:
with 20 such clients stalled on the same registration, a reading
subscriber still gets every injected event, in order and without loss;
the daemon's memory (RSS, or the heap in use under valgrind and
AddressSanitizer) grows by no more than OutputBufferBytes per stalled
client (plus a stated margin for allocator slack); the stalled clients'
excess events are dropped and counted; and a stalled client that starts
reading again sees the drop as a gap in seq and the same number in
missed."""

import os
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

STALLED = 20
OUTPUT_BUFFER = 64 * 1024
# Allocator slack, the per-entry bookkeeping of the queues and the
# daemon's own working set while it answers thousands of calls.
MARGIN_KIB = 2048
# Each stalled client first absorbs a kernel socket buffer (about 200 KiB
# on Linux) and then OutputBufferBytes; about 300 bytes per event.
INJECTS = 1200 if pt.WRAPPER else 3000
WAIT = 120.0 if pt.WRAPPER else 20.0


class Reader(threading.Thread):
    """Reads a subscription's events as fast as they come."""

    def __init__(self, v):
        super().__init__(daemon=True)
        self.v = v
        self.events = []
        self.lags_us = []
        self.error = None

    def run(self):
        try:
            while True:
                msg = self.v.recv(timeout=WAIT)
                now_us = time.monotonic_ns() // 1000
                ev = msg['parameters']['event']
                self.events.append(ev)
                self.lags_us.append(now_us - ev['monotonic_us'])
        except (EOFError, OSError, TimeoutError) as e:
            self.error = e


def inject_many(d, cg, n, batch=100, after_batch=None):
    """Inject @n events on @cg over one connection, pipelining @batch calls at a time;
    after_batch(total) runs after each batch."""
    v = pt.Varlink(d.socket, timeout=WAIT)
    delivered = []
    try:
        left = n
        while left:
            k = min(batch, left)
            for _ in range(k):
                v.call('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
            for _ in range(k):
                delivered.append(v.recv(timeout=WAIT)['parameters']['delivered'])
            left -= k
            if after_batch:
                after_batch(n - left)
    finally:
        v.close()
    return delivered


def drain(v, timeout):
    """Read events until none arrive for @timeout seconds."""
    out = []
    while True:
        try:
            out.append(v.recv(timeout=timeout)['parameters']['event'])
        except TimeoutError:
            return out


def main():
    pt.require_root('Inject is reserved to root')
    # ClearAfterSec=3600: the episode of the injections does not end with a "cleared" event
    # while a resumed client drains what was queued for it (under valgrind that drain waits
    # longer than the default hold).
    config = f'[Levels]\nClearAfterSec=3600\n[Limits]\nOutputBufferBytes={OUTPUT_BUFFER}\nIdleTimeoutSec=600\n'
    # On an empty cgroup of its own: real pressure on / would add events.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=config, log_level='notice') as d:
        stalled = []
        for _ in range(STALLED):
            v = pt.Varlink(d.socket)
            first = v.subscribe(cgroup=cg, level='critical')
            pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribe failed', first)
            stalled.append(v)
        fast = pt.Varlink(d.socket)
        fast.subscribe(cgroup=cg, level='critical')
        reader = Reader(fast)
        reader.start()

        st = d.status()
        pt.check(st['subscriptions'] == STALLED + 1, 'subscriptions', st['subscriptions'])
        pt.check(len(st['registrations']) == 1, 'one shared registration', st['registrations'])
        mem_before, how = d.own_memory()

        # The reading client is a Python thread: let it keep up with each batch
        # (it reads; the point is that the stalled ones do not slow it down).
        delivered = inject_many(d, cg, INJECTS, after_batch=lambda total: pt.wait_for(
            lambda: len(reader.events) >= total or reader.error, timeout=WAIT, what='the reader to keep up'))
        # The first events reach everyone; later ones at least the reading client.
        pt.check(delivered[0] == STALLED + 1, 'first inject did not reach every subscriber', delivered[0])
        pt.check(min(delivered) >= 1, 'an inject did not reach the reading client', min(delivered))
        pt.wait_for(lambda: len(reader.events) >= INJECTS or reader.error, timeout=WAIT,
                    what=f'{INJECTS} events at the reading client')
        mem_after, _ = d.own_memory()
        st = d.status()

        # The reading client lost nothing and saw every event in order.
        seqs = [e['seq'] for e in reader.events]
        pt.check(reader.error is None, 'reading client failed', reader.error)
        pt.check(seqs == list(range(1, INJECTS + 1)), 'reading client seq not 1..N',
                 seqs[:5], seqs[-5:], len(seqs))
        pt.check(all(e['missed'] == 0 for e in reader.events), 'reading client missed events')

        # The stalled clients did overflow: their events were dropped, not queued without end.
        dropped = st['counters']['events_dropped']
        pt.check(dropped > 0, 'no events dropped although 20 clients never read', dropped)
        pt.check(dropped <= STALLED * INJECTS, 'dropped more than the stalled clients were sent', dropped)

        growth = mem_after - mem_before if mem_before is not None else None
        bound = STALLED * OUTPUT_BUFFER // 1024 + MARGIN_KIB
        lags = sorted(reader.lags_us)
        print(f'slow consumer: {STALLED} stalled + 1 reading subscriber, {INJECTS} injects, '
              f'OutputBufferBytes={OUTPUT_BUFFER}', flush=True)
        print(f'slow consumer: reading client got {len(seqs)}/{INJECTS} events, missed 0; '
              f'delivery lag median {statistics.median(lags)} us, p99 {lags[int(len(lags) * 0.99) - 1]} us, '
              f'max {lags[-1]} us (not asserted)', flush=True)
        print(f'slow consumer: events dropped for stalled clients {dropped}; '
              f'{how} {mem_before} -> {mem_after} KiB (growth {growth} KiB, bound {bound} KiB = '
              f'{STALLED} x {OUTPUT_BUFFER // 1024} KiB + {MARGIN_KIB} KiB margin)', flush=True)
        if mem_before is None:
            pt.skip_part(f'the bound on the memory of the stalled clients: {how}')
        else:
            pt.check(growth < bound, f'{how} grew past the output buffers of the stalled clients', growth, bound)

        # A stalled client resumes: it reads what was queued for it (in order,
        # nothing missed), then the next event reveals the drop.
        slow = stalled[0]
        queued = drain(slow, 1.0 if not pt.WRAPPER else 5.0)
        qs = [e['seq'] for e in queued]
        pt.check(qs and qs == list(range(1, len(qs) + 1)), 'queued events of the slow client not 1..k', qs[:5])
        pt.check(all(e['missed'] == 0 for e in queued), 'queued events carry missed')
        pt.check(len(qs) < INJECTS, 'the slow client got everything; nothing was dropped', len(qs))
        inject_many(d, cg, 1)
        ev = slow.recv(timeout=WAIT)['parameters']['event']
        gap = ev['seq'] - qs[-1] - 1
        print(f'slow consumer: resumed client read {len(qs)} queued events (seq 1..{qs[-1]}), '
              f'then seq {ev["seq"]} with missed {ev["missed"]} (gap {gap})', flush=True)
        pt.check(ev['seq'] == INJECTS + 1, 'seq of the event after resuming', ev['seq'])
        pt.check(ev['missed'] == gap and gap > 0, 'missed does not match the seq gap', ev['missed'], gap)

        # The others still stalled were not disturbed: the daemon answers and
        # the reading client got the extra event too.
        pt.wait_for(lambda: len(reader.events) >= INJECTS + 1, timeout=WAIT, what='event after resume')
        pt.check(reader.events[-1]['seq'] == INJECTS + 1 and reader.events[-1]['missed'] == 0,
                 'reading client after resume', reader.events[-1])
        for v in stalled:
            v.close()
        fast.sock.shutdown(socket.SHUT_RDWR)
        reader.join(WAIT)
        fast.close()
        # GetStatus counts its own connection.
        pt.wait_for(lambda: d.status()['clients'] == 1, timeout=WAIT, what='clients gone')
        pt.check_eq(d.status()['registrations'], [], 'registration left behind')


if __name__ == '__main__':
    main()
    pt.finish()
