# SPDX-License-Identifier: MIT
"""Shared helpers for pressured's integration, fault and kernel tests.

Start the built daemon on a temporary socket, talk varlink to it, run
pressurectl, make real cgroups that are always removed, and skip (exit 77)
with a reason where a feature is missing.
"""
import atexit
import collections
import contextlib
import inspect
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import varlink_idl

BUILD_ROOT = os.environ.get('PRESSURED_BUILD_ROOT', os.path.join(os.path.dirname(__file__), '..', 'build'))
SOURCE_ROOT = os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..'))
PRESSURED = os.path.join(BUILD_ROOT, 'daemon', 'pressured')
PRESSURECTL = os.path.join(BUILD_ROOT, 'client', 'pressurectl', 'pressurectl')
# Set by the valgrind test setup: a command prefix for the daemon.
WRAPPER = os.environ.get('PRESSURED_TEST_WRAPPER', '').split()
# Set by the valgrind and sanitize setups: a daemon that exits non-zero on
# SIGTERM had a memory error or leak.
STRICT_EXIT = bool(WRAPPER) or bool(os.environ.get('PRESSURED_TEST_STRICT_EXIT'))
# Set by tests/vm/run.sh: the test runs in its VM, emulated, where
# everything (the kernel's reclaim included) is about ten times slower.
IN_VM = os.environ.get('PRESSURED_VM') == '1'
# Under valgrind the daemon runs 20-50 times slower, in the VM everything
# about ten times: deadlines of waits for something the daemon does are
# scaled by this (see scaled()).
SLOW_FACTOR = 10 if WRAPPER or IN_VM else 1


def install_dir(option):
    """The absolute directory the build installs into for meson's @option
    ('sysconfdir', 'datadir', 'sbindir', ...): what the daemon of that build
    reads (<sysconfdir>/pressured) where the vm test bed installs it."""
    with open(os.path.join(BUILD_ROOT, 'meson-info', 'intro-buildoptions.json')) as f:
        opts = {o['name']: o['value'] for o in json.load(f)}
    return os.path.join(opts['prefix'], opts[option])


def _mountinfo(mountinfo):
    """The text of /proc/self/mountinfo, or @mountinfo if given ('' if unreadable)."""
    if mountinfo is not None:
        return mountinfo
    try:
        with open('/proc/self/mountinfo') as f:
            return f.read()
    except OSError:
        return ''


def _cgroup_mounts(mountinfo, fstype):
    """(mount point, super options) of each @fstype mount of its hierarchy's root."""
    for line in _mountinfo(mountinfo).splitlines():
        fields, _, rest = line.partition(' - ')
        fields, rest = fields.split(), rest.split()
        if len(fields) >= 5 and rest[:1] == [fstype] and fields[3] == '/':
            # mountinfo escapes blanks and backslashes as octal (\040).
            yield (re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), fields[4]),
                   rest[2].split(',') if len(rest) > 2 else [])


def cgroup2_mount(mountinfo=None):
    """Where cgroup2 is mounted, found as the daemon finds it (the first
    cgroup2 mount of its hierarchy's root in /proc/self/mountinfo, or in
    the text @mountinfo), or None."""
    for path, _ in _cgroup_mounts(mountinfo, 'cgroup2'):
        return path
    return None


def cgroup_v1_memory_mount(mountinfo=None):
    """Where the cgroup v1 memory hierarchy is mounted, found as the daemon
    finds it (the first cgroup mount of its root with the memory
    controller), or None: a pure cgroup2 host."""
    for path, opts in _cgroup_mounts(mountinfo, 'cgroup'):
        if 'memory' in opts:
            return path
    return None


# The machine's hierarchies as the daemon finds them; the usual hybrid
# layout's paths where one is not mounted (tests check before use).
V2_ROOT = cgroup2_mount() or '/sys/fs/cgroup/unified'
V1_MEMORY_ROOT = cgroup_v1_memory_mount() or '/sys/fs/cgroup/memory'

_MAIN_PID = os.getpid()

# How the test ended, once it said so: 'passed' (finish()), 'skipped'
# (skip()), 'failed' (fail() or an exception nobody caught), 'stopped'
# (SIGTERM), 'own' (own_verdict()). None until then; a test that exits
# with None fails (see _no_verdict()).
_verdict = None


