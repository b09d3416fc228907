#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl notify against a real notification server: dunst on a
virtual X display (Xvfb) and a private session bus. An episode rising from
low to critical is one notification on screen, updated in place (dunst
counts one displayed); its end closes it (none displayed, one in the
history, with the critical text and dunst's never-expiring timeout for
critical urgency). dunst reads markup: the child cgroup named "a&b<c>"
comes out of its parser as that text, so the body was escaped. Skipped (77) without dunst, Xvfb or dbus-daemon."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
from notify_test import (CONFIG, LARGEST, WAIT, Bus, Notifier, inject, make_tree, wait_cleared,  # noqa: E402
                         wait_subscribed)

check = pt.check


def dunstctl(env, *args):
    res = subprocess.run(['dunstctl'] + list(args), capture_output=True, text=True, timeout=WAIT, env=env)
    check(res.returncode == 0, f'dunstctl {" ".join(args)}', res.returncode, res.stderr)
    return res.stdout


def displayed(env):
    return int(dunstctl(env, 'count', 'displayed').strip())


def history(env):
    return json.loads(dunstctl(env, 'history'))['data'][0]


def main():
    pt.require_root('Inject is reserved to root')
    for prog in ('dunst', 'dunstctl', 'Xvfb', 'dbus-daemon'):
        if not shutil.which(prog):
            pt.skip(f'{prog} is not installed (Debian packages dunst, xvfb, dbus-daemon)')
    if not os.path.exists('/proc/pressure/memory'):
        pt.skip('no PSI (/proc/pressure/memory): the daemon cannot register on the whole system')

    tmp = tempfile.mkdtemp(prefix='pressured-dunst-')
    root = os.path.join(tmp, 'v2')
    make_tree(root)
    bus = Bus(tmp)
    xvfb = dunst = notifier = None
    d = pt.Daemon(cgroup_root=root, config_text=CONFIG)
    try:
        rfd, wfd = os.pipe()
        xvfb = subprocess.Popen(['Xvfb', '-displayfd', str(wfd), '-nolisten', 'tcp', '-screen', '0', '800x600x24'],
                                pass_fds=(wfd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(wfd)
        with os.fdopen(rfd) as f:
            display = ':' + f.readline().strip()
        check(display != ':', 'Xvfb says its display', xvfb.poll())
        env = dict(os.environ, DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=bus.address, XDG_CONFIG_HOME=tmp)
        # An empty configuration: dunst's built-in defaults (critical never expires).
        conf = os.path.join(tmp, 'dunstrc')
        open(conf, 'w').close()
        dunst = subprocess.Popen(['dunst', '-config', conf], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)

        def up():
            if dunst.poll() is not None:
                raise RuntimeError(f'dunst exited with {dunst.returncode}')
            return subprocess.run(['dunstctl', 'count', 'displayed'], capture_output=True, env=env,
                                  timeout=WAIT).returncode == 0
        pt.wait_for(up, timeout=WAIT, what='dunst on the session bus')

        d.start()
        # At low, which hears the levels above it.
        notifier = Notifier(tmp, 'notify', d.socket, '--level', 'low', '--cgroup', '/', '--cgroup-root', root, bus=bus)
        wait_subscribed(d)
        for level in ('low', 'medium', 'critical'):
            inject(d, level)
        # One notification on screen for the episode, however many updates it had.
        pt.wait_for(lambda: displayed(env) == 1, timeout=WAIT, what='the notification on screen')
        check(history(env) == [], 'nothing closed yet', history(env))
        wait_cleared(d)
        pt.wait_for(lambda: displayed(env) == 0, timeout=WAIT, what='the notification closed on cleared')
        hist = history(env)
        check(len(hist) == 1, 'one notification for the episode', hist)
        n = hist[0]
        check(n['appname']['data'] == 'pressured' and n['summary']['data'] == 'Memory pressure: critical' and
              n['body']['data'].endswith(LARGEST),
              'it ended showing the critical level and the largest children, markup escaped', n)
        check(n['timeout']['data'] == 0, 'critical urgency: dunst lets it stay until closed', n)
        print(f'dunst history: {n["summary"]["data"]!r} id {n["id"]["data"]}', flush=True)
        check(notifier.stop() == 0, 'notify exits 0 on SIGTERM', notifier.stderr())
        notifier = None
    finally:
        if notifier:
            notifier.stop()
            sys.stderr.write(f'--- notify stderr ---\n{notifier.stderr()}\n')
        d.__exit__(*sys.exc_info())
        for p in (dunst, xvfb):
            if p and p.poll() is None:
                p.terminate()
                p.wait()
        bus.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
