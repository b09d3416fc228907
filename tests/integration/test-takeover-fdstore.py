#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Restarts and crashes with systemd's file descriptor store, against a
stand-in for the service manager (fdstore_test.py): the daemon keeps in
the store its own listening sockets, the live page, one state, and one fd
per connection and per PSI registration, and never one of a connection
or registration that ended.

- A restart (SIGTERM, start): varlink streams and a memory-pressure
  connection go on with no end of file and no gap in seq, and so do cpu
  and io pressure connections, each still woken by its resource only; an episode
  begun before it ends with "cleared" from the new process, counting the
  events of both; counters and generation go on.
- A crash (SIGKILL, start): streams go on; the event a coalescing
  subscriber held back is lost, and its next event says so with a gap in
  seq and the same number in "missed"; GetStatus says the takeover was
  not clean.
- A stop (the store released) ends every connection.
- The new process killed again and again at any point of its start: the
  one that finally runs takes every stream over.
- A cgroup removed between the two processes: its streams end with
  "removed" (a PSI trigger, taken over, reports it; a kills source, opened
  anew, finds the cgroup gone), and their connections stay.
- A cpu pressure connection whose request the old process had not
  decided yet is decided by the new one, on the cpu resource.
- A crash while replies are owed (queued, not yet written to a client
  that does not read): the new process closes that connection, so its
  client sees end of file instead of waiting forever for them.
- A state that cannot be read (garbage, a newer version) is logged, and
  the connections that came with it are closed, not misread; proxied ones
  stay, each on the resource of the socket it came through.
- Level streams (on "/" and on a cgroup) across restarts and crashes: seq
  goes on, the [Levels] registrations are taken over, not doubled; a
  restart repeats nothing the client was told, a crash sends the level
  now as news (held, unchanged, or stepped down while no process ran),
  with missed 0 when nothing was lost.
- A metrics address taken meanwhile: the new process serves on without
  /metrics, and a reload binds it.
- $FDSTORE (systemd 254 and later): 0 keeps the daemon out of the store;
  a store too small for the limits is logged."""

import fcntl
import os
import select
import socket
import struct
import subprocess
import sys
import termios
import time
import urllib.request

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import fdstore_test  # noqa: E402
import pressured_test as pt  # noqa: E402

WAIT = 180.0 if pt.WRAPPER else 60.0
# A cpu or io trigger no idle process reaches: 1.9 s of stall in 2 s.
QUIET_TRIGGER = 'some 1900000 2000000'


class Stream:
    """A Subscribe stream read by hand."""

    def __init__(self, path, **params):
        self.v = pt.Varlink(path, timeout=WAIT)
        first = self.v.subscribe(**params)
        pt.check_eq(first['parameters']['event']['kind'], 'subscribed', 'first event')

    def next(self, timeout=WAIT):
        return self.v.recv(timeout=timeout)['parameters']['event']


def call(path, method, params=None):
    v = pt.Varlink(path, timeout=WAIT)
    try:
        return v.call_sync(method, params)
    finally:
        v.close()


def inject(path, cgroup, resource='memory'):
    return call(path, 'io.pressured.Inject', {'cgroup': cgroup, 'level': 'critical', 'resource': resource}
                )['parameters']['delivered']


def status(path):
    return call(path, 'io.pressured.GetStatus')['parameters']


PEER = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
if sys.argv[2]:
    s.sendall(sys.argv[2].encode() + b'\0')
print('ready', flush=True)
while True:
    b = s.recv(16)
    print('byte' if b else 'eof', flush=True)
    if not b:
        break
"""


class ProxyPeer:
    """A memory-pressure connection from a process in the quiet cgroup (the
    proxy watches its peer's own cgroup): one line per byte it receives."""

    def __init__(self, path, quiet, line='some 150000 2000000'):
        v2 = os.path.join(pt.cgroup2_mount(), quiet.lstrip('/'))
        self.proc = pt.run_in_cgroups([sys.executable, '-c', PEER, path, line], None, v2, stdout=subprocess.PIPE,
                                      text=True)
        pt.check_eq(self.line(), 'ready', 'memory-pressure peer connected')

    def line(self, timeout=WAIT):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            raise TimeoutError('no byte from the memory-pressure connection')
        return self.proc.stdout.readline().strip()

    def silent(self, timeout=0.5):
        """Nothing arrived (no event of another resource woke it)."""
        return not select.select([self.proc.stdout], [], [], timeout)[0]

    def close(self):
        self.proc.kill()
        self.proc.wait()


