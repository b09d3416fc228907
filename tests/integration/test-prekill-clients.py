#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Warnings before a kill in every client, against a fake daemon 0.5 that
sends prekill events on kills streams and level streams and takes
AcknowledgePrekill calls (pt.FakeVarlinkServer; the stream waits for the
acknowledgement, or the warning's deadline, before the kill follows):

- pressurectl watch --kills and watch --levels: the prekill line (time,
  "prekill", cgroup, "by systemd-oomd", the time left), --json as sent,
  and the acknowledgement at once; with --exec CMD the run with
  PRESSURE_KIND=prekill and PRESSURE_DEADLINE_US, acknowledged when it
  exits (after what it saved), or at the deadline with CMD terminated, or
  at an --exec-timeout that comes first; an acknowledgement the daemon
  refuses (NoSuchPrekill), a daemon gone at that moment and one before 0.5
  (MethodNotFound) are said and the watch goes on, and NoSuchPrekill past
  the deadline goes unsaid;
- pressurectl notify: a critical notification naming the unit, the
  acknowledgement, the kill replacing it; one whose kill does not come is
  closed;
- pressurectl top: acknowledged at once (it has nothing to save);
- pressurectl status: the counters, and nothing from a daemon before 0.5;
- libpressure (tests/integration/prekill-probe.c): a kills subscription
  acknowledging blocking and asynchronously, the errors of each, and a
  monitor that acknowledges after work of its own on its loop;
- the Python module: PrekillEvent and acknowledge() blocking and asyncio,
  once; watch_levels() yields it, or acknowledges by itself with
  prekill=False; the errors as exceptions; Status.prekill.
"""
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402
import notify_test  # noqa: E402

MODULE_DIR = os.path.join(pt.BUILD_ROOT, 'client', 'python')
if not any(os.path.abspath(p) == os.path.abspath(MODULE_DIR) for p in sys.path):
    sys.path.insert(0, MODULE_DIR)
import pressured  # noqa: E402

check, check_eq = pt.check, pt.check_eq
WAIT = pt.scaled(20.0)
PROBE = os.path.join(pt.BUILD_ROOT, 'tests', 'integration', 'prekill-probe')
VICTIM = '/app.slice/app.service'
# 2026-12-01 21:40:03 UTC.
T0 = 1796161203 * 1000000
UTC = {'TZ': 'UTC'}
LINE = re.compile(r'2026-12-01 21:40:03  prekill  /app\.slice/app\.service  by systemd-oomd '
                  r'\(deadline in (\d+)\.(\d{3})s\)$')


def now_us():
    return time.monotonic_ns() // 1000


def stream(events):
    return [{'parameters': {'event': e}, 'continues': e['kind'] != 'removed'} for e in events]


class Fake(pt.FakeVarlinkServer):
    """A daemon 0.5 as far as warnings go. A kills or level stream sends its
    first event, then each warning of self.warnings (id, seconds to the
    deadline, cgroup[, False for no kill after it]), each followed by the
    kill of its cgroup once an AcknowledgePrekill of it arrived or its
    deadline passed, then "removed" (with self.hold, the stream stays open
    until close() instead). AcknowledgePrekill is recorded (id, CLOCK_MONOTONIC
    microseconds, whether self.saved existed then) and answered as
    self.mode says: "ok" ({}, NoSuchPrekill past the deadline, as the
    daemon does), "no-such", "gone" (hang up), "old" (MethodNotFound)."""

    def __init__(self, path, warnings=((41, 20.0, VICTIM),)):
        self.warnings = list(warnings)
        self.mode = 'ok'
        self.extra = []  # events sent right after the first
        self.hold = False
        self.closing = threading.Event()
        self.saved = None
        self.status = {}
        self.requests = []
        self.acks = []
        self.deadlines = {}
        self.cond = threading.Condition()
        super().__init__(path, self.answer)

    def acked(self, id):
        return any(a[0] == id for a in self.acks)

    def acknowledge(self, params):
        id = params.get('id')
        with self.cond:
            self.acks.append((id, now_us(), bool(self.saved and os.path.exists(self.saved))))
            self.cond.notify_all()
        if self.mode == 'gone':
            return None
        if self.mode == 'old':
            return [{'error': 'org.varlink.service.MethodNotFound',
                     'parameters': {'method': 'io.pressured.AcknowledgePrekill'}}]
        if self.mode == 'no-such' or now_us() >= self.deadlines.get(id, 0):
            return [{'error': 'io.pressured.NoSuchPrekill', 'parameters': {'id': id}}]
        return [{'parameters': {}}]

    def warning(self, id, seconds, cgroup, seq):
        deadline = now_us() + int(seconds * 1000000)
        self.deadlines[id] = deadline
        return {'kind': 'prekill', 'cgroup': cgroup, 'by': 'systemd-oomd', 'id': id, 'deadline_us': deadline,
                'seq': seq, 'missed': 0, 'time_us': T0, 'monotonic_us': now_us()}

    def events(self, first, cgroup):
        """The stream: @first, each warning and (on a kills stream) its kill, "removed"."""
        yield stream([first] + self.extra)
        seq = 1
        for id, seconds, victim, *kill in self.warnings:
            yield stream([self.warning(id, seconds, victim, seq)])
            end = time.monotonic() + min(max(seconds, 0), WAIT) + 1
            with self.cond:
                self.cond.wait_for(lambda: self.acked(id), timeout=max(end - time.monotonic(), 0))
            if kill == [False] or first['kind'] != 'subscribed':
                continue
            yield stream([{'kind': 'killed', 'cgroup': victim, 'by': 'systemd-oomd', 'reason': 'memory-pressure',
                           'count': 1, 'seq': seq + 1, 'missed': 0, 'time_us': T0 + 1, 'monotonic_us': now_us()}])
            seq += 2
        if self.hold:
            self.closing.wait()
            return
        yield stream([{'kind': 'removed', 'cgroup': cgroup, 'seq': seq}])

    def close(self):
        self.closing.set()
        super().close()

    def answer(self, call):
        method, params = call.get('method'), call.get('parameters', {})
        self.requests.append(call)
        if method == 'io.pressured.AcknowledgePrekill':
            return self.acknowledge(params)
        if method == 'io.pressured.GetStatus':
            return [{'parameters': self.status}]
        cgroup = params.get('cgroup', '/')
        if method == 'io.pressured.Subscribe' and params.get('kills'):
            return self.events({'kind': 'subscribed', 'cgroup': cgroup, 'source': 'kills', 'resource': 'memory',
                                'trigger': {}, 'adjusted': False, 'state': {'kill_sources': ['systemd-oomd']}},
                               cgroup)
        if method == 'io.pressured.Subscribe' and params.get('levels'):
            return self.events({'kind': 'level', 'cgroup': cgroup, 'level': 'normal', 'headroom_bytes': 1 << 30,
                                'reclaim_target_bytes': 0, 'seq': 1, 'missed': 0, 'time_us': T0,
                                'monotonic_us': now_us()}, cgroup)
        if method == 'io.pressured.Subscribe':
            return [{'error': 'io.pressured.PermissionDenied', 'parameters': {'reason': 'refused by the test'}}]
        return [{'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': method}}]


def fake(tmp, name, **kw):
    return Fake(os.path.join(tmp, name + '.sock'), **kw)


def ctl(*args, socket, env=None, timeout=WAIT):
    """pressurectl --socket SOCKET ARGS..., under the tests' wrapper (valgrind) if there is one."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(pt.WRAPPER + [pt.PRESSURECTL, '--socket', socket] + list(args), capture_output=True,
                          text=True, env=e, timeout=timeout)


