#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl notify on a real session bus: a private dbus-daemon (session
type, no service activation) and tests/integration/notify-server.c, which
owns org.freedesktop.Notifications and records every call it gets. The
daemon runs on a fake cgroup tree (whose children of / the text names) and
Inject drives the whole-system PSI registration; episodes end after
ClearAfterSec=1.

Checked: usage errors; --dry-run in text and JSON (show, close, replace);
the notifier started before the daemon waits for it; the urgency hint per
level (low 0, medium 1, critical 2), one notification per episode updated in
place through replaces_id; CloseNotification on cleared, or the "cleared"
note with --on-cleared=replace; 1,000 injected events give a bounded number
of Notify calls (derived from --min-interval); the server going away and
coming back, no session bus at all, a daemon restart; SIGTERM closes what
is on screen and exits 0. Kills, from a fake daemon: the kills subscription
on the session (or its usual path), one notification per kill naming the
scope, who and why, a storm of 1,000 kills gathered into one notification
after --min-interval, --no-kills, a daemon without kills, and the Notify call
a kill makes on the bus. And from the daemon: a rise of oom_kill in the
session cgroup's memory.events (a fake tree) is shown as a kill by the
kernel."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
from notify_test import (CONFIG, LARGEST, LARGEST_MARKUP, WAIT, Bus, Notifier, inject, make_tree,  # noqa: E402
                         no_episode,
                         subscribers_on_root, wait_cleared, wait_subscribed)

check = pt.check
SERVER = os.path.join(pt.BUILD_ROOT, 'tests', 'integration', 'notify-server')


