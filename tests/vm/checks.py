#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The vm suite: pressured as installed, under systemd, on a real cgroup v2 host.

Runs inside the VM of tests/vm/run.sh (as root, systemd as PID 1, the
project installed and pressured.socket listening) and prints TAP: one line
per check, with what was measured after '#'. Each check waits on conditions
with generous deadlines, never on fixed sleeps: under TCG everything is
about ten times slower than on real hardware.
"""
import ctypes
import json
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import pressured_test as pt  # noqa: E402

# The installed client, as a user runs it (run.sh installed the build).
pt.PRESSURECTL = shutil.which('pressurectl') or pt.PRESSURECTL

SOCKET = '/run/pressured/io.pressured'
CGROOT = '/sys/fs/cgroup'
SCRATCH = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
SERVICE = 'pressured.service'
# The configuration of the build run.sh installed (/usr/local/etc/pressured for the default prefix).
CONF_DIR = os.path.join(pt.install_dir('sysconfdir'), 'pressured')
DROPIN_DIR = '/etc/systemd/system/pressured.service.d'
MIB = 1 << 20
# Deadlines: generous, the guest is emulated.
REPLY = 60.0
EVENT = 180.0
START = time.monotonic()
# Checks read only the journal entries from the suite's start on.
SINCE = f'@{int(time.time()) - 1}'

results = []


def sh(*cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f'{" ".join(cmd)} exited {r.returncode}: {r.stderr.strip()}')
    return r


def show(prop, unit=SERVICE):
    return sh('systemctl', 'show', '-P', prop, unit).stdout.strip()


def wait_for(pred, timeout, what):
    return pt.wait_for(pred, timeout=timeout, interval=0.1, what=what)


def mib(n):
    return f'{n / MIB:.1f}M'


def journal(*match):
    """Entries of pressured.service since the suite started, as dicts."""
    out = sh('journalctl', '-o', 'json', '--no-pager', '--since', SINCE, '-u', SERVICE, *match).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def varlink():
    return pt.Varlink(SOCKET, timeout=REPLY)


def call(method, params=None):
    v = varlink()
    try:
        msg = v.call_sync(method, params)
    finally:
        v.close()
    if 'error' in msg:
        raise AssertionError(f'{method} failed: {msg!r}')
    return msg['parameters']


def subscribe(**params):
    v = varlink()
    msg = v.subscribe(**params)
    if 'error' in msg:
        v.close()
        raise AssertionError(f'Subscribe {params!r} failed: {msg!r}')
    ev = msg['parameters']['event']
    pt.check(ev['kind'] == 'subscribed', 'first event is not subscribed', ev)
    return v, ev


def next_event(v, timeout=EVENT, kinds=None):
    """The next event of @kinds (any if None) within @timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no {kinds or "event"} within {timeout:.0f} s')
        msg = v.recv(timeout=left)
        if 'error' in msg:
            raise AssertionError(f'error on the stream: {msg!r}')
        ev = msg['parameters']['event']
        if kinds is None or ev['kind'] in kinds:
            return ev, msg


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read().strip()


def mkcg(path, **files):
    d = os.path.join(CGROOT, path.lstrip('/'))
    os.mkdir(d)
    for k, v in files.items():
        write(os.path.join(d, k.replace('_', '.', 1)), str(v))
    return d


