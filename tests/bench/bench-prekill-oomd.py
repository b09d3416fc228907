#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Warnings before a kill from real systemd-oomd 262: the margin, and a saver.

    tests/bench/bench-prekill-oomd.py [--out DIR] [--runs N] [--saves N]
                                      [--margins MS,...] [--quick]

Boots the Debian sid guest of tests/vm/run.sh (PRESSURED_VM_GUEST=sid:
systemd 262 as PID 1, its own systemd-oomd, the build installed as a
package would be) under TCG on this machine, runs itself there with
--guest, and writes the CSV files the guest prints to --out
(prekill-oomd.csv, one row per kill; prekill-oomd-info.csv). make-results.py
--prekill-oomd DIR --into tests/bench/results.md makes its section.

systemd-oomd waits PrekillHookTimeoutSec= (2 s here) for the daemon's
answer, from its call; the daemon's deadline counts from when it read the
call. Whatever the call takes to arrive, and the answer to be written after
the deadline, must fit in the margin the default deadline leaves
(PREKILL_MARGIN_USEC), or oomd gives up on the hook before the answer
comes (it logs "oomd prekill hook for CGROUP returned error:
io.systemd.TimedOut" instead of "oomd prekill hook finished for cgroup
CGROUP") and kills anyway.

Each run is one kill by oomd: a service in a slice of its own with
ManagedOOMMemoryPressure=kill (limit 4%, DefaultMemoryPressureDurationSec=1s),
laid out as a service that saves its state must be (tests/README.md): its
main process in a subgroup (DelegateSubgroup=main) runs prekill-saver, a
pressure_monitor of libpressure on the service's cgroup; a hog rewrites and
rereads a file in another subgroup under memory.max=64M until oomd kills
the service (OOMPolicy=kill). Three kinds of run:
  - margin: the saver never acknowledges, so the daemon answers at its
    deadline; [Prekill] Deadline= is oomd's timeout less each of --margins
    (ms) in turn, and "default" (no Deadline=: the build's own margin).
  - save: the saver writes its state file (fsync, rename, fsync of the
    directory) and returns 0, so that the monitor acknowledges at once.
  - save-exec: instead of prekill-saver, `pressurectl watch --kills --exec`
    with a shell hook that writes the state file (`sync FILE`, rename) and
    touches a marker, as t_oomd_prekill of tests/vm/checks-sid.py does;
    pressurectl acknowledges when the hook exits. When the state was there
    is the marker's mtime (CLOCK_REALTIME at the kernel's tick, 4 ms here).
Times are CLOCK_MONOTONIC in microseconds: the prekill event's monotonic_us
(the daemon read the call) and deadline_us, the saver's own clock, and the
journal's entries of systemd-oomd and the daemon, each at the time its
sender wrote it: _SOURCE_REALTIME_TIMESTAMP (the kernel's time of the
datagram) less CLOCK_REALTIME - CLOCK_MONOTONIC as this script reads it
right after the kill (the pair of reads least apart of a few; the change
since before the kill is recorded, clock_drift_us). journald stamps
__MONOTONIC_TIMESTAMP itself when it gets round to the message, which
under load is later (journal_lag_us), and its own pair of clocks for an
entry can be read milliseconds apart under TCG (journal_clock_us: the
worst of the entry's __REALTIME_TIMESTAMP - __MONOTONIC_TIMESTAMP against
ours), so neither is used. Never asserts on times.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as bl  # noqa: E402

pt = bl.pt
OOMD_TIMEOUT_MS = 2000
MARGINS_MS = '-300,-100,0,25,50,100,150,default'
SAVER = os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'prekill-saver')
UNIT_DIR = '/etc/systemd/system'
OOMD_CONF = '/etc/systemd/oomd.conf.d/90-bench-prekill.conf'
HOOK = '/run/systemd/oomd.prekill.hook/pressured'
WORK = '/run/pvm-bench-prekill'
# Each run is one kill: the hog takes 10-60 s under TCG to push the slice over the limit.
KILL_WAIT_S = 420.0
HEADER = ['run', 'kind', 'margin_ms', 'deadline_ms', 'outcome', 'answered', 'invoked_us', 'read_us', 'heard_us',
          'written_us', 'deadline_us', 'answer_us', 'taken_us', 'invoke_to_read_us', 'read_to_heard_us',
          'invoke_to_written_us', 'invoke_to_marked_us', 'answer_late_us', 'answer_to_taken_us', 'needed_margin_us',
          'slack_us', 'oomd_late_us', 'journal_lag_us', 'clock_drift_us', 'journal_clock_us', 'hog_to_invoke_s',
          'guest_load']