def expect(res, code, what):
    check(res.returncode == code, f'{what}: exit {res.returncode}, expected {code}', res.stdout, res.stderr)
    return res


def check_prekill_line(line, seconds, what):
    m = LINE.match(line)
    check(m, f'{what}: time, "prekill", cgroup, by whom, the time left', line)
    left = int(m.group(1)) + int(m.group(2)) / 1000
    check(0 < left <= seconds, f'{what}: the deadline is at most {seconds} s ahead', line)


# ---- pressurectl watch ----

def test_watch_kills(tmp):
    f = fake(tmp, 'watch')
    try:
        res = expect(ctl('watch', '--kills', '/app.slice', socket=f.path, env=UTC, timeout=WAIT), 0,
                     'watch --kills')
        lines = res.stdout.splitlines()
        check(len(lines) == 4 and lines[3].endswith(' /app.slice removed'), 'the header, the warning, the kill, the end',
              lines)
        check_prekill_line(lines[1], 20.0, 'watch --kills')
        check(lines[2] == f'2026-12-01 21:40:03  killed  {VICTIM}  by systemd-oomd (memory-pressure)',
              'the kill after it', lines)
        check([a[0] for a in f.acks] == [41], 'acknowledged once, at once', f.acks)
        check(f.acks[0][1] < f.deadlines[41], 'before the deadline', f.acks)
        check(res.stderr == '', 'nothing to say', res.stderr)
        ack = [r for r in f.requests if r.get('method') == 'io.pressured.AcknowledgePrekill']
        check(ack == [{'method': 'io.pressured.AcknowledgePrekill', 'parameters': {'id': 41}}],
              'AcknowledgePrekill with the warning\'s id', ack)

        f.acks.clear()
        res = expect(ctl('--json', 'watch', '--kills', '/app.slice', socket=f.path, timeout=WAIT), 0,
                     'watch --kills --json')
        events = [json.loads(x) for x in res.stdout.splitlines()]
        check([e['kind'] for e in events] == ['subscribed', 'prekill', 'killed', 'removed'], '--json: every event',
              events)
        check(events[1] == {'kind': 'prekill', 'cgroup': VICTIM, 'by': 'systemd-oomd', 'id': 41,
                            'deadline_us': f.deadlines[41], 'seq': 1, 'missed': 0, 'time_us': T0,
                            'monotonic_us': events[1]['monotonic_us']}, '--json: the daemon\'s object', events[1])
        check([a[0] for a in f.acks] == [41], '--json: acknowledged', f.acks)

        # --count counts the warning as an event.
        f.acks.clear()
        res = expect(ctl('watch', '--kills', '--count', '1', socket=f.path, env=UTC, timeout=WAIT), 0,
                     '--count 1')
        check(len(res.stdout.splitlines()) == 2 and [a[0] for a in f.acks] == [41], '--count 1 ends at the warning',
              res.stdout, f.acks)
    finally:
        f.close()


