#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon as a process: it replaces a stale socket file but never
steals a live one; SIGTERM exits 0, removes the socket and ends every
subscriber's connection; an unknown configuration key at start is a
non-zero exit naming file:line; --help, --version and --dump-config."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
SECTIONS = ('Daemon', 'Levels', 'Limits', 'Protection', 'Policy', 'Metrics')


def run_daemon(*args, timeout=WAIT):
    return subprocess.run(pt.WRAPPER + [pt.PRESSURED] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def served(path):
    v = pt.Varlink(path, timeout=WAIT)
    try:
        return 'vendor' in v.call_sync('org.varlink.service.GetInfo').get('parameters', {})
    finally:
        v.close()


def test_stale_socket():
    d = pt.Daemon()
    # A socket file whose owner is gone: bound, then closed without unlink.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(d.socket)
    s.close()
    pt.check(os.path.exists(d.socket), 'the stale socket file exists')
    with d:
        pt.check(served(d.socket), 'the daemon serves on the path of the stale socket')


def refused_start(second, where):
    """Start @second, a daemon expected to give up at once because another
    one serves @where; return its exit status and its log."""
    second.start(wait=False)
    try:
        rc = second.proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        second.kill()
        raise AssertionError(f'a second daemon on {where} did not exit')
    second.logf.close()
    return rc, second.log()


def test_live_socket():
    # On an empty cgroup of its own: real pressure on / would add events.
    with pt.quiet_cgroup() as cg, pt.Daemon() as first:
        sub = pt.Varlink(first.socket, timeout=WAIT)
        sub.subscribe(cgroup=cg, level='medium')
        second = pt.Daemon(socket_path=first.socket)
        rc, log = refused_start(second, 'a live socket')
        pt.check(rc != 0, 'a second daemon on a live socket exits non-zero', rc, log)
        pt.check(re.search(r'another pressured', log, re.I), 'its message mentions another pressured', log)
        # The first one still owns the socket and its subscriber.
        pt.check(os.path.exists(first.socket), 'the socket file is still there')
        pt.check(served(first.socket), 'the first daemon still serves')
        r = first.inject('medium', cg)
        pt.check(r['parameters']['delivered'] == 1, 'the subscriber is still there', r)
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['seq'] == 1, 'and gets events', ev)
        sub.close()
        shutil.rmtree(second.tmpdir, ignore_errors=True)


def test_live_memory_pressure_socket():
    """A second daemon configured with a memory-pressure socket that a live
    daemon serves exits non-zero, leaves no varlink socket behind, and leaves
    the first one's socket alone."""
    first = pt.Daemon()
    mp = os.path.join(first.tmpdir, 'mp')
    first.write_config(f'[MemoryPressure]\nSocket={mp}\n')
    with first:
        second = pt.Daemon(config_text=f'[MemoryPressure]\nSocket={mp}\n')
        rc, log = refused_start(second, 'a live memory-pressure socket')
        pt.check(rc != 0 and f'Another process is serving {mp}; not taking it over' in log,
                 'a live memory-pressure socket is not taken over', rc, log)
        pt.check(not os.path.exists(second.socket), 'the second daemon leaves no varlink socket behind', log)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(mp)
        s.sendall(b'some 150ms 2s\n')
        pt.wait_for(lambda: first.status()['proxied_clients'] == 1, timeout=WAIT,
                    what='the first daemon still serving its memory-pressure socket')
        s.close()
        shutil.rmtree(second.tmpdir, ignore_errors=True)


def test_sigterm():
    # Subscribed on an empty cgroup: a real event on / would arrive before the end of file.
    with pt.quiet_cgroup() as cg:
        sigterm(cg)


def sigterm(cg):
    d = pt.Daemon().start()
    try:
        subs = [pt.Varlink(d.socket, timeout=WAIT) for _ in range(3)]
        for v in subs:
            v.subscribe(cgroup=cg, level='medium')
        idle = pt.Varlink(d.socket, timeout=WAIT)
        d.proc.send_signal(signal.SIGTERM)
        rc = d.proc.wait(timeout=WAIT)
        pt.check(rc == 0, 'SIGTERM exits 0', rc, d.log())
        for v in subs + [idle]:
            try:
                v.recv(timeout=WAIT)
                raise AssertionError('a message arrived instead of end of file')
            except (EOFError, ConnectionResetError):
                pass
            v.close()
        pt.check(not os.path.exists(d.socket), 'the socket file is removed at exit')
    finally:
        d.__exit__(None, None, None)


