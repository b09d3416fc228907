#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A running `pressurectl watch` survives a SIGKILL and restart of the
daemon: it reconnects by itself, says so (a notice on stderr, or a
{"kind":"reconnected"} line with --json), subscribes again and receives an
event injected after the restart. Also: `watch --wait` started before the
daemon subscribes once the daemon is up."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check


def watch(d, *args):
    return subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch'] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def subscriptions(d):
    try:
        return d.status()['subscriptions']
    except OSError:
        return -1


def waiting(pid):
    """@pid sleeps in its event loop: its timerfd exists and it is not running."""
    try:
        fds = [os.readlink(f'/proc/{pid}/fd/{fd}') for fd in os.listdir(f'/proc/{pid}/fd')]
        with open(f'/proc/{pid}/stat') as f:
            state = f.read().rpartition(')')[2].split()[0]
    except OSError:
        return False
    return state == 'S' and 'anon_inode:[timerfd]' in fds


def test_restart():
    # The watches are on an empty cgroup: real pressure on / would end them early.
    with pt.quiet_cgroup() as cg, pt.Daemon() as d:
        human = watch(d, cg, '--level', 'medium', '--count', '1')
        js = watch(d, cg, '--level', 'medium', '--count', '1', '--json')
        pt.wait_for(lambda: subscriptions(d) == 2, what='both watches to subscribe')

        d.kill()
        # The watches noticed once they hold no connection: they are backing off.
        pt.wait_for(lambda: pt.socket_fds(human.pid) == 0 and pt.socket_fds(js.pid) == 0,
                    what='the watches to notice the daemon is gone')
        check(human.poll() is None and js.poll() is None, 'the watches outlive the daemon',
              human.returncode, js.returncode)
        d.start()
        restarted = time.monotonic()
        pt.wait_for(lambda: subscriptions(d) == 2, interval=0.01, what='both watches to subscribe again')
        resumed = time.monotonic() - restarted
        print(f'watches resubscribed {resumed * 1000:.0f} ms after the daemon accepted again')

        reply = d.inject('medium', cg)
        check(reply['parameters']['delivered'] == 2, 'the injection reaches both watches', reply)

        out, err = human.communicate(timeout=pt.scaled(10))
        check(human.returncode == 0, 'human watch exits 0 after its event', human.returncode, out, err)
        check('reconnected' in err, 'human watch prints a reconnect notice on stderr', err)
        lines = out.splitlines()
        check(len(lines) == 3 and lines[0].startswith(f'Watching {cg}') and lines[1].startswith(f'Watching {cg}')
              and ' pressure medium ' in lines[2], 'header, header again, the event', out)

        out, err = js.communicate(timeout=pt.scaled(10))
        check(js.returncode == 0, 'json watch exits 0 after its event', js.returncode, out, err)
        events = [json.loads(line) for line in out.splitlines()]
        check([e['kind'] for e in events] == ['subscribed', 'reconnected', 'subscribed', 'pressure'] and
              events[1] == {'kind': 'reconnected'} and events[2]['cgroup'] == cg,
              'subscribed, reconnected, subscribed again (the new registration), the event', events)
        check(events[3]['synthetic'] and events[3]['seq'] == 1, 'the injected event of the new subscription', events)
        check(err == '', 'nothing on stderr with --json', err)


def test_wait_for_daemon():
    with pt.quiet_cgroup() as cg:
        wait_for_daemon(cg)


def wait_for_daemon(cg):
    d = pt.Daemon()
    try:
        proc = watch(d, '--wait', cg, '--level', 'critical', '--count', '1', '--json')
        # Without a daemon nothing blocks but the wait for it: once the watch
        # sleeps with its timer set up, it has tried and is waiting.
        pt.wait_for(lambda: proc.poll() is not None or waiting(proc.pid), what='watch --wait to wait')
        check(proc.poll() is None, 'watch --wait waits for an absent daemon', proc.returncode)
        d.start()
        pt.wait_for(lambda: subscriptions(d) == 1, what='the waiting watch to subscribe')
        pt.check_eq(d.inject('critical', cg)['parameters']['delivered'], 1, 'injected')
        out, err = proc.communicate(timeout=pt.scaled(10))
        check(proc.returncode == 0, 'watch --wait exits 0 after its event', proc.returncode, err)
        events = [json.loads(line) for line in out.splitlines()]
        check([e['kind'] for e in events] == ['subscribed', 'pressure'] and events[1]['level'] == 'critical',
              'no reconnected line, just subscribed and the event', events)

        # Without --wait an absent daemon is an error (exit 3).
        d.kill()
        res = pt.run_ctl('watch', '--count', '1', socket=d.socket)
        check(res.returncode == 3, 'watch without a daemon exits 3', res.returncode, res.stderr)
    finally:
        d.__exit__(None, None, None)


def main():
    pt.require_root('Inject is reserved to root')
    if not os.access(pt.PRESSURECTL, os.X_OK):
        pt.skip(f'{pt.PRESSURECTL} is not built')
    test_restart()
    test_wait_for_daemon()
    pt.finish()


if __name__ == '__main__':
    main()
