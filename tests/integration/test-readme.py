#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The README is a short front door whose examples run as shown.

- README.md has at most 300 lines.
- The C example (the fenced block whose first line is
  "/* README example: cache-service.c */") is client/lib/examples/cache-service.c
  from its first #include on; it is compiled with cc against the built
  libpressure and libsystemd and run against a daemon started here: its
  monitor's level stream is the one subscription; an injected medium
  prints the medium line and, when the level is back to normal, the line
  that says so, never the critical one; an injected critical then prints
  the critical line. Against a daemon without level streams (before 0.4)
  it says so and exits with 1.
- The Python example ("# README example: subscribe.py") runs with the
  module pressured of the build tree (client/python) and otherwise the
  standard library only, and prints the subscription, the injected event
  and the end of the episode.
- Every key of the effective configuration (pressured --dump-config) is in
  pressured.conf(5), and every command of `pressurectl --help` in
  pressurectl(1).

Both examples subscribe on "/", whose registration reads
/proc/pressure/memory: the daemon's [Levels] here fire only at 95% stall,
so the events are the injected ones, and checks look for lines rather than
count them.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
from pressured_test import (BUILD_ROOT, PRESSURED, PRESSURECTL, SOURCE_ROOT, Daemon, Varlink,  # noqa: E402
                            check, finish, scaled, skip_part)

README = os.path.join(SOURCE_ROOT, 'README.md')
MAX_LINES = 300

CONFIG = '''[Levels]
Medium=some 1900ms 2s
Critical=full 1900ms 2s
ClearAfterSec=1
'''


def fenced_block(text, marker):
    """The body of the fenced code block whose first line is @marker."""
    blocks = re.findall(r'^```[a-z]*\n(.*?)^```$', text, re.S | re.M)
    found = [b for b in blocks if b.split('\n', 1)[0] == marker]
    check(len(found) == 1, f'one fenced block starting with {marker!r} in README.md', len(found))
    return found[0]


class Output:
    """The lines a running example prints, read as they come."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.buf = b''

    def wait_for(self, pattern, timeout=None, since=0):
        """The first line from the @since-th on that matches @pattern, waiting for it."""
        end = time.monotonic() + (timeout or scaled(15))
        rx = re.compile(pattern)
        while True:
            for line in self.lines[since:]:
                if rx.search(line):
                    return line
            left = end - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and not self._read(0):
                raise AssertionError(f'no line matching {pattern!r}; got {self.lines!r}'
                                     f' (exit {self.proc.poll()}, stderr {self._stderr()!r})')
            self._read(min(left, 0.2))

    def _read(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return False
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            return False
        self.buf += data
        *done, self.buf = self.buf.split(b'\n')
        self.lines += [d.decode() for d in done]
        return True

    def _stderr(self):
        if self.proc.poll() is None:
            return ''
        return self.proc.stderr.read().decode(errors='replace')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_subscribed(daemon, n):
    """Wait until @n subscriptions are open on the daemon."""
    end = time.monotonic() + scaled(10)
    while daemon.status()['subscriptions'] < n:
        check(time.monotonic() < end, 'example subscribed', daemon.status()['subscriptions'])
        time.sleep(0.05)


def run_episode(daemon, out, levels, expect, since=0):
    """Inject @levels on "/", then wait for each pattern of @expect in @out (from its @since-th line)."""
    for level in levels:
        r = daemon.inject(level)
        check('parameters' in r, 'inject accepted', r)
    for pattern in expect:
        out.wait_for(pattern, since=since)


def sanitizers():
    """The build's b_sanitize option ('none', 'address,undefined', ...)."""
    try:
        with open(os.path.join(BUILD_ROOT, 'meson-info', 'intro-buildoptions.json')) as f:
            for opt in json.load(f):
                if opt.get('name') == 'b_sanitize':
                    return opt.get('value') or 'none'
    except (OSError, ValueError):
        pass
    return 'none'