class Server:
    """notify-server on @bus, recording to @log."""

    def __init__(self, bus, log):
        self.log = log
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=bus.address)
        self.proc = subprocess.Popen(pt.WRAPPER + [SERVER, log], env=env, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        check(line == 'ready', 'the notification server owns its name', line, self.proc.poll())

    def calls(self, method=None):
        try:
            with open(self.log) as f:
                out = [json.loads(x) for x in f]
        except FileNotFoundError:
            return []
        return [c for c in out if method is None or c['method'] == method]

    def wait_calls(self, method, n, what):
        return pt.wait_for(lambda: self.calls(method)[n - 1:] and self.calls(method), timeout=WAIT, what=what)

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait()
        self.proc.stdout.close()
        check(rc == 0, 'the notification server exits cleanly', rc)


def test_usage():
    for args, what in ((['--level', 'huge'], 'bad level'), (['--on-cleared', 'keep'], 'bad --on-cleared'),
                       (['--min-interval', '0'], 'zero interval'), (['--min-interval', '3601'], 'interval too long'),
                       (['--min-interval', 'soon'], 'interval not a number'), (['--cgroup', 'user.slice'], 'relative cgroup'),
                       (['--cgroup', '/a/../b'], 'cgroup with ..'), (['extra'], 'an argument'), (['--bogus'], 'unknown option')):
        res = pt.run_ctl('notify', *args)
        check(res.returncode == 2 and 'notify --help' in res.stderr, f'notify {what}: exit 2', res.returncode, res.stderr)
    res = pt.run_ctl('--json', 'notify')
    check(res.returncode == 2 and '--json needs --dry-run' in res.stderr, 'notify --json without --dry-run: exit 2',
          res.returncode, res.stderr)
    res = pt.run_ctl('notify', '--help')
    check(res.returncode == 0 and '--on-cleared' in res.stdout and '--min-interval' in res.stdout, 'notify --help', res.stdout)
    check(' notify ' in pt.run_ctl('--help').stdout, 'pressurectl --help lists notify')
    env = {k: v for k, v in os.environ.items() if k != 'XDG_RUNTIME_DIR'}
    res = subprocess.run([pt.PRESSURECTL, '--user', 'notify'], capture_output=True, text=True, timeout=WAIT, env=env)
    check(res.returncode == 2 and '--user: $XDG_RUNTIME_DIR is not set to an absolute path, so there is no '
          'per-user daemon to find' in res.stderr, 'notify --user without a runtime dir',
          res.returncode, res.stderr)
    # The bash completion knows the command, its options and their values.
    if pt.have_bash_completion('the completion of notify'):
        for words, want in ((['pressurectl', 'no'], 'notify'), (['pressurectl', 'notify', '--dr'], '--dry-run'),
                            (['pressurectl', 'notify', '--on-cleared', 'r'], 'replace')):
            got = pt.complete(words)
            check(got == [want], f'completion of {" ".join(words)!r}', got)


def refusing_daemon(path):
    """A varlink server in the daemon's place that ends every subscription:
    the cgroup /gone is removed right after "subscribed", the whole system
    is refused with PermissionDenied."""
    def respond(call):
        cgroup = call.get('parameters', {}).get('cgroup', '/')
        if cgroup != '/gone':
            return [{'error': 'io.pressured.PermissionDenied', 'parameters': {'reason': 'refused by the test'}}]
        sub = {'kind': 'subscribed', 'cgroup': cgroup, 'source': 'psi', 'adjusted': False, 'state': {},
               'trigger': {'psi': {'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000}}}
        return [{'parameters': {'event': sub}, 'continues': True},
                {'parameters': {'event': {'kind': 'removed', 'cgroup': cgroup}}}]
    return pt.FakeVarlinkServer(path, respond)


def test_nothing_left(tmp):
    """Both subscriptions end (one cgroup removed, the whole system refused): said, and exit 1."""
    path = os.path.join(tmp, 'refusing.sock')
    fake = refusing_daemon(path)
    try:
        res = subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, '--socket', path, 'notify', '--dry-run', '--cgroup', '/gone'],
                             capture_output=True, text=True, timeout=WAIT)
    finally:
        fake.close()
    check(res.returncode == 1, 'notify exits 1 when nothing is left to watch', res.returncode, res.stderr)
    for text in ('/gone is gone, no longer watching it',
                 'cannot watch the whole system: Permission denied: refused by the test; '
                 'use a cgroup delegated to your user, or try sudo.',
                 'nothing left to watch'):
        check(text in res.stderr, f'notify says {text!r}', res.stderr)
    check(res.stdout == '', 'nothing was shown', res.stdout)
    # --json: the refusal is one JSON object on stderr, naming the watch's cgroup.
    path = os.path.join(tmp, 'refusing-json.sock')
    fake = refusing_daemon(path)
    try:
        # (The global options after the command, as for every other command.)
        res = subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, 'notify', '--dry-run', '--json', '--socket', path,
                                           '--cgroup', '/gone'], capture_output=True, text=True, timeout=WAIT)
    finally:
        fake.close()
    # --json: nothing but JSON on stderr either: notices, then the refusal naming the watch's cgroup,
    # then the failure that ends notify, last.
    lines = [json.loads(line) for line in res.stderr.splitlines()]
    errors = [o for o in lines if 'error' in o]
    notices = [o['notice'] for o in lines if 'notice' in o]
    check(res.returncode == 1 and errors == [{'error': 'io.pressured.PermissionDenied',
                                             'parameters': {'reason': 'refused by the test'},
                                             'message': 'Permission denied: refused by the test; use a cgroup '
                                                        'delegated to your user, or try sudo.',
                                             'cgroup': '/'},
                                            {'error': 'pressurectl.Failed', 'parameters': {},
                                             'message': 'nothing left to watch'}] and lines[-1] == errors[-1],
          'notify --json reports the refusal and its end as JSON objects', res.returncode, res.stderr)
    check('notify: /gone is gone, no longer watching it' in notices and len(notices) + len(errors) == len(lines),
          'the notices as {"notice": ...}', lines)
    check(res.stdout == '', 'nothing was shown', res.stdout)


def session_or_fallback():
    """Where notify watches kills without --cgroup: its user@UID.service, or where that usually is."""
    uid = os.getuid()
    with open('/proc/self/cgroup') as f:
        for line in f.read().splitlines():
            _, _, path = line.partition('::') if line.startswith('0::') else ('', '', '')
            if f'/user@{uid}.service' in path:
                return path[:path.index(f'/user@{uid}.service') + len(f'/user@{uid}.service')]
    return f'/user.slice/user-{uid}.slice/user@{uid}.service'