def test_watch_levels(tmp):
    f = fake(tmp, 'levels')
    # A kind of a later daemon: not shown, and the stream goes on.
    f.extra = [{'kind': 'from_the_future', 'cgroup': '/app.slice', 'seq': 2}]
    try:
        res = expect(ctl('watch', '--levels', '/app.slice', socket=f.path, env=UTC, timeout=WAIT), 0,
                     'watch --levels')
        lines = res.stdout.splitlines()
        check(len(lines) == 3 and ' normal ' in lines[0] and lines[2].endswith('removed'),
              'the level, the warning, the end', lines)
        check_prekill_line(lines[1], 20.0, 'watch --levels')
        check([a[0] for a in f.acks] == [41], 'acknowledged at once', f.acks)

        f.acks.clear()
        res = expect(ctl('--json', 'watch', '--levels', '/app.slice', socket=f.path, timeout=WAIT), 0,
                     'watch --levels --json')
        kinds = [json.loads(x)['kind'] for x in res.stdout.splitlines()]
        check(kinds == ['level', 'prekill', 'removed'], '--json: the warning as sent', kinds)
        check(json.loads(res.stdout.splitlines()[1])['id'] == 41, '--json: with its id', res.stdout)

        f.acks.clear()
        out = os.path.join(tmp, 'levels-env')
        res = expect(ctl('watch', '--levels', '/app.slice', '--exec', 'sh', '-c',
                                f'{{ {DUMP} }} > {out}.$PRESSURE_KIND', socket=f.path,
                                timeout=WAIT), 0, 'watch --levels --exec')
        env = hook_env(out + '.prekill')
        check(env['PRESSURE_KIND'] == 'prekill' and env['PRESSURE_DEADLINE_US'] == str(f.deadlines[41])
              and env['PRESSURE_CGROUP'] == VICTIM, '--levels --exec: a run for the warning', env)
        check('PRESSURE_DEADLINE_US' not in hook_env(out + '.level'), 'a level\'s run has no deadline',
              hook_env(out + '.level'))
        check([a[0] for a in f.acks] == [41], '--levels --exec: acknowledged after the run', f.acks)
    finally:
        f.close()


