#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libpressure's pressure_monitor on sd-event against the built daemon.

monitor-probe follows a quiet cgroup of the test's own; the test injects
levels into it.

- The first call is the level now, "normal", seq 1; an injected critical
  is one change; with nothing more it steps down to normal after [Levels]
  StepDownSec= (2 s by default), and the handler hears that too.
- The daemon stops: the monitor waits without spinning (the probe uses
  next to no CPU time while the daemon is away) and, once the daemon is
  back, says "reconnected 1" and then the level again, from seq 1.
- The cgroup goes: "removed", and the probe's loop ends with status 0.

(A daemon without level streams, which ends the monitor with -EOPNOTSUPP,
is tests/client/test-monitor.c's scripted server's case.)
"""
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import pressured_test as pt  # noqa: E402

PROBE = os.path.join(pt.BUILD_ROOT, 'tests', 'integration', 'monitor-probe')
WAIT = pt.scaled(15)


class Probe:
    def __init__(self, socket, cgroup):
        env = dict(os.environ, PRESSURED_SOCKET=socket)
        self.proc = subprocess.Popen([PROBE, cgroup], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b''

    def line(self, timeout=WAIT):
        """The next line the probe prints."""
        end = time.monotonic() + timeout
        while b'\n' not in self.buf:
            left = end - time.monotonic()
            r, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            data = os.read(self.proc.stdout.fileno(), 4096) if r else b''
            if not data:
                raise AssertionError(f'no line from the probe (exit {self.proc.poll()}, '
                                     f'stderr {self.proc.stderr.read() if self.proc.poll() is not None else ""!r})')
            self.buf += data
        line, self.buf = self.buf.split(b'\n', 1)
        return line.decode()

    def cpu_seconds(self):
        with open(f'/proc/{self.proc.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def fields(line):
    """'level low seq=2 missed=0 ...' -> ('level', 'low', {'seq': '2', ...})."""
    words = line.split()
    return words[0], words[1] if len(words) > 1 else None, dict(w.split('=', 1) for w in words[2:] if '=' in w)


def check_level(line, level, seq):
    kind, name, kv = fields(line)
    pt.check(kind == 'level' and name == level and kv.get('seq') == str(seq) and kv.get('missed') == '0' and
             'headroom' in kv and 'reclaim' in kv, f'the handler hears {level} (seq {seq})', line)
    return kv


def main():
    with pt.quiet_cgroup() as cg, pt.Daemon() as d:
        probe = Probe(d.socket, cg)
        try:
            kv = check_level(probe.line(), 'normal', 1)
            pt.check(kv['reclaim'] in ('0', 'null'), 'no reclaim target at normal', kv)
            d.inject('critical', cg)
            check_level(probe.line(), 'critical', 2)
            check_level(probe.line(), 'normal', 3)

            d.stop()
            before = probe.cpu_seconds()
            pt.check(probe.proc.poll() is None, 'the monitor outlives the daemon')
            time.sleep(3)  # a window to measure the monitor's idleness in, not a wait for a condition
            spent = probe.cpu_seconds() - before
            pt.check(spent < 0.5, 'no busy loop while the daemon is away', spent)
            d.start()
            pt.check_eq(probe.line(), 'reconnected 1', 'the handler hears that the daemon came back')
            check_level(probe.line(), 'normal', 1)

            path = os.path.join(pt.cgroup2_mount(), cg.lstrip('/'))
            pt.remove_cgroup(path)
            pt.check_eq(probe.line(), 'removed', 'the handler hears that the cgroup went')
            pt.check_eq(probe.proc.wait(timeout=WAIT), 0, 'the loop ends after removed')
            os.mkdir(path)  # for quiet_cgroup() to remove
        finally:
            probe.stop()
    pt.finish()


if __name__ == '__main__':
    main()
