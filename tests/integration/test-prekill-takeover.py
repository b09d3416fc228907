#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A call of systemd-oomd's pre-kill hook waiting for its answer outlives
the process: across Reexecute (no service manager), a restart with the fd
store, and a crash (SIGKILL, the store and the last checkpoint), the
hook's connection, the warning and its acknowledgements go on, the answer
comes once, on the same connection, and warning ids are never given twice.
A deadline that passed while no process ran is answered at once after the
start. The fd store's side is fdstore_test.ServiceManager.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import fdstore_test  # noqa: E402
import pressured_test as pt  # noqa: E402
import prekill_test as pk  # noqa: E402

check, check_eq = pt.check, pt.check_eq


def status(sock):
    v = pt.Varlink(sock)
    try:
        return v.call_sync('io.pressured.GetStatus')['parameters']
    finally:
        v.close()


def reexecute(sock):
    v = pt.Varlink(sock)
    try:
        v.call('io.pressured.Reexecute')
        r = v.recv(timeout=pt.scaled(60))
        check_eq(r, {'parameters': {}}, 'Reexecute answered by the new process')
    finally:
        v.close()


def warn_two(sock, hook, victim):
    """Two kills streams on @victim, warned by a Notify; returns (streams, oomd, id)."""
    streams = [pt.Varlink(sock) for _ in range(2)]
    for s in streams:
        s.subscribe(kills=True, cgroup=victim)
    oomd = pk.Oomd(hook)
    oomd.notify(victim)
    evs = [pk.event(s) for s in streams]
    check_eq(evs[0]['id'], evs[1]['id'], 'one warning')
    return streams, oomd, evs[0]['id']


def scenario_reexecute(tmp, victim):
    """Reexecute with a call waiting: the acknowledgement before and the one after both count."""
    hook = os.path.join(tmp, 'hook-reexec')
    d = pt.Daemon(config_text=f'[Prekill]\nSocket={hook}\nDeadline=60s\n')
    with d:
        streams, oomd, ident = warn_two(d.socket, hook, victim)
        check_eq(pk.acknowledge(d.socket, ident), {'parameters': {}}, 'acknowledged before Reexecute')
        reexecute(d.socket)
        st = d.status()
        check_eq(st['generation'], 1, 'a new process serves')
        check_eq(st['prekill'], {'warned': 1, 'acknowledged': 0, 'deadline_reached': 0, 'pending': 1},
                 'the call still waits')
        check(not oomd.answered(), 'not answered by the takeover')
        check_eq(pk.acknowledge(d.socket, ident), {'parameters': {}}, 'acknowledged after Reexecute')
        check_eq(oomd.answer(), {'parameters': {}}, 'answered on the same connection')
        # The next warning has the next id, and the hook socket still accepts.
        oomd.notify(victim)
        evs = [pk.event(s) for s in streams]
        check_eq([e['id'] for e in evs], [ident + 1] * 2, 'ids go on')
        check_eq([e['seq'] for e in evs], [2, 2], 'the streams go on')
        for _ in streams:
            pk.acknowledge(d.socket, ident + 1)
        check_eq(oomd.answer(), {'parameters': {}}, 'the next call answered')
        late = pk.Oomd(hook)
        check_eq(late.call_sync('/'), {'parameters': {}}, 'a new connection to the hook socket after Reexecute')
        late.close()
        oomd.close()
        for s in streams:
            s.close()
    check(not os.path.exists(hook), 'the hook socket file goes with the last process')


def state_names(sm):
    """The states in the store, every datagram the daemon sent so far handled (the checkpoint a warning
    wrote before its events among them)."""
    sm.drain()
    return [n for n in sm.names() if n.startswith('state-')]


def wait_checkpoint(sm, before):
    """Until the store holds a state newer than @before (a list of state names)."""
    newest = max(int(n[6:]) for n in before)
    sm.wait_names(lambda names: any(n.startswith('state-') and int(n[6:]) > newest for n in names),
                  'a checkpoint after the acknowledgement')


def scenario_restart(sm, sock, hook, victim):
    """A restart with the fd store: the call and the first acknowledgement are taken over."""
    streams, oomd, ident = warn_two(sock, hook, victim)
    pk.acknowledge(sock, ident)
    sm.restart()
    st = status(sock)
    check_eq((st['generation'], st['prekill']['pending']), (1, 1), 'taken over, still waiting')
    check(not oomd.answered(), 'not answered by the restart')
    pk.acknowledge(sock, ident)
    check_eq(oomd.answer(), {'parameters': {}}, 'answered after the restart, on the same connection')
    for s in streams:
        s.close()
    return oomd, ident


