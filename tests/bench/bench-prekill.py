#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a warning before a kill costs: from systemd-oomd's call of the
pre-kill hook to the warned subscribers reading the "prekill" event, and
from the acknowledgement to the answer oomd gets; and the answer's delay
when nobody listens.

A stand-in for systemd-oomd (this script) calls
io.systemd.oom.Prekill.Notify on the hook socket for a quiet cgroup. N
kills subscriptions on it (N = 1 and 1,000) are held by a reader in C
(prekill-reader.c) that reads every connection with epoll and notes
CLOCK_MONOTONIC at each read; the delay of a subscriber is that time less the moment the call was
written. Then this script sends the N acknowledgements
(AcknowledgePrekill) back to back on one connection and notes when the
last one was written and when oomd's answer arrives. Nobody: the call on a
cgroup nobody follows, written to answer read. Each variant runs with the
daemon alone, and with the fd store of systemd (tests/fdstore_test.py),
under which a warning is in the saved state before its subscribers hear
of it.

    PRESSURED_BUILD_ROOT=build PRESSURED_SOURCE_ROOT=. python3 tests/bench/bench-prekill.py [--quick] [--out DIR]
Needs root and a cgroup2 hierarchy with PSI; exits 77 otherwise.
Writes prekill.csv, prekill-nobody.csv and prekill-info.csv.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
from benchlib import pt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import fdstore_test  # noqa: E402

NOTIFY = 'io.systemd.oom.Prekill.Notify'
ACK = 'io.pressured.AcknowledgePrekill'


def mono_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


READER = os.path.join(pt.BUILD_ROOT, 'tests', 'bench', 'prekill-reader')


