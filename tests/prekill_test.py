# SPDX-License-Identifier: MIT
"""Helpers of the pre-kill hook's tests (test-prekill*.py): a stand-in for
systemd-oomd on the hook socket, and a peer in another process (another
user, another cgroup, a cgroup namespace) driven over a pipe.

The peer is this module run as a script: python3 prekill_test.py SOCKET.
It reads one JSON request per line and answers one JSON line."""
import json
import os
import select
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pressured_test as pt  # noqa: E402

NOTIFY = 'io.systemd.oom.Prekill.Notify'
ACK = 'io.pressured.AcknowledgePrekill'


def readable(sock):
    """Whether @sock has data (or end of file) to read now."""
    r, _, _ = select.select([sock], [], [], 0)
    return bool(r)


class Oomd:
    """A stand-in for systemd-oomd: one connection to the hook socket, one call at a time."""

    def __init__(self, path):
        self.v = pt.Varlink(path)

    def notify(self, cgroup, **extra):
        params = {'cgroup': cgroup}
        params.update(extra)
        self.v.call(NOTIFY, params)

    def answer(self, timeout=None):
        """The answer to the last call (raises TimeoutError if none comes in time)."""
        return self.v.recv(timeout=pt.scaled(10) if timeout is None else timeout)

    def call_sync(self, cgroup):
        self.notify(cgroup)
        return self.answer()

    def answered(self):
        """Whether an answer (or end of file) is there to read now."""
        return bool(self.v.buf) or readable(self.v.sock)

    def close(self):
        self.v.close()


def event(stream, timeout=None):
    """The next event of a Subscribe stream (a pt.Varlink)."""
    return stream.recv(timeout=pt.scaled(10) if timeout is None else timeout)['parameters']['event']


def quiet(stream):
    """Whether nothing waits to be read on the stream now."""
    return not stream.buf and not readable(stream.sock)


def acknowledge(sock, ident):
    """AcknowledgePrekill(@ident) on a connection of its own; the reply."""
    v = pt.Varlink(sock)
    try:
        return v.call_sync(ACK, {'id': ident})
    finally:
        v.close()


def wait_clients(daemon, n):
    """Until the daemon counts @n varlink clients (a probe's own connection included)."""
    pt.wait_for(lambda: daemon.status()['clients'] == n + 1, what=f'{n} client(s) left')


class Peer:
    """This module as a peer process, in @cgdir if given, as @user if given,
    in a new cgroup namespace rooted at its cgroup with @cgroupns."""

    def __init__(self, sock, cgdir=None, user=None, cgroupns=False):
        # Another user cannot run an interpreter under /root (pyenv): Debian's then.
        python = '/usr/bin/python3' if user else sys.executable
        cmd = [python, '-u', os.path.abspath(__file__), sock]
        if cgroupns:
            cmd = ['unshare', '-C'] + cmd
        drop = pt.as_user(user) if user else None

        def start():
            if cgdir:
                with open(os.path.join(cgdir, 'cgroup.procs'), 'w') as f:
                    f.write(str(os.getpid()))
            if drop:
                drop()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=start, env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
        self.pid = self.ask('pid')

    def ask(self, *req):
        self.proc.stdin.write(json.dumps(list(req)) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f'the peer ended: {self.proc.stderr.read()}')
        out = json.loads(line)
        if 'error' in out:
            raise AssertionError(f'peer: {out["error"]}')
        return out['ok']

    def subscribe(self, name, **params):
        return self.ask('subscribe', name, params)

    def event(self, name, timeout=10):
        return self.ask('event', name, pt.scaled(timeout))

    def quiet(self, name):
        return self.ask('quiet', name)

    def acknowledge(self, ident):
        return self.ask('ack', ident)

    def proxy(self, name, path):
        return self.ask('proxy', name, path)

    def byte(self, name, timeout=10):
        return self.ask('byte', name, pt.scaled(timeout))

    def close(self, name):
        return self.ask('close', name)

    def connect(self, name, path):
        return self.ask('connect', name, path)

    def call(self, name, method, params=None, timeout=10):
        """A call on a raw connection (made with connect()): its answer, unchecked."""
        return self.ask('call', name, method, params or {}, pt.scaled(timeout))

    def closed(self, name, timeout=10):
        """Whether the daemon closes the raw connection @name within @timeout (and sends nothing first)."""
        return self.ask('closed', name, pt.scaled(timeout))

    def stop(self):
        self.proc.kill()
        self.proc.communicate()


def _serve(sock):
    """The peer's side of Peer: varlink streams, acknowledgements, proxied connections."""
    pt.own_verdict()  # a helper process of a test, not a test
    conns = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            op = req[0]
            if op == 'pid':
                out = os.getpid()
            elif op == 'subscribe':
                conns[req[1]] = pt.Varlink(sock)
                out = conns[req[1]].subscribe(**req[2])
            elif op == 'event':
                out = event(conns[req[1]], req[2])
            elif op == 'quiet':
                out = quiet(conns[req[1]])
            elif op == 'ack':
                out = acknowledge(sock, req[1])
            elif op == 'proxy':
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(req[2])
                s.sendall(b'some 150ms 2s\n')
                conns[req[1]] = s
                out = True
            elif op == 'byte':
                conns[req[1]].settimeout(req[2])
                out = len(conns[req[1]].recv(16))
            elif op == 'connect':
                conns[req[1]] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conns[req[1]].connect(req[2])
                out = True
            elif op == 'call':
                c = conns[req[1]]
                c.settimeout(req[4])
                c.sendall(json.dumps({'method': req[2], 'parameters': req[3]}).encode() + b'\0')
                data = b''
                while not data.endswith(b'\0'):
                    chunk = c.recv(65536)
                    if not chunk:
                        raise EOFError('closed before the answer')
                    data += chunk
                out = json.loads(data[:-1])
            elif op == 'closed':
                conns[req[1]].settimeout(req[2])
                out = conns[req[1]].recv(100) == b''
            elif op == 'pending':
                out = readable(conns[req[1]])
            elif op == 'close':
                conns.pop(req[1]).close()
                out = True
            else:
                raise ValueError(f'unknown request {op}')
            print(json.dumps({'ok': out}), flush=True)
        except Exception as e:  # the test fails with it
            print(json.dumps({'error': f'{type(e).__name__}: {e}'}), flush=True)


def mkdirs(*paths):
    for p in paths:
        os.mkdir(p)


def rmdirs(*paths):
    """Remove test cgroups, deepest first; those gone already are fine."""
    for p in paths:
        pt.remove_cgroup(p)


def monotonic_us():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)


if __name__ == '__main__':
    _serve(sys.argv[1])