def _on_sigterm(signum, frame):
    """A test stopped with SIGTERM (meson's timeout, or a stopped run) unwinds
    like one that fails, so that its cgroups and temporary directories are
    removed. A forked child (run_as) must not run its parent's clean-up: it
    just exits."""
    global _verdict
    if os.getpid() != _MAIN_PID:
        os._exit(128 + signum)
    _verdict = 'stopped'
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_sigterm)

_excepthook = sys.excepthook


def _on_uncaught(*exc):
    """An exception nobody caught fails the test (Python exits 1 after its traceback)."""
    global _verdict
    _verdict = 'failed'
    _excepthook(*exc)


sys.excepthook = _on_uncaught


def _no_verdict():
    """At exit: a test that ends without a verdict fails. Without this, a
    test whose main() returns early, or which forgets to call finish() after
    a part was left out by skip_part(), would pass without having checked
    anything. Forked children are not tests."""
    if os.getpid() != _MAIN_PID or _verdict is not None:
        return
    sys.stdout.flush()
    sys.stderr.write('FAIL: the test ended without a verdict: it called neither finish() nor skip()\n')
    sys.stderr.flush()
    os._exit(1)


atexit.register(_no_verdict)


def skip(reason):
    """Skip the test (exit 77), saying why."""
    global _verdict
    print(f'SKIP: {reason}', flush=True)
    _verdict = 'skipped'
    sys.exit(77)


def fail(reason):
    """Fail the test (exit 1), saying why, without a traceback."""
    global _verdict
    print(f'FAIL: {reason}', file=sys.stderr, flush=True)
    _verdict = 'failed'
    sys.exit(1)


def own_verdict():
    """For a program that states its result itself, by its exit status and
    output (tests/vm/checks.py, a TAP producer), or is no test at all but a
    helper process of one: _no_verdict() leaves it alone."""
    global _verdict
    _verdict = 'own'


_left_out = []


def skip_part(reason):
    """Leave out one part of a test that cannot run here (a kernel
    feature, a tool or root is missing), saying why. The test goes on with
    the rest, which can still fail; finish() then exits 77, so that meson
    reports the test skipped rather than passed."""
    print(f'SKIP: {reason}', flush=True)
    _left_out.append(reason)


def finish():
    """End a test whose checks passed: print 'ok', or, if skip_part() left
    a part out, exit 77 naming what was left out. Every test ends with
    finish() or skip(): one that exits without either fails."""
    global _verdict
    if _left_out:
        skip('the rest passed; left out: ' + '; '.join(_left_out))
    _verdict = 'passed'
    print('ok', flush=True)


SYSTEMD_SID = os.environ.get('PRESSURED_SYSTEMD_SID', os.path.join(BUILD_ROOT, 'systemd-sid'))


def systemd_sid(part=None):
    """The root of Debian sid's systemd (262 or later) unpacked by
    tests/sid/fetch-systemd-sid.sh into $PRESSURED_SYSTEMD_SID (the build
    tree's systemd-sid; tests/run-all.sh fetches it first), fetched now if
    it is not there yet. Where the Debian mirror cannot give it: with
    @part, skip_part(@part + the reason) and return None; without, skip
    the test. Any other failure of the fetch fails the test."""
    root, reason = fetch_systemd_sid()
    if root is None:
        if part is None:
            skip(reason)
        skip_part(f'{part}: {reason}')
    return root


def fetch_systemd_sid():
    """(root, None) as systemd_sid() finds or fetches it, or (None, why)
    where the Debian mirror cannot give it; any other failure of the fetch
    fails the test."""
    ok = os.path.join(SYSTEMD_SID, 'ok')
    if not os.path.exists(ok):
        script = os.path.join(SOURCE_ROOT, 'tests', 'sid', 'fetch-systemd-sid.sh')
        r = subprocess.run([script, SYSTEMD_SID], capture_output=True, text=True)
        if r.returncode == 2:
            return None, 'sid\'s systemd cannot be fetched: ' + (r.stderr.strip().splitlines() or ['no reason'])[-1]
        if r.returncode != 0:
            fail(f'{script} {SYSTEMD_SID} exited {r.returncode}: {r.stderr.strip()}')
    return os.path.join(SYSTEMD_SID, 'root'), None


def check(cond, what, *values):
    """Assert with a message that shows the values."""
    if not cond:
        raise AssertionError(what + (': ' + ', '.join(repr(v) for v in values) if values else ''))


