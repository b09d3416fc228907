#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pressure episodes under real memory pressure. A PSI subscriber (some
100ms in a 2 s window: the hold period is two windows, 4 s) and a
vmpressure subscriber (low; hold 2 s) watch a cgroup pair with a 64M v1
limit. A load gives pressure events; stopped and started again within the
hold period it stays one episode; stopped for good, each stream gets
exactly one "cleared", after its last pressure event; a load after that is
a new episode. Once both episodes are cleared the daemon, subscribers
still attached, is back to 0 wakeups: no timer is left armed.

Prints the delay from the end of each load (its processes gone) to each
"cleared"; nothing about it is asserted but that it comes.

The limit is the cgroup2 directory's own memory.max on a pure cgroup2
host; there the vmpressure subscriber is left out, saying so (vmpressure
must be SourceUnavailable instead). In the VM of tests/vm/run.sh, where a
new load can take longer than the default hold to stall again, the hold is
set to HOLD_IN_VM with [Levels] ClearAfterSec=."""
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

# The hold: the default, two 2 s windows; in the VM set with ClearAfterSec=.
HOLD_IN_VM = 20
HOLD = HOLD_IN_VM if pt.IN_VM else 4.0
# Bound on the wait for "cleared" after a load: the hold plus the windows
# the stall needs to drop, with a wide margin for a loaded machine.
CLEAR_TIMEOUT = HOLD + (180.0 if pt.IN_VM else 120.0 if kl.SLOW else 60.0)
IDLE_PERIOD = 5.0


class Stream:
    """One subscription and the events read from it."""

    def __init__(self, d, name, **params):
        self.v, self.first = kl.subscribe_ok(d, cgroup=name, **params)
        self.name = params
        self.seq = 0

    def read(self, timeout):
        """The next event, or None if nothing comes within @timeout s."""
        try:
            ev = kl.event_of(self.v.recv(timeout=timeout))
        except TimeoutError:
            return None
        pt.check(ev['kind'] in ('pressure', 'cleared'), 'only pressure and cleared events', ev)
        pt.check_eq(ev['seq'], self.seq + 1, 'seq has no gap')
        self.seq = ev['seq']
        return ev

    def until_pressure(self, timeout=kl.PRESSURE_TIMEOUT):
        """Read until a pressure event; a "cleared" on the way is an error."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ev = self.read(min(1.0, end - time.monotonic()))
            if ev is None:
                continue
            pt.check(ev['kind'] == 'pressure', f'{self.name}: no cleared while the load runs', ev)
            return ev
        raise TimeoutError(f'{self.name}: no pressure event within {timeout:.0f} s')

    def until_cleared(self, timeout=CLEAR_TIMEOUT):
        """Read pressure events until "cleared"; return (cleared, pressure events seen)."""
        end, seen = time.monotonic() + timeout, 0
        while time.monotonic() < end:
            ev = self.read(min(1.0, end - time.monotonic()))
            if ev is None:
                continue
            if ev['kind'] == 'cleared':
                return ev, seen
            seen += 1
        raise TimeoutError(f'{self.name}: no cleared within {timeout:.0f} s of the end of the load')

    def quiet(self, seconds):
        if self.v.buf:
            return False
        readable, _, _ = select.select([self.v.sock], [], [], seconds)
        return not readable


def episode_of(d, source):
    regs = [r for r in d.status()['registrations'] if r['source'] == source]
    pt.check(len(regs) == 1, f'one {source} registration', regs)
    return regs[0].get('episode'), regs[0]['history']


def load_until_pressure(v1, v2, streams):
    """Run the load until every stream saw a pressure event; return the
    monotonic time when the load's processes were gone."""
    with pt.memory_load(v1, v2, size_mb=200):
        for s in streams:
            s.until_pressure()
    return time.monotonic()