# A hook's line of what it got, with the shell's builtins only (under valgrind, every program the hook runs
# is checked too): each variable that is set, as NAME=VALUE.
DUMP = ' '.join(f'[ -n "${{{v}+x}}" ] && printf "%s\\n" "{v}=${v}";' for v in (
    'PRESSURE_KIND', 'PRESSURE_LEVEL', 'PRESSURE_CGROUP', 'PRESSURE_SOURCE', 'PRESSURE_SEQ', 'PRESSURE_MISSED',
    'PRESSURE_SYNTHETIC', 'PRESSURE_EVENT', 'PRESSURE_COALESCED', 'PRESSURE_DEADLINE_US')) + ' :;'


def hook_env(path):
    with open(path) as fh:
        return dict(line.rstrip('\n').split('=', 1) for line in fh if '=' in line)


def test_exec(tmp):
    f = fake(tmp, 'exec')
    saved = os.path.join(tmp, 'saved')
    f.saved = saved
    out = os.path.join(tmp, 'exec-env')
    try:
        # The hook saves its state (slowly) and exits: the acknowledgement comes after, with the file there.
        script = (f'{{ {DUMP} }} > {out}.$PRESSURE_KIND; '
                  f'if [ "$PRESSURE_KIND" = prekill ]; then sleep 0.3; echo state > {saved}; fi')
        res = expect(ctl('watch', '--kills', '/app.slice', '--exec', 'sh', '-c', script, socket=f.path,
                                timeout=WAIT), 0, 'watch --kills --exec')
        env = hook_env(out + '.prekill')
        event = json.loads(env['PRESSURE_EVENT'])
        check(env['PRESSURE_KIND'] == 'prekill' and env['PRESSURE_DEADLINE_US'] == str(f.deadlines[41])
              and env['PRESSURE_CGROUP'] == VICTIM and env['PRESSURE_SEQ'] == '1' and env['PRESSURE_MISSED'] == '0'
              and env['PRESSURE_COALESCED'] == '1' and env['PRESSURE_LEVEL'] == '' and env['PRESSURE_SOURCE'] == ''
              and env['PRESSURE_SYNTHETIC'] == '0', 'the warning\'s variables', env)
        check(event['kind'] == 'prekill' and event['id'] == 41, '$PRESSURE_EVENT: the event', event)
        killed = hook_env(out + '.killed')
        check('PRESSURE_DEADLINE_US' not in killed and killed['PRESSURE_SOURCE'] == 'kills',
              'the kill\'s run after it, without a deadline', killed)
        check(f.acks == [(41, f.acks[0][1], True)], 'acknowledged once CMD exited, after what it saved', f.acks)
        check(res.stderr == '', 'a run that ended well is not reported', res.stderr)
    finally:
        f.close()