def scenario_crash(sm, sock, hook, victim, oomd, last):
    """A crash: the checkpoint and the live page carry the call and the acknowledgement checkpointed."""
    streams = [pt.Varlink(sock) for _ in range(2)]
    for s in streams:
        s.subscribe(kills=True, cgroup=victim)
    oomd.notify(victim)
    ident = pk.event(streams[0])['id']
    pk.event(streams[1])
    check(ident > last, 'a new id after the restart', ident, last)
    before = state_names(sm)
    pk.acknowledge(sock, ident)
    wait_checkpoint(sm, before)
    sm.crash()
    st = status(sock)
    check_eq(st['prekill']['pending'], 1, 'the call waits after the crash')
    check_eq(st['takeover']['clean'], False, 'it was a crash')
    pk.acknowledge(sock, ident)
    check_eq(oomd.answer(), {'parameters': {}}, 'answered after the crash: the checkpointed acknowledgement counted')
    # Answered, then a crash: the next process does not answer again.
    sm.crash()
    info = oomd.v.call_sync('org.varlink.service.GetInfo')
    check('interfaces' in info['parameters'], 'the first message after the crash answers the next call', info)
    # The next warning after the crash: an id never given before.
    oomd.notify(victim)
    nxt = [pk.event(s)['id'] for s in streams]
    check(nxt[0] == nxt[1] and nxt[0] > ident, 'ids are never given twice, also after a crash', nxt, ident)
    for _ in streams:
        pk.acknowledge(sock, nxt[0])
    check_eq(oomd.answer(), {'parameters': {}}, 'answered')
    for s in streams:
        s.close()
    return nxt[0]


def scenario_deadline_meanwhile(sm, sock, hook, victim):
    """The deadline passes while no process runs: the call is answered as soon as the next one starts."""
    kills = pt.Varlink(sock)
    kills.subscribe(kills=True, cgroup=victim)
    oomd = pk.Oomd(hook)
    oomd.notify(victim)
    ev = pk.event(kills)
    sm.terminate()
    pt.wait_for(lambda: pk.monotonic_us() > ev['deadline_us'], timeout=pt.scaled(30), what='the deadline to pass')
    sm.start()
    check_eq(oomd.answer(), {'parameters': {}}, 'answered at the start')
    pt.wait_for(lambda: status(sock)['prekill']['deadline_reached'] == 1, what='the deadline counted')
    r = pk.acknowledge(sock, ev['id'])
    check_eq(r.get('error'), 'io.pressured.NoSuchPrekill', 'nothing waits any more')
    kills.close()
    oomd.close()


def scenario_caller_gone_meanwhile(sm, sock, hook, victim):
    """The caller hung up while no process ran: the call is over at the start, and counted as warned only."""
    kills = pt.Varlink(sock)
    kills.subscribe(kills=True, cgroup=victim)
    oomd = pk.Oomd(hook)
    oomd.notify(victim)
    ident = pk.event(kills)['id']
    before = status(sock)['prekill']
    sm.terminate()
    oomd.close()
    sm.start()
    st = status(sock)['prekill']
    check_eq(st['pending'], 0, 'the abandoned call does not wait')
    check_eq((st['warned'], st['acknowledged'], st['deadline_reached']),
             (before['warned'], before['acknowledged'], before['deadline_reached']), 'counted as warned only')
    check_eq(pk.acknowledge(sock, ident).get('error'), 'io.pressured.NoSuchPrekill', 'nothing to acknowledge')
    kills.close()


def main():
    pt.require_root('the warnings are about real cgroups the test makes')
    with pt.quiet_cgroup() as a:
        victim = a + '/victim'
        os.mkdir(pt.V2_ROOT + victim)
        tmp = pt.tempfile.mkdtemp(prefix='pressured-test-')
        os.chmod(tmp, 0o755)
        try:
            scenario_reexecute(tmp, victim)
            sock, hook, conf = (os.path.join(tmp, n) for n in ('io.pressured', 'hook', 'test.conf'))
            with open(conf, 'w') as f:
                f.write(f'[Prekill]\nSocket={hook}\nDeadline=60s\n[MemoryPressure]\nSocket=\nCpuSocket=\nIoSocket=\n')
            with fdstore_test.ServiceManager(['--socket', sock, '--config', conf, '--log-level', 'debug']) as sm:
                sm.start()
                oomd, ident = scenario_restart(sm, sock, hook, victim)
                scenario_crash(sm, sock, hook, victim, oomd, ident)
                oomd.close()
                scenario_caller_gone_meanwhile(sm, sock, hook, victim)
                check(re.search(r'Took over \d+ connection', sm.log()), 'the journal says what was taken over')
            short = conf + '.short'
            with open(short, 'w') as f:
                f.write(f'[Prekill]\nSocket={hook}\nDeadline=1s\n[MemoryPressure]\nSocket=\nCpuSocket=\nIoSocket=\n')
            with fdstore_test.ServiceManager(['--socket', sock, '--config', short, '--log-level', 'debug']) as sm:
                sm.start()
                scenario_deadline_meanwhile(sm, sock, hook, victim)
        finally:
            pt.shutil.rmtree(tmp, ignore_errors=True)
            pk.rmdirs(pt.V2_ROOT + victim)
    pt.finish()


if __name__ == '__main__':
    main()