def wait_all_cleared(streams, stopped, label):
    """Read all streams at once until each has its "cleared"; print the
    delay from @stopped to the arrival of each."""
    out, end = {}, time.monotonic() + CLEAR_TIMEOUT
    while len(out) < len(streams):
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'{label}: no cleared within {CLEAR_TIMEOUT:.0f} s of the end of the load')
        waiting = [s for s in streams if s not in out]
        ready = [s for s in waiting if s.v.buf]
        if not ready:
            r, _, _ = select.select([s.v.sock for s in waiting], [], [], min(left, 1.0))
            ready = [s for s in waiting if s.v.sock in r]
        for s in ready:
            ev = s.read(kl.REPLY_TIMEOUT)
            if ev is None or ev['kind'] != 'cleared':
                continue
            delay = time.monotonic() - stopped
            print(f'{label}: {ev["source"]} cleared {delay:.2f} s after the load ended '
                  f'(episode {ev["duration_us"] / 1e6:.2f} s, {ev["events"]} events, '
                  f'peak {ev.get("peak", ev.get("peak_level"))})', flush=True)
            out[s] = ev
    return [out[s] for s in streams]


def main():
    pt.require_root('real cgroups under memory load')
    config = f'[Levels]\nClearAfterSec={HOLD_IN_VM}\n' if pt.IN_VM else None
    with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limit='64M', limited=True) as (name, v1, v2), \
            kl.quiet_daemon(config_text=config) as d:
        psi = Stream(d, name, psi=kl.PSI_2S)
        pt.check(psi.first['source'] == 'psi', 'source', psi.first)
        if v1:
            vmp = Stream(d, name, vmpressure={'level': 'low'})
            pt.check(vmp.first['source'] == 'vmpressure', 'source', vmp.first)
            streams = (psi, vmp)
        else:
            kl.no_v1('the vmpressure subscriber')
            kl.expect_no_vmpressure(d, name)
            streams = (psi,)

        # Load, stop, and load again at once: within the hold period, one episode.
        load_until_pressure(v1, v2, streams)
        ep1, _ = episode_of(d, 'psi')
        pt.check(ep1 is not None, 'the PSI episode is active', ep1)
        load_until_pressure(v1, v2, [psi])
        ep2, hist = episode_of(d, 'psi')
        pt.check(ep2 and ep2['active_since_us'] == ep1['active_since_us'] and ep2['events'] >= 2,
                 'a load again within the hold period continues the episode', ep1, ep2)
        pt.check(hist == [], 'no episode has ended yet', hist)
        stopped = time.monotonic()

        first = wait_all_cleared(streams, stopped, 'episode 1')
        pt.check(first[0]['events'] >= ep2['events'],
                 'the PSI episode counts the events of both loads', first[0], ep2)
        pt.check(0 < first[0]['peak'] <= 100, 'PSI peak is a percentage', first[0])
        if v1:
            pt.check(first[1]['peak_level'] == 'low', 'vmpressure peak is the level', first[1])
        # Exactly one: nothing follows within another hold period.
        for s in streams:
            pt.check(s.quiet(HOLD), f'{s.name}: exactly one cleared per episode', s.v.buf)
        ep, hist = episode_of(d, 'psi')
        pt.check(ep is None and len(hist) == 1, 'the episode ended and is in the history', ep, hist)

        # A load after the end is a new episode.
        stopped = load_until_pressure(v1, v2, streams)
        ep3, _ = episode_of(d, 'psi')
        pt.check(ep3 is None or ep3['active_since_us'] > hist[0]['end_us'], 'a new episode', ep3, hist)
        second = wait_all_cleared(streams, stopped, 'episode 2')
        pt.check(second[0]['seq'] > first[0]['seq'], 'numbered in the same stream', first, second)
        _, hist = episode_of(d, 'psi')
        pt.check(len(hist) == 2 and hist[1]['start_us'] > hist[0]['end_us'], 'two episodes in the history', hist)

        # Cleared, subscribers still there: no timer, no wakeup.
        kl.settled_fds(d)
        before = pt.process_context_switches(d.pid)
        time.sleep(IDLE_PERIOD)
        woke = pt.process_context_switches(d.pid) - before
        print(f'after cleared, {len(streams)} subscriber(s): {woke} context switches in {IDLE_PERIOD:.0f} s',
              flush=True)
        pt.check_eq(woke, 0, 'wakeups after the episodes cleared')
        for s in streams:
            s.v.close()
    pt.finish()


if __name__ == '__main__':
    main()