class KillsDaemon(pt.FakeVarlinkServer):
    """A daemon whose pressure subscriptions are refused and whose kills
    subscription gets self.kills killed events (after subscribed) and stays
    open; with self.old, kills are refused as by a daemon before 0.3."""

    def __init__(self, path, kills=1, old=False):
        self.requests = []
        self.kills = kills
        self.old = old
        super().__init__(path, self.respond_to)

    def respond_to(self, call):
        p = call.get('parameters', {})
        self.requests.append(p)
        if not p.get('kills'):
            return [{'error': 'io.pressured.PermissionDenied', 'parameters': {'reason': 'refused by the test'}}]
        if self.old:
            return [{'error': 'org.varlink.service.InvalidParameter', 'parameters': {'parameter': 'kills'}}]
        cgroup = p.get('cgroup', '/')
        out = [{'parameters': {'event': {'kind': 'subscribed', 'cgroup': cgroup, 'source': 'kills', 'trigger': {},
                                         'adjusted': False, 'state': {'kill_sources': ['kernel', 'systemd-oomd']}}},
                'continues': True}]
        for i in range(self.kills):
            out.append({'parameters': {'event': {'kind': 'killed', 'cgroup': f'{cgroup}/app.slice/app-c{i}.scope',
                                                 'by': 'systemd-oomd', 'reason': 'memory-pressure', 'count': 1,
                                                 'seq': i + 1, 'missed': 0, 'time_us': 1, 'monotonic_us': 1}},
                        'continues': True})
        return out


def test_kills(tmp, bus):
    """Kills from a fake daemon, shown with --dry-run and on the bus."""
    session = session_or_fallback()
    scope = session + '/app.slice/app-c0.scope'
    fake = KillsDaemon(os.path.join(tmp, 'kills.sock'))
    n = Notifier(tmp, 'kills', fake.path, '--dry-run', '--min-interval', '1')
    try:
        n.wait_stderr(f'watching kills in {session} (by kernel, systemd-oomd)')
        pt.wait_for(lambda: n.stdout(), timeout=WAIT, what='the kill shown')
        check(n.stdout() == f'show id=1 cgroup={scope} urgency=normal summary="app-c0.scope was killed" '
                            f'body="systemd-oomd killed it: its memory pressure stayed over the limit.\\n{scope}"\n',
              'one notification: the scope, who killed it and why', n.stdout())
        check({'cgroup': session, 'kills': True} in fake.requests, 'kills subscribed on the session', fake.requests)
    finally:
        check(n.stop() == 0, 'exit 0 on SIGTERM', n.stderr())
        fake.close()

    # A storm: the first kill at once, the other 999 together after the interval, in one notification.
    # (All 1,000 arrive within the interval, so the second notification holds the rest and no third can come.)
    fake = KillsDaemon(os.path.join(tmp, 'storm.sock'), kills=1000)
    n = Notifier(tmp, 'kills-storm', fake.path, '--dry-run', '--min-interval', str(pt.scaled(2.0)), '--cgroup', '/s',
                 json_output=True)
    try:
        pt.wait_for(lambda: len(n.stdout().splitlines()) >= 2, timeout=WAIT, what='two notifications')
        shows = [json.loads(x) for x in n.stdout().splitlines()]
        check([o['summary'] for o in shows] == ['app-c0.scope was killed', '999 kills for lack of memory'],
              'one notification for the first kill, one for the 999 after it', shows)
        check(shows[1] == {'action': 'show', 'id': 2, 'cgroup': '/s', 'urgency': 'normal',
                           'summary': '999 kills for lack of memory',
                           'body': 'app-c1.scope, by systemd-oomd (memory-pressure)\n'
                                   'app-c2.scope, by systemd-oomd (memory-pressure)\n'
                                   'app-c3.scope, by systemd-oomd (memory-pressure)\nand 996 more'},
              'three named, the rest counted', shows[1])
        check({'cgroup': '/s', 'kills': True} in fake.requests, '--cgroup is where kills are watched', fake.requests)
    finally:
        check(n.stop() == 0, 'exit 0 on SIGTERM', n.stderr())
        fake.close()

    # --no-kills: no kills subscription; with the pressure ones refused, nothing is left.
    fake = KillsDaemon(os.path.join(tmp, 'nokills.sock'))
    try:
        res = subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, '--socket', fake.path, 'notify', '--dry-run', '--no-kills',
                                           '--cgroup', '/s'], capture_output=True, text=True, timeout=WAIT)
        check(res.returncode == 1 and 'nothing left to watch' in res.stderr, '--no-kills: nothing left', res.stderr)
        check(not any(r.get('kills') for r in fake.requests), 'no kills subscription', fake.requests)
    finally:
        fake.close()

    # A daemon before kills: said once, pressure goes on (here refused too, so notify ends).
    fake = KillsDaemon(os.path.join(tmp, 'old.sock'), old=True)
    try:
        res = subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, '--socket', fake.path, 'notify', '--dry-run',
                                           '--cgroup', '/s'], capture_output=True, text=True, timeout=WAIT)
        check(res.returncode == 1 and res.stderr.count('the daemon does not report kills') == 1,
              'a daemon without kills is said once', res.stderr)
    finally:
        fake.close()

    # On the bus: Notify with urgency normal, a new notification, not closed at exit.
    fake = KillsDaemon(os.path.join(tmp, 'bus.sock'))
    server = Server(bus, os.path.join(tmp, 'calls-kills.jsonl'))
    n = Notifier(tmp, 'kills-bus', fake.path, '--cgroup', '/s', bus=bus)
    try:
        calls = server.wait_calls('Notify', 1, 'the kill notified')
        check(calls[0]['summary'] == 'app-c0.scope was killed' and calls[0]['replaces_id'] == 0 and
              calls[0]['hints'] == {'urgency': 1} and calls[0]['app_name'] == 'pressured' and
              calls[0]['body'] == 'systemd-oomd killed it: its memory pressure stayed over the limit.\n'
                                  '/s/app.slice/app-c0.scope', 'the Notify call of a kill', calls)
    finally:
        check(n.stop() == 0, 'exit 0 on SIGTERM', n.stderr())
        fake.close()
        server.stop()
    check(server.calls('CloseNotification') == [], 'a kill stays on screen at exit', server.calls())


