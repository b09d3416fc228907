#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl against the built daemon: every command, human and JSON
output, and every exit code (0 ok, 1 daemon error, 2 usage, 3 daemon not
reachable, 4 permission denied, 124 timeout).

Two parts need what a machine may lack: watch --psi needs PSI, the
permission checks a user "nobody". Without it that part is left out,
saying so, the rest runs and the test then exits 77."""
import base64
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check


def expect(res, code, what):
    check(res.returncode == code, f'{what}: exit {res.returncode}, expected {code}', res.stdout, res.stderr)
    return res


def have_nobody():
    try:
        pwd.getpwnam('nobody')
        return os.geteuid() == 0
    except KeyError:
        return False


def test_usage():
    expect(pt.run_ctl(), 2, 'no command')
    expect(pt.run_ctl('frobnicate'), 2, 'unknown command')
    expect(pt.run_ctl('--bogus', 'status'), 2, 'unknown global option')
    expect(pt.run_ctl('watch', '--level', 'severe'), 2, 'bad level')
    expect(pt.run_ctl('watch', '--level', 'low', '--memory-events'), 2, 'two selectors')
    expect(pt.run_ctl('watch', '--psi', 'some 150'), 2, 'short PSI spec')
    expect(pt.run_ctl('watch', '--psi', 'most 150ms 2s'), 2, 'bad PSI stall')
    expect(pt.run_ctl('watch', '--psi', 'some 150fortnights 2s'), 2, 'bad PSI unit')
    expect(pt.run_ctl('watch', '--vmpressure', 'low,sideways'), 2, 'bad vmpressure mode')
    expect(pt.run_ctl('watch', '--count', '0'), 2, 'count 0')
    expect(pt.run_ctl('watch', '--timeout', 'soon'), 2, 'bad timeout')
    expect(pt.run_ctl('watch', '/a', '/b'), 2, 'two cgroups')
    expect(pt.run_ctl('inject'), 2, 'inject without --level')
    expect(pt.run_ctl('status', 'extra'), 2, 'status with an argument')
    expect(pt.run_ctl('reload', '--level', 'low'), 2, 'reload with an option it lacks')
    expect(pt.run_ctl('watch', '--memory-events', '--until-cleared'), 2, '--until-cleared without episodes')
    expect(pt.run_ctl('history', '/a', '/b'), 2, 'history with two cgroups')

    # A number out of its range names the range.
    for args, says in ((['watch', '--count', '0'], "invalid count '0', expected a whole number from 1 to "
                                                   "18446744073709551615"),
                       (['watch', '--timeout', '2e9'], "invalid timeout '2e9', expected seconds over 0, at most "
                                                       "1000000000 (fractions allowed); leave --timeout out"),
                       # A timeout of 0 is refused by every option that takes one, with the same words.
                       (['watch', '--timeout', '0'], "invalid timeout '0', expected seconds over 0, at most "
                                                     "1000000000 (fractions allowed); leave --timeout out"),
                       (['watch', '--levels', '--timeout', '0ms'], "invalid timeout '0ms', expected seconds over 0"),
                       (['watch', '--exec-timeout', '0', '--exec', 'true'], "invalid exec timeout '0', expected "
                                                                            "seconds over 0, at most 1000000000 "
                                                                            "(fractions allowed); leave "
                                                                            "--exec-timeout out"),
                       (['watch', '--min-interval', '2147483648'], "invalid interval '2147483648', expected a "
                                                                   "duration in whole milliseconds from 0 to "
                                                                   "2147483647ms"),
                       (['watch', '--min-interval', '1.5ms'], "invalid interval '1.5ms', expected a duration in "
                                                              "whole milliseconds"),
                       (['watch', '--min-interval', '250us'], "invalid interval '250us', expected a duration in "
                                                              "whole milliseconds"),
                       (['watch', '--min-interval', 'soon'], "invalid interval 'soon', expected a duration"),
                       (['top', '--batch', '-d', '90000'], "invalid delay '90000', expected seconds from 0 to 86400"),
                       (['top', '--batch', '-d', '1441min'], "invalid delay '1441min', expected seconds from 0 to "
                                                             "86400"),
                       (['watch', '--timeout', '1h'], "invalid timeout '1h', expected seconds over 0, at most "
                                                      "1000000000"),
                       (['top', '--batch', '--iterations', '0'], "invalid iterations '0', expected a whole number "
                                                                 "from 1 to"),
                       (['inject', '--level', 'high'], "invalid level 'high', expected low, medium or critical")):
        res = expect(pt.run_ctl(*args), 2, ' '.join(args))
        check(res.stderr.startswith('pressurectl: ' + says), f'{" ".join(args)}: the range is named', res.stderr)

    res = expect(pt.run_ctl('--help'), 0, '--help')
    for cmd in ('status', 'watch', 'protection', 'inject', 'reload', 'history'):
        check(cmd in res.stdout, f'--help lists {cmd}', res.stdout)
        sub = expect(pt.run_ctl(cmd, '--help'), 0, f'{cmd} --help')
        check(sub.stdout.startswith('pressurectl') and cmd in sub.stdout.splitlines()[0],
              f'{cmd} --help shows its own usage', sub.stdout)
    check('--level low' in pt.run_ctl('watch', '--help').stdout, 'watch --help names the default selector')
    res = expect(pt.run_ctl('--version'), 0, '--version')
    check(res.stdout.startswith('pressurectl '), '--version output', res.stdout)
    pt.check_eq(expect(pt.run_ctl('-V'), 0, '-V').stdout, res.stdout, '-V is --version')
    pt.check_eq(expect(pt.run_ctl('-h'), 0, '-h').stdout, pt.run_ctl('--help').stdout, '-h is --help')


def error_object(res):
    """The one JSON error object that a failing pressurectl --json wrote to stderr."""
    lines = res.stderr.splitlines()
    check(len(lines) == 1, 'one line on stderr', res.stderr)
    err = json.loads(lines[0])
    check(sorted(err) == ['error', 'message', 'parameters'] and isinstance(err['error'], str)
          and isinstance(err['parameters'], dict) and isinstance(err['message'], str),
          'error, parameters and message', err)
    return err


def test_unreachable():
    tmp = tempfile.mkdtemp(prefix='pressurectl-test-')
    path = os.path.join(tmp, 'missing.sock')
    for args in (('status',), ('watch', '--count', '1'), ('protection',), ('inject', '--level', 'low'), ('reload',)):
        res = expect(pt.run_ctl(*args, socket=path), 3, f'{args[0]} without a daemon')
        check(res.stderr.startswith(f'pressurectl: {args[0]}: Cannot reach pressured at {path}: '
                                    'No such file or directory. Is pressured running on this socket?'),
              'the reason is given, and what to do', res.stderr)
        check(len(res.stderr.splitlines()) == 1, 'in one line', res.stderr)
    # --json: one JSON object on stderr, the name pressurectl's own, not the daemon's.
    for args in (('status',), ('watch', '--count', '1'), ('inject', '--level', 'low')):
        res = expect(pt.run_ctl('--json', *args, socket=path), 3, f'{args[0]} --json without a daemon')
        err = error_object(res)
        check(err['error'] == 'pressurectl.DaemonUnreachable' and err['parameters'] ==
              {'socket': path, 'errno': 'ENOENT', 'reason': 'No such file or directory'},
              'the JSON error names the failure, the socket and errno', err)
        check(err['message'].startswith(f'Cannot reach pressured at {path}: '), 'and carries the sentence', err)
        check(res.stdout == '', 'nothing on stdout', res.stdout)
    # $PRESSURED_SOCKET is honoured when --socket is absent.
    res = expect(pt.run_ctl('status', env={'PRESSURED_SOCKET': path}), 3, 'status via $PRESSURED_SOCKET')
    check(path in res.stderr, 'the socket from the environment is used', res.stderr)
    os.rmdir(tmp)


USER_EXPLAINED = ('--user: $XDG_RUNTIME_DIR is not set to an absolute path, so there is no per-user daemon to '
                  'find (pressured --user listens in $XDG_RUNTIME_DIR/pressured)')


def ctl_env(*args, env):
    """pressurectl with exactly the environment @env (plus PATH)."""
    return subprocess.run([pt.PRESSURECTL] + list(args), capture_output=True, text=True, timeout=10,
                          env=dict(env, PATH=os.environ.get('PATH', '/usr/bin:/bin')))


def test_socket_choice():
    """memory-pressure-env names the pressure socket next to the daemon's socket as every other
    command finds it: --socket, else --user, else $PRESSURED_SOCKET, else the system's. --user
    without $XDG_RUNTIME_DIR is a usage error that says why, from every command as from the
    daemon and the Python module; tests/run-daemon.sh for a user refuses likewise, before it
    builds or starts anything."""
    def watch_of(*args, env):
        res = ctl_env('--json', *args, 'memory-pressure-env', '--resource', 'io', env=env)
        check(res.returncode == 0, 'memory-pressure-env', args, env, res.stderr)
        return json.loads(res.stdout)['IO_PRESSURE_WATCH']
    env = {'PRESSURED_SOCKET': '/srv/p/io.pressured', 'XDG_RUNTIME_DIR': '/run/user/4711'}
    pt.check_eq(watch_of(env=env), '/srv/p/io-pressure', '$PRESSURED_SOCKET')
    pt.check_eq(watch_of('--socket', '/x/y', env=env), '/x/io-pressure', '--socket over $PRESSURED_SOCKET')
    pt.check_eq(watch_of('--user', env=env), '/run/user/4711/pressured/io-pressure', '--user over $PRESSURED_SOCKET')
    pt.check_eq(watch_of(env={}), '/run/pressured/io-pressure', 'the system daemon\'s by default')
    for args in (['status'], ['memory-pressure-env'], ['notify', '--dry-run'], ['watch', '--count', '1']):
        for runtime in ({}, {'XDG_RUNTIME_DIR': 'relative'}):
            res = ctl_env('--user', *args, env=runtime)
            check(res.returncode == 2 and res.stderr.startswith(f'pressurectl: {USER_EXPLAINED}') and
                  f"Try 'pressurectl {args[0]} --help'." in res.stderr, f'{args[0]} --user {runtime}: explained',
                  res.returncode, res.stderr)
    script = os.path.join(pt.SOURCE_ROOT, 'tests', 'run-daemon.sh')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        pt.skip_part('no user "nobody" to run tests/run-daemon.sh as')
        return
    res = subprocess.run(['setpriv', f'--reuid={nobody.pw_uid}', f'--regid={nobody.pw_gid}', '--clear-groups',
                          script], capture_output=True, text=True, timeout=120,
                         env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
    check(res.returncode == 2 and USER_EXPLAINED in res.stderr and res.stdout == '',
          'run-daemon.sh as a user without $XDG_RUNTIME_DIR refuses at once, saying why', res.returncode,
          res.stdout[-500:], res.stderr[-500:])


def test_min_interval():
    """watch --min-interval takes a duration as every other option, a bare number still counting
    milliseconds: what it sends the daemon (a stand-in that records the call)."""
    tmp = tempfile.mkdtemp(prefix='pressurectl-interval-')
    calls = []

    def respond(call):
        calls.append(call)
        return [{'parameters': {'event': {'kind': 'subscribed', 'cgroup': '/', 'source': 'psi', 'trigger': {},
                                          'adjusted': False, 'state': {}}}, 'continues': True},
                {'parameters': {'event': {'kind': 'removed', 'cgroup': '/'}}}]
    fake = pt.FakeVarlinkServer(os.path.join(tmp, 'fake.sock'), respond)
    try:
        for arg, ms in (('500ms', 500), ('2s', 2000), ('1.5s', 1500), ('250', 250), ('0', 0), ('1min', 60000)):
            calls.clear()
            expect(pt.run_ctl('watch', '--min-interval', arg, '--timeout', '10', socket=fake.path), 0,
                   f'--min-interval {arg}')
            sub = [c for c in calls if c['method'] == 'io.pressured.Subscribe']
            check(len(sub) == 1 and sub[0]['parameters'].get('min_interval_ms', 0) == ms,
                  f'--min-interval {arg} is {ms} ms', calls)
    finally:
        fake.close()
        shutil.rmtree(tmp, ignore_errors=True)


def start_watch(d, *args):
    """Start a watch once the daemon has no subscription left from before."""
    pt.wait_for(lambda: d.status()['subscriptions'] == 0, what='earlier watches to go')
    return subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch'] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_subscribed(d, proc):
    """Wait until @proc's subscription is in place; False if it exited instead."""
    def ready():
        if proc.poll() is not None:
            return 'exited'
        return d.status()['subscriptions'] >= 1
    return pt.wait_for(ready, what='the watch to subscribe') is True