def test_bad_config():
    d = pt.Daemon(config_text='[Daemon]\nLogLevel=info\n\n[Limits]\nMaxClients=10\nNoSuchKey=1\n')
    d.start(wait=False)
    try:
        rc = d.proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        d.kill()
        raise AssertionError('the daemon started despite an unknown key')
    d.logf.close()
    log = d.log()
    pt.check(rc != 0, 'an unknown key at start is a non-zero exit', rc)
    pt.check(f'{d.config}:6' in log, 'the log names file:line', log)
    pt.check('NoSuchKey' in log, 'the log names the key', log)
    pt.check(not os.path.exists(d.socket), 'nothing listens', d.socket)
    shutil.rmtree(d.tmpdir, ignore_errors=True)

    # A bad value is refused alike.
    d = pt.Daemon(config_text='[Limits]\nMaxClients=lots\n')
    d.start(wait=False)
    rc = d.proc.wait(timeout=WAIT)
    d.logf.close()
    pt.check(rc != 0 and f'{d.config}:2' in d.log() and 'MaxClients' in d.log(),
             'a bad value is a non-zero exit naming file:line and key', rc, d.log())
    shutil.rmtree(d.tmpdir, ignore_errors=True)


def test_command_line():
    p = run_daemon('--help')
    pt.check(p.returncode == 0, '--help exits 0', p.returncode, p.stderr)
    for opt in ('--config', '--socket', '--user', '--cgroup-root', '--cgroup-v1-root', '--log-level',
                '--version', '--help'):
        pt.check(opt in p.stdout, f'--help mentions {opt}', p.stdout)
    p = run_daemon('--version')
    pt.check(p.returncode == 0, '--version exits 0', p.returncode, p.stderr)
    pt.check(re.search(r'\d+\.\d+', p.stdout), '--version prints a version', p.stdout)
    with pt.Daemon() as d:
        version = d.status()['version']
    pt.check(version in p.stdout, '--version agrees with GetStatus', p.stdout, version)

    p = run_daemon('--no-such-option')
    pt.check(p.returncode not in (0, None), 'an unknown option is an error', p.returncode)

    d = pt.Daemon(config_text='[Limits]\nMaxClients=77\n[Levels]\nMedium=some 150ms 2s\n')
    p = run_daemon('--config', d.config, '--dump-config')
    pt.check(p.returncode == 0, '--dump-config exits 0', p.returncode, p.stderr)
    for section in SECTIONS:
        pt.check(re.search(r'^\[%s\]\s*$' % section, p.stdout, re.M), f'--dump-config prints [{section}]', p.stdout)
    pt.check(re.search(r'^MaxClients\s*=\s*77\s*$', p.stdout, re.M), '--dump-config shows the file\'s value',
             p.stdout)
    pt.check(re.search(r'^MaxClientsPerUser\s*=\s*128\s*$', p.stdout, re.M),
             '--dump-config shows defaults too', p.stdout)
    # The command line is applied as the daemon would run with it.
    q = run_daemon('--config', d.config, '--dump-config', '--socket', '/run/elsewhere.sock', '--log-level', 'debug',
                   '--cgroup-root', '/tmp/no-such-root', '--cgroup-v1-root', '/tmp/no-such-v1')
    pt.check(q.returncode == 0, '--dump-config with options exits 0', q.returncode, q.stderr)
    for key, value in (('Socket', '/run/elsewhere.sock'), ('LogLevel', 'debug'), ('CgroupRoot', '/tmp/no-such-root'),
                       ('CgroupV1Root', '/tmp/no-such-v1'), ('MaxClients', '77')):
        pt.check(re.search(r'^%s=%s$' % (key, re.escape(value)), q.stdout, re.M),
                 f'--dump-config applies the command line: {key}={value}', q.stdout)
    q = subprocess.run(pt.WRAPPER + [pt.PRESSURED, '--dump-config', '--user'], capture_output=True, text=True,
                       timeout=WAIT, env=dict(os.environ, XDG_RUNTIME_DIR='/run/user/4242'))
    pt.check(q.returncode == 0 and re.search(r'^Socket=/run/user/4242/pressured/io\.pressured$', q.stdout, re.M),
             '--dump-config --user shows the per-user socket', q.returncode, q.stdout, q.stderr)

    # What --dump-config prints is itself a valid configuration.
    d.write_config(p.stdout)
    q = run_daemon('--config', d.config, '--dump-config')
    pt.check(q.returncode == 0 and q.stdout == p.stdout, '--dump-config output reads back unchanged',
             q.returncode, q.stderr)
    shutil.rmtree(d.tmpdir, ignore_errors=True)


def main():
    pt.require_root('Inject is reserved to root')
    test_command_line()
    test_stale_socket()
    test_live_socket()
    test_live_memory_pressure_socket()
    test_sigterm()
    test_bad_config()
    pt.finish()


if __name__ == '__main__':
    main()
