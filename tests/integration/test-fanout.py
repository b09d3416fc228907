#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fan-out: many clients subscribed to the same source share one kernel
registration and each receive every event, numbered without gaps; a client
that stops reading neither delays the others nor grows the daemon past its
per-client output limit, and when it reads again it sees the gap in seq
and the same number in missed. The registration is on an empty cgroup of
the test's own (pt.quiet_cgroup()), which only the injected events reach."""

import json
import os
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
CLIENTS = 50 if pt.WRAPPER else 200
EVENTS = 5
OUTPUT_BUFFER = 16384
# Events injected while one client stalls. Unbounded queueing of this many
# would be several MiB, well above the memory allowance below (RSS, or the
# heap in use under valgrind and AddressSanitizer: Daemon.own_memory()).
FLOOD = 2000 if pt.WRAPPER else 30000
BATCH = 50
ALLOWANCE_KIB = 3 * 1024


def inject_many(d, cg, n, on_batch=None):
    """Inject @n medium events, pipelined in batches; call on_batch(k) after each."""
    v = pt.Varlink(d.socket)
    call = json.dumps({'method': 'io.pressured.Inject',
                       'parameters': {'cgroup': cg, 'level': 'medium'}}).encode() + b'\0'
    done = 0
    while done < n:
        k = min(BATCH, n - done)
        v.send_raw(call * k)
        for _ in range(k):
            r = v.recv(timeout=WAIT)
            pt.check('delivered' in r.get('parameters', {}), 'Inject answered', r)
        done += k
        if on_batch:
            on_batch(k)
    v.close()


def test_many_clients(d, cg):
    clients = []
    for i in range(CLIENTS):
        v = pt.Varlink(d.socket, timeout=WAIT)
        first = v.subscribe(cgroup=cg, level='medium')
        pt.check(first.get('parameters', {}).get('event', {}).get('kind') == 'subscribed',
                 f'client {i} subscribed', first)
        clients.append(v)

    st = d.status()
    regs = st['registrations']
    pt.check(len(regs) == 1, 'one shared registration', regs)
    pt.check(regs[0]['cgroup'] == cg and regs[0]['subscribers'] == CLIENTS,
             f'the registration has {CLIENTS} subscribers', regs[0])
    pt.check(st['subscriptions'] == CLIENTS, 'subscriptions counted', st['subscriptions'])
    pt.check(st['counters']['registrations_created'] == 1, 'one registration created', st['counters'])

    for _ in range(EVENTS):
        r = d.inject('medium', cg)
        pt.check(r['parameters']['delivered'] == CLIENTS, 'Inject reached every subscriber', r)
    for i, v in enumerate(clients):
        for seq in range(1, EVENTS + 1):
            ev = v.recv(timeout=WAIT)['parameters']['event']
            pt.check(ev['kind'] == 'pressure' and ev['seq'] == seq and ev['missed'] == 0 and ev['count'] == 1,
                     f'client {i} event {seq}', ev)
            pt.check(ev['level'] == 'medium' and ev.get('synthetic') is True, 'injected event fields', ev)

    for v in clients:
        v.close()
    pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT,
                what='the registration to go with its last subscriber')


def test_slow_client(d, cg):
    fast = pt.Varlink(d.socket, timeout=WAIT)
    fast.subscribe(cgroup=cg, level='medium')
    slow = pt.Varlink(d.socket, timeout=WAIT)
    slow.subscribe(cgroup=cg, level='medium')
    st = d.status()
    pt.check(st['registrations'][0]['subscribers'] == 2, 'two subscribers', st['registrations'])
    dropped_before = st['counters']['events_dropped']
    mem_before, how = d.own_memory()

    fast_seq = [0]

    def drain_fast(k):
        # The fast client gets every event of the batch promptly, in order,
        # while the slow one reads nothing.
        for _ in range(k):
            ev = fast.recv(timeout=WAIT)['parameters']['event']
            fast_seq[0] += 1
            pt.check(ev['seq'] == fast_seq[0] and ev['missed'] == 0,
                     'the fast client misses nothing while another stalls', ev, fast_seq[0])

    inject_many(d, cg, FLOOD, drain_fast)
    pt.check(fast_seq[0] == FLOOD, 'the fast client received every event', fast_seq[0])

    st = d.status()
    dropped = st['counters']['events_dropped'] - dropped_before
    pt.check(dropped > 0, 'events for the stalled client were dropped', st['counters'])
    mem_after, _ = d.own_memory()
    print(f'flood of {FLOOD}: {dropped} dropped; {how} {mem_before} -> {mem_after} KiB', flush=True)
    if mem_before is None:
        pt.skip_part(f'the bound on the memory queued for the stalled client: {how}')
    else:
        pt.check(mem_after - mem_before < ALLOWANCE_KIB,
                 f'the daemon did not queue without bound for the stalled client ({how} KiB before, after)',
                 mem_before, mem_after)

    # The slow client reads again: first what was queued, without gaps.
    received = []
    nbytes = 0
    while len(received) < FLOOD - dropped:
        msg = slow.recv(timeout=WAIT)
        nbytes += len(json.dumps(msg, separators=(',', ':'))) + 1
        received.append(msg['parameters']['event'])
    for i, ev in enumerate(received):
        pt.check(ev['seq'] == i + 1 and ev['missed'] == 0, 'the queued events are consecutive', ev, i + 1)
    # What it kept fits in the kernel's socket buffer plus OutputBufferBytes.
    with open('/proc/sys/net/core/wmem_max') as f:
        kernel_buffer = int(f.read())
    with open('/proc/sys/net/core/wmem_default') as f:
        kernel_buffer = max(kernel_buffer, int(f.read()))
    pt.check(nbytes <= kernel_buffer + OUTPUT_BUFFER + 4096,
             'the stalled client\'s backlog is bounded by the socket buffer and OutputBufferBytes',
             nbytes, kernel_buffer, OUTPUT_BUFFER)
    # Then, on the next event, the gap: seq jumps by missed + 1.
    r = d.inject('medium', cg)
    pt.check(r['parameters']['delivered'] == 2, 'both subscribers reached after the flood', r)
    ev = slow.recv(timeout=WAIT)['parameters']['event']
    pt.check(ev['missed'] == dropped, 'missed equals the dropped events', ev, dropped)
    pt.check(ev['seq'] == len(received) + dropped + 1, 'seq shows the same gap as missed', ev, len(received))
    ev = fast.recv(timeout=WAIT)['parameters']['event']
    pt.check(ev['seq'] == FLOOD + 1 and ev['missed'] == 0, 'the fast client continues', ev)
    pt.check(d.status()['counters']['events_dropped'] - dropped_before == dropped,
             'only the stalled client lost events')
    print(f'the stalled client kept {len(received)} events ({nbytes} bytes)', flush=True)
    fast.close()
    slow.close()


def main():
    pt.require_root('hundreds of clients, beyond MaxClientsPerUser for other users, and Inject')
    # ClearAfterSec=3600: the flood's episode does not end while the test
    # counts pressure events and their seq.
    config = f'[Levels]\nClearAfterSec=3600\n[Limits]\nOutputBufferBytes={OUTPUT_BUFFER}\n'
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=config) as d:
        test_many_clients(d, cg)
        test_slow_client(d, cg)
    pt.finish()


if __name__ == '__main__':
    main()
