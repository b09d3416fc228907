# SPDX-License-Identifier: MIT
"""A stand-in for systemd's side of a service with a file descriptor
store, for tests and benchmarks that restart or kill the daemon without a
service manager: the notify socket ($NOTIFY_SOCKET), the store
(FDSTORE=1 with FDNAME= and FDPOLL=, FDSTOREREMOVE=1), and starting the
daemon with $LISTEN_FDS, $LISTEN_PID and $LISTEN_FDNAMES holding what the
store holds, as systemd does at a restart. The store is kept across
restarts and crashes until stop(); a stop releases it, closing every fd.

Like systemd it drops a stored fd whose poll reports a hang-up or an
error, unless it was stored with FDPOLL=0 (checked at each start and on
request, not continuously)."""

import array
import fcntl
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pressured_test as pt

SCM_MAX_FDS = 253


class ServiceManager:
    def __init__(self, daemon_args, env=None, log_path=None, fdstore_max=None):
        """@fdstore_max: what $FDSTORE says, as systemd 254 and later set it (None: unset, as 252)."""
        self.tmpdir = tempfile.mkdtemp(prefix='pressured-fdstore-')
        self.notify_path = os.path.join(self.tmpdir, 'notify')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.notify_path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.args = list(daemon_args)
        self.env = dict(os.environ if env is None else env)
        for k in ('LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES', 'FDSTORE', 'PRESSURED_TAKEOVER_FDS'):
            self.env.pop(k, None)
        self.env['NOTIFY_SOCKET'] = self.notify_path
        if fdstore_max is not None:
            self.env['FDSTORE'] = str(fdstore_max)
        self.log_path = log_path or os.path.join(self.tmpdir, 'daemon.log')
        self.lock = threading.Condition()
        self.store = []          # [(name, fd, poll)], in the order stored
        self.messages = []       # every datagram's text
        self.ready = 0           # READY=1 messages
        self.handling = False
        self.proc = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # --- the notify socket ---

    def _read(self):
        fds_size = socket.CMSG_SPACE(SCM_MAX_FDS * array.array('i').itemsize)
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(65536, fds_size)
            except OSError:
                return
            self.handling = True
            fds = array.array('i')
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(cdata[:len(cdata) - (len(cdata) % fds.itemsize)])
            self._handle(data.decode(errors='replace'), list(fds))

    def _handle(self, text, fds):
        fields = dict(line.split('=', 1) for line in text.split('\n') if '=' in line)
        with self.lock:
            self.messages.append(text)
            if fields.get('FDSTORE') == '1':
                name = fields.get('FDNAME', 'stored')
                for fd in fds:
                    self.store.append((name, fd, fields.get('FDPOLL') != '0'))
                fds = []
            if fields.get('FDSTOREREMOVE') == '1':
                name = fields.get('FDNAME')
                for n, fd, _ in [e for e in self.store if e[0] == name]:
                    os.close(fd)
                self.store = [e for e in self.store if e[0] != name]
            if fields.get('READY') == '1':
                self.ready += 1
            self.handling = False
            self.lock.notify_all()
        for fd in fds:
            os.close(fd)

    def drain(self):
        """Wait until every datagram sent so far is handled, as systemd
        reads the notify socket before it acts on the service's exit."""
        while True:
            readable = select.select([self.sock], [], [], 0)[0]
            with self.lock:
                if not readable and not self.handling:
                    return
            time.sleep(0.005)

    def names(self):
        with self.lock:
            return sorted(n for n, _, _ in self.store)

    def wait_names(self, pred, what, timeout=30):
        pt.wait_for(lambda: pred(self.names()), timeout=pt.scaled(timeout), what=what)

    def drop_hung_up(self):
        """What systemd does on POLLHUP/POLLERR of a polled fd: drop it."""
        with self.lock:
            keep = []
            for name, fd, poll in self.store:
                if poll:
                    p = select.poll()
                    p.register(fd, 0)
                    if any(ev & (select.POLLHUP | select.POLLERR) for _, ev in p.poll(0)):
                        os.close(fd)
                        continue
                keep.append((name, fd, poll))
            self.store = keep

    # --- the service ---

    def start(self, wait=True):
        """Start the daemon with the store's fds, as systemd does."""
        self.drop_hung_up()
        with self.lock:
            entries = list(self.store)
            ready_before = self.ready
        names = [n for n, _, _ in entries]
        src = [fd for _, fd, _ in entries]
        env = dict(self.env)
        log = open(self.log_path, 'a')
        if entries:
            env['LISTEN_FDS'] = str(len(entries))
            env['LISTEN_FDNAMES'] = ':'.join(names)

        def child():
            # fds 3.. in the order of the store; the copies are inheritable.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3 + len(src)) for fd in src]
            for i, fd in enumerate(high):
                os.dup2(fd, 3 + i)
            os.closerange(3 + len(high), 65536)

        # $LISTEN_PID is the daemon's own pid: a shell sets it, then becomes the daemon.
        cmd = ['/bin/sh', '-c', 'LISTEN_PID=$$ exec "$@"', 'sh'] if entries else []
        self.proc = subprocess.Popen(cmd + pt.WRAPPER + [pt.PRESSURED] + self.args, env=env, stdout=log,
                                     stderr=subprocess.STDOUT, preexec_fn=child, close_fds=False)
        log.close()
        if wait:
            with self.lock:
                ok = self.lock.wait_for(lambda: self.ready > ready_before or self.proc.poll() is not None,
                                        timeout=pt.scaled(30))
            if not ok or self.proc.poll() is not None:
                raise AssertionError(f'the daemon did not become ready:\n{self.log()}')
        return self.proc

    @property
    def pid(self):
        return self.proc.pid

    def restart(self):
        """systemctl restart: SIGTERM, wait, start again; the store stays."""
        self.terminate()
        return self.start()

    def terminate(self, timeout=60):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=pt.scaled(timeout))
        self.drain()
        if pt.STRICT_EXIT and rc != 0:
            raise AssertionError(f'daemon exited {rc} on SIGTERM:\n{self.log()}')
        return rc

    def crash(self):
        """SIGKILL, then Restart=on-failure: the store stays."""
        self.proc.kill()
        self.proc.wait()
        self.drain()
        return self.start()

    def stop(self):
        """systemctl stop: SIGTERM, then the store is released."""
        if self.proc and self.proc.poll() is None:
            try:
                self.terminate()
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with self.lock:
            for _, fd, _ in self.store:
                os.close(fd)
            self.store = []

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def close(self):
        self.stop()
        self.sock.close()
        try:
            os.unlink(self.notify_path)
        except OSError:
            pass
        try:
            os.unlink(self.log_path)
            os.rmdir(self.tmpdir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            import sys
            sys.stderr.write(f'--- daemon log ---\n{self.log()}\n')
        self.close()
