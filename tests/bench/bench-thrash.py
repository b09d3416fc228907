#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Thrashing: how far pressured trails a direct PSI reader as memory runs out.

Runs in the VM test bed (tests/vm/run.sh: 2 GiB, no swap, cgroup v2, the
daemon installed and started by its shipped units). Run on the host, it
boots the VM, runs itself there with --guest and writes the CSV files the
guest prints to --out:

    tests/bench/bench-thrash.py [--out DIR] [--quick] [--memory-min SIZE]

--memory-min overrides the unit's MemoryMin= (a drop-in, then a restart of
the service) to see what the unit's protection is worth; the CSV files get
the suffix -memmin-SIZE.

In the guest, one direct reader holds the system-wide trigger
`some 50ms 1s` on /proc/pressure/memory and timestamps each POLLPRI; one
subscriber of pressured asks for the same trigger on "/" and timestamps
each event as it arrives; 100 more subscribers of the same trigger read
in a third process. The readers and this process lock their memory and
have oom_score_adj -1000; the daemon keeps its unit's OOMScoreAdjust=.

Each step grows an anonymous hog (touched pages, oom_score_adj 1000, no
swap; one process that only grows, as touching pages is slow under TCG,
restarted if the OOM killer took it) until it leaves ROOM MiB of
MemAvailable for file pages, then re-reads
3 GiB of files on the scratch disk for LOAD_S seconds. Per step: the
events the direct reader saw during the load, those pressured did not
deliver (missed), the delay of the subscriber behind the direct reader
(p50, p99, max), the daemon's major faults (/proc/PID/stat field 12) and
its RSS (lowest and last, sampled twice a second).
Never asserts on times.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import benchlib as bl  # noqa: E402

pt = bl.pt
SOCKET = '/run/pressured/io.pressured'
SERVICE = 'pressured.service'
TRIGGER = {'stall': 'some', 'threshold_us': 50000, 'window_us': 1000000}
TRIGGER_TEXT = 'some 50000 1000000'
EXTRA = 100
FILES, FILE_MB = 6, 512            # 3 GiB re-read in every step
ROOMS_MIB = [1024, 512, 256, 160, 128, 96, 64, 48, 32, 24, 16, 8]
LOAD_S = 20
SETTLE_S = 3                       # events still arriving after the load count for the step
MATCH_US = 500000                  # a delivery belongs to the direct event read within this much
HOG_READY_S = 600                  # touching the hog may itself thrash under TCG


# --- reader roles (separate processes, memory locked) -------------------------

def role_direct():
    json.dump({'direct': bl.direct_psi_reader(TRIGGER_TEXT)}, sys.stdout)
    print(flush=True)


def connect_subscribe():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.connect(SOCKET)
    msg = {'method': 'io.pressured.Subscribe', 'parameters': {'psi': TRIGGER}, 'more': True}
    s.sendall(json.dumps(msg).encode() + b'\0')
    return s


def role_subscribe(n):
    """@n connections; with n == 1, every event is timestamped as it is read."""
    bl.mlock_self()
    socks = [connect_subscribe() for _ in range(n)]
    bufs = {s.fileno(): b'' for s in socks}
    p = select.poll()
    for s in socks:
        p.register(s.fileno(), select.POLLIN)
    p.register(0, select.POLLIN)
    events, subscribed, messages, errors = [], 0, 0, []
    ready = False
    while True:
        for f, _ in p.poll():
            if f == 0:
                json.dump({'events': events, 'messages': messages, 'errors': errors}, sys.stdout)
                print(flush=True)
                return
            data = os.read(f, 1 << 16)
            t = time.monotonic_ns() // 1000
            if not data:
                errors.append('connection closed by the daemon')
                p.unregister(f)
                continue
            bufs[f] += data
            *msgs, bufs[f] = bufs[f].split(b'\0')
            for m in msgs:
                messages += 1
                msg = json.loads(m)
                if 'error' in msg:
                    errors.append(msg['error'])
                    continue
                ev = msg['parameters']['event']
                if ev['kind'] == 'subscribed':
                    subscribed += 1
                    if ev.get('adjusted'):
                        errors.append(f'trigger adjusted: {ev["trigger"]}')
                elif ev['kind'] == 'pressure' and n == 1:
                    events.append({'t': t, 'read_us': ev['monotonic_us'], 'seq': ev['seq'],
                                   'count': ev.get('count', 1), 'missed': ev.get('missed', 0)})
        if not ready and subscribed == n:
            ready = True
            print('ready', flush=True)


