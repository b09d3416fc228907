#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Coalescing: with min_interval_ms a subscriber gets fewer events than
notifications, every notification counted in "count", numbered without
gaps; a subscriber without min_interval_ms on the same registration still
gets each one. The subscriptions are on an empty cgroup of the test's own
(pt.quiet_cgroup()), which only the injected notifications reach."""

import json
import os
import select
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
INTERVAL_MS = 500
INJECTS = 10


def burst(d, cg, n, level='medium'):
    """Inject @n events in one send, so they arrive well within one interval."""
    v = pt.Varlink(d.socket, timeout=WAIT)
    call = json.dumps({'method': 'io.pressured.Inject', 'parameters': {'cgroup': cg, 'level': level}}).encode() + b'\0'
    v.send_raw(call * n)
    for _ in range(n):
        r = v.recv(timeout=WAIT)
        pt.check(r.get('parameters', {}).get('delivered') == 2, 'both subscribers reached', r)
    v.close()


def collect(sub, total):
    """Read events until their counts add up to @total."""
    events, counted = [], 0
    while counted < total:
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'pressure', 'a pressure event', ev)
        events.append(ev)
        counted += ev['count']
    pt.check(counted == total, 'the counts add up to the notifications', counted, total)
    return events


def main():
    pt.require_root('Inject is reserved to root')
    # No "cleared" between the bursts, however slowly the test runs: it
    # counts pressure events only.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Levels]\nClearAfterSec=3600\n') as d:
        slow = pt.Varlink(d.socket, timeout=WAIT)
        first = slow.subscribe(cgroup=cg, level='medium', min_interval_ms=INTERVAL_MS)
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribed with min_interval_ms', first)
        plain = pt.Varlink(d.socket, timeout=WAIT)
        plain.subscribe(cgroup=cg, level='medium')
        regs = d.status()['registrations']
        pt.check(len(regs) == 1 and regs[0]['subscribers'] == 2, 'coalescing subscribers share the registration',
                 regs)

        burst(d, cg, INJECTS)
        events = collect(slow, INJECTS)
        pt.check(1 <= len(events) < INJECTS, 'fewer events than notifications', len(events))
        pt.check([e['seq'] for e in events] == list(range(1, len(events) + 1)), 'seq has no gaps', events)
        pt.check(all(e['missed'] == 0 and e['count'] >= 1 for e in events), 'coalescing is not loss', events)
        print(f'{INJECTS} notifications -> {len(events)} events, counts {[e["count"] for e in events]}', flush=True)

        plain_events = collect(plain, INJECTS)
        pt.check(len(plain_events) == INJECTS and all(e['count'] == 1 for e in plain_events),
                 'a subscriber without min_interval_ms gets every event', plain_events)

        # A second burst continues the numbering and the counting.
        burst(d, cg, INJECTS)
        more = collect(slow, INJECTS)
        pt.check(len(more) < INJECTS, 'the second burst is coalesced too', len(more))
        pt.check([e['seq'] for e in more] == list(range(len(events) + 1, len(events) + len(more) + 1)),
                 'seq continues across bursts', more)
        collect(plain, INJECTS)

        # Nothing else is pending: no further event arrives.
        readable, _, _ = select.select([slow.sock], [], [], INTERVAL_MS / 1000 * 2)
        pt.check(not readable and slow.buf == b'', 'no event beyond the counted ones', slow.buf)
        pt.check_eq(d.status()['subscriptions'], 2, 'both streams are still open')
        slow.close()
        plain.close()
    pt.finish()


if __name__ == '__main__':
    main()