def test_exec_deadline(tmp):
    seconds = pt.scaled(1.5)
    f = fake(tmp, 'deadline', warnings=((42, seconds, VICTIM),))
    try:
        start = now_us()
        res = expect(ctl('watch', '--kills', '/app.slice', '--exec', 'sh', '-c',
                                '[ "$PRESSURE_KIND" = prekill ] && exec sleep 60; :', socket=f.path,
                                timeout=WAIT + seconds), 0, 'a hook past the deadline')
        check(len(f.acks) == 1 and f.acks[0][0] == 42 and f.acks[0][1] >= f.deadlines[42],
              'acknowledged at the deadline', f.acks, f.deadlines, start)
        check("(warning 42) is still running at the warning's deadline, sending SIGTERM" in res.stderr
              and '(warning 42) was killed by signal SIGTERM' in res.stderr, 'CMD terminated at the deadline',
              res.stderr)
        check('cannot acknowledge' not in res.stderr, 'NoSuchPrekill past the deadline goes unsaid', res.stderr)

        # An --exec-timeout before the deadline: terminated and acknowledged then.
        f.warnings = [(43, 20.0, VICTIM)]
        f.acks.clear()
        res = expect(ctl('watch', '--kills', '/app.slice', '--exec-timeout', '0.5', '--exec', 'sh', '-c',
                                '[ "$PRESSURE_KIND" = prekill ] && exec sleep 60; :', socket=f.path,
                                timeout=WAIT), 0, '--exec-timeout before the deadline')
        check([a[0] for a in f.acks] == [43] and f.acks[0][1] < f.deadlines[43],
              'acknowledged at the timeout, before the deadline', f.acks)
        check('(warning 43) ran over its 0.5 s timeout, sending SIGTERM' in res.stderr, 'the timeout said',
              res.stderr)
        check('cannot acknowledge' not in res.stderr, 'the acknowledgement taken', res.stderr)

        # A warning that comes after its deadline is not run for.
        f.warnings = [(44, -1.0, VICTIM)]
        res = expect(ctl('watch', '--kills', '/app.slice', '--exec', 'touch', os.path.join(tmp, 'ran'),
                                socket=f.path, timeout=WAIT), 0, 'a late warning')
        check('warning 44 came after its deadline' in res.stderr, 'said', res.stderr)
    finally:
        f.close()


def test_ack_errors(tmp):
    f = fake(tmp, 'errors')
    try:
        for mode, said in (('no-such', 'cannot acknowledge warning 41: No such warning before a kill: 41'),
                           ('gone', 'cannot acknowledge warning 41: Connection reset by peer'),
                           ('old', 'cannot acknowledge warning 41: Method not found: '
                                   'io.pressured.AcknowledgePrekill')):
            f.mode = mode
            f.acks.clear()
            res = expect(ctl('watch', '--kills', '/app.slice', socket=f.path, env=UTC, timeout=WAIT), 0,
                         f'watch --kills, acknowledgement {mode}')
            check(f'pressurectl: {said}' in res.stderr.splitlines(), f'{mode}: said', res.stderr)
            check(len(res.stdout.splitlines()) == 4, f'{mode}: the watch goes on to the kill', res.stdout)
        f.mode = 'no-such'
        res = expect(ctl('--json', 'watch', '--kills', socket=f.path, timeout=WAIT), 0, 'in JSON')
        notice = json.loads(res.stderr.splitlines()[0])
        check(notice == {'notice': 'cannot acknowledge warning 41: No such warning before a kill: 41'},
              '--json: a notice object', res.stderr)
    finally:
        f.close()


# ---- pressurectl notify, status ----

