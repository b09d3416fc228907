#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl watch --exec: the hook's environment and command line, stdin
on /dev/null, coalescing of a burst of injected events into the next run
(PRESSURE_COALESCED accounts for every event), the --exec-timeout kill
(SIGTERM, then SIGKILL, of the whole process group, logged), failing,
crashing and missing hooks logged while the watch goes on, --count and
--timeout with a run going on, SIGTERM passed on to the hook, and the usage
errors."""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
check_eq = pt.check_eq

# Every event should be an injected one, and no episode end in the middle of
# a test: the watches are on an empty cgroup of the test's own
# (pt.quiet_cgroup()), which real pressure on the machine never reaches.
SELECTOR = ('--level', 'critical')
CONFIG = '[Levels]\nCritical=some 1900ms 2s\nClearAfterSec=3600\n'

# The hook: records what it was given in DIR/run-SEQ (atomically), then does
# what DIR/actions.json says for its seq (default "ok").
HOOK = r'''#!/usr/bin/env python3
import json, os, resource, signal, subprocess, sys
d = sys.argv[1]
seq = os.environ.get('PRESSURE_SEQ', 'none')
def fds():
    out = {}
    for fd in os.listdir('/proc/self/fd'):
        try:
            out[fd] = os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            pass  # the directory being listed
    return out
rec = {
    'fds': fds(),
    'env': {k: v for k, v in os.environ.items() if k.startswith('PRESSURE_') or k == 'HOOK_TEST_MARK'},
    'argv': sys.argv[1:],
    'pid': os.getpid(),
    'pgid': os.getpgid(0),
    'uid': os.getuid(),
    'stdin': os.readlink('/proc/self/fd/0'),
    'stdin_data': sys.stdin.read(),
}
try:
    with open(os.path.join(d, 'actions.json')) as f:
        actions = json.load(f)
except FileNotFoundError:
    actions = {}
action = actions.get(seq, actions.get('default', 'ok'))
if action == 'ignore-term':
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.path.join(d, f'.run-{seq}'), 'w') as f:
    json.dump(rec, f)
os.rename(os.path.join(d, f'.run-{seq}'), os.path.join(d, f'run-{seq}'))
if action == 'block':
    with open(os.path.join(d, 'fifo')) as f:
        f.read()
elif action.startswith('exit '):
    sys.exit(int(action.split()[1]))
elif action == 'segv':
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), signal.SIGSEGV)
elif action in ('ignore-term', 'sleep'):
    # A child in the hook's process group, as a script's commands are.
    subprocess.run(['sleep', '1000'])
'''


class Hooks:
    """A directory with the hook script, its records and a fifo to hold a run."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='pressured-hooks-')
        self.script = os.path.join(self.dir, 'hook.py')
        with open(self.script, 'w') as f:
            f.write(HOOK)
        os.chmod(self.script, stat.S_IRWXU)
        os.mkfifo(os.path.join(self.dir, 'fifo'))
        self.proc = None

    def actions(self, **per_seq):
        with open(os.path.join(self.dir, 'actions.json'), 'w') as f:
            json.dump({k.lstrip('s'): v for k, v in per_seq.items()}, f)

    def runs(self):
        """The records of the runs so far, by seq."""
        out = {}
        for name in os.listdir(self.dir):
            if name.startswith('run-'):
                with open(os.path.join(self.dir, name)) as f:
                    out[int(name[4:])] = json.load(f)
        return out

    def wait_run(self, seq):
        return pt.wait_for(lambda: self.runs().get(seq), what=f'the hook run of event {seq}')

    def release(self):
        """Let a run blocked on the fifo end (waits for it to open the fifo)."""
        def opened():
            try:
                return os.open(os.path.join(self.dir, 'fifo'), os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return None
        os.close(pt.wait_for(opened, what='the hook to open the fifo'))

    def start(self, d, *args, env=None):
        """pressurectl --socket S watch ARGS, stdout and stderr into files; waits for the subscription."""
        pt.wait_for(lambda: d.status()['subscriptions'] == 0, what='earlier watches to go')
        e = dict(os.environ)
        e.update(env or {})
        self.out = os.path.join(self.dir, 'stdout')
        self.err = os.path.join(self.dir, 'stderr')
        with open(self.out, 'w') as out, open(self.err, 'w') as err:
            self.proc = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch'] + list(args),
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=e)

        def ready():
            if self.proc.poll() is not None:
                return 'exited'
            return d.status()['subscriptions'] >= 1
        check(pt.wait_for(ready, what='the watch to subscribe') is True, 'the watch subscribed',
              self.proc.returncode, self.stderr())
        return self.proc

    def stdout(self):
        with open(self.out) as f:
            return f.read()

    def stderr(self):
        with open(self.err) as f:
            return f.read()

    def finish(self, code, what):
        try:
            rc = self.proc.wait(timeout=pt.scaled(30))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f'{what}: pressurectl did not exit: {self.stderr()}')
        check(rc == code, f'{what}: exit {rc}, expected {code}', self.stdout(), self.stderr())

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