def test_watch_and_inject(d, cg):
    """Watches on @cg, an empty cgroup (see pt.quiet_cgroup()), so that
    only the injected events arrive, not real pressure on the machine."""
    # --json: the subscribed event, then one line after one Inject, each object as sent, and nothing else.
    proc = start_watch(d, cg, '--level', 'medium', '--count', '1', '--json')
    check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
    res = expect(pt.run_ctl('inject', cg, '--level', 'medium', socket=d.socket), 0, 'inject')
    check(res.stdout.startswith(f'Delivered 1 time: once to each subscriber of each registration on {cg} that took '
                                'the medium event'), 'inject says what it counts', res.stdout)
    out, err = proc.communicate(timeout=10)
    check(proc.returncode == 0, 'watch --count 1 exits 0', proc.returncode, out, err)
    lines = out.splitlines()
    check(len(lines) == 2, 'two JSON lines: subscribed and the event', out)
    sub, ev = json.loads(lines[0]), json.loads(lines[1])
    check(sub['kind'] == 'subscribed' and sub['cgroup'] == cg and sub['trigger'].get('level') == 'medium'
          and 'psi' in sub['trigger'] and isinstance(sub['adjusted'], bool), 'the subscribed event, with its trigger',
          sub)
    check(ev['kind'] == 'pressure' and ev['level'] == 'medium' and ev['synthetic'] is True
          and ev['source'] == 'inject' and ev['seq'] == 1 and ev['cgroup'] == cg, 'the injected event', ev)
    pt.check_eq(err, '', 'nothing on stderr with --json')

    # Human output: a header line, then one line per event; --count counts events only.
    proc = start_watch(d, cg, '--level', 'critical', '--count', '2')
    check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
    res = expect(pt.run_ctl('--json', 'inject', cg, '--level', 'critical', socket=d.socket), 0, 'inject --json')
    check(res.stdout == '{"delivered":1}\n', 'inject --json, compact like every other object', res.stdout)
    expect(pt.run_ctl('inject', cg, '--level', 'critical', socket=d.socket), 0, 'second inject')
    out, err = proc.communicate(timeout=10)
    check(proc.returncode == 0, 'watch --count 2 exits 0', proc.returncode, out, err)
    lines = out.splitlines()
    check(len(lines) == 3 and lines[0].startswith(f'Watching {cg}:'), 'header and two events', out)
    for line in lines[1:]:
        check(f' {cg} pressure critical source=inject synthetic' in line, 'a human event line', line)
    # Local time stamp first: "YYYY-MM-DD HH:MM:SS.mmm".
    check(len(lines[1]) > 23 and lines[1][4] == '-' and lines[1][13] == ':' and lines[1][19] == '.',
          'the line starts with a local time', lines[1])

    # An inject on another level still reaches a --level subscription (the level is the injected one).
    proc = start_watch(d, cg, '--psi', 'some 150ms 2s', '--count', '1', '--json')
    if not wait_subscribed(d, proc):
        out, err = proc.communicate()
        check(proc.returncode == 1 and 'SourceUnavailable' in err,
              'the PSI subscription failed only because PSI is missing', err)
        pt.skip_part('watch --psi: PSI is not available here (the daemon answers SourceUnavailable)')
    else:
        expect(pt.run_ctl('inject', cg, '--level', 'low', socket=d.socket), 0, 'inject low')
        out, err = proc.communicate(timeout=10)
        check(proc.returncode == 0, 'watch --psi exits 0', proc.returncode, err)
        sub, ev = [json.loads(line) for line in out.splitlines()]
        check(ev['level'] == 'low', '--psi subscription got the event', out)
        # The trigger the daemon registered (a 2 s window needs no adjusting).
        check(sub['kind'] == 'subscribed' and sub['adjusted'] is False and
              sub['trigger']['psi'] == {'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000},
              'the subscribed event carries the trigger', sub)
        pt.check_eq(err, '', 'nothing on stderr with --json')


def test_watch_timeout(d, cg):
    res = expect(pt.run_ctl('watch', '--level', 'critical', '--timeout', '1', socket=d.socket), 124,
                 'watch without events')
    check('timed out' in res.stderr, 'the timeout is reported', res.stderr)
    check(res.stdout.startswith('Watching /'), 'the header was printed', res.stdout)
    # A duration with a unit, read as [Protection] RefreshSec= is.
    start = time.monotonic()
    expect(pt.run_ctl('watch', '--level', 'critical', '--timeout', '300ms', socket=d.socket), 124, '--timeout 300ms')
    check(time.monotonic() - start < 5, '--timeout 300ms is 0.3 s, not 300 s', time.monotonic() - start)
    res = expect(pt.run_ctl('watch', cg, '--count', '3', '--timeout', '0.5', '--json', socket=d.socket), 124,
                 'watch --json without events')
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    check(len(lines) == 1 and lines[0]['kind'] == 'subscribed', 'the subscribed event, no other', res.stdout)
    err = error_object(res)
    check(err['error'] == 'pressurectl.Timeout' and err['parameters'] == {'command': 'watch', 'events': 0}
          and err['message'] == 'timed out after 0 events', 'the timeout as a JSON error', err)
    # A daemon that takes the connection and never answers: --timeout covers
    # the wait for the answer to Subscribe as well (not the 25 s call timeout).
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'mute.sock')
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mute.bind(path)
        mute.listen(8)
        start = time.monotonic()
        res = expect(pt.run_ctl('watch', '--timeout', '0.5', socket=path), 124, 'watch on a daemon that does not answer')
        took = time.monotonic() - start
        check(took < 5, 'watch --timeout 0.5 ended in time', took)
        check('timed out after 0 events' in res.stderr, 'the timeout is reported', res.stderr)
        mute.close()


