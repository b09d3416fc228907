#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Warnings before systemd-oomd kills: the hook socket with a stand-in for
oomd calling io.systemd.oom.Prekill.Notify.

Who is warned: kills subscriptions whose subtree holds the victim (on it
or an ancestor) and level streams on it or below; not a kills subscription
below it or beside it, not a level stream above it. Each gets one "prekill"
event in its own numbering, the victim named as its peer names cgroups
("/" for a peer whose namespace root lies inside it). Proxied sd-event
clients inside the victim get one byte, those outside none. The answer
comes when every warned subscriber acknowledged (each call settles one: the
caller's own connection first, else the oldest of its user) or went away
(disconnected, its stream ended with its cgroup), at the deadline, or at
once with nobody to warn. Only root and systemd-oom may warn; bad paths and
parameters are refused; a call behind a waiting Notify is answered after
it; AcknowledgePrekill refuses unknown, answered and other users' ids; the
counters of GetStatus and /metrics add up.
"""
import json
import os
import pwd
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402
import prekill_test as pk  # noqa: E402

check, check_eq = pt.check, pt.check_eq


def prekill_events(streams):
    """The next event of each of @streams, checked to be the same warning; returns them."""
    evs = [pk.event(s) for s in streams]
    for ev in evs:
        check_eq(ev['kind'], 'prekill', 'the event is a warning')
        check_eq(ev['id'], evs[0]['id'], 'one warning, one id')
    return evs


def part_nobody(d, hook, tree):
    """Nobody to warn: answered at once; streams above, beside and below (kills) are not warned."""
    v, a, b = tree['victim'], tree['a'], tree['b']
    kills_below = pt.Varlink(d.socket)
    kills_below.subscribe(kills=True, cgroup=tree['inner'])
    kills_beside = pt.Varlink(d.socket)
    kills_beside.subscribe(kills=True, cgroup=b)
    levels_above = pt.Varlink(d.socket)
    check_eq(levels_above.subscribe(levels=True, cgroup=a)['parameters']['event']['kind'], 'level', 'level stream')
    oomd = pk.Oomd(hook)
    check_eq(oomd.call_sync(v), {'parameters': {}}, 'the answer with nobody to warn')
    for name, s in (('kills below', kills_below), ('kills beside', kills_beside), ('levels above', levels_above)):
        check(pk.quiet(s), f'the {name} the victim is not warned')
    st = d.status()['prekill']
    check_eq(st, {'warned': 0, 'acknowledged': 0, 'deadline_reached': 0, 'pending': 0}, 'nobody warned is no warning')
    for s in (kills_below, kills_beside, levels_above, oomd):
        s.close()
    wait_quiet(d)


def wait_quiet(d):
    pk.wait_clients(d, 0)


def part_acknowledge(d, hook, tree):
    """Warned: a kills stream on the victim and on its parent, a level stream below it; three acknowledgements."""
    v = tree['victim']
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=v)
    kills_parent = pt.Varlink(d.socket)
    kills_parent.subscribe(kills=True, cgroup=tree['a'])
    levels = pt.Varlink(d.socket)
    levels.subscribe(levels=True, cgroup=tree['deep'])
    oomd = pk.Oomd(hook)
    oomd.notify(v)
    evs = prekill_events([kills, kills_parent, levels])
    for ev in evs:
        check_eq(ev['cgroup'], v, 'the victim as the host names it')
        check_eq(ev['deadline_us'] - ev['monotonic_us'], 60_000_000, 'the deadline is Deadline= after the call')
    check_eq([ev['seq'] for ev in evs], [1, 1, 2], 'a warning is numbered in each stream')
    check_eq([ev['missed'] for ev in evs], [0, 0, 0], 'nothing missed')
    ident = evs[0]['id']
    check(not oomd.answered(), 'no answer before anyone acknowledged')
    check_eq(d.status()['prekill']['pending'], 1, 'one call waits')
    # One call settles one subscriber: the answer goes with the last one.
    for n in range(2):
        check_eq(pk.acknowledge(d.socket, ident), {'parameters': {}}, f'acknowledgement {n + 1}')
        check(not oomd.answered(), f'no answer after {n + 1} of 3 acknowledgements')
    check_eq(pk.acknowledge(d.socket, ident), {'parameters': {}}, 'acknowledgement 3')
    check_eq(oomd.answer(), {'parameters': {}}, 'the answer once all three acknowledged')
    check(pk.monotonic_us() < evs[0]['deadline_us'], 'answered before the deadline')
    st = d.status()['prekill']
    check_eq(st, {'warned': 1, 'acknowledged': 1, 'deadline_reached': 0, 'pending': 0}, 'counters')
    return kills, kills_parent, levels, oomd, ident


def part_ack_errors(d, ident):
    """Acknowledgements of an answered id, an unknown one, and malformed calls."""
    v = pt.Varlink(d.socket)
    for bad, why in ((ident, 'an answered id'), (ident + 1000, 'an unknown id'), (0, 'id 0'), (-3, 'a negative id')):
        r = v.call_sync(pk.ACK, {'id': bad})
        check_eq(r.get('error'), 'io.pressured.NoSuchPrekill', why)
        check_eq(r['parameters'], {'id': bad}, f'NoSuchPrekill names {why}')
    for params, name in (({}, 'id'), ({'id': 'one'}, 'id'), ({'id': 1.5}, 'id'), ({'id': 1, 'x': 2}, 'x')):
        r = v.call_sync(pk.ACK, params)
        check_eq((r.get('error'), r['parameters']), ('org.varlink.service.InvalidParameter', {'parameter': name}),
                 f'AcknowledgePrekill({params})')
    v.close()


def part_departures(d, hook, tree):
    """Went away: a subscriber that disconnects, and a level stream whose cgroup is removed."""
    v, gone = tree['victim'], tree['gone']
    os.mkdir(pt.V2_ROOT + gone)
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=v)
    levels = pt.Varlink(d.socket)
    levels.subscribe(levels=True, cgroup=gone)
    oomd = pk.Oomd(hook)
    oomd.notify(v)
    prekill_events([kills, levels])
    kills.close()
    pk.wait_clients(d, 1)   # the level stream is left (the hook's connection is no varlink client)
    check(not oomd.answered(), 'one of two went away: still waiting')
    pk.rmdirs(pt.V2_ROOT + gone)
    removed = pk.event(levels)
    check_eq((removed['kind'], removed['cgroup']), ('removed', gone), 'the level stream ends with its cgroup')
    check_eq(oomd.answer(), {'parameters': {}}, 'answered once both went away')
    levels.close()
    oomd.close()
    wait_quiet(d)


def part_users(d, hook, tree):
    """Only root and systemd-oom warn; a warned subscriber of another user acknowledges from any connection of
    its own; root cannot acknowledge it for it."""
    v = tree['victim']
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=v)

    def nobody_notifies(path, cgroup):
        o = pk.Oomd(path)
        return o.call_sync(cgroup)
    r = pt.run_as('nobody', nobody_notifies, hook, v)
    check_eq(r.get('error'), 'io.pressured.PermissionDenied', 'a Notify as nobody is refused')
    check(pk.quiet(kills), 'a refused Notify warns nobody')
    check(d.status()['prekill']['pending'] == 0, 'nothing waits after a refusal')

    try:
        pwd.getpwnam('systemd-oom')
        have_oom_user = True
    except KeyError:
        pt.skip_part('a Notify as systemd-oom: the user systemd-oom does not exist here')
        have_oom_user = False
    if have_oom_user:
        notified = pt.run_as('systemd-oom', lambda path, cg: pk.Oomd(path).notify(cg) or True, hook, v)
        check(notified, 'systemd-oom calls')
        ev = pk.event(kills)
        check_eq(ev['kind'], 'prekill', 'a Notify as systemd-oom warns')
        # Its caller hung up (run_as() ended): the call is over, and counted as warned only.
        pt.wait_for(lambda: d.status()['prekill']['pending'] == 0, what='the abandoned call to end')
        r = pk.acknowledge(d.socket, ev['id'])
        check_eq(r.get('error'), 'io.pressured.NoSuchPrekill', 'an abandoned call takes no acknowledgement')

    nobody = pk.Peer(d.socket, user='nobody')
    try:
        nobody.subscribe('k', kills=True, cgroup=v)
        oomd = pk.Oomd(hook)
        oomd.notify(v)
        ev_root, ev_nobody = pk.event(kills), nobody.event('k')
        check_eq(ev_nobody['id'], ev_root['id'], 'nobody\'s stream is warned too')
        check_eq(pk.acknowledge(d.socket, ev_root['id']), {'parameters': {}}, 'root acknowledges its own')
        check(not oomd.answered(), 'root\'s acknowledgement does not stand for nobody\'s')
        r = pk.acknowledge(d.socket, ev_root['id'])
        check_eq(r.get('error'), 'io.pressured.NoSuchPrekill', 'nothing of root\'s is left to acknowledge')
        check_eq(nobody.acknowledge(ev_root['id']), {'parameters': {}}, 'nobody acknowledges from another connection')
        check_eq(oomd.answer(), {'parameters': {}}, 'answered once both acknowledged')
        oomd.close()
    finally:
        nobody.stop()
    kills.close()
    wait_quiet(d)


def part_own_pid_first(d, hook, tree):
    """An acknowledgement settles the caller's own subscriber, not the oldest of its user."""
    v = tree['victim']
    older = pt.Varlink(d.socket)
    older.subscribe(kills=True, cgroup=v)
    peer = pk.Peer(d.socket)
    try:
        peer.subscribe('k', kills=True, cgroup=v)
        oomd = pk.Oomd(hook)
        oomd.notify(v)
        ident = pk.event(older)['id']
        check_eq(peer.event('k')['id'], ident, 'the peer is warned')
        check_eq(peer.acknowledge(ident), {'parameters': {}}, 'the peer acknowledges')
        # Had it settled the older one, the peer's stream leaving would end the call.
        peer.close('k')
        pk.wait_clients(d, 1)
        check(not oomd.answered(), 'the peer settled its own subscriber: the older one still waits')
        check_eq(pk.acknowledge(d.socket, ident), {'parameters': {}}, 'the older one acknowledges')
        check_eq(oomd.answer(), {'parameters': {}}, 'answered')
        oomd.close()
    finally:
        peer.stop()
    older.close()
    wait_quiet(d)


def part_bad_calls(d, hook, tree):
    """Paths that are no cgroup, and malformed calls: refused, nobody warned."""
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=tree['a'])
    before = d.status()['prekill']
    oomd = pk.Oomd(hook)
    cases = [({'cgroup': 'relative/path'}, 'io.pressured.InvalidCgroupPath', {'cgroup': 'relative/path'}),
             ({'cgroup': ''}, 'io.pressured.InvalidCgroupPath', {'cgroup': ''}),
             ({'cgroup': tree['victim'] + '/../x'}, 'io.pressured.InvalidCgroupPath',
              {'cgroup': tree['victim'] + '/../x'}),
             ({'cgroup': '/a\nb'}, 'io.pressured.InvalidCgroupPath', {'cgroup': '/a\nb'}),
             ({'cgroup': tree['victim'] + '/no-such'}, 'io.pressured.NoSuchCgroup',
              {'cgroup': tree['victim'] + '/no-such'}),
             ({'cgroup': tree['victim'] + '/cgroup.procs'}, 'io.pressured.NoSuchCgroup',
              {'cgroup': tree['victim'] + '/cgroup.procs'}),
             ({}, 'org.varlink.service.InvalidParameter', {'parameter': 'cgroup'}),
             ({'cgroup': 7}, 'org.varlink.service.InvalidParameter', {'parameter': 'cgroup'}),
             ({'cgroup': tree['victim'], 'force': True}, 'org.varlink.service.InvalidParameter',
              {'parameter': 'force'})]
    for params, error, answer in cases:
        oomd.v.call(pk.NOTIFY, params)
        r = oomd.answer()
        check_eq((r.get('error'), r['parameters']), (error, answer), f'Notify({params})')
    # Only the hook's interfaces are served there.
    for method, error in (('io.pressured.GetStatus', 'org.varlink.service.InterfaceNotFound'),
                          ('io.systemd.oom.Prekill.Kill', 'org.varlink.service.MethodNotFound')):
        r = oomd.v.call_sync(method)
        check_eq(r.get('error'), error, method)
    info = oomd.v.call_sync('org.varlink.service.GetInfo')['parameters']
    check_eq(info['interfaces'], ['org.varlink.service', 'io.systemd.oom.Prekill'], 'the hook\'s interfaces')
    desc = oomd.v.call_sync('org.varlink.service.GetInterfaceDescription',
                            {'interface': 'io.systemd.oom.Prekill'})['parameters']['description']
    check('method Notify(' in desc and 'interface io.systemd.oom.Prekill' in desc, 'its description', desc)
    check(pk.quiet(kills), 'no refused call warned anybody')
    check_eq(d.status()['prekill'], before, 'nothing counted')
    kills.close()
    oomd.close()
    wait_quiet(d)


