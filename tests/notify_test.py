# SPDX-License-Identifier: MIT
"""Helpers of the `pressurectl notify` tests: a private session bus
(dbus-daemon of the session type, without service activation), the
notifier in the background with its output in files, a fake cgroup tree
whose children of / the notifications name, and waits on the daemon's
episodes. Every wait polls with a deadline; nothing sleeps to synchronise.
"""
import os
import signal
import subprocess

import pressured_test as pt

check = pt.check
WAIT = pt.scaled(20.0)
# A full stall of the whole window: real pressure on a busy test machine
# (other tests load memory in parallel) hardly ever adds an event of its own
# to the injected ones; where it could, the checks allow for the updates it
# may cause under the rate limit.
CONFIG = '[Levels]\nMedium=full 1s 1s\nClearAfterSec=1\nClearRatio=1\n'
M = 1 << 20
# The largest child has a name that is markup unless escaped.
TREE = {'/': None, '/a&b<c>': 800 * M, '/user.slice': 700 * M, '/system.slice': 300 * M, '/init.scope': 5 * M}
# The children of / as the notification names them: as they are (--dry-run), and for a server that reads markup.
LARGEST = 'Largest: a&b<c> 800M, user.slice 700M, system.slice 300M'
LARGEST_MARKUP = 'Largest: a&amp;b&lt;c&gt; 800M, user.slice 700M, system.slice 300M'
BUS_CONFIG = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
'''


def make_tree(root):
    for path, current in TREE.items():
        d = os.path.join(root, path.lstrip('/'))
        os.makedirs(d, exist_ok=True)
        if current is not None:
            with open(os.path.join(d, 'memory.current'), 'w') as f:
                f.write(f'{current}\n')


class Bus:
    """A private session bus."""

    def __init__(self, tmp):
        cfg = os.path.join(tmp, 'bus.conf')
        with open(cfg, 'w') as f:
            f.write(BUS_CONFIG.format(dir=tmp))
        self.proc = subprocess.Popen(['dbus-daemon', '--config-file', cfg, '--nofork', '--print-address=1'],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.address = self.proc.stdout.readline().strip()
        check(self.address.startswith('unix:'), 'dbus-daemon prints its address', self.address,
              self.proc.stderr.read() if not self.address else '')

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


class Notifier:
    """pressurectl notify in the background, its stdout and stderr in files."""

    def __init__(self, tmp, name, socket, *args, bus=None, env=None, json_output=False):
        self.out_path = os.path.join(tmp, name + '.out')
        self.err_path = os.path.join(tmp, name + '.err')
        e = dict(os.environ)
        e.pop('DBUS_SESSION_BUS_ADDRESS', None)
        if bus:
            e['DBUS_SESSION_BUS_ADDRESS'] = bus.address
        e.update(env or {})
        self.out = open(self.out_path, 'w')
        self.err = open(self.err_path, 'w')
        self.proc = subprocess.Popen(pt.WRAPPER + [pt.PRESSURECTL, '--socket', socket] + (['--json'] if json_output else []) + ['notify'] + list(args),
                                     stdout=self.out, stderr=self.err, env=e)

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_stderr(self, text):
        return pt.wait_for(lambda: text in self.stderr(), timeout=WAIT, what=f'{text!r} on stderr')

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.out.close()
        self.err.close()
        return rc


def subscribers_on_root(d):
    """How many pressure subscribers the whole-system registration has."""
    return sum(r['subscribers'] for r in d.status()['registrations'] if r['cgroup'] == '/' and r['source'] == 'psi')


def wait_subscribed(d, n=1):
    pt.wait_for(lambda: subscribers_on_root(d) >= n, timeout=WAIT, what='the notifier subscribed')


def no_episode(d):
    return all('episode' not in r for r in d.status()['registrations'])


def wait_cleared(d):
    pt.wait_for(lambda: no_episode(d), timeout=WAIT, what='the episode to clear')


def inject(d, level):
    r = d.inject(level)
    check(r['parameters']['delivered'] >= 1, 'the injection reached the notifier', r)

