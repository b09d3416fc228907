#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A /metrics scrape reads the cgroup tree off the event loop.

The fake tree's one cgroup has a FIFO for memory.current: reading it blocks
the walk until the test writes to the FIFO, so a scrape is held in the
middle of its walk for as long as the test wants. Meanwhile: a subscriber
hears an injected event and GetStatus answers (the loop serves); scrapes
that arrive wait for the next walk, up to the cap, and the one over it gets
503; a waiting client that hangs up changes nothing for the others; a
reload applies while a walk runs. Then Reexecute with a walk held: the
walk is waited for before the process executes anew (the held scrape is
answered or closed with its connection), and the new process serves
scrapes. Without metrics configured the daemon runs one thread."""

import importlib.util
import os
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('test_metrics', os.path.join(HERE, 'test-metrics.py'))
tm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tm)

fail = pt.fail
MAX_PENDING = 8  # METRICS_MAX_PENDING_SCRAPES
CURRENT = 'pressured_cgroup_memory_current_bytes'


def config(port, patterns='/slow'):
    return '[Metrics]\nListen=127.0.0.1:%d\nCgroups=%s\n' % (port, patterns)


def send_scrape(port):
    s = socket.create_connection(('127.0.0.1', port), timeout=pt.scaled(20))
    s.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    return s


def read_reply(s):
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b'\r\n\r\n')
    if not head:
        return None, ''   # closed without a reply
    return int(head.split()[1]), body.decode()


def replied_yet(s):
    s.settimeout(0.2)
    try:
        return s.recv(1, socket.MSG_PEEK) != b''
    except socket.timeout:
        return False
    finally:
        s.settimeout(pt.scaled(20))


def feed(fifo, value):
    """Let one walk that waits on the FIFO read @value."""
    with open(fifo, 'w') as f:
        f.write('%d\n' % value)


def reading(pid, fifo):
    """True while the daemon has the FIFO open (a walk is reading it)."""
    for fd in os.listdir('/proc/%d/fd' % pid):
        try:
            if os.readlink('/proc/%d/fd/%s' % (pid, fd)) == fifo:
                return True
        except OSError:
            pass
    return False


def thread_count(pid):
    return len(os.listdir('/proc/%d/task' % pid))


def check_loop_serves(d):
    v = pt.Varlink(d.socket)
    try:
        first = v.subscribe(level='low')
        pt.check('error' not in first, 'Subscribe while a walk is held', first)
        pt.check_eq(d.inject()['parameters']['delivered'], 1, 'Inject while a walk is held')
        ev = v.recv(timeout=pt.scaled(10))
        pt.check('parameters' in ev and 'event' in ev['parameters'], 'an event heard while a walk is held', ev)
    finally:
        v.close()
    pt.check('version' in d.status(), 'GetStatus while a walk is held')


def held_checks(d, port, fifo):
    held = send_scrape(port)
    pt.wait_for(lambda: thread_count(d.pid) >= 2, what='the walk thread to start')
    check_loop_serves(d)
    waiting = [send_scrape(port) for _ in range(MAX_PENDING - 1)]
    over = send_scrape(port)
    code, body = read_reply(over)
    pt.check_eq(code, 503, 'the scrape over the cap')
    pt.check('too many scrapes' in body, 'the 503 says why', body)
    pt.check(not replied_yet(held), 'the held scrape is not answered before its walk ends')
    waiting.pop().close()   # a waiting client hangs up
    # A reload during the walk: the next walk reads the new patterns.
    d.write_config(config(port, '/slow /other'))
    p = pt.run_ctl('reload', socket=d.socket)
    pt.check_eq(p.returncode, 0, 'pressurectl reload during a walk')
    # One writer for both walks: the next walk starts as soon as the held
    # one ends and may open the FIFO before a writer of its own would have
    # closed, which would make it read an end of file.
    with open(fifo, 'w') as writer:
        writer.write('4096\n')
        writer.flush()
        code, body = read_reply(held)
        pt.check_eq(code, 200, 'the held scrape')
        pt.check('%s{cgroup="/slow"} 4096\n' % CURRENT in body, 'the held scrape has the value fed', body[-500:])
        pt.check('cgroup="/other"' not in body, 'the walk under way kept its patterns')
        # The next walk, shared by every waiting scrape: written once it reads.
        pt.wait_for(lambda: reading(d.pid, fifo), what='the next walk to open the FIFO')
        writer.write('8192\n')
        writer.flush()
        for s in waiting:
            code, body = read_reply(s)
            pt.check_eq(code, 200, 'a waiting scrape')
            pt.check('%s{cgroup="/slow"} 8192\n' % CURRENT in body, 'a waiting scrape has the second value')
            pt.check('%s{cgroup="/other"} 1\n' % CURRENT in body, 'a waiting scrape has the reloaded patterns')


def reexec_check(d, port, fifo):
    held = send_scrape(port)
    pt.wait_for(lambda: thread_count(d.pid) >= 2, what='the walk thread to start')
    v = pt.Varlink(d.socket)
    try:
        v.call('io.pressured.Reexecute')
        # Whether the walk ends before or after the Reexecute is taken up, it ends.
        feeder = threading.Thread(target=feed, args=(fifo, 1024))
        feeder.start()
        reply = v.recv(timeout=pt.scaled(30))
        feeder.join()
        pt.check('error' not in reply, 'Reexecute with a walk held', reply)
    finally:
        v.close()
    # Answered if its walk ended first, else closed with every HTTP connection at the exec.
    code, _ = read_reply(held)
    pt.check(code in (200, None), 'the scrape held across Reexecute: answered or closed', code)
    pt.check_eq(d.status()['generation'], 1, 'generation after Reexecute')
    tm.wait_listening(port)
    # The new process walks too: feed its walk.
    feeder = threading.Thread(target=feed, args=(fifo, 2048))
    feeder.start()
    code, _, body = tm.get(port, '/metrics')
    feeder.join()
    pt.check_eq(code, 200, 'a scrape of the new process')
    pt.check('%s{cgroup="/slow"} 2048\n' % CURRENT in body, 'the new process read the tree')


def main():
    pt.require_root('Reexecute is for root only')
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, 'tree')
        pt.make_fake_tree(root, {'/slow': {}, '/other': {'current': 1}})
        fifo = os.path.join(root, 'slow', 'memory.current')
        os.mkfifo(fifo)
        port = pt.free_port()
        with pt.Daemon(config_text=config(port), cgroup_root=root) as d:
            tm.wait_listening(port)
            pt.check_eq(thread_count(d.pid), 1, 'threads between scrapes')
            held_checks(d, port, fifo)
            pt.wait_for(lambda: thread_count(d.pid) == 1, what='the walk thread to end')
            reexec_check(d, port, fifo)
    with pt.Daemon(config_text='') as d:
        pt.check_eq(thread_count(d.pid), 1, 'threads without metrics')
    pt.finish()


if __name__ == '__main__':
    main()