def test_daemon_errors(d):
    res = expect(pt.run_ctl('watch', '/no/such/cgroup-xyz', '--level', 'low', socket=d.socket), 1,
                 'watch a missing cgroup')
    check(res.stderr.startswith('pressurectl: watch: No cgroup /no/such/cgroup-xyz: the daemon\'s cgroup hierarchies have no such cgroup ('),
          'the missing cgroup is named in a sentence', res.stderr)
    res = expect(pt.run_ctl('--json', 'watch', '/no/such/cgroup-xyz', '--level', 'low', socket=d.socket), 1,
                 'watch --json a missing cgroup')
    err = error_object(res)
    check(err['error'] == 'io.pressured.NoSuchCgroup' and err['parameters'] == {'cgroup': '/no/such/cgroup-xyz'},
          'the JSON error is the daemon\'s, parameters as sent', err)
    check(err['message'].startswith('No cgroup /no/such/cgroup-xyz: '), 'with the sentence', err)
    res = expect(pt.run_ctl('protection', '/no/such/cgroup-xyz', socket=d.socket), 1, 'protection of a missing cgroup')
    check(res.stderr.startswith('pressurectl: protection: No cgroup /no/such/cgroup-xyz: '),
          'the missing cgroup is named in a sentence', res.stderr)
    # A trigger the daemon's rules reject (parsed fine by pressurectl): the daemon's reason woven in, and
    # exit 2 as for a trigger pressurectl cannot parse: a value the user typed wrong is a usage error.
    res = expect(pt.run_ctl('watch', '--psi', 'some 3s 2s', socket=d.socket), 2, 'watch a threshold over the window')
    check(res.stderr == 'pressurectl: watch: Invalid trigger: threshold must not exceed the window; a PSI trigger '
          "is STALL THRESHOLD WINDOW, e.g. 'some 150ms 2s', with a window from 500ms to 10s.\n",
          'InvalidTrigger with the reason', res.stderr)
    res = expect(pt.run_ctl('--json', 'watch', '--psi', 'some 3s 2s', socket=d.socket), 2, 'the same with --json')
    err = error_object(res)
    check(err['error'] == 'io.pressured.InvalidTrigger'
          and err['parameters'] == {'reason': 'threshold must not exceed the window'}, 'InvalidTrigger as JSON', err)
    res = expect(pt.run_ctl('watch', '--psi', 'some 3s', socket=d.socket), 2, 'a trigger pressurectl cannot parse')
    check(res.stderr.startswith("pressurectl: invalid PSI trigger 'some 3s'"), 'said by pressurectl', res.stderr)
    res = expect(pt.run_ctl('--json', 'watch', '--psi', 'some 3s', socket=d.socket), 2, 'the same with --json')
    err = error_object(res)
    check(err['error'] == 'pressurectl.UsageError' and err['parameters']['command'] == 'watch', 'as JSON', err)


