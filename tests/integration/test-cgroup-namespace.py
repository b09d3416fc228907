#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Peers in a cgroup namespace name cgroups relative to its root.

A peer runs in a uniquely named cgroup2 directory D inside a new cgroup
namespace (unshare -C: its root is its own cgroup; unshare -Cm with cgroup2
mounted inside: the root comes from that mount, even after the peer moved
deeper; unshare -U too, as an unprivileged user). Its "/" is D for
Subscribe, Inject, GetStatus, GetProtection, GetHeadroom and history; it cannot climb
above D; a host peer naming D and the namespaced peer naming "/" share one
registration. The same script, run with --agent, is the namespaced peer:
it carries out varlink calls that the test sends it as JSON lines.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402

GIB = 1 << 30


def agent(socket_path):
    """The namespaced peer: one JSON request per stdin line, one JSON answer per stdout line."""
    pt.own_verdict()  # a helper of the test, not a test
    conns = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            op, name = req[0], req[1]
            if op == 'connect':
                conns[name] = pt.Varlink(socket_path)
                out = {'ok': True}
            elif op == 'call':
                conns[name].call(req[2], req[3], more=req[4])
                out = {'ok': conns[name].recv(timeout=req[5])}
            elif op == 'recv':
                out = {'ok': conns[name].recv(timeout=req[2])}
            elif op == 'close':
                conns.pop(name).close()
                out = {'ok': True}
            elif op == 'proxy':
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(req[2])
                s.sendall(b'some 150ms 2s\n')
                conns[name] = s
                out = {'ok': True}
            elif op == 'byte':
                conns[name].settimeout(req[2])
                out = {'ok': len(conns[name].recv(1))}
            elif op == 'cgroup':
                with open('/proc/self/cgroup') as f:
                    out = {'ok': f.read()}
            else:
                out = {'error': f'unknown op {op}'}
        except Exception as e:  # reported to the test, which fails with it
            out = {'error': f'{type(e).__name__}: {e}'}
        print(json.dumps(out), flush=True)


class Peer:
    """A namespaced peer started by @cmd (ending in this script's --agent SOCKET) inside cgroup @cgdir."""

    def __init__(self, cmd, cgdir):
        def enter():
            with open(os.path.join(cgdir, 'cgroup.procs'), 'w') as f:
                f.write(str(os.getpid()))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=enter)

    def ask(self, *req):
        self.proc.stdin.write(json.dumps(list(req)) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f'the namespaced peer ended: {self.proc.stderr.read()}')
        out = json.loads(line)
        if 'error' in out:
            raise AssertionError(f'namespaced peer: {out["error"]}')
        return out['ok']

    def connect(self, name):
        self.ask('connect', name)

    def call(self, name, method, params=None, more=False, timeout=5.0):
        return self.ask('call', name, method, params or {}, more, pt.scaled(timeout))

    def subscribe(self, name, **params):
        return self.call(name, 'io.pressured.Subscribe', params, more=True)

    def recv(self, name, timeout=5.0):
        return self.ask('recv', name, pt.scaled(timeout))

    def status(self, name):
        return self.call(name, 'io.pressured.GetStatus')['parameters']

    def stop(self):
        self.proc.kill()
        self.proc.communicate()


def agent_cmd(sock, python=sys.executable):
    return [python, '-u', os.path.abspath(__file__), '--agent', sock]


def next_injected(recv):
    """The next injected event from @recv (real pressure may come first)."""
    while True:
        ev = recv()['parameters']['event']
        if ev.get('source') == 'inject':
            return ev


def regs_by_cgroup(status):
    return {r['cgroup']: r for r in status['registrations']}


def check_escapes(peer, conn):
    for bad in ('/..', '/../..', '/sub/../..', 'relative', '/./x'):
        r = peer.subscribe(conn, cgroup=bad, level='low')
        pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', f'Subscribe {bad!r}')
        pt.check_eq(r['parameters'].get('cgroup'), bad, f'the error names {bad!r} as given')
    r = peer.call(conn, 'io.pressured.Inject', {'cgroup': '/..', 'level': 'low'})
    pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', 'Inject "/.."')
    r = peer.call(conn, 'io.pressured.GetProtection', {'cgroup': '/..'})
    pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', 'GetProtection "/.."')