def test_notify(tmp):
    # The first warning's kill comes and replaces it; the second's does not, and it is closed once its
    # linger after the deadline is over (that deadline was 61 s ago: at once).
    f = fake(tmp, 'notify', warnings=((45, 20.0, '/s/app.slice/app.service'),
                                      (46, -61.0, '/s/app.slice/gone.service', False)))
    f.hold = True
    n = notify_test.Notifier(tmp, 'notify', f.path, '--dry-run', '--cgroup', '/s', json_output=True)
    try:
        pt.wait_for(lambda: len(n.stdout().splitlines()) >= 4, timeout=WAIT, what='four notification actions')
        actions = [json.loads(x) for x in n.stdout().splitlines()]
        check(actions[0] == {'action': 'show', 'id': 1, 'cgroup': '/s/app.slice/app.service', 'urgency': 'critical',
                             'summary': 'app.service will be killed by systemd-oomd',
                             'body': 'systemd-oomd is about to kill it to free memory: save your work in it now.\n'
                                     '/s/app.slice/app.service'}, 'the warning: critical, naming the unit',
              actions)
        check(actions[1] == {'action': 'replace', 'id': 1, 'cgroup': '/s/app.slice/app.service', 'urgency': 'normal',
                             'summary': 'app.service was killed',
                             'body': 'systemd-oomd killed it: its memory pressure stayed over the limit.\n'
                                     '/s/app.slice/app.service'}, 'the kill replaces it', actions)
        check(actions[2]['action'] == 'show' and actions[2]['id'] == 2 and actions[2]['urgency'] == 'critical'
              and actions[2]['summary'] == 'gone.service will be killed by systemd-oomd', 'the second warning',
              actions)
        check(actions[3] == {'action': 'close', 'id': 2, 'cgroup': '/s/app.slice/gone.service'},
              'closed: no kill came', actions)
        check([a[0] for a in f.acks] == [45, 46], 'each acknowledged once shown', f.acks)
        check('cannot acknowledge' not in n.stderr(), 'NoSuchPrekill past the deadline goes unsaid', n.stderr())
    finally:
        check(n.stop() == 0, 'exit 0 on SIGTERM', n.stderr())
        f.close()


def test_top(tmp):
    """top's whole-system kills subscription gets the warning: top has nothing to save and acknowledges at once."""
    f = fake(tmp, 'top')
    f.hold = True
    root = os.path.join(tmp, 'top-root')
    os.makedirs(root)
    try:
        res = expect(ctl('top', '--json', '--iterations', '3', '-d', '0.5', '--no-protection', '--cgroup-root', root,
                         socket=f.path), 0, 'top')
        check([a[0] for a in f.acks] == [41] and f.acks[0][1] < f.deadlines[41], 'top: acknowledged at once',
              f.acks)
        check(json.loads(res.stdout.splitlines()[-1])['daemon']['kill_sources'] == ['systemd-oomd'],
              'top goes on with its kills subscription', res.stdout)
    finally:
        f.close()


def test_status(tmp):
    f = fake(tmp, 'status')
    try:
        f.status = {'version': '0.5.0', 'uptime_us': 1, 'clients': 1, 'subscriptions': 0, 'registrations': [],
                    'counters': {}, 'prekill': {'warned': 3, 'acknowledged': 2, 'deadline_reached': 1, 'pending': 0}}
        res = expect(ctl('status', socket=f.path), 0, 'status')
        check('Warnings before a kill: 3 warned, 2 acknowledged, 1 deadline reached, 0 pending' in res.stdout,
              'status: the counters', res.stdout)
        res = expect(ctl('--json', 'status', socket=f.path), 0, 'status --json')
        check(json.loads(res.stdout)['prekill'] == f.status['prekill'], '--json: passed through', res.stdout)
        del f.status['prekill']
        res = expect(ctl('status', socket=f.path), 0, 'status of a daemon before 0.5')
        check('Warnings before a kill' not in res.stdout, 'nothing from a daemon that does not count', res.stdout)
    finally:
        f.close()


# ---- libpressure ----