def test_status(d, cg):
    # On @cg: real pressure on / would start an episode and fill its column.
    proc = start_watch(d, cg, '--level', 'medium')
    try:
        check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
        res = expect(pt.run_ctl('status', socket=d.socket), 0, 'status')
        for word in ('Version:', 'Uptime:', 'Clients:', 'Subscriptions:  1', 'CGROUP', 'SOURCE',
                     'TRIGGER', 'SUBSCRIBERS', 'events_delivered', 'registrations_created'):
            check(word in res.stdout, f'status shows {word!r}', res.stdout)
        rows = [line.split() for line in res.stdout.splitlines() if line.startswith('  /')]
        check(len(rows) == 1 and rows[0][-2] == '1' and rows[0][-1] == '-' and rows[0][1] in ('psi', 'vmpressure'),
              'one registration row: cgroup, source, trigger, subscribers, no episode', res.stdout)
        res = expect(pt.run_ctl('--json', 'status', socket=d.socket), 0, 'status --json')
        check(len(res.stdout.splitlines()) == 1, 'one line', res.stdout)
        st = json.loads(res.stdout)
        check(st['subscriptions'] == 1 and len(st['registrations']) == 1, 'status --json is the reply', st)
        # Global options after the command work too.
        res = expect(pt.run_ctl('status', '--json', socket=d.socket), 0, 'status --json after the command')
        pt.check_eq(json.loads(res.stdout)['version'], st['version'], 'same reply')
    finally:
        proc.kill()
        proc.wait()