def check_eq(got, want, what):
    """Assert @got == @want, showing both."""
    if got != want:
        raise AssertionError(f'{what}: expected {want!r}, got {got!r}')


def require_root(why=None):
    """Skip (exit 77) unless root; @why says what needs root."""
    if os.geteuid() != 0:
        skip('needs root' + (f': {why}' if why else ''))


def scaled(seconds):
    """A deadline of @seconds on a normal run, longer under valgrind."""
    return seconds * SLOW_FACTOR


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for(pred, timeout=None, interval=0.02, what='condition'):
    """Poll @pred until it returns something true, and return that; raise
    TimeoutError after @timeout seconds (default: scaled(10))."""
    if timeout is None:
        timeout = scaled(10.0)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise TimeoutError(f'timed out waiting for {what}')


_validator = None


def validate(msg, method=None, more=False, request=None):
    """Check a message received from the daemon against its interfaces
    (see varlink_idl.py); raise varlink_idl.Invalid naming the field, the
    expected and the received value. @method is the call it answers, or
    None when unknown (then only errors can be checked), @request its
    parameters."""
    global _validator
    if _validator is None:
        _validator = varlink_idl.default_validator(SOURCE_ROOT)
    _validator.check(msg, method, more, request)
    return msg


def _calls_in(data):
    """(method, more, parameters) of each whole call in raw bytes sent, or
    None where a message is no call; replies are validated against these."""
    out = []
    for part in data.split(b'\0')[:-1]:
        try:
            m = json.loads(part)
        except (ValueError, RecursionError):  # hostile input: not a call
            out.append(None)
            continue
        if not isinstance(m, dict) or not isinstance(m.get('method'), str):
            out.append(None)
        elif m.get('oneway') is not True:
            out.append((m['method'], m.get('more') is True, m.get('parameters')))
    return out


class ReplyChecker:
    """Pairs the messages received on one connection with the calls sent on
    it (varlink answers in order; a streamed call stays until its last
    reply) and validates each. For tests that read raw sockets."""

    def __init__(self):
        self.sent = b''
        self.pending = collections.deque()

    def sent_raw(self, data):
        self.sent += data
        self.pending.extend(_calls_in(self.sent))
        self.sent = self.sent[self.sent.rfind(b'\0') + 1:]

    def sent_call(self, method, more=False, params=None):
        self.pending.append((method, more, params))

    def received(self, msg):
        call = self.pending[0] if self.pending else None
        if call is not None and (not isinstance(msg, dict) or msg.get('error') or not msg.get('continues')):
            self.pending.popleft()
        return validate(msg, *(call or (None, False, None)))


def validate_replies(sent, msgs):
    """Validate @msgs, received in answer to the raw bytes @sent; return @msgs."""
    c = ReplyChecker()
    c.sent_raw(sent)
    for m in msgs:
        c.received(m)
    return msgs