def part_pipelined(d, hook, tree):
    """A call sent behind a Notify that waits is answered after it, in order, on the same connection."""
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=tree['victim'])
    oomd = pk.Oomd(hook)
    oomd.notify(tree['victim'])
    oomd.v.call('org.varlink.service.GetInfo')
    ident = pk.event(kills)['id']
    check(not oomd.answered(), 'nothing is answered while the Notify waits')
    pk.acknowledge(d.socket, ident)
    check_eq(oomd.answer(), {'parameters': {}}, 'the Notify first')
    check('interfaces' in oomd.answer()['parameters'], 'then the call behind it')
    kills.close()
    oomd.close()
    wait_quiet(d)


def part_namespaces(d, hook, tree):
    """Peers in cgroup namespaces get the victim as they name it: relative to a root above it, "/" from a
    root inside it."""
    v = tree['victim']
    above = pk.Peer(d.socket, cgdir=pt.V2_ROOT + tree['a'], cgroupns=True)
    inside = pk.Peer(d.socket, cgdir=pt.V2_ROOT + tree['inner'], cgroupns=True)
    try:
        above.subscribe('k', kills=True, cgroup='/')
        inside.subscribe('l', levels=True, cgroup='/')
        inside.subscribe('k', kills=True, cgroup='/')
        oomd = pk.Oomd(hook)
        oomd.notify(v)
        ev_above, ev_inside = above.event('k'), inside.event('l')
        check_eq(ev_above['cgroup'], '/' + os.path.basename(v), 'a root above the victim: the victim below it')
        check_eq(ev_inside['cgroup'], '/', 'a root inside the victim: "/"')
        check_eq(ev_above['id'], ev_inside['id'], 'one warning')
        check(inside.quiet('k'), 'a kills stream below the victim (in the namespace\'s "/") is not warned')
        check_eq(above.acknowledge(ev_above['id']), {'parameters': {}}, 'the peer above acknowledges')
        check_eq(inside.acknowledge(ev_inside['id']), {'parameters': {}}, 'the peer inside acknowledges')
        check_eq(oomd.answer(), {'parameters': {}}, 'answered')
        oomd.close()
    finally:
        above.stop()
        inside.stop()
    wait_quiet(d)