def test_reload(d):
    res = expect(pt.run_ctl('reload', socket=d.socket), 0, 'reload as root')
    check(res.stdout == '', 'reload prints nothing', res.stdout)


def json_lines(res, what):
    """The objects a pressurectl --json run printed on stdout; stdout holds nothing else, and stderr nothing."""
    objs = []
    for line in res.stdout.splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError:
            raise AssertionError(f'{what}: a line of stdout is no JSON: {line!r}') from None
    check(all(isinstance(o, dict) for o in objs), f'{what}: one object per line', res.stdout)
    # Compact, as every object pressurectl prints: no space after a separator.
    check(not any('": ' in line or ', "' in line for line in res.stdout.splitlines()), f'{what}: compact',
          res.stdout[:300])
    pt.check_eq(res.stderr, '', f'{what}: nothing on stderr')
    return objs


def test_json_mode(d, cg):
    """With --json every command prints JSON objects only, one per line, on stdout, and nothing else."""
    # Without the memory controller (a hybrid host) protection is the daemon's SourceUnavailable: JSON too.
    res = pt.run_ctl('--json', 'protection', socket=d.socket)
    if res.returncode != 0:
        pt.check_eq((res.returncode, res.stdout), (1, ''), '--json protection without the memory controller')
        pt.check_eq(json.loads(res.stderr)['error'], 'io.pressured.SourceUnavailable', '--json protection error')
    else:
        json_lines(res, '--json protection')
    for args in (['status'], ['history'], ['history', cg], ['reclaim'], ['reclaim', cg],
                 ['inject', cg, '--level', 'low'], ['reload'], ['memory-pressure-env'],
                 ['memory-pressure-env', '--psi', 'full 150ms 1s'], ['-V'], ['--version']):
        res = expect(pt.run_ctl('--json', *args, socket=d.socket), 0, f'--json {" ".join(args)}')
        objs = json_lines(res, f'--json {" ".join(args)}')
        check(len(objs) == 1, f'{args}: one object', res.stdout)
    env = json_lines(pt.run_ctl('--json', 'memory-pressure-env', socket=d.socket), 'memory-pressure-env')[0]
    check(env['MEMORY_PRESSURE_WATCH'] == os.path.join(os.path.dirname(d.socket), 'memory-pressure') and
          base64.b64decode(env['MEMORY_PRESSURE_WRITE']) == b'some 200000 2000000\0',
          'memory-pressure-env --json: the two variables', env)
    version = json_lines(pt.run_ctl('--json', '--version'), '--version')[0]
    check(set(version) == {'version'} and pt.run_ctl('--version').stdout == f'pressurectl {version["version"]}\n',
          '--json --version', version)
    # watch: the subscribed event, then the events; --count counts the events only.
    proc = start_watch(d, cg, '--json', '--level', 'low', '--count', '2')
    check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
    for _ in range(2):
        expect(pt.run_ctl('inject', cg, '--level', 'low', socket=d.socket), 0, 'inject')
    out, err = proc.communicate(timeout=pt.scaled(10))
    res = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    evs = json_lines(res, 'watch --json')
    check(proc.returncode == 0 and [e['kind'] for e in evs] == ['subscribed', 'pressure', 'pressure'],
          'watch --json: subscribed, then two events', proc.returncode, evs)