def test_kills_daemon(tmp):
    """The daemon's kernel kills in the session cgroup, on a fake tree and without a system bus."""
    session = session_or_fallback()
    fake = os.path.join(tmp, 'kills-v2')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/user.slice': {}, session: {},
                             session + '/app.slice': {}})
    events = os.path.join(fake, session.lstrip('/'), 'memory.events')
    with pt.Daemon(cgroup_root=fake, env={'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/no-bus'}) as d:
        n = Notifier(tmp, 'kills-daemon', d.socket, '--dry-run')
        try:
            n.wait_stderr(f'watching kills in {session} (by kernel)')
            # One write in place, as the kernel updates the file.
            fd = os.open(events, os.O_WRONLY)
            try:
                os.pwrite(fd, b'low 0\nhigh 0\nmax 0\noom 1\noom_kill 3\n', 0)
            finally:
                os.close(fd)
            name = session.rsplit('/', 1)[1]
            # Real pressure on the host may show its own notification on "/" first: only kills count here.
            kills = lambda: [x for x in n.stdout().splitlines() if ' was killed" ' in x]  # noqa: E731
            pt.wait_for(kills, timeout=WAIT, what='the kill shown')
            check(re.fullmatch(rf'show id=\d+ cgroup={re.escape(session)} urgency=normal '
                               rf'summary="{re.escape(name)} was killed" '
                               rf'body="The kernel\'s OOM killer killed 3 processes in it: out of memory\.\\n'
                               rf'{re.escape(session)}"', kills()[0]) and len(kills()) == 1,
                  'a kernel kill in the session, as notify shows it', n.stdout())
        finally:
            check(n.stop() == 0, 'exit 0 on SIGTERM', n.stderr())