def part_proxied(d, hook, tree, mp, cpu):
    """Proxied sd-event clients inside the victim get one byte each; one outside none."""
    clients = [(pk.Peer(d.socket, cgdir=pt.V2_ROOT + tree['proxied']), mp, True),
               (pk.Peer(d.socket, cgdir=pt.V2_ROOT + tree['proxied']), cpu, True),
               (pk.Peer(d.socket, cgdir=pt.V2_ROOT + tree['b']), mp, False)]
    try:
        for peer, path, _ in clients:
            peer.proxy('p', path)
        pt.wait_for(lambda: sum(len(r['proxied']) for r in d.status()['registrations']) == 3,
                    what='the proxied clients to be attached')
        oomd = pk.Oomd(hook)
        check_eq(oomd.call_sync(tree['victim']), {'parameters': {}}, 'answered at once: proxied clients are not waited for')
        for peer, path, inside in clients[:2]:
            check_eq(peer.byte('p'), 1, f'a proxied client of {os.path.basename(path)} inside the victim gets a byte')
        check(not clients[2][0].ask('pending', 'p'), 'a proxied client outside the victim gets nothing')
        oomd.close()
    finally:
        for peer, _, _ in clients:
            peer.stop()
    wait_quiet(d)


def metrics(port):
    with urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=pt.scaled(10)) as r:
        text = r.read().decode()
    return {o: int(v) for o, v in
            (line.split('{outcome="')[1].split('"} ') for line in text.splitlines()
             if line.startswith('pressured_prekill_total{'))}


