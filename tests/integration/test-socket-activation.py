#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Socket activation and sd_notify, the way systemd drives the daemon: the
test owns the listening socket and a NOTIFY_SOCKET, passes the socket as
fd 3 (LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES) with a watchdog, and checks
READY=1, service on the inherited socket, WATCHDOG=1, RELOADING=1 then
READY=1 on SIGHUP, STOPPING=1 and exit 0 on SIGTERM, and that a client
queued while no daemon ran is served by the next one. Then the same with
systemd-socket-activate; where it is not installed that part is left out,
saying so, and the test exits 77 once the rest passed."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

# Upper bounds for things that normally take milliseconds; they only turn
# a hang into a failure and are never asserted as durations.
WAIT = 15.0


fail = pt.fail


class Notify:
    """A NOTIFY_SOCKET: collects the daemon's sd_notify datagrams.

    A thread reads every datagram as it comes, as the service manager does:
    the daemon also hands fds to the store through this socket, and a queue
    nobody reads would block it."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(path)
        self.messages = []   # every datagram, each a list of "KEY=VALUE" lines
        self.consumed = 0    # messages before this index were matched already
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            with self.lock:
                self.messages.append(data.decode(errors='replace').split('\n'))

    def wait_for(self, line, what):
        """Return the index of the first message, after those already
        consumed, containing @line; fail if none arrives in time."""
        deadline = time.monotonic() + WAIT
        while True:
            with self.lock:
                for i in range(self.consumed, len(self.messages)):
                    if line in self.messages[i]:
                        self.consumed = i + 1
                        return i
                messages = list(self.messages)
            if time.monotonic() > deadline:
                fail('no %s from the daemon; got %r' % (what, messages))
            time.sleep(0.01)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def spawn_activated(listen_sock, notify_path, log, extra_env, more_socks=()):
    """fork + execve with the socket as fd 3 (and @more_socks as fd 4 on) and LISTEN_PID = the child's pid."""
    args = [pt.PRESSURED, '--log-level', 'debug']
    env = dict(os.environ)
    for k in ('LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES', 'NOTIFY_SOCKET',
              'WATCHDOG_USEC', 'WATCHDOG_PID', 'PRESSURED_SOCKET'):
        env.pop(k, None)
    env.update(extra_env)
    env['NOTIFY_SOCKET'] = notify_path
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            fds = [listen_sock.fileno()] + [s.fileno() for s in more_socks]
            high = [os.dup(fd) for fd in fds]
            for i, fd in enumerate(high):
                os.dup2(fd, 3 + i)   # the copies are inheritable
            os.closerange(3 + len(fds), 1024)
            env['LISTEN_PID'] = str(os.getpid())
            if 'WATCHDOG_USEC' in env:
                env['WATCHDOG_PID'] = str(os.getpid())
            os.execve(pt.PRESSURED, args, env)
        finally:
            os._exit(127)
    return pid


def wait_exit(pid):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    fail('daemon %d did not exit' % pid)


def check_get_info(path):
    v = pt.Varlink(path)
    info = v.call_sync('org.varlink.service.GetInfo', {})
    if 'io.pressured' not in info.get('parameters', {}).get('interfaces', []):
        fail('GetInfo on the activated socket: %r' % info)
    return v


def check_named_sockets(tmp, log):
    """Four activated sockets, told apart by name: varlink and the memory, cpu and io pressure ones
    (as pressured.service gets them from its four socket units)."""
    names = ['memory-pressure', 'cpu-pressure', 'varlink', 'io-pressure']
    paths = {n: os.path.join(tmp, 'named.' + n) for n in names}
    socks = []
    for n in names:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.bind(paths[n])
        s.listen(16)
        socks.append(s)
    notify = Notify(os.path.join(tmp, 'notify-named'))
    # The varlink socket not first: the names decide, not the order.
    pid = spawn_activated(socks[0], notify.path, log,
                          {'LISTEN_FDS': str(len(names)), 'LISTEN_FDNAMES': ':'.join(names)}, more_socks=socks[1:])
    try:
        notify.wait_for('READY=1', 'READY=1 with four sockets')
        check_get_info(paths['varlink']).close()
        conns = {}
        for r in ('memory', 'cpu', 'io'):
            conns[r] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conns[r].connect(paths[f'{r}-pressure'])
            conns[r].sendall(b'some 150000 2000000\0')
        v = pt.Varlink(paths['varlink'])
        deadline = time.monotonic() + WAIT
        while True:
            st = v.call_sync('io.pressured.GetStatus', {})['parameters']
            regs = {r['resource']: r for r in st['registrations'] if r['proxied']}
            if st['proxied_clients'] == 3 and sorted(regs) == ['cpu', 'io', 'memory']:
                break
            if time.monotonic() > deadline:
                fail('the activated pressure sockets did not each serve their resource: %r' % st)
            time.sleep(0.02)
        for r in ('memory', 'cpu', 'io'):
            if v.call_sync('io.pressured.Inject', {'level': 'low', 'cgroup': regs[r]['cgroup'], 'resource': r}
                           )['parameters']['delivered'] < 1:
                fail('Inject did not reach the proxied %s client' % r)
            conns[r].settimeout(WAIT)
            if len(conns[r].recv(16)) < 1:
                fail('no byte on the %s-pressure connection' % r)
        v.close()
        for c in conns.values():
            c.close()
        os.kill(pid, signal.SIGTERM)
        status = wait_exit(pid)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            fail('four-socket instance exit status %r' % status)
        for n in names:
            if not os.path.exists(paths[n]):
                fail('the daemon removed the activated socket %s, which is the service manager\'s' % n)
    finally:
        for s in socks:
            s.close()
        notify.close()


