#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pressure episodes driven by Inject on the PSI registration of an empty
cgroup (pt.quiet_cgroup(): real pressure on the machine never reaches it):
an episode starts with the first event, every subscriber (coalescing or
not, early or late) gets exactly one "cleared" after the last pressure
event, numbered in the same seq stream; the active episode shows in
"subscribed" and GetStatus, ended ones in a history ring bounded by
[Limits] HistoryEpisodes=, resized by a reload that also applies a new
ClearAfterSec= to the active episode.

The trigger's threshold is 90 % of its window and ClearRatio=1 besides."""

import json
import os
import select
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 15.0  # bound on waits for clearing (hold 1 s)
CONFIG = '[Levels]\nMedium=some 900ms 1s\nClearAfterSec=1\nClearRatio=1\n[Limits]\nHistoryEpisodes=2\n'


def next_event(sub):
    return sub.recv(timeout=WAIT)['parameters']['event']


def quiet(sub, seconds):
    """True if nothing arrives on @sub for @seconds (checks that no second
    "cleared" follows)."""
    if sub.buf:
        return False
    readable, _, _ = select.select([sub.sock], [], [], seconds)
    return not readable


def registration(d, cg):
    regs = [r for r in d.status()['registrations'] if r['source'] == 'psi' and r['cgroup'] == cg]
    pt.check(len(regs) == 1, f'one PSI registration on {cg}', regs)
    return regs[0]


def expected_peak(trigger):
    """The peak of an episode of injected events only: unknown, whatever the
    trigger (no kernel event measured the stall)."""
    return None


def inject(d, cg, n=1):
    for _ in range(n):
        r = d.inject('medium', cg)
        pt.check(r['parameters']['delivered'] >= 1, 'the injection reached the subscribers', r)


def main():
    pt.require_root('Inject is reserved to root')
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=CONFIG) as d:
        plain = pt.Varlink(d.socket, timeout=WAIT)
        first = plain.subscribe(cgroup=cg, level='medium')['parameters']['event']
        pt.check('episode' not in first['state'], 'no episode before any event', first)
        peak = expected_peak(first['trigger'])
        slow = pt.Varlink(d.socket, timeout=WAIT)
        slow.subscribe(cgroup=cg, level='medium', min_interval_ms=60000)
        reg = registration(d, cg)
        pt.check('episode' not in reg and reg['history'] == [], 'idle registration: no episode, no history', reg)

        inject(d, cg, 2)
        for seq in (1, 2):
            ev = next_event(plain)
            pt.check(ev['kind'] == 'pressure' and ev['seq'] == seq, 'pressure events first', ev)
        ev = next_event(slow)
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == 1, 'the coalescing subscriber gets the first', ev)

        # The state is there for whoever asks while the episode lasts.
        reg = registration(d, cg)
        ep = reg.get('episode')
        pt.check(ep and ep['events'] == 2 and 'peak' in ep and ep['peak'] == peak, 'GetStatus shows the active episode',
                 reg)
        late = pt.Varlink(d.socket, timeout=WAIT)
        sub = late.subscribe(cgroup=cg, level='medium')['parameters']['event']
        pt.check(sub['state'].get('episode', {}).get('events') == 2, 'subscribed carries the episode', sub)
        pt.check(sub['state']['episode']['active_since_us'] == ep['active_since_us'], 'the same episode', sub, ep)

        # One "cleared" each, after the last pressure event of the episode.
        ev = next_event(plain)
        pt.check(ev['kind'] == 'cleared' and ev['seq'] == 3 and ev['missed'] == 0, 'cleared follows', ev)
        pt.check(ev['events'] == 2 and ev['peak'] == peak and ev['level'] == 'medium', 'its figures', ev)
        pt.check(ev['duration_us'] >= 0 and 'count' not in ev, 'a cleared event merges nothing', ev)
        print(f'cleared after the hold: duration {ev["duration_us"]} us', flush=True)
        ev = next_event(slow)
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == 2 and ev['count'] == 1,
                 'the coalesced pressure event is flushed before cleared', ev)
        ev = next_event(slow)
        pt.check(ev['kind'] == 'cleared' and ev['seq'] == 3, 'then cleared, well within the interval', ev)
        ev = next_event(late)
        pt.check(ev['kind'] == 'cleared' and ev['seq'] == 1 and ev['events'] == 2,
                 'a late subscriber gets the end of the episode it joined', ev)
        pt.check(quiet(plain, 2.5), 'exactly one cleared per episode', plain.buf)

        reg = registration(d, cg)
        pt.check('episode' not in reg, 'no active episode after cleared', reg)
        pt.check(len(reg['history']) == 1, 'the episode is in the history', reg)
        h = reg['history'][0]
        pt.check(h['events'] == 2 and h['peak'] == peak and h['end_us'] > h['start_us'] and
                 h['duration_us'] == h['end_us'] - h['start_us'] and h['end_time_us'] >= h['start_time_us'],
                 'a history record', h)

        # Two more episodes: the ring keeps HistoryEpisodes=2, the newest.
        for n in (1, 3):
            inject(d, cg, n)
            kinds = [next_event(plain)['kind'] for _ in range(n + 1)]
            pt.check(kinds == ['pressure'] * n + ['cleared'], 'a new episode and its end', kinds)
        hist = registration(d, cg)['history']
        pt.check([h['events'] for h in hist] == [1, 3], 'the ring keeps the newest HistoryEpisodes=2', hist)

        # A reload applies to the active episode and resizes the ring.
        inject(d, cg)
        pt.check(next_event(plain)['kind'] == 'pressure', 'a fourth episode', None)
        d.write_config(CONFIG.replace('ClearAfterSec=1', 'ClearAfterSec=2').replace('HistoryEpisodes=2',
                                                                                  'HistoryEpisodes=1'))
        r = pt.Varlink(d.socket).call_sync('io.pressured.Reload')
        pt.check('error' not in r, 'reload accepted', r)
        reg = registration(d, cg)
        pt.check(reg.get('episode', {}).get('events') == 1, 'the episode survives the reload', reg)
        pt.check([h['events'] for h in reg['history']] == [3], 'the ring shrank to the newest', reg)
        ev = next_event(plain)
        pt.check(ev['kind'] == 'cleared' and ev['events'] == 1, 'the episode clears under the new hold', ev)
        pt.check(ev['duration_us'] >= 2000000, 'the new ClearAfterSec=2 applied', ev)
        pt.check([h['events'] for h in registration(d, cg)['history']] == [1], 'one record kept', None)

        for v in (plain, slow, late):
            v.close()
        pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='the registration to go')
        # History lives with the registration: a new one starts empty.
        again = pt.Varlink(d.socket, timeout=WAIT)
        again.subscribe(cgroup=cg, level='medium')
        pt.check(registration(d, cg)['history'] == [], 'no subscriber, no history', None)
        again.close()