def part_deadline(tmp, tree):
    """Nobody acknowledges: answered at the deadline; the counters of every outcome."""
    hook, port = os.path.join(tmp, 'hook-deadline'), pt.free_port()
    conf = f'[Prekill]\nSocket={hook}\nDeadline=1s\n[Metrics]\nListen=127.0.0.1:{port}\n'
    with pt.Daemon(config_text=conf) as d:
        v = tree['victim']
        kills = pt.Varlink(d.socket)
        kills.subscribe(kills=True, cgroup=v)
        oomd = pk.Oomd(hook)
        oomd.notify(v)
        ev = pk.event(kills)
        check_eq(ev['deadline_us'] - ev['monotonic_us'], 1_000_000, 'Deadline=1s')
        check_eq(oomd.answer(timeout=pt.scaled(30)), {'parameters': {}}, 'answered at the deadline')
        check(pk.monotonic_us() >= ev['deadline_us'], 'not before the deadline')
        r = pk.acknowledge(d.socket, ev['id'])
        check_eq(r.get('error'), 'io.pressured.NoSuchPrekill', 'too late to acknowledge')
        # One of each: acknowledged, nobody to warn.
        oomd.notify(v)
        ident = pk.event(kills)['id']
        check_eq(ident, ev['id'] + 1, 'ids count on')
        pk.acknowledge(d.socket, ident)
        check_eq(oomd.answer(), {'parameters': {}}, 'answered')
        check_eq(oomd.call_sync(tree['b']), {'parameters': {}}, 'nobody to warn')
        check_eq(d.status()['prekill'], {'warned': 2, 'acknowledged': 1, 'deadline_reached': 1, 'pending': 0},
                 'GetStatus prekill')
        check_eq(metrics(port), {'acknowledged': 1, 'deadline': 1, 'nobody': 1}, 'pressured_prekill_total')
        r = pt.run_ctl('--socket', d.socket, '--json', 'status')
        check_eq(json.loads(r.stdout).get('prekill'), d.status()['prekill'], 'pressurectl --json status')
        kills.close()
        oomd.close()