VICTIM = """cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
cg=${{cg%/main}}
echo +memory > "$cg/cgroup.subtree_control" 2>/dev/null
mkdir "$cg/hog" && echo 64M > "$cg/hog/memory.max" || exit 1
{saver} > {log} 2>&1 &
while [ ! -e {go} ]; do sleep 0.1; done
sh -c "echo \\$\\$ > $cg/hog/cgroup.procs
while :; do dd if=/dev/zero of={load} bs=1M count=160 status=none; cat {load} > /dev/null; cat {load} > /dev/null; done" &
wait
"""
# The savers, by kind of run ({cg} the service's cgroup, as the daemon names it).
SAVERS = {
    'margin': '{saver} --never "{cg}" {state}',
    'save': '{saver} "{cg}" {state}',
    # pressurectl's hook, as t_oomd_prekill of tests/vm/checks-sid.py: `sync FILE`, then the file is
    # renamed into place and the marker's mtime says when it was there.
    'save-exec': ('{pressurectl} watch "{cg}" --kills --exec /bin/sh -c \'[ "$PRESSURE_KIND" = prekill ] || '
                  'exit 0; echo "$PRESSURE_EVENT" > {state}.new && sync {state}.new && mv {state}.new {state} && '
                  'touch {state}.done\''),
}


# --- in the guest -------------------------------------------------------------------