def test_trigger_change():
    """A reload that moves a level subscription to a new trigger takes the
    active episode along: the subscriber is told of the new trigger and
    still gets its one cleared."""
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=CONFIG) as d:
        sub = pt.Varlink(d.socket, timeout=WAIT)
        old = sub.subscribe(cgroup=cg, level='medium')['parameters']['event']['trigger']
        inject(d, cg, 2)
        for _ in range(2):
            pt.check(next_event(sub)['kind'] == 'pressure', 'pressure before the reload', None)
        d.write_config(CONFIG.replace('Medium=some 900ms 1s', 'Medium=some 950ms 1s'))
        r = pt.Varlink(d.socket).call_sync('io.pressured.Reload')
        pt.check('error' not in r, 'reload accepted', r)
        reg = registration(d, cg)
        pt.check(reg['trigger'] != old and reg.get('episode', {}).get('events') == 2,
                 'the new registration carries the episode on', old, reg)
        ev = next_event(sub)
        pt.check(ev['kind'] == 'trigger_changed' and ev['seq'] == 3 and ev['trigger'] == reg['trigger'] | {
                 'level': 'medium'}, 'the subscriber is told of the new trigger', ev, reg)
        ev = next_event(sub)
        pt.check(ev['kind'] == 'cleared' and ev['seq'] == 4 and ev['events'] == 2,
                 'one cleared for the episode begun before the reload', ev)
        pt.check(quiet(sub, 2.5), 'and only one', sub.buf)
        sub.close()


def test_slow_consumer():
    """A client that stopped reading, its queue over OutputBufferBytes=:
    pressure events are dropped, but "cleared" uses its reserve and comes,
    with the drops in "missed" and the gap in "seq"."""
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=CONFIG + 'OutputBufferBytes=4K\n') as d:
        slow = pt.Varlink(d.socket, timeout=WAIT)
        slow.subscribe(cgroup=cg, level='medium')
        v = pt.Varlink(d.socket, timeout=WAIT)
        call = json.dumps({'method': 'io.pressured.Inject',
                           'parameters': {'cgroup': cg, 'level': 'medium'}}).encode() + b'\0'
        sent = 0
        # Inject until the daemon drops events for the stalled client.
        while d.status()['counters']['events_dropped'] == 0:
            pt.check(sent < 200000, 'events are dropped for a client that does not read', sent)
            v.send_raw(call * 100)
            for _ in range(100):
                pt.check('delivered' in v.recv(timeout=WAIT).get('parameters', {}), 'Inject answered')
            sent += 100
        v.close()
        dropped = d.status()['counters']['events_dropped']
        pt.wait_for(lambda: 'episode' not in d.status()['registrations'][0], timeout=WAIT,
                    what='the episode to clear')
        events = []
        while not events or events[-1]['kind'] != 'cleared':
            events.append(slow.recv(timeout=WAIT)['parameters']['event'])
        last = events[-1]
        pt.check(len(events) == sent - dropped + 1, 'every queued event, then cleared', len(events), sent, dropped)
        pt.check(last['missed'] == dropped and last['seq'] == sent + 1 and last['events'] == sent,
                 'cleared reports the drops and closes the episode of every event', last, dropped, sent)
        pt.check(d.status()['counters']['events_dropped'] == dropped, 'cleared itself was not dropped', None)
        print(f'stalled client: {sent} events, {dropped} dropped, cleared delivered', flush=True)
        slow.close()


if __name__ == '__main__':
    main()
    test_trigger_change()
    test_slow_consumer()
    pt.finish()
