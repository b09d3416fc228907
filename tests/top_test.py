# SPDX-License-Identifier: MIT
"""Helpers of the `pressurectl top` tests: run it in batch mode (under the
valgrind wrapper when the test setup sets one), run it in a real terminal
(a private tmux server), and write fake cgroup trees with the files top
reads.

Every wait polls with a deadline; nothing sleeps to synchronise.
"""
import json
import os
import shutil
import subprocess
import time
import uuid

import pressured_test as pt

# Under valgrind, pressurectl in batch mode runs under it too; the screen
# tests run it plain (valgrind on a full-screen program would only test patience).
SLOW = bool(pt.WRAPPER)
TIMEOUT = 120 if SLOW else 20


def top_cmd(*args, socket=None, wrap=True):
    cmd = (pt.WRAPPER if wrap else []) + [pt.PRESSURECTL]
    if socket:
        cmd += ['--socket', socket]
    return cmd + ['top'] + list(args)


def run_top(*args, socket=None, timeout=TIMEOUT):
    """Run top to completion (batch mode); returns the CompletedProcess."""
    return subprocess.run(top_cmd(*args, socket=socket), capture_output=True, text=True, timeout=timeout)


def run_json(*args, socket=None):
    res = run_top('--json', *args, socket=socket)
    pt.check(res.returncode == 0, 'top --json exits 0', res.returncode, res.stderr)
    return [json.loads(line) for line in res.stdout.splitlines()]


def row(refresh, cgroup):
    for c in refresh['cgroups']:
        if c['cgroup'] == cgroup:
            return c
    return None


def psi_text(some, full):
    return (f'some avg10={some:.2f} avg60={some:.2f} avg300={some:.2f} total=1000\n'
            f'full avg10={full:.2f} avg60={full:.2f} avg300={full:.2f} total=500\n')


def events_text(high=0, max_=0, oom_kill=0):
    return f'low 0\nhigh {high}\nmax {max_}\noom 0\noom_kill {oom_kill}\noom_group_kill 0\n'


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def make_v2_tree(root, nodes):
    """nodes: '/a' -> dict(current=, high=, max=, min=, low=, some=, full=, cpu=, io=, events=(h, m, k)).

    cpu and io are the "some" averages of cpu.pressure and io.pressure
    (their "full" is a tenth of it).

    Values left out are not written (the file is missing); 'max' for unlimited.
    The root's entry may have current and some/full only, like a real root;
    without current, the cgroup has no memory controller (no memory.events).
    """
    for path, v in nodes.items():
        d = os.path.join(root, path.lstrip('/'))
        os.makedirs(d, exist_ok=True)
        for key in ('current', 'high', 'max', 'min', 'low'):
            if key in v:
                write(os.path.join(d, f'memory.{key}'), f'{v[key]}\n')
        if 'some' in v:
            write(os.path.join(d, 'memory.pressure'), psi_text(v['some'], v.get('full', 0)))
        for resource in ('cpu', 'io'):
            if resource in v:
                write(os.path.join(d, f'{resource}.pressure'), psi_text(v[resource], v[resource] / 10))
        if path != '/' and 'current' in v:
            # memory.events comes with the memory controller, like memory.current.
            write(os.path.join(d, 'memory.events'), events_text(*v.get('events', (0, 0, 0))))
        if path != '/':
            write(os.path.join(d, 'cgroup.procs'), '')


def make_v1_tree(root, nodes):
    """nodes: '/a' -> dict(usage=, soft=, limit=, failcnt=, oom_kill=)."""
    for path, v in nodes.items():
        d = os.path.join(root, path.lstrip('/'))
        os.makedirs(d, exist_ok=True)
        write(os.path.join(d, 'memory.usage_in_bytes'), f'{v.get("usage", 0)}\n')
        write(os.path.join(d, 'memory.soft_limit_in_bytes'), f'{v.get("soft", 9223372036854771712)}\n')
        write(os.path.join(d, 'memory.limit_in_bytes'), f'{v.get("limit", 9223372036854771712)}\n')
        write(os.path.join(d, 'memory.failcnt'), f'{v.get("failcnt", 0)}\n')
        write(os.path.join(d, 'memory.oom_control'),
              f'oom_kill_disable 0\nunder_oom 0\noom_kill {v.get("oom_kill", 0)}\n')
        write(os.path.join(d, 'cgroup.procs'), '')


def cut(name, width):
    """@name as top shows it in @width columns: whole, or cut in the middle with an ellipsis
    (a third of the room for its start, the rest for its end)."""
    if len(name) <= width or width < 3:
        return name[:width]
    head = (width - 1) // 3
    return name[:head] + '\u2026' + name[len(name) - (width - 1 - head):]


def have_tmux():
    return shutil.which('tmux') is not None


class Terminal:
    """A private tmux server running sh in one pane of the given size."""

    def __init__(self, width, height, env=None):
        self.name = f'pressured-top-{uuid.uuid4().hex[:10]}'
        e = dict(os.environ)
        e.update(env or {})
        e['PS1'] = '$ '
        e.pop('TMUX', None)
        e.setdefault('TERM', 'xterm')
        self.env = e
        try:
            self.tmux('new-session', '-d', '-x', str(width), '-y', str(height), 'sh')
            self.wait_for(lambda s: s.strip() in ('$', '#'), 'the shell prompt')
        except BaseException:
            self.close()  # no server left behind when the with-block never starts
            raise

    def tmux(self, *args, check=True):
        res = subprocess.run(['tmux', '-L', self.name, '-f', '/dev/null'] + list(args), env=self.env,
                             capture_output=True, text=True, timeout=30)
        if check and res.returncode != 0:
            raise AssertionError(f'tmux {args}: {res.stderr}')
        return res.stdout

    def capture(self, escapes=False):
        return self.tmux('capture-pane', '-p', *(['-e'] if escapes else []))

    def send(self, *keys):
        self.tmux('send-keys', *keys)

    def type(self, text):
        """Type a command line and Enter."""
        self.tmux('send-keys', '-l', text)
        self.tmux('send-keys', 'Enter')

    def wait_for(self, pred, what, timeout=TIMEOUT, escapes=False):
        end = time.monotonic() + timeout
        screen = ''
        while time.monotonic() < end:
            screen = self.capture(escapes)
            if pred(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f'timed out waiting for {what}; the screen:\n{screen}')

    def wait_text(self, text, timeout=TIMEOUT):
        return self.wait_for(lambda s: text in s, repr(text), timeout)

    def resize(self, width, height):
        self.tmux('resize-window', '-x', str(width), '-y', str(height))

    def close(self):
        self.tmux('kill-server', check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_terminal_sane(term, tmpdir):
    """After top: back at the shell, typed text echoed, the line discipline cooked with echo on."""
    path = os.path.join(tmpdir, f'stty-{uuid.uuid4().hex[:8]}')
    term.type(f'stty -a > {path}; echo STTY-$((6*7))')
    # The command line itself shows on the screen only if echo works; its output follows.
    screen = term.wait_text('STTY-42')
    pt.check(f'stty -a > {path}' in screen, 'the typed command is echoed', screen)
    with open(path) as f:
        words = f.read().replace(';', ' ').split()
    for flag in ('icanon', 'echo', 'isig', 'icrnl', 'opost'):
        pt.check(flag in words and '-' + flag not in words, f'terminal mode {flag} restored', words)