def rmcg(path):
    d = os.path.join(CGROOT, path.lstrip('/'))
    if not os.path.isdir(d):
        return
    for sub in sorted(os.listdir(d)):
        if os.path.isdir(os.path.join(d, sub)):
            rmcg(os.path.join(path, sub))
    try:
        pids = read(os.path.join(d, 'cgroup.procs')).split()
    except OSError:
        pids = []
    for p in pids:
        try:
            os.kill(int(p), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    wait_for(lambda: not read(os.path.join(d, 'cgroup.procs')), 60, f'{path} to empty')
    wait_for(lambda: _try_rmdir(d), 60, f'rmdir {path}')


def _try_rmdir(d):
    try:
        os.rmdir(d)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def run_in(path, cmd, **kw):
    d = os.path.join(CGROOT, path.lstrip('/'))

    def enter():
        write(os.path.join(d, 'cgroup.procs'), str(os.getpid()))
    return subprocess.Popen(cmd, preexec_fn=enter, start_new_session=True, **kw)


def pagecache(path, name, size_mb):
    """Write @size_mb of clean page cache charged to cgroup @path."""
    f = os.path.join(SCRATCH, name)
    p = run_in(path, ['dd', 'if=/dev/zero', f'of={f}', 'bs=1M', f'count={size_mb}',
                      'conv=fsync', 'status=none'])
    pt.check(p.wait(timeout=600) == 0, f'dd into {f} failed')


def stream_load(path, size_mb):
    """Write and re-read a @size_mb file on the scratch disk in a loop, in @path."""
    f = os.path.join(SCRATCH, 'load-' + path.strip('/').replace('/', '-'))
    script = (f'while :; do dd if=/dev/zero of={f} bs=1M count={size_mb} status=none; '
              f'cat {f} > /dev/null; cat {f} > /dev/null; rm -f {f}; done')
    return run_in(path, ['sh', '-c', script])


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def check(name):
    def deco(fn):
        results.append((name, fn))
        return fn
    return deco


class Skip(SystemExit):
    """A check that cannot run here, with the reason: the only way a check is reported as skipped.
    A SystemExit of its own, so that no `except Exception` on the way swallows it."""


def skip(reason):
    raise Skip(reason)


# The harness's skip() inside a check (a helper that finds a feature missing) is an explicit
# skip with its reason too, not an exit of the whole suite.
pt.skip = skip


# --- the service under PID 1 -------------------------------------------------

@check('socket activation: inactive before the first client, active after it')
def t_socket_activation():
    pt.check(show('ActiveState', 'pressured.socket') == 'active', 'pressured.socket is not active')
    before = show('ActiveState')
    pt.check(before == 'inactive', 'pressured.service is not inactive before the first client', before)
    t0 = time.monotonic()
    st = call('io.pressured.GetStatus')
    answered = time.monotonic() - t0
    wait_for(lambda: show('ActiveState') == 'active', REPLY, 'pressured.service active')
    pt.check(st['cgroup']['v2_root'] == CGROOT, 'v2 root', st['cgroup'])
    return f'first GetStatus answered in {answered:.2f} s by a daemon started on demand'


@check('1 s PSI windows are kept, not adjusted, under the shipped unit')
def t_psi_1s():
    v, ev = subscribe(psi={'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000})
    v.close()
    pt.check(ev['adjusted'] is False, 'a 1 s window was adjusted', ev)
    pt.check(psi_of(ev)['window_us'] == 1000000, 'trigger window', ev['trigger'])
    v, ev = subscribe(level='low')
    v.close()
    pt.check(ev['adjusted'] is False and psi_of(ev)['window_us'] == 1000000,
             'the default level low (1 s) was adjusted', ev)
    return f'explicit psi and level low: trigger {psi_of(ev)}, adjusted false'


def psi_of(ev):
    """The PSI trigger a 'subscribed' event says the daemon registered."""
    return ev['trigger'].get('psi', ev['trigger'])


def level_low_threshold():
    v, ev = subscribe(level='low')
    v.close()
    return psi_of(ev)['threshold_us']


@check('systemctl reload applies a configuration change; subscriptions survive')
def t_reload():
    os.makedirs(CONF_DIR, exist_ok=True)
    conf = os.path.join(CONF_DIR, 'pressured.conf')
    keep, _ = subscribe(level='medium')
    write(conf, '[Levels]\nLow=some 80ms 1s\n')
    try:
        t0 = time.monotonic()
        sh('systemctl', 'reload', SERVICE)
        wait_for(lambda: level_low_threshold() == 80000, REPLY, 'level low at 80 ms after reload')
        took = time.monotonic() - t0
    finally:
        os.unlink(conf)
    pid = show('MainPID')
    st = call('io.pressured.GetStatus')
    pt.check(st['subscriptions'] >= 1, 'the live subscription did not survive the reload', st)
    keep.close()
    wait_for(lambda: journal('MESSAGE_ID=bb8dd7f7f9864ea0b5fbcdf483a9a349'), REPLY, 'the reload logged')
    return f'new Low= in effect {took:.2f} s after systemctl reload, same MainPID {pid}'


@check('a bad configuration keeps the old one and logs why')
def t_bad_config():
    conf = os.path.join(CONF_DIR, 'pressured.conf')
    write(conf, '[Levels]\nLow=some 80ms 1s\n')
    sh('systemctl', 'reload', SERVICE)
    wait_for(lambda: level_low_threshold() == 80000, REPLY, 'level low at 80 ms')
    try:
        write(conf, '[Levels]\nLow=some 90ms 1s\nBogusKey=1\n')
        sh('systemctl', 'reload', SERVICE)
        rejected = wait_for(lambda: journal('MESSAGE_ID=e8968915283b4de1a599e8a2f21778e2'), REPLY,
                            'the rejection logged')
        text = rejected[-1]['MESSAGE']
        pt.check('BogusKey' in text and 'pressured.conf' in text, 'the log does not say why', text)
        pt.check(show('ActiveState') == 'active', 'the service did not survive a bad configuration')
        pt.check(level_low_threshold() == 80000, 'the previous configuration was not kept')
    finally:
        os.unlink(conf)
        sh('systemctl', 'reload', SERVICE)
    wait_for(lambda: level_low_threshold() == 70000, REPLY, 'the default Low= back')
    return f'old Low= kept; logged: "{text}"'


@check('watchdog: with WatchdogSec=3s a SIGSTOPped daemon is restarted and takes its streams over')
def t_watchdog():
    os.makedirs(DROPIN_DIR, exist_ok=True)
    write(os.path.join(DROPIN_DIR, 'watchdog.conf'), '[Service]\nWatchdogSec=3s\n')
    try:
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'restart', SERVICE)
        pt.check(show('WatchdogUSec') == '3s', 'WatchdogUSec', show('WatchdogUSec'))
        old = show('MainPID')
        watch = subprocess.Popen([pt.PRESSURECTL, '--json', 'watch', '--level', 'critical',
                                  '--count', '1', '--timeout', '400'],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Stopped only once pressurectl has its "subscribed": the stream is then in the fd store's state.
        first = watch.stdout.readline()
        pt.check(first.startswith('{') and json.loads(first).get('kind') == 'subscribed',
                 'pressurectl\'s first line', first)
        t0 = time.monotonic()
        os.kill(int(old), signal.SIGSTOP)
        new = wait_for(lambda: (show('MainPID') not in ('0', old) and show('ActiveState') == 'active'
                                and show('MainPID')), 120, 'a new daemon')
        restarted = time.monotonic() - t0
        wait_for(lambda: call('io.pressured.GetStatus')['subscriptions'] >= 1, 120,
                 'pressurectl resubscribed')
        resub = time.monotonic() - t0
        d = call('io.pressured.Inject', {'level': 'critical'})
        pt.check(d['delivered'] >= 1, 'inject reached nobody', d)
        out, err = watch.communicate(timeout=REPLY)
        pt.check(watch.returncode == 0, 'pressurectl watch exit', watch.returncode, out, err)
        kinds = [json.loads(line).get('kind') for line in out.splitlines() if line.startswith('{')]
        # The new process took the connection over from the fd store: the stream goes on.
        pt.check(kinds == ['pressure'], 'pressurectl output after the takeover', out)
        result = [e for e in journal('_PID=1') if 'watchdog' in e.get('MESSAGE', '').lower()]
        pt.check(result, 'systemd logged no watchdog timeout')
        return (f'pid {old} stopped; systemd restarted it as {new} after {restarted:.1f} s '
                f'("{result[0]["MESSAGE"]}"); the stream went on, counted after {resub:.1f} s')
    finally:
        os.unlink(os.path.join(DROPIN_DIR, 'watchdog.conf'))
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'restart', SERVICE)


# --- kernel sources -----------------------------------------------------------

@check('real reclaim in a cgroup gives level, psi and protection events')
def t_reclaim():
    cg = '/pvm-reclaim'
    rmcg(cg)
    mkcg(cg, memory_max=str(64 * MIB), memory_low=str(16 * MIB))
    try:
        subs = {'level': subscribe(cgroup=cg, level='low')[0],
                'psi': subscribe(cgroup=cg, psi={'stall': 'some', 'threshold_us': 50000,
                                                 'window_us': 1000000})[0],
                'protection': subscribe(cgroup=cg, protection=True)[0]}
        t0 = time.monotonic()
        load = stream_load(cg, 160)
        try:
            got = {}
            for name, v in subs.items():
                kind = 'protection' if name == 'protection' else 'pressure'
                ev, _ = next_event(v, kinds=(kind,))
                got[name] = (time.monotonic() - t0, ev)
        finally:
            stop(load)
            for v in subs.values():
                v.close()
        pt.check(got['level'][1]['source'] == 'psi', 'level source', got['level'][1])
        return '; '.join(f'{k} first event after {t:.1f} s' +
                         (f' ({ev["previous"]}->{ev["state"]})' if k == 'protection' else
                          f' ({ev.get("level") or ev.get("psi", {}).get("some_avg10")})')
                         for k, (t, ev) in got.items())
    finally:
        rmcg(cg)


# Episodes with 1 s windows. The hold is set to EPISODE_HOLD through
# [Levels] ClearAfterSec= rather than the default two windows (2 s): under
# TCG a new load can take longer than 2 s to stall again, and "load again
# within the hold period" must not depend on that. The systemd watchdog is
# off (a drop-in, WatchdogSec=0) while this runs, so that the idle interval
# after "cleared" must show exactly 0 wakeups, pings included.
EPISODE_HOLD = 20
EPISODE_QUIET = 5.0
EPISODE_EVENTS = 3      # pressure events each load runs for


def episode_reg(cg):
    regs = [r for r in call('io.pressured.GetStatus')['registrations']
            if r['cgroup'] == cg and r['source'] == 'psi']
    pt.check(len(regs) == 1, f'one psi registration on {cg}', regs)
    return regs[0].get('episode'), regs[0]['history']


class EpisodeStream:
    """A subscription's events, read in order, seq checked."""

    def __init__(self, v, first):
        self.v, self.first, self.seq = v, first, None
        self.last_pressure = None
        self.pressure = 0       # pressure events read since the last cleared

    def read(self, timeout):
        ev, msg = next_event(self.v, timeout=timeout)
        pt.check(ev['kind'] in ('pressure', 'cleared'), 'only pressure and cleared events', ev)
        if self.seq is not None:
            pt.check(ev['seq'] == self.seq + 1, 'seq has no gap', self.seq, ev)
        self.seq = ev['seq']
        if ev['kind'] == 'pressure':
            self.last_pressure = ev
            self.pressure += 1
        return ev

    def until_pressure(self):
        ev = self.read(EVENT)
        pt.check(ev['kind'] == 'pressure', 'no cleared while a load runs', ev)
        return ev

    def until_cleared(self, stopped):
        """Pressure events until "cleared"; (cleared, seconds from @stopped to its
        arrival, pressure events read in the episode)."""
        end = time.monotonic() + EPISODE_HOLD + EVENT
        while True:
            ev = self.read(max(end - time.monotonic(), 0.1))
            if ev['kind'] == 'cleared':
                seen, self.pressure = self.pressure, 0
                return ev, time.monotonic() - stopped, seen


def episode_load(cg, s, n=EPISODE_EVENTS):
    """Load @cg until @s has @n pressure events; (the first, the monotonic time
    the load's processes were gone)."""
    load = stream_load(cg, 160)
    try:
        ev = s.until_pressure()
        for _ in range(n - 1):
            s.until_pressure()
    finally:
        stop(load)
    procs = os.path.join(CGROOT, cg.lstrip('/'), 'cgroup.procs')
    wait_for(lambda: not read(procs), REPLY, f'{cg} empty after the load')
    return ev, time.monotonic()


def daemon_ctxt():
    return pt.process_context_switches(int(show('MainPID')))


@check('episodes with 1 s windows: exactly one cleared after the load; a load within the hold '
       'continues the episode, one after it starts a new one; 0 wakeups once cleared')
def t_episodes():
    cg = '/pvm-episodes'
    conf = os.path.join(CONF_DIR, 'pressured.conf')
    dropin = os.path.join(DROPIN_DIR, 'episodes-no-watchdog.conf')
    rmcg(cg)
    mkcg(cg, memory_max=str(64 * MIB), memory_low=str(16 * MIB))
    os.makedirs(CONF_DIR, exist_ok=True)
    os.makedirs(DROPIN_DIR, exist_ok=True)
    write(dropin, '[Service]\nWatchdogSec=0\n')
    v = None
    try:
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'restart', SERVICE)
        pt.check(show('WatchdogUSec') in ('0', 'infinity'), 'the watchdog is not off', show('WatchdogUSec'))
        write(conf, f'[Levels]\nClearAfterSec={EPISODE_HOLD}\n')
        sh('systemctl', 'reload', SERVICE)
        # The reload is asynchronous: the level registrations it rebuilds
        # are not observable, so wait for its journal entry.
        pid = show('MainPID')
        wait_for(lambda: journal('MESSAGE_ID=bb8dd7f7f9864ea0b5fbcdf483a9a349', f'_PID={pid}'),
                 REPLY, 'the reload with ClearAfterSec= logged')
        v, first = subscribe(cgroup=cg, psi={'stall': 'some', 'threshold_us': 50000, 'window_us': 1000000})
        pt.check(first['adjusted'] is False and psi_of(first)['window_us'] == 1000000,
                 'the 1 s window was adjusted', first)
        s = EpisodeStream(v, first)

        # Episode 1: a load, stopped, and a load again at once, within the hold.
        e1, _ = episode_load(cg, s)
        ep1, hist = episode_reg(cg)
        pt.check(ep1 is not None and hist == [], 'an active episode, none ended', ep1, hist)
        _, stopped1 = episode_load(cg, s)
        ep2, hist = episode_reg(cg)
        pt.check(ep2 and ep2['active_since_us'] == ep1['active_since_us'] and ep2['events'] >= 2 and hist == [],
                 'a load within the hold period does not continue the episode', ep1, ep2, hist)
        c1, delay1, seen1 = s.until_cleared(stopped1)
        gap1 = (c1['monotonic_us'] - s.last_pressure['monotonic_us']) / 1e6
        _, hist = episode_reg(cg)
        pt.check(len(hist) == 1 and hist[0]['start_us'] == ep1['active_since_us'],
                 'one ended episode, begun by the first load', hist, ep1)
        pt.check(hist[0]['end_us'] / 1e6 > stopped1, 'cleared before the load ended', hist, stopped1)
        pt.check(c1['events'] >= max(ep2['events'], seen1, 2 * EPISODE_EVENTS),
                 'cleared does not count the events of both loads', c1, ep2, seen1)
        pt.check(0 < c1['peak'] <= 100, 'peak is not a percentage', c1)
        pt.check(gap1 >= EPISODE_HOLD - 1.1, 'cleared before the hold had passed', gap1, c1)

        # Episode 2: a load after the end is a new episode; the next event is
        # its pressure, not a second cleared (read() checks seq).
        e3, stopped2 = episode_load(cg, s)
        pt.check(e3['seq'] == c1['seq'] + 1, 'exactly one cleared per episode', c1, e3)
        c2, delay2, seen2 = s.until_cleared(stopped2)
        gap2 = (c2['monotonic_us'] - s.last_pressure['monotonic_us']) / 1e6
        _, hist = episode_reg(cg)
        pt.check(len(hist) == 2 and hist[1]['start_us'] > hist[0]['end_us'] and hist[1]['end_us'] / 1e6 > stopped2,
                 'a second episode with its own start, ended after its load', hist)
        pt.check(gap2 >= EPISODE_HOLD - 1.1, 'cleared before the hold had passed', gap2, c2)
        pt.check(c2['events'] >= seen2 >= EPISODE_EVENTS, 'events of the second episode', c2, seen2)
        pt.check(0 < c2['peak'] <= 100, 'peak is not a percentage', c2)

        # Cleared, subscriber still attached: no timer, no wakeup. Wait for
        # the GetStatus connection to be gone (no switch for 1 s), then count.
        state = {'n': daemon_ctxt(), 't': time.monotonic()}

        def settled():
            n = daemon_ctxt()
            if n != state['n']:
                state.update(n=n, t=time.monotonic())
            return time.monotonic() - state['t'] >= 1.0
        wait_for(settled, REPLY, 'the daemon idle')
        before = daemon_ctxt()
        readable, _, _ = select.select([v.sock], [], [], EPISODE_QUIET)
        woke = daemon_ctxt() - before
        pt.check(not readable and not v.buf, 'an event after cleared', v.buf)
        pt.check(woke == 0, 'wakeups after the episodes cleared', woke)
        return (f'hold {EPISODE_HOLD} s (ClearAfterSec=, reload), some 50ms 1s, adjusted false; '
                f'episode 1 (two loads): cleared {delay1:.1f} s after the load ended, '
                f'{gap1:.1f} s after its last event, duration_us {c1["duration_us"]}, '
                f'events {c1["events"]} ({seen1} read), peak {c1["peak"]:.1f}; '
                f'episode 2: cleared {delay2:.1f} s after the load ended, {gap2:.1f} s after its last '
                f'event, duration_us {c2["duration_us"]}, events {c2["events"]} ({seen2} read), peak {c2["peak"]:.1f}; '
                f'{woke} context switches in {EPISODE_QUIET:.0f} s after cleared (watchdog off by drop-in)')
    finally:
        if v:
            v.close()
        for f in (conf, dropin):
            if os.path.exists(f):
                os.unlink(f)
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'restart', SERVICE)
        rmcg(cg)
        try:
            os.unlink(os.path.join(SCRATCH, 'load-' + cg.strip('/')))
        except FileNotFoundError:
            pass


@check('memory_events on v2 report high, max and oom_kill from a real OOM in a leaf')
def t_oom():
    cg = '/pvm-oom'
    rmcg(cg)
    mkcg(cg, memory_high=str(24 * MIB), memory_max=str(32 * MIB))
    try:
        v, ev = subscribe(cgroup=cg, memory_events=True)
        t0 = time.monotonic()
        seen = {}
        hog = run_in(cg, ['/usr/bin/python3', '-c', 'b = b"x" * (256 << 20)'],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not all(k in seen for k in ('high', 'max', 'oom_kill')):
                ev, _ = next_event(v, kinds=('memory_events',))
                for k, n in ev['delta'].items():
                    if n > 0 and k not in seen:
                        seen[k] = time.monotonic() - t0
        finally:
            rc = hog.wait(timeout=EVENT)
            v.close()
        pt.check(rc == -signal.SIGKILL, 'the hog was not OOM-killed', rc)
        return ', '.join(f'{k} after {t:.1f} s' for k, t in sorted(seen.items(), key=lambda x: x[1]))
    finally:
        rmcg(cg)


@check('removing a subscribed cgroup ends its stream with removed')
def t_removed():
    cg = '/pvm-removed'
    rmcg(cg)
    mkcg(cg)
    v, _ = subscribe(cgroup=cg, memory_events=True)
    t0 = time.monotonic()
    os.rmdir(os.path.join(CGROOT, cg.lstrip('/')))
    ev, msg = next_event(v, timeout=REPLY, kinds=('removed',))
    took = time.monotonic() - t0
    pt.check(msg.get('continues') in (None, False), 'removed continues', msg)
    v.close()
    return f'removed {took:.2f} s after rmdir'


# --- the kernel tests, on a pure cgroup2 host ---------------------------------
#
# tests/kernel's tests that need only cgroup2 for most of what they check.
# Each starts the build's daemon on a socket of its own (not the installed
# service) and makes uniquely named cgroups, always removed. There is no
# cgroup v1 here: each leaves out its vmpressure part, saying so (and so
# exits 77, a skip), and checks that vmpressure is SourceUnavailable
# instead. They see PRESSURED_VM=1 (run.sh) and scale their waits. One that
# skips anything else fails here: this VM has root, cgroup2 with the memory
# controller and PSI.

KERNEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'kernel')
KERNEL_TIMEOUT = 600
# What kernlib.no_v1() says of a part it leaves out: the one skip allowed here.
NO_V1 = 'no cgroup v1 memory hierarchy'