def check_own_root(d, name, v2dir):
    """unshare -C: the root is the peer's own cgroup."""
    peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), v2dir)
    host = pt.Varlink(d.socket)
    try:
        pt.check_eq(peer.ask('cgroup', 'x').strip().splitlines()[-1], '0::/', 'the peer sees its cgroup as "/"')
        peer.connect('sub')
        ev = peer.subscribe('sub', cgroup='/', level='low')['parameters']['event']
        pt.check_eq((ev['kind'], ev['cgroup']), ('subscribed', '/'), 'the namespaced "/" is subscribed as "/"')

        regs = regs_by_cgroup(d.status())
        pt.check(name in regs, 'the host sees the registration on the real path', sorted(regs))
        pt.check('/' not in regs, 'and not on the whole system', sorted(regs))

        # A host peer naming the real path shares the registration.
        ev = host.subscribe(cgroup=name, level='low')['parameters']['event']
        pt.check_eq(ev['cgroup'], name, 'the host peer names the real path')
        pt.check_eq(regs_by_cgroup(d.status())[name]['subscribers'], 2, 'one registration, two subscribers')

        r = d.inject('low', name)
        pt.check_eq(r['parameters']['delivered'], 2, 'an Inject on the real path reaches both')
        ev = next_injected(lambda: peer.recv('sub'))
        pt.check_eq(ev['cgroup'], '/', 'the namespaced peer gets the event on "/"')
        pt.check_eq(next_injected(host.recv)['cgroup'], name, 'the host peer on the real path')

        # The namespaced peer's own Inject on "/" is the same cgroup.
        peer.connect('ctl')
        r = peer.call('ctl', 'io.pressured.Inject', {'level': 'medium'})
        pt.check_eq(r['parameters']['delivered'], 2, 'Inject "/" from the namespace reaches both')
        pt.check_eq(next_injected(host.recv)['cgroup'], name, 'the host peer sees it on the real path')
        pt.check_eq(next_injected(lambda: peer.recv('sub'))['cgroup'], '/', 'the namespaced peer on "/"')

        # GetStatus from the namespace: only what lies beneath its root, named as it sees it.
        other = pt.Varlink(d.socket)
        other.subscribe(level='low')  # the whole system, outside the peer's root
        regs = regs_by_cgroup(d.status())
        pt.check('/' in regs and name in regs, 'the host sees both registrations', sorted(regs))
        nsregs = regs_by_cgroup(peer.status('ctl'))
        pt.check_eq(sorted(nsregs), ['/'], 'the namespaced peer sees only its own root, as "/"')
        pt.check_eq(nsregs['/']['subscribers'], 2, 'with both subscribers')
        other.close()

        # A cgroup beneath the root, and its removal.
        os.mkdir(os.path.join(v2dir, 'sub'))
        peer.connect('child')
        ev = peer.subscribe('child', cgroup='/sub', level='low')['parameters']['event']
        pt.check_eq(ev['cgroup'], '/sub', 'a child cgroup is named beneath the root')
        pt.check(name + '/sub' in regs_by_cgroup(d.status()), 'the host sees the child on its real path')
        os.rmdir(os.path.join(v2dir, 'sub'))
        ev = pt.wait_for(lambda: peer.recv('child', timeout=20)['parameters']['event'], what='removed')
        pt.check_eq((ev['kind'], ev['cgroup']), ('removed', '/sub'), 'removed names the child as the peer does')

        check_escapes(peer, 'ctl')
        r = peer.subscribe('ctl', cgroup='/nonexistent', level='low')
        pt.check_eq((r.get('error'), r['parameters'].get('cgroup')), ('io.pressured.NoSuchCgroup', '/nonexistent'),
                    'a missing cgroup is named as the peer named it')

        # The episode the injections opened ends; its history names the cgroup as each peer does.
        ev = pt.wait_for(lambda: next_cleared(peer), what='cleared')
        pt.check_eq(ev['cgroup'], '/', 'cleared on "/" for the namespaced peer')
        hist = [r for r in peer.status('ctl')['registrations'] if r.get('history')]
        pt.check_eq([r['cgroup'] for r in hist], ['/'], 'history from the namespace names "/"')
        out = pt.run_ctl('--json', 'history', socket=d.socket)
        lines = json.loads(out.stdout)['history']
        pt.check(any(x['cgroup'] == name for x in lines), 'pressurectl history on the host: the real path', out.stdout)
        ns_hist = run_in_ns(['unshare', '-C', pt.PRESSURECTL, '--socket', d.socket, '--json', 'history'], v2dir)
        lines = json.loads(ns_hist.stdout)['history']
        pt.check(lines and all(x['cgroup'] == '/' for x in lines), 'pressurectl history in the namespace: "/"',
                 ns_hist.stdout, ns_hist.stderr)
    finally:
        host.close()
        peer.stop()