# --- the controller -----------------------------------------------------------

def start_role(*args):
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--role', *args],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    pt.check(line == 'ready', f'reader {args} did not start', line, p.poll())
    return p


def stop_role(p):
    p.stdin.close()
    out = p.stdout.read()
    p.wait(timeout=120)
    return json.loads(out)


def daemon_pid():
    out = subprocess.run(['systemctl', 'show', '-P', 'MainPID', SERVICE], capture_output=True, text=True).stdout
    pid = int(out.strip() or 0)
    pt.check(pid > 0, 'pressured.service is not running')
    return pid


def make_files(scratch):
    paths = []
    for i in range(FILES):
        path = os.path.join(scratch, f'thrash-{i}')
        subprocess.run(['dd', 'if=/dev/zero', f'of={path}', 'bs=1M', f'count={FILE_MB}', 'status=none'],
                       check=True)
        paths.append(path)
    subprocess.run(['sync'], check=True)
    return paths


HOG = r'''
import os, sys
open('/proc/self/oom_score_adj', 'w').write('1000')
chunks, have = [], 0
for line in sys.stdin:
    want = int(line) << 20
    while have < want:
        n = min(64 << 20, want - have)
        b = bytearray(n)
        b[::4096] = b'\1' * len(range(0, n, 4096))
        chunks.append(b)
        have += n
    print('ready', flush=True)
'''