def kernel_test(name):
    """Run tests/kernel/@name.py; the lines it printed, 'ok' aside, as the note."""
    p = subprocess.Popen([sys.executable, os.path.join(KERNEL_DIR, name + '.py')],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=KERNEL_TIMEOUT)
    except subprocess.TimeoutExpired:
        # On SIGTERM the test unwinds and removes its cgroups.
        p.terminate()
        try:
            out, _ = p.communicate(timeout=REPLY)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        raise AssertionError(f'{name} did not end within {KERNEL_TIMEOUT} s; it printed:\n{out}') from None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    left_out = [line for line in lines if line.startswith('SKIP: ') and
                not line.startswith('SKIP: the rest passed; left out: ')]
    if p.returncode == 77 and (not left_out or not all(NO_V1 in line for line in left_out)):
        raise AssertionError(f'{name} skipped though this VM has all it needs:\n{out}')
    if p.returncode not in (0, 77):
        raise AssertionError(f'{name} exited {p.returncode}:\n{out}')
    # A note beginning with "SKIP" would be a TAP skip directive.
    return f'{name} exit {p.returncode}; ' + '; '.join(line.replace('SKIP: ', 'left out: ', 1) for line in lines
                                                      if line != 'ok' and not line.startswith('SKIP: the rest'))


@check('kernel test-trigger-errors: refused PSI triggers, PSI switched off, missing cgroups')
def t_kernel_trigger_errors():
    return kernel_test('test-trigger-errors')


@check('kernel test-shared-registration: 50 identical PSI subscribers share one registration')
def t_kernel_shared_registration():
    return kernel_test('test-shared-registration')


@check('kernel test-psi-load: a PSI event with the averages under a load in a 64M cgroup')
def t_kernel_psi_load():
    return kernel_test('test-psi-load')


@check('kernel test-episodes-load: PSI episodes under real load, exactly one cleared each, '
       '0 wakeups after')
def t_kernel_episodes_load():
    return kernel_test('test-episodes-load')


@check('kernel test-levels-load: a level stream rises under a load in a 64M cgroup and comes back to normal')
def t_kernel_levels_load():
    return kernel_test('test-levels-load')


# --- delegation ---------------------------------------------------------------

def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        sh('useradd', '--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name)
        return pwd.getpwnam(name)


def delegated(unit, user):
    sh('systemd-run', f'--uid={user}', '-p', 'Delegate=yes', '-p', 'MemoryMax=64M',
       f'--unit={unit}', '--collect', '--quiet', 'sleep', 'infinity')
    wait_for(lambda: show('ActiveState', unit + '.service') == 'active', REPLY, unit)
    return show('ControlGroup', unit + '.service')


@check('a user subscribes to its own delegated cgroup and gets events under real load; '
       "another user's cgroup answers PermissionDenied")
def t_delegation():
    u1, u2 = ensure_user('pvmuser1'), ensure_user('pvmuser2')
    try:
        cg1 = delegated('pvm-deleg1', 'pvmuser1')
        cg2 = delegated('pvm-deleg2', 'pvmuser2')
        d1 = os.path.join(CGROOT, cg1.lstrip('/'))
        pt.check(os.stat(d1).st_uid == u1.pw_uid, 'the delegated cgroup is not the user\'s')
        denied = pt.run_ctl('watch', cg2, '--level', 'low', '--count', '1', '--timeout', '60',
                            user='pvmuser1', timeout=REPLY)
        pt.check(denied.returncode == 4 and denied.stderr.startswith('pressurectl: watch: Permission denied: '),
                 "another user's cgroup was not PermissionDenied", denied.returncode, denied.stderr)
        cmd = ['setpriv', f'--reuid={u1.pw_uid}', f'--regid={u1.pw_gid}', '--clear-groups',
               pt.PRESSURECTL, '--json', 'watch', cg1, '--level', 'low', '--count', '1',
               '--timeout', str(int(EVENT))]
        watch = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: any(r['cgroup'] == cg1 for r in call('io.pressured.GetStatus')['registrations']),
                 REPLY, 'the user subscribed')
        t0 = time.monotonic()
        load = stream_load(cg1, 160)
        try:
            out, err = watch.communicate(timeout=EVENT + 30)
        finally:
            stop(load)
        took = time.monotonic() - t0
        pt.check(watch.returncode == 0, 'pressurectl watch as the user', watch.returncode, out, err)
        evs = [json.loads(line) for line in out.splitlines() if line.startswith('{')]
        pressure = [e for e in evs if e.get('kind') == 'pressure']
        pt.check(pressure and pressure[0].get('source') == 'psi', 'no PSI event', out)
        return (f'{cg1} owned by uid {u1.pw_uid}: first event after {took:.1f} s of load; '
                f'{cg2}: exit 4, "{denied.stderr.strip()}"')
    finally:
        for unit in ('pvm-deleg1', 'pvm-deleg2'):
            sh('systemctl', 'stop', unit + '.service', check=False)


# --- the systemd memory-pressure proxy ----------------------------------------

PROXY_SOCKET = '/run/pressured/memory-pressure'


def proxy_regs(cg):
    """The registrations on @cg with their proxied clients."""
    return [r for r in call('io.pressured.GetStatus')['registrations'] if r['cgroup'] == cg and r['proxied']]


def event_lines(path):
    try:
        with open(path) as f:
            return [line for line in f if line.startswith('event ')]
    except FileNotFoundError:
        return []


@check('the memory-pressure proxy: an sd-event service of another user is served on its own cgroup '
       'with a 1 s window, gets injected and real events, and kill -9 releases its share')
def t_proxy():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'proxy'))
    import proxylib
    client = proxylib.build_client()
    pt.check(show('ActiveState', 'pressured-memory-pressure.socket') == 'active',
             'pressured-memory-pressure.socket is not listening')
    pt.check(os.path.exists(PROXY_SOCKET), f'no {PROXY_SOCKET}')
    ensure_user('pvmproxy')
    unit = 'pvm-proxy'
    out = os.path.join('/run', unit + '.out')
    write(out, '')
    trigger = b'some 100000 1000000'
    sh('systemd-run', '--uid=pvmproxy', f'--unit={unit}', '--collect', '--quiet',
       '-p', 'MemoryMax=96M', '-p', f'StandardOutput=file:{out}',
       '-p', f'Environment=MEMORY_PRESSURE_WATCH={PROXY_SOCKET}',
       '-p', f'Environment=MEMORY_PRESSURE_WRITE={proxylib.write_value(trigger)}', client)
    try:
        wait_for(lambda: show('ActiveState', unit + '.service') == 'active', REPLY, unit)
        cg = show('ControlGroup', unit + '.service')
        pid = int(show('MainPID', unit + '.service'))
        # The peer's own cgroup, read through the hardened unit's /proc.
        try:
            wait_for(lambda: proxy_regs(cg), REPLY, f'a registration on {cg} with the proxied client')
        except TimeoutError:
            regs = [(r['cgroup'], r['proxied']) for r in call('io.pressured.GetStatus')['registrations']]
            logs = [str(e.get('MESSAGE')) for e in journal()][-15:]
            raise AssertionError(f'no registration on {cg} for pid {pid}: registrations {regs}, '
                                 f'client output {read(out)!r}, daemon log {logs}')
        reg = proxy_regs(cg)[0]
        pt.check(reg['source'] == 'psi' and [p['pid'] for p in reg['proxied']] == [pid],
                 'the proxied client is not listed with its pid', reg)
        pt.check(psi_of(reg)['window_us'] == 1000000 and psi_of(reg)['threshold_us'] == 100000,
                 'the 1 s trigger was changed', reg)
        delivered = call('io.pressured.Inject', {'cgroup': cg, 'level': 'medium'})['delivered']
        wait_for(lambda: event_lines(out), REPLY, 'the injected event reached the sd-event callback')
        injected = len(event_lines(out))
        t0 = time.monotonic()
        load = stream_load(cg, 200)
        try:
            wait_for(lambda: len(event_lines(out)) > injected, EVENT, 'an event from real reclaim')
        finally:
            stop(load)
        took = time.monotonic() - t0
        real = len(event_lines(out)) - injected
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not proxy_regs(cg) and not any(r['cgroup'] == cg for r in
                                                        call('io.pressured.GetStatus')['registrations']),
                 REPLY, 'the registration released after kill -9')
        return (f'{cg} (uid pvmproxy, pid {pid}): trigger {psi_of(reg)}; Inject delivered {delivered}; '
                f'first real event {took:.1f} s into the load ({real} so far); released after kill -9')
    finally:
        sh('systemctl', 'stop', unit + '.service', check=False)
        sh('systemctl', 'reset-failed', unit + '.service', check=False)


# --- fast PSI triggers for unprivileged users ---------------------------------

QUOTA = 4  # [Policy] MaxFastTriggersPerUser= default
MP_SOCKET = PROXY_SOCKET


def fast(n, ms=100):
    """The n-th distinct fast trigger (n < 100): some 100ms over 1 s, 1.01 s, 1.02 s, ... 1.99 s."""
    assert 0 <= n < 100
    return {'stall': 'some', 'threshold_us': ms * 1000, 'window_us': 1000000 + n * 10000}