def test_denied(d):
    if not have_nobody():
        pt.skip_part('the permission checks (inject, reload and watch as another user): '
                     'not root or no user "nobody"')
        return
    res = expect(pt.run_ctl('inject', '--level', 'low', socket=d.socket, user='nobody'), 4, 'inject as nobody')
    check(res.stderr == 'pressurectl: inject: Only root and members of the InjectGroup= group may inject events; '
          'try sudo.\n', 'who may inject, and what to do', res.stderr)
    res = expect(pt.run_ctl('--json', 'inject', '--level', 'low', socket=d.socket, user='nobody'), 4,
                 'inject --json as nobody')
    err = error_object(res)
    check(err['error'] == 'io.pressured.PermissionDenied' and 'InjectGroup=' in err['parameters'].get('reason', '')
          and err['message'].startswith('Only root and members of the InjectGroup= group'),
          'PermissionDenied as JSON, the daemon\'s reason kept', err)
    res = expect(pt.run_ctl('reload', socket=d.socket, user='nobody'), 4, 'reload as nobody')
    check(res.stderr == "pressurectl: reload: Only root may reload the daemon's configuration; try sudo.\n",
          'who may reload', res.stderr)
    # reexec is root's, and has nothing to do with delegated cgroups.
    res = expect(pt.run_ctl('reexec', socket=d.socket, user='nobody'), 4, 'reexec as nobody')
    check(res.stderr == 'pressurectl: reexec: Only root may make the daemon execute itself anew; try sudo.\n',
          'who may reexec', res.stderr)
    err = error_object(expect(pt.run_ctl('--json', 'reexec', socket=d.socket, user='nobody'), 4, 'reexec --json'))
    check(err['error'] == 'io.pressured.PermissionDenied' and err['parameters'] ==
          {'reason': 'Reexecute is reserved to root'} and 'delegated' not in err['message'],
          'reexec as JSON: the daemon\'s reason kept, no word of delegation', err)
    # The whole-system level source is open to everybody.
    expect(pt.run_ctl('watch', '--level', 'low', '--timeout', '0.2', socket=d.socket, user='nobody'), 124,
           'watch as nobody')


def test_protection():
    root = tempfile.mkdtemp(prefix='pressurectl-cg-')
    G = 1 << 30
    pt.make_fake_tree(root, {
        '/': dict(current=3 * G),
        '/work': dict(current=1288490188, min=G, low=2 * G),
        '/work/db': dict(current=512 << 20, min='max', low=0),
        '/idle': dict(current=0),
    })
    with pt.Daemon(cgroup_root=root) as d:
        res = expect(pt.run_ctl('protection', socket=d.socket), 0, 'protection')
        lines = res.stdout.splitlines()
        check(lines[0].split() == ['CGROUP', 'USAGE', 'MIN', 'LOW', 'EMIN', 'ELOW', 'STATE'], 'header', lines)
        rows = {line.strip().split()[0]: line for line in lines[1:]}
        check(set(rows) == {'/', 'work', 'db', 'idle'}, 'one row per cgroup', lines)
        check(rows['work'].split() == ['work', '1.2G', '1G', '2G', '1G', '2G', 'low'], 'sizes read at a glance',
              rows['work'])
        check(rows['db'].startswith('    db') and rows['work'].startswith('  work'), 'indented by depth', lines)
        check(rows['db'].split()[2] == 'max' and rows['db'].split()[-1] == 'min', 'unlimited min shown as max',
              rows['db'])
        check(lines.index(rows['work']) < lines.index(rows['db']), 'parents before children', lines)
        widths = {len(line.rstrip()) - len(line.rstrip().split()[-1]) for line in lines}
        check(len(widths) == 1, 'columns aligned', lines)

        res = expect(pt.run_ctl('--json', 'protection', '/work', socket=d.socket), 0, 'protection --json')
        nodes = [json.loads(line) for line in res.stdout.splitlines()]
        check([n['cgroup'] for n in nodes] == ['/work', '/work/db'], 'the subtree, one node per line', nodes)
        check(nodes[1]['min'] is None and nodes[0]['usage'] == 1288490188, 'raw values', nodes)

        # memory.events and protection watches on the fake tree.
        proc = start_watch(d, '/work', '--memory-events', '--count', '1', '--json')
        check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
        pt.write_file(os.path.join(root, 'work', 'memory.events'), 'low 0\nhigh 4\nmax 0\noom 0\noom_kill 0\n')
        out, err = proc.communicate(timeout=10)
        check(proc.returncode == 0, 'memory-events watch', proc.returncode, err)
        sub, ev = [json.loads(line) for line in out.splitlines()]
        check(sub['kind'] == 'subscribed' and sub['source'] == 'memory_events', 'subscribed first', sub)
        check(ev['kind'] == 'memory_events' and ev['counters']['high'] == 4, 'memory.events change', ev)
    shutil.rmtree(root, ignore_errors=True)