def proxied_resources(sock):
    return sorted(r['resource'] for r in status(sock)['registrations'] for _ in r['proxied'])


def check_resource_wakes(sock, quiet, peers, what):
    """An injection of each of @peers' resources ({resource: ProxyPeer}) wakes that peer only."""
    for resource, peer in peers.items():
        pt.check_eq(inject(sock, quiet, resource) >= 1, True, f'{what}: a {resource} injection is delivered')
        pt.check_eq(peer.line(), 'byte', f'{what}: the {resource} connection is woken')
        for other, o in peers.items():
            if other != resource:
                pt.check(o.silent(), f'{what}: a {resource} injection does not wake the {other} connection')


def expected_names(names):
    """The store's names without the connections and registrations, which come and go."""
    return sorted(n for n in names if n[0] not in 'cpr' or not n[1:].isdigit())


def check_store(sm, st, what):
    """One fd per connection and per PSI registration, one state, one live page, the two sockets."""
    def right(names):
        conns = sum(1 for n in names if n[0] == 'c' and n[1:].isdigit())
        regs = sum(1 for n in names if n[0] == 'r' and n[1:].isdigit())
        proxies = sum(1 for n in names if n[0] == 'p' and n[1:].isdigit())
        states = [n for n in names if n.startswith('state-')]
        lives = [n for n in names if n.startswith('live-')]
        return (conns == st['clients'] and proxies == st['proxied_clients'] and
                regs == sum(1 for r in st['registrations'] if r['source'] in ('psi', 'vmpressure')) and
                len(states) == 1 and len(lives) == 1 and 'varlink' in names and 'memory-pressure' in names and
                'cpu-pressure' in names and 'io-pressure' in names)
    # GetStatus's own connection is in the store while it is answered: wait for it to go.
    st = dict(st, clients=st['clients'] - 1)
    sm.wait_names(right, what)