def rounded_of(t):
    """What the kernel's rule for unprivileged users makes of @t: window up to a 2 s multiple, threshold scaled."""
    w = -(-t['window_us'] // 2000000) * 2000000
    return {'stall': t['stall'], 'window_us': w,
            'threshold_us': min(w, -(-t['threshold_us'] * w // t['window_us']))}


def connect_as(uid):
    """A varlink connection whose peer credentials (SO_PEERCRED) are @uid's."""
    os.seteuid(uid)
    try:
        return varlink()
    finally:
        os.seteuid(0)


def subscribe_as(uid, **params):
    v = connect_as(uid)
    msg = v.subscribe(**params)
    if 'error' in msg:
        v.close()
        raise AssertionError(f'Subscribe {params!r} as uid {uid} failed: {msg!r}')
    return v, msg['parameters']['event']


def fast_use():
    """GetStatus: {uid: fast triggers charged}, and the quota."""
    ft = call('io.pressured.GetStatus')['fast_triggers']
    return {u['uid']: u['fast_triggers'] for u in ft['users']}, ft['max_per_user']


def registration_of(cgroup, trigger):
    for r in call('io.pressured.GetStatus')['registrations']:
        if r['cgroup'] == cgroup and r['source'] == 'psi' and r['trigger'].get('psi') == trigger:
            return r
    return None


def closing(subs):
    for v in subs:
        v.close()


@check('fast PSI triggers: a user gets MaxFastTriggersPerUser=4 as asked, the 5th rounded with the reason; '
       'root is unaffected; leaving frees the quota')
def t_policy_quota():
    u1 = ensure_user('pvmfast1')
    uid = u1.pw_uid
    subs = []
    try:
        cg = delegated('pvm-fast1', 'pvmfast1')
        pt.check_eq(fast_use(), ({}, QUOTA), 'nothing charged before, default quota')
        for i in range(QUOTA):
            v, ev = subscribe_as(uid, cgroup=cg, psi=fast(i))
            subs.append(v)
            pt.check(ev['adjusted'] is False and 'adjusted_reason' not in ev and psi_of(ev) == fast(i),
                     f'fast trigger {i + 1} of the quota was changed', ev)
        pt.check_eq(fast_use()[0], {uid: QUOTA}, 'GetStatus counts the user\'s fast triggers')
        st = sh(pt.PRESSURECTL, 'status').stdout
        pt.check(f'{uid}' in st and f'{QUOTA}/{QUOTA}' in st, 'pressurectl status shows the use', st)

        v, ev = subscribe_as(uid, cgroup=cg, psi=fast(QUOTA))
        subs.append(v)
        rounded = psi_of(ev)
        reason = ev.get('adjusted_reason', '')
        pt.check(ev['adjusted'] is True and rounded == rounded_of(fast(QUOTA)),
                 'the trigger beyond the quota is not rounded to 2 s with the threshold scaled', ev)
        pt.check(f'MaxFastTriggersPerUser={QUOTA}' in reason and f'uid {uid}' in reason,
                 'the reason does not name the quota and the uid', reason)
        # pressurectl watch, as that user and for the same trigger, prints the reason in its header.
        t = fast(QUOTA)
        header = pt.first_line(['setpriv', f'--reuid={uid}', f'--regid={u1.pw_gid}', '--clear-groups',
                                pt.PRESSURECTL, 'watch', cg, '--psi',
                                f'some {t["threshold_us"] // 1000}ms {t["window_us"] // 1000}ms'])
        pt.check(header.rstrip('\n').endswith(f', adjusted by the daemon: {reason}'),
                 'pressurectl watch does not print the reason in its header', header)
        pt.check_eq(fast_use()[0], {uid: QUOTA}, 'a rounded trigger is not charged')

        # Root: as many fast triggers as it likes, charged to nobody.
        for i in range(QUOTA + 2):
            v, ev = subscribe_as(0, cgroup=cg, psi=fast(10 + i))
            subs.append(v)
            pt.check(ev['adjusted'] is False and psi_of(ev) == fast(10 + i), f'root\'s fast trigger {i + 1}', ev)
        pt.check_eq(fast_use()[0], {uid: QUOTA}, 'root\'s fast triggers are not counted')

        # Leaving frees the quota: one subscription, then the rest.
        subs.pop(0).close()
        wait_for(lambda: fast_use()[0] == {uid: QUOTA - 1}, REPLY, 'the charge of a closed subscription freed')
        v, ev = subscribe_as(uid, cgroup=cg, psi=fast(QUOTA + 1))
        subs.append(v)
        pt.check(ev['adjusted'] is False and psi_of(ev) == fast(QUOTA + 1),
                 'a fast trigger after one was freed is not granted', ev)
        closing(subs)
        subs = []
        wait_for(lambda: fast_use()[0] == {}, REPLY, 'every charge freed when the peer left')
        return (f'uid {uid}: {QUOTA} fast triggers unadjusted, the next registered as {rounded}'
                f' ("{reason}", also in pressurectl watch\'s header); root held {QUOTA + 2} unadjusted;'
                f' the quota came back on disconnect')
    finally:
        closing(subs)
        sh('systemctl', 'stop', 'pvm-fast1.service', check=False)


@check('fast PSI triggers: a shared registration counts once, for its creator; '
       'the charge moves to a remaining user when the creator leaves')
def t_policy_shared():
    uid1, uid2 = ensure_user('pvmfast1').pw_uid, ensure_user('pvmfast2').pw_uid
    trig = fast(7, ms=150)
    subs = []
    try:
        v1, ev1 = subscribe_as(uid1, cgroup='/', psi=trig)
        subs.append(v1)
        v2, ev2 = subscribe_as(uid2, cgroup='/', psi=trig)
        subs.append(v2)
        for who, ev in (('creator', ev1), ('sharer', ev2)):
            pt.check(ev['adjusted'] is False and psi_of(ev) == trig, f'the {who}\'s fast trigger changed', ev)
        reg = registration_of('/', trig)
        pt.check(reg and reg['subscribers'] == 2 and reg.get('fast_trigger_uid') == uid1,
                 'one registration, two subscribers, charged to its creator', reg)
        pt.check_eq(fast_use()[0], {uid1: 1}, 'the sharer is not charged')

        # A sharer whose own quota is used up still shares as asked.
        for i in range(QUOTA):
            v, ev = subscribe_as(uid2, cgroup='/', psi=fast(20 + i))
            subs.append(v)
        pt.check_eq(fast_use()[0], {uid1: 1, uid2: QUOTA}, 'uid2 at its quota')
        v3, ev3 = subscribe_as(uid2, cgroup='/', psi=trig)
        subs.append(v3)
        pt.check(ev3['adjusted'] is False and psi_of(ev3) == trig, 'sharing over the quota was rounded', ev3)

        # The creator leaves: the charge moves to the remaining user.
        subs.remove(v1)
        v1.close()
        wait_for(lambda: (registration_of('/', trig) or {}).get('fast_trigger_uid') == uid2, REPLY,
                 'the charge moved to uid2')
        pt.check_eq(fast_use()[0], {uid2: QUOTA + 1}, 'uid2 holds the moved charge, over its quota')
        v, ev = subscribe_as(uid2, cgroup='/', psi=fast(30))
        subs.append(v)
        pt.check(ev['adjusted'] is True and 'MaxFastTriggersPerUser' in ev['adjusted_reason'],
                 'over the quota, a new fast trigger is rounded', ev)
        v, ev = subscribe_as(uid1, cgroup='/', psi=fast(31))
        subs.append(v)
        pt.check(ev['adjusted'] is False, 'the creator\'s quota was not freed when it left', ev)
        closing(subs)
        subs = []
        wait_for(lambda: fast_use()[0] == {}, REPLY, 'every charge freed')
        return (f'registration {trig["window_us"]} us: charged to uid {uid1} with 2 subscribers; '
                f'after uid {uid1} left, to uid {uid2} ({QUOTA + 1}/{QUOTA})')
    finally:
        closing(subs)


MP_PEER = ('import socket, sys, time\n'
           's = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
           f's.connect("{MP_SOCKET}")\n'
           's.sendall(sys.argv[1].encode() + b"\\n")\n'
           'time.sleep(100000)\n')


def mp_peer(unit, user, trigger):
    """Start a memory-pressure client as @user asking for @trigger; its registration once attached."""
    sh('systemd-run', f'--uid={user}', f'--unit={unit}', '--collect', '--quiet',
       '/usr/bin/python3', '-c', MP_PEER, trigger)
    wait_for(lambda: show('ActiveState', unit + '.service') == 'active', REPLY, unit)
    pid = int(show('MainPID', unit + '.service'))

    def attached():
        for r in call('io.pressured.GetStatus')['registrations']:
            if any(p['pid'] == pid for p in r['proxied']):
                return r
        return None
    try:
        return wait_for(attached, REPLY, f'{unit} (pid {pid}) attached to the memory-pressure proxy')
    except TimeoutError:
        raise AssertionError(f'{unit} not attached: ' + sh('systemctl', 'status', '--no-pager', unit + '.service',
                                                            check=False).stdout) from None


@check('fast PSI triggers: the memory-pressure socket applies the same quota to its peers')
def t_policy_proxy():
    u1 = ensure_user('pvmfast1')
    uid = u1.pw_uid
    started = not os.path.exists(MP_SOCKET)
    subs, units = [], []
    try:
        if started:
            sh('systemctl', 'start', 'pressured-memory-pressure.socket')
            sh('systemctl', 'restart', SERVICE)
            wait_for(lambda: os.path.exists(MP_SOCKET), REPLY, 'the memory-pressure socket')
        call('io.pressured.GetStatus')
        # A peer with quota left: its 1 s window as asked, charged.
        units.append('pvm-mp1')
        reg = mp_peer('pvm-mp1', 'pvmfast1', 'some 100000 1000000')
        pt.check(reg['trigger']['psi'] == fast(0) and reg.get('fast_trigger_uid') == uid,
                 'a proxy peer with quota left', reg)
        pt.check_eq(fast_use()[0], {uid: 1}, 'the proxy peer is charged')
        # The same user at its quota: the next peer's window is rounded.
        for i in range(QUOTA - 1):
            v, ev = subscribe_as(uid, cgroup='/', psi=fast(40 + i))
            subs.append(v)
        pt.check_eq(fast_use()[0], {uid: QUOTA}, 'the user at its quota')
        units.append('pvm-mp2')
        # (a trigger of its own: both peers may be on the same cgroup)
        reg2 = mp_peer('pvm-mp2', 'pvmfast1', 'some 100000 1050000')
        pt.check(reg2['trigger']['psi'] == rounded_of(fast(5)) and 'fast_trigger_uid' not in reg2,
                 'a proxy peer over the quota is not rounded', reg2)
        # The peer leaving frees its charge.
        sh('systemctl', 'stop', 'pvm-mp1.service')
        wait_for(lambda: fast_use()[0] == {uid: QUOTA - 1}, REPLY, 'the proxy peer\'s charge freed')
        return (f'uid {uid}: first peer registered {reg["trigger"]["psi"]["window_us"]} us on {reg["cgroup"]}, '
                f'charged; at the quota the next one got {reg2["trigger"]["psi"]["window_us"]} us on {reg2["cgroup"]}')
    finally:
        closing(subs)
        for unit in units:
            sh('systemctl', 'stop', unit + '.service', check=False)
        if started:
            sh('systemctl', 'stop', 'pressured-memory-pressure.socket', check=False)


# --- protection on the real memory controller ------------------------------

def effective(usage, setting, parent_e, siblings_protected, recursive, parent_usage):
    """The kernel's effective_protection() for one value (min or low), in bytes."""
    protected = min(usage, setting)
    if siblings_protected > parent_e:
        ep = protected * parent_e // siblings_protected
    else:
        ep = protected
    if recursive and parent_e > siblings_protected and usage > protected:
        ep += (parent_e - siblings_protected) * (usage - protected) // max(parent_usage - siblings_protected, 1)
    return ep


def model(nodes, recursive):
    """elow of each node of a GetProtection answer (parents first), from usage and low."""
    by = {n['cgroup']: n for n in nodes}

    def low(n):
        return 1 << 62 if n['low'] is None else n['low']

    def parent_of(path):
        return path.rsplit('/', 1)[0] or '/'
    out = {}
    for n in nodes:
        path, parent = n['cgroup'], parent_of(n['cgroup'])
        if parent == '/':
            out[path] = low(n)      # the root's children take their own settings
        elif parent in out:
            sib = sum(min(c['usage'], low(c)) for c in nodes if parent_of(c['cgroup']) == parent)
            out[path] = effective(n['usage'], low(n), out[parent], sib, recursive, by[parent]['usage'])
    return out


def protection_nodes(root):
    return {n['cgroup']: n for n in call('io.pressured.GetProtection', {'cgroup': root})['nodes']}


def protection_run(tag, leaves, pressure, recursive):
    """Build A (max 200M, low 50M) / B (low 50M) / leaves, fill, press from A/G.

    @leaves: (name, low, MiB of page cache). Returns text of the measurements.
    """
    a = f'/pvm-prot-{tag}'
    rmcg(a)
    mkcg(a, memory_max=str(200 * MIB), memory_low=str(50 * MIB))
    write(os.path.join(CGROOT, a[1:], 'cgroup.subtree_control'), '+memory')
    try:
        mkcg(a + '/B', memory_low=str(50 * MIB))
        write(os.path.join(CGROOT, a[1:], 'B', 'cgroup.subtree_control'), '+memory')
        mkcg(a + '/G')
        for name, low, _ in leaves:
            mkcg(f'{a}/B/{name}', memory_low=str(low))
        for name, _, size in leaves:
            if size:
                pagecache(f'{a}/B/{name}', f'{tag}-{name}', size)
        st = call('io.pressured.GetStatus')
        pt.check(st['cgroup']['recursive_protection'] is recursive, 'recursive_protection', st['cgroup'])
        nodes = protection_nodes(a)
        # The daemon read the live files: compare with them.
        for path, n in nodes.items():
            live = int(read(os.path.join(CGROOT, path.lstrip('/'), 'memory.current')))
            pt.check(abs(live - n['usage']) <= 2 * MIB, f'{path} usage vs memory.current', n['usage'], live)
            want_low = int(read(os.path.join(CGROOT, path.lstrip('/'), 'memory.low')).replace('max', str(1 << 62)))
            pt.check(n['low'] == (None if want_low >= 1 << 62 else want_low), f'{path} low', n['low'], want_low)
        exp = model(list(nodes.values()), recursive)
        for path, n in nodes.items():
            if exp.get(path) is not None:
                pt.check(abs(n['elow'] - exp[path]) <= 65536, f'{path} elow vs the kernel formula',
                         n['elow'], exp[path])
        before = {p.rsplit('/', 1)[1]: n['elow'] for p, n in nodes.items() if '/B/' in p}
        pressure(a + '/G')
        after_nodes = protection_nodes(a)
        kept = {}
        for name, _, _ in leaves:
            path = f'{a}/B/{name}'
            kept[name] = (int(read(os.path.join(CGROOT, path[1:], 'memory.current'))),
                          after_nodes[path]['elow'])
        return before, kept, after_nodes
    finally:
        rmcg(a)


def close(a, b, pct=15, slack=2 * MIB):
    return abs(a - b) <= (a + b) / 2 * pct / 100 + slack


def anon_pressure(size_mb):
    def press(g):
        p = run_in(g, ['dd', 'if=/dev/zero', 'of=/dev/null', f'bs={size_mb}M', 'count=1', 'status=none'])
        pt.check(p.wait(timeout=EVENT * 2) == 0, 'the anonymous load in A/G failed')
    return press


def stream_pressure(size_mb, rounds):
    def press(g):
        f = os.path.join(SCRATCH, 'stream-' + g.strip('/').replace('/', '-'))
        script = (f'dd if=/dev/zero of={f} bs=1M count={size_mb} status=none; '
                  + f'cat {f} > /dev/null; ' * rounds + f'rm -f {f}')
        p = run_in(g, ['sh', '-c', script])
        pt.check(p.wait(timeout=EVENT * 2) == 0, 'the page-cache load in A/G failed')
    return press


def remount(recursive):
    """Remount cgroup2 with exactly these options and restart the daemon to see them.

    mount(8) would merge in the options the mount already has, so call
    mount(2) itself.
    """
    opts = b'nsdelegate,memory_recursiveprot' if recursive else b'nsdelegate'
    libc = ctypes.CDLL(None, use_errno=True)
    MS_REMOUNT = 32
    if libc.mount(None, CGROOT.encode(), None, MS_REMOUNT, opts) != 0:
        raise OSError(ctypes.get_errno(), f'remounting {CGROOT} with {opts!r}')
    pt.check(recursive_mounted() is recursive, 'memory_recursiveprot after the remount')
    sh('systemctl', 'restart', SERVICE)


def recursive_mounted():
    for line in open('/proc/self/mountinfo'):
        f = line.split()
        if f[4] == CGROOT:
            return 'memory_recursiveprot' in line
    return False


SELFTEST = [('C', 75 * MIB, 50), ('D', 25 * MIB, 50), ('E', 0, 50), ('F', 500 * MIB, 0)]


@check('protection: the selftest tree; GetProtection matches the model, leaves keep what it predicts')
def t_protection():
    was = recursive_mounted()
    remount(False)
    try:
        before, kept, _ = protection_run('selftest', SELFTEST, anon_pressure(148), False)
    finally:
        remount(was)
    c, d, e = (kept[n][0] for n in 'CDE')
    msg = (f'predicted before pressure C {mib(before["C"])} D {mib(before["D"])} E {mib(before["E"])}; '
           f'kept C {mib(c)} (elow {mib(kept["C"][1])}), D {mib(d)} (elow {mib(kept["D"][1])}), '
           f'E {mib(e)}; selftest expects 29M, 21M, 0')
    for n in 'CD':
        pt.check(close(*kept[n]), f'{n} kept is not what pressured predicts', msg)
    pt.check(close(c, 29 * MIB) and close(d, 21 * MIB) and e <= 3 * MIB, 'not the selftest values', msg)
    pt.check(close(c + d, 50 * MIB), 'C + D is not B\'s 50M', msg)
    return msg


def kernel_headroom(path):
    """The kernel's view of @path's nearest limit: (usage, [(room, limit, cgroup)] up the tree)."""
    rooms, c = [], path
    usage = int(read(os.path.join(CGROOT, path.lstrip('/'), 'memory.current')))
    while c != '/':
        d = os.path.join(CGROOT, c.lstrip('/'))
        cur = int(read(os.path.join(d, 'memory.current')))
        limits = [int(v) for v in (read(os.path.join(d, 'memory.max')), read(os.path.join(d, 'memory.high')))
                  if v != 'max']
        if limits:
            rooms.append((max(0, min(limits) - cur), min(limits), c))
        c = os.path.dirname(c)
    return usage, rooms


def within(got, before, after, slack):
    return min(before, after) - slack <= got <= max(before, after) + slack


@check('GetHeadroom: memory.max and memory.high against the kernel\'s files')
def t_headroom():
    a = '/pvm-headroom'
    rmcg(a)
    mkcg(a, memory_max=96 * MIB)
    write(os.path.join(CGROOT, a[1:], 'cgroup.subtree_control'), '+memory')
    procs, notes = [], []
    slack = 4 * MIB
    try:
        mkcg(a + '/high', memory_high=48 * MIB)
        mkcg(a + '/plain')
        hold = ('import sys; b = bytearray({} << 20); b[::4096] = b"x" * len(b[::4096]); '
                'print("ready", flush=True); sys.stdin.read()')
        for cg, mib_ in ((a + '/high', 32), (a + '/plain', 16)):
            procs.append(run_in(cg, [sys.executable, '-c', hold.format(mib_)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True))
            pt.check(procs[-1].stdout.readline().strip() == 'ready', f'the process in {cg} did not start')
        wait_for(lambda: int(read(os.path.join(CGROOT, a[1:], 'memory.current'))) >= 48 * MIB, REPLY,
                 'the usage to show')
        for cg in (a + '/high', a + '/plain', a):
            u0, r0 = kernel_headroom(cg)
            h = call('io.pressured.GetHeadroom', {'cgroup': cg})
            u1, r1 = kernel_headroom(cg)
            room0, room1 = min(r0), min(r1)
            pt.check(room0[1:] == room1[1:] == (h['limit_bytes'], h['limiting_cgroup']),
                     f'{cg}: not the nearest limit', h, r0, r1)
            pt.check(within(h['usage_bytes'], u0, u1, slack), f'{cg}: usage drifted', h, u0, u1)
            pt.check(within(h['headroom_bytes'], room0[0], room1[0], slack), f'{cg}: headroom', h, room0, room1)
            pt.check(h['reclaim_target_bytes'] is None, f'{cg}: a reclaim target without a level stream', h)
            notes.append(f'{cg}: {mib(h["headroom_bytes"])} below {h["limiting_cgroup"]} ({mib(h["limit_bytes"])})')
    finally:
        for p in procs:
            stop(p)
        rmcg(a)
    return '; '.join(notes)


RECURSIVE = [('C', 0, 50), ('D', 0, 50)]


@check('protection with memory_recursiveprot: unset lows share the parent\'s protection')
def t_protection_recursive():
    was = recursive_mounted()
    out = {}
    try:
        for rec in (False, True):
            remount(rec)
            before, kept, _ = protection_run('rec' if rec else 'norec', RECURSIVE,
                                             stream_pressure(300, 2), rec)
            out[rec] = (before, kept)
    finally:
        remount(was)
    msg = '; '.join(f'{"memory_recursiveprot" if r else "without"}: predicted C {mib(b["C"])} D {mib(b["D"])}, '
                    f'kept C {mib(k["C"][0])} D {mib(k["D"][0])}' for r, (b, k) in out.items())
    pt.check(out[False][0]['C'] == 0 and out[True][0]['C'] > 20 * MIB, 'predictions', msg)
    for n in 'CD':
        pt.check(out[True][1][n][0] >= 0.8 * out[True][0][n] - 2 * MIB, f'{n} not kept with recursiveprot', msg)
        pt.check(out[False][1][n][0] < 0.6 * out[True][1][n][0], f'{n} kept as much without', msg)
    return msg


# --- cgroup namespaces ---------------------------------------------------------

def ns_watch(cg, prefix, *args):
    """pressurectl --json watch @args in cgroup @cg, inside a cgroup namespace made by @prefix."""
    return run_in(cg, prefix + [pt.PRESSURECTL, '--json', 'watch', *args], stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)


def ns_status_names(cg, prefix):
    """The registrations' cgroups that GetStatus shows a peer in a namespace made by @prefix in @cg."""
    p = run_in(cg, prefix + [pt.PRESSURECTL, '--json', 'status'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               text=True)
    out, err = p.communicate(timeout=REPLY)
    pt.check(p.returncode == 0, 'pressurectl status in the namespace', p.returncode, err)
    return sorted(r['cgroup'] for r in json.loads(out)['registrations'])


def ns_events_until(p, done, timeout):
    """The JSON events pressurectl @p prints, until @done(events) holds; within @timeout seconds."""
    evs, end = [], time.monotonic() + timeout
    while not done(evs):
        left = end - time.monotonic()
        pt.check(left > 0, f'not within {timeout:.0f} s', evs)
        if select.select([p.stdout], [], [], left)[0]:
            line = p.stdout.readline()
            pt.check(line, 'pressurectl ended', p.poll(), evs, p.stderr.read() if p.poll() is not None else '')
            if line.startswith('{'):
                evs.append(json.loads(line))
    return evs


def regs_on(cg):
    return [r for r in call('io.pressured.GetStatus')['registrations'] if r['cgroup'] == cg]


@check('cgroup namespaces: a container (unshare -Cm, cgroup2 mounted inside) watches "/" as its own cgroup, '
       'shares the registration with the host, gets injected and real pressure as "/"; ".." is refused')
def t_cgroup_namespace():
    cg, cg2 = '/pvm-ns', '/pvm-ns-plain'
    mnt = '/run/pvm-ns-cgroup2'
    for c in (cg, cg2):
        rmcg(c)
    mkcg(cg, memory_max=64 * MIB)
    mkcg(cg2)
    os.makedirs(mnt, exist_ok=True)
    # As a container runtime does: cgroup2 mounted inside the namespaces, the payload in a child cgroup.
    container = ['unshare', '-Cm', 'sh', '-c', 'mount -t cgroup2 none "$1" && mkdir -p "$1/app" && '
                 'echo $$ > "$1/app/cgroup.procs" && shift && exec "$@"', 'sh', mnt]
    host = watch = plain = load = None
    try:
        watch = ns_watch(cg, container, '/', '--level', 'low', '--timeout', str(int(EVENT) + 60))
        wait_for(lambda: regs_on(cg), REPLY, 'the container subscribed on its real cgroup')
        host, ev = subscribe(cgroup=cg, level='low')
        pt.check(ev['cgroup'] == cg, 'the host names the real path', ev)
        pt.check_eq([r['subscribers'] for r in regs_on(cg)], [2], 'one registration, two subscribers')
        names = ns_status_names(cg, container)
        pt.check('/' in names and not any(n.startswith(cg) for n in names),
                 'GetStatus in the container names its own cgroup "/" and nothing outside', names)
        delivered = call('io.pressured.Inject', {'cgroup': cg, 'level': 'low'})['delivered']
        pt.check(delivered == 2, 'Inject on the real path reached both', delivered)
        t0 = time.monotonic()
        load = stream_load(cg + '/app', 160)
        evs = ns_events_until(watch, lambda evs: any(e['kind'] == 'pressure' and e['source'] == 'psi' for e in evs),
                              EVENT)
        took = time.monotonic() - t0
        pt.check_eq([(e['source'], e['cgroup']) for e in evs if e['kind'] == 'pressure'][:1], [('inject', '/')],
                    'the injected event first, on "/"')
        pt.check_eq({e['cgroup'] for e in evs}, {'/'}, 'every event on "/"')
        bad = run_in(cg, container + [pt.PRESSURECTL, 'watch', '/..', '--level', 'low', '--count', '1'],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, berr = bad.communicate(timeout=REPLY)
        pt.check(bad.returncode == 2 and "invalid cgroup '/..'" in berr, '"/.." from the container: a usage error',
                 bad.returncode, berr)

        # A root process without capabilities in a plain cgroup namespace: the daemon may compare its
        # namespace (no ptrace rights needed over it), and its root is its own cgroup.
        plain = ns_watch(cg2, ['unshare', '-C', 'setpriv', '--bounding-set=-all', '--inh-caps=-all'],
                         '/', '--level', 'low', '--count', '1', '--timeout', str(int(EVENT)))
        wait_for(lambda: regs_on(cg2), REPLY, 'the plain namespace subscribed on its real cgroup')
        pt.check(call('io.pressured.Inject', {'cgroup': cg2, 'level': 'low'})['delivered'] == 1, 'Inject on cg2')
        pout, perr = plain.communicate(timeout=REPLY)
        pevs = [json.loads(line) for line in pout.splitlines() if line.startswith('{')]
        pt.check(plain.returncode == 0 and [(e['kind'], e['cgroup']) for e in pevs] == [('subscribed', '/'),
                                                                                       ('pressure', '/')],
                 'the plain namespace subscribed to "/" and got "/"', plain.returncode, pout, perr)
        return (f'container in {cg}/app: subscribed "/" = {cg} (2 subscribers), inject and a PSI event '
                f'{took:.1f} s into the load both on "/"; its GetStatus {names}; "/.." refused; '
                f'capability-less root in unshare -C: "/" = {cg2}')
    finally:
        for p in (watch, plain):
            if p and p.poll() is None:
                p.kill()
                p.communicate()
        if load:
            stop(load)
        if host:
            host.close()
        for c in (cg, cg2):
            rmcg(c)


# --- the system bus: systemd-oomd's and the kernel's kills, LowMemoryMonitor ----
#
# guest-run.sh masks systemd-oomd and low-memory-monitor (installed on this
# machine, so enabled in the VM's /etc) in /run; a check that needs one
# unmasks and starts it, and masks it again when done.

OOMD_CONF = '/etc/systemd/oomd.conf.d/90-pvm.conf'
OOMD_SLICE = 'pvmoomd.slice'
OOMD_SCOPE = 'pvm-oomd-victim.scope'
OOMD_UNITS = ('systemd-oomd.socket', 'systemd-oomd.service')
# DefaultMemoryPressureDurationSec=: oomd refuses less than 1 s.
OOMD_DURATION = '1s'
# 10% took 55 s of this load under TCG to reach, 4% about a fifth of that.
OOMD_LIMIT = '4%'
OOM1 = 'org.freedesktop.oom1'
LMM = 'org.freedesktop.LowMemoryMonitor'
LMM_DROPIN = os.path.join(CONF_DIR, 'pressured.conf.d', '90-pvm-lmm.conf')
GLIB_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'glib-memory-monitor.py')


def name_has_owner(name):
    r = sh('busctl', '--system', 'call', 'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
           'NameHasOwner', 's', name)
    return r.stdout.strip() == 'b true'


def oomd_start():
    """systemd-oomd running, with a 1 s pressure duration and a slice it watches at 10% (written, not started)."""
    os.makedirs(os.path.dirname(OOMD_CONF), exist_ok=True)
    write(OOMD_CONF, f'[OOM]\nDefaultMemoryPressureDurationSec={OOMD_DURATION}\n')
    write(os.path.join('/etc/systemd/system', OOMD_SLICE),
          f'[Slice]\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit={OOMD_LIMIT}\n')
    sh('systemctl', 'unmask', '--runtime', *OOMD_UNITS)
    sh('systemctl', 'daemon-reload')
    sh('systemctl', 'start', 'systemd-oomd.service')
    wait_for(lambda: name_has_owner(OOM1), REPLY, f'{OOM1} on the system bus')


def oomd_stop():
    sh('systemctl', 'stop', OOMD_SCOPE, check=False)
    sh('systemctl', 'mask', '--runtime', '--now', *OOMD_UNITS, check=False)
    for f in (OOMD_CONF, os.path.join('/etc/systemd/system', OOMD_SLICE)):
        if os.path.exists(f):
            os.unlink(f)
    sh('systemctl', 'daemon-reload')


def oomd_journal(cg):
    out = sh('journalctl', '-o', 'cat', '--no-pager', '--since', SINCE, '-u', 'systemd-oomd.service').stdout
    return [line for line in out.splitlines() if line.startswith(f'Killed {cg} ')]


def oomd_victim():
    """A scope in the watched slice thrashing the page cache under MemoryMax=64M; (process, its cgroup)."""
    f = os.path.join(SCRATCH, 'pvm-oomd-load')
    script = (f'while :; do dd if=/dev/zero of={f} bs=1M count=160 status=none; '
              f'cat {f} > /dev/null; cat {f} > /dev/null; done')
    p = subprocess.Popen(['systemd-run', '--scope', '--quiet', f'--slice={OOMD_SLICE}', f'--unit={OOMD_SCOPE}',
                          '-p', 'MemoryMax=64M', 'sh', '-c', script], start_new_session=True)
    wait_for(lambda: show('ActiveState', OOMD_SCOPE) == 'active', REPLY, OOMD_SCOPE)
    return p, show('ControlGroup', OOMD_SCOPE)


def oomd_watches(slice_cg):
    return slice_cg in sh('oomctl', 'dump', check=False).stdout


def full_avg10(cg):
    try:
        lines = read(os.path.join(CGROOT, cg.lstrip('/'), 'memory.pressure')).splitlines()
    except OSError:
        return 0.0
    return float(lines[1].split()[1].split('=')[1])


def oomd_wait(victim, slice_cg, timeout):
    """The victim's exit status once it ends, and the highest full avg10 of @slice_cg seen before."""
    end, peak = time.monotonic() + timeout, 0.0
    while victim.poll() is None:
        if time.monotonic() > end:
            raise AssertionError(f'systemd-oomd killed nothing within {timeout:.0f} s; {slice_cg} full avg10 '
                                 f'peaked at {peak:.2f}%; oomctl dump:\n' + sh('oomctl', 'dump', check=False).stdout)
        peak = max(peak, full_avg10(slice_cg))
        time.sleep(0.5)
    return victim.returncode, peak


def oomd_listed():
    v, ev = kills_subscribe()
    v.close()
    return 'systemd-oomd' in ev['state']['kill_sources']


def kills_subscribe(**params):
    v, ev = subscribe(kills=True, **params)
    pt.check(ev['source'] == 'kills' and ev['resource'] == 'memory', 'the kills subscribed event', ev)
    return v, ev


def next_kill(v, cg, timeout=EVENT):
    """The next killed event on @v naming @cg."""
    end = time.monotonic() + timeout
    while True:
        ev, _ = next_event(v, timeout=max(end - time.monotonic(), 0.1), kinds=('killed',))
        if ev['cgroup'] == cg:
            return ev


@check('systemd-oomd (Debian\'s, real) kills a scope under memory pressure in a slice with '
       'ManagedOOMMemoryPressure=kill; kills subscribers on "/" and on the slice get killed by systemd-oomd')
def t_oomd_kill():
    subs, victim = [], None
    try:
        oomd_start()
        slice_cg = '/' + OOMD_SLICE
        t0 = time.monotonic()
        v_root, ev_root = kills_subscribe()
        subs.append(v_root)
        # kill_sources is a snapshot: the first kills subscriber connects the daemon to the bus, after
        # its subscribed event. Later subscribers see systemd-oomd once the match is in place.
        wait_for(lambda: oomd_listed(), REPLY, 'a kills subscription listing systemd-oomd')
        listed = time.monotonic() - t0
        victim, cg = oomd_victim()
        pt.check(cg == f'{slice_cg}/{OOMD_SCOPE}', 'the scope is not in the slice', cg)
        v_slice, ev_slice = kills_subscribe(cgroup=slice_cg)
        subs.append(v_slice)
        pt.check(ev_slice['cgroup'] == slice_cg and 'systemd-oomd' in ev_slice['state']['kill_sources'],
                 'the slice subscription', ev_slice)
        wait_for(lambda: oomd_watches(slice_cg), REPLY, f'oomctl dump lists {slice_cg}')
        t0 = time.monotonic()
        rc, peak = oomd_wait(victim, slice_cg, 3 * EVENT)
        took = time.monotonic() - t0
        pt.check(rc == -signal.SIGKILL, 'the scope did not end by SIGKILL', rc)
        logged = wait_for(lambda: oomd_journal(cg), REPLY, 'systemd-oomd logging the kill')
        pt.check('memory pressure' in logged[0], 'systemd-oomd killed for another reason', logged)
        got = {}
        for name, v in (('/', v_root), (slice_cg, v_slice)):
            ev = next_kill(v, cg, timeout=REPLY)
            for k, want in (('kind', 'killed'), ('by', 'systemd-oomd'), ('reason', 'memory-pressure'),
                            ('count', 1)):
                pt.check_eq(ev.get(k), want, f'{k} of the killed event on {name}')
            for k in ('seq', 'missed', 'time_us', 'monotonic_us'):
                pt.check(k in ev, f'no {k} in the killed event on {name}', ev)
            got[name] = ev
        return (f'kill_sources listed systemd-oomd {listed:.1f} s after the first kills subscription; '
                f'scope {cg} killed {took:.1f} s after oomd watched the slice (full avg10 up to {peak:.2f}%, '
                f'limit {OOMD_LIMIT}, '
                f'DefaultMemoryPressureDurationSec={OOMD_DURATION}); oomd logged "{logged[0]}"; '
                f'killed on "/" and on {slice_cg}: ' + '; '.join(
                    f'{k}: by {e["by"]}, {e["reason"]}, count {e["count"]}' for k, e in got.items()))
    finally:
        for v in subs:
            v.close()
        if victim and victim.poll() is None:
            stop(victim)
        oomd_stop()
        try:
            os.unlink(os.path.join(SCRATCH, 'pvm-oomd-load'))
        except FileNotFoundError:
            pass


@check('a memcg OOM kill (memory.max 32M, no swap) reaches kills subscribers on the cgroup and on "/" '
       'as killed by kernel, oom_kill')
def t_kernel_kill():
    cg = '/pvm-kill-oom'
    rmcg(cg)
    mkcg(cg, memory_max=str(32 * MIB))
    swap_max = os.path.join(CGROOT, cg[1:], 'memory.swap.max')
    if os.path.exists(swap_max):
        write(swap_max, '0')
    subs = []
    try:
        v_cg, ev = kills_subscribe(cgroup=cg)
        subs.append(v_cg)
        pt.check('kernel' in ev['state']['kill_sources'], 'kernel is not a kill source', ev)
        v_root, _ = kills_subscribe()
        subs.append(v_root)
        t0 = time.monotonic()
        hog = run_in(cg, ['/usr/bin/python3', '-c', 'b = b"x" * (256 << 20)'],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rc = hog.wait(timeout=EVENT)
        pt.check(rc == -signal.SIGKILL, 'the hog was not OOM-killed', rc)
        kills = int(dict(line.split() for line in read(os.path.join(CGROOT, cg[1:], 'memory.events'))
                         .splitlines())['oom_kill'])
        got = {}
        for name, v in ((cg, v_cg), ('/', v_root)):
            ev = next_kill(v, cg)
            got[name] = (time.monotonic() - t0, ev)
            pt.check_eq((ev['by'], ev['reason']), ('kernel', 'oom_kill'), f'by and reason on {name}')
            pt.check(1 <= ev['count'] <= kills, f'count on {name} against memory.events oom_kill {kills}', ev)
        return (f'memory.events oom_kill {kills}; killed by kernel on {cg} after {got[cg][0]:.1f} s '
                f'(count {got[cg][1]["count"]}), on "/" naming {cg} after {got["/"][0]:.1f} s')
    finally:
        for v in subs:
            v.close()
        rmcg(cg)


def glib_client(user):
    """The GLib client (glib-memory-monitor.py) as @user, once it says ready."""
    pw = ensure_user(user)
    p = subprocess.Popen(['setpriv', f'--reuid={pw.pw_uid}', f'--regid={pw.pw_gid}', '--clear-groups',
                          '/usr/bin/python3', GLIB_CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ, GIO_USE_MEMORY_MONITOR='dbus'))
    line = glib_line(p, REPLY)
    pt.check(line == 'ready', 'the GLib client did not start', line, p.poll())
    return p


def glib_line(p, timeout):
    if not select.select([p.stdout], [], [], timeout)[0]:
        raise TimeoutError(f'no line from the GLib client within {timeout:.0f} s')
    line = p.stdout.readline()
    if not line:
        p.wait()
        raise AssertionError(f'the GLib client ended: {p.returncode}: {p.stderr.read()}')
    return line.strip()


def lmm_off():
    if os.path.exists(LMM_DROPIN):
        os.unlink(LMM_DROPIN)
        sh('systemctl', 'reload', SERVICE)


@check('LowMemoryMonitor=yes (drop-in, reload) on the real system bus: GLib\'s GMemoryMonitor, run by an '
       'unprivileged user, gets 50, 100 and 255 for injected low, medium and critical; a reload with it off '
       'gives the name back')
def t_low_memory_monitor():
    client = None
    try:
        sh('systemctl', 'start', SERVICE)
        os.makedirs(os.path.dirname(LMM_DROPIN), exist_ok=True)
        write(LMM_DROPIN, '[DBus]\nLowMemoryMonitor=yes\n')
        t0 = time.monotonic()
        sh('systemctl', 'reload', SERVICE)
        wait_for(lambda: name_has_owner(LMM), REPLY, f'{LMM} owned after the reload')
        owned = time.monotonic() - t0
        client = glib_client('pvmglib')
        got = []
        for level, byte in (('low', 50), ('medium', 100), ('critical', 255)):
            t1 = time.monotonic()
            d = call('io.pressured.Inject', {'level': level})
            pt.check(d['delivered'] >= 1, f'Inject {level} reached nobody', d)
            line = glib_line(client, REPLY)
            got.append((level, line.split()[0], time.monotonic() - t1))
            pt.check_eq(line.split()[0], str(byte), f'the GLib callback\'s level for {level}')
        lmm_off()
        wait_for(lambda: not name_has_owner(LMM), REPLY, f'{LMM} released after a reload with it off')
        pt.check(show('ActiveState') == 'active', 'the daemon did not survive switching it off')
        return (f'name owned {owned:.2f} s after the reload; GLib callbacks: '
                + ', '.join(f'{lv} -> {b} after {t:.2f} s' for lv, b, t in got))
    finally:
        if client:
            client.stdin.close()
            try:
                client.wait(timeout=REPLY)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait()
        lmm_off()


# --- restarts, crashes and upgrades: the fd store ------------------------------

TAKEOVER_UNIT = 'pvm-takeover-sd'
TAKEOVER_CLIENTS = 10
TAKEOVER_SUBSCRIBERS = 50


class TakeoverStream:
    """A raw Subscribe stream read by a thread: every event's seq and missed
    are checked; after a crash a gap must equal its missed."""

    def __init__(self, cgroup, level):
        import threading
        self.v = varlink()
        msg = self.v.subscribe(cgroup=cgroup, level=level)
        pt.check(msg['parameters']['event']['kind'] == 'subscribed', 'not subscribed', msg)
        self.lock = threading.Lock()
        self.events = self.last = self.gaps = self.uncertain = 0
        self.problems = []
        self.eof = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                msg = self.v.recv(timeout=3600)
            except (EOFError, OSError):
                with self.lock:
                    self.eof = True
                return
            ev = msg.get('parameters', {}).get('event', {})
            with self.lock:
                if ev.get('kind') == 'cleared':
                    self.last = ev['seq']
                    continue
                if ev.get('kind') != 'pressure':
                    self.problems.append(f'unexpected {ev}')
                    continue
                gap = ev['seq'] - self.last - 1
                if ev['missed'] == gap + 1:
                    # The process died between writing an event to this stream and noting it did:
                    # its successor counts that event as missed (pressured(8), "After a crash").
                    self.uncertain += 1
                elif gap != ev['missed']:
                    self.problems.append(f'seq {ev["seq"]} after {self.last} with missed {ev["missed"]}')
                self.gaps += gap
                self.last = ev['seq']
                self.events += 1

    def state(self):
        with self.lock:
            return self.events, self.gaps, list(self.problems), self.eof, self.uncertain


class TakeoverInjector:
    """Inject(critical) on @cgroup back to back, every 10 ms; a connection
    closed by a crash is made again (the call it carried may or may not
    have been delivered)."""

    def __init__(self, cgroup):
        import threading
        self.cgroup = cgroup
        self.sent = self.acked = 0
        self.reconnects = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        v = None
        while not self.stop.is_set():
            try:
                v = v or varlink()
                self.sent += 1
                msg = v.call_sync('io.pressured.Inject', {'cgroup': self.cgroup, 'level': 'critical'})
                if 'parameters' in msg:
                    self.acked += 1
            except (EOFError, OSError, TimeoutError):
                v = None
                self.reconnects += 1
                time.sleep(0.05)
            time.sleep(0.01)

    def finish(self):
        self.stop.set()
        self.thread.join(REPLY)


def sd_counts(out):
    return [len(event_lines(f'{out}.{i}')) for i in range(TAKEOVER_CLIENTS)]


def takeover_journal():
    return [e for e in journal() if e.get('MESSAGE_ID') == '6402ef33ebb84b7c9425efe27e3af555']


@check('restart and crash under load, with systemd\'s fd store: 50 varlink streams and 10 sd-event clients '
       'go on through 3 restarts and a SIGKILL with an injection every 10 ms; no end of file, every gap in seq '
       'is the missed it carries (or one less, once, for an event written as the SIGKILL struck), nothing spins')
def t_takeover_restart():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'proxy'))
    import proxylib
    client = proxylib.build_client()
    out = os.path.join('/run', TAKEOVER_UNIT)
    for i in range(TAKEOVER_CLIENTS):
        write(f'{out}.{i}', '')
    sh('systemctl', 'start', SERVICE)
    script = ' '.join(f'{client} > {out}.{i} &' for i in range(TAKEOVER_CLIENTS)) + ' wait'
    sh('systemd-run', f'--unit={TAKEOVER_UNIT}', '--collect', '--quiet',
       '-p', f'Environment=MEMORY_PRESSURE_WATCH={PROXY_SOCKET}', '/bin/sh', '-c', script)
    streams, injector = [], None
    try:
        try:
            wait_for(lambda: show('ActiveState', TAKEOVER_UNIT + '.service') == 'active', REPLY, TAKEOVER_UNIT)
        except TimeoutError:
            st = sh('systemctl', 'status', '--no-pager', '-l', TAKEOVER_UNIT + '.service', check=False).stdout
            raise AssertionError(f'{TAKEOVER_UNIT} did not start: {st}; output {read(out + ".0")!r}')
        cg = show('ControlGroup', TAKEOVER_UNIT + '.service')
        wait_for(lambda: sum(len(r['proxied']) for r in proxy_regs(cg)) == TAKEOVER_CLIENTS, EVENT,
                 f'{TAKEOVER_CLIENTS} sd-event clients attached on {cg}')
        for i in range(TAKEOVER_SUBSCRIBERS):
            streams.append(TakeoverStream(cg, ('low', 'medium', 'critical')[i % 3]))
        takeovers_before = len(takeover_journal())
        injector = TakeoverInjector(cg)
        times = []
        for what in ('restart', 'restart', 'restart', 'kill'):
            wait_for(lambda: injector.acked > 5, EVENT, 'injections before the restart')
            acked = injector.acked
            t0 = time.monotonic()
            if what == 'restart':
                sh('systemctl', 'restart', SERVICE)
            else:
                pid = show('MainPID')
                sh('systemctl', 'kill', '-s', 'SIGKILL', SERVICE)
                wait_for(lambda: show('MainPID') not in (pid, '0') and show('ActiveState') == 'active', EVENT,
                         'the service restarted after SIGKILL')
            wait_for(lambda: injector.acked > acked, EVENT, f'an injection answered after the {what}')
            times.append(time.monotonic() - t0)
        injector.finish()
        wait_for(lambda: min(sd_counts(out)) >= injector.acked, EVENT, 'every acknowledged injection at every '
                 'sd-event client')
        time.sleep(2)  # what a spinning client would add shows now
        counts = sd_counts(out)
        pt.check(max(counts) <= injector.sent, 'an sd-event client got more callbacks than injections (spinning)',
                 counts, injector.sent)
        total_gaps = 0
        for i, s in enumerate(streams):
            events, gaps, problems, eof, uncertain = s.state()
            pt.check(not eof, f'stream {i} saw an end of file')
            pt.check(not problems, f'stream {i}', problems[:3])
            pt.check(uncertain <= 1, f'stream {i}: missed one above its gap more often than the one crash',
                     uncertain)
            pt.check(events + gaps >= injector.acked, f'stream {i}: events and gaps against injections',
                     events, gaps, injector.acked)
            total_gaps += gaps
        st = call('io.pressured.GetStatus')
        lines = takeover_journal()[takeovers_before:]
        pt.check(len(lines) == 4, 'one journal line per takeover', [e.get('MESSAGE') for e in lines])
        pt.check(st['generation'] >= 4 and st['takeover']['clean'] is False, 'generation after the crash', st)
        pt.check(show('NRestarts') != '', 'NRestarts')
        return (f'{injector.sent} injections ({injector.acked} answered, {injector.reconnects} reconnects), '
                f'first answered injection {", ".join(f"{t:.1f}" for t in times)} s after each restart/kill; '
                f'sd-event callbacks {min(counts)}-{max(counts)}; stream gaps after the kill {total_gaps}; '
                f'generation {st["generation"]}; journal: {lines[-1].get("MESSAGE")}')
    finally:
        if injector:
            injector.finish()
        for s in streams:
            s.v.close()
        sh('systemctl', 'stop', TAKEOVER_UNIT + '.service', check=False)
        sh('systemctl', 'reset-failed', TAKEOVER_UNIT + '.service', check=False)


@check('an episode begun before a restart ends with "cleared" from the new process')
def t_takeover_episode():
    cg = '/pvm-takeover-episode'
    mkcg(cg)
    try:
        sh('systemctl', 'start', SERVICE)
        v, _ = subscribe(cgroup=cg, level='critical')
        call('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
        ev, _ = next_event(v, REPLY, kinds=('pressure',))
        gen = call('io.pressured.GetStatus')['generation']
        reg = [r for r in call('io.pressured.GetStatus')['registrations'] if r['cgroup'] == cg][0]
        pt.check('episode' in reg, 'an active episode before the restart', reg)
        t0 = time.monotonic()
        sh('systemctl', 'restart', SERVICE)
        after = call('io.pressured.GetStatus')
        pt.check_eq(after['generation'], gen + 1, 'generation after the restart')
        reg = [r for r in after['registrations'] if r['cgroup'] == cg][0]
        pt.check('episode' in reg, 'the episode is still active after the restart', reg)
        cleared, _ = next_event(v, EVENT, kinds=('cleared',))
        pt.check_eq((cleared['seq'], cleared['events']), (ev['seq'] + 1, 1), 'cleared after the restart')
        v.close()
        return (f'cleared {time.monotonic() - t0:.1f} s after the restart, by generation {after["generation"]}, '
                f'duration {cleared["duration_us"] / 1e6:.1f} s')
    finally:
        rmcg(cg)


def glib_hears_critical(client, when):
    """Inject critical until the GLib client prints a level; return it."""
    deadline = time.monotonic() + EVENT
    while True:
        call('io.pressured.Inject', {'level': 'critical'})
        try:
            return glib_line(client, 5).split()[0]
        except TimeoutError:
            pt.check(time.monotonic() < deadline, f'GLib heard nothing {when}')


@check('LowMemoryMonitor across a restart: the name is taken again and GLib\'s GMemoryMonitor goes on by itself')
def t_takeover_glib():
    client = None
    try:
        sh('systemctl', 'start', SERVICE)
        os.makedirs(os.path.dirname(LMM_DROPIN), exist_ok=True)
        write(LMM_DROPIN, '[DBus]\nLowMemoryMonitor=yes\n')
        sh('systemctl', 'reload', SERVICE)
        wait_for(lambda: name_has_owner(LMM), REPLY, f'{LMM} owned')
        client = glib_client('pvmglib')
        # GLib's proxy for the name comes up on its own time.
        pt.check_eq(glib_hears_critical(client, 'before the restart'), '255', 'GLib before the restart')
        t0 = time.monotonic()
        sh('systemctl', 'restart', SERVICE)
        wait_for(lambda: name_has_owner(LMM), REPLY, f'{LMM} owned again after the restart')
        owned = time.monotonic() - t0
        # GLib follows the name on its own; the first warning after the restart may race its new proxy.
        pt.check_eq(glib_hears_critical(client, 'after the restart'), '255', 'GLib after the restart')
        return f'name owned {owned:.2f} s after systemctl restart returned; GLib heard 255 after it'
    finally:
        if client:
            client.stdin.close()
            try:
                client.wait(timeout=REPLY)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait()
        lmm_off()


@check('pressurectl reexec under systemd: same pid, the stream goes on, and a restart after it takes over as well')
def t_takeover_reexec():
    cg = '/pvm-takeover-reexec'
    mkcg(cg)
    try:
        sh('systemctl', 'start', SERVICE)
        v, _ = subscribe(cgroup=cg, level='low')
        pid, gen = show('MainPID'), call('io.pressured.GetStatus')['generation']
        t0 = time.monotonic()
        r = pt.run_ctl('reexec', timeout=REPLY)
        took = time.monotonic() - t0
        pt.check_eq(r.returncode, 0, f'pressurectl reexec: {r.stderr}')
        pt.check_eq(show('MainPID'), pid, 'the same main pid')
        pt.check_eq(call('io.pressured.GetStatus')['generation'], gen + 1, 'generation after reexec')
        call('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
        ev, _ = next_event(v, REPLY, kinds=('pressure',))
        pt.check_eq((ev['seq'], ev['missed']), (1, 0), 'the stream after reexec')
        sh('systemctl', 'restart', SERVICE)
        st = call('io.pressured.GetStatus')
        pt.check_eq((st['generation'], st['takeover']['clean']), (gen + 2, True), 'a restart after reexec')
        call('io.pressured.Inject', {'cgroup': cg, 'level': 'critical'})
        ev, _ = next_event(v, REPLY, kinds=('pressure',))
        pt.check_eq((ev['seq'], ev['missed']), (2, 0), 'the stream after the restart')
        v.close()
        return f'reexec answered in {took:.2f} s, pid {pid} kept; generation {st["generation"]} after a restart'
    finally:
        rmcg(cg)


# --- the end ------------------------------------------------------------------

# Proactive reclaim ([Reclaim]) on a real memcg: page cache written on the
# scratch disk is charged to the cgroup and clean, so memory.reclaim can take
# it. memory.low above MinSize makes the protection the floor; the kernel's
# memory.reclaim does not protect the cgroup it is written to, so staying
# above memory.low is the controller's doing.
PROACTIVE_CG = '/pvm-proactive'
PROACTIVE_DROPIN = os.path.join(CONF_DIR, 'pressured.conf.d', '90-pvm-proactive.conf')
PROACTIVE_CACHE_MB = 384
PROACTIVE_LOW = 160 * MIB
PROACTIVE_MIN_SIZE = 64 * MIB
# memory.current moves by more than the controller asks: the kernel
# reclaims in batches (10 MiB asked took 14-15 MiB of page cache in the VM,
# tests/bench/results.md) and the cgroup's own small charges come and go.
# memory.reclaim ignores the memory.low of the cgroup it is written to.
PROACTIVE_SLACK = 8 * MIB


# The Prometheus endpoint, as an administrator turns it on: a [Metrics]
# Listen= drop-in and the shipped unit drop-in that lets the service use IP
# (the unit alone allows AF_UNIX only), then a restart (Listen= is read at
# start).
METRICS_LISTEN = '127.0.0.1:9466'
METRICS_CONF_DROPIN = os.path.join(CONF_DIR, 'pressured.conf.d', '90-pvm-metrics.conf')
METRICS_UNIT_DROPIN = '/etc/systemd/system/pressured.service.d/metrics.conf'
METRICS_EXAMPLES = [os.path.join(pt.install_dir('datadir'), 'doc/pressured/examples/pressured-metrics.conf')]


def metrics_on():
    example = next((f for f in METRICS_EXAMPLES if os.path.exists(f)), None)
    pt.check(example is not None, 'the unit drop-in pressured-metrics.conf is not installed', METRICS_EXAMPLES)
    os.makedirs(os.path.dirname(METRICS_UNIT_DROPIN), exist_ok=True)
    shutil.copy(example, METRICS_UNIT_DROPIN)
    os.makedirs(os.path.dirname(METRICS_CONF_DROPIN), exist_ok=True)
    write(METRICS_CONF_DROPIN, f'[Metrics]\nListen={METRICS_LISTEN}\n')
    sh('systemctl', 'daemon-reload')
    sh('systemctl', 'restart', SERVICE)


def metrics_off():
    gone = False
    for f in (METRICS_CONF_DROPIN, METRICS_UNIT_DROPIN):
        if os.path.exists(f):
            os.unlink(f)
            gone = True
    if gone:
        sh('systemctl', 'daemon-reload')
        sh('systemctl', 'restart', SERVICE)


def metric_samples(prefix):
    """{series: value} of the lines of GET /metrics whose series starts with @prefix."""
    with urllib.request.urlopen(f'http://{METRICS_LISTEN}/metrics', timeout=REPLY) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            series, _, value = line.rpartition(' ')
            out[series] = float(value)
    return out


def reclaim_entry(cg):
    for e in call('io.pressured.GetStatus').get('reclaim') or []:
        if e['cgroup'] == cg:
            return e
    return None


def proactive_off():
    if os.path.exists(PROACTIVE_DROPIN):
        os.unlink(PROACTIVE_DROPIN)
        sh('systemctl', 'reload', SERVICE)


@check('proactive reclaim: a page-cache cgroup shrinks to its memory.low floor, never below; '
       'GetStatus and /metrics show it; a reload without [Reclaim] stops it')
def t_proactive_reclaim():
    cg = PROACTIVE_CG
    d = os.path.join(CGROOT, cg.lstrip('/'))
    cur = os.path.join(d, 'memory.current')
    rmcg(cg)
    mkcg(cg, memory_low=str(PROACTIVE_LOW))
    sh('systemctl', 'start', SERVICE)
    lowest = [None]

    def sample():
        v = int(read(cur))
        lowest[0] = v if lowest[0] is None else min(lowest[0], v)
        return v
    try:
        metrics_on()
        pagecache(cg, 'pvm-proactive', PROACTIVE_CACHE_MB)
        start = sample()
        pt.check(start > PROACTIVE_LOW + 128 * MIB, 'the page cache was not charged to the cgroup', mib(start))
        os.makedirs(os.path.dirname(PROACTIVE_DROPIN), exist_ok=True)
        write(PROACTIVE_DROPIN, f'[Reclaim]\nCgroups={cg}\nInterval=1s\nMaxStep=5%\n'
                                f'MinSize={PROACTIVE_MIN_SIZE >> 20}M\n')
        t0 = time.monotonic()
        sh('systemctl', 'reload', SERVICE)
        first = wait_for(lambda: sample() and (reclaim_entry(cg) or {}).get('reclaimed_bytes', 0) > 0 and
                         reclaim_entry(cg), EVENT, f'{cg} reclaimed by the controller')
        took = time.monotonic() - t0
        pt.check(first['floor_bytes'] == PROACTIVE_LOW, 'the floor is not memory.low', first)
        pt.check(first['state'] in ('probing', 'backing-off', 'at-floor'), 'state', first)
        for key in ('last_step_bytes', 'stall_pct', 'io_stall_pct'):
            pt.check(key in first, f'no {key} in the reclaim entry', first)
        last = wait_for(lambda: sample() and (reclaim_entry(cg) or {}).get('state') == 'at-floor' and
                        reclaim_entry(cg), 3 * EVENT, f'{cg} at its floor')
        end = sample()
        pt.check(lowest[0] >= PROACTIVE_LOW - PROACTIVE_SLACK,
                 f'memory.current went below the floor {mib(PROACTIVE_LOW)}', mib(lowest[0]))
        pt.check(end <= PROACTIVE_LOW + 32 * MIB, f'at-floor but memory.current {mib(end)} far above the floor',
                 last)
        # reclaimed_bytes adds up the steps the kernel accepted; the kernel takes somewhat more than it
        # is asked (about half as much again for 10 MiB of page cache), so the fall is larger.
        fell = start - end
        pt.check(fell / 2 <= last['reclaimed_bytes'] <= fell + 32 * MIB,
                 f'reclaimed_bytes does not match the fall of memory.current by {mib(fell)}', last)

        # /metrics says what GetStatus says (at the floor nothing more is taken, but read GetStatus on
        # both sides of the scrape all the same).
        before = reclaim_entry(cg)
        m = metric_samples('pressured_reclaim_')
        after = reclaim_entry(cg)
        total = m.get(f'pressured_reclaim_bytes_total{{cgroup="{cg}"}}')
        pt.check(total is not None and before['reclaimed_bytes'] <= total <= after['reclaimed_bytes'],
                 'pressured_reclaim_bytes_total does not match GetStatus', total, before, after)
        pt.check(before['state'] == after['state'] == 'at-floor', 'left its floor during the scrape', before, after)
        for state in ('probing', 'backing-off', 'at-floor', 'unsupported'):
            want = 1.0 if state == 'at-floor' else 0.0
            got = m.get(f'pressured_reclaim_state{{cgroup="{cg}",state="{state}"}}')
            pt.check(got == want, f'pressured_reclaim_state {state}', got, before, after)

        # Off by reload: the entry goes, and memory charged again stays.
        proactive_off()
        wait_for(lambda: reclaim_entry(cg) is None, REPLY, f'{cg} gone from GetStatus reclaim after the reload')
        p = run_in(cg, ['cat', os.path.join(SCRATCH, 'pvm-proactive')], stdout=subprocess.DEVNULL)
        pt.check(p.wait(timeout=600) == 0, 're-reading the cache file failed')
        again = int(read(cur))
        pt.check(again > end + 128 * MIB, 're-reading did not charge the cache again', mib(again))
        # Five of the former intervals with nothing taken.
        t1 = time.monotonic()
        least = again
        while time.monotonic() - t1 < 5.0:
            least = min(least, int(read(cur)))
            time.sleep(0.1)
        pt.check(least >= again - 8 * MIB, 'memory.current still falls with [Reclaim] off',
                 f'{mib(again)} -> {mib(least)}')
        return (f'{mib(start)} -> {mib(end)} (floor {mib(PROACTIVE_LOW)}, lowest {mib(lowest[0])}); first '
                f'reclaim {took:.1f} s after the reload; reclaimed_bytes {mib(last["reclaimed_bytes"])}; '
                f'after the reload off {mib(again)} held 5 s; /metrics agrees')
    finally:
        proactive_off()
        metrics_off()
        rmcg(cg)
        try:
            os.unlink(os.path.join(SCRATCH, 'pvm-proactive'))
        except FileNotFoundError:
            pass


@check('systemctl stop is clean')
def t_stop():
    pid = show('MainPID')
    t0 = time.monotonic()
    sh('systemctl', 'stop', SERVICE)
    took = time.monotonic() - t0
    res = show('Result')
    status = show('ExecMainStatus')
    pt.check(res == 'success' and status == '0', 'stop result', res, status)
    pt.check(show('ActiveState', 'pressured.socket') == 'active', 'the socket went away')
    wait_for(lambda: journal('MESSAGE_ID=047484cce800486ba342bc412ce57d94'), REPLY, 'the stop logged')
    return f'pid {pid} stopped in {took:.2f} s, Result={res}, status {status}; socket still listening'


@check('the journal carries MESSAGE_IDs and priorities')
def t_journal():
    want = {'8fc1a063539d4ee6be808343a4e7ba83': '6', '047484cce800486ba342bc412ce57d94': '6',
            'bb8dd7f7f9864ea0b5fbcdf483a9a349': '6', 'e8968915283b4de1a599e8a2f21778e2': '3'}
    entries = journal()
    seen = {}
    for e in entries:
        mid = e.get('MESSAGE_ID')
        if mid in want:
            seen.setdefault(mid, e.get('PRIORITY'))
    for mid, prio in want.items():
        pt.check(seen.get(mid) == prio, f'MESSAGE_ID {mid} priority', seen.get(mid), prio)
    return f'{len(entries)} entries; ' + ', '.join(f'{m[:8]}… PRIORITY={p}' for m, p in seen.items())


@check('the shipped hardening denies nothing the daemon needs (no EPERM/EACCES in the journal)')
def t_hardening():
    bad = []
    for e in journal():
        text = str(e.get('MESSAGE', ''))
        if (e.get('ERRNO') in ('1', '13') or 'Permission denied' in text
                or 'Operation not permitted' in text or 'EPERM' in text or 'EACCES' in text):
            if e.get('_PID') != '1':
                bad.append(text)
    pt.check(not bad, 'denied', bad)
    audit = sh('journalctl', '--since', SINCE, '-k', '-o', 'cat', '--no-pager', check=False).stdout
    seccomp = [line for line in audit.splitlines() if 'pressured' in line and ('seccomp' in line or 'apparmor="DENIED"' in line)]
    pt.check(not seccomp, 'kernel denials', seccomp)
    return f'{len(journal())} daemon journal entries over the suite, none with EPERM/EACCES'


def run(checks, out=sys.stdout):
    """Run @checks, a list of (name, function), printing TAP to @out: "ok" with the note a check
    returns, "ok ... # SKIP reason" for a check that raised Skip (skip(), or the harness's skip()),
    "not ok" for anything else it raised, an exit included (sys.exit(1), a helper's exit 143), with
    the traceback as comments. Returns the number of checks that failed."""
    print(f'1..{len(checks)}', file=out, flush=True)
    failed = 0
    for i, (name, fn) in enumerate(checks, 1):
        t0 = time.monotonic()
        try:
            note = fn()
            print(f'ok {i} - {name} # {note} [{time.monotonic() - t0:.0f} s]', file=out, flush=True)
        except Skip as e:
            print(f'ok {i} - {name} # SKIP {e}', file=out, flush=True)
        except BaseException as e:  # noqa: B902
            failed += 1
            # TAP: only the first line of the reason on the result line, the rest as comments.
            reason = (f'exit status {e.code}' if isinstance(e, SystemExit) else str(e)).splitlines() or ['']
            print(f'not ok {i} - {name} # {type(e).__name__}: {reason[0]}', file=out, flush=True)
            for line in reason[1:] + traceback.format_exc().splitlines():
                print('# ' + line, file=out, flush=True)
    return failed


def main():
    pt.own_verdict()  # TAP: each check's line and the exit status say how it went
    os.chdir('/')
    only = sys.argv[1:]
    failed = run([(n, fn) for n, fn in results if not only or fn.__name__ in only])
    print(f'# vm suite: {time.monotonic() - START:.0f} s in the guest', flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
