#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Configured limits: MaxClients and MaxClientsPerUser refuse the client
over the limit, MaxRegistrations the subscription that needs one
registration too many, each with io.pressured.LimitExceeded naming the
limit and its configured value, and keep serving the others (and take the
next one once a slot is free); a message over MaxMessageBytes gets its
connection closed and nobody else's; RequestTimeoutSec closes a client
stuck halfway through a message; IdleTimeoutSec closes a client that sends
nothing, but never a subscriber waiting for events. (Open files: see
tests/fault/test-fd-exhaustion.py.)"""

import os
import sys
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
MAX_CLIENTS = 5
PER_USER = 2
CTL_REFUSALS = 30  # pressurectl runs over the per-user limit


def served(v):
    r = v.call_sync('org.varlink.service.GetInfo')
    return 'vendor' in r.get('parameters', {})


def check_limit_exceeded(r, limit, value):
    """@r is LimitExceeded with exactly the parameters limit=@limit (a string) and value=@value (an int)."""
    pt.check(r.get('error') == 'io.pressured.LimitExceeded', 'refused with LimitExceeded',
             'io.pressured.LimitExceeded', r)
    p = r.get('parameters')
    pt.check(p == {'limit': limit, 'value': value}, 'LimitExceeded names limit and value',
             {'limit': limit, 'value': value}, p)
    pt.check(type(p['value']) is int, 'LimitExceeded value is an integer', p['value'])


def expect_refused(v, limit, value):
    check_limit_exceeded(v.recv(timeout=WAIT), limit, value)
    pt.check(v.is_closed(timeout=WAIT), 'the refused connection is closed')


def test_max_clients():
    # The subscriber is on an empty cgroup: real pressure on / would come first.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=f'[Limits]\nMaxClients={MAX_CLIENTS}\n') as d:
        # Connections closed before (the start-up probe) go away asynchronously:
        # start once the daemon counts only this client.
        control = pt.Varlink(d.socket, timeout=WAIT)
        pt.wait_for(lambda: control.call_sync('io.pressured.GetStatus')['parameters']['clients'] == 1,
                    timeout=WAIT, what='earlier connections to be gone')
        clients = [control] + [pt.Varlink(d.socket, timeout=WAIT) for _ in range(MAX_CLIENTS - 1)]
        for v in clients:
            pt.check(served(v), 'a client within MaxClients is served')
        extra = pt.Varlink(d.socket, timeout=WAIT)
        expect_refused(extra, 'MaxClients', MAX_CLIENTS)
        extra.close()
        # The others are still served, and a subscriber among them gets events.
        for v in clients:
            pt.check(served(v), 'clients within the limit are still served')
        first = clients[0].subscribe(cgroup=cg, level='medium')
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribe at the limit', first)
        r = clients[1].call_sync('io.pressured.Inject', {'cgroup': cg, 'level': 'medium'})
        pt.check(r.get('parameters', {}).get('delivered') == 1, 'inject at the limit', r)
        ev = clients[0].recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == 1, 'the subscriber got the event', ev)
        # A freed slot can be taken again.
        clients.pop().close()

        def slot_free():
            v = pt.Varlink(d.socket, timeout=WAIT)
            try:
                return served(v)
            except (EOFError, ConnectionResetError, BrokenPipeError):
                return False
            finally:
                v.close()
        pt.wait_for(slot_free, timeout=WAIT, what='a slot after a client left')
        for v in clients:
            v.close()


def per_user_child(sock):
    """As an unprivileged user: fill the per-user limit and go over it."""
    out = {}
    held = [pt.Varlink(sock, timeout=WAIT) for _ in range(PER_USER)]
    out['held_served'] = all(served(v) for v in held)
    extra = pt.Varlink(sock, timeout=WAIT)
    try:
        out['refusal'] = extra.recv(timeout=WAIT)
    except (EOFError, TimeoutError, ConnectionResetError) as e:
        out['refusal'] = repr(e)
    out['refused_closed'] = extra.is_closed(timeout=WAIT)
    extra.close()
    # libpressure reports the refusal as such, also when the daemon has
    # answered and closed before the request was written (EPIPE on send).
    out['ctl'] = []
    for i in range(CTL_REFUSALS):
        args = ('status',) if i % 2 else ('watch', '--wait', '--count', '1', '/')
        p = pt.run_ctl(*args, socket=sock, timeout=WAIT)
        out['ctl'].append((args[0], p.returncode, p.stderr.strip()))
    out['held_still_served'] = all(served(v) for v in held)
    held.pop().close()
    deadline = time.monotonic() + WAIT
    out['after_leave_served'] = False
    while time.monotonic() < deadline:
        v = pt.Varlink(sock, timeout=WAIT)
        try:
            if served(v):
                out['after_leave_served'] = True
                break
        except (EOFError, ConnectionResetError, BrokenPipeError):
            pass
        finally:
            v.close()
        time.sleep(0.05)
    return out


def test_max_clients_per_user():
    pt.require_root('MaxClientsPerUser is tested as the user nobody')
    with pt.Daemon(config_text=f'[Limits]\nMaxClientsPerUser={PER_USER}\n') as d:
        out = pt.run_as('nobody', per_user_child, d.socket)
        pt.check(out['held_served'], 'clients within MaxClientsPerUser are served', out)
        r = out['refusal']
        pt.check(isinstance(r, dict) and r.get('error') == 'io.pressured.LimitExceeded',
                 'the client over MaxClientsPerUser is refused', out)
        pt.check(r.get('parameters') == {'limit': 'MaxClientsPerUser', 'value': PER_USER},
                 'LimitExceeded names MaxClientsPerUser', r)
        pt.check(out['refused_closed'], 'the refused connection is closed', out)
        said = f"The daemon's limit MaxClientsPerUser ({PER_USER}) is reached; close other clients, or raise " \
               'MaxClientsPerUser= in [Limits] of pressured.conf.'
        bad = [c for c in out['ctl'] if c[1] != 1 or c[2] != f'pressurectl: {c[0]}: {said}']
        pt.check(len(out['ctl']) == CTL_REFUSALS and not bad,
                 'pressurectl status and watch --wait report LimitExceeded every time', bad)
        pt.check(out['held_still_served'], 'the user\'s other clients are still served', out)
        pt.check(out['after_leave_served'], 'a client leaving frees a per-user slot', out)
        # Root is not subject to the per-user limit.
        root_clients = [pt.Varlink(d.socket, timeout=WAIT) for _ in range(PER_USER + 2)]
        for v in root_clients:
            pt.check(served(v), 'root clients are not limited per user')
            v.close()


def test_max_registrations():
    # One kernel registration allowed: a level "medium" on / takes it; a
    # subscription that shares it is fine, one that needs another (level
    # "low") is refused; the daemon keeps serving, and once the registration
    # is gone the other can be made.
    with pt.Daemon(config_text='[Limits]\nMaxRegistrations=1\n') as d:
        first = pt.Varlink(d.socket, timeout=WAIT)
        r = first.subscribe(level='medium')
        pt.check(r['parameters']['event']['kind'] == 'subscribed', 'first subscription', r)
        sharer = pt.Varlink(d.socket, timeout=WAIT)
        r = sharer.subscribe(level='medium')
        pt.check(r['parameters']['event']['kind'] == 'subscribed', 'a subscription sharing the registration', r)
        refused = pt.Varlink(d.socket, timeout=WAIT)
        check_limit_exceeded(refused.subscribe(level='low'), 'MaxRegistrations', 1)
        # The refused client's connection stays usable, and the daemon is alive.
        pt.check(served(refused), 'the client refused a registration is still served')
        pt.check(d.proc.poll() is None, 'the daemon is alive after LimitExceeded', d.proc.returncode)
        other = pt.Varlink(d.socket, timeout=WAIT)
        pt.check(served(other), 'another client is served')
        st = d.status()
        pt.check(len(st['registrations']) == 1, 'registrations at the limit', 1, st['registrations'])
        pt.check(st['registrations'][0]['subscribers'] == 2, 'subscribers of the one registration',
                 2, st['registrations'][0])
        r = other.call_sync('io.pressured.Inject', {'level': 'medium'})
        pt.check(r['parameters']['delivered'] == 2, 'inject reaches both subscribers', 2, r)
        for v in (first, sharer):
            ev = v.recv(timeout=WAIT)['parameters']['event']
            while ev.get('source') != 'inject':
                ev = v.recv(timeout=WAIT)['parameters']['event']
            pt.check(ev['kind'] == 'pressure' and ev['level'] == 'medium', 'subscribers get events at the limit', ev)
        first.close()
        sharer.close()
        pt.wait_for(lambda: not d.status()['registrations'], timeout=WAIT, what='the registration to be removed')
        later = pt.Varlink(d.socket, timeout=WAIT)
        r = later.subscribe(level='low')
        pt.check(r['parameters']['event']['kind'] == 'subscribed', 'a registration once the slot is free', r)
        for v in (later, refused, other):
            v.close()


def test_max_message_bytes():
    limit = 1024
    getinfo = b'{"method":"org.varlink.service.GetInfo"}'

    def padded(size):
        return getinfo[:-1] + b' ' * (size - len(getinfo)) + b'}\0'
    with pt.Daemon(config_text=f'[Limits]\nMaxMessageBytes={limit}\n') as d:
        bystander = pt.Varlink(d.socket, timeout=WAIT)
        r = bystander.subscribe(level='medium')
        pt.check(r['parameters']['event']['kind'] == 'subscribed', 'bystander subscribed', r)
        at = pt.Varlink(d.socket, timeout=WAIT)
        at.send_raw(padded(limit))
        pt.check('vendor' in at.recv(timeout=WAIT)['parameters'], 'a message of exactly MaxMessageBytes is answered')
        over = pt.Varlink(d.socket, timeout=WAIT)
        try:
            over.send_raw(padded(limit + 1))
        except (BrokenPipeError, ConnectionResetError):
            pass
        # The contract's answer is closing; should a reply come first, the
        # harness checks it against the interface (a LimitExceeded must
        # carry limit and value).
        closed = over.is_closed(timeout=WAIT)
        if not closed and over.buf:
            check_limit_exceeded(over.recv(timeout=WAIT), 'MaxMessageBytes', limit)
            closed = over.is_closed(timeout=WAIT)
        pt.check(closed, 'the connection of a message over MaxMessageBytes is closed', over.buf)
        over.close()
        pt.check(served(at), 'a client whose message fitted is still served')
        r = at.call_sync('io.pressured.Inject', {'level': 'medium'})
        pt.check(r['parameters']['delivered'] == 1, 'the bystander is still subscribed', 1, r)
        ev = bystander.recv(timeout=WAIT)['parameters']['event']
        while ev.get('source') != 'inject':
            ev = bystander.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['seq'] >= 1 and ev['missed'] == 0, 'the bystander gets its event', ev)
        for v in (at, bystander):
            v.close()


def test_request_timeout():
    # A half-sent message is closed after RequestTimeoutSec; a client that
    # merely connected is not (its idle timeout is long).
    with pt.Daemon(config_text='[Limits]\nRequestTimeoutSec=1\nIdleTimeoutSec=3600\n') as d:
        idle = pt.Varlink(d.socket, timeout=WAIT)
        half = pt.Varlink(d.socket, timeout=WAIT)
        half.send_raw(b'{"method": "io.pressured.GetSt')
        pt.check(half.is_closed(timeout=WAIT + 5), 'a client stuck in a message is closed')
        pt.check(not idle.is_closed(timeout=0.5), 'an idle client is not closed by RequestTimeoutSec')
        pt.check(served(idle), 'the idle client is still served')
        idle.close()
        half.close()


def test_idle_timeout():
    with pt.Daemon(config_text='[Limits]\nIdleTimeoutSec=1\nRequestTimeoutSec=3600\n') as d:
        sub = pt.Varlink(d.socket, timeout=WAIT)
        first = sub.subscribe(level='medium')
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribed', first)
        silent = pt.Varlink(d.socket, timeout=WAIT)
        pt.check(silent.is_closed(timeout=WAIT + 5), 'a client that sends nothing is closed')
        # The subscriber has by now been quiet for longer than IdleTimeoutSec too.
        pt.check(not sub.is_closed(timeout=1.5), 'a subscriber is not closed by the idle timeout')
        r = d.inject('medium')
        pt.check(r['parameters']['delivered'] == 1, 'the subscriber is still registered', r)
        # Real pressure on a busy machine may come first: look for the injection.
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        while ev.get('source') != 'inject':
            ev = sub.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'pressure' and ev['missed'] == 0, 'the subscriber still gets events', ev)
        sub.close()
        silent.close()


def main():
    pt.require_root('Inject is reserved to root, and MaxClientsPerUser is tested as nobody')
    test_max_clients()
    test_max_clients_per_user()
    test_max_registrations()
    test_max_message_bytes()
    test_request_timeout()
    test_idle_timeout()
    pt.finish()


if __name__ == '__main__':
    main()