def inject(d, cg, n=1):
    for _ in range(n):
        r = d.inject('critical', cg)
        check(r['parameters']['delivered'] == 1, 'the injection reached the watch', r)


def event_lines(h):
    """The events a watch --json printed, the subscribed one aside."""
    return [line for line in h.stdout().splitlines() if line.startswith('{') and '"kind":"subscribed"' not in line]


def test_usage():
    cases = [
        (('watch', '--exec'), '--exec needs a command'),
        (('watch', '--level', 'low', '--exec'), '--exec needs a command'),
        (('watch', '--exec-timeout', '5'), '--exec-timeout needs --exec'),
        (('watch', '--exec-timeout', '0', '--exec', 'true'), "invalid exec timeout '0'"),
        (('watch', '--exec-timeout', '-1', '--exec', 'true'), "invalid exec timeout '-1'"),
        (('watch', '--exec-timeout', 'soon', '--exec', 'true'), "invalid exec timeout 'soon'"),
        (('watch', '--exec=true'), "doesn't allow an argument"),
        (('watch', '--bogus', '--exec', 'true'), 'unrecognized option'),
        (('watch', '--', '/a', '--exec', 'true'), "unexpected argument '--exec'"),
    ]
    for args, message in cases:
        res = pt.run_ctl(*args, socket='/nonexistent/socket')
        check(res.returncode == 2, f'{args}: usage error, exit 2', res.returncode, res.stderr)
        check(message in res.stderr, f'{args}: the message says what is wrong', message, res.stderr)
    # Options after the command belong to the command; a value that looks like --exec is a value.
    res = pt.run_ctl('watch', '--level', '--exec', 'true', socket='/nonexistent/socket')
    check(res.returncode == 2 and "invalid level '--exec'" in res.stderr, '--exec as the value of --level',
          res.stderr)
    res = pt.run_ctl('watch', '--help')
    check(res.returncode == 0 and '--exec CMD' in res.stdout and 'PRESSURE_COALESCED' in res.stdout
          and '--exec-timeout SEC' in res.stdout, 'watch --help documents the hook', res.stdout)


def test_environment(d, cg):
    h = Hooks()
    try:
        # Everything after --exec is the hook's, options of watch included.
        h.start(d, cg, *SELECTOR, '--count', '1', '--json',
                '--exec', h.script, h.dir, 'two words', '--count', '7',
                env={'PRESSURE_LEVEL': 'inherited', 'HOOK_TEST_MARK': 'kept'})
        inject(d, cg)
        h.finish(0, 'watch --count 1 --exec')
        runs = h.runs()
        check_eq(sorted(runs), [1], 'one run for one event')
        run = runs[1]
        lines = event_lines(h)
        check_eq(len(lines), 1, 'one event printed')
        printed = json.loads(lines[0])
        env = run['env']
        check_eq(run['argv'], [h.dir, 'two words', '--count', '7'], "the hook's arguments")
        check_eq(env['PRESSURE_KIND'], 'pressure', 'PRESSURE_KIND')
        check_eq(env['PRESSURE_LEVEL'], 'critical', 'PRESSURE_LEVEL (an inherited value is replaced)')
        check_eq(env['PRESSURE_CGROUP'], cg, 'PRESSURE_CGROUP')
        check_eq(env['PRESSURE_SOURCE'], 'inject', 'PRESSURE_SOURCE')
        check_eq(env['PRESSURE_SEQ'], '1', 'PRESSURE_SEQ')
        check_eq(env['PRESSURE_MISSED'], '0', 'PRESSURE_MISSED')
        check_eq(env['PRESSURE_SYNTHETIC'], '1', 'PRESSURE_SYNTHETIC')
        check_eq(env['PRESSURE_COALESCED'], '1', 'PRESSURE_COALESCED of a lone event')
        check_eq(json.loads(env['PRESSURE_EVENT']), printed, 'PRESSURE_EVENT is the event printed')
        check(printed['kind'] == 'pressure' and printed['synthetic'] is True and printed['seq'] == 1,
              'the event is the injected one', printed)
        check_eq(env['HOOK_TEST_MARK'], 'kept', "pressurectl's environment is passed on")
        check_eq(sorted(k for k in env if k.startswith('PRESSURE_')),
                 sorted(['PRESSURE_KIND', 'PRESSURE_LEVEL', 'PRESSURE_CGROUP', 'PRESSURE_SOURCE', 'PRESSURE_SEQ',
                         'PRESSURE_MISSED', 'PRESSURE_SYNTHETIC', 'PRESSURE_EVENT', 'PRESSURE_COALESCED']),
                 'the variables, each once')
        check_eq(run['stdin'], '/dev/null', 'stdin is /dev/null')
        check_eq(run['stdin_data'], '', 'nothing to read on stdin')
        check_eq(run['uid'], os.getuid(), 'the hook runs as the user running pressurectl')
        check_eq(run['pgid'], run['pid'], 'the hook leads a process group of its own')
        check_eq(sorted(run['fds']), ['0', '1', '2'], "no fd of pressurectl's leaks into the hook")
        # With --json the hook writes to pressurectl's stderr: stdout carries JSON only.
        check(run['fds']['1'] == run['fds']['2'] == h.err, "the hook's stdout is pressurectl's stderr", run['fds'])
        check_eq(h.stderr().count('hook'), 0, 'a run that ends well is not reported')
    finally:
        h.close()