def scenario_restart_and_crash(sm, sock, mp, quiet):
    a = Stream(sock, cgroup=quiet, level='medium')
    b = Stream(sock, cgroup=quiet, level='low', min_interval_ms=2000)
    p = ProxyPeer(mp, quiet)
    # Stalls of 95 % of the window: the peers' own start (they run in the quiet cgroup) never reaches it.
    peers = {r: ProxyPeer(os.path.join(os.path.dirname(mp), f'{r}-pressure'), quiet, line=QUIET_TRIGGER)
             for r in ('cpu', 'io')}
    pt.wait_for(lambda: proxied_resources(sock) == ['cpu', 'io', 'memory'], timeout=WAIT,
                what='the memory, cpu and io pressure connections attached')
    check_store(sm, status(sock), 'the store holds what lives, and nothing that ended')

    pt.check_eq(inject(sock, quiet), 3, 'first injection reaches two streams and the proxied client')
    ea, eb = a.next(), b.next()
    pt.check_eq((ea['seq'], eb['seq']), (1, 1), 'first events')
    pt.check_eq(p.line(), 'byte', 'the proxied client\'s byte')

    # A restart: nothing ends, nothing is lost, the episode goes on.
    sm.restart()
    st = status(sock)
    pt.check_eq((st['generation'], st['takeover']['clean']), (1, True), 'generation and clean takeover')
    pt.check('Removed ' not in sm.log(), 'the journal says nothing was removed: the kernel kept every registration',
             sm.log())
    pt.check_eq(st['takeover']['connections'], 2, 'connections taken over')
    pt.check_eq(st['takeover']['proxied_clients'], 3, 'memory, cpu and io pressure connections taken over')
    pt.check_eq(proxied_resources(sock), ['cpu', 'io', 'memory'], 'each keeps its resource')
    pt.check(all(peer.silent() for peer in peers.values()), 'the memory injection woke no cpu or io connection')
    pt.check_eq(st['counters']['events_injected'], 1, 'counters go on')
    pt.check_eq(inject(sock, quiet), 3, 'an injection after the restart reaches all three')
    ea = a.next()
    pt.check_eq((ea['kind'], ea['seq'], ea['missed']), ('pressure', 2, 0), 'stream A after the restart')
    pt.check_eq(p.line(), 'byte', 'the proxied client after the restart')
    check_resource_wakes(sock, quiet, peers, 'after the restart')
    # B holds the second event for its interval, then sends it.
    eb = b.next()
    pt.check_eq((eb['seq'], eb['missed'], eb['count']), (2, 0, 1), 'stream B after the restart')
    cleared = a.next(timeout=WAIT + 10)
    pt.check_eq(cleared['kind'], 'cleared', 'the episode ends')
    pt.check_eq((cleared['seq'], cleared['events']), (3, 2), 'cleared by the new process, counting both events')
    pt.check_eq(status(sock)['generation'], 1, 'no further takeover meanwhile')
    b.next()  # B's own "cleared"
    check_store(sm, status(sock), 'the store after the restart')

    # A crash while B holds an event: that one is lost, and B says so.
    inject(sock, quiet)
    pt.check_eq(a.next()['seq'], 4, 'A before the crash')
    pt.check_eq(b.next()['seq'], 4, 'B before the crash (its interval had passed)')
    pt.check_eq(p.line(), 'byte', 'the proxied client before the crash')
    inject(sock, quiet)  # B holds this one
    pt.check_eq(a.next()['seq'], 5, 'A before the crash')
    pt.check_eq(p.line(), 'byte', 'the proxied client before the crash')
    sm.crash()
    st = status(sock)
    pt.check_eq((st['generation'], st['takeover']['clean']), (2, False), 'generation after a crash')
    pt.check_eq(st['takeover']['closed'], 0, 'no connection was half-written')
    time.sleep(2.2)  # B's interval
    inject(sock, quiet)
    ea, eb = a.next(), b.next()
    pt.check_eq((ea['seq'], ea['missed']), (6, 0), 'A after the crash: nothing lost')
    pt.check_eq((eb['seq'], eb['missed']), (6, 1), 'B after the crash: the held event is the gap, and missed says so')
    pt.check_eq(p.line(), 'byte', 'the proxied client after the crash')
    check_store(sm, status(sock), 'the store after the crash')

    # Reexecute under the service manager: the same pid, and the store holds one state still.
    pid = sm.pid
    pt.check_eq(call(sock, 'io.pressured.Reexecute'), {'parameters': {}}, 'Reexecute under the fd store')
    pt.check_eq(sm.pid, pid, 'the same pid')
    pt.check_eq(status(sock)['generation'], 3, 'generation after Reexecute')
    inject(sock, quiet)
    pt.check_eq((a.next()['seq'], b.next()['seq'], p.line()), (7, 7, 'byte'), 'every stream after Reexecute')
    check_resource_wakes(sock, quiet, peers, 'after Reexecute')
    check_store(sm, status(sock), 'the store after Reexecute')

    # A stop releases the store: every connection ends.
    sm.stop()
    pt.check(a.v.is_closed(timeout=WAIT), 'stream A ends at a stop')
    pt.check(b.v.is_closed(timeout=WAIT), 'stream B ends at a stop')
    pt.check_eq(p.line(), 'eof', 'the memory-pressure connection ends at a stop')
    p.close()
    for resource, peer in peers.items():
        pt.check_eq(peer.line(), 'eof', f'the {resource} pressure connection ends at a stop')
        peer.close()


# [Levels] for the level-stream scenario: a short hold, and triggers (90 to 95 % of the window stalled) that no
# real pressure in the quiet cgroup reaches, so that only injections move its level.
LEVELS_CONF = '[Levels]\nStepDownSec=1\nLow=some 1800ms 2s\nMedium=some 1900ms 2s\nCritical=full 1900ms 2s\n'
# How long an injected level holds: StepDownSec= plus the trigger's window.
LEVEL_HOLD = 3.0