class Varlink:
    """A minimal blocking varlink client over a Unix socket.

    Every message received is checked against the interface of the call it
    answers (validate()); calls are answered in order, so the client keeps
    the calls it sent that are still waiting for their last reply.
    """

    def __init__(self, path, timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
        except BaseException:
            self.sock.close()
            raise
        self.buf = b''
        self.checker = ReplyChecker()

    def send_raw(self, data):
        self.checker.sent_raw(data)
        self.sock.sendall(data)

    def call(self, method, params=None, more=False, oneway=False):
        msg = {'method': method}
        if params is not None:
            msg['parameters'] = params
        if more:
            msg['more'] = True
        if oneway:
            msg['oneway'] = True
        else:
            self.checker.sent_call(method, more, params)
        self.sock.sendall(json.dumps(msg).encode() + b'\0')

    def recv(self, timeout=5.0):
        self.sock.settimeout(timeout)
        while b'\0' not in self.buf:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError('no reply') from None
            if not data:
                raise EOFError('connection closed')
            self.buf += data
        msg, _, self.buf = self.buf.partition(b'\0')
        return self.checker.received(json.loads(msg))

    def call_sync(self, method, params=None):
        self.call(method, params)
        return self.recv()

    def subscribe(self, **params):
        """Subscribe and return the first ('subscribed') reply."""
        self.call('io.pressured.Subscribe', params, more=True)
        return self.recv()

    def is_closed(self, timeout=2.0):
        """True if the peer closes within @timeout; data that arrives is kept for recv()."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        self.buf += data
        return data == b''

    def close(self):
        self.sock.close()


class Daemon:
    """The built daemon on a temporary socket, stopped on exit."""

    def __init__(self, args=(), config_text=None, cgroup_root=None, cgroup_v1_root=None, env=None,
                 socket_path=None, log_level='debug'):
        self.tmpdir = tempfile.mkdtemp(prefix='pressured-test-')
        os.chmod(self.tmpdir, 0o755)
        self.socket = socket_path or os.path.join(self.tmpdir, 'io.pressured')
        self.args = list(args)
        self.cgroup_root = cgroup_root
        self.cgroup_v1_root = cgroup_v1_root
        self.config = None
        if config_text is not None:
            self.write_config(config_text)
        self.env = dict(os.environ)
        if env:
            self.env.update(env)
        self.log_level = log_level
        self.proc = None
        self.log_path = os.path.join(self.tmpdir, 'daemon.log')

    def write_config(self, text):
        self.config = os.path.join(self.tmpdir, 'test.conf')
        with open(self.config, 'w') as f:
            f.write(text)

    def command(self):
        cmd = WRAPPER + [PRESSURED, '--socket', self.socket, '--log-level', self.log_level]
        if self.config:
            cmd += ['--config', self.config]
        if self.cgroup_root:
            cmd += ['--cgroup-root', self.cgroup_root]
        if self.cgroup_v1_root:
            cmd += ['--cgroup-v1-root', self.cgroup_v1_root]
        return cmd + self.args

    def start(self, wait=True):
        self.logf = open(self.log_path, 'a')
        self.proc = subprocess.Popen(self.command(), env=self.env, stdout=self.logf, stderr=subprocess.STDOUT,
                                     pass_fds=())
        if wait:
            def ready():
                if self.proc.poll() is not None:
                    raise RuntimeError(f'daemon exited with {self.proc.returncode}:\n{self.log()}')
                try:
                    Varlink(self.socket).close()
                    return True
                except OSError:
                    return False
            wait_for(ready, timeout=30 if WRAPPER or IN_VM else 10, what='daemon socket')
        return self

    @property
    def pid(self):
        return self.proc.pid

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def stop(self, timeout=30):
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.logf.close()
        if STRICT_EXIT and rc not in (0, None):
            raise AssertionError(f'daemon exited {rc} on SIGTERM (memory error or leak?):\n{self.log()}')
        return rc

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.logf.close()

    def fds(self):
        """The daemon's open fds as {fd: target}."""
        d = f'/proc/{self.pid}/fd'
        out = {}
        for fd in os.listdir(d):
            try:
                out[int(fd)] = os.readlink(os.path.join(d, fd))
            except OSError:
                pass
        return out

    def non_socket_fds(self):
        """The daemon's fds other than sockets: kernel registrations, files, epoll
        sets. Client sockets come and go as connections are reaped, so fd
        baselines that must not race with that count these."""
        return sorted(t for t in self.fds().values() if not t.startswith('socket:'))

    def context_switches(self):
        return process_context_switches(self.pid)

    def rss_kib(self):
        for line in open(f'/proc/{self.pid}/status'):
            if line.startswith('VmRSS'):
                return int(line.split()[1])
        return 0

    def own_memory(self):
        """(KiB, how) of the daemon's own memory, measured so that a bound on
        its growth means something in this run; (None, why) where it cannot
        be. A plain build: its RSS. Under valgrind the process is the tool's,
        so: the heap memcheck counts in use (every loss record of a leak
        search through vgdb, reachable or not). With AddressSanitizer, which
        keeps freed memory in quarantine and maps shadow memory: the heap it
        counts in use (__sanitizer_get_current_allocated_bytes(), called
        through gdb)."""
        if WRAPPER and 'valgrind' in os.path.basename(WRAPPER[0]):
            return self._valgrind_heap()
        if WRAPPER:
            return None, f'the daemon runs under {os.path.basename(WRAPPER[0])}, whose heap is not read here'
        if daemon_sanitized():
            return self._asan_heap()
        return self.rss_kib(), 'RSS'

    def _valgrind_heap(self):
        if not shutil.which('vgdb'):
            return None, 'the daemon runs under valgrind, and vgdb is not installed to ask it for the heap in use'
        res = subprocess.run(['vgdb', f'--pid={self.proc.pid}', 'leak_check', 'full', 'reachable', 'any'],
                             capture_output=True, text=True, timeout=scaled(30))
        records = re.findall(r'== ([\d,]+) (?:\(([\d,]+) direct, [\d,]+ indirect\) )?bytes in [\d,]+ blocks are',
                             res.stdout)
        check(res.returncode == 0 and records, 'vgdb leak_check answers', res.returncode, res.stdout, res.stderr)
        total = sum(int((direct or whole).replace(',', '')) for whole, direct in records)
        return total // 1024, 'heap in use (valgrind)'

    def _asan_heap(self):
        if not shutil.which('gdb'):
            return None, 'the daemon is built with AddressSanitizer, and gdb is not installed to ask it for the heap'
        res = subprocess.run(['gdb', '-p', str(self.pid), '-batch', '-nx', '-ex',
                              'print (unsigned long) __sanitizer_get_current_allocated_bytes()'],
                             capture_output=True, text=True, timeout=scaled(60))
        m = re.search(r'^\$1 = (\d+)$', res.stdout, re.M)
        check(m is not None, 'gdb reads the heap in use', res.returncode, res.stdout, res.stderr)
        return int(m.group(1)) // 1024, 'heap in use (AddressSanitizer)'

    def status(self):
        v = Varlink(self.socket)
        try:
            return v.call_sync('io.pressured.GetStatus')['parameters']
        finally:
            v.close()

    def inject(self, level='critical', cgroup=None):
        v = Varlink(self.socket)
        try:
            p = {'level': level}
            if cgroup:
                p['cgroup'] = cgroup
            return v.call_sync('io.pressured.Inject', p)
        finally:
            v.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            if exc[0] is not None:
                sys.stderr.write(f'--- daemon log ---\n{self.log()}\n')
            shutil.rmtree(self.tmpdir, ignore_errors=True)


BASH_COMPLETION = '/usr/share/bash-completion/bash_completion'


def have_bash_completion(what):
    """True if bash and bash-completion are installed, to check pressurectl's
    completion; else @what is left out with skip_part()."""
    if os.path.exists(BASH_COMPLETION) and shutil.which('bash'):
        return True
    skip_part(f'{what}: bash-completion is not installed')
    return False


def complete(words):
    """What pressurectl's bash completion offers for the command line @words,
    whose last word is the one being completed (have_bash_completion() first)."""
    comp = os.path.join(BUILD_ROOT, 'client', 'pressurectl', 'completion', 'pressurectl')
    line = ' '.join(words)
    script = (f'source {BASH_COMPLETION}; source {comp}; COMP_WORDS=({" ".join(shlex.quote(w) for w in words)}); '
              f'COMP_CWORD={len(words) - 1}; COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; '
              '_pressurectl 2>/dev/null; echo "${COMPREPLY[@]}"')
    res = subprocess.run(['bash', '-c', script], capture_output=True, text=True, timeout=30)
    return res.stdout.split()


def run_ctl(*args, socket=None, timeout=10, user=None, input=None, env=None):
    cmd = [PRESSURECTL]
    if socket:
        cmd += ['--socket', socket]
    cmd += list(args)
    if user:
        pw = pwd.getpwnam(user)
        cmd = ['setpriv', f'--reuid={pw.pw_uid}', f'--regid={pw.pw_gid}', '--clear-groups'] + cmd
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input, env=e)