def test_json(d, cg):
    """With --json, stdout is JSON only: the subscribed event and the events, not what the hook
    prints; a hook that failed is a {"notice": ...} line on stderr."""
    h = Hooks()
    try:
        h.start(d, cg, *SELECTOR, '--count', '1', '--json', '--exec', 'sh', '-c', 'echo the hook speaks; exit 3')
        inject(d, cg)
        h.finish(0, 'watch --json with a failing hook')
        kinds = [json.loads(line)['kind'] for line in h.stdout().splitlines()]
        check_eq(kinds, ['subscribed', 'pressure'], 'stdout: the subscribed event and the event, nothing else')
        err = h.stderr().splitlines()
        check('the hook speaks' in err, "the hook's output went to stderr", err)
        notices = [json.loads(line) for line in err if line != 'the hook speaks']
        check_eq(notices, [{'notice': "hook 'sh' (event seq 1) exited with status 3"}], 'the failure as a notice')
    finally:
        h.close()
    # Without --json the hook shares stdout, and the failure is a sentence.
    h = Hooks()
    try:
        h.start(d, cg, *SELECTOR, '--count', '1', '--exec', 'sh', '-c', 'echo the hook speaks; exit 3')
        inject(d, cg)
        h.finish(0, 'watch with a failing hook')
        check('the hook speaks' in h.stdout().splitlines(), "the hook's output on stdout", h.stdout())
        check_eq(h.stderr(), "pressurectl: hook 'sh' (event seq 1) exited with status 3\n", 'the failure')
    finally:
        h.close()


def test_completion():
    # The bash completion offers the options, and completes the hook's command line as a command's.
    if not pt.have_bash_completion('the completion of watch --exec'):
        return
    for words, want in ((['pressurectl', 'watch', '--exec-t'], ['--exec-timeout']),
                        (['pressurectl', 'watch', '--exe'], ['--exec-timeout', '--exec']),
                        (['pressurectl', 'watch', '--exec', 'mkfif'], ['mkfifo']),
                        (['pressurectl', 'watch', '--level', 'low', '--exec', 'mkfif'], ['mkfifo'])):
        got = pt.complete(words)
        check(set(got) == set(want), f'completion of {" ".join(words)!r}', want, got)