def check_levels(d, name, v2dir):
    """A level stream from the namespace: on its "/", named "/", sharing the
    three registrations with a host peer that follows the real path."""
    peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), v2dir)
    host = pt.Varlink(d.socket)
    try:
        peer.connect('levels')
        ev = peer.subscribe('levels', levels=True)['parameters']['event']
        pt.check_eq((ev['kind'], ev['cgroup'], ev['level'], ev['seq']), ('level', '/', 'normal', 1),
                    'the namespaced peer follows its "/"')
        ev = host.subscribe(levels=True, cgroup=name)['parameters']['event']
        pt.check_eq((ev['kind'], ev['cgroup']), ('level', name), 'the host peer follows the real path')
        regs = [r for r in d.status()['registrations'] if r['cgroup'] == name]
        pt.check_eq(len(regs), 3, 'both follow one set of three registrations')
        d.inject('low', name)
        ev = peer.recv('levels', timeout=10)['parameters']['event']
        pt.check_eq((ev['cgroup'], ev['level'], ev['seq']), ('/', 'low', 2), 'the change, named "/" in the namespace')
        ev = host.recv(timeout=pt.scaled(10))['parameters']['event']
        pt.check_eq((ev['cgroup'], ev['level'], ev['seq']), (name, 'low', 2), 'and on the real path on the host')
        r = peer.subscribe('x', levels=True, cgroup='/..') if peer.connect('x') is None else None
        pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', 'no level stream above the namespace root')
    finally:
        host.close()
        peer.stop()


def next_cleared(peer):
    ev = peer.recv('sub', timeout=30)['parameters']['event']
    return ev if ev['kind'] == 'cleared' else None


def run_in_ns(cmd, cgdir):
    def enter():
        with open(os.path.join(cgdir, 'cgroup.procs'), 'w') as f:
            f.write(str(os.getpid()))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=pt.scaled(20), preexec_fn=enter)


def check_mounted_root(d, name, v2dir):
    """unshare -Cm with cgroup2 mounted inside: the mount's root is the namespace's, even after the peer moved."""
    mnt = tempfile.mkdtemp(prefix='pressured-cg2-')
    script = ('mount --make-rprivate / && mount -t cgroup2 none "$1" && mkdir "$1/inner" && '
              'echo $$ > "$1/inner/cgroup.procs" && shift && exec "$@"')
    peer = Peer(['unshare', '-Cm', 'sh', '-c', script, 'sh', mnt] + agent_cmd(d.socket), v2dir)
    try:
        pt.check_eq(peer.ask('cgroup', 'x').strip().splitlines()[-1], '0::/inner',
                    'the peer moved beneath its namespace root')
        peer.connect('sub')
        ev = peer.subscribe('sub', cgroup='/', level='low')['parameters']['event']
        pt.check_eq(ev['cgroup'], '/', 'subscribed as "/"')
        regs = regs_by_cgroup(d.status())
        pt.check(name in regs and name + '/inner' not in regs,
                 'the root comes from the mount, not from the cgroup the peer is in now', sorted(regs))
        peer.connect('inner')
        ev = peer.subscribe('inner', cgroup='/inner', level='low')['parameters']['event']
        pt.check_eq(ev['cgroup'], '/inner', 'its current cgroup is "/inner"')
        pt.check(name + '/inner' in regs_by_cgroup(d.status()), 'on the real path beneath the root')
        r = d.inject('critical', name + '/inner')
        pt.check_eq(r['parameters']['delivered'], 1, 'Inject on the real path')
        pt.check_eq(next_injected(lambda: peer.recv('inner'))['cgroup'], '/inner', 'reaches it as "/inner"')
        peer.connect('ctl')
        check_escapes(peer, 'ctl')
    finally:
        peer.stop()
        pt.remove_cgroup(os.path.join(v2dir, 'inner'))
        os.rmdir(mnt)


