#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The vm-sid suite: pressured as installed, with the programs of systemd
262 and GLib 2.90 that use it, in the Debian sid guest of tests/vm/run.sh.

    checks-sid.py --boot       on the host: the meson test vm-sid
    checks-sid.py [CHECK...]   in the sid guest: the checks, as TAP

On the host it builds the sd-event client of tests/sid (statically linked
with the libsystemd.a of sid's systemd that tests/sid/fetch-systemd-sid.sh
fetches) and boots the sid guest (PRESSURED_VM_GUEST=sid) with itself as
the command. Where the Debian mirror cannot give sid's systemd or a sid
tree, the test is a TAP skip saying why.

In the guest (systemd 262 as PID 1, the project installed as a package
would be, pressured.socket and the three pressure sockets listening) each
check prints one TAP line with what was measured after '#'. The checks
build on each other: the daemons, units and GLib programs that the first
ones connect stay connected for the restart check. The helpers are those
of checks.py (the bookworm guest's suite); waits have generous deadlines,
everything runs about ten times slower under TCG.
"""
import json
import os
import select
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'sid'))
import checks as base  # noqa: E402
import sidlib  # noqa: E402

pt = base.pt
sh, show, call, write, read, wait_for = base.sh, base.show, base.call, base.write, base.read, base.wait_for
REPLY, EVENT = base.REPLY, base.EVENT
# checks.py's own checks are not this suite's: only those below run.
base.results.clear()
check = base.check

SOCKETS = {r: f'/run/pressured/{r}-pressure' for r in sidlib.RESOURCES}
UNIT_DIR = '/etc/systemd/system'
# What is connected to pressured for the restart check: name -> how to
# tell that it heard an injection (see Listener).
CONNECTED = {}


def ctl_env(*args):
    """The drop-in `pressurectl memory-pressure-env ARGS` prints."""
    r = sh(pt.PRESSURECTL, 'memory-pressure-env', *args)
    pt.check(r.stdout.startswith('[Service]\n'), 'memory-pressure-env output', r.stdout)
    return r.stdout


def drop_in(unit, text):
    d = os.path.join(UNIT_DIR, unit + '.d')
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, '50-pressured.conf'), text)


def environ(pid):
    with open(f'/proc/{pid}/environ', 'rb') as f:
        return dict(x.decode().split('=', 1) for x in f.read().split(b'\0') if b'=' in x)


def proxied():
    """{pid: (resource, cgroup)} of every client on the pressure sockets."""
    out = {}
    for r in call('io.pressured.GetStatus')['registrations']:
        for p in r['proxied']:
            out[p['pid']] = (r['resource'], p['cgroup'])
    return out


def inject(cgroup, resource='memory', level='low'):
    return call('io.pressured.Inject', {'cgroup': cgroup, 'level': level, 'resource': resource})['delivered']


class Listener:
    """A program connected to pressured: its pid, cgroup and resource, and
    count(), the number of times it has shown it heard pressure (its log
    lines, its callbacks)."""

    def __init__(self, name, pid, cgroup, resource, count):
        self.name, self.pid, self.cgroup, self.resource, self.count = name, pid, cgroup, resource, count

    def cpu(self):
        return sidlib.cpu_seconds(self.pid)

    def hears(self, what):
        """Inject once on its cgroup and resource and wait until it hears
        it; its count before."""
        before = self.count()
        delivered = inject(self.cgroup, self.resource)
        pt.check(delivered >= 1, f'{what}: Inject on {self.cgroup} ({self.resource}) reached nobody')
        wait_for(lambda: self.count() > before, EVENT, f'{self.name} to hear the injection {what}')
        return before


def settle(seconds=3.0):
    """What an injection or a spin would still add to a count shows within @seconds."""
    time.sleep(seconds)


# --- the guest ----------------------------------------------------------------

def glib_version():
    import gi
    gi.require_version('GLib', '2.0')
    from gi.repository import GLib
    return (GLib.MAJOR_VERSION, GLib.MINOR_VERSION, GLib.MICRO_VERSION)


def glib_default_monitor():
    """The GMemoryMonitor GLib picks with no GIO_USE_MEMORY_MONITOR."""
    env = {k: v for k, v in os.environ.items() if k not in ('GIO_USE_MEMORY_MONITOR', 'MEMORY_PRESSURE_WATCH')}
    return sh('/usr/bin/python3', '-c', 'import gi; gi.require_version("Gio", "2.0"); from gi.repository import Gio; '
              'print(type(Gio.MemoryMonitor.dup_default()).__gtype__.name)', env=env).stdout.strip()


@check('the guest: systemd 262 or later as PID 1, GLib 2.90, pressured installed and socket-activated')
def t_guest():
    version = sh('systemctl', '--version').stdout.splitlines()[0]
    major = int(version.split()[1].split('.')[0])
    pt.check(major >= 262, 'systemd is older than 262', version)
    pt.check(os.path.basename(os.readlink('/proc/1/exe')) == 'systemd', 'PID 1 is not systemd',
             os.readlink('/proc/1/exe'))
    glib = glib_version()
    pt.check(glib >= (2, 90, 0), 'GLib is older than 2.90', glib)
    for unit in ('pressured.socket', *(f'pressured-{r}-pressure.socket' for r in sidlib.RESOURCES)):
        pt.check(show('ActiveState', unit) == 'active', f'{unit} is not listening')
    st = call('io.pressured.GetStatus')
    wait_for(lambda: show('ActiveState') == 'active', REPLY, 'pressured.service active')
    return (f'{version}; GLib {".".join(map(str, glib))} (default memory monitor {glib_default_monitor()}); '
            f'Python {sys.version.split()[0]}; pressured {st["version"]} started by its socket')


# --- systemd's own daemons ------------------------------------------------------

def kmsg_count(pid, text):
    """Lines of the kernel log from @pid saying @text (journald logs its own messages there)."""
    out = sh('dmesg').stdout
    return sum(1 for line in out.splitlines() if f'[{pid}]: {text}' in line)


def journal_count(pid, text):
    """Lines of the journal from @pid saying @text."""
    out = sh('journalctl', '-o', 'cat', '--no-pager', '--since', base.SINCE, f'_PID={pid}').stdout
    return sum(1 for line in out.splitlines() if line.startswith(text))


# Daemons of systemd 262 that call sd_event_add_memory_pressure() (of the
# systemd package: journald, logind, networkd, hostnamed; nm -D shows the
# import), the two that run in every system, and the line each logs per
# callback: journald its own handler's, at info, in the kernel log;
# logind sd-event's default handler's, at debug.
DAEMONS = {
    'systemd-journald.service': ('Under memory pressure, flushing caches.', kmsg_count),
    'systemd-logind.service': ('Memory pressure event, trimming malloc() memory.', journal_count),
}


@check('systemd 262\'s journald and logind, pointed at the memory-pressure socket by a drop-in from '
       '`pressurectl memory-pressure-env`, are served on their own cgroups and answer each injection once')
def t_systemd_daemons():
    env = ctl_env()
    for unit in DAEMONS:
        drop_in(unit, env)
    sh('systemctl', 'daemon-reload')
    sh('systemctl', 'restart', *DAEMONS)
    sh('systemctl', 'service-log-level', 'systemd-logind.service', 'debug')
    notes = []
    for unit, (text, counter) in DAEMONS.items():
        pid = int(show('MainPID', unit))
        cg = show('ControlGroup', unit)
        pt.check(environ(pid).get('MEMORY_PRESSURE_WATCH') == SOCKETS['memory'],
                 f'{unit} was not given the socket', environ(pid).get('MEMORY_PRESSURE_WATCH'))
        wait_for(lambda: proxied().get(pid) == ('memory', cg), REPLY, f'{unit} (pid {pid}) proxied on {cg}')
        x = Listener(unit, pid, cg, 'memory', lambda p=pid, t=text, c=counter: c(p, t))
        t0 = time.monotonic()
        before = x.hears('the first')
        took = time.monotonic() - t0
        settle()
        pt.check_eq(x.count(), before + 1, f'{unit}: lines "{text}" for one injection')
        CONNECTED[unit] = x
        notes.append(f'{unit} (pid {pid}) logged "{text}" {took:.1f} s after Inject')
    return '; '.join(notes)


# --- CPUPressureWatch= and IOPressureWatch= -----------------------------------------

QUIET_TRIGGER = 'some 1900ms 2s'


def sd_unit(resource):
    return f'pvm-sd-{resource}.service'


def out_lines(path, word):
    try:
        with open(path) as f:
            return sum(1 for line in f if line.startswith(word))
    except FileNotFoundError:
        return 0


@check('CPUPressureWatch= and IOPressureWatch= through pressured: an sd-event 262 service per resource, '
       'its drop-in from `memory-pressure-env --resource`, is woken by its resource\'s injection only')
def t_cpu_io_watch():
    pt.check(os.access(sidlib.CLIENT, os.X_OK), f'no sd-event client at {sidlib.CLIENT} (built by --boot)')
    notes = []
    for resource in ('cpu', 'io'):
        unit, out = sd_unit(resource), f'/run/{sd_unit(resource)}.out'
        write(os.path.join(UNIT_DIR, unit), f'[Service]\nExecStart={sidlib.CLIENT} {resource}\n'
                                            f'StandardOutput=truncate:{out}\n')
        # 1.9 s of stall in 2 s: a woken client waiting for a CPU of the busy guest is cpu stall, and
        # systemd's default trigger (200 ms in 2 s) could add a real event to the injected ones.
        env = ctl_env('--resource', resource, '--psi', QUIET_TRIGGER)
        setting = 'CPUPressureWatch=skip' if resource == 'cpu' else 'IOPressureWatch=skip'
        pt.check(setting in env.splitlines(), f'the drop-in does not turn systemd\'s own {resource} watch off', env)
        drop_in(unit, env)
    sh('systemctl', 'daemon-reload')
    for resource in ('cpu', 'io'):
        unit, out = sd_unit(resource), f'/run/{sd_unit(resource)}.out'
        sh('systemctl', 'start', unit)
        wait_for(lambda: out_lines(out, 'ready'), REPLY, f'{unit} ready')
        pid, cg = int(show('MainPID', unit)), show('ControlGroup', unit)
        watch, _ = sidlib.watch_vars(resource)
        pt.check(environ(pid).get(watch) == SOCKETS[resource], f'{unit}: {watch}', environ(pid).get(watch))
        wait_for(lambda: proxied().get(pid) == (resource, cg), REPLY, f'{unit} proxied on {cg} for {resource}')
        x = Listener(unit, pid, cg, resource, lambda o=out: out_lines(o, 'event '))
        before = x.hears('of its resource')
        for other in sidlib.RESOURCES:
            if other != resource:
                pt.check_eq(inject(cg, other), 0, f'a {other} Inject on {cg} reached something')
        settle()
        pt.check_eq(x.count(), before + 1, f'{unit}: callbacks after one {resource} injection and the others')
        CONNECTED[unit] = x
        notes.append(f'{unit}: {watch}={SOCKETS[resource]}, one callback')
    return '; '.join(notes)


# --- GLib ------------------------------------------------------------------------

GLIB_FIRST_EVERY = 10.0


@check('GLib 2.90\'s GMemoryMonitor, run by an unprivileged user, follows pressured on sid\'s bus '
       '([DBus] LowMemoryMonitor=yes): 50, 100 and 255 for injected low, medium and critical')
def t_glib_lmm():
    os.makedirs(os.path.dirname(base.LMM_DROPIN), exist_ok=True)
    write(base.LMM_DROPIN, '[DBus]\nLowMemoryMonitor=yes\n')
    t0 = time.monotonic()
    sh('systemctl', 'reload', base.SERVICE)
    wait_for(lambda: base.name_has_owner(base.LMM), REPLY, f'{base.LMM} owned after the reload')
    owned = time.monotonic() - t0
    client = base.glib_client('pvmglib')
    got, heard = [], set()
    for level, byte in (('low', 50), ('medium', 100), ('critical', 255)):
        t1 = time.monotonic()
        # The first warning is sent again every GLIB_FIRST_EVERY s until GLib's callback runs: its client says
        # "ready" once its own proxy is set up after the monitor's, which does not prove the monitor's signal
        # handler is connected yet. A late callback for a warning sent again is passed over below.
        sent, line = 0, None
        while line is None:
            pt.check(call('io.pressured.Inject', {'level': level})['delivered'] >= 1, f'Inject {level} reached nobody')
            sent += 1
            try:
                line = base.glib_line(client, GLIB_FIRST_EVERY if not heard and sent * GLIB_FIRST_EVERY < REPLY
                                      else REPLY)
            except TimeoutError:
                if heard or sent * GLIB_FIRST_EVERY >= REPLY:
                    raise
            while line is not None and line.split()[0] in heard:
                line = base.glib_line(client, REPLY)
        pt.check_eq(line.split()[0], str(byte), f'the GLib callback\'s level for {level}')
        heard.add(str(byte))
        got.append(f'{level} -> {byte} after {time.monotonic() - t1:.2f} s' + (f' ({sent} sent)' if sent > 1 else ''))
    CONNECTED['GLib (D-Bus)'] = client
    return f'name owned {owned:.2f} s after the reload; ' + ', '.join(got)


GLIB_PSI_CG = '/pvm-glib-psi'


@check('GLib 2.90\'s PSI monitor pointed at the proxy connects but never hears it (it waits for urgent data '
       'the proxy never sends): no callback, no spin, no crash')
def t_glib_psi():
    base.rmcg(GLIB_PSI_CG)
    base.mkcg(GLIB_PSI_CG)
    env = dict(os.environ, MEMORY_PRESSURE_WATCH=SOCKETS['memory'], GIO_USE_MEMORY_MONITOR='psi')
    env.pop('MEMORY_PRESSURE_WRITE', None)
    p = base.run_in(GLIB_PSI_CG, ['/usr/bin/python3', base.GLIB_CLIENT, '--psi'], env=env, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = base.glib_line(p, REPLY)
    pt.check(line == 'ready', 'the GLib PSI client did not start', line, p.poll())
    wait_for(lambda: proxied().get(p.pid) == ('memory', GLIB_PSI_CG), REPLY, 'GLib connected to the proxy')
    sent = call('io.pressured.GetStatus')['counters']['proxy_events_sent']
    cpu = sidlib.cpu_seconds(p.pid)
    t0 = time.monotonic()
    for level in ('low', 'medium', 'critical'):
        pt.check(inject(GLIB_PSI_CG, level=level) >= 1, f'Inject {level} did not reach GLib\'s connection')
    wait_for(lambda: call('io.pressured.GetStatus')['counters']['proxy_events_sent'] >= sent + 3, REPLY,
             'the three bytes sent')
    heard = select.select([p.stdout], [], [], 5.0)[0]
    pt.check(not heard, 'GLib heard the proxy after all', p.stdout.readline() if heard else '')
    pt.check(p.poll() is None, 'the GLib client ended', p.poll())
    used = sidlib.cpu_seconds(p.pid) - cpu
    took = time.monotonic() - t0
    pt.check(used < 0.2 * took, 'the GLib client spins', f'{used:.2f} s of CPU in {took:.1f} s')
    CONNECTED['GLib (PSI)'] = p
    return f'3 bytes sent, no callback in 5 s; {used:.2f} s of CPU over {took:.1f} s'


# --- a restart with everything connected -------------------------------------------

@check('systemctl restart pressured with all of them connected: nobody reconnects, every sd-event program '
       'hears the next injection once and none spins; GLib follows the bus name')
def t_restart():
    want = [*DAEMONS, *(sd_unit(r) for r in ('cpu', 'io')), 'GLib (D-Bus)', 'GLib (PSI)']
    missing = [n for n in want if n not in CONNECTED]
    pt.check(not missing, 'not connected (their checks failed)', missing)
    listeners = [CONNECTED[n] for n in want if isinstance(CONNECTED[n], Listener)]
    glib_psi = CONNECTED['GLib (PSI)']
    before = call('io.pressured.GetStatus')
    clients = proxied()
    for x in listeners:
        pt.check(clients.get(x.pid) == (x.resource, x.cgroup), f'{x.name} not proxied before the restart', clients)
    cpu = {x.name: x.cpu() for x in listeners}
    cpu['GLib (PSI)'] = sidlib.cpu_seconds(glib_psi.pid)
    counts = {x.name: x.count() for x in listeners}
    t0 = time.monotonic()
    sh('systemctl', 'restart', base.SERVICE)
    after = call('io.pressured.GetStatus')
    restarted = time.monotonic() - t0
    pt.check_eq(after['generation'], before['generation'] + 1, 'generation after the restart')
    pt.check(after['takeover']['clean'], 'the takeover was not clean', after['takeover'])
    pt.check_eq(after['takeover']['proxied_clients'], before['proxied_clients'], 'proxied clients taken over')
    pt.check_eq(proxied(), clients, 'the proxied clients after the restart')
    pt.check_eq(after['counters']['proxy_connections'], before['counters']['proxy_connections'],
                'connections on the pressure sockets (a reconnect adds one)')
    for x in listeners:
        x.hears('after the restart')
    wait_for(lambda: base.name_has_owner(base.LMM), REPLY, f'{base.LMM} owned again')
    level = base.glib_hears_critical(CONNECTED['GLib (D-Bus)'], 'after the restart')
    pt.check_eq(level, '255', 'GLib (D-Bus) after the restart')
    settle()
    took = time.monotonic() - t0
    for x in listeners:
        pt.check_eq(x.count(), counts[x.name] + 1, f'{x.name}: callbacks in all (a spin adds thousands)')
    used = {x.name: x.cpu() - cpu[x.name] for x in listeners}
    used['GLib (PSI)'] = sidlib.cpu_seconds(glib_psi.pid) - cpu['GLib (PSI)']
    pt.check(glib_psi.poll() is None, 'the GLib PSI client ended')
    spinning = {n: f'{u:.2f} s' for n, u in used.items() if u > 0.2 * took}
    pt.check(not spinning, f'CPU time over the {took:.1f} s since the restart', spinning)
    return (f'restart returned in {restarted:.1f} s; {after["takeover"]["proxied_clients"]} proxied connections '
            f'taken over, none made anew; one callback each after it; GLib (D-Bus) heard 255; CPU over '
            f'{took:.0f} s: ' + ', '.join(f'{n.split(".")[0]} {u:.2f} s' for n, u in used.items()))


# --- systemd-oomd 262 -----------------------------------------------------------------

OOMD_CONF = '/etc/systemd/oomd.conf.d/90-pvm.conf'
# oomd waits this long for its pre-kill hooks (the daemon answers a margin before).
OOMD_PREKILL_TIMEOUT = '5s'
OOMD_SLICE = 'pvmoomd.slice'
VICTIM = 'pvm-victim.service'
HOOK = '/run/systemd/oomd.prekill.hook/pressured'
# The victim is laid out as a service that saves its state on a warning
# must be (tests/README.md): its main process, the saver, in a subgroup of
# its own (DelegateSubgroup=), the hog in another one under memory.max so
# that only the hog is throttled, and OOMPolicy=kill (memory.oom.group=1)
# so that systemd-oomd kills the whole service. The saver is `pressurectl
# watch --kills --exec` on the service's own cgroup (libpressure): on a
# "prekill" its hook writes the state file, and pressurectl acknowledges
# when the hook exits. The hog starts once the check has seen the saver
# subscribed (the go file).
VICTIM_SCRIPT = '/run/pvm-victim.sh'
VICTIM_GO = '/run/pvm-victim.go'
VICTIM_STATE = '{scratch}/pvm-victim.state'
VICTIM_TEXT = """cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
cg=${{cg%/main}}
echo +memory > "$cg/cgroup.subtree_control" 2>/dev/null
mkdir "$cg/hog" && echo 64M > "$cg/hog/memory.max" || exit 1
{pressurectl} watch "${{cg#/sys/fs/cgroup}}" --kills --exec /bin/sh -c \\
        '[ "$PRESSURE_KIND" = prekill ] || exit 0; echo "$PRESSURE_EVENT" > {state}.new && sync {state}.new && mv {state}.new {state}' &
while [ ! -e {go} ]; do sleep 0.1; done
f={scratch}/pvm-oomd-load
sh -c "echo \\$\\$ > $cg/hog/cgroup.procs
while :; do dd if=/dev/zero of=$f bs=1M count=160 status=none; cat $f > /dev/null; cat $f > /dev/null; done" &
wait
"""
# What t_oomd_kill saw, for t_oomd_prekill.
OOMD = {}


def oomd_journal(since):
    """systemd-oomd's journal entries since @since, as dicts."""
    out = sh('journalctl', '-o', 'json', '--no-pager', '--since', since, '-u', 'systemd-oomd.service').stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def oomd_lines(since, text):
    return [e for e in oomd_journal(since) if text in str(e.get('MESSAGE', ''))]


def prekill_missing():
    """Why warnings before a kill cannot be followed here, or None: the
    daemon must serve the hook and pressurectl (the saver) know the
    warning. Until both do, oomd is not given a hook timeout, so that it
    calls no hook and the kill check runs as before."""
    if 'prekill' not in call('io.pressured.GetStatus'):
        return 'the daemon has no pre-kill hook (GetStatus has no prekill)'
    r = sh(pt.PRESSURECTL, 'watch', '--help', check=False)
    if 'prekill' not in r.stdout + r.stderr:
        return 'the installed pressurectl does not know warnings before a kill (watch --help names no prekill)'
    return None


def victim_subscribed(cg):
    return any(r['cgroup'] == cg and r['source'] == 'kills' and r['subscribers'] >= 1
               for r in call('io.pressured.GetStatus')['registrations'])


@check('systemd-oomd 262 (real) kills a service under memory pressure in a slice with '
       'ManagedOOMMemoryPressure=kill; `pressurectl watch --kills` prints killed by systemd-oomd')
def t_oomd_kill():
    prekill = prekill_missing() is None
    state = VICTIM_STATE.format(scratch=base.SCRATCH)
    for f in (state, VICTIM_GO):
        if os.path.exists(f):
            os.unlink(f)
    os.makedirs(os.path.dirname(OOMD_CONF), exist_ok=True)
    write(OOMD_CONF, f'[OOM]\nDefaultMemoryPressureDurationSec={base.OOMD_DURATION}\n'
                     + (f'PrekillHookTimeoutSec={OOMD_PREKILL_TIMEOUT}\n' if prekill else ''))
    write(os.path.join(UNIT_DIR, OOMD_SLICE),
          f'[Slice]\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit={base.OOMD_LIMIT}\n')
    write(VICTIM_SCRIPT, VICTIM_TEXT.format(scratch=base.SCRATCH, pressurectl=pt.PRESSURECTL, state=state,
                                            go=VICTIM_GO))
    write(os.path.join(UNIT_DIR, VICTIM),
          f'[Service]\nSlice={OOMD_SLICE}\nDelegate=yes\nDelegateSubgroup=main\nOOMPolicy=kill\n'
          f'ExecStart=/bin/sh {VICTIM_SCRIPT}\n')
    sh('systemctl', 'daemon-reload')
    sh('systemctl', 'restart', 'systemd-oomd.service')
    # The slice's cgroup, for the kills subscription on it.
    sh('systemctl', 'start', OOMD_SLICE)
    since = time.strftime('%Y-%m-%d %H:%M:%S')
    # The first kills subscription connects the daemon to the bus: wait for one that lists systemd-oomd.
    wait_for(base.oomd_listed, REPLY, 'a kills subscription listing systemd-oomd')
    before = call('io.pressured.GetStatus').get('prekill')
    # With the pre-kill hook the warning comes first, then the kill.
    count = 2 if prekill else 1
    watch = subprocess.Popen([pt.PRESSURECTL, '--json', 'watch', '/' + OOMD_SLICE, '--kills', '--count', str(count),
                              '--timeout', str(int(4 * EVENT))], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        first = watch.stdout.readline()
        if '"subscribed"' not in first:
            watch.wait()
            raise AssertionError(f'pressurectl watch --kills did not subscribe: {first!r}, exit {watch.returncode}: '
                                 f'{watch.stderr.read().strip()}')
        sh('systemctl', 'start', VICTIM)
        cg = show('ControlGroup', VICTIM)
        pt.check_eq(cg, f'/{OOMD_SLICE}/{VICTIM}', 'the victim\'s cgroup')
        wait_for(lambda: victim_subscribed(cg), REPLY, 'the saver in the victim subscribed to its kills')
        wait_for(lambda: f'/{OOMD_SLICE}' in sh('oomctl', 'dump', check=False).stdout, REPLY,
                 f'oomctl dump lists /{OOMD_SLICE}')
        t0 = time.monotonic()
        write(VICTIM_GO, '')
        out, err = watch.communicate(timeout=4 * EVENT + REPLY)
        took = time.monotonic() - t0
        pt.check_eq(watch.returncode, 0, f'pressurectl watch --kills: {err.strip()}')
        events = [json.loads(line) for line in out.splitlines() if line.startswith('{')]
        ev = events[-1]
        for k, want in (('kind', 'killed'), ('by', 'systemd-oomd'), ('reason', 'memory-pressure')):
            pt.check_eq(ev.get(k), want, f'{k} of the killed event')
        pt.check(ev['cgroup'] == cg or ev['cgroup'].startswith(cg + '/'), 'the killed cgroup is not the victim', ev)
        try:
            marked = wait_for(lambda: oomd_lines(since, 'for killing due to memory pressure'), REPLY,
                              'systemd-oomd logging the kill')
        except TimeoutError:
            raise AssertionError('systemd-oomd logged no "Marked ... for killing due to memory pressure": '
                                 + ' | '.join(str(e.get('MESSAGE')) for e in oomd_journal(since)[-10:]))
        wait_for(lambda: show('ActiveState', VICTIM) in ('failed', 'inactive'), REPLY, 'the victim ended')
        OOMD.update(cg=cg, since=since, events=events, killed=ev, before=before, state=state)
        return (f'killed {took:.1f} s after the hog started; pressurectl: {ev["cgroup"]} by {ev["by"]}, '
                f'{ev["reason"]}; oomd: "{marked[0]["MESSAGE"]}"; the service {show("ActiveState", VICTIM)}, '
                f'Result={show("Result", VICTIM)}')
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
        sh('systemctl', 'stop', VICTIM, check=False)
        sh('systemctl', 'reset-failed', VICTIM, check=False)
        try:
            os.unlink(os.path.join(base.SCRATCH, 'pvm-oomd-load'))
        except FileNotFoundError:
            pass


def only(entries, what):
    pt.check(len(entries) == 1, f'systemd-oomd logged {what} {len(entries)} times', [e.get('MESSAGE') for e in entries])
    return entries[0]


def sent_us(entry):
    """When the sender wrote journal @entry (CLOCK_REALTIME, µs): _SOURCE_REALTIME_TIMESTAMP, or journald's own
    time where the entry has none."""
    return int(entry.get('_SOURCE_REALTIME_TIMESTAMP') or entry['__REALTIME_TIMESTAMP'])


@check('systemd-oomd 262\'s pre-kill hook through pressured: the saver in the victim hears prekill through '
       'libpressure, writes its state and acknowledges; oomd\'s journal shows the hook finished before the kill')
def t_oomd_prekill():
    missing = prekill_missing()
    if missing:
        base.skip(missing)
    pt.check('killed' in OOMD, 'no kill to look at (t_oomd_kill failed)')
    st = os.lstat(HOOK)
    pt.check(stat.S_ISSOCK(st.st_mode), f'{HOOK} is not a socket file (oomd skips links)', oct(st.st_mode))
    cg, killed = OOMD['cg'], OOMD['killed']
    warning = OOMD['events'][-2]
    for k, want in (('kind', 'prekill'), ('cgroup', cg), ('by', 'systemd-oomd')):
        pt.check_eq(warning.get(k), want, f'{k} of the warning before the kill')
    pt.check(warning['deadline_us'] > warning['monotonic_us'], 'the deadline is not after the warning', warning)
    pt.check(os.path.exists(OOMD['state']), 'the saver\'s state file is not there after the kill')
    saved = json.loads(read(OOMD['state']))
    pt.check_eq((saved['kind'], saved['id']), ('prekill', warning['id']), 'the warning the saver saved')
    written_us = os.stat(OOMD['state']).st_mtime_ns // 1000
    invoked = only([e for e in oomd_lines(OOMD['since'], 'Invoking oomd prekill hook')
                    if 'pressured' in e['MESSAGE'] and e['MESSAGE'].endswith(f'for cgroup {cg}')],
                   'the call of pressured\'s hook')
    finished = only(oomd_lines(OOMD['since'], f'oomd prekill hook finished for cgroup {cg}'), 'the hook finished')
    errors = oomd_lines(OOMD['since'], 'oomd prekill hook for')
    pt.check(not errors, 'systemd-oomd logged an error of the hook', [e.get('MESSAGE') for e in errors])
    # When oomd wrote each line (the kernel's time of its datagram), not when journald got round to it:
    # under TCG journald stamps its own times tens of ms late (tests/bench/results.md).
    t_invoked, t_finished = sent_us(invoked), sent_us(finished)
    pt.check(t_invoked <= written_us <= t_finished, 'the state was not written between the hook\'s call and its end',
             t_invoked, written_us, t_finished)
    pt.check(t_finished <= killed['time_us'], 'the hook finished after the kill was heard', t_finished,
             killed['time_us'])
    after = call('io.pressured.GetStatus')['prekill']
    before = OOMD['before']
    pt.check(after['warned'] > before['warned'] and after['acknowledged'] > before['acknowledged'],
             'GetStatus prekill did not count a warning acknowledged', before, after)
    pt.check_eq(after['deadline_reached'], before['deadline_reached'], 'warnings answered at their deadline')
    return (f'{HOOK}: oomd called it for {cg}; state written {(written_us - t_invoked) / 1000:.0f} ms after the '
            f'call, hook finished {(t_finished - written_us) / 1000:.0f} ms later, '
            f'{(killed["time_us"] - t_finished) / 1000:.0f} ms before the kill was '
            f'heard; GetStatus prekill {after}')


# --- on the host ---------------------------------------------------------------------

def boot():
    """The meson test: build the sd-event client, boot the sid guest with this file as its command."""
    pt.own_verdict()
    root, reason = pt.fetch_systemd_sid()
    if root is None:
        print(f'1..0 # SKIP {reason}', flush=True)
        return 0
    sidlib.build_client(root)
    env = dict(os.environ, PRESSURED_VM_GUEST='sid')
    run = os.path.join(HERE, 'run.sh')
    os.execve(run, [run, '--', '/usr/bin/python3', os.path.abspath(__file__)], env)


if __name__ == '__main__':
    if sys.argv[1:] == ['--boot']:
        sys.exit(boot())
    sys.exit(base.main())