def test_other_kinds():
    # memory_events and removed on a fake cgroup2 tree: the removal ends the
    # watch, after the hook ran for it.
    with tempfile.TemporaryDirectory(prefix='pressured-fake-') as fake:
        pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/a': {'current': 1 << 20}})
        with pt.Daemon(cgroup_root=fake) as d:
            h = Hooks()
            try:
                h.start(d, '/a', '--memory-events', '--exec', h.script, h.dir)
                path = os.path.join(fake, 'a', 'memory.events')
                text = 'low 0\nhigh 1\nmax 0\noom 0\noom_kill 0\n'
                fd = os.open(path, os.O_WRONLY)
                os.pwrite(fd, text.encode(), 0)
                os.close(fd)
                env = h.wait_run(1)['env']
                check_eq((env['PRESSURE_KIND'], env['PRESSURE_SOURCE'], env['PRESSURE_LEVEL'], env['PRESSURE_CGROUP'],
                          env['PRESSURE_SYNTHETIC']), ('memory_events', 'memory_events', '', '/a', '0'),
                         'a memory.events change')
                check_eq(json.loads(env['PRESSURE_EVENT'])['delta'].get('high'), 1, 'the event has the change')
                for name in os.listdir(os.path.join(fake, 'a')):
                    os.unlink(os.path.join(fake, 'a', name))
                os.rmdir(os.path.join(fake, 'a'))
                h.finish(0, 'watch of a cgroup that goes away')
                env = h.runs()[2]['env']
                check_eq((env['PRESSURE_KIND'], env['PRESSURE_CGROUP'], env['PRESSURE_SEQ'], env['PRESSURE_SOURCE']),
                         ('removed', '/a', '2', ''), 'the removal runs the hook before the watch ends')
            finally:
                h.close()


def test_until_cleared():
    # The end of the episode runs the hook too, and --until-cleared waits for that run.
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Levels]\nCritical=some 1900ms 2s\nClearAfterSec=1\n') as d:
        h = Hooks()
        try:
            h.start(d, cg, *SELECTOR, '--until-cleared', '--exec', h.script, h.dir)
            inject(d, cg)
            h.finish(0, 'watch --until-cleared --exec')
            runs = h.runs()
            last = runs[max(runs)]['env']
            check_eq((last['PRESSURE_KIND'], last['PRESSURE_LEVEL'], last['PRESSURE_SYNTHETIC']),
                     ('cleared', 'critical', '0'), 'the last run is for the end of the episode')
            check_eq(json.loads(last['PRESSURE_EVENT'])['kind'], 'cleared', 'its event')
            check_eq(runs[1]['env']['PRESSURE_KIND'], 'pressure', 'the first run is for the injected event')
        finally:
            h.close()


def test_coalescing(d, cg):
    burst = 20
    h = Hooks()
    try:
        h.actions(s1='block')
        h.start(d, cg, *SELECTOR, '--count', str(burst), '--json', '--exec', h.script, h.dir)
        inject(d, cg)
        h.wait_run(1)
        # While run 1 is held, the rest of the burst arrives (and is printed: nothing waits for the hook).
        inject(d, cg, burst - 1)
        pt.wait_for(lambda: len(event_lines(h)) == burst, what='the burst to be printed')
        check_eq(sorted(h.runs()), [1], 'no second run while the first one goes on')
        h.release()
        # --count is reached: pressurectl waits for the run and does the waiting one before it exits.
        h.finish(0, f'watch --count {burst} --exec')
        runs = h.runs()
        check_eq(sorted(runs), [1, burst], 'two runs: the first event and the latest one')
        check_eq(runs[1]['env']['PRESSURE_COALESCED'], '1', 'the first run stands for one event')
        check_eq(runs[burst]['env']['PRESSURE_COALESCED'], str(burst - 1), 'the second run stands for the rest')
        total = sum(int(r['env']['PRESSURE_COALESCED']) for r in runs.values())
        check_eq(total, burst, 'PRESSURE_COALESCED accounts for every event')
        check_eq(json.loads(runs[burst]['env']['PRESSURE_EVENT'])['seq'], burst, 'the run gets the latest event')
    finally:
        h.close()


def test_timeout_kill(d, cg):
    h = Hooks()
    try:
        # Run 1 ignores SIGTERM (its child too) and needs SIGKILL; run 2 ends on SIGTERM.
        # The timeout leaves the hook time to start and ignore SIGTERM on a busy machine.
        timeout = pt.scaled(2)
        h.actions(s1='ignore-term', s2='sleep')
        h.start(d, cg, *SELECTOR, '--count', '2', '--exec-timeout', str(timeout), '--exec', h.script, h.dir)
        # Event 2 comes while run 1 goes on, and waits for it.
        inject(d, cg, 2)
        h.finish(0, 'watch --exec-timeout')
        runs = h.runs()
        check_eq(sorted(runs), [1, 2], 'both events ran')
        first, second = runs[1], runs[2]
        err = h.stderr()
        for line in ("hook '%s' (event seq 1) ran over its {t} s timeout, sending SIGTERM",
                     "hook '%s' (event seq 1) still running {g} s after SIGTERM, sending SIGKILL",
                     "hook '%s' (event seq 1) was killed by signal SIGKILL",
                     "hook '%s' (event seq 2) ran over its {t} s timeout, sending SIGTERM",
                     "hook '%s' (event seq 2) was killed by signal SIGTERM"):
            line = line.format(t=timeout, g=min(timeout, 5))  # the grace: the timeout, at most 5 s
            check(line % h.script in err, 'the kill is logged', line, err)
        check(err.count('sending SIGKILL') == 1, 'a hook that ends on SIGTERM gets no SIGKILL', err)
        for run in (first, second):
            check(not pt.process_group_alive(run['pgid']), "the kill reached the hook's children too", run)
    finally:
        h.close()


