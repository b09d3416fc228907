#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Logs a person can read, on a console (neither the journal nor systemd):

- every line is "pressured: LEVEL: message";
- a refused call says why: the error's reason after its name;
- registrations read as sentences ('Registered the kills watch on /.');
- a memory-pressure client that wrote no trigger is told in a sentence;
- with a kills subscriber and no system bus, the failure to connect is a
  warning once, and later retries are debug lines, also for the next
  subscriber;
- the socket removed with its directory is reported when it happens, and
  SIGHUP binds it again;
- "pressured stopped." is the last line."""
import os
import re
import shutil
import signal
import socket
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

WAIT = pt.scaled(10)
LINE = re.compile(r'^pressured: (debug|info|notice|warning|error|critical|alert|emergency): \S')
VALGRIND = re.compile(r'^(==|--)\d+(==|--)')
# A socket that is no bus: connecting fails at once.
NO_BUS = {'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/pressured-test-no-bus'}


def lines(d):
    return d.log().splitlines()


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-log-lines-')
    try:
        root = os.path.join(tmp, 'tree')
        os.makedirs(os.path.join(root, 'a'))
        sockdir = os.path.join(tmp, 'run', 'pressured')
        mp = os.path.join(tmp, 'mp')
        d = pt.Daemon(socket_path=os.path.join(sockdir, 'io.pressured'), cgroup_root=root,
                      config_text=f'[MemoryPressure]\nSocket={mp}\n', env=NO_BUS)
        # Run under systemd or not, the daemon's stderr here is a console's.
        d.env.pop('JOURNAL_STREAM', None)
        d.env.pop('INVOCATION_ID', None)
        with d:
            check_refusal(d)
            check_kills_and_bus(d)
            check_proxy(d, mp)
            check_socket_removal(d, sockdir)
            d.stop()
            # Under valgrind its own lines come between (==PID== or --PID--).
            log = [line for line in lines(d) if not VALGRIND.match(line)]
            bad = [line for line in log if not LINE.match(line)]
            pt.check(not bad, 'every line carries its level', bad[:5])
            pt.check_eq(log[-1], 'pressured: info: pressured stopped.', 'the last line')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


def check_refusal(d):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        r = v.subscribe(cgroup='/a', protection=True)
    finally:
        v.close()
    pt.check(r.get('error') == 'io.pressured.SourceUnavailable', 'no memory controller in the fake tree', r)
    want = 'io.pressured.Subscribe from client '
    reason = r['parameters']['reason']
    pt.wait_for(lambda: any(want in line and f'failed: io.pressured.SourceUnavailable: {reason}' in line
                            for line in lines(d)), timeout=WAIT, what='the refusal with its reason in the log')


def check_kills_and_bus(d):
    for _ in range(2):
        v = pt.Varlink(d.socket, timeout=WAIT)
        first = v.subscribe(kills=True)
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'kills subscribed', first)
        # Wait for a retry after the first failure: the debug line.
        pt.wait_for(lambda: any('debug: Failed to connect to the system bus, retrying' in line
                                for line in lines(d)), timeout=WAIT * 3, what='a quiet retry')
        v.close()
        pt.wait_for(lambda: not d.status()['registrations'], timeout=WAIT, what='the kills registration to go')
    log = lines(d)
    pt.check(any(line == 'pressured: info: Registered the kills watch on /.' for line in log),
             'the registration reads as a sentence', [line for line in log if 'Registered' in line])
    pt.check(any(line == 'pressured: info: Removed the kills watch on /.' for line in log),
             'and its removal', [line for line in log if 'Removed' in line])
    warnings = [line for line in log if 'warning: Failed to connect to the system bus' in line]
    pt.check_eq(len(warnings), 1, 'the bus that is not there is a warning once, for both subscribers')


def check_proxy(d, mp):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(mp)
        s.sendall(b'hello there\n')
        pt.wait_for(lambda: any('did not ask for a valid PSI trigger: its line is not a trigger like '
                                '"some 150ms 2s". It gets the default trigger.' in line for line in lines(d)),
                    timeout=WAIT, what='the sentence about the proxied client')
    finally:
        s.close()


def check_socket_removal(d, sockdir):
    shutil.rmtree(sockdir)
    pt.wait_for(lambda: any(f'warning: The socket {d.socket} is gone (its directory was removed)' in line or
                            f'warning: The socket {d.socket} is gone (it was removed)' in line
                            for line in lines(d)), timeout=WAIT, what='the daemon to say its socket is gone')
    os.kill(d.pid, signal.SIGHUP)
    pt.wait_for(lambda: any(f'info: Listening on {d.socket} again.' in line for line in lines(d)),
                timeout=WAIT, what='the socket bound again by the reload')
    pt.check('vendor' in pt.Varlink(d.socket, timeout=WAIT).call_sync('org.varlink.service.GetInfo')['parameters'],
             'the daemon serves on the socket again')


if __name__ == '__main__':
    main()