def check_user_namespace(d, name, v2dir):
    """An unprivileged user in its own user and cgroup namespaces, on a cgroup delegated to it."""
    probe = subprocess.run(['unshare', '-U', '-r', '-C', 'true'], capture_output=True, text=True)
    if probe.returncode != 0:
        pt.skip_part(f'user namespaces: unshare -UrC failed here ({probe.stderr.strip()})')
        return
    # The test's own interpreter may live where another user cannot run it.
    python = '/usr/bin/python3'
    probe = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', python, '-c',
                            f'import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(pt.__file__))!r}); '
                            'import pressured_test; pressured_test.own_verdict()'], capture_output=True, text=True)
    if probe.returncode != 0:
        pt.skip_part(f'user namespaces: uid 65534 cannot run {python} with the test helpers ({probe.stderr.strip()})')
        return
    sub = os.path.join(v2dir, 'user')
    os.mkdir(sub)
    try:
        peer = Peer(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'unshare', '-U', '-r', '-C']
                    + agent_cmd(d.socket, python), sub)
        try:
            peer.connect('a')
            r = peer.subscribe('a', cgroup='/', level='low')
            pt.check_eq(r.get('error'), 'io.pressured.PermissionDenied',
                        'authorization is on the real directory (not delegated yet)')
            os.chown(sub, 65534, 65534)
            ev = peer.subscribe('a', cgroup='/', level='low')['parameters']['event']
            pt.check_eq(ev['cgroup'], '/', 'delegated: subscribed as "/"')
            regs = regs_by_cgroup(d.status())
            pt.check(name + '/user' in regs, 'on the real path', sorted(regs))
            r = d.inject('low', name + '/user')
            pt.check_eq(next_injected(lambda: peer.recv('a'))['cgroup'], '/', 'the event names "/"')
            peer.connect('b')
            r = peer.subscribe('b', cgroup='/..', level='low')
            pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', 'no escape from a user namespace either')
        finally:
            peer.stop()
    finally:
        pt.remove_cgroup(sub)


def check_protection(name, v2dir):
    """GetProtection from the namespace: a fake tree that has the peer's real cgroup in it."""
    with tempfile.TemporaryDirectory(prefix='pressured-fake-') as root:
        pt.make_fake_tree(root, {
            '/': {'current': 3 * GIB},
            name: {'current': GIB, 'min': 2 * GIB, 'low': 0},
            name + '/job': {'current': GIB // 2, 'min': GIB, 'low': 0},
            '/elsewhere': {'current': GIB, 'min': 0, 'low': 0},
        })
        with pt.Daemon(cgroup_root=root) as d:
            peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), v2dir)
            try:
                peer.connect('p')
                nodes = peer.call('p', 'io.pressured.GetProtection', {})['parameters']['nodes']
                pt.check_eq([n['cgroup'] for n in nodes], ['/', '/job'], 'GetProtection "/" names the subtree as seen')
                pt.check_eq(nodes[0]['usage'], GIB, 'and reads the real cgroup')
                nodes = peer.call('p', 'io.pressured.GetProtection', {'cgroup': '/job'})['parameters']['nodes']
                pt.check_eq([n['cgroup'] for n in nodes], ['/job'], 'GetProtection "/job"')
                r = peer.call('p', 'io.pressured.GetProtection', {'cgroup': '/elsewhere'})
                pt.check_eq((r.get('error'), r['parameters'].get('cgroup')), ('io.pressured.NoSuchCgroup', '/elsewhere'),
                            'a cgroup outside the root is not reachable, named as given')
                peer.connect('s')
                ev = peer.subscribe('s', cgroup='/job', protection=True)['parameters']['event']
                pt.check_eq((ev['cgroup'], ev['state']['node']['cgroup']), ('/job', '/job'),
                            'a protection subscription names the cgroup and its node as seen')
                # Past its protection: a protection event, its node named as seen.
                pt.write_file(os.path.join(root, name.lstrip('/'), 'job', 'memory.current'), f'{2 * GIB}\n')
                ev = peer.recv('s', timeout=20)['parameters']['event']
                pt.check_eq((ev['kind'], ev['cgroup'], ev['node']['cgroup'], ev['state']),
                            ('protection', '/job', '/job', 'none'), 'the protection event')
                host = pt.Varlink(d.socket)
                nodes = host.call_sync('io.pressured.GetProtection', {'cgroup': name})['parameters']['nodes']
                pt.check_eq([n['cgroup'] for n in nodes], [name, name + '/job'], 'the host sees real paths')
                host.close()
            finally:
                peer.stop()