def expect_session_message(n):
    """Without --cgroup: the session cgroup from /proc/self/cgroup, or a clear fallback."""
    uid = os.getuid()
    with open('/proc/self/cgroup') as f:
        lines = f.read().splitlines()
    mine = [ln for ln in lines if f'/user@{uid}.service' in ln]
    if mine:
        n.wait_stderr('watching /')
    else:
        n.wait_stderr(f'not running in a user@{uid}.service cgroup')
        n.wait_stderr('watching the whole system only')


def test_dry_run(tmp, d, root):
    # Text: show, then close when the episode clears; the session-cgroup fallback is said.
    n = Notifier(tmp, 'dry-text', d.socket, '--dry-run', '--cgroup-root', root, '--min-interval', '60')
    try:
        expect_session_message(n)
        wait_subscribed(d)
        inject(d, 'critical')
        pt.wait_for(lambda: 'close id=1' in n.stdout(), timeout=WAIT, what='dry-run close')
        lines = n.stdout().splitlines()
        check(len(lines) == 2 or all(x.startswith('update id=1 ') for x in lines[1:-1]), 'one show and one close',
              lines)
        check(lines[0].startswith('show id=1 cgroup=/ urgency=critical summary="Memory pressure: critical" '
                                  'body="The whole system, for '), 'the show line', lines[0])
        check(lines[0].endswith('\\n' + LARGEST + '"'),
              'the three largest children of / by memory.current', lines[0])
        check(lines[-1] == 'close id=1 cgroup=/', 'the close line', lines[-1])
    finally:
        check(n.stop() == 0, 'notify --dry-run exits 0 on SIGTERM', n.stderr())
    wait_cleared(d)
    pt.wait_for(lambda: subscribers_on_root(d) == 0, timeout=WAIT, what='the dry run to unsubscribe')

    # JSON, --on-cleared=replace, a level rising within the episode (subscribed
    # at low, which hears the levels above it).
    n = Notifier(tmp, 'dry-json', d.socket, '--dry-run', '--level', 'low', '--cgroup', '/', '--cgroup-root', root,
                 '--on-cleared=replace', '--min-interval', '60', json_output=True)
    try:
        wait_subscribed(d)
        inject(d, 'low')
        inject(d, 'medium')
        pt.wait_for(lambda: '"replace"' in n.stdout(), timeout=WAIT, what='dry-run replace')
        objs = [json.loads(x) for x in n.stdout().splitlines()]
        objs = objs[:2] + objs[-1:]  # a real event could add an update in between
        check([o['action'] for o in objs] == ['show', 'update', 'replace'], 'show, update, replace', objs)
        check([o['urgency'] for o in objs] == ['low', 'normal', 'low'], 'urgency per level, low for the note', objs)
        check(all(o['id'] == 1 for o in objs), 'one id for the episode', objs)
        check(objs[2]['summary'] == 'Memory pressure cleared' and
              objs[2]['body'].startswith('The whole system, after '), 'the cleared note', objs[2])
    finally:
        check(n.stop() == 0, 'notify --dry-run --json exits 0 on SIGTERM', n.stderr())
    wait_cleared(d)
    pt.wait_for(lambda: subscribers_on_root(d) == 0, timeout=WAIT, what='the dry run to unsubscribe')


def episode_calls(calls, first):
    """The Notify calls of the episode whose first call is @first."""
    out = []
    for c in calls:
        if c is first or (out and c['replaces_id'] == first['id']):
            out.append(c)
    return out