# Each CGROUP pressurectl refuses itself, and what it says: the rule the path breaks.
BAD_CGROUPS = (
    ('', 'empty cgroup'),
    ('a', "invalid cgroup 'a': it is not absolute: a cgroup path starts with '/'"),
    ('/a/../b', "invalid cgroup '/a/../b': it has a '..' component"),
    ('/a/./b', "invalid cgroup '/a/./b': it has a '.' component"),
    (os.fsdecode(b'/a\xff'), "invalid cgroup '/a\\xff': it is not valid UTF-8"),
    ('/a\tb', "invalid cgroup '/a\\x09b': it contains a control character, such as a tab or a newline"),
    ('/' + 'x' * 256, "invalid cgroup '/" + 'x' * 256 + "': a component of it is longer than 255 bytes"),
    ('/' + 'a/' * 2100, "invalid cgroup '/" + 'a/' * 2100 + "': it is longer than 4096 bytes"),
)


def test_cgroup_arguments():
    """A CGROUP that no daemon accepts is a usage error of every command that takes one, found by
    pressurectl before it talks to the daemon (exit 2, even with no daemon at the socket), naming
    the rule it breaks; the daemon's InvalidCgroupPath (a symlink or a file on the way, which only
    the daemon can see) is one too, with what is there, while NoSuchCgroup stays an error of the
    daemon (1)."""
    root = tempfile.mkdtemp(prefix='pressurectl-cg-')
    pt.make_fake_tree(root, {'/': dict(current=1 << 30), '/a': dict(current=4096)})
    os.symlink('/tmp', os.path.join(root, 'esc'))
    commands = {
        'watch': lambda cg: ['watch', cg, '--memory-events', '--count', '1', '--timeout', '5'],
        'watch --levels': lambda cg: ['watch', cg, '--levels', '--count', '1', '--timeout', '5'],
        'watch --kills': lambda cg: ['watch', '--kills', cg, '--count', '1', '--timeout', '5'],
        'inject': lambda cg: ['inject', cg, '--level', 'low'],
        'protection': lambda cg: ['protection', cg],
        'headroom': lambda cg: ['headroom', cg],
        'history': lambda cg: ['history', cg],
        'reclaim': lambda cg: ['reclaim', cg],
        'top': lambda cg: ['top', cg, '--batch', '--iterations', '1', '--cgroup-root', root],
        'notify': lambda cg: ['notify', '--cgroup', cg, '--dry-run'],
    }
    nobody = os.path.join(root, 'no-daemon')
    with pt.Daemon(cgroup_root=root) as d:
        for label, args in commands.items():
            name = label.split()[0]
            for bad, says in BAD_CGROUPS:
                for sock in (d.socket, nobody):
                    res = expect(pt.run_ctl(*args(bad), socket=sock), 2, f'{label} {bad[:20]!r}')
                    check(res.stderr.startswith(f'pressurectl: {says}') and
                          res.stderr.endswith(f"Try 'pressurectl {name} --help'.\n") and res.stdout == '',
                          f'{label} {bad[:20]!r}: what is wrong, and where to look', res.stderr[:300])
                res = expect(pt.run_ctl('--json', *args(bad), socket=d.socket), 2, f'--json {label} {bad[:20]!r}')
                err = error_object(res)
                check(err['error'] == 'pressurectl.UsageError' and err['parameters']['command'] == name and
                      err['parameters']['reason'].startswith(says) and res.stdout == '',
                      f'--json {label} {bad[:20]!r}: a JSON usage error', err)
        for name in ('watch', 'protection', 'headroom'):
            res = expect(pt.run_ctl(*commands[name]('/esc'), socket=d.socket), 2, f'{name} through a symlink')
            check(res.stderr == f"pressurectl: {name}: Invalid cgroup path '/esc': it goes through a symbolic "
                                'link.\n', 'the daemon\'s word, with what is there', res.stderr)
            res = expect(pt.run_ctl(*commands[name]('/a/memory.current'), socket=d.socket), 2, f'{name} on a file')
            check(res.stderr == f"pressurectl: {name}: Invalid cgroup path '/a/memory.current': it names a file, "
                                'not a cgroup directory.\n', 'a file is no cgroup', res.stderr)
            res = expect(pt.run_ctl('--json', *commands[name]('/esc'), socket=d.socket), 2, f'--json {name} /esc')
            check(error_object(res)['error'] == 'io.pressured.InvalidCgroupPath', 'as JSON', res.stderr)
            expect(pt.run_ctl(*commands[name]('/nope'), socket=d.socket), 1, f'{name} of a missing cgroup')
    shutil.rmtree(root, ignore_errors=True)


EPISODE_CONFIG = '[Levels]\nMedium=some 900ms 1s\nClearAfterSec=1\nClearRatio=1\n'


