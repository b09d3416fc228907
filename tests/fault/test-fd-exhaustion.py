#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""File descriptor exhaustion: the daemon runs with RLIMIT_NOFILE 64/64.
Clients are opened until the daemon runs out of fds: from then on new
clients are refused cleanly (they read a LimitExceeded error naming "open
files", or EOF, never hang), subscribed clients keep receiving injected events, a subscription
that needs a new kernel registration fails with an error instead of
killing anything, and once some clients leave new ones are accepted
again."""

import json
import shutil
import os
import socket
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

NOFILE = 64
SUBSCRIBERS = 5
MAX_TRIES = 3 * NOFILE
WAIT = 60.0 if pt.WRAPPER else 5.0
GETINFO = b'{"method":"org.varlink.service.GetInfo"}\0'
LIMIT = 'io.pressured.LimitExceeded'


def try_client(path):
    """Connect and call GetInfo. Returns ('accepted', sock), ('refused', reply) or ('hang', None)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    s.connect(path)
    try:
        s.sendall(GETINFO)
    except (BrokenPipeError, ConnectionResetError):
        pass
    buf = b''
    try:
        while not buf.endswith(b'\0'):
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except ConnectionResetError:
        pass
    except socket.timeout:
        s.close()
        return 'hang', buf
    msg = pt.validate(json.loads(buf[:-1]), 'org.varlink.service.GetInfo') if buf.endswith(b'\0') else None
    if msg and 'error' not in msg and msg['parameters'].get('product') == 'pressured':
        return 'accepted', s
    s.close()
    if msg is None and buf == b'':
        return 'refused', 'EOF'
    if msg and msg.get('error') == LIMIT:
        return 'refused', msg
    return 'unexpected', buf


def accept_one(path):
    """Try clients until one is accepted (the daemon frees a closed client's fd
    when it notices); return the last try_client() answer."""
    last = ['hang', None]

    def accepted():
        last[:] = try_client(path)
        return last[0] == 'accepted'
    try:
        pt.wait_for(accepted, timeout=WAIT, interval=0.05, what='a client to be accepted')
    except TimeoutError:
        pass
    return tuple(last)


class LimitedDaemon(pt.Daemon):
    """The daemon started through prlimit(1) with RLIMIT_NOFILE NOFILE/NOFILE."""

    def command(self):
        return ['prlimit', f'--nofile={NOFILE}:{NOFILE}', '--'] + super().command()


def inject(v, cg):
    v.call('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
    r = v.recv(timeout=WAIT)
    pt.check('error' not in r, 'Inject failed at the fd limit', r)
    return r['parameters']['delivered']


def main():
    pt.require_root('Inject is reserved to root, and the fd count is read from /proc/PID/fd')
    if not shutil.which('prlimit'):
        pt.skip('prlimit(1) (util-linux) is not installed')
    # The subscribers are on an empty cgroup of the test's own: real pressure
    # on / would add events to the injected ones.
    with pt.quiet_cgroup() as cg, \
            LimitedDaemon(config_text='[Limits]\nIdleTimeoutSec=600\n', log_level='notice') as d:
        run(d, cg)


def run(d, cg):
    limits = open(f'/proc/{d.pid}/limits').read()
    line = next(x for x in limits.splitlines() if x.startswith('Max open files'))
    pt.check(line.split()[3] == str(NOFILE), 'daemon did not get the fd limit', line)
    fds_start = len(d.fds())

    subs = []
    for _ in range(SUBSCRIBERS):
        v = pt.Varlink(d.socket, timeout=WAIT)
        first = v.subscribe(cgroup=cg, level='critical')
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribe', first)
        subs.append(v)
    injector = pt.Varlink(d.socket, timeout=WAIT)

    accepted, refusals, hangs = [], [], 0
    for _ in range(MAX_TRIES):
        kind, x = try_client(d.socket)
        if kind == 'accepted':
            pt.check(not refusals, 'a client was accepted after refusals began, with nothing closed')
            accepted.append(x)
        elif kind == 'refused':
            refusals.append(x)
            if len(refusals) >= 10:
                break
        elif kind == 'hang':
            hangs += 1
            break
        else:
            raise AssertionError(f'unexpected answer at the fd limit: {x!r}')
    fds_full = len(d.fds())
    limit_errors = sum(1 for r in refusals if r != 'EOF')
    print(f'fd exhaustion: RLIMIT_NOFILE {NOFILE}, {fds_start} fds at start, {SUBSCRIBERS} subscribers + '
          f'1 injector + {len(accepted)} more clients accepted ({fds_full} fds), then {len(refusals)} refused '
          f'({limit_errors} with {LIMIT}, {len(refusals) - limit_errors} with EOF), {hangs} hung', flush=True)
    pt.check(hangs == 0, 'a client hung at the fd limit instead of being refused')
    for r in refusals:
        if r != 'EOF':
            # Refused at accept(): the limit is named; the value is an integer.
            p = r.get('parameters', {})
            pt.check(sorted(p) == ['limit', 'value'] and p['limit'] == 'open files' and type(p['value']) is int,
                     'LimitExceeded at the fd limit names the limit and a value', r)
    pt.check(len(refusals) >= 10, 'never refused a client', len(accepted))
    pt.check('Out of file descriptors' in d.log(), 'clients refused, but the daemon did not run out of fds')
    if not pt.WRAPPER:
        # (valgrind keeps some of the process's fds for itself)
        pt.check(fds_full >= NOFILE - 1, 'clients refused before the daemon ran out of fds', fds_full)
    pt.check(d.proc.poll() is None, 'daemon died at the fd limit')

    # Existing subscribers keep receiving.
    delivered = inject(injector, cg)
    for i, v in enumerate(subs):
        ev = v.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == 1 and ev['missed'] == 0,
                 f'subscriber {i} at the fd limit', ev)
    pt.check(delivered == SUBSCRIBERS, 'Inject at the fd limit reached', delivered)

    # One fd free: a client gets in, but a subscription needing a new kernel
    # registration (another level, its own trigger fd) cannot be made; it
    # must fail with an error, not take the daemon or anyone else down.
    accepted.pop().close()
    kind, c = accept_one(d.socket)
    pt.check(kind == 'accepted', 'no client accepted after one was closed', kind, c)
    c.sendall(b'{"method":"io.pressured.Subscribe","more":true,"parameters":{"level":"low"}}\0')
    buf = b''
    while not buf.endswith(b'\0'):
        data = c.recv(65536)
        if not data:
            break
        buf += data
    answer = {'eof': buf}
    if buf.endswith(b'\0'):
        answer = pt.validate(json.loads(buf[:-1]), 'io.pressured.Subscribe', True)
    shown = (answer.get('error'), answer.get('parameters')) if 'error' in answer else answer
    print(f'fd exhaustion: Subscribe needing a new registration with no fd left: {shown}', flush=True)
    # No fd for the trigger: an error naming the limit or the source, not a hang or a crash.
    pt.check(answer.get('error') in (LIMIT, 'io.pressured.SourceUnavailable'), 'Subscribe at the fd limit', answer)
    if answer.get('error') == LIMIT:
        want = {'limit': 'open files', 'value': NOFILE}
        pt.check(answer.get('parameters') == want, 'LimitExceeded names the fd limit and RLIMIT_NOFILE',
                 want, answer.get('parameters'))
    pt.check(d.proc.poll() is None, 'daemon died on a Subscribe at the fd limit')
    c.close()

    # Close some clients: new ones are accepted again.
    for s in accepted[:10]:
        s.close()
    del accepted[:10]
    again = []
    for _ in range(5):
        kind, x = accept_one(d.socket)
        pt.check(kind == 'accepted', 'no client accepted after closing some', kind, x)
        again.append(x)
    delivered = inject(injector, cg)
    for i, v in enumerate(subs):
        ev = v.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['seq'] == 2 and ev['missed'] == 0, f'subscriber {i} after the fd limit', ev)
    st = d.status()
    print(f'fd exhaustion: after closing 10 clients, 5 new clients accepted; Inject reached {delivered}; '
          f'clients {st["clients"]}, registrations {len(st["registrations"])}', flush=True)
    pt.check(len(st['registrations']) == 1, 'registrations after the fd limit', st['registrations'])
    for s in accepted + again:
        s.close()
    for v in subs:
        v.close()
    injector.close()


if __name__ == '__main__':
    main()
    pt.finish()