def part_connections(d, hook, held):
    """Connections beyond MaxCalls= (1) + 4: another user's are refused on their first call, held until then
    (closed after RequestTimeoutSec= without one), closed at once beyond twice as many; root's never are."""
    other = pk.Peer(d.socket, user='nobody')
    try:
        for i in range(5 - held):
            other.connect(f'held{i}', hook)
        other.connect('refused', hook)
        r = other.call('refused', 'org.varlink.service.GetInfo')
        check_eq((r.get('error'), r['parameters']), ('io.pressured.LimitExceeded', {'limit': 'MaxCalls', 'value': 1}),
                 'a connection beyond MaxCalls= + 4 is refused on its first call')
        check(other.closed('refused'), 'and closed')
        for i in range(5):
            other.connect(f'silent{i}', hook)
        other.connect('late', hook)
        check(other.closed('late'), 'beyond twice MaxCalls= + 4 a connection is closed at once')
        root = pk.Oomd(hook)
        info = root.v.call_sync('org.varlink.service.GetInfo')
        check('interfaces' in info['parameters'], 'root\'s connection is never refused for the number', info)
        for i in range(5):
            check(other.closed(f'silent{i}', timeout=20),
                  'a refused connection that sends nothing is closed after RequestTimeoutSec=')
        root.close()
    finally:
        other.stop()


def part_limits(tmp, tree):
    """MaxWarnings=, MaxCalls= and the hook's connections: LimitExceeded, and nobody warned."""
    hook = os.path.join(tmp, 'hook-limits')
    conf = f'[Prekill]\nSocket={hook}\nDeadline=60s\nMaxCalls=1\nMaxWarnings=2\n[Limits]\nRequestTimeoutSec=3\n'
    v = tree['victim']
    with pt.Daemon(config_text=conf) as d:
        streams = [pt.Varlink(d.socket) for _ in range(3)]
        for s in streams:
            s.subscribe(kills=True, cgroup=v)
        oomd = pk.Oomd(hook)
        r = oomd.call_sync(v)
        check_eq((r.get('error'), r['parameters']), ('io.pressured.LimitExceeded', {'limit': 'MaxWarnings', 'value': 2}),
                 'three to warn over MaxWarnings=2')
        check(all(pk.quiet(s) for s in streams), 'a call over MaxWarnings= warns nobody')
        streams.pop().close()
        pk.wait_clients(d, 2)
        oomd.notify(v)
        ident = prekill_events(streams)[0]['id']
        second = pk.Oomd(hook)
        r = second.call_sync(v)
        check_eq((r.get('error'), r['parameters']), ('io.pressured.LimitExceeded', {'limit': 'MaxCalls', 'value': 1}),
                 'a second call over MaxCalls=1')
        check(all(pk.quiet(s) for s in streams), 'a call over MaxCalls= warns nobody')
        part_connections(d, hook, 2)
        for s in streams:
            pk.acknowledge(d.socket, ident)
        check_eq(oomd.answer(), {'parameters': {}}, 'the waiting call is answered')
        for o in (second, oomd):
            o.close()
        for s in streams:
            s.close()