def clock_offset():
    """CLOCK_REALTIME less CLOCK_MONOTONIC now (µs), from the pair of reads least apart of a few: under TCG the
    vCPU may be stopped between two reads of the clock for milliseconds."""
    best = None
    for _ in range(20):
        r1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        m = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r2 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        if best is None or r2 - r1 < best[0]:
            best = (r2 - r1, (r1 + r2) // 2 - m)
    return best[1] // 1000


def entry_mono(e, offset):
    """When the sender wrote journal entry @e on CLOCK_MONOTONIC (µs), by @offset (clock_offset()), journald's
    lag behind it, and how far journald's own pair of clocks for it was from @offset."""
    mono, real = int(e['__MONOTONIC_TIMESTAMP']), int(e['__REALTIME_TIMESTAMP'])
    src = e.get('_SOURCE_REALTIME_TIMESTAMP')
    if not src:
        return mono, 0, 0
    t = int(src) - offset
    return t, mono - t, (real - mono) - offset


def journal(base, since, unit):
    out = base.sh('journalctl', '-o', 'json', '--no-pager', '--since', since, '-u', unit).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def message(e):
    m = e.get('MESSAGE', '')
    return m if isinstance(m, str) else bytes(m).decode(errors='replace')


def find(entries, pred):
    got = [e for e in entries if pred(message(e))]
    return got[0] if got else None


class Guest:
    def __init__(self, args):
        import checks as base  # tests/vm/checks.py: the guest's helpers
        self.base, self.args = base, args
        self.since = f'@{int(time.time()) - 1}'
        self.conf = os.path.join(base.CONF_DIR, 'pressured.conf.d', '90-bench-prekill.conf')
        self.deadline_set = None

    def setup(self):
        b = self.base
        os.makedirs(WORK, exist_ok=True)
        os.makedirs(os.path.dirname(OOMD_CONF), exist_ok=True)
        b.write(OOMD_CONF, f'[OOM]\nDefaultMemoryPressureDurationSec={b.OOMD_DURATION}\n'
                           f'PrekillHookTimeoutSec={OOMD_TIMEOUT_MS}ms\n')
        b.sh('systemctl', 'restart', 'systemd-oomd.service')
        b.call('io.pressured.GetStatus')   # the daemon started by its socket
        b.wait_for(lambda: os.path.exists(HOOK), b.REPLY, f'{HOOK}')

    def set_deadline(self, ms):
        """[Prekill] Deadline= @ms, or none (the default) for None; by a reload."""
        if ms == self.deadline_set:
            return
        os.makedirs(os.path.dirname(self.conf), exist_ok=True)
        if ms is None:
            if os.path.exists(self.conf):
                os.unlink(self.conf)
        else:
            self.base.write(self.conf, f'[Prekill]\nDeadline={ms}ms\n')
        self.base.call('io.pressured.Reload')
        self.deadline_set = ms

    def kill_one(self, i, kind):
        """One kill of a fresh victim; the saver's line and the journal's entries about it."""
        b = self.base
        slice_, unit = f'pvmbench{i}.slice', f'pvm-bench-victim{i}.service'
        state, log, go = f'{b.SCRATCH}/pvmbench{i}.state', f'{WORK}/saver{i}.log', f'{WORK}/go{i}'
        load = f'{b.SCRATCH}/pvmbench-load{i}'
        saver = SAVERS[kind].format(saver=SAVER, pressurectl=pt.PRESSURECTL, cg='${cg#/sys/fs/cgroup}', state=state)
        b.write(f'{WORK}/victim{i}.sh', VICTIM.format(saver=saver, log=log, go=go, load=load))
        b.write(os.path.join(UNIT_DIR, slice_), f'[Slice]\nManagedOOMMemoryPressure=kill\n'
                                               f'ManagedOOMMemoryPressureLimit={b.OOMD_LIMIT}\n')
        b.write(os.path.join(UNIT_DIR, unit), f'[Service]\nSlice={slice_}\nDelegate=yes\nDelegateSubgroup=main\n'
                                             f'OOMPolicy=kill\nExecStart=/bin/sh {WORK}/victim{i}.sh\n')
        b.sh('systemctl', 'daemon-reload')
        try:
            b.sh('systemctl', 'start', unit)
            cg = b.show('ControlGroup', unit)
            b.wait_for(lambda: self.subscribed(kind, cg, log), b.REPLY, f'the saver of {unit} subscribed')
            b.wait_for(lambda: f'/{slice_}' in b.sh('oomctl', 'dump', check=False).stdout, b.REPLY,
                       f'oomctl dump lists /{slice_}')
            load1 = bl.loadavg()
            offset0 = clock_offset()
            hog = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
            b.write(go, '')
            ended = self.wait_end(cg, unit, log)
            oomd = journal(b, self.since, 'systemd-oomd.service')
            daemon = journal(b, self.since, b.SERVICE)
            offset = clock_offset()
            saved = self.read(log) if kind != 'save-exec' else self.exec_line(state, offset)
            return cg, hog, load1, (offset0, offset), ended, saved, oomd, daemon
        finally:
            b.sh('systemctl', 'stop', unit, slice_, check=False)
            b.sh('systemctl', 'reset-failed', unit, check=False)
            for f in (os.path.join(UNIT_DIR, slice_), os.path.join(UNIT_DIR, unit), load, go, state, state + '.done'):
                if os.path.exists(f):
                    os.unlink(f)

    def subscribed(self, kind, cg, log):
        if kind != 'save-exec':
            return 'ready' in self.read(log)
        return any(r['cgroup'] == cg and r['source'] == 'kills' and r['subscribers'] >= 1
                   for r in self.base.call('io.pressured.GetStatus')['registrations'])

    def exec_line(self, state, offset):
        """The saver's line of prekill-saver for pressurectl's hook: the warning from the state file, and when
        the marker was made (its mtime, CLOCK_REALTIME to the kernel's tick, on the monotonic clock)."""
        try:
            ev = json.loads(self.read(state))
            mtime = os.stat(state + '.done').st_mtime_ns // 1000
        except (ValueError, OSError):
            return ''
        return f'prekill {ev["id"]} {ev["monotonic_us"]} {ev["deadline_us"]} 0 {mtime - offset}\n'

    @staticmethod
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            # Gone, or a cgroup's file read as its cgroup is removed (ENODEV).
            return ''

    def wait_end(self, cg, unit, log):
        """Whether the victim was killed and oomd logged how its hook ended, within KILL_WAIT_S. Until the
        kill only files are read (the cgroup's, the saver's log): polling systemctl or the journal would
        load the guest while oomd and the daemon are timed."""
        b = self.base
        events = os.path.join(b.CGROOT, cg.lstrip('/'), 'cgroup.events')

        def killed():
            return 'populated 0' in self.read(events) or not os.path.exists(events)

        def logged():
            msgs = [message(e) for e in journal(b, self.since, 'systemd-oomd.service')]
            return any(m == f'oomd prekill hook finished for cgroup {cg}' or m.startswith(f'oomd prekill hook for {cg} ')
                       for m in msgs)
        try:
            pt.wait_for(killed, timeout=KILL_WAIT_S, interval=0.2, what=f'systemd-oomd to kill {unit}')
            pt.wait_for(logged, timeout=b.REPLY, interval=1.0, what=f'systemd-oomd to log the end of its hook for {cg}')
            return True
        except (TimeoutError, AssertionError) as e:
            print(f'run on {cg}: {e}; the saver said: {self.read(log).strip()!r}', flush=True)
            return False


def measure(i, kind, margin, got):
    """The row of one kill from what kill_one() returned."""
    cg, hog, load1, (offset0, offset), ended, saver, oomd, daemon = got
    row = dict.fromkeys(HEADER, '')
    row.update(run=i, kind=kind, margin_ms='' if margin is None else margin, guest_load=load1)
    invoked = find(oomd, lambda m: m.startswith('Invoking oomd prekill hook pressured ') and m.endswith(f' {cg}'))
    finished = find(oomd, lambda m: m == f'oomd prekill hook finished for cgroup {cg}')
    failed = find(oomd, lambda m: m.startswith(f'oomd prekill hook for {cg} returned error: '))
    # oomd logs this once its hooks are called, before its loop writes the calls out.
    marked = find(oomd, lambda m: m.startswith(f'Marked {cg} for killing'))
    # The daemon's answer, or, when oomd gave up first and hung up, the call closed before it.
    answer = find(daemon, lambda m: m.startswith(f'Answered systemd-oomd about {cg} ')
                  or m.startswith(f'systemd-oomd\'s call about {cg} closed before its answer'))
    lines = [x.split() for x in saver.splitlines() if x.startswith('prekill ')]
    if os.environ.get('PRESSURED_BENCH_DEBUG'):
        for e in oomd + daemon:
            if cg in message(e):
                print(json.dumps({k: e.get(k) for k in ('__MONOTONIC_TIMESTAMP', '__REALTIME_TIMESTAMP',
                                                        '_SOURCE_REALTIME_TIMESTAMP', 'SYSLOG_IDENTIFIER', 'MESSAGE')}))
        print(saver, flush=True)
    if not ended or not invoked or not lines or not answer or not (finished or failed):
        row['outcome'] = 'no kill' if not invoked else 'incomplete'
        return row
    _, read, deadline, heard, written = (int(x) for x in lines[0][1:])
    heard = heard or None
    t_inv, lag_inv, off_inv = entry_mono(invoked, offset)
    t_ans, lag_ans, off_ans = entry_mono(answer, offset)
    t_taken, lag_taken, off_taken = entry_mono(finished or failed, offset)
    said = message(answer)
    answered = ('abandoned' if ' closed before its answer' in said else
                'deadline' if ' at the deadline' in said else 'acknowledged')
    row.update(outcome='finished' if finished else message(failed).rsplit(': ', 1)[1], answered=answered,
               deadline_ms=(deadline - read) / 1000, invoked_us=t_inv, read_us=read, heard_us=heard or '',
               written_us=written or '', deadline_us=deadline, answer_us=t_ans, taken_us=t_taken,
               invoke_to_read_us=read - t_inv, read_to_heard_us=(heard - read) if heard else '',
               invoke_to_written_us=(written - t_inv) if written else '',
               invoke_to_marked_us=(entry_mono(marked, offset)[0] - t_inv) if marked else '',
               answer_to_taken_us=(t_taken - t_ans) if answered != 'abandoned' else '',
               oomd_late_us=(t_taken - t_inv - OOMD_TIMEOUT_MS * 1000) if not finished else '',
               journal_lag_us=max(lag_inv, lag_ans, lag_taken), clock_drift_us=offset - offset0,
               journal_clock_us=max((off_inv, off_ans, off_taken), key=abs), hog_to_invoke_s=f'{(t_inv - hog) / 1e6:.1f}')
    if answered == 'deadline':
        # What the call took to arrive and the answer to leave after the deadline: the margin this kill
        # needed; and what was left of oomd's timeout when the answer left.
        row.update(answer_late_us=t_ans - deadline, needed_margin_us=t_ans - t_inv - (deadline - read),
                   slack_us=t_inv + OOMD_TIMEOUT_MS * 1000 - t_ans)
    return row


def guest(args):
    if not bl.in_vm() or os.environ.get('PRESSURED_VM_GUEST') != 'sid':
        pt.skip('--guest runs inside tests/vm/run.sh with PRESSURED_VM_GUEST=sid')
    sys.path.insert(0, os.path.join(pt.SOURCE_ROOT, 'tests', 'vm'))
    g = Guest(args)
    g.setup()
    margins = [None if m == 'default' else int(m) for m in args.margins.split(',')]
    plan = []
    for r in range(max(args.runs, args.saves)):
        if r < args.runs:
            plan += [('margin', m) for m in margins]
        if r < args.saves:
            plan += [('save', None), ('save-exec', None)]
    load0 = bl.loadavg()
    rows = []
    for i, (kind, margin) in enumerate(plan):
        deadline_ms = None if margin is None else OOMD_TIMEOUT_MS - margin
        g.set_deadline(deadline_ms if kind == 'margin' else None)
        row = measure(i, kind, margin if kind == 'margin' else None, g.kill_one(i, kind))
        rows.append(row)
        print(f'run {i} {kind} margin={"default" if row["margin_ms"] == "" else row["margin_ms"]}: {row["outcome"]}, '
              f'call to read {row["invoke_to_read_us"]} µs, answer {row["answer_late_us"]} µs after the deadline, '
              f'taken {row["answer_to_taken_us"]} µs later, needed margin {row["needed_margin_us"]} µs, '
              f'state written {row["invoke_to_written_us"]} µs after the call; load {row["guest_load"]}', flush=True)
    version = g.base.sh('systemctl', '--version').stdout.splitlines()[0]
    status = g.base.call('io.pressured.GetStatus')
    info = [['systemd', version], ['kernel', os.uname().release], ['guest_cpus', os.cpu_count()],
            ['memtotal_kib', bl.meminfo_kib('MemTotal')], ['oomd_timeout_ms', OOMD_TIMEOUT_MS],
            ['oomd_limit', g.base.OOMD_LIMIT], ['oomd_duration', g.base.OOMD_DURATION],
            ['pressured', status['version']], ['prekill', json.dumps(status.get('prekill'))],
            ['guest_load_start', load0], ['guest_load_end', bl.loadavg()], ['quick', int(args.quick)]]
    bl.emit_csv('prekill-oomd.csv', HEADER, [[r[k] for k in HEADER] for r in rows])
    bl.emit_csv('prekill-oomd-guest.csv', ['key', 'value'], info)


# --- on the host --------------------------------------------------------------------------

def accel():
    """What tests/vm/run.sh picks (its "auto"), or PRESSURED_VM_ACCEL."""
    a = os.environ.get('PRESSURED_VM_ACCEL', 'auto')
    if a != 'auto':
        return a
    with open('/proc/cpuinfo') as f:
        guest = ' hypervisor' in f.read()
    return 'tcg' if guest or not os.access('/dev/kvm', os.R_OK | os.W_OK) else 'kvm'


def host(args):
    load0 = bl.loadavg()
    start = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    fwd = ['--guest', '--runs', str(args.runs), '--saves', str(args.saves), f'--margins={args.margins}']
    kills = args.runs * len(args.margins.split(',')) + 2 * args.saves
    os.environ['PRESSURED_VM_GUEST'] = 'sid'
    rc = bl.run_in_vm(__file__, fwd + (['--quick'] if args.quick else []), args.out, 900 + kills * 300,
                      python='/usr/bin/python3')
    info = [['machine', os.uname().nodename], ['kernel', os.uname().release], ['cpus', os.cpu_count()],
            ['accel', accel()], ['date', start], ['load_start', load0], ['load_end', bl.loadavg()],
            ['quick', int(args.quick)]]
    bl.write_csv(args.out, 'prekill-oomd-info.csv', ['key', 'value'], info)
    sys.exit(rc)


def main():
    def options(p):
        p.add_argument('--runs', type=int, default=None, help='kills per margin (default 6; 2 with --quick)')
        p.add_argument('--saves', type=int, default=None,
                       help='kills with each saver that saves (default 10; 3 with --quick)')
        p.add_argument('--margins', default=MARGINS_MS,
                       help=f'ms before oomd\'s {OOMD_TIMEOUT_MS} ms to answer, "default" for the build\'s own '
                            f'(default {MARGINS_MS})')
    args = bl.parse_args(__doc__.splitlines()[0], lambda p: (p.add_argument('--guest', action='store_true'),
                                                             options(p)))
    if args.runs is None:
        args.runs = 2 if args.quick else 6
    if args.saves is None:
        args.saves = 3 if args.quick else 10
    (guest if args.guest else host)(args)


if __name__ == '__main__':
    main()