def probe(f, mode, saved=None):
    env = dict(os.environ, PRESSURED_SOCKET=f.path)
    if saved:
        env['PREKILL_SAVE'] = saved
    res = subprocess.run(pt.WRAPPER + [PROBE, mode, '/app.slice'], capture_output=True, text=True, env=env,
                         timeout=WAIT)
    return res.returncode, res.stdout.splitlines()


def test_libpressure(tmp):
    f = fake(tmp, 'probe')
    saved = os.path.join(tmp, 'probe-saved')
    f.saved = saved
    try:
        for mode in ('sync', 'async'):
            f.acks.clear()
            if os.path.exists(saved):
                os.unlink(saved)
            rc, lines = probe(f, mode, saved)
            check(rc == 0, f'{mode}: ends at removed', lines)
            check(lines[0] == 'subscribed' and lines[1] == f'prekill {VICTIM} id=41 deadline={f.deadlines[41]} '
                  'by=systemd-oomd' and lines[2] == 'saved 41' and 'acknowledged 41' in lines
                  and f'killed {VICTIM} by=systemd-oomd reason=memory-pressure' in lines and 'removed' in lines,
                  f'{mode}: the warning, saved, acknowledged, the kill', lines)
            check(f.acks == [(41, f.acks[0][1], True)], f'{mode}: acknowledged after saving', f.acks)
        for mode, errno_, name in (('no-such', -3, 'io.pressured.NoSuchPrekill'), ('gone', -104, '-'),
                                   ('old', -6, 'org.varlink.service.MethodNotFound')):
            f.mode = mode
            for how in ('sync', 'async'):
                rc, lines = probe(f, how)
                check(rc == 0 and f'ack-failed 41 {errno_} {name}' in lines,
                      f'{how}: acknowledgement {mode}: -{errno_} {name}, the stream goes on', lines)
        f.mode = 'ok'

        # The monitor: the handler puts the acknowledgement off; the loop saves, then acknowledges.
        f.acks.clear()
        os.unlink(saved)
        rc, lines = probe(f, 'monitor', saved)
        check(rc == 0 and lines[0] == 'level normal'
              and lines[1] == f'prekill {VICTIM} id=41 deadline={f.deadlines[41]} by=systemd-oomd'
              and lines[2:4] == ['saved 41', 'acknowledged 41'] and lines[-1] == 'removed',
              'monitor: the warning, later saved and acknowledged', lines)
        check(f.acks == [(41, f.acks[0][1], True)], 'monitor: acknowledged once, after saving', f.acks)
    finally:
        f.close()


# ---- Python ----