def test_failures(d, cg):
    h = Hooks()
    try:
        h.actions(s1='exit 3', s2='segv')
        h.start(d, cg, *SELECTOR, '--count', '3', '--exec', h.script, h.dir)
        # One at a time, so that no two events merge into one run.
        for seq in (1, 2, 3):
            inject(d, cg)
            h.wait_run(seq)
        h.finish(0, 'watch with failing hooks')
        err = h.stderr()
        check(f"hook '{h.script}' (event seq 1) exited with status 3" in err, 'the exit status is logged', err)
        check(f"hook '{h.script}' (event seq 2) was killed by signal SIGSEGV" in err, 'the crash is logged', err)
        check('event seq 3' not in err, 'the run after them ended well', err)
        check_eq(sorted(h.runs()), [1, 2, 3], 'the watch went on after the failures')
        check_eq(len(h.stdout().splitlines()), 4, 'the header and three events printed')
    finally:
        h.close()

    # A command that cannot be run: each event says so, and the watch goes on.
    h = Hooks()
    try:
        missing = os.path.join(h.dir, 'no-such-hook')
        h.start(d, cg, *SELECTOR, '--count', '2', '--exec', missing)
        inject(d, cg, 2)
        h.finish(0, 'watch with a missing hook')
        err = h.stderr()
        check(err.count(f"cannot run '{missing}'") == 2 and 'No such file or directory' in err,
              'each event reports the missing command', err)
    finally:
        h.close()


def test_timeout_with_run(d, cg):
    # --timeout ends the watch (124) while a run goes on: that run is waited
    # for, the event waiting behind it is dropped.
    h = Hooks()
    try:
        h.actions(s1='block')
        h.start(d, cg, *SELECTOR, '--timeout', str(pt.scaled(3)), '--json', '--exec', h.script, h.dir)
        # Event 1 starts a run that is held; event 2 comes after that start, so it waits.
        inject(d, cg, 2)
        h.wait_run(1)
        pt.wait_for(lambda: 'timed out after' in h.stderr(), what='the watch to time out')
        check('timed out after 2 events' in h.stderr(), 'both events came before the timeout', h.stderr())
        check(h.proc.poll() is None, 'pressurectl waits for the run going on', h.stderr())
        h.release()
        h.finish(124, 'watch --timeout with a run going on')
        check_eq(sorted(h.runs()), [1], 'the waiting event is not run after the timeout')
    finally:
        h.close()


def test_signal_forwarding(d, cg):
    h = Hooks()
    try:
        h.actions(s1='sleep')
        h.start(d, cg, *SELECTOR, '--exec', h.script, h.dir)
        inject(d, cg)
        run = h.wait_run(1)
        h.proc.send_signal(signal.SIGTERM)
        h.finish(-signal.SIGTERM, 'pressurectl on SIGTERM')
        pt.wait_for(lambda: not pt.process_group_alive(run['pgid']), what='the hook to end with pressurectl')
    finally:
        h.close()


def main():
    pt.require_root('Inject is reserved to root')
    if not os.access(pt.PRESSURECTL, os.X_OK):
        pt.skip(f'{pt.PRESSURECTL} is not built')
    test_usage()
    test_completion()
    test_other_kinds()
    test_until_cleared()
    with pt.quiet_cgroup() as cg, pt.Daemon(config_text=CONFIG) as d:
        test_environment(d, cg)
        test_json(d, cg)
        test_coalescing(d, cg)
        test_timeout_kill(d, cg)
        test_failures(d, cg)
        test_timeout_with_run(d, cg)
        test_signal_forwarding(d, cg)
    pt.finish()


if __name__ == '__main__':
    main()