def start_reader(sock, n, cgroup):
    """N kills subscriptions on @cgroup in prekill-reader.c, which reads them with epoll."""
    p = subprocess.Popen([READER, sock, str(n), cgroup], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if line != 'ready':
        p.kill()
        raise RuntimeError(f'prekill-reader: {line or "ended"}')
    return p


def round_trip(sock, hook, reader_proc, cgroup, n):
    """One warning: (per-subscriber delays µs, last subscriber µs, last ack written to answer µs, acks µs)."""
    oomd = pt.Varlink(hook, timeout=120)
    acker = pt.Varlink(sock, timeout=120)
    try:
        reader_proc.stdin.write('\n')
        reader_proc.stdin.flush()
        t0 = mono_us()
        oomd.call(NOTIFY, {'cgroup': cgroup})
        got = [int(x) for x in reader_proc.stdout.readline().split()]
        if len(got) != n + 1 or got[0] < 1:
            raise RuntimeError(f'prekill-reader: {got[:4]}')
        delays = [t - t0 for t in got[1:]]
        calls = b''.join(json.dumps({'method': ACK, 'parameters': {'id': got[0]}}).encode() + b'\0'
                         for _ in range(n))
        ta = mono_us()
        acker.send_raw(calls)
        tl = mono_us()
        answer = oomd.recv(timeout=120)
        tr = mono_us()
        if answer != {'parameters': {}}:
            raise RuntimeError(f'answer: {answer}')
        for _ in range(n):
            acker.recv(timeout=120)
        return delays, max(delays), tr - tl, tr - ta
    finally:
        oomd.close()
        acker.close()


def nobody(hook, cgroup, rounds):
    oomd = pt.Varlink(hook, timeout=60)
    out = []
    try:
        for _ in range(rounds):
            t0 = mono_us()
            r = oomd.call_sync(NOTIFY, {'cgroup': cgroup})
            out.append(mono_us() - t0)
            if r != {'parameters': {}}:
                raise RuntimeError(f'answer: {r}')
    finally:
        oomd.close()
    return out


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def measure(sock, hook, cgroup, empty, n, rounds, variant):
    proc = start_reader(sock, n, cgroup)
    delays, last, answer, acks = [], [], [], []
    try:
        round_trip(sock, hook, proc, cgroup, n)  # warm-up
        for _ in range(rounds):
            d, l, a, t = round_trip(sock, hook, proc, cgroup, n)
            delays += d
            last.append(l)
            answer.append(a)
            acks.append(t)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    row = [variant, n, rounds, pct(delays, 50), pct(delays, 99), max(delays), int(statistics.median(last)),
           pct(answer, 50), pct(answer, 99), max(answer), int(statistics.median(acks))]
    if n > 1:
        return row, None
    nb = nobody(hook, empty, rounds)
    return row, [variant, len(nb), pct(nb, 50), pct(nb, 99), max(nb)]


def config(hook, n):
    return (f'[Prekill]\nSocket={hook}\nDeadline=600s\nMaxWarnings={n + 16}\n'
            f'[Limits]\nMaxClients={2 * n + 64}\nMaxClientsPerUser={2 * n + 64}\nIdleTimeoutSec=86400\n'
            '[MemoryPressure]\nSocket=\nCpuSocket=\nIoSocket=\n')


def run_alone(cgroup, empty, n, rounds):
    tmp = tempfile.mkdtemp(prefix='pressured-bench-prekill-')
    os.chmod(tmp, 0o755)
    hook = os.path.join(tmp, 'hook')
    try:
        with pt.Daemon(config_text=config(hook, n), log_level='warning') as d:
            return measure(d.socket, hook, cgroup, empty, n, rounds, 'daemon alone')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_fdstore(cgroup, empty, n, rounds):
    tmp = tempfile.mkdtemp(prefix='pressured-bench-prekill-')
    os.chmod(tmp, 0o755)
    sock, hook, conf = (os.path.join(tmp, x) for x in ('io.pressured', 'hook', 'test.conf'))
    with open(conf, 'w') as f:
        f.write(config(hook, n))
    try:
        with fdstore_test.ServiceManager(['--socket', sock, '--config', conf, '--log-level', 'warning'],
                                         fdstore_max=4 * n + 256) as sm:
            sm.start()
            return measure(sock, hook, cgroup, empty, n, rounds, 'with the fd store')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    def extra(p):
        p.add_argument('--rounds', type=int, help='warnings per variant at 1,000 subscribers (default 30; --quick 5);'
                                                   ' 4 times as many at 1')
    args = bl.parse_args(__doc__.split('\n')[0], extra)
    rounds = args.rounds or (5 if args.quick else 30)
    # 1,000 connections in the reader, and as many fds in the stand-in for the fd store.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if os.geteuid() != 0 or not os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')):
        print('SKIP: needs root and a cgroup2 hierarchy')
        return 77
    u = os.uname()
    info = [['machine', u.nodename], ['kernel', u.release], ['cpus', os.cpu_count()],
            ['date', time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())], ['load_start', bl.loadavg()],
            ['quick', int(args.quick)]]
    cg = f'/pressured-bench-prekill-{uuid.uuid4().hex[:8]}'
    empty = cg + '-nobody'
    for c in (cg, empty):
        os.mkdir(pt.V2_ROOT + c)
    rows, nobody_rows = [], []
    try:
        for run in (run_alone, run_fdstore):
            for n, r in ((1, rounds * 4), (1000, rounds)):
                row, nb = run(cg, empty, n, r)
                rows.append(row)
                if nb:
                    nobody_rows.append(nb)
    finally:
        for c in (cg, empty):
            os.rmdir(pt.V2_ROOT + c)
    header = ['variant', 'subscribers', 'rounds', 'event_p50_us', 'event_p99_us', 'event_max_us', 'last_p50_us',
              'answer_p50_us', 'answer_p99_us', 'answer_max_us', 'acks_to_answer_p50_us']
    bl.print_table(header, rows)
    bl.write_csv(args.out, 'prekill.csv', header, rows)
    nb_header = ['variant', 'calls', 'p50_us', 'p99_us', 'max_us']
    bl.print_table(nb_header, nobody_rows)
    bl.write_csv(args.out, 'prekill-nobody.csv', nb_header, nobody_rows)
    info.append(['load_end', bl.loadavg()])
    bl.write_csv(args.out, 'prekill-info.csv', ['key', 'value'], info)
    return 0


if __name__ == '__main__':
    sys.exit(main())