class Hog:
    """Anonymous memory that only grows (touching pages is slow under TCG): one process for all steps."""

    def __init__(self):
        self.proc, self.mib = None, 0

    def grow_to(self, mib):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, '-c', HOG], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, start_new_session=True)
            self.mib = 0
        self.proc.stdin.write(f'{max(mib, self.mib)}\n')
        self.proc.stdin.flush()
        r, _, _ = select.select([self.proc.stdout], [], [], HOG_READY_S)
        ok = bool(r) and self.proc.stdout.readline().strip() == 'ready'
        if ok:
            self.mib = max(mib, self.mib)
        return ok

    def killed(self):
        return self.proc is not None and self.proc.poll() is not None

    def stop(self):
        if self.proc is not None:
            kill_group(self.proc)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def step(room, files, pid, avail0, hog):
    if hog.killed():
        hog.mib = 0       # the OOM killer took it: the next grow_to() starts a new one
    hog_mib = hog.mib + max(0, avail0 // 1024 - room)
    f0 = bl.major_faults(pid)
    t0 = time.monotonic_ns() // 1000
    ok = hog.grow_to(hog_mib)
    t_hog = time.monotonic_ns() // 1000
    f_hog = bl.major_faults(pid)
    res = {'room_mib': room, 'hog_mib': hog_mib, 'hog_ready': int(ok), 'hog_s': (t_hog - t0) / 1e6}
    rss, avail = [], []
    load = None
    if ok:
        script = 'while :; do cat ' + ' '.join(files) + ' > /dev/null; done'
        load = subprocess.Popen(['sh', '-c', script], start_new_session=True)
        end = time.monotonic() + LOAD_S
        while time.monotonic() < end:
            rss.append(bl.status_kib(pid, 'VmRSS'))
            avail.append(bl.meminfo_kib('MemAvailable'))
            time.sleep(0.5)   # the sampling period, not a synchronisation
        kill_group(load)
    t_load_end = time.monotonic_ns() // 1000
    time.sleep(SETTLE_S)      # late deliveries still count for this step
    t_end = time.monotonic_ns() // 1000
    hog_killed = hog.killed()
    res.update({
        'hog_oom_killed': int(hog_killed), 'load_start_us': t_hog, 'load_end_us': t_load_end, 'end_us': t_end,
        'majflt_hog': f_hog - f0, 'majflt_load': bl.major_faults(pid) - f_hog,
        'rss_kib_min': min(rss) if rss else bl.status_kib(pid, 'VmRSS'),
        'rss_kib_end': bl.status_kib(pid, 'VmRSS'),
        'memavail_kib_min': min(avail) if avail else 0,
    })
    print(f'room {room} MiB (hog {hog_mib} MiB, ready {ok} in {res["hog_s"]:.1f} s): major faults '
          f'{res["majflt_hog"]} + {res["majflt_load"]}, RSS {res["rss_kib_min"]}..{res["rss_kib_end"]} KiB, '
          f'MemAvailable min {res["memavail_kib_min"]} KiB', flush=True)
    return res


def match(direct, events):
    """Pair each direct event with the delivery the daemon read nearest to it; return {direct_t: delivery}."""
    pairs, used = {}, set()
    for d in direct:
        best = None
        for i, e in enumerate(events):
            if i in used or abs(e['read_us'] - d) > MATCH_US:
                continue
            if best is None or abs(e['read_us'] - d) < abs(events[best]['read_us'] - d):
                best = i
        if best is not None:
            used.add(best)
            pairs[d] = events[best]
    return pairs


def override_memory_min(value):
    d = f'/etc/systemd/system/{SERVICE}.d'
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'bench-memory-min.conf'), 'w') as f:
        f.write(f'[Service]\nMemoryMin={value}\n')
    subprocess.run(['systemctl', 'daemon-reload'], check=True)
    subprocess.run(['systemctl', 'restart', SERVICE], check=True)
    got = subprocess.run(['systemctl', 'show', '-P', 'MemoryMin', SERVICE], capture_output=True,
                         text=True).stdout.strip()
    print(f'MemoryMin= of {SERVICE} now {got}', flush=True)