class LevelStream:
    """A level stream (Subscribe "levels") that checks each event it reads: a level, numbered on."""

    def __init__(self, path, cgroup):
        self.v = pt.Varlink(path, timeout=WAIT)
        self.seq = 0
        self.cgroup = cgroup
        self.expect('normal', f'the first event on {cgroup} is the level now, no "subscribed"')

    def next(self, what, timeout=WAIT):
        """The next event: a level of this cgroup, numbered on with no gap."""
        if self.seq == 0:
            ev = self.v.subscribe(levels=True, cgroup=self.cgroup)['parameters']['event']
        else:
            ev = self.v.recv(timeout=timeout)['parameters']['event']
        pt.check(ev['kind'] == 'level' and ev['cgroup'] == self.cgroup and ev['seq'] == self.seq + 1,
                 f'{what}: a level event, seq {self.seq + 1}', ev)
        self.seq += 1
        return ev

    def expect(self, level, what, timeout=WAIT):
        ev = self.next(what, timeout)
        pt.check(ev['level'] == level and ev['missed'] == 0, f'{what}: {level}, missed 0', ev)
        return ev

    def until(self, level, what, timeout=WAIT):
        """Events, numbered on, until one at @level (real pressure on "/" may come in between)."""
        end = time.monotonic() + timeout
        while self.next(what, max(0.1, end - time.monotonic()))['level'] != level:
            pass

    def silent(self, timeout):
        try:
            ev = self.v.recv(timeout=timeout)
        except TimeoutError:
            return True
        pt.check(False, f'no event on {self.cgroup}', ev)