def serves_levels(daemon):
    """Whether the daemon has level streams: one before 0.4 answers InvalidParameter "levels"."""
    v = Varlink(daemon.socket)
    try:
        r = v.subscribe(levels=True)
    finally:
        v.close()
    if 'error' in r:
        check(r['error'] == 'org.varlink.service.InvalidParameter' and
              r.get('parameters', {}).get('parameter') == 'levels', 'a daemon without level streams says so', r)
        return False
    check(r['parameters']['event']['kind'] == 'level', 'a level stream starts with the level', r)
    return True


def check_old_daemon(proc):
    """The example against a daemon before 0.4: the reason on stderr, exit status 1."""
    try:
        _, err = proc.communicate(timeout=scaled(15))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        check(False, 'the C example ends against a daemon without level streams')
        return
    check(proc.returncode == 1 and 'pressured is older than 0.4' in err.decode(errors='replace'),
          'the C example says the daemon is too old', (proc.returncode, err))


def check_levels(daemon, out):
    """The example's lines for injected levels on "/", in an attempt the kernel stayed quiet through."""
    wait_subscribed(daemon, 1)
    # The example watches the whole system: real pressure on this machine
    # (another program's) changes its level too, so only an attempt the
    # kernel stayed quiet through tells that medium does not reach critical.
    for _ in range(5):
        since = len(out.lines)
        read = daemon.status()['counters']['events_read']
        run_episode(daemon, out, ['medium'],
                    [r'^memory pressure: dropping the cache$', r'^pressure over: the cache may grow again$'], since)
        if daemon.status()['counters']['events_read'] == read:
            check(not any('saving state' in line for line in out.lines[since:]),
                  'a medium level does not say critical', out.lines[since:])
            break
    else:
        check(False, 'the kernel stayed quiet through one of 5 medium injections')
    run_episode(daemon, out, ['critical'], [r'^critical memory pressure: saving state$'], len(out.lines))