def test_episodes():
    """watch --until-cleared, cleared lines, status and history on an empty
    cgroup that only injected events reach; a trigger at 90 % of its window
    besides."""
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=EPISODE_CONFIG) as d:
        res = expect(pt.run_ctl('history', socket=d.socket), 0, 'history without registrations')
        check('No registration with episodes' in res.stdout, 'history says there is nothing', res.stdout)

        proc = start_watch(d, cg, '--level', 'medium', '--until-cleared', '--timeout', str(pt.scaled(30)))
        check(wait_subscribed(d, proc), 'watch subscribed', proc.returncode)
        expect(pt.run_ctl('inject', cg, '--level', 'medium', socket=d.socket), 0, 'inject')
        pt.wait_for(lambda: 'episode' in d.status()['registrations'][0], what='the episode to start')
        res = expect(pt.run_ctl('status', socket=d.socket), 0, 'status')
        check('EPISODE' in res.stdout and 'active ' in res.stdout and '1 event' in res.stdout,
              'status shows the active episode', res.stdout)
        res = expect(pt.run_ctl('history', cg, socket=d.socket), 0, 'history of an active episode')
        check('now (active)' in res.stdout, 'history shows the active episode', res.stdout)
        out, err = proc.communicate(timeout=pt.scaled(30))
        check(proc.returncode == 0, 'watch --until-cleared exits 0 at cleared', proc.returncode, out, err)
        lines = out.splitlines()
        check(len(lines) == 3 and f' {cg} pressure medium' in lines[1], 'header, the pressure event', out)
        check(f' {cg} cleared medium source=psi seq=2 ' in lines[2] and 'events=1' in lines[2] and 'peak=' in lines[2],
              'a human cleared line', lines[2])

        # --json: the raw events; history of the kept registration.
        keep = pt.Varlink(d.socket)
        keep.subscribe(level='medium', cgroup=cg)
        proc = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch', cg, '--level', 'medium',
                                 '--until-cleared', '--json', '--timeout', str(pt.scaled(30))],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pt.wait_for(lambda: d.status()['subscriptions'] == 2, what='the second watch to subscribe')
        expect(pt.run_ctl('inject', cg, '--level', 'medium', socket=d.socket), 0, 'inject')
        out, err = proc.communicate(timeout=pt.scaled(30))
        check(proc.returncode == 0, 'watch --until-cleared --json exits 0', proc.returncode, err)
        evs = [json.loads(line) for line in out.splitlines()]
        check([e['kind'] for e in evs] == ['subscribed', 'pressure', 'cleared'], 'the raw events', evs)
        for ev in evs:
            pt.validate({'parameters': {'event': ev}, 'continues': True}, 'io.pressured.Subscribe', True,
                        {'level': 'medium', 'cgroup': cg})
        res = expect(pt.run_ctl('--json', 'history', socket=d.socket), 0, 'history --json')
        hist = json.loads(res.stdout)['history']
        check(len(hist) == 1 and hist[0]['cgroup'] == cg and hist[0]['source'] == 'psi' and
              hist[0]['active'] is False and hist[0]['events'] == 1, 'one ended episode as JSON', hist)
        res = expect(pt.run_ctl('history', socket=d.socket), 0, 'history')
        check(res.stdout.startswith(f'{cg} psi (') and ' .. ' in res.stdout and '1 event' in res.stdout,
              'the human history', res.stdout)
        res = expect(pt.run_ctl('history', '/', socket=d.socket), 0, 'history of another cgroup')
        check(res.stdout == 'No registration with episodes on /.\n', 'filtered by cgroup', res.stdout)
        pt.check_eq(expect(pt.run_ctl('--json', 'history', '/', socket=d.socket), 0, 'history --json of "/"').stdout,
                    '{"history":[]}\n', 'an empty list, as reclaim --json gives')
        # A cgroup that does not exist is the daemon's NoSuchCgroup (exit 1), for history as for the others.
        for cmd in ('history', 'reclaim'):
            res = expect(pt.run_ctl(cmd, '/nothing-here', socket=d.socket), 1, f'{cmd} of a missing cgroup')
            check(res.stdout == '' and res.stderr.startswith(f'pressurectl: {cmd}: No cgroup /nothing-here: '),
                  f'{cmd}: the daemon\'s sentence', res.stdout, res.stderr)
            err = error_object(expect(pt.run_ctl('--json', cmd, '/nothing-here', socket=d.socket), 1,
                                      f'{cmd} --json of a missing cgroup'))
            pt.check_eq((err['error'], err['parameters']), ('io.pressured.NoSuchCgroup', {'cgroup': '/nothing-here'}),
                        f'{cmd} --json: the daemon\'s error')
        keep.close()


def main():
    pt.require_root('pressurectl inject and reload are reserved to root')
    if not os.access(pt.PRESSURECTL, os.X_OK):
        pt.skip(f'{pt.PRESSURECTL} is not built')
    test_usage()
    test_unreachable()
    test_socket_choice()
    test_min_interval()
    with pt.quiet_cgroup() as cg, pt.Daemon() as d:
        test_watch_and_inject(d, cg)
        test_watch_timeout(d, cg)
        test_daemon_errors(d)
        test_status(d, cg)
        test_reload(d)
        test_json_mode(d, cg)
        test_denied(d)
    test_protection()
    test_cgroup_arguments()
    test_episodes()
    pt.finish()


if __name__ == '__main__':
    main()