def unread(v):
    """Bytes the daemon wrote to @v that it has not read."""
    buf = bytearray(4)
    fcntl.ioctl(v.sock.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


def inject_level(path, cgroup, level):
    return call(path, 'io.pressured.Inject', {'cgroup': cgroup, 'level': level})['parameters']['delivered']


def check_level_regs(sock, cgroups, what):
    """The three [Levels] registrations of each of @cgroups, one each, shared by the one stream on it."""
    regs = [r for r in status(sock)['registrations'] if r['source'] == 'psi']
    for cg in cgroups:
        mine = [r for r in regs if r['cgroup'] == cg]
        pt.check(len(mine) == 3 and all(r['subscribers'] == 1 for r in mine),
                 f'{what}: three registrations on {cg}, one subscriber each', mine)


def level_takeover(sm, sock, generation, clean, what):
    st = status(sock)
    pt.check_eq((st['generation'], st['takeover']['clean'], st['takeover']['connections'], st['takeover']['closed']),
                (generation, clean, 2, 0), f'{what}: both level streams taken over')


def wait_episodes_over(sock, cgroup):
    """No episode active on @cgroup: the next injection begins them, and the state is written with it."""
    pt.wait_for(lambda: not [r for r in status(sock)['registrations'] if r['cgroup'] == cgroup and r.get('episode')],
                timeout=WAIT, what=f'the episodes on {cgroup} to clear')


def news_after_crash(q, held, since, what):
    """After a crash (just now), the level now goes to @q as news, nothing missed: @held while the hold
    begun at @since lasts, normal once it ran out (a slow start, under valgrind); then it steps down."""
    ev = q.next(what)
    in_hold = time.monotonic() < since + LEVEL_HOLD - 0.5
    pt.check(ev['missed'] == 0 and (ev['level'] == held if in_hold else ev['level'] in (held, 'normal')),
             f'{what}: the level now, {held} while it holds, missed 0', ev)
    if ev['level'] == held:
        q.expect('normal', f'{what}: {held} steps down', LEVEL_HOLD + WAIT)


def scenario_levels(tmp, sock, quiet):
    """Level streams, on "/" and on the quiet cgroup, across restarts and
    crashes: no end of file, no second first event, seq on without a gap,
    and the three [Levels] registrations of each taken over, not doubled.
    "/" feels the machine's real pressure too (a test that thrashes a small
    cgroup stalls the whole of it), so its stream is held to what holds
    under any pressure: numbered on, following an injection, told the
    level after a crash; the quiet cgroup's is held to every event.
    A restart carries what each client was last sent: a level still held
    is no news. After a crash that is not known, and the level now is sent
    as news, whether it held across the crash, stepped down while no
    process ran, or did not change."""
    conf = os.path.join(tmp, 'levels.conf')
    with open(conf, 'w') as f:
        f.write(LEVELS_CONF + '[Limits]\nIdleTimeoutSec=600\n')
    with fdstore_test.ServiceManager(['--socket', sock, '--config', conf, '--log-level', 'info']) as sm:
        sm.start()
        root, q = LevelStream(sock, '/'), LevelStream(sock, quiet)
        check_level_regs(sock, ('/', quiet), 'two level streams')
        check_store(sm, status(sock), 'the store holds the level streams and their registrations')

        # A restart while the quiet cgroup's level is critical: the client was told, so nothing is repeated;
        # the new process steps it down once the hold the old one began runs out.
        pt.check_eq(inject_level(sock, quiet, 'critical'), 3, 'critical reaches the three levels')
        t0 = time.monotonic()
        q.expect('critical', 'critical before the restart')
        sm.restart()
        restarted = time.monotonic()
        level_takeover(sm, sock, 1, True, 'a restart')
        check_level_regs(sock, ('/', quiet), 'after the restart')
        q.expect('normal', 'after the restart, the level steps down: critical is not sent again', LEVEL_HOLD + WAIT)
        if restarted < t0 + LEVEL_HOLD - 0.5:
            pt.check(time.monotonic() >= t0 + LEVEL_HOLD - 0.3, 'the hold went on across the restart',
                     time.monotonic() - t0)
        pt.check(q.silent(0.5), 'nothing more on the quiet cgroup once it is back to normal')
        pt.check_eq(inject_level(sock, '/', 'critical'), 3, 'critical on "/" reaches the three levels')
        root.until('critical', 'the new process follows the level of "/"')
        root.until('normal', 'and steps it down', LEVEL_HOLD + WAIT)
        check_store(sm, status(sock), 'the store after the restart')

        # A restart with nothing to tell, then a crash: the process killed had sent nothing itself, and its
        # successor numbers on from what the one before sent. What the clients were last sent is not known
        # after a crash, so the level now is news.
        sm.restart()
        level_takeover(sm, sock, 2, True, 'a restart at the same level')
        pt.check(q.silent(0.5), 'nothing to tell after a restart at the same level')
        status(sock)  # answered after the note of the last event: the live page has it
        sm.crash()
        level_takeover(sm, sock, 3, False, 'a crash')
        check_level_regs(sock, ('/', quiet), 'after a crash')
        root.next('after a crash, the level now on "/" is news')
        q.expect('normal', 'after a crash, the level now on the quiet cgroup')

        # A crash while a level holds: the episode its injection begins is in the state, so the new process
        # holds the level too, says it, and steps it down.
        wait_episodes_over(sock, quiet)
        inject_level(sock, quiet, 'low')
        t0 = time.monotonic()
        q.expect('low', 'low before the crash')
        status(sock)  # answered after the note of the last event: the live page has it
        sm.crash()
        level_takeover(sm, sock, 4, False, 'a crash while low holds')
        news_after_crash(q, 'low', t0, 'after a crash while low holds')
        root.next('after the second crash, the level now on "/" is news')

        # A crash after a change was folded into another and sent: the state written in between says what was
        # folded then, the live page what was sent since; the news after the crash has missed nothing.
        wait_episodes_over(sock, quiet)
        inject_level(sock, quiet, 'low')
        pt.wait_for(lambda: unread(q.v) > 0, timeout=WAIT, what='low to reach the socket')
        inject_level(sock, quiet, 'medium')  # waits for the client to read low
        inject_level(sock, quiet, 'critical')  # replaces it
        t0 = time.monotonic()
        Stream(sock, cgroup=quiet, level='low').v.close()  # a stream that begins writes the state
        q.expect('low', 'low, read late')
        ev = q.next('then only the newest level')
        pt.check(ev['level'] == 'critical' and ev['missed'] == 1, 'critical, with medium folded into it', ev)
        status(sock)  # answered after the note of the last event: the live page has it
        sm.crash()
        level_takeover(sm, sock, 5, False, 'a crash after a fold')
        news_after_crash(q, 'critical', t0, 'after a crash after a fold (told before the crash: missed 0)')
        root.next('after the crash after a fold, the level now on "/" is news')

        # The level steps down while no process runs: the client was sent critical, the new one starts at
        # normal with nothing held, and sends it once, numbered on.
        inject_level(sock, quiet, 'critical')
        t0 = time.monotonic()
        q.expect('critical', 'critical before the kill')
        status(sock)  # answered after the note of the last event: the live page has it
        sm.proc.kill()
        sm.proc.wait()
        sm.drain()
        time.sleep(max(0.0, t0 + LEVEL_HOLD + 1.0 - time.monotonic()))  # the hold runs out with no process
        sm.start()
        level_takeover(sm, sock, 6, False, 'a start after the hold ran out')
        q.expect('normal', 'the level that changed while no process ran, once')
        root.next('the level now on "/" is news')
        pt.check_eq(inject_level(sock, quiet, 'medium'), 2, 'medium reaches the medium and low levels')
        q.expect('medium', 'the stream follows the level after the crash, nothing in between')
        check_level_regs(sock, ('/', quiet), 'after the crashes')
        check_store(sm, status(sock), 'the store after the crashes')

        # The registrations go with the streams, and so do their fds in the store.
        q.v.close()
        root.v.close()
        pt.wait_for(lambda: not [r for r in status(sock)['registrations'] if r['cgroup'] in ('/', quiet)],
                    timeout=WAIT, what='the level registrations to go with the streams')
        check_store(sm, status(sock), 'the store once the streams ended')
        sm.stop()


def scenario_undecided(sm, sock, quiet):
    """A cpu pressure connection whose request is not decided yet when the
    process stops (it wrote no line within the second it has): the next
    process decides it, on the cpu resource the state says it came through."""
    sm.start()
    peer = ProxyPeer(os.path.join(os.path.dirname(sock), 'cpu-pressure'), quiet, line='')
    sm.restart()
    pt.wait_for(lambda: proxied_resources(sock) == ['cpu'], timeout=WAIT,
                what='the undecided cpu connection attached by the next process, to a cpu registration')
    reg = next(r for r in status(sock)['registrations'] if r['proxied'])
    pt.check_eq(reg['trigger'], {'psi': {'stall': 'some', 'threshold_us': 200000, 'window_us': 2000000}},
                'no line written: the default trigger')
    pt.check_eq(inject(sock, quiet, 'cpu'), 1, 'a cpu injection reaches it')
    pt.check_eq(peer.line(), 'byte', 'the undecided cpu connection is woken')
    sm.stop()
    pt.check_eq(peer.line(), 'eof', 'the cpu connection ends at the stop')
    peer.close()


def memfd(data):
    fd = os.memfd_create('garbage', os.MFD_CLOEXEC)
    os.write(fd, data)
    return fd


def scenario_unreadable(sm, sock, mp, quiet, make_state, what):
    """The state in the store is replaced by @make_state(good bytes): the stream is closed, not misread;
    the memory-pressure connection stays (closing it would make sd-event spin) with the default trigger."""
    sm.start()
    s = Stream(sock, cgroup=quiet, level='medium')
    p = ProxyPeer(mp, quiet)
    io = ProxyPeer(os.path.join(os.path.dirname(mp), 'io-pressure'), quiet, line=QUIET_TRIGGER)
    pt.wait_for(lambda: proxied_resources(sock) == ['io', 'memory'], timeout=WAIT,
                what='the memory-pressure and io-pressure connections attached')
    sm.terminate()
    with sm.lock:
        states = [e for e in sm.store if e[0].startswith('state-')]
        pt.check_eq(len(states), 1, f'one state in the store ({sm.names()})')
        name, fd, poll = states[0]
        good = os.pread(fd, 1 << 20, 0)
        os.close(fd)
        sm.store = [e for e in sm.store if not e[0].startswith('state-')] + [(name, memfd(make_state(good)), poll)]
        old = {n for n, _, _ in sm.store if n[0] in 'cr' and n[1:].isdigit()}
    sm.start()
    pt.check(s.v.is_closed(timeout=WAIT), f'{what}: the stream is closed')
    st = status(sock)
    pt.check_eq(st['generation'], 0, f'{what}: a fresh start')
    pt.check(f'cannot be read' in sm.log(), f'{what}: the journal says why')
    # The io connection, unknown to the state, is told by the socket its address names.
    pt.wait_for(lambda: proxied_resources(sock) == ['io', 'memory'], timeout=WAIT,
                what=f'{what}: the memory-pressure and io-pressure connections attached again, each to its resource')
    pt.check_eq(inject(sock, quiet), 1, f'{what}: an injection reaches the memory-pressure connection')
    pt.check_eq(p.line(), 'byte', f'{what}: the memory-pressure connection goes on')
    pt.check(io.silent(), f'{what}: the memory injection does not wake the io connection')
    pt.check_eq(inject(sock, quiet, 'io'), 1, f'{what}: an io injection reaches the io connection')
    pt.check_eq(io.line(), 'byte', f'{what}: the io connection goes on')
    regs = [r for r in status(sock)['registrations'] if r['proxied']]
    for r in regs:
        pt.check_eq(r['trigger'], {'psi': {'stall': 'some', 'threshold_us': 200000, 'window_us': 2000000}},
                    f'{what}: the default trigger ({r["resource"]})')
    sm.wait_names(lambda names: not old & set(names), f'{what}: no connection or registration of before left in the store')
    sm.stop()
    pt.check_eq(p.line(), 'eof', f'{what}: the memory-pressure connection ends at the stop')
    p.close()
    pt.check_eq(io.line(), 'eof', f'{what}: the io-pressure connection ends at the stop')
    io.close()


def scenario_gone(sm, sock):
    """A cgroup removed while no process watched: its streams end with "removed", their connections stay."""
    sm.start()
    with pt.v2_cgroup_part('gone') as name:
        if not name:
            sm.stop()
            return
        a = Stream(sock, cgroup=name, psi={'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000})
        b = Stream(sock, cgroup=name, kills=True)
        sm.terminate()
        os.rmdir(pt.V2_ROOT + name)
        sm.start()
        for s, what in ((a, 'psi (the trigger fd polls POLLERR)'), (b, 'kills (opened anew, the cgroup is gone)')):
            ev = s.next()
            pt.check_eq((ev['kind'], ev['cgroup'], ev['seq']), ('removed', name, 1), f'{what}: the stream ends')
            pt.check_eq(s.v.call_sync('io.pressured.GetStatus')['parameters']['generation'], 1,
                        f'{what}: the connection stays and answers')
    check_store(sm, status(sock), 'the store after the cgroup went')
    sm.stop()


def scenario_crash_in_takeover(sm, sock, quiet):
    """Crashes of the new process at any point of its start (before, while and after it takes over):
    the one that finally runs still takes every stream over, with its seq."""
    sm.start()
    a = Stream(sock, cgroup=quiet, level='medium')
    inject(sock, quiet)
    pt.check_eq(a.next()['seq'], 1, 'first event')
    for i in range(12):
        sm.proc.kill()
        sm.proc.wait()
        sm.drain()
        sm.start(wait=False)
        time.sleep(0.004 * i)  # from right at exec to after the takeover
    sm.proc.kill()
    sm.proc.wait()
    sm.drain()
    sm.start()
    st = status(sock)
    pt.check_eq(st['takeover']['closed'], 0, 'no connection closed')
    inject(sock, quiet)
    ev = a.next()
    pt.check_eq((ev['seq'], ev['missed']), (2, 0), 'the stream after the crashes')
    check_store(sm, status(sock), 'the store after crashes in the takeover')
    sm.stop()


def scenario_metrics_busy(tmp, sock, quiet):
    """The metrics address taken while no process ran: the new one serves its streams without /metrics,
    says so, and a reload binds it once the address is free."""
    port = pt.free_port()
    conf = os.path.join(tmp, 'metrics.conf')
    with open(conf, 'w') as f:
        f.write(f'[Metrics]\nListen=127.0.0.1:{port}\n[Limits]\nIdleTimeoutSec=600\n')
    with fdstore_test.ServiceManager(['--socket', sock, '--config', conf, '--log-level', 'info']) as sm:
        sm.start()
        a = Stream(sock, cgroup=quiet, level='medium')
        sm.terminate()
        squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(('127.0.0.1', port))
        squatter.listen()
        sm.start()
        pt.check('Serving on without the metrics endpoint' in sm.log(), 'the journal says /metrics is off', sm.log())
        inject(sock, quiet)
        pt.check_eq(a.next()['seq'], 1, 'the stream goes on without /metrics')
        squatter.close()
        call(sock, 'io.pressured.Reload')
        body = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=WAIT).read().decode()
        pt.check('\npressured_takeovers_total 1\n' in body, 'a reload binds /metrics again')
        sm.stop()


def scenario_store_size(args):
    with fdstore_test.ServiceManager(args, fdstore_max=0) as sm:
        sm.start()
        pt.check_eq(sm.names(), [], 'FDSTORE=0: nothing in the store')
        sm.stop()
    with fdstore_test.ServiceManager(args, fdstore_max=100) as sm:
        sm.start()
        pt.check('FileDescriptorStoreMax=100 of the service is below the 5170 fds' in sm.log(),
                 'a store too small for the limits is logged', sm.log())
        sm.stop()


def scenario_owed_replies(sm, sock, quiet):
    """Replies are queued for a client that does not read when the daemon
    is killed: they are lost with the process, and so the connection is
    closed (end of file), never carried on as if nothing were owed."""
    sm.start()
    owed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    owed.connect(sock)
    owed.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    calls = b'{"method":"io.pressured.GetStatus"}\0' * 4000
    owed.setblocking(False)
    sent = 0
    end = time.monotonic() + WAIT
    while sent < len(calls) and time.monotonic() < end:
        try:
            sent += owed.send(calls[sent:sent + 65536])
        except BlockingIOError:
            time.sleep(0.01)
    # The daemon answered some, the socket took what it could, the rest waits in its queue.
    # A stream that begins makes a checkpoint, which includes the reading client.
    before = {n for n in sm.names() if n.startswith('state-')}
    s = Stream(sock, cgroup=quiet, level='low')
    # The daemon notes in its live page that "subscribed" is written just after writing it;
    # a call answered later proves it did (a crash in between closes the stream too).
    status(sock)
    pt.wait_for(lambda: {n for n in sm.names() if n.startswith('state-')} - before, timeout=WAIT,
                what='a new state in the store')
    sm.crash()
    st = status(sock)
    pt.check_eq(st['takeover']['clean'], False, 'a crash')
    pt.check(st['takeover']['closed'] >= 1, 'the connection owed replies is closed', st['takeover'])
    owed.setblocking(True)
    owed.settimeout(WAIT)
    got = b''
    while True:
        try:
            chunk = owed.recv(1 << 20)
        except ConnectionResetError:
            break  # closed with calls it never read: the kernel says so with a reset
        if not chunk:
            break
        got += chunk
    replies = got.count(b'\0')
    pt.check(0 < replies < 4000, 'some replies, then end of file', replies)
    pt.check(got.endswith(b'\0'), 'the last reply read is whole')
    owed.close()
    pt.check_eq(inject(sock, quiet), 1, 'the stream goes on')
    pt.check_eq(s.next()['seq'], 1, 'the stream after the crash')
    sm.stop()


def main():
    pt.require_root('Inject is reserved to root')
    with pt.quiet_cgroup() as quiet:
        tmp = fdstore_test.tempfile.mkdtemp(prefix='pressured-test-')
        os.chmod(tmp, 0o755)
        sock, mp = os.path.join(tmp, 'io.pressured'), os.path.join(tmp, 'memory-pressure')
        conf = os.path.join(tmp, 'test.conf')
        with open(conf, 'w') as f:
            f.write(f'[MemoryPressure]\nSocket={mp}\nCpuSocket={tmp}/cpu-pressure\nIoSocket={tmp}/io-pressure\n'
                    '[Limits]\nIdleTimeoutSec=600\n[Levels]\nClearAfterSec=4\n')
        args = ['--socket', sock, '--config', conf, '--log-level', 'info']
        try:
            with fdstore_test.ServiceManager(args) as sm:
                sm.start()
                scenario_restart_and_crash(sm, sock, mp, quiet)
            with fdstore_test.ServiceManager(args) as sm:
                scenario_undecided(sm, sock, quiet)
            with fdstore_test.ServiceManager(args) as sm:
                scenario_gone(sm, sock)
            with fdstore_test.ServiceManager(args) as sm:
                scenario_crash_in_takeover(sm, sock, quiet)
            with fdstore_test.ServiceManager(args) as sm:
                scenario_owed_replies(sm, sock, quiet)
            with fdstore_test.ServiceManager(args) as sm:
                scenario_unreadable(sm, sock, mp, quiet, lambda good: b'garbage' * 10, 'garbage')
                scenario_unreadable(sm, sock, mp, quiet, lambda good: good[:8] + struct.pack('<I', 99) + good[12:],
                                    'a newer version')
                scenario_unreadable(sm, sock, mp, quiet, lambda good: good[:len(good) // 2], 'truncated')
            scenario_metrics_busy(tmp, sock, quiet)
            scenario_levels(tmp, sock, quiet)
            scenario_store_size(args)
        finally:
            fdstore_test.shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