def check_c_example(text, daemon, tmp):
    body = fenced_block(text, '/* README example: cache-service.c */')
    with open(os.path.join(SOURCE_ROOT, 'client', 'lib', 'examples', 'cache-service.c')) as f:
        example = f.read()
    code = body.split('\n', 1)[1]
    check(example.endswith(code), "README's C example is client/lib/examples/cache-service.c from its #include on")
    cc = shutil.which('cc')
    if cc is None:
        skip_part('no cc to build the C example')
        return
    src = os.path.join(tmp, 'cache-service.c')
    exe = os.path.join(tmp, 'cache-service')
    with open(src, 'w') as f:
        f.write(body)
    libdir = os.path.join(BUILD_ROOT, 'client', 'lib')
    # A sanitized libpressure needs the sanitizer's runtime in the program too;
    # stdbuf's preloaded library then comes before it, which is harmless here.
    san = sanitizers()
    san_flags = [] if san == 'none' else [f'-fsanitize={san}']
    r = subprocess.run([cc, '-std=gnu11', '-Wall', '-Werror', '-Wno-unused-parameter'] + san_flags +
                       ['-I', os.path.join(SOURCE_ROOT, 'client', 'lib'), src, '-o', exe,
                        '-L', libdir, '-lpressure', '-lsystemd'], capture_output=True, text=True)
    check(r.returncode == 0, 'the C example compiles', r.stderr)
    env = dict(os.environ, PRESSURED_SOCKET=daemon.socket, LD_LIBRARY_PATH=libdir)
    if san_flags:
        env['ASAN_OPTIONS'] = ':'.join(filter(None, [env.get('ASAN_OPTIONS'), 'verify_asan_link_order=0']))
    # stdout is a pipe here: line-buffer it so lines come before the end.
    proc = subprocess.Popen(['stdbuf', '-oL', exe], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Output(proc)
    try:
        if serves_levels(daemon):
            check_levels(daemon, out)
        else:
            check_old_daemon(proc)
    finally:
        out.stop()
        wait_subscribed_gone(daemon)


def wait_subscribed_gone(daemon):
    end = time.monotonic() + scaled(10)
    while daemon.status()['subscriptions'] and time.monotonic() < end:
        time.sleep(0.05)


def check_python_example(text, daemon, tmp):
    body = fenced_block(text, '# README example: subscribe.py')
    src = os.path.join(tmp, 'subscribe.py')
    with open(src, 'w') as f:
        f.write(body)
    imports = set(re.findall(r'^import (\w+)', body, re.M)) | set(re.findall(r'^from (\w+)', body, re.M))
    check('pressured' in imports and imports - {'pressured'} <= set(sys.stdlib_module_names),
          'the Python example uses the module pressured and the standard library only', imports)
    env = dict(os.environ, PRESSURED_SOCKET=daemon.socket,
               PYTHONPATH=os.path.join(BUILD_ROOT, 'client', 'python'))
    proc = subprocess.Popen([sys.executable, src], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Output(proc)
    try:
        out.wait_for(r'^subscribed: psi on /$')
        run_episode(daemon, out, ['medium'],
                    [r'^pressure medium on /, seq \d+$', r'^cleared after \d+\.\d s$'])
    finally:
        out.stop()


def check_man_pages():
    with open(os.path.join(SOURCE_ROOT, 'conf', 'pressured.conf.5')) as f:
        conf5 = f.read()
    dump = subprocess.run([PRESSURED, '--dump-config'], capture_output=True, text=True, check=True).stdout
    section = None
    for line in dump.splitlines():
        m = re.match(r'^\[(\w+)\]$', line)
        if m:
            section = m.group(1)
            check(f'.SH [{section}] SECTION' in conf5, 'section in pressured.conf(5)', section)
            continue
        m = re.match(r'^(\w+)=', line)
        if m:
            key = m.group(1)
            # Each key is a .BI entry "Key= VALUE" (Socket= appears in two sections).
            check(re.search(r'^\.BI ' + key + r'= ', conf5, re.M), 'key in pressured.conf(5)', section, key)
    with open(os.path.join(SOURCE_ROOT, 'client', 'pressurectl', 'pressurectl.1')) as f:
        ctl1 = f.read().replace('\\-', '-')
    help_text = subprocess.run([PRESSURECTL, '--help'], capture_output=True, text=True).stdout
    commands = re.findall(r'^  ([a-z][a-z-]+)', help_text.split('Commands:', 1)[1].split('Options:', 1)[0], re.M)
    check(len(commands) >= 6, 'commands listed by pressurectl --help', commands)
    for cmd in commands:
        # A command entry starts a .TP paragraph: ".B status", "\fBwatch\fR ...", ".BR notify ...".
        check(re.search(r'^\.TP\n(\.BR? |\\fB)' + re.escape(cmd) + r'(\\fR|\s|$)', ctl1, re.M),
              'command documented in pressurectl(1)', cmd)
    # Every short option the programs' --help lists is in their man page, beside its long form.
    with open(os.path.join(SOURCE_ROOT, 'daemon', 'pressured.8')) as f:
        daemon8 = f.read()
    pages = [(daemon8, 'pressured(8)', [PRESSURED, '--help']), (ctl1, 'pressurectl(1)', [PRESSURECTL, '--help'])]
    pages += [(ctl1, 'pressurectl(1)', [PRESSURECTL, cmd, '--help']) for cmd in commands]
    for page, name, cmd in pages:
        plain = re.sub(r'\\f[BIRP]|"', '', page.replace('\\-', '-'))
        help_text = subprocess.run(cmd, capture_output=True, text=True).stdout
        pairs = re.findall(r'^\s+(-[a-zA-Z]),? (--[a-z][a-z-]*)', help_text, re.M)
        check(pairs or cmd[1] not in ('--help', 'watch', 'top'), f'short options in {" ".join(cmd)}', help_text)
        for short, long in pairs:
            check(re.search(re.escape(short) + r'[ ,|]{1,4}' + re.escape(long) + r'\b', plain),
                  f'{name} lists {short} with {long} ({" ".join(cmd)})', short, long)


def main():
    with open(README) as f:
        text = f.read()
    n = text.count('\n')
    check(n <= MAX_LINES, f'README.md has at most {MAX_LINES} lines', n)
    check_man_pages()
    tmp = tempfile.mkdtemp(prefix='pressured-readme-')
    try:
        with Daemon(config_text=CONFIG) as daemon:
            check_c_example(text, daemon, tmp)
            check_python_example(text, daemon, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == '__main__':
    main()