def part_varlinkctl(d, hook, tree):
    """systemd 262's varlinkctl: introspect, and Notify answered once the warned subscriber acknowledged."""
    root = pt.systemd_sid('varlinkctl 262 on the hook socket')
    if root is None:
        return
    tool = os.path.join(root, 'usr', 'bin', 'varlinkctl')
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, 'usr', 'lib', 'x86_64-linux-gnu', 'systemd'))

    def run(*args):
        return pt.subprocess.run([tool] + list(args), env=env, capture_output=True, text=True,
                                 timeout=pt.scaled(30))
    r = run('introspect', hook)
    check(r.returncode == 0 and 'interface io.systemd.oom.Prekill' in r.stdout and 'method Notify(' in r.stdout,
          'varlinkctl introspect', r.returncode, r.stdout, r.stderr)
    r = run('info', hook)
    check(r.returncode == 0 and 'io.systemd.oom.Prekill' in r.stdout, 'varlinkctl info', r.stdout, r.stderr)
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=tree['victim'])
    call = pt.subprocess.Popen([tool, 'call', hook, pk.NOTIFY, json.dumps({'cgroup': tree['victim']})], env=env,
                               stdout=pt.subprocess.PIPE, stderr=pt.subprocess.PIPE, text=True)
    try:
        ev = pk.event(kills)
        check(call.poll() is None, 'varlinkctl waits for the answer')
        pk.acknowledge(d.socket, ev['id'])
        out, err = call.communicate(timeout=pt.scaled(30))
    finally:
        if call.poll() is None:
            call.kill()
            call.communicate()
    check(call.returncode == 0 and json.loads(out) == {}, 'varlinkctl call Notify', call.returncode, out, err)
    r = run('call', hook, pk.NOTIFY, json.dumps({'cgroup': tree['victim'] + '/no-such'}))
    check(r.returncode != 0 and 'io.pressured.NoSuchCgroup' in r.stderr, 'varlinkctl sees the error', r.stderr)
    kills.close()
    wait_quiet(d)


def main():
    pt.require_root('the stand-in for systemd-oomd warns about real cgroups it makes')
    with pt.quiet_cgroup() as a, pt.quiet_cgroup() as b:
        tree = {'a': a, 'b': b, 'victim': a + '/victim', 'inner': a + '/victim/inner',
                'deep': a + '/victim/inner/deep', 'gone': a + '/victim/gone', 'proxied': a + '/victim/proxied'}
        dirs = [pt.V2_ROOT + tree[k] for k in ('victim', 'inner', 'deep', 'proxied')]
        try:
            pk.mkdirs(*dirs)
            d = pt.Daemon()
            hook = os.path.join(d.tmpdir, 'hook')
            d.write_config(f'[Prekill]\nDeadline=60s\nSocket={hook}\n')
            with d:
                check_eq(os.stat(hook).st_mode & 0o777, 0o666, 'the hook socket\'s mode')
                part_nobody(d, hook, tree)
                kills, kills_parent, levels, oomd, ident = part_acknowledge(d, hook, tree)
                part_ack_errors(d, ident)
                for s in (kills, kills_parent, levels, oomd):
                    s.close()
                wait_quiet(d)
                part_departures(d, hook, tree)
                part_users(d, hook, tree)
                part_own_pid_first(d, hook, tree)
                part_bad_calls(d, hook, tree)
                part_pipelined(d, hook, tree)
                part_namespaces(d, hook, tree)
                part_proxied(d, hook, tree, os.path.join(d.tmpdir, 'memory-pressure'),
                             os.path.join(d.tmpdir, 'cpu-pressure'))
                part_varlinkctl(d, hook, tree)
            check(not os.path.exists(hook), 'the hook socket is removed at the stop')
            tmp = pt.tempfile.mkdtemp(prefix='pressured-test-')
            os.chmod(tmp, 0o755)  # the peer of another user connects in it
            try:
                part_deadline(tmp, tree)
                part_limits(tmp, tree)
            finally:
                pt.shutil.rmtree(tmp, ignore_errors=True)
        finally:
            pk.rmdirs(*reversed(dirs + [pt.V2_ROOT + tree['gone']]))
    pt.finish()


if __name__ == '__main__':
    main()