def main():
    pt.require_root('Inject is reserved to root')
    if not shutil.which('dbus-daemon'):
        pt.skip('dbus-daemon is not installed (Debian package dbus-daemon)')
    if not os.path.exists('/proc/pressure/memory'):
        pt.skip('no PSI (/proc/pressure/memory): the daemon cannot register on the whole system')
    test_usage()

    tmp = tempfile.mkdtemp(prefix='pressured-notify-')
    test_nothing_left(tmp)
    root = os.path.join(tmp, 'v2')
    make_tree(root)
    bus = Bus(tmp)
    d = pt.Daemon(cgroup_root=root, config_text=CONFIG)
    notifier = server = None
    try:
        test_kills(tmp, bus)
        test_kills_daemon(tmp)
        d.start()
        test_dry_run(tmp, d, root)

        # The notifier starts first and waits for the daemon.
        server = Server(bus, os.path.join(tmp, 'calls-1.jsonl'))
        d.stop()
        notifier = Notifier(tmp, 'notify', d.socket, '--level', 'low', '--cgroup', '/', '--cgroup-root', root,
                            '--min-interval', '1', bus=bus)
        d.start()
        wait_subscribed(d)

        # One episode rising low -> medium -> critical: one notification, updated in place.
        start = time.monotonic()
        for level in ('low', 'medium', 'critical'):
            inject(d, level)
        calls = server.wait_calls('Notify', 3, 'three Notify calls')[:3]
        first = calls[0]
        check([c['hints'].get('urgency') for c in calls] == [0, 1, 2], 'urgency hint: low 0, medium 1, critical 2',
              calls)
        check(first['replaces_id'] == 0 and all(c['replaces_id'] == first['id'] and c['id'] == first['id']
                                                for c in calls[1:]), 'updated in place through replaces_id', calls)
        check(first['app_name'] == 'pressured' and first['summary'] == 'Memory pressure: low' and
              first['body'].startswith('The whole system, for ') and
              first['body'].endswith('\n' + LARGEST_MARKUP) and
              first['actions'] == [] and first['expire_timeout'] == -1, 'what the first notification says', first)
        check(calls[2]['summary'] == 'Memory pressure: critical', 'the update says critical', calls[2])
        check(server.calls('GetCapabilities'), 'the server was asked whether it reads markup', server.calls())
        closes = server.wait_calls('CloseNotification', 1, 'CloseNotification on cleared')
        check(closes == [{'method': 'CloseNotification', 'id': first['id'], 'known': True}],
              'the episode\'s notification is closed when it clears', closes)
        # Only a real event joining the episode could add updates, one per second at most.
        more = server.calls('Notify')[3:]
        check(len(more) <= math.ceil(time.monotonic() - start) and
              all(c['replaces_id'] == first['id'] and c['hints'] == {'urgency': 2} for c in more),
              'nothing else shown for the episode', server.calls('Notify'))
        check(notifier.stop() == 0, 'notify exits 0 on SIGTERM', notifier.stderr())
        check([c['id'] for c in server.calls('CloseNotification')] == sorted({c['id'] for c in server.calls('Notify')}),
              'each notification closed once, nothing left on screen at exit', server.calls())
        wait_cleared(d)

        # 1,000 events in one episode: Notify calls bounded by the rate limit; the cleared note replaces it.
        interval = 1.0
        notifier = Notifier(tmp, 'storm', d.socket, '--cgroup', '/', '--cgroup-root', root,
                            '--min-interval', str(interval), '--on-cleared', 'replace', bus=bus)
        wait_subscribed(d)
        before = len(server.calls('Notify'))
        start = time.monotonic()
        v = pt.Varlink(d.socket, timeout=WAIT)
        delivered = 0
        try:
            for _ in range(1000):
                delivered += v.call_sync('io.pressured.Inject', {'level': 'critical'})['parameters']['delivered']
        finally:
            v.close()
        # A notifier slower than the burst loses some (its queue in the daemon is bounded); most arrive.
        check(delivered >= 1, 'the injections reached the notifier', delivered)
        pt.wait_for(lambda: any(c['summary'] == 'Memory pressure cleared' for c in server.calls('Notify')),
                    timeout=WAIT, what='the cleared note')
        elapsed = time.monotonic() - start
        storm = server.calls('Notify')[before:]
        first = storm[0]
        check(first['replaces_id'] == 0 and first['hints'] == {'urgency': 2}, 'the storm\'s first notification', first)
        check(episode_calls(storm, first) == storm, 'every call of the episode replaces its notification', storm)
        # The show, one update per interval at most, the note.
        bound = 1 + math.ceil(elapsed / interval) + 1
        print(f'1000 injected events ({delivered} delivered) in {elapsed:.2f} s: {len(storm)} Notify calls '
              f'(bound {bound})', flush=True)
        check(2 <= len(storm) <= bound, 'no notification storm', len(storm), bound)
        note = storm[-1]
        check(note['summary'] == 'Memory pressure cleared' and note['hints'] == {'urgency': 0} and
              note['expire_timeout'] == 5000 and note['body'].startswith('The whole system, after '),
              'the short cleared note', note)
        check(not server.calls('CloseNotification')[1:], 'replace, not close', server.calls('CloseNotification'))
        wait_cleared(d)

        # The server goes away: logged, no crash; a later episode reaches the new server.
        server.stop()
        inject(d, 'medium')
        notifier.wait_stderr('cannot show a notification: org.freedesktop.DBus.Error.ServiceUnknown')
        check(notifier.proc.poll() is None, 'notify keeps running without a server', notifier.stderr())
        wait_cleared(d)
        server = Server(bus, os.path.join(tmp, 'calls-2.jsonl'))
        inject(d, 'medium')
        calls = server.wait_calls('Notify', 1, 'a notification on the new server')
        check(calls[0]['replaces_id'] == 0 and calls[0]['hints'] == {'urgency': 1}, 'a fresh notification', calls)
        notifier.wait_stderr('notifications work again')
        pt.wait_for(lambda: any(c['summary'] == 'Memory pressure cleared' for c in server.calls('Notify')),
                    timeout=WAIT, what='the cleared note on the new server')
        wait_cleared(d)

        # The daemon restarts: the notifier subscribes again and goes on.
        d.write_config(CONFIG.replace('ClearAfterSec=1', 'ClearAfterSec=600'))
        d.stop()
        d.start()
        notifier.wait_stderr('reconnected to the daemon')
        wait_subscribed(d)
        before = len(server.calls('Notify'))
        inject(d, 'critical')
        calls = server.wait_calls('Notify', before + 1, 'a notification after the daemon restarted')
        shown = calls[before]
        check(shown['replaces_id'] == 0 and shown['hints'] == {'urgency': 2}, 'shown after the restart', calls)

        # SIGTERM while it is on screen (the restarted daemon's long hold keeps the episode going): closed, exit 0.
        check(not no_episode(d), 'the episode goes on', d.status())
        check(notifier.stop() == 0, 'notify exits 0 on SIGTERM', notifier.stderr())
        closes = server.calls('CloseNotification')
        check(closes and closes[-1]['id'] == shown['id'], 'what is on screen is closed at exit', server.calls())
        notifier = None

        # No session bus at all: said once, no crash.
        notifier = Notifier(tmp, 'nobus', d.socket, '--cgroup', '/', '--cgroup-root', root,
                            env={'DBUS_SESSION_BUS_ADDRESS': 'unix:path=' + os.path.join(tmp, 'no-bus'),
                                 'XDG_RUNTIME_DIR': tmp})
        wait_subscribed(d)
        inject(d, 'critical')
        notifier.wait_stderr('cannot connect to the session bus')
        check(notifier.proc.poll() is None, 'notify keeps running without a bus', notifier.stderr())
        check(notifier.stop() == 0, 'notify without a bus exits 0 on SIGTERM', notifier.stderr())
        notifier = None

        # A cgroup the daemon does not know: said, and the whole system is still watched.
        notifier = Notifier(tmp, 'nosuch', d.socket, '--cgroup', '/no-such-cgroup', '--dry-run', bus=bus)
        notifier.wait_stderr('cannot watch /no-such-cgroup: No cgroup /no-such-cgroup: it does not exist')
        notifier.wait_stderr('watching the whole system')
        check(notifier.proc.poll() is None, 'notify goes on with the whole system', notifier.stderr())
        check(notifier.stop() == 0, 'exit 0', notifier.stderr())
        notifier = None
    finally:
        if notifier:
            notifier.stop()
            sys.stderr.write(f'--- notify stderr ---\n{notifier.stderr()}\n')
        if server and server.proc.poll() is None:
            server.stop()
        d.__exit__(*sys.exc_info())
        bus.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