def main():
    if not os.path.exists(pt.PRESSURED):
        fail('%s is not built' % pt.PRESSURED)

    with tempfile.TemporaryDirectory(prefix='pressured-activation-') as tmp:
        sock_path = os.path.join(tmp, 'io.pressured')
        listen_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        listen_sock.bind(sock_path)
        listen_sock.listen(16)
        notify = Notify(os.path.join(tmp, 'notify'))
        log = open(os.path.join(tmp, 'daemon.log'), 'w+')

        try:
            pid = spawn_activated(listen_sock, notify.path, log, {
                'LISTEN_FDS': '1',
                'LISTEN_FDNAMES': 'varlink',
                'WATCHDOG_USEC': '200000',
            })

            notify.wait_for('READY=1', 'READY=1')
            # The daemon serves on the socket it inherited; it did not bind its own.
            v = check_get_info(sock_path)
            status = v.call_sync('io.pressured.GetStatus', {}).get('parameters', {})
            if status.get('clients', 0) < 1:
                fail('GetStatus over the activated socket counts no client: %r' % status)
            v.close()

            # The watchdog is on: pings keep coming.
            notify.wait_for('WATCHDOG=1', 'WATCHDOG=1')
            notify.wait_for('WATCHDOG=1', 'a second WATCHDOG=1')

            # SIGHUP: RELOADING=1, then READY=1 again, and still serving.
            os.kill(pid, signal.SIGHUP)
            reloading = notify.wait_for('RELOADING=1', 'RELOADING=1 after SIGHUP')
            ready = notify.wait_for('READY=1', 'READY=1 after the reload')
            if ready <= reloading:
                fail('READY=1 did not follow RELOADING=1: %r' % notify.messages)
            check_get_info(sock_path).close()

            # SIGTERM: STOPPING=1 and a clean exit.
            os.kill(pid, signal.SIGTERM)
            notify.wait_for('STOPPING=1', 'STOPPING=1 after SIGTERM')
            status = wait_exit(pid)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                fail('daemon exit status %r after SIGTERM' % status)

            # The socket outlived the daemon (as with systemd): a client that
            # connects now waits in the backlog and the next instance serves it.
            queued = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            queued.settimeout(WAIT)
            queued.connect(sock_path)
            notify2 = Notify(os.path.join(tmp, 'notify2'))
            pid = spawn_activated(listen_sock, notify2.path, log, {
                'LISTEN_FDS': '1',
                'LISTEN_FDNAMES': 'varlink',
            })
            queued.sendall(b'{"method":"org.varlink.service.GetInfo","parameters":{}}\0')
            reply = b''
            while b'\0' not in reply:
                chunk = queued.recv(65536)
                if not chunk:
                    fail('queued client: connection closed, got %r' % reply)
                reply += chunk
            if b'io.pressured' not in reply:
                fail('queued client: unexpected reply %r' % reply)
            pt.validate(json.loads(reply.partition(b'\0')[0]), 'org.varlink.service.GetInfo')
            queued.close()
            notify2.wait_for('READY=1', 'READY=1 of the second instance')
            os.kill(pid, signal.SIGTERM)
            notify2.wait_for('STOPPING=1', 'STOPPING=1 of the second instance')
            status = wait_exit(pid)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                fail('second instance exit status %r' % status)
            # Without WATCHDOG_USEC the daemon must not ping.
            if [m for m in notify2.messages if 'WATCHDOG=1' in m]:
                fail('WATCHDOG=1 sent without WATCHDOG_USEC: %r' % notify2.messages)
            notify2.close()
        except SystemExit:
            log.seek(0)
            sys.stderr.write('--- daemon log ---\n' + log.read())
            raise
        finally:
            listen_sock.close()
            notify.close()
        try:
            check_named_sockets(tmp, log)
        except SystemExit:
            log.seek(0)
            sys.stderr.write('--- daemon log ---\n' + log.read())
            raise

        # The stock tool, if present: it listens, execs the daemon on the
        # first connection, and that connection must be answered.
        tool = shutil.which('systemd-socket-activate')
        if not tool:
            pt.skip_part('the daemon started by systemd-socket-activate: the tool is not installed')
        else:
            path2 = os.path.join(tmp, 'activate.sock')
            env = {k: v for k, v in os.environ.items()
                   if k not in ('LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES', 'NOTIFY_SOCKET')}
            p = subprocess.Popen([tool, '-l', path2, '--fdname=varlink', pt.PRESSURED],
                                 env=env, stdout=log, stderr=log)
            try:
                deadline = time.monotonic() + WAIT
                # The file exists from bind(); a connect before listen() is refused.
                while True:
                    try:
                        v = check_get_info(path2)
                        break
                    except (FileNotFoundError, ConnectionRefusedError):
                        if p.poll() is not None or time.monotonic() > deadline:
                            fail('systemd-socket-activate did not listen on %s' % path2)
                        time.sleep(0.02)
                v.close()
                p.send_signal(signal.SIGTERM)
                rc = p.wait(WAIT)
                if rc != 0:
                    fail('daemon under systemd-socket-activate exited %d' % rc)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        log.close()
    pt.finish()


if __name__ == '__main__':
    main()