def check_headroom(name, v2dir):
    """GetHeadroom from the namespace: the walk stops at the peer's root, whose limit it sees even
    where an ancestor outside is tighter, and names the limiting cgroup as the peer does."""
    inner = os.path.join(v2dir, 'hr')
    os.mkdir(inner)
    mib = 1 << 20
    try:
        with tempfile.TemporaryDirectory(prefix='pressured-fake-') as root:
            pt.make_fake_tree(root, {'/': {'current': GIB}, name: {'current': 100 * mib},
                                     name + '/hr': {'current': 50 * mib}, name + '/hr/job': {'current': 10 * mib}})
            for cg, mx in ((name, 120 * mib), (name + '/hr', 200 * mib), (name + '/hr/job', 'max')):
                for f, v in (('memory.max', mx), ('memory.high', 'max')):
                    with open(os.path.join(root, cg.lstrip('/'), f), 'w') as fp:
                        fp.write(f'{v}\n')
            with pt.Daemon(cgroup_root=root) as d:
                peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), inner)
                try:
                    peer.connect('p')
                    want = {'usage_bytes': 10 * mib, 'limit_bytes': 200 * mib, 'limiting_cgroup': '/',
                            'headroom_bytes': 150 * mib, 'reclaim_target_bytes': None}
                    r = peer.call('p', 'io.pressured.GetHeadroom', {'cgroup': '/job'})
                    pt.check_eq(r.get('parameters'), want, 'GetHeadroom "/job" sees its root\'s limit, named "/"')
                    r = peer.call('p', 'io.pressured.GetHeadroom', {})
                    pt.check_eq(r.get('parameters'), dict(want, usage_bytes=50 * mib), 'GetHeadroom of its root')
                    r = peer.call('p', 'io.pressured.GetHeadroom', {'cgroup': '/..'})
                    pt.check_eq(r.get('error'), 'io.pressured.InvalidCgroupPath', 'no climbing above the root')
                    host = pt.Varlink(d.socket)
                    r = host.call_sync('io.pressured.GetHeadroom', {'cgroup': name + '/hr/job'})
                    pt.check_eq((r['parameters']['limiting_cgroup'], r['parameters']['headroom_bytes']),
                                (name, 20 * mib), 'the host sees the tighter ancestor')
                    host.close()
                finally:
                    peer.stop()
    finally:
        pt.remove_cgroup(inner)


def check_proxy(name, v2dir):
    """The memory-pressure socket reads the peer's cgroup from /proc in the daemon's view: a namespaced
    peer watches its own real cgroup, and GetStatus names it as each peer sees it."""
    d = pt.Daemon()
    mp = os.path.join(d.tmpdir, 'memory-pressure')
    d.write_config(f'[MemoryPressure]\nSocket={mp}\n')
    with d:
        peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), v2dir)
        try:
            peer.ask('proxy', 'mp', mp)
            regs = pt.wait_for(lambda: [r for r in d.status()['registrations'] if r['proxied']], what='proxied')
            pt.check_eq([(r['cgroup'], [p['cgroup'] for p in r['proxied']]) for r in regs], [(name, [name])],
                        'the proxied peer watches its real cgroup')
            peer.connect('v')
            nsregs = peer.status('v')['registrations']
            pt.check_eq([(r['cgroup'], [p['cgroup'] for p in r['proxied']]) for r in nsregs], [('/', ['/'])],
                        'the namespaced peer sees it as "/"')
            pt.check_eq(d.inject('critical', name)['parameters']['delivered'], 1, 'an Inject reaches it')
            pt.check_eq(peer.ask('byte', 'mp', pt.scaled(5.0)), 1, 'one byte for the event')
        finally:
            peer.stop()