def test_python(tmp):
    f = fake(tmp, 'python')
    try:
        c = pressured.Client(f.path)
        with c.subscribe('/app.slice', kills=True) as sub:
            kinds = []
            for ev in sub:
                kinds.append(ev.kind)
                if isinstance(ev, pressured.PrekillEvent):
                    check(ev.cgroup == VICTIM and ev.by == 'systemd-oomd' and ev.id == 41
                          and ev.deadline_us == f.deadlines[41] and ev.seq == 1, 'PrekillEvent', ev)
                    ev.acknowledge()
                    ev.acknowledge()
            check(kinds == ['subscribed', 'prekill', 'killed', 'removed'], 'the kills stream', kinds)
        check([a[0] for a in f.acks] == [41], 'acknowledge(): once, a second call does nothing', f.acks)

        f.acks.clear()
        f.warnings = [(41, pt.scaled(0.5), VICTIM)]
        with pressured.watch_levels('/app.slice', socket=f.path) as w:
            got = list(w)
        check([type(e) for e in got] == [pressured.LevelEvent, pressured.PrekillEvent],
              'watch_levels(): the level and the warning', got)
        check(f.acks == [], 'not acknowledged unless asked', f.acks)
        f.warnings = [(41, 20.0, VICTIM)]
        with pressured.watch_levels('/app.slice', socket=f.path, prekill=False) as w:
            got = list(w)
        check([type(e) for e in got] == [pressured.LevelEvent] and [a[0] for a in f.acks] == [41],
              'prekill=False: the levels only, the warning acknowledged by itself', got, f.acks)

        for mode, cls in (('no-such', pressured.NoSuchPrekill), ('old', pressured.MethodNotFound),
                          ('gone', pressured.ConnectionLost)):
            f.mode = mode
            with c.subscribe('/app.slice', kills=True) as sub:
                ev = [e for e in (next(sub), next(sub)) if isinstance(e, pressured.PrekillEvent)][0]
                try:
                    ev.acknowledge()
                    raise AssertionError(f'{mode}: acknowledge() raised nothing')
                except pressured.PressuredError as e:
                    check(type(e) is cls, f'{mode}: {cls.__name__}', e)
                    if cls is pressured.NoSuchPrekill:
                        check(e.id == 41 and isinstance(e, pressured.VarlinkError), 'NoSuchPrekill.id', e)
        f.mode = 'ok'
        check(pressured.NoSuchPrekill('io.pressured.NoSuchPrekill', {'id': 7}).id == 7, 'the id as an attribute', None)
        try:
            pressured.parse_event(f.warning(9, 1, VICTIM, 1)).acknowledge()
            raise AssertionError('acknowledge() of a parsed event did something')
        except ValueError:
            pass
        f.status = {'version': '0.5.0', 'prekill': {'warned': 1, 'acknowledged': 1, 'deadline_reached': 0,
                                                    'pending': 0}}
        st = c.get_status()
        check(st.prekill == pressured.PrekillStatus(warned=1, acknowledged=1, deadline_reached=0, pending=0),
              'Status.prekill', st)
        f.status = {'version': '0.4.0'}
        check(c.get_status().prekill is None, 'None from a daemon before 0.5', None)
        c.close()
        asyncio.run(python_async(f))
    finally:
        f.close()


async def python_async(f):
    f.acks.clear()
    async with pressured.AsyncClient(f.path) as ac:
        async with ac.subscribe('/app.slice', kills=True) as sub:
            kinds = []
            async for ev in sub:
                kinds.append(ev.kind)
                if isinstance(ev, pressured.PrekillEvent):
                    await ev.acknowledge()
                    await ev.acknowledge()
        check(kinds == ['subscribed', 'prekill', 'killed', 'removed'] and [a[0] for a in f.acks] == [41],
              'asyncio: await acknowledge(), once', kinds, f.acks)
        f.acks.clear()
        async with pressured.watch_levels_async('/app.slice', socket=f.path) as w:
            got = []
            async for e in w:
                got.append(e)
                if isinstance(e, pressured.PrekillEvent):
                    await e.acknowledge()
        check([type(e) for e in got] == [pressured.LevelEvent, pressured.PrekillEvent]
              and [a[0] for a in f.acks] == [41], 'watch_levels_async(): the warning, acknowledged', got, f.acks)
        f.acks.clear()
        async with ac.watch_levels('/app.slice', prekill=False) as w:
            got = [e async for e in w]
        check([type(e) for e in got] == [pressured.LevelEvent] and [a[0] for a in f.acks] == [41],
              'asyncio prekill=False: acknowledged by itself', got, f.acks)
        f.mode = 'no-such'
        try:
            await ac.acknowledge_prekill(41)
            raise AssertionError('NoSuchPrekill not raised')
        except pressured.NoSuchPrekill as e:
            check(e.id == 41, 'asyncio: NoSuchPrekill', e)
        f.mode = 'ok'


def main():
    tmp = tempfile.mkdtemp(prefix='pressured-prekill-')
    try:
        test_watch_kills(tmp)
        test_watch_levels(tmp)
        test_exec(tmp)
        test_exec_deadline(tmp)
        test_ack_errors(tmp)
        test_notify(tmp)
        test_top(tmp)
        test_status(tmp)
        test_libpressure(tmp)
        test_python(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