def first_line(cmd):
    """Start @cmd, return the first line of its stdout (with its newline, or
    '' if it ended without one), then kill it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return proc.stdout.readline()
    finally:
        proc.kill()
        proc.communicate()


def as_user(user):
    """preexec_fn that drops to @user (for subprocesses run as an unprivileged peer)."""
    pw = pwd.getpwnam(user)

    def fn():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return fn


# real_cgroups(v1=IF_PRESENT): the v1 memory cgroup where the machine has
# that hierarchy, None on a pure cgroup2 host.
IF_PRESENT = 'if present'


def have_v1_memory():
    """True if the machine has a cgroup v1 memory hierarchy (vmpressure)."""
    return os.path.exists(os.path.join(V1_MEMORY_ROOT, 'cgroup.event_control'))


@contextlib.contextmanager
def v2_cgroup_part(tag):
    """A uniquely named, empty directory in the real cgroup2 hierarchy for
    one part of a test; always removed (it may be gone already). Yields its
    path relative to V2_ROOT ('/pressured-test-TAG-…'), or None when the
    machine has no cgroup2 hierarchy or we are not root: the part is then
    left out with skip_part()."""
    if not V2_ROOT or not os.path.exists(os.path.join(V2_ROOT, 'cgroup.procs')):
        skip_part('no cgroup2 hierarchy to test against')
        yield None
        return
    if os.geteuid() != 0:
        skip_part('creating a cgroup needs root')
        yield None
        return
    name = f'/pressured-test-{tag}-{uuid.uuid4().hex[:8]}'
    os.mkdir(V2_ROOT + name)
    try:
        yield name
    finally:
        try:
            os.rmdir(V2_ROOT + name)
        except FileNotFoundError:
            pass


@contextlib.contextmanager
def real_cgroups(v1=True, v2=True, limit='64M', limited=False):
    """Create uniquely named cgroups in the real hierarchies; always removed.

    @v1, @v2: True: make the cgroup in that hierarchy, skip (exit 77) if the
    machine lacks it; False: do not. @v1 may also be IF_PRESENT: made
    where the machine has a cgroup v1 memory hierarchy, None on a pure
    cgroup2 host, so that a test runs its cgroup2 parts there and leaves
    out only its v1 ones.
    @limit: a memory limit written where the cgroups can hold one: the v1
    directory's memory.limit_in_bytes, and the cgroup2 directory's
    memory.max when cgroup2 has the memory controller (a pure cgroup2
    host; on a hybrid one the memory controller is v1's). None: no limit.
    @limited: skip unless @limit binds what runs in the cgroup2 directory
    (run_in_cgroups() puts a process in both): its memory.max, or, on a
    hybrid host, the v1 memory cgroup of the same name, whose reclaim the
    kernel accounts to the cgroup2 directory's PSI.
    Yields (name, v1_dir or None, v2_dir or None).
    """
    require_root("real cgroups are made in the machine's hierarchies")
    name = f'pressured-test-{uuid.uuid4().hex[:12]}'
    made = []
    try:
        v1dir = v2dir = None
        if v1:
            if have_v1_memory():
                v1dir = os.path.join(V1_MEMORY_ROOT, name)
                os.mkdir(v1dir)
                made.append(v1dir)
                if limit:
                    with open(os.path.join(v1dir, 'memory.limit_in_bytes'), 'w') as f:
                        f.write(limit)
            elif v1 != IF_PRESENT:
                skip('no cgroup v1 memory hierarchy at ' + V1_MEMORY_ROOT)
        if v2:
            if not os.path.exists(os.path.join(V2_ROOT, 'cgroup.procs')):
                skip('no cgroup2 hierarchy at ' + V2_ROOT)
            v2dir = os.path.join(V2_ROOT, name)
            os.mkdir(v2dir)
            made.append(v2dir)
            if not os.path.exists(os.path.join(v2dir, 'memory.pressure')):
                skip('PSI is not available in cgroup2 directories (memory.pressure missing)')
            v2max = os.path.join(v2dir, 'memory.max')
            if limit and os.path.exists(v2max):
                with open(v2max, 'w') as f:
                    f.write(limit)
            if limited and not (limit and (v1dir or os.path.exists(v2max))):
                skip(f'nothing can limit the memory of {v2dir}: cgroup2 has no memory controller there '
                     f'(no memory.max; see {V2_ROOT}/cgroup.subtree_control) and no cgroup v1 memory '
                     'cgroup is made beside it')
        yield '/' + name, v1dir, v2dir
    finally:
        for d in reversed(made):
            remove_cgroup(d)


@contextlib.contextmanager
def quiet_cgroup():
    """An empty cgroup2 directory of the test's own, for subscriptions that
    must receive only the events the test injects; always removed.

    The whole-system registration on "/" reads /proc/pressure/memory, so it
    gets real events whenever anything on the machine stalls on memory
    (other builds, VMs); a cgroup without tasks never stalls, so the kernel
    never reports pressure on it. Nothing that could stall on memory may
    run in it (an idle client waiting for events may). Skips (exit 77)
    without root, cgroup2 or PSI in cgroup2 directories. Yields the cgroup
    as the daemon names it, e.g. "/pressured-test-123-0a1b2c3d".
    """
    require_root('the quiet cgroup is made in the machine\'s cgroup2 hierarchy')
    root = cgroup2_mount()
    if root is None:
        skip('no cgroup2 mount in /proc/self/mountinfo for a quiet cgroup')
    if not os.path.exists(os.path.join(root, 'cgroup.procs')):
        skip(f'{root} is no cgroup2 hierarchy (no cgroup.procs) for a quiet cgroup')
    name = f'pressured-test-{os.getpid()}-{uuid.uuid4().hex[:8]}'
    d = os.path.join(root, name)
    os.mkdir(d)
    try:
        if not os.path.exists(os.path.join(d, 'memory.pressure')):
            skip('PSI is not available in cgroup2 directories (memory.pressure missing)')
        yield '/' + name
    finally:
        remove_cgroup(d)


def remove_cgroup(d):
    """Move any process out, then rmdir (retrying while the kernel lets go)."""
    root = os.path.dirname(d)
    try:
        with open(os.path.join(d, 'cgroup.procs')) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(os.path.join(root, 'cgroup.procs'), 'w') as f:
                    f.write(pid)
            except OSError:
                pass
    except OSError:
        pass
    for _ in range(100):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


# The epoll_wait() system calls and the argument that is their timeout, by machine (asm/unistd.h).
_EPOLL_WAIT = {'x86_64': {'232': 4, '281': 4}, 'aarch64': {'22': 4}}


def epoll_wait_timeout(pid):
    """The timeout (ms; -1: none) of the epoll_wait() the main thread of
    @pid is blocked in, from /proc/PID/syscall; None while it is not
    blocked in one (running, or in another system call). -1 proves that it
    has no timer armed and will wake only for I/O: a test's proof that an
    idle daemon stays idle, without waiting on the clock. Skips (exit 77)
    on a machine this does not know the system calls of."""
    calls = _EPOLL_WAIT.get(os.uname().machine)
    if calls is None:
        skip(f'no table of the epoll_wait() system calls for {os.uname().machine}')
    try:
        with open(f'/proc/{pid}/syscall') as f:
            fields = f.read().split()
    except OSError:
        return None
    if not fields or fields[0] not in calls:
        return None
    t = int(fields[calls[fields[0]]], 16) & 0xffffffff  # fields[N]: the Nth argument
    return -1 if t == 0xffffffff else t


def process_context_switches(pid):
    """Voluntary plus involuntary context switches of every thread of @pid."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/status') as f:
                for line in f:
                    if line.startswith(('voluntary_ctxt_switches', 'nonvoluntary_ctxt_switches')):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def run_in_cgroups(cmd, v1dir, v2dir, **kw):
    """Start @cmd in its own session inside the given cgroups (either may be None)."""
    def enter():
        pid = str(os.getpid())
        for d in (v1dir, v2dir):
            if d:
                with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                    f.write(pid)
    return subprocess.Popen(cmd, preexec_fn=enter, start_new_session=True, **kw)


@contextlib.contextmanager
def memory_load(v1dir, v2dir, size_mb=200):
    """A shell loop in the cgroups writing a file larger than the limit and
    reading it back. The file is on a disk, whose page cache can be
    reclaimed: /var/tmp, or in the VM of tests/vm/run.sh its scratch disk
    (the VM's /var/tmp lives in its memory)."""
    tmp = tempfile.mkdtemp(prefix='pressured-load-', dir=os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp'))
    script = (f'while :; do dd if=/dev/zero of={tmp}/f bs=1M count={size_mb} status=none; '
              f'cat {tmp}/f > /dev/null; rm -f {tmp}/f; done')

    proc = run_in_cgroups(['sh', '-c', script], v1dir, v2dir)
    try:
        yield proc
    finally:
        kill_group(proc)
        # dd or cat may still be dying with a file open: wait for the group to be gone.
        wait_for(lambda: not process_group_alive(proc.pid), what='the memory load to exit')
        shutil.rmtree(tmp, ignore_errors=True)


def kill_group(proc):
    """SIGKILL the process group led by @proc (a Popen started in a session
    of its own) and reap @proc."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def process_group_alive(pgid):
    """True while a process of group @pgid runs (zombies do not count)."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rpartition(')')[2].split()
        except OSError:
            continue
        if fields[0] != 'Z' and int(fields[2]) == pgid:
            return True
    return False


def unix_connect(path, data=b''):
    """A stream connection to the AF_UNIX socket @path, @data written to it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if data:
        s.sendall(data)
    return s


def socket_fds(pid):
    """How many sockets process @pid has open (0 if it is gone)."""
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        return 0
    n = 0
    for fd in fds:
        try:
            n += os.readlink(f'/proc/{pid}/fd/{fd}').startswith('socket:')
        except OSError:
            pass
    return n


def make_fake_tree(root, nodes):
    """Write a fake cgroup2 tree: nodes maps '/a/b' -> dict(current=, min=, low=, events=)."""
    for path, v in nodes.items():
        d = os.path.join(root, path.lstrip('/'))
        os.makedirs(d, exist_ok=True)
        for key, fname in (('current', 'memory.current'), ('min', 'memory.min'), ('low', 'memory.low')):
            if key in v:
                with open(os.path.join(d, fname), 'w') as f:
                    f.write(f'{v[key]}\n')
        ev = v.get('events', {'low': 0, 'high': 0, 'max': 0, 'oom': 0, 'oom_kill': 0})
        with open(os.path.join(d, 'memory.events'), 'w') as f:
            f.write(''.join(f'{k} {n}\n' for k, n in ev.items()))
        with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
            f.write('')


def write_file(path, text):
    """Rewrite a file in place (same inode), as the kernel updates cgroup files."""
    with open(path, 'r+') as f:
        f.truncate(0)
        f.write(text)


def run_as(user, fn, *args):
    """Run fn(*args) in a forked child that dropped to @user; return its result.

    The result must be JSON-serializable; it travels back over a pipe. An
    exception in the child is raised here as an AssertionError with its
    traceback text.
    """
    import traceback
    pw = pwd.getpwnam(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                os.setgroups([])
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
                out = {'ok': True, 'result': fn(*args)}
            except BaseException:
                out = {'ok': False, 'error': traceback.format_exc()}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        data = os.read(r, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    os.waitpid(pid, 0)
    data = b''.join(chunks)
    if not data:
        raise AssertionError(f'the child running as {user} died without reporting')
    out = json.loads(data)
    if not out['ok']:
        raise AssertionError(f'in the child running as {user}:\n{out["error"]}')
    return out['result']


def daemon_sanitized():
    """True if the daemon is built with AddressSanitizer."""
    with open(PRESSURED, 'rb') as f:
        return b'__asan_init' in f.read()


class FakeVarlinkServer:
    """A varlink server in the daemon's place, for testing clients against
    answers the real daemon does not give on demand. Every call read from a
    connection is passed to @respond(call), which returns the messages to
    send back (a list of dicts, each framed with its NUL, or bytes sent as
    they are, for garbage), or None to hang up without an answer; the
    connection stays open until the client hangs up or
    drop_connections(). A generator of such lists sends each as it comes,
    so a stream can wait for something between its events (a None among
    them hangs up). Each connection is served by a thread of its own,
    so a client may hold a stream open and make calls meanwhile, as with
    the daemon."""

    def __init__(self, path, respond):
        self.path = path
        self.respond = respond
        self.conns = set()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.add(conn)
            threading.Thread(target=self._serve_connection, args=(conn,), daemon=True).start()

    def _serve_connection(self, conn):
        with conn:
            buf = b''
            try:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    buf += data
                    while b'\0' in buf:
                        msg, _, buf = buf.partition(b'\0')
                        out = self.respond(json.loads(msg))
                        for batch in (out if inspect.isgenerator(out) else [out]):
                            if batch is None:
                                return
                            conn.sendall(b''.join(m if isinstance(m, bytes) else json.dumps(m).encode() + b'\0'
                                                  for m in batch))
            except OSError:
                pass
            finally:
                with self.lock:
                    self.conns.discard(conn)

    def drop_connections(self):
        """Hang up every connection, as a daemon that crashed would."""
        with self.lock:
            conns = list(self.conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        """Stop listening. The accepting thread ends before the socket's descriptor is given
        up: a server made next can get the same number, and a thread about to accept() on it
        would serve that one's clients with this one's answers."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes accept() with EINVAL
        except OSError:
            pass
        self.thread.join()
        self.sock.close()