def check_peer_gone(d):
    """A peer gone before the daemon accepted it has no namespace to read: refused, logged, nothing else hurt."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(d.socket)
                socket.send_fds(there, [b'x'], [s.fileno()])
            finally:
                os._exit(0)
        there.close()
        _, fds, _, _ = socket.recv_fds(here, 1, 1)
        os.waitpid(pid, 0)
        pt.check(len(fds) == 1 and not os.path.exists(f'/proc/{pid}'), 'the peer passed its connection and is gone')
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    conn = socket.socket(fileno=fds[0])
    conn.settimeout(pt.scaled(10))
    data = b''
    while not data.endswith(b'\0'):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    msg = json.loads(data.rstrip(b'\0'))
    pt.check_eq(msg.get('error'), 'io.pressured.PermissionDenied', 'a peer whose namespace is unknown is refused')
    pt.check(conn.recv(1) == b'', 'and its connection closed')
    pt.wait_for(lambda: f'Cannot read the cgroup namespace of the client pid {pid}' in d.log(), what='the log')
    pt.check_eq(d.status()['clients'], 1, 'the daemon serves the others')


def check_huge_mountinfo(d, v2dir):
    """A peer with more mounts than the daemon reads (its mountinfo over 1 MiB) is refused, and logged."""
    long_dir = tempfile.mkdtemp(prefix='pressured-mnt-')
    path = os.path.join(long_dir, *(['d' * 250] * 15))
    os.makedirs(path)
    # 300 mounts stacked on a path of 3.7 kB: 1.1 MB of mountinfo.
    script = 'for i in $(seq 300); do mount -t tmpfs none "$1" || exit 1; done; shift; exec "$@"'
    peer = Peer(['unshare', '-Cm', 'sh', '-c', script, 'sh', path] + agent_cmd(d.socket), v2dir)
    try:
        peer.connect('a')
        r = peer.call('a', 'io.pressured.GetStatus')
        pt.check_eq(r.get('error'), 'io.pressured.PermissionDenied', 'a peer with a huge mountinfo is refused')
        pt.wait_for(lambda: 'File too large' in d.log() and 'Cannot read the cgroup namespace' in d.log(),
                    what='the refusal logged')
    finally:
        peer.stop()
        shutil.rmtree(long_dir)


def check_unknown_namespace(name, v2dir):
    """A daemon without the right to look at peers' namespaces (as under its systemd unit) still finds a
    root that the peer's own cgroup2 mount shows."""
    if not shutil.which('setpriv'):
        pt.skip_part('setpriv is missing: the daemon without ptrace rights is not tested')
        return
    d = pt.Daemon()
    cmd = d.command
    d.command = lambda: ['setpriv', '--bounding-set=-all,+dac_override', '--inh-caps=-all'] + cmd()
    with d:
        mnt = tempfile.mkdtemp(prefix='pressured-cg2-')
        script = 'mount --make-rprivate / && mount -t cgroup2 none "$1" && shift && exec "$@"'
        peer = Peer(['unshare', '-Cm', 'sh', '-c', script, 'sh', mnt] + agent_cmd(d.socket), v2dir)
        try:
            peer.connect('a')
            ev = peer.subscribe('a', cgroup='/', level='low')['parameters']['event']
            pt.check_eq(ev['cgroup'], '/', 'subscribed as "/"')
            regs = regs_by_cgroup(d.status())
            pt.check(name in regs and '/' not in regs, 'registered on the real path of the mount\'s root', sorted(regs))
        finally:
            peer.stop()
            os.rmdir(mnt)


def main():
    pt.require_root('cgroup namespaces are made with unshare -C and real cgroups')
    if not shutil.which('unshare'):
        pt.skip('unshare (util-linux) is missing')
    if not os.path.exists('/proc/self/ns/cgroup'):
        pt.skip('the kernel has no cgroup namespaces')
    root = pt.cgroup2_mount()
    if root is None or not os.path.exists(os.path.join(root, 'cgroup.procs')):
        pt.skip('no cgroup2 hierarchy')
    name = f'/pressured-test-ns-{os.getpid()}-{uuid.uuid4().hex[:8]}'
    v2dir = os.path.join(root, name.lstrip('/'))
    os.mkdir(v2dir)
    try:
        if not os.path.exists(os.path.join(v2dir, 'memory.pressure')):
            pt.skip('PSI is not available in cgroup2 directories (memory.pressure missing)')
        with pt.Daemon(config_text='[Levels]\nClearAfterSec=1\n') as d:
            check_own_root(d, name, v2dir)
            check_levels(d, name, v2dir)
            check_mounted_root(d, name, v2dir)
            check_user_namespace(d, name, v2dir)
            check_peer_gone(d)
            check_huge_mountinfo(d, v2dir)
        check_protection(name, v2dir)
        check_headroom(name, v2dir)
        check_proxy(name, v2dir)
        check_unknown_namespace(name, v2dir)
    finally:
        pt.remove_cgroup(v2dir)
    pt.finish()


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--agent':
        agent(sys.argv[2])
    else:
        main()