def guest(args):
    pt.require_root('the VM test bed runs as root')
    if not bl.in_vm():
        pt.skip('runs inside tests/vm/run.sh (PRESSURED_VM=1)')
    bl.mlock_self()
    if args.memory_min:
        override_memory_min(args.memory_min)
    scratch = os.environ.get('PRESSURED_VM_SCRATCH', '/var/tmp')
    rooms = [512, 96, 48] if args.quick else ROOMS_MIB
    print(f'creating {FILES} x {FILE_MB} MiB in {scratch}', flush=True)
    files = make_files(scratch)
    direct = start_role('direct')
    sub = start_role('subscribe', '1')
    extra = start_role('subscribe', str(EXTRA))
    pid = daemon_pid()
    print(f'daemon pid {pid}, oom_score_adj {open(f"/proc/{pid}/oom_score_adj").read().strip()}, '
          f'RSS {bl.status_kib(pid, "VmRSS")} KiB, MemTotal {bl.meminfo_kib("MemTotal")} KiB', flush=True)
    steps = []
    hog = Hog()
    try:
        for room in rooms:
            # MemAvailable with the hog of the previous step still held.
            avail0 = bl.meminfo_kib('MemAvailable')
            r = step(room, files, pid, avail0, hog)
            r['memavail_kib_before'] = avail0
            steps.append(r)
    finally:
        hog.stop()
        d = stop_role(direct)['direct']
        s = stop_role(sub)
        x = stop_role(extra)
    pairs = match(d, s['events'])
    rows, delays_rows = [], []
    for i, r in enumerate(steps):
        ds = [t for t in d if r['load_start_us'] <= t <= r['end_us']]
        got = [pairs[t] for t in ds if t in pairs]
        delays = [(pairs[t]['t'] - t) / 1000 for t in ds if t in pairs]
        reads = [(pairs[t]['read_us'] - t) / 1000 for t in ds if t in pairs]
        delays_rows += [[i + 1, r['room_mib'], f'{x:.3f}'] for x in delays]
        rows.append([r['room_mib'], r['hog_mib'], r['memavail_kib_before'], r['memavail_kib_min'], r['hog_ready'],
                     r['hog_oom_killed'], len(ds), len(ds) - len(got), sum(e['missed'] for e in got),
                     f'{bl.percentile(delays, 50):.3f}', f'{bl.percentile(delays, 99):.3f}',
                     f'{max(delays) if delays else float("nan"):.3f}', f'{bl.percentile(reads, 50):.3f}',
                     f'{bl.percentile(reads, 99):.3f}',
                     r['majflt_hog'], r['majflt_load'], r['rss_kib_min'], r['rss_kib_end']])
    header = ['room_mib', 'hog_mib', 'memavail_kib_before', 'memavail_kib_min', 'hog_ready', 'hog_oom_killed',
              'direct_events', 'missed', 'daemon_missed', 'delay_p50_ms', 'delay_p99_ms', 'delay_max_ms',
              'read_p50_ms', 'read_p99_ms', 'majflt_hog', 'majflt_load', 'rss_kib_min', 'rss_kib_end']
    bl.print_table(header, rows)
    total_direct = len(d)
    print(f'direct events in all {total_direct}, delivered to the subscriber {len(s["events"])}, matched '
          f'{len(pairs)}; the {EXTRA} others received {x["messages"]} messages; errors: '
          f'{s["errors"] + x["errors"] or "none"}', flush=True)
    with open('/proc/loadavg') as f:
        info = [['kernel', os.uname().release], ['cpus', os.cpu_count()],
                ['memtotal_kib', bl.meminfo_kib('MemTotal')], ['swap_kib', bl.meminfo_kib('SwapTotal')],
                ['guest_load_end', f.read().split()[0]], ['extra_subscribers', EXTRA],
                ['extra_messages', x['messages']], ['load_s', LOAD_S], ['trigger', TRIGGER_TEXT],
                ['errors', '; '.join(str(e) for e in s['errors'] + x['errors'])]]
    info.append(['memory_min', subprocess.run(['systemctl', 'show', '-P', 'MemoryMin', SERVICE],
                                              capture_output=True, text=True).stdout.strip()])
    sfx = suffix(args)
    bl.emit_csv(f'thrash{sfx}.csv', header, rows)
    bl.emit_csv(f'thrash{sfx}-delays.csv', ['step', 'room_mib', 'delay_ms'], delays_rows)
    bl.emit_csv(f'thrash{sfx}-info.csv', ['key', 'value'], info)


def suffix(args):
    return f'-memmin-{args.memory_min}' if args.memory_min else ''


def host(args):
    load0 = bl.loadavg()
    start = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    fwd = ['--guest'] + (['--quick'] if args.quick else []) + (['--memory-min', args.memory_min]
                                                              if args.memory_min else [])
    rc = bl.run_in_vm(__file__, fwd, args.out, 3600)
    with open(os.path.join(args.out, f'thrash{suffix(args)}-host.csv'), 'w') as f:
        f.write(f'key,value\ndate,{start}\nhost_load_start,{load0}\nhost_load_end,{bl.loadavg()}\n'
                f'host_kernel,{os.uname().release}\n')
    sys.exit(rc)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == '--role':
        if sys.argv[2] == 'direct':
            role_direct()
        else:
            role_subscribe(int(sys.argv[3]))
        return

    def options(p):
        p.add_argument('--memory-min', default='', help="override the unit's MemoryMin= (e.g. 0)")
    bl.vm_main(__doc__.splitlines()[0], guest, host, options)


if __name__ == '__main__':
    main()
