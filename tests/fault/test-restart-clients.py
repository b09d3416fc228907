#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SIGKILL and restart the daemon while 100 libpressure clients (pressurectl
watch processes) are subscribed: every one reconnects and subscribes again
by itself, reports that events may have been missed, and receives the next
event. Prints how long after the restart all 100 were subscribed again."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402

N = 30 if pt.WRAPPER else 100
DEADLINE = 120 if pt.WRAPPER else 30


def subscriptions(d):
    try:
        return d.status()['subscriptions']
    except OSError:
        return -1


def main():
    pt.require_root('Inject is reserved to root')
    if not os.access(pt.PRESSURECTL, os.X_OK):
        pt.skip('pressurectl is not built')
    # On an empty cgroup of its own: real pressure on / would add events.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Limits]\nMaxClients=1000\n', log_level='notice') as d:
        procs = []
        try:
            for _ in range(N):
                procs.append(subprocess.Popen(
                    [pt.PRESSURECTL, '--socket', d.socket, '--json', 'watch', cg, '--level', 'medium',
                     '--count', '2', '--timeout', str(4 * DEADLINE)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            pt.wait_for(lambda: subscriptions(d) == N, timeout=DEADLINE, what=f'{N} subscriptions')
            r = d.inject('medium', cg)
            pt.check(r['parameters']['delivered'] == N, 'first inject reaches all', r)

            d.kill()
            restarted = time.monotonic()
            d.start()
            pt.wait_for(lambda: subscriptions(d) == N, timeout=DEADLINE, what=f'{N} resubscriptions')
            took = time.monotonic() - restarted
            print(f'{N} libpressure clients subscribed again {took:.3f} s after the restart', flush=True)
            st = d.status()
            pt.check(len(st['registrations']) == 1 and st['registrations'][0]['subscribers'] == N,
                     'one shared registration again', st['registrations'])

            r = d.inject('medium', cg)
            pt.check(r['parameters']['delivered'] == N, 'second inject reaches all', r)
            for p in procs:
                out, err = p.communicate(timeout=DEADLINE)
                pt.check(p.returncode == 0, 'watch exits 0 after its two events', p.returncode, err)
                lines = [json.loads(line) for line in out.splitlines() if line.strip()]
                kinds = [x.get('kind') for x in lines]
                pt.check(kinds.count('pressure') == 2, 'two pressure events', kinds)
                pt.check('reconnected' in kinds, 'a reconnected notice between them', kinds)
                pt.check(kinds.index('reconnected') < len(kinds) - 1 and kinds[-1] == 'pressure',
                         'the notice precedes the second event', kinds)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    pt.finish()


if __name__ == '__main__':
    main()
