#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn the benchmarks' CSV files into the markdown tables of results.md.

    python3 tests/bench/make-results.py OUT_DIR > tests/bench/results.md

OUT_DIR holds the CSVs written by one run of run-benchmarks.sh, and
machine.txt (key=value lines describing the machine and the run). A
benchmark whose CSV is missing is listed as not run, with the reason from
its status file if there is one.

    python3 tests/bench/make-results.py [OUT_DIR] --ab AB_DIR
    python3 tests/bench/make-results.py --metrics OUT_DIR --into RESULTS_MD

adds (or, without OUT_DIR, prints only) the comparison of two builds from
the output of run-ab.sh: per figure the median of each build over the
rounds, their run-to-run noise, and the ratio after / before.

--reclaim OUT_DIR --into RESULTS_MD does the same for the proactive-reclaim
section of one run of bench-reclaim.py (VM parts and --cost, in one OUT_DIR),
and writes its plot, reclaim.svg, beside RESULTS_MD.

--lmm OUT_DIR --into RESULTS_MD does the same for the side-by-side
comparison with low-memory-monitor made by one run of bench-lmm.py.

--levels OUT_DIR --into RESULTS_MD does the same for the level callbacks of
GLib, the Python module and a C monitor made by bench-levels.py here and
with --vm (both in one OUT_DIR), with what a client adds after the
daemon's write (bench-python-event.py, here and --vm, same OUT_DIR) when
its files are there.

--ns-fanout OUT_DIR --into RESULTS_MD does the same for subscribers in a
cgroup namespace, measured by one run of bench-ns-fanout.py.

--level-thresholds OUT_DIR --into RESULTS_MD does the same for the
[Levels] candidates measured by bench-level-thresholds.py here and with
--vm (both in one OUT_DIR).

--scrape-delay OUT_DIR --into RESULTS_MD does the same for the delay of
injected events during /metrics scrapes made by one run of
bench-scrape-delay.py.

--prekill OUT_DIR --into RESULTS_MD does the same for the warnings before
a kill measured by one run of bench-prekill.py.

--prekill-oomd OUT_DIR --into RESULTS_MD does the same for the kills by
real systemd-oomd 262 in the sid guest measured by one run of
bench-prekill-oomd.py: the margin of the default deadline, and from oomd's
call to a saver's state on disk.

--metrics OUT_DIR --into RESULTS_MD puts the per-cgroup /metrics section
made from one run of bench-metrics.py into RESULTS_MD in place of the
previous one (between its markers), or before the before/after section,
leaving the other sections as they are.
"""
import csv
import os
import statistics
import sys

KIB = 1024


def load(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def status(out, bench):
    try:
        with open(os.path.join(out, bench + '.status')) as f:
            return f.read().strip()
    except OSError:
        return 'not run'


def num(v, digits=0):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if digits == 0:
        return f'{x:,.0f}'
    return f'{x:,.{digits}f}'


def table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join(' --- ' for _ in header) + '|']
    lines += ['| ' + ' | '.join(str(c) for c in r) + ' |' for r in rows]
    return '\n'.join(lines) + '\n'


def verdict(ok):
    return 'met' if ok else '**missed**'


def fanout(out):
    rows = load(out, 'fanout.csv')
    if not rows:
        return f'_Not run: {status(out, "fanout")}._\n'
    by = {(r['mode'], int(r['subscribers'])): r for r in rows}
    counts = sorted({int(r['subscribers']) for r in rows})
    body = []
    for n in counts:
        d, f = by.get(('daemon', n)), by.get(('floor', n))
        if not d or not f:
            continue
        body.append([f'{n:,}', num(d['p50_us']), num(d['p99_us']), num(d['max_us']), num(f['p50_us']),
                     num(f['p99_us']), num(f['max_us']), num(d['write_p50_us']), num(f['write_p50_us']),
                     num(d['deliveries_per_sec']), num(f['deliveries_per_sec']),
                     f"{100 * float(d['deliveries_per_sec']) / max(float(f['deliveries_per_sec']), 1):.0f}%",
                     num(d.get('cpu_per_delivery_us'), 2), num(f.get('cpu_per_delivery_us'), 2), d['missed']])
    text = table(['subscribers', 'daemon p50', 'p99', 'max', 'floor p50', 'p99', 'max',
                  'daemon all written', 'floor all written', 'daemon deliveries/s', 'floor deliveries/s',
                  'daemon / floor', 'daemon CPU µs/delivery', 'floor CPU µs/delivery', 'lost'], body)
    text += ('\nLatencies in µs, inject accepted (the event\'s `monotonic_us`) to received by the '
             'subscriber, over all deliveries of all rounds. "All written": for the daemon, the '
             'injection accepted to the arrival of its `Inject` reply, which it queues after writing '
             'every subscriber; for the floor, its loop over all sockets (median of rounds). '
             'Deliveries/s: deliveries over the summed time from injection to the last receive. '
             'CPU µs/delivery: on-CPU time (/proc/PID/schedstat) of the daemon, or of the floor\'s writer, '
             'over the rounds, per delivery; at 1 subscriber the daemon\'s figure is dominated by handling '
             'the `Inject` call itself.\n')
    d, f = by.get(('daemon', 1000)), by.get(('floor', 1000))
    if d and f:
        ratio = float(d['p99_us']) / max(float(f['write_p50_us']), 1e-9)
        share = float(d['deliveries_per_sec']) / max(float(f['deliveries_per_sec']), 1e-9)
        text += (f'\nGoals at 1,000 subscribers: p99 ≤ 2× the floor\'s time to write 1,000 sockets: '
                 f'{ratio:.1f}× — {verdict(ratio <= 2)} (the floor\'s own p99 is '
                 f'{float(f["p99_us"]) / max(float(f["write_p50_us"]), 1e-9):.1f}× its write time: the '
                 f'receiving side dominates on 2 cores); deliveries/s ≥ 50% of the floor\'s: '
                 f'{100 * share:.0f}% — {verdict(share >= 0.5)}.\n')
    return text


def idle(out):
    rows = load(out, 'idle.csv')
    if not rows:
        return f'_Not run: {status(out, "idle")}._\n'
    body = [[r['phase'], r['subscribers'], num(r['seconds']), r['context_switches'], r['cpu_ticks'], r['events']]
            for r in rows]
    ok = all(int(r['context_switches']) == 0 and int(r['cpu_ticks']) == 0 for r in rows)
    return (table(['phase', 'subscribers', 'seconds', 'context switches', 'CPU ticks (1/100 s)',
                   'events received'], body)
            + f'\nGoal: 0 context switches and 0 CPU time in both, watchdog off — {verdict(ok)}.\n')


def sharing(out):
    rows, cost = load(out, 'sharing.csv'), load(out, 'sharing-cost.csv')
    if not rows:
        return f'_Not run: {status(out, "sharing")}._\n'
    body = [[r['setup'], r['subscribers'], r['kernel_triggers'], r['fds_on_memory.pressure'],
             r['processes_holding']] for r in rows]
    text = table(['setup', 'watchers', 'kernel triggers', 'fds on memory.pressure', 'processes holding one'], body)
    d = next((r for r in rows if r['setup'] == 'daemon'), None)
    if d:
        text += (f'\nGoal: 1 trigger for {d["subscribers"]} identical subscribers (vs one per process) — '
                 f'{verdict(int(d["kernel_triggers"]) == 1 and int(d["fds_on_memory.pressure"]) == 1)}.\n')
    if cost:
        body = [[r['setup'], r['triggers'], r['runs'], f"{num(r['workload_wall_s'], 2)} ± {num(r['wall_sd'], 2)}",
                 f"{num(r['workload_cpu_s'], 2)} ± {num(r['cpu_sd'], 2)}", num(r['psimon_cpu_s'], 3),
                 r['events_to_watchers'], num(r['watcher_side_cpu_s'], 3), r['watcher_side_switches']]
                for r in cost]
        text += '\n' + table(['setup', 'triggers', 'runs', 'workload wall s', 'workload CPU s', 'psimon CPU s',
                              'events to watchers', 'watcher-side CPU s', 'watcher-side switches'], body)
        if all(float(r['psimon_cpu_s']) == 0 for r in cost):
            text += ('\nNo `psimon` thread ran: without CAP_SYS_RESOURCE the kernel serves triggers (2 s windows) '
                     'from its shared averaging work, so their kernel cost shows in the workload\'s CPU time and '
                     'in kworkers. Watcher side: the daemon\'s CPU and switches, or the sum over the processes '
                     'holding a trigger each.\n')
    return text


def memory(out):
    rows = load(out, 'memory.csv')
    if not rows:
        return f'_Not run: {status(out, "fanout")}._\n'
    m = {r['metric']: float(r['value']) for r in rows}
    body = [
        ['RSS at start', f"{num(m['rss_at_start'])} KiB", '< 2 MiB',
         verdict(m['rss_at_start'] < 2 * KIB)],
        ['… of which anonymous', f"{num(m['anon_at_start'])} KiB", '', ''],
        ['PSS at start (shared pages divided among their users)', f"{num(m.get('pss_at_start', 0))} KiB", '', ''],
        ['per idle connection', f"{num(m['per_idle_connection'])} B", '', ''],
        ['per subscription (on top of its connection)', f"{num(m['per_subscription'])} B", '', ''],
        ['per subscriber after the first event', f"{num(m['per_subscriber_after_first_event'])} B", '', ''],
        ['per idle subscriber, total', f"{num(m['per_subscriber_total'])} B", '< 4 KiB',
         verdict(m['per_subscriber_total'] < 4 * KIB)],
        [f"RSS with {num(m['connections'])} subscribers", f"{num(m['rss_with_subscribers'])} KiB", '', ''],
        ['RSS after they all left', f"{num(m['rss_after_all_left'])} KiB", '', ''],
    ]
    return (table(['daemon memory (VmRSS)', 'value', 'goal', ''], body)
            + f"\nMeasured with {num(m['connections'])} connections; kernel socket buffers are not part of "
              'RSS. RSS at start includes the shared libraries\' resident pages (libevent, jansson, '
              'libsystemd, libc); the anonymous part is the daemon\'s own.\n')


def workload(out):
    rows = load(out, 'workload.csv')
    if not rows:
        return f'_Not run: {status(out, "workload")}._\n'
    runs = [r for r in rows if r['subscribers'] != 'difference_percent']
    diff = next((r for r in rows if r['subscribers'] == 'difference_percent'), None)
    body = [[r['subscribers'], r['runs'], f"{num(r['mb_per_s'], 1)} ± {num(r['mb_per_s_sd'], 1)}",
             num(r['workload_cpu_s'], 2), num(r['daemon_cpu_s'], 3), num(r['events_per_run']),
             num(r['subscribers_cpu_s'], 3)] for r in runs]
    text = table(['subscribers watching', 'runs', 'workload MB/s (mean ± sd)', 'workload CPU s', 'daemon CPU s',
                  'events delivered per run', 'subscribers\' CPU s'], body)
    if diff:
        d, noise = float(diff['mb_per_s']), float(diff['mb_per_s_sd'])
        text += (f'\nDifference with the watchers: {d:+.1f}% (run-to-run noise: sd up to {noise:.1f}% of the '
                 f'mean) — goal "nothing measurable": {verdict(abs(d) <= 2 * noise)} '
                 '(|difference| within twice the noise).\n')
    return text


def protection(out):
    rows = load(out, 'bench-protection.csv')
    if not rows:
        return f'_Not run: {status(out, "protection")}._\n'
    body = [[f"{int(r['cgroups']):,}", r['scenario'], num(r['wall_us'], 1), num(r['cpu_us'], 1), num(r['syscalls']),
             num(r['propagations_applied'], 1), num(r['propagations_skipped'], 1), num(r['recomputed'], 1)]
            for r in rows]
    return (table(['cgroups', 'scenario', 'wall µs', 'CPU µs', 'syscalls', 'applied', 'skipped', 'recomputed'], body)
            + '\nPer refresh, averaged (bench-protection, fake cgroup2 trees under /tmp). "applied"/"skipped": '
              'parent sums touched or left alone because a child\'s protected value did or did not change.\n')


def top(out):
    rows = load(out, 'top.csv')
    if not rows:
        return f'_Not run: {status(out, "top")}._\n'
    body = [[f"{int(r['cgroups']):,}", r['scenario'], num(r['top_cpu_ms'], 1), num(r['top_wall_ms'], 1),
             num(r['daemon_cpu_ms'], 1) if r['daemon_cpu_ms'] else '']
            for r in rows]
    at_1000 = [float(r['top_cpu_ms']) for r in rows if int(r['cgroups']) == 1000]
    goal = (f'\nGoal: under 50 ms of CPU per refresh at 1,000 cgroups: worst {max(at_1000):.1f} ms — '
            f'{verdict(max(at_1000) < 50)}.\n' if at_1000 else '')
    return (table(['cgroups', 'view', 'top CPU ms', 'top wall ms', 'daemon CPU ms'], body)
            + '\nPer refresh: the median over repetitions of (CPU of N+1 refreshes - CPU of 1) / N, so start-up '
              'and the first refresh (which opens every file) cancel out; stdout to /dev/null. The daemon column '
              'is the daemon\'s own CPU per refresh for GetStatus and GetProtection of the whole tree '
              '(bench-top, fake cgroup2 trees under /tmp made by make-fake-cgroup-tree.py --top).\n'
            + goal)


def run_line(info):
    """The paragraph saying where and when a benchmark ran, from its info CSV (@info: a dict, or None)."""
    if not info:
        return ''
    quick = ' (quick run)' if info.get('quick') == '1' else ''
    return (f"Run{quick} on {info.get('machine', '?')}: kernel {info.get('kernel', '?')}, "
            f"{info.get('cpus', '?')} CPUs, {info.get('date', '?')}, load average {info.get('load_start', '?')} "
            f"at the start and {info.get('load_end', '?')} at the end.\n\n")


def metrics(out):
    rows = load(out, 'metrics.csv')
    if not rows:
        return f'_Not run: {status(out, "metrics")}._\n'
    body = [[r['tree'], f"{int(r['cgroups']):,}", r['scrapes'], num(r['cpu_ms'], 1), num(r['bytes']),
             num(r['wall_ms'], 1), num(r['wall_p99_ms'], 1)] for r in rows]
    at_1000 = [float(r['cpu_ms']) for r in rows if int(r['cgroups']) == 1000 and 'MaxCgroups' not in r['tree']]
    info = kv(out, 'metrics-info.csv')
    text = run_line(info)
    text += (table(['tree', 'cgroups', 'scrapes', 'daemon CPU ms', 'bytes', 'wall ms (median)', 'wall ms (p99)'],
                  body)
            + '\nPer scrape: the daemon\'s CPU time (utime + stime from /proc/PID/stat) over all scrapes divided '
              'by their number, the body\'s size, and the client\'s wall time on a kept-alive connection. Fake '
              'trees: N sibling cgroups under /tmp (make-fake-cgroup-tree.py --flat N --psi), Cgroups=/cg*, '
              'MaxCgroups=100000 (or 1000 where the row says so: the matches beyond it are only counted); '
              '"off" is the daemon\'s own series with Cgroups= empty; "real cgroup2": 1,000 '
              'empty cgroups made under a parent on this machine\'s cgroup2 hierarchy (pressure files only, no '
              'memory controller there). CPU time is counted in ticks of 1/100 s, so under 10 ms over all scrapes '
              'shows as 0.\n')
    if at_1000:
        text += (f'\nGoal: under 50 ms of CPU per scrape at 1,000 cgroups: worst {max(at_1000):.1f} ms — '
                 f'{verdict(max(at_1000) < 50)}.\n')
    idle_rows = load(out, 'metrics-idle.csv')
    if idle_rows:
        ibody = [[r['phase'], f"{int(r['cgroups']):,}", num(r['seconds']), r['context_switches'], r['cpu_ticks']]
                 for r in idle_rows]
        ok = all(int(r['context_switches']) == 0 and int(r['cpu_ticks']) == 0 for r in idle_rows)
        text += ('\n' + table(['between scrapes', 'cgroups matched', 'seconds', 'context switches',
                               'CPU ticks (1/100 s)'], ibody)
                 + f'\nGoal: nothing runs between scrapes, 0 context switches and 0 CPU time — {verdict(ok)}.\n')
    return text


METRICS_TITLE = 'Per-cgroup metrics'
METRICS_INTRO = ('Cost of a /metrics scrape against the number of cgroups [Metrics] Cgroups= matches, and what '
                 'the daemon does between scrapes. Reproduce alone with `tests/bench/bench-metrics.py --out DIR` '
                 '(as root, with PRESSURED_BUILD_ROOT and PRESSURED_SOURCE_ROOT set), then '
                 '`tests/bench/make-results.py --metrics DIR --into tests/bench/results.md`.')


def splice_metrics(out, path):
    """Put the metrics section of @out into the results file @path, between its markers."""
    splice_generated(path, 'metrics', 'bench-metrics.py', METRICS_TITLE, METRICS_INTRO, metrics(out))


# --- subscribers in a cgroup namespace (bench-ns-fanout.py) ---------------------

NS_FANOUT_TITLE = 'Subscribers in a cgroup namespace'
NS_FANOUT_INTRO = ('What 1,000 subscribers in one cgroup namespace (a container) cost the daemon per event, against '
                   'the same 1,000 on the host: CPU while they read, memory while they do not. Reproduce alone with '
                   '`tests/bench/bench-ns-fanout.py --out DIR` (as root, with PRESSURED_BUILD_ROOT and '
                   'PRESSURED_SOURCE_ROOT set; `--daemon PATH` measures another build), then '
                   '`tests/bench/make-results.py --ns-fanout DIR --into tests/bench/results.md`.')


def ns_fanout(out):
    rows = load(out, 'ns-fanout.csv')
    if not rows:
        return f'_Not run: {status(out, "ns-fanout")}._\n'
    body = [[r['subscribers'], f"{int(r['count']):,}", f"{int(r['events']):,}", num(r['daemon_cpu_us_per_event'], 0),
             num(r['per_subscriber_us'], 2), num(r['rss_growth_mib'], 1)] for r in rows]
    return (run_line(kv(out, 'ns-fanout-info.csv'))
            + table(['subscribers', 'count', 'events', 'daemon CPU µs per event', 'per subscriber µs',
                     'daemon RSS growth MiB'], body)
            + '\nReading: the host injects each event into the container\'s cgroup and waits until every '
              'connection has read it; CPU is the scheduler\'s count for every thread of the daemon '
              '(/proc/PID/task/*/schedstat). Not reading: nobody reads while the events fill each connection\'s '
              'socket buffer and the daemon\'s queue ([Limits] OutputBufferBytes=, 256 KiB); a daemon of its own '
              'per row. A peer in a namespace sees cgroup names relative to its root, so its events are '
              'rewritten: once per event and namespace root, shared by every peer with that root.\n')


def splice_ns_fanout(out, path):
    """Put the cgroup-namespace section of @out into the results file @path, between its markers."""
    splice_generated(path, 'ns-fanout', 'bench-ns-fanout.py', NS_FANOUT_TITLE, NS_FANOUT_INTRO, ns_fanout(out))


# --- warnings before a kill (bench-prekill.py) ---------------------------------

PREKILL_TITLE = 'Warnings before a kill'
PREKILL_INTRO = ('What systemd-oomd\'s pre-kill hook costs: a stand-in for oomd calls Notify on the hook socket; '
                 'N kills subscriptions on the victim, read with epoll by another process, get the "prekill" '
                 'event; then all N acknowledgements go back to back on one connection and oomd gets its answer. '
                 'Reproduce alone with `tests/bench/bench-prekill.py --out DIR` (as root, with '
                 'PRESSURED_BUILD_ROOT and PRESSURED_SOURCE_ROOT set), then '
                 '`tests/bench/make-results.py --prekill DIR --into tests/bench/results.md`.')


def us_ms(v):
    """Microseconds as milliseconds with two decimals."""
    return num(float(v) / 1000, 2)


def prekill(out):
    rows = load(out, 'prekill.csv')
    if not rows:
        return f'_Not run: {status(out, "prekill")}._\n'
    body = [[r['variant'], f"{int(r['subscribers']):,}", r['rounds'], us_ms(r['event_p50_us']),
             us_ms(r['event_p99_us']), us_ms(r['event_max_us']), us_ms(r['last_p50_us']),
             us_ms(r['answer_p50_us']), us_ms(r['answer_p99_us']), us_ms(r['answer_max_us']),
             us_ms(r['acks_to_answer_p50_us'])] for r in rows]
    text = run_line(kv(out, 'prekill-info.csv'))
    text += table(['', 'subscribers', 'warnings', 'call to event ms (p50)', 'p99', 'max', 'call to last subscriber (p50)',
                   'last acknowledgement to answer ms (p50)', 'p99', 'max', 'all acknowledgements to answer (p50)'],
                  body)
    text += ('\nCall to event: from the stand-in writing Notify to a subscriber reading its event, over every '
             'subscriber of every warning (CLOCK_MONOTONIC in both processes). Last acknowledgement to answer: '
             'from writing the last of the N AcknowledgePrekill calls to reading oomd\'s answer; all '
             'acknowledgements: from writing the first. With the fd store a warning is written into the saved '
             'state (a sealed memfd handed to the store) before its subscribers hear of it, so that a crash '
             'cannot lose it; that is the difference between the two variants.\n')
    nb = load(out, 'prekill-nobody.csv')
    if nb:
        text += ('\nNobody to warn: Notify on a cgroup nobody follows, from the call written to the answer read.\n\n'
                 + table(['', 'calls', 'answer ms (p50)', 'p99', 'max'],
                         [[r['variant'], r['calls'], us_ms(r['p50_us']), us_ms(r['p99_us']), us_ms(r['max_us'])]
                          for r in nb]))
    return text


def splice_prekill(out, path):
    """Put the warnings-before-a-kill section of @out into the results file @path, between its markers."""
    splice_generated(path, 'prekill', 'bench-prekill.py', PREKILL_TITLE, PREKILL_INTRO, prekill(out))


# --- warnings before a kill from real systemd-oomd (bench-prekill-oomd.py) ---------

PREKILL_OOMD_TITLE = 'Warnings before a kill from systemd-oomd 262'
PREKILL_OOMD_INTRO = ('Where the margin of the default deadline comes from, and what a saver gets done before the kill, '
                      'with real systemd-oomd 262 in the Debian sid guest of tests/vm/run.sh under TCG (the slowest '
                      'place the daemon meets oomd: every figure here is about ten times what it is on hardware). '
                      'Each run is one kill: a service with a pressure_monitor of libpressure (prekill-saver.c) on its '
                      'own cgroup, in a slice of its own with ManagedOOMMemoryPressure=kill, and a hog in a subgroup '
                      'under memory.max=64M, until oomd kills the service. oomd waits PrekillHookTimeoutSec=2s for '
                      'the answer. Reproduce with `tests/bench/bench-prekill-oomd.py --out DIR` (as root; boots the '
                      'sid guest, about 17 s a kill), then '
                      '`tests/bench/make-results.py --prekill-oomd DIR --into tests/bench/results.md`.')
PREKILL_MARGIN_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'daemon', 'model',
                                     'prekill-book.h')


def build_margin_ms():
    """PREKILL_MARGIN_USEC of the source tree, in ms (None if it cannot be read)."""
    import re
    try:
        with open(PREKILL_MARGIN_HEADER) as f:
            m = re.search(r'#define PREKILL_MARGIN_USEC \((\d+) \* UINT64_C\(1000\)\)', f.read())
    except OSError:
        return None
    return int(m.group(1)) if m else None


def ms_of(rows, key):
    return [int(r[key]) / 1000 for r in rows if r.get(key) not in (None, '')]


def ms_range(vals):
    """'median [min–max]' of @vals (ms), one decimal; '–' for none."""
    if not vals:
        return '–'
    return f'{statistics.median(vals):.1f} [{min(vals):.1f}–{max(vals):.1f}]'


def prekill_oomd_where(out):
    h, g = kv(out, 'prekill-oomd-info.csv'), kv(out, 'prekill-oomd-guest.csv')
    quick = ' (quick run)' if h.get('quick') == '1' else ''
    return (f"Run{quick} on {h.get('machine', '?')} (kernel {h.get('kernel', '?')}, {h.get('cpus', '?')} CPUs), "
            f"{h.get('date', '?')}, load average {h.get('load_start', '?')} at the start and {h.get('load_end', '?')} "
            f"at the end; the guest under {h.get('accel', '?').upper()} with {g.get('guest_cpus', '?')} CPUs and "
            f"{int(g.get('memtotal_kib', 0)) // 1024:,} MiB: {g.get('systemd', '?')}, kernel {g.get('kernel', '?')}, "
            f"pressured {g.get('pressured', '?')}, guest load average {g.get('guest_load_start', '?')} at the start "
            f"and {g.get('guest_load_end', '?')} at the end.\n\n")


def prekill_oomd_settings(rows):
    """The table of the margin runs, one row per setting of the deadline."""
    def key(m):
        return (1, 0) if m == '' else (0, int(m))
    body = []
    for m in sorted({r['margin_ms'] for r in rows}, key=key):
        runs = [r for r in rows if r['margin_ms'] == m]
        done = [r for r in runs if r['outcome'] not in ('no kill', 'incomplete')]
        deadlines = sorted({float(r['deadline_ms']) for r in done})
        label = ('default' if m == '' else f'{int(m)} ms') + (f' ({deadlines[0]:g} ms)' if deadlines else '')
        slack = ms_of(done, 'slack_us')
        body.append([label, len(done) if len(done) == len(runs) else f'{len(done)} of {len(runs)}',
                     sum(1 for r in done if r['outcome'] == 'io.systemd.TimedOut'),
                     ', '.join(sorted({r['outcome'] for r in done if r['outcome'] not in
                                       ('finished', 'io.systemd.TimedOut')})) or '–',
                     ms_range(ms_of(done, 'needed_margin_us')), f'{min(slack):.1f}' if slack else '–',
                     sum(1 for v in slack if v < 0)])
    return table(['answered before oomd\'s 2 s timeout by (Deadline=)', 'kills', 'oomd timed out', 'other errors',
                  'margin needed ms', 'least left of oomd\'s timeout ms', 'answered after oomd\'s timeout'], body)


def prekill_oomd_parts(rows):
    """Where the margin goes, over every margin run; and oomd's own timer."""
    finished = [r for r in rows if r['outcome'] == 'finished']
    timed_out = [r for r in rows if r['outcome'] == 'io.systemd.TimedOut']
    figures = [
        ('oomd\'s "Invoking oomd prekill hook" to the daemon reading the call', ms_of(rows, 'invoke_to_read_us')),
        ('the deadline to the daemon\'s answer written', ms_of(rows, 'answer_late_us')),
        ('**margin needed**: the two together', ms_of(rows, 'needed_margin_us')),
        ('the answer written to oomd\'s "oomd prekill hook finished"', ms_of(finished, 'answer_to_taken_us')),
        ('oomd\'s timeout to its "returned error: io.systemd.TimedOut"', ms_of(timed_out, 'oomd_late_us')),
        ('journald behind the senders (the most of the three entries)', ms_of(rows, 'journal_lag_us')),
    ]
    body = [[name, len(v), f'{statistics.median(v):.1f}' if v else '–',
             f'{percentile(v, 90):.1f}' if v else '–', f'{min(v):.1f}' if v else '–', f'{max(v):.1f}' if v else '–']
            for name, v in figures]
    return table(['ms', 'kills', 'median', 'p90', 'min', 'max'], body)


PREKILL_OOMD_SAVERS = (('save', 'pressure_monitor (prekill-saver.c): fsync, rename, fsync of the directory'),
                       ('save-exec', '`pressurectl watch --kills --exec`: a shell hook, `sync FILE`, rename'))


def prekill_oomd_saves(rows):
    body = []
    for kind, name in PREKILL_OOMD_SAVERS:
        runs = [r for r in rows if r['kind'] == kind]
        if not runs:
            continue
        done = [r for r in runs if r['outcome'] not in ('no kill', 'incomplete')]
        fin = [r for r in done if r['outcome'] == 'finished']

        def since(rs, a, b):
            return [(int(r[b]) - int(r[a])) / 1000 for r in rs if r.get(a) and r.get(b)]
        body.append([name, len(done) if len(done) == len(runs) else f'{len(done)} of {len(runs)}',
                     sum(1 for r in done if r['outcome'] != 'finished'),
                     sum(1 for r in done if r['answered'] != 'acknowledged'),
                     ms_range(since(done, 'invoked_us', 'heard_us')), ms_range(ms_of(done, 'invoke_to_written_us')),
                     ms_range(since(done, 'written_us', 'answer_us')), ms_range(ms_of(fin, 'answer_to_taken_us')),
                     ms_range(since(fin, 'written_us', 'taken_us'))])
    return table(['saver', 'kills', 'hook not finished', 'not answered on the acknowledgement',
                  'call to the handler ms', '**call to the state on disk** ms', 'state on disk to the answer written ms',
                  'answer to oomd\'s "finished" ms', 'state on disk to "finished" ms'], body)


def prekill_oomd(out):
    rows = load(out, 'prekill-oomd.csv')
    if not rows:
        return f'_Not run: {status(out, "prekill-oomd")}._\n'
    margin = [r for r in rows if r['kind'] == 'margin']
    saves = [r for r in rows if r['kind'] in ('save', 'save-exec')]
    text = prekill_oomd_where(out)
    text += ('#### The margin\n\nThe saver never acknowledges, so the daemon answers at its deadline: oomd\'s timeout '
             'less the margin in the first column ([Prekill] Deadline=; "default" is the build\'s own margin). '
             'oomd gives up on the hook once its timeout from its call has passed ("returned error: '
             'io.systemd.TimedOut") unless the answer has come. *margin needed*: from oomd\'s "Invoking oomd prekill hook" to the daemon '
             'reading the call (the event\'s monotonic_us, where the deadline counts from), plus from the deadline '
             'to the daemon\'s log line of its answer, written just before it; median [min–max]. *left of oomd\'s '
             'timeout*: oomd\'s call plus 2 s, less the answer written. Times from the journal are when the sender '
             'wrote the entry (_SOURCE_REALTIME_TIMESTAMP on the monotonic clock). With the deadline after oomd\'s '
             'timeout the kill often comes first, and the answer with it (its subscriber gone) or never (oomd hung '
             'up): no margin needed is known there.\n\n')
    text += prekill_oomd_settings(margin) + '\n'
    text += ('Over every run above (the time a call takes to arrive does not depend on the deadline):\n\n'
             + prekill_oomd_parts(margin))
    worst = max(ms_of(margin, 'needed_margin_us'), default=None)
    ours = build_margin_ms()
    if worst is not None and ours is not None:
        text += (f'\nThe build\'s margin, PREKILL_MARGIN_USEC in daemon/model/prekill-book.h: {ours} ms; the most '
                 f'any kill here needed: {worst:.1f} ms ({ours / worst:.1f}×). Goal, at least twice the worst '
                 f'seen under TCG: {verdict(ours >= 2 * worst)}.\n')
    timed_out = ms_of([r for r in margin if r['outcome'] == 'io.systemd.TimedOut'], 'oomd_late_us')
    late = [-v for r in margin if r['outcome'] == 'finished' for v in ms_of([r], 'slack_us') if v < 0]
    if timed_out and late:
        text += (f'\nsystemd-oomd gives up on the hook no earlier than its timeout, and here {min(timed_out):.0f} to '
                 f'{max(timed_out):.0f} ms after it, so answers written up to {max(late):.0f} ms after the timeout '
                 'still counted. That slack is the way oomd\'s timer fires, not something oomd promises: only an '
                 'answer written before the timeout is sure to count, so the margin must cover the margin needed in '
                 'full; what it leaves over is for a daemon slowed by the same memory pressure that made oomd act.\n')
    text += ('\n#### From oomd\'s call to the state on disk\n\nThe saver writes the warning to a state file on '
             'the guest\'s ext4 scratch disk, which the hog\'s writes keep busy, then acknowledges; the deadline '
             'is the default. The pressure_monitor returns 0 from its handler once the state is on disk, and the '
             'monitor acknowledges at once on a connection of its own (the handler\'s return is the state on disk '
             'and the acknowledgement); pressurectl acknowledges when its hook exits, and when the state was there '
             'is the mtime of a marker the hook touches last (the kernel\'s tick, 4 ms). The call is oomd\'s '
             '"Invoking oomd prekill hook"; median [min–max].\n\n'
             + prekill_oomd_saves(saves))
    return text


def splice_prekill_oomd(out, path):
    """Put the section of bench-prekill-oomd.py from @out into the results file @path, between its markers."""
    splice_generated(path, 'prekill-oomd', 'bench-prekill-oomd.py', PREKILL_OOMD_TITLE, PREKILL_OOMD_INTRO,
                     prekill_oomd(out))


# --- events during a scrape (bench-scrape-delay.py) ------------------------------

SCRAPE_DELAY_TITLE = 'Events during a scrape'
SCRAPE_DELAY_INTRO = ('How long an injected event takes to reach a subscriber while /metrics scrapes read every '
                      'cgroup of a large tree, against no scrape. Reproduce alone with '
                      '`tests/bench/bench-scrape-delay.py --out DIR` (as root, with PRESSURED_BUILD_ROOT and '
                      'PRESSURED_SOURCE_ROOT set), then '
                      '`tests/bench/make-results.py --scrape-delay DIR --into tests/bench/results.md`.')


def scrape_delay(out):
    rows = load(out, 'scrape-delay.csv')
    if not rows:
        return f'_Not run: {status(out, "scrape-delay")}._\n'
    info = kv(out, 'scrape-delay-info.csv')
    text = run_line(info)
    body = [[r['phase'], f"{int(r['cgroups']):,}", r['events'], num(r['p50_ms'], 2), num(r['p99_ms'], 2),
             num(r['max_ms'], 2), r['scrapes']] for r in rows]
    text += (table(['phase', 'cgroups', 'events', 'delay ms (p50)', 'delay ms (p99)', 'delay ms (max)',
                    'scrapes during the phase'], body)
             + '\nOne subscriber ("level": "low" on the root); a second connection calls io.pressured.Inject on '
               'the root, one event at a time with 10 ms between; the delay is from the call written to the '
               'event read. The fake tree: N sibling cgroups under /tmp (make-fake-cgroup-tree.py --flat N --psi), '
               'Cgroups=/cg*, MaxCgroups=100000, so every scrape reads all N; scrapes back to back on a '
               'kept-alive connection from another thread for the whole phase.\n')
    base = [float(r['p99_ms']) for r in rows if r['scrapes'] == '0']
    during = [float(r['p99_ms']) for r in rows if r['scrapes'] != '0']
    if base and during:
        d = max(during) - base[0]
        text += f'\nGoal: p99 with scrapes within 2 ms of p99 without: {d:+.2f} ms — {verdict(d <= 2)}.\n'
    return text


def splice_scrape_delay(out, path):
    """Put the events-during-a-scrape section of @out into the results file @path, between its markers."""
    splice_generated(path, 'scrape-delay', 'bench-scrape-delay.py', SCRAPE_DELAY_TITLE, SCRAPE_DELAY_INTRO,
                     scrape_delay(out))


# --- proactive reclaim (bench-reclaim.py) ---------------------------------------

RECLAIM_TITLE = 'Proactive reclaim'
RECLAIM_INTRO = ('What a memory.reclaim write costs, and what the [Reclaim] controller saves on three workloads '
                 'in the VM test bed, and what it costs the daemon. Reproduce with '
                 '`tests/bench/bench-reclaim.py --out DIR` (the VM parts, about 25 minutes; `--only latency`, '
                 '`--only a` and so on for one part) and `tests/bench/bench-reclaim.py --cost --out DIR` (here, '
                 'as root), then `tests/bench/make-results.py --reclaim DIR --into tests/bench/results.md`, which '
                 'also writes tests/bench/reclaim.svg.')
RECLAIM_NAMES = {'a': '(a) cold data set read once, then a hot set', 'b': '(b) this project\'s build in a loop',
                 'bdisk': '(b) this project\'s build in a loop, toolchain on the scratch disk',
                 'c': '(c) a service holding cold anonymous memory, swap on'}
RECLAIM_GOAL = ('a', 'b', 'bdisk')


def reclaim_name(key):
    """The workload's name for a key of the runs' files, "b" or "b@6s" (workload @ Interval=)."""
    base, _, interval = key.partition('@')
    return RECLAIM_NAMES.get(base, base) + (f', Interval={interval}' if interval else '')


def reclaim_where(rows):
    """Where each workload's memory is (memory.stat) and what the runs cost, medians per workload and setup."""
    cols = [('file_mib', 'file MiB', 1), ('anon_mib', 'anon MiB', 1), ('active_file_mib', 'active file MiB', 1),
            ('inactive_file_mib', 'inactive file MiB', 1), ('workingset_refault_file', 'refaults file', 0),
            ('workingset_refault_anon', 'refaults anon', 0), ('workingset_activate_file', 'activated file', 0),
            ('pswpin', 'pages swapped in', 0), ('pswpout', 'pages swapped out', 0),
            ('swap_end_mib', 'swap at the end MiB', 1), ('cpu_s', 'workload CPU s', 1),
            ('daemon_cpu_s', 'pressured CPU s', 2)]
    rows = [r for r in rows if r.get('file_mib')]
    if not rows:
        return ''
    body = []
    for w in dict.fromkeys(r['workload'] for r in rows):
        for setup in ('off', 'on'):
            rs = [r for r in rows if r['workload'] == w and r['controller'] == setup]
            if rs:
                body.append([reclaim_name(w), setup] + [num(statistics.median(float(r[k]) for r in rs), d)
                                                         for k, _, d in cols])
    return ('\nWhere the memory is and what the runs cost (medians): the cgroup\'s file and anonymous memory, '
            'active and inactive file (memory.stat, averaged over the run\'s samples), its workingset refaults '
            'and activations over the run (counted from the start of the run, unlike "refaults" above, which '
            'counts from the cgroup\'s creation), the VM\'s pages swapped in and out over the run, the swap '
            'the cgroup holds at the end, and the CPU time of the workload\'s cgroup and of pressured.service '
            '(the memory.reclaim writes run in the daemon\'s worker thread, and reclaim is charged to the '
            'writer).\n\n' + table(['workload', 'controller'] + [h for _, h, _ in cols], body))
RECLAIM_SVG = 'reclaim.svg'


def load_parts(out, prefix):
    """The rows of @prefix-W.csv for every workload W in @out, in the order of the names."""
    rows = []
    for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
        if name.startswith(prefix + '-') and name.endswith('.csv'):
            rows += load(out, name)
    return rows


def reclaim_latency(out):
    rows = load(out, 'reclaim-latency.csv')
    if not rows:
        return '_memory.reclaim latency: not run._\n'
    body = []
    for memory in dict.fromkeys(r['memory'] for r in rows):
        for step in ('1%', '10M', '100M'):
            rs = [r for r in rows if r['memory'] == memory and r['step'] == step]
            if not rs:
                continue
            ms = [float(r['ms']) for r in rs]
            asked = statistics.median(int(r['asked_bytes']) for r in rs) / (1 << 20)
            fell = statistics.median(int(r['fell_bytes']) for r in rs) / (1 << 20)
            bad = sorted({r['result'] for r in rs if r['result'] != 'ok'})
            body.append([memory, step, f'{asked:.1f}', f'{fell:.1f}', f'{min(ms):.1f}', f'{statistics.median(ms):.1f}',
                         f'{max(ms):.1f}', ', '.join(bad) or 'all ok'])
    return (table(['memory', 'step', 'asked MiB (median)', 'memory.current fell MiB (median)', 'ms min',
                   'ms median', 'ms max', 'errors'], body)
            + '\nEach row: five writes to memory.reclaim of a cgroup holding 1 GiB of clean page cache (a file '
              'on the scratch disk) or 768 MiB of anonymous memory (swap file on the scratch disk), refilled '
              'before each step size. The write returns when the kernel reclaimed the amount or gave up '
              '(EAGAIN). Times are under TCG emulation, about ten times what real hardware takes.\n')


def reclaim_runs(out):
    rows = load_parts(out, 'reclaim-runs')
    if not rows:
        return '_Workloads: not run._\n', []
    info = kv(out, 'reclaim-info.csv') or {}
    body, verdicts = [], []
    for w in dict.fromkeys(r['workload'] for r in rows):
        agg = {}
        for setup in ('off', 'on'):
            rs = [r for r in rows if r['workload'] == w and r['controller'] == setup]
            if not rs:
                continue

            def med(k):
                return statistics.median(float(r[k]) for r in rs)
            agg[setup] = {k: med(k) for k in ('avg_mib', 'end_mib', 'some_stall_pct', 'io_some_stall_pct',
                                              'throughput', 'wall_s', 'start_s')}
            reclaimed = [int(r['reclaimed_bytes']) for r in rs if r['reclaimed_bytes']]
            agg[setup]['reclaimed'] = statistics.median(reclaimed) / (1 << 20) if reclaimed else None
            agg[setup]['n'] = len(rs)
            agg[setup]['unit'] = rs[0]['unit']
            agg[setup]['states'] = ' '.join(sorted({r['state'] for r in rs if r['state']}))
            tp = [float(r['throughput']) for r in rs]
            agg[setup]['tp_range'] = f'{min(tp):,.2f}–{max(tp):,.2f}'
            agg[setup]['tp_mean'] = statistics.mean(tp)
            agg[setup]['refaults'] = statistics.median(int(r['refaults']) for r in rs)
            # Workloads with a reference beside them (bench-reclaim.py's (a)): their throughput
            # divided by the reference's over the same run, which cancels the host's swings.
            rel = [float(r['relative_throughput']) for r in rs if r.get('relative_throughput')]
            agg[setup]['rel'] = statistics.median(rel) if rel and len(rel) == len(rs) else None
            agg[setup]['rel_range'] = f'{min(rel):.3f}–{max(rel):.3f}' if agg[setup]['rel'] is not None else ''
            agg[setup]['rel_mean'] = statistics.mean(rel) if agg[setup]['rel'] is not None else None
        for setup, a in agg.items():
            body.append([reclaim_name(w), setup, a['n'], num(a['wall_s'], 0), num(a['start_s'], 1),
                         num(a['avg_mib'], 1), num(a['end_mib'], 1),
                         f"{a['some_stall_pct']:.3f}", f"{a['io_some_stall_pct']:.3f}",
                         f"{num(a['throughput'], 2)} {a['unit']}", a['tp_range'],
                         f"{a['rel']:.3f} ({a['rel_range']})" if a['rel'] is not None else '', num(a['refaults']),
                         num(a['reclaimed'], 1) if a['reclaimed'] is not None else '',
                         a['states']])
        if 'off' in agg and 'on' in agg:
            off, on = agg['off'], agg['on']
            saved = (1 - on['avg_mib'] / off['avg_mib']) * 100 if off['avg_mib'] else 0
            stall = on['some_stall_pct'] - off['some_stall_pct']
            raw_loss = (1 - on['throughput'] / off['throughput']) * 100 if off['throughput'] else 0
            raw = (f"throughput {-raw_loss:+.1f}% by the medians "
                   f"({(on['tp_mean'] / off['tp_mean'] - 1) * 100 if off['tp_mean'] else 0:+.1f}% by the "
                   f"means; the off runs alone span {off['tp_range']})")
            if off['rel'] and on['rel'] is not None:
                loss = (1 - on['rel'] / off['rel']) * 100
                tp = (f"throughput {-loss:+.1f}% against the reference reader (median ratio {off['rel']:.3f} off, "
                      f"{on['rel']:.3f} on; {(on['rel_mean'] / off['rel_mean'] - 1) * 100:+.1f}% by the means of the "
                      f"ratios; the off runs span {off['rel_range']}), {raw}")
            else:
                loss, tp = raw_loss, raw
            goal = w.partition('@')[0] in RECLAIM_GOAL
            ok = saved >= 20 and stall <= 0.1 and loss <= 2
            verdicts.append(f"- {reclaim_name(w)}: {saved:.1f}% less memory on average "
                            f"(end: {(1 - on['end_mib'] / off['end_mib']) * 100 if off['end_mib'] else 0:.1f}%), "
                            f"some stall {stall:+.3f} points, {tp}"
                            + (f' — goal (≥ 20% less, ≤ 0.1 points of stall, ≤ 2% loss): {verdict(ok)}' if goal
                               else ' (no goal set for this workload)') + '.')
    text = (f"Runs of \"run s\" seconds each, counted from when the workload reached its steady part (the cold set read, the anonymous memory "
            f"touched: \"start s\"), controller off and on alternating (\"runs\" of each), in one VM per "
            f"workload; with the controller on, a drop-in `[Reclaim] Cgroups=/bench-reclaim/*`, "
            f"`Interval=` as the workload's name says, `MinSize={info.get('min_size', '?')}` (TargetStall=0.1% and "
            f"MaxStep=1%, the defaults). VM: kernel {info.get('kernel', '?')}, "
            f"{info.get('cpus', '?')} CPUs, {int(info.get('memtotal_kib', 0)) >> 10} MiB, "
            f"{int(info.get('swap_kib', 0)) >> 10} MiB of swap on the scratch disk. Medians over the runs: "
            'memory.current sampled every second (average and at the end), the cgroup\'s memory and io `some` '
            'stall over the run as a share of wall time, the throughput (and its range over the runs: under '
            'TCG, other work on the host moves it by tens of percent; where the workload has a reference '
            'reader beside it, outside the controlled cgroups, its throughput divided by the reference\'s over the '
            'same run, which cancels what moves both), the cgroup\'s workingset refaults '
            '(memory.stat, file and anon), and the bytes the controller reports in GetStatus `reclaim`.\n\n')
    text += table(['workload', 'controller', 'runs', 'run s', 'start s', 'avg MiB', 'end MiB', 'memory some %', 'io some %',
                   'throughput', 'throughput min–max', 'throughput ÷ reference (min–max)', 'refaults', 'reclaimed MiB',
                   'state at the end'], body)
    text += reclaim_where(rows)
    text += '\n' + '\n'.join(verdicts) + '\n'
    notes = os.path.join(out, 'reclaim-notes.md')
    if os.path.exists(notes):
        with open(notes) as f:
            text += '\n' + f.read().strip() + '\n'
    return text, rows


def reclaim_svg(out, path):
    """Plot memory.current over time, one panel per workload, off in grey and on in blue."""
    rows = load_parts(out, 'reclaim-series')
    if not rows:
        return False
    loads = list(dict.fromkeys(r['workload'] for r in rows))
    pw, ph, ml, mt, gap = 640, 220, 60, 30, 50
    height = len(loads) * (ph + gap) + mt
    out_lines = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{pw + ml + 20}" height="{height}" '
                 'font-family="sans-serif" font-size="11">',
                 f'<rect width="{pw + ml + 20}" height="{height}" fill="white"/>']
    for i, w in enumerate(loads):
        rs = [r for r in rows if r['workload'] == w]
        tmax = max(float(r['t_s']) for r in rs) or 1
        ymax = max(int(r['current_bytes']) for r in rs) / (1 << 20) or 1
        ymax = 100 * (int(ymax / 100) + 1)
        y0 = mt + i * (ph + gap)
        out_lines.append(f'<text x="{ml}" y="{y0 - 8}" font-size="13">{reclaim_name(w)}: memory.current '
                         '(MiB) over time (s); grey: controller off, blue: on</text>')
        out_lines.append(f'<rect x="{ml}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
        for k in range(5):
            v = ymax * k / 4
            y = y0 + ph - ph * k / 4
            out_lines.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#ddd"/>')
            out_lines.append(f'<text x="{ml - 5}" y="{y + 4:.1f}" text-anchor="end">{v:.0f}</text>')
        for k in range(7):
            t = tmax * k / 6
            x = ml + pw * k / 6
            out_lines.append(f'<text x="{x:.1f}" y="{y0 + ph + 14}" text-anchor="middle">{t:.0f}</text>')
        for (setup, run) in dict.fromkeys((r['controller'], r['run']) for r in rs):
            pts = [(float(r['t_s']), int(r['current_bytes']) / (1 << 20)) for r in rs
                   if r['controller'] == setup and r['run'] == run]
            poly = ' '.join(f'{ml + pw * t / tmax:.1f},{y0 + ph - ph * min(m, ymax) / ymax:.1f}' for t, m in pts)
            color = '#1f5fbf' if setup == 'on' else '#888888'
            out_lines.append(f'<polyline points="{poly}" fill="none" stroke="{color}" stroke-width="1.2"/>')
    out_lines.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(out_lines) + '\n')
    return True


def reclaim_cost(out):
    rows = load(out, 'reclaim-cost.csv')
    if not rows:
        return '_Controller cost: not run._\n'
    body = [[r['controller'], r['cgroups'], r['intervals'], num(r['cpu_s'], 3), num(r['cpu_ms_per_interval'], 3),
             r['cpu_us_per_interval_per_cgroup'] or '', num(int(r['reclaimed_bytes']) / (1 << 20), 0),
             r['states']] for r in rows]
    return (table(['controller', 'cgroups', 'intervals', 'daemon CPU s', 'CPU ms per interval',
                   'CPU µs per interval per cgroup', 'MiB "reclaimed"', 'states'], body)
            + '\nOn this machine, a fake cgroup2 tree of N sibling cgroups (make-fake-cgroup-tree.py --flat N '
              '--psi, memory.current 2 GiB each, memory.reclaim a plain file, pressure totals that never move, '
              'so every cgroup is stepped every interval: the most work the controller does), Interval=1s, '
              'MinSize=0; the daemon\'s on-CPU time (schedstat) over 60 s after a 5 s warm-up, with and '
              'without [Reclaim].\n')


def reclaim_section(out, svg_written):
    runs, _ = reclaim_runs(out)
    text = f'### {RECLAIM_TITLE}\n\n{RECLAIM_INTRO}\n\n#### memory.reclaim write latency\n\n{reclaim_latency(out)}\n'
    text += f'#### Workloads\n\n{runs}\n'
    if svg_written:
        text += f'![memory.current over time, controller off and on]({RECLAIM_SVG})\n\n'
    text += f'#### The controller\'s own cost\n\n{reclaim_cost(out)}'
    return text


def splice_generated(path, name, script, title, intro, text):
    """splice() the section @title (@intro, then @text) made by tests/bench/@script between the markers of @name."""
    splice(path, f'<!-- {name}: generated by tests/bench/{script} -->', f'<!-- {name} end -->',
           f'### {title}\n\n{intro}\n\n{text}')


def splice(path, begin, end, block_text):
    """Put @block_text into the results file @path between @begin and @end (before the before/after section
    if the markers are not there yet)."""
    with open(path) as f:
        text = f.read()
    block = f'{begin}\n{block_text.rstrip()}\n{end}\n'
    ab = '<!-- before-after: generated by tests/bench/run-ab.sh -->'
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end) + 1:]
    elif ab in text:
        text = text[:text.index(ab)] + block + '\n' + text[text.index(ab):]
    else:
        text = text.rstrip('\n') + '\n\n' + block
    with open(path + '.tmp', 'w') as f:
        f.write(text)
    os.replace(path + '.tmp', path)


def splice_reclaim(out, path):
    svg = reclaim_svg(out, os.path.join(os.path.dirname(os.path.abspath(path)), RECLAIM_SVG))
    splice(path, '<!-- reclaim: generated by tests/bench/bench-reclaim.py -->', '<!-- reclaim end -->',
           reclaim_section(out, svg))


# --- takeover (bench-takeover.py) -------------------------------------------------

TAKEOVER_TITLE = 'Restarts, upgrades and crashes'
TAKEOVER_INTRO = ('How long subscribers wait when the daemon is handed to a new process: 1,000 subscribers over '
                  '100 registrations (distinct PSI triggers on a quiet cgroup) stay connected; right after the '
                  'signal or the call an Inject is sent on a connection opened before; the time is from the '
                  'signal to the first and to the last subscriber receiving that event. reexec: '
                  '`Reexecute()` (execve() in the same process); restart: SIGTERM, then the binary started '
                  'with the fd store\'s fds (tests/fdstore_test.py standing in for systemd, which adds its own '
                  'scheduling to a real restart); crash: SIGKILL, then the same start. Reproduce with '
                  '`tests/bench/bench-takeover.py --out DIR`, then '
                  '`tests/bench/make-results.py --takeover DIR --into tests/bench/results.md`.')


def takeover_section(out):
    rows = (load(out, 'takeover.csv') or []) + (load(out, 'takeover-vm.csv') or [])
    if not rows:
        return f'_Not run: {status(out, "takeover")}._\n'
    body = [[r['way'], num(r['rounds']), num(r['subscribers']), num(r['first_p50_ms'], 1), num(r['first_p99_ms'], 1),
             num(r['first_max_ms'], 1), num(r['all_p50_ms'], 1), num(r['all_p99_ms'], 1), num(r['all_max_ms'], 1)]
            for r in rows]
    text = table(['way', 'rounds', 'subscribers', 'first event p50 (ms)', 'p99', 'max', 'all subscribers p50 (ms)', 'p99',
                  'max'], body)
    text += ('\nEvery event arrived once, with no gap in seq; no subscriber saw an end of file. The restart and '
             'crash times include starting the process (exec, dynamic linking, reading the cgroup mounts). '
             'systemd-restart and systemd-crash: the installed unit under systemd 252 in the VM test bed '
             '(`--vm`: `systemctl restart`, and `systemctl kill -s SIGKILL` with the restart systemd makes), '
             'under TCG, about ten times slower than this machine.\n')
    return text


def splice_takeover(out, path):
    splice(path, '<!-- takeover: generated by tests/bench/bench-takeover.py -->', '<!-- takeover end -->',
           f'### {TAKEOVER_TITLE}\n\n{TAKEOVER_INTRO}\n\n{takeover_section(out)}')


# --- side by side with low-memory-monitor (bench-lmm.py) ------------------------

LMM_TITLE = 'Side by side with low-memory-monitor'
LMM_INTRO = ('The two providers of org.freedesktop.LowMemoryMonitor, one at a time in the VM test bed, each '
             'as its Debian unit starts it (pressured: the shipped pressured.service and a drop-in '
             '`[DBus] LowMemoryMonitor=yes`), heard by the same GLib client (GLib\'s own GMemoryMonitor, '
             '`GIO_USE_MEMORY_MONITOR=dbus`, python3-gi), under the same pressure. Reproduce with '
             '`tests/bench/bench-lmm.py --out DIR` (about 15 minutes), then '
             '`tests/bench/make-results.py --lmm DIR --into tests/bench/results.md`.')


def lmm_median(rows, key, digits=1):
    vals = [float(r[key]) for r in rows if r.get(key) not in (None, '')]
    if not vals:
        return '–', None
    med = statistics.median(vals)
    if len(vals) == 1:
        return f'{med:,.{digits}f}', med
    return f'{med:,.{digits}f} ({min(vals):,.{digits}f}–{max(vals):,.{digits}f})', med


def lmm_section(out):
    rows = load(out, 'lmm-runs.csv')
    if not rows:
        return f'### {LMM_TITLE}\n\n{LMM_INTRO}\n\n_Not run._\n'
    info = {r['key']: r['value'] for r in (load(out, 'lmm-info.csv') or [])}
    host = {r['key']: r['value'] for r in (load(out, 'lmm-host.csv') or [])}
    providers = []
    for r in rows:
        if r['provider'] not in providers:
            providers.append(r['provider'])
    body, medians = [], {}
    for name in providers:
        rs = [r for r in rows if r['provider'] == name]
        first, m_first = lmm_median(rs, 'first_ms')
        first50, _ = lmm_median(rs, 'first50_ms')
        steady, m_steady = lmm_median(rs, 'steady50_ms')
        wake, m_wake = lmm_median(rs, 'wakeups_per_min')
        pss, m_pss = lmm_median(rs, 'pss_kib', 0)
        rss, _ = lmm_median(rs, 'rss_kib', 0)
        loaded = [r for r in rs if r['callbacks'] != '']
        calls = ' / '.join(f"{r['callbacks']}:{r['direct_wakeups']}" for r in loaded) or '–'
        medians[name] = (m_first, m_wake, m_pss, m_steady)
        body.append([name, len(rs), first, first50, steady, calls, wake, pss, rss, rs[-1]['threads']])
    text = (f'### {LMM_TITLE}\n\n{LMM_INTRO}\n\n'
            + table(['provider', 'runs', 'first GLib callback after the direct reader, ms',
                     'first level-50 callback, ms', 'level-50 callbacks after the direct reader, median ms',
                     'callbacks : direct wakeups in each load',
                     'idle wakeups per minute', 'PSS KiB', 'RSS KiB', 'threads'], body))
    text += ('\nMedians, with the range over the runs in brackets. Kernel '
             f"{info.get('kernel', '?')}, {info.get('cpus', '?')} CPUs, "
             f"{int(info.get('memtotal_kib', 0)) // 1024} MiB; low-memory-monitor "
             f"{info.get('lmm_version', '?')}, GLib {info.get('glib_version', '?')}; {host.get('date', '')}. "
             'What each column measures:\n\n'
             f"- *first GLib callback*: a direct reader holds its own trigger `{info.get('trigger', '?')}` on "
             '/proc/pressure/memory, the low level of both providers (low-memory-monitor 2.1 has fixed '
             'levels: low `some 70ms 1s`, medium `some 100ms 1s`, critical `full 100ms 1s`; pressured\'s '
             'default [Levels] are the same). From its first wakeup in the load to the GLib client\'s first '
             '`low-memory-warning` callback of any level (CLOCK_MONOTONIC in both processes). The kernel '
             'wakes each trigger on its own window, so the two can be a poll period apart either way: a '
             'negative figure means the provider\'s trigger fired first.\n'
             '- *first level-50 callback*: the same to the first callback with level 50 (low). When low and '
             'critical fire in the same poll, low-memory-monitor 2.1 drops its pending low signal for the '
             'critical one but counts low as sent, so its first 50 comes with the 15 s re-signal.\n'
             '- *level-50 callbacks after the direct reader*: for every level-50 callback of a run, the time '
             'from the direct reader\'s last wakeup before it (within 0.5 s: the same kernel poll); the median '
             'of each run: the provider past the first event of the load.\n'
             f"- *callbacks : direct wakeups*: per run, GLib callbacks and direct-reader wakeups during the "
             f"load ({info.get('load', '?')}, {info.get('load_s', '?')} s). low-memory-monitor signals a level "
             'again only 15 s after the last time; pressured signals each event of a level (at most one per '
             'window).\n'
             f"- *idle wakeups per minute*: voluntary context switches of all the provider's threads "
             f"(/proc/PID/task/*/status) over {info.get('idle_s', '?')} s with no pressure, after 20 s of "
             'rest, per minute, each provider as its unit ships it (pressured.service has no WatchdogSec=, '
             'whose pings would wake it every half period).\n'
             '- *PSS*, *RSS*: /proc/PID/smaps_rollup at the end of the idle period (low-memory-monitor locks '
             'its memory with mlockall; the GLib client shares GLib\'s libraries with it, which lowers its '
             'PSS).\n')
    if 'low-memory-monitor' in medians and 'pressured' in medians:
        lf, lw, lp, ls = medians['low-memory-monitor']
        pf, pw, pp, ps = medians['pressured']
        goals = []
        if lf is not None and pf is not None:
            goals.append(f'GLib callback no later than low-memory-monitor\'s: {verdict(pf <= lf)} '
                         f'({pf:.1f} against {lf:.1f} ms)')
        if ls is not None and ps is not None:
            goals.append(f'and for the level-50 callbacks of a load: {verdict(ps <= ls)} ({ps:.1f} against {ls:.1f} ms)')
        goals.append(f'idle wakeups no more: {verdict(pw <= lw)} ({pw:.1f} against {lw:.1f} per minute)')
        goals.append(f'PSS no larger: {verdict(pp <= lp)} ({pp:,.0f} against {lp:,.0f} KiB)')
        text += '\nGoals: ' + '; '.join(goals) + '.\n'
    elif info.get('pressured_lmm') == 'no':
        text += '\nThe pressured installed in that run had no `[DBus] LowMemoryMonitor=`: low-memory-monitor alone.\n'
    return text


def splice_lmm(out, path):
    splice(path, '<!-- lmm: generated by tests/bench/bench-lmm.py -->', '<!-- lmm end -->', lmm_section(out))


# --- level callbacks against GLib (bench-levels.py) ---------------------------------

LEVELS_TITLE = 'Level callbacks against GLib'
LEVELS_INTRO = ('How soon a program hears that memory got tight, by the three ways a program can follow the '
                'level: GLib\'s own GMemoryMonitor (`GIO_USE_MEMORY_MONITOR=dbus`, python3-gi) through '
                '`[DBus] LowMemoryMonitor=yes`, the Python module\'s `watch_levels("/")`, and a C program '
                'with a `pressure_monitor` on sd-event (tests/bench/levels-client.c), listening at once to '
                'one daemon with its default [Levels]: GLib and one client of ours, Python and C alternating from '
                'run to run. (The daemon writes to one level stream after the other and each write wakes its '
                'client: with both of ours, the second would also wait for the first one\'s wakeup, which '
                'GLib\'s one listener never does; a program follows its level with one client. '
                '`--together` runs all three.) A direct reader holds its own trigger on '
                '/proc/pressure/memory equal to the daemon\'s low level, and, once the clients have rested 20 s '
                'and none heard anything for 6 s, a page-cache loop in a cgroup limited to 48M makes pressure '
                'until every client heard it; after it, the levels step down and the clients rest 6 s before the '
                'next load. The daemon and the clients start afresh for each run of four loads. Reproduce with `tests/bench/bench-levels.py --out DIR` and '
                '`tests/bench/bench-levels.py --vm --out DIR` (the VM test bed under TCG, about ten times slower '
                'than this machine, with the installed pressured.service and the real system bus), then '
                '`tests/bench/make-results.py --levels DIR --into tests/bench/results.md`.')
LEVELS_CLIENTS = (('glib', 'GLib GMemoryMonitor'), ('python', 'Python watch_levels()'),
                  ('c', 'C pressure_monitor'))
LEVELS_WHERE = (('here', 'this machine'), ('vm', 'VM test bed'))


def levels_values(rows, key):
    return [float(r[key]) for r in rows if r.get(key) not in (None, '')]


def levels_stat(vals):
    """The median of @vals with their range in brackets, and the median (None without values)."""
    if not vals:
        return '–', None
    med = statistics.median(vals)
    return f'{med:,.1f} ({min(vals):,.1f} to {max(vals):,.1f})', med


def levels_rows(rows, info, label):
    """The table rows of one place, and {client: median of its lateness behind GLib in the same load}."""
    body, behind = [], {}
    for key, name in LEVELS_CLIENTS:
        if not any(r.get(f'{key}_level') for r in rows):
            if key == 'c' and info.get('c_client', 'yes') != 'yes':
                body.append([label, name, f"_{info['c_client']}_", '', '', '', ''])
            continue
        ran = [r for r in rows if key in r.get('order', key).split()]
        first, _ = levels_stat(levels_values(ran, f'{key}_ms'))
        diffs = [float(r[f'{key}_ms']) - float(r['glib_ms']) for r in rows
                 if r.get(f'{key}_ms') not in (None, '') and r.get('glib_ms') not in (None, '')]
        later, behind[key] = levels_stat(diffs) if key != 'glib' else ('', None)
        earlier = f'{sum(1 for d in diffs if d < 0)} of {len(diffs)}' if key != 'glib' else ''
        levels = sorted({r[f'{key}_level'] for r in rows if r.get(f'{key}_level')})
        heard = sum(1 for r in ran if r.get(f'{key}_level'))
        body.append([label, name, f'{heard} of {len(ran)}', first, later, earlier, ', '.join(levels)])
    made, _ = levels_stat(levels_values(rows, 'daemon_ms'))
    if made != '–':
        body.append([label, '_the daemon made the level event_', '', made, '', '', ''])
    return body, behind


def levels_trigger(text):
    """'some 140000 2000000' (µs, as GetStatus has it) as 'some 140ms 2s'."""
    stall, threshold, window = text.split()
    return f'{stall} {int(threshold) / 1000:g}ms {int(window) / 1e6:g}s'


def levels_where(info, label, rows):
    triggers = sorted({levels_trigger(r['trigger']) for r in rows if r.get('trigger')}) or ['?']
    return (f"{label}: host `{info.get('machine', '?')}`, kernel {info.get('kernel', '?')}, {info.get('cpus', '?')} CPUs, "
            f"{int(info.get('memtotal_kib', 0)) // 1024:,} MiB, GLib {info.get('glib_version', '?')}, "
            f"Python {info.get('python', '?')}; the low level and the direct trigger `{', '.join(triggers)}`; "
            f"{info.get('runs', '?')} runs of {info.get('loads_per_run', '1')} loads"
            + (', all three clients in every run' if info.get('clients_per_run') == 'all' else '')
            + f", {info.get('date', '')}, load average {info.get('load_start', '?')} "
            f"at the start and {info.get('load_end', '?')} at the end"
            + (f"; the C client linked {info['c_client_libpressure']}" if info.get('c_client_libpressure') else '')
            + '.')


def levels_section(out):
    body, notes, goals = [], [], []
    for where, label in LEVELS_WHERE:
        every = load(out, f'levels-{where}-runs.csv')
        if not every:
            notes.append(f'{label}: not run.')
            continue
        info = {r['key']: r['value'] for r in (load(out, f'levels-{where}-info.csv') or [])}
        rows = [r for r in every if r.get('callbacks_before_load', '0') in ('', '0')]
        b, behind = levels_rows(rows, info, label)
        body += b
        left = len(every) - len(rows)
        notes.append(levels_where(info, label, every) + (
            f' {left} of its {len(every)} loads are left out: a client heard something in the 6 s before the '
            'load, or a level stream was above normal when it began (other work on the machine).' if left else ''))
        late = [f'{name} {behind[k]:+.1f} ms' for k, name in LEVELS_CLIENTS if behind.get(k) is not None]
        if late:
            met = all(behind[k] <= 0 for k, _ in LEVELS_CLIENTS if behind.get(k) is not None)
            goals.append(f'{label}: {verdict(met)} ({", ".join(late)} against GLib, medians of the same-load '
                         'differences)')
    if not body:
        return '_Not run._\n'
    text = table(['where', 'client', 'loads heard', 'first callback after the direct reader, ms',
                  'later than GLib in the same load, ms', 'earlier than GLib in', 'level of the first callback'],
                 body)
    text += ('\nMedians over the loads, with the range in brackets. *first callback after the direct reader*: '
             'from the direct reader\'s first wakeup in the load to the client\'s first callback with a level '
             'above normal (CLOCK_MONOTONIC in every process, taken first thing in each callback). The kernel '
             'wakes the reader\'s trigger and the daemon\'s separately, and the processes share the CPUs, '
             'so the reader can be scheduled after a client: a negative figure. *the daemon made the level event*: '
             'the event\'s own monotonic_us, as the Python and the C client received it, after the direct '
             'reader\'s wakeup. *later than GLib in the '
             'same load*: the client\'s time minus GLib\'s in the same load, which the reader\'s own '
             'scheduling cancels out of; negative is earlier than GLib. *earlier than GLib in*: the loads '
             'where that difference is below zero. GLib and the client of ours take '
             'turns to start first, every other pair of runs (with `--together`, the three rotate). *level of the first callback*: the levels seen first over the loads; '
             'a level stream makes the events the daemon reads in one turn of its loop one change, to the '
             'highest level (pressured(8), "Level streams"): where the three triggers fire in the same kernel '
             'poll, its first level is critical.\n\n')
    text += '\n'.join(f'- {n}' for n in notes) + '\n'
    if goals:
        text += ('\nGoal, the level callbacks no later than GLib\'s (the median same-load difference at or '
                 'below zero): ' + '; '.join(goals) + '.\n')
    return text


def percentile(values, p):
    """The @p-th percentile (nearest rank) of @values, as benchlib's."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


PYEVENT_CLIENTS = (('module', 'Python watch_levels()'), ('asyncio', 'Python watch_levels_async()'),
                   ('bare', 'Python, recv() and json.loads() only'), ('c', 'C pressure_monitor'))


def python_event_section(out):
    """The client's own part (bench-python-event.py), when its CSV files are in @out; '' otherwise."""
    body, notes = [], []
    for where, label in LEVELS_WHERE:
        rows = load(out, f'python-event-{where}.csv')
        if not rows:
            continue
        info = {r['key']: r['value'] for r in (load(out, f'python-event-{where}-info.csv') or [])}
        for key, name in PYEVENT_CLIENTS:
            vals = [int(r['latency_us']) for r in rows if r['client'] == key]
            if vals:
                body.append([label, name, f'{statistics.median(vals):,.0f}', f'{percentile(vals, 10):,.0f}',
                             f'{percentile(vals, 90):,.0f}', len(vals)])
        notes.append(f"{label}: host `{info.get('machine', '?')}`, {info.get('cpus', '?')} CPUs, Python "
                     f"{info.get('python', '?')}; {info.get('rounds', '?')} rounds of {info.get('events', '?')} "
                     f"events per client, {info.get('idle_s', '?')} s apart, {info.get('date', '')}.")
    if not body:
        return ''
    text = ('\n#### What the client adds\n\nFrom the write of a level event to the client\'s callback, µs, '
            'with a stand-in for the daemon that writes one event a second (the client\'s caches cold, as when '
            'pressure comes after a quiet spell): `tests/bench/bench-python-event.py [--vm] --out DIR` into the '
            'same DIR. The bare reader is the least a Python program does; the module\'s own part is the '
            'difference.\n\n')
    text += table(['where', 'client', 'median', 'p10', 'p90', 'events'], body)
    return text + '\n' + '\n'.join(f'- {n}' for n in notes) + '\n'


def splice_levels(out, path):
    splice_generated(path, 'levels', 'bench-levels.py', LEVELS_TITLE, LEVELS_INTRO,
                     levels_section(out) + python_event_section(out))


# --- level thresholds (bench-level-thresholds.py) --------------------------------------

THRESHOLDS_TITLE = 'Level thresholds under real loads'
THRESHOLDS_INTRO = ('Which [Levels] a load crosses, when, and in what order, for candidate sets of low, medium '
                    'and critical triggers: pressured 0.4\'s (low-memory-monitor\'s levels), GLib 2.86\'s own '
                    'PSI monitor (gmemorymonitorpsi.c), ChromeOS resourced\'s (psi_monitor.rs: background, '
                    'foreground and unresponsive), and the ones tried here. One process holds every trigger on '
                    'the load\'s pressure file and timestamps each notification, so every candidate is judged on '
                    'the same load; "critical without medium first" counts the runs where critical came and '
                    'medium\'s first notification did not come before it in a turn of the kernel\'s poll of its own '
                    '(over 5 ms earlier), so that a level stream would go from below medium straight to critical; '
                    'the times are the medians from the start of the load (with how many runs had one). '
                    'Loads: one-task, one shell loop (one process at a time) writing and reading back a '
                    '200 MB file in a cgroup limited to 64M, whose `some` stall is its `full` stall; build, this '
                    'project\'s daemon and pressurectl built from a cold page cache (ninja -j2, 80M in the VM, 72M '
                    'here); thrash, the VM only, an anonymous hog leaving 96 or 48 MiB of MemAvailable while 3 GiB '
                    'of files are re-read (system-wide). Then the daemon itself, with each candidate as its '
                    '[Levels], followed by a level stream on the one-task load. Here, without CAP_SYS_RESOURCE, '
                    'a 1 s window is taken as the daemon takes it: 2 s, the threshold doubled. Reproduce with '
                    '`tests/bench/bench-level-thresholds.py --out DIR` and `--vm --out DIR`, then '
                    '`tests/bench/make-results.py --level-thresholds DIR --into tests/bench/results.md`.')


def thresholds_candidates(rows, label):
    body = []
    keys = []
    for r in rows:
        k = (r['workload'], r['candidate'])
        if k not in keys:
            keys.append(k)
    for workload, cand in keys:
        rs = [r for r in rows if (r['workload'], r['candidate']) == (workload, cand)]
        # The failure: critical came, and medium not in a poll turn of its own before it.
        jumps = sum(1 for r in rs if r['critical_s'] and not int(r['medium_before_critical']))

        def med(key):
            vals = [float(r[key]) for r in rs if r[key] not in ('', None)]
            if not vals:
                return f'never ({len(rs)} run{"" if len(rs) == 1 else "s"})'
            return num(statistics.median(vals), 1) + ('' if len(vals) == len(rs) else f' ({len(vals)} of {len(rs)})')
        gaps = [float(r['gap_ms']) for r in rs if r['gap_ms'] not in ('', None)]
        body.append([label, workload, cand, f"`{rs[0]['low']}` / `{rs[0]['medium']}` / `{rs[0]['critical']}`",
                     f'**{jumps}** of {len(rs)}' if jumps else f'0 of {len(rs)}', med('low_s'), med('medium_s'),
                     med('critical_s'),
                     num(statistics.median(gaps), 1) if gaps else '–'])
    return body


def thresholds_section(out):
    body, streams, notes = [], [], []
    for where, label in LEVELS_WHERE:
        sfx = '-vm' if where == 'vm' else ''
        rows = load(out, f'thresholds{sfx}-candidates.csv')
        if rows:
            body += thresholds_candidates(rows, label)
        for r in load(out, f'thresholds{sfx}-streams.csv') or []:
            streams.append([label, r['candidate'], r['run'], r['levels'].replace('>', ' > '),
                            'yes' if r['medium_before_critical'] == '1' else '**no**', r['critical_s'] or '–'])
        info = {r['key']: r['value'] for r in (load(out, f'thresholds{sfx}-info.csv') or [])}
        if info:
            notes.append(f"{label}: kernel {info.get('kernel')}, {info.get('cpus')} CPUs, "
                         f"{int(info.get('memtotal_kib', 0)) // 1024:,} MiB, 1 s windows "
                         f"{'allowed' if info.get('windows_1s') == '1' else 'refused'}, {info.get('runs')} runs of "
                         f"each load, {info.get('date')}, load average {info.get('load_end')} at the end; "
                         f"builds: {info.get('builds') or 'none'}.")
    if not body:
        return '_Not run._\n'
    text = table(['where', 'load', 'candidate', 'low / medium / critical (as the kernel got them)',
                  'critical without medium first', 'low (s)', 'medium (s)', 'critical (s)',
                  'critical after medium (ms)'], body)
    if streams:
        text += '\nThe daemon\'s level stream on the one-task load, with each candidate as its [Levels]:\n\n'
        text += table(['where', 'candidate', 'run', 'levels', 'medium before critical', 'first critical (s)'],
                      streams)
    return text + '\n' + '\n'.join(f'- {n}' for n in notes) + '\n'


def splice_thresholds(out, path):
    splice_generated(path, 'level-thresholds', 'bench-level-thresholds.py', THRESHOLDS_TITLE, THRESHOLDS_INTRO,
                     thresholds_section(out))


def proxy(out):
    rows = load(out, 'proxy.csv')
    if not rows:
        return f'_Not run: {status(out, "proxy")}._\n'
    body = [[num(r['clients']), num(r['seconds']), f"{num(r['wakeups_direct'])} / {num(r['wakeups_proxied'])}",
             f"{num(r['kernel_triggers_direct'])} → {num(r['kernel_triggers_proxied'])}",
             num(r['direct_p50_us']), num(r['direct_p99_us']), num(r['proxied_p50_us']), num(r['proxied_p99_us']),
             num(r['overhead_p50_us']), num(r['overhead_p99_us']), num(r['daemon_cpu_us_per_wakeup']),
             f"{num(r['direct_callbacks'])} / {num(r['proxied_callbacks'])}", num(r['unmatched']),
             num(r['proxy_events_dropped'])] for r in rows]
    text = table(['clients', 'seconds per mode', 'wakeups direct / proxied', 'kernel triggers direct → proxied',
                  'direct p50', 'p99', 'proxied p50', 'p99', 'overhead p50', 'overhead p99',
                  'daemon CPU µs per wakeup', 'callbacks direct / proxied', 'unmatched', 'dropped'], body)
    text += ('\nDirect and proxied phases alternate (--rounds pairs of --seconds each), so the two sets of clients never compete for '
             'the CPUs. Latencies in µs from the callback of a reference client (same trigger, SCHED_FIFO, '
             'standing for the kernel wakeup) to each sd-event callback; overhead = proxied minus direct at the '
             'same percentile; unmatched = callbacks with no reference callback within 100 ms. Daemon CPU: its '
             'on-CPU time (/proc/PID/schedstat) over the proxied phases per wakeup. Trigger `some 20ms 2s` (a '
             'window any process may use); the load streams a 400 MB file through a 128M cgroup.\n')
    big = [r for r in rows if r['clients'] == '100']
    if big:
        try:
            o = float(big[0]['overhead_p99_us'])
            text += (f"\nGoal at 100 clients: p99 overhead ≤ 1 ms: {num(o)} µs — {verdict(o <= 1000)}; "
                     f"kernel triggers {big[0]['kernel_triggers_direct']} → "
                     f"{big[0]['kernel_triggers_proxied']} — {verdict(big[0]['kernel_triggers_proxied'] == '1')}.\n")
        except ValueError:
            pass
    return text


def kv(out, name):
    rows = load(out, name)
    return {r['key']: r['value'] for r in rows} if rows else {}


def thrash(out, sfx=''):
    rows = load(out, f'thrash{sfx}.csv')
    if not rows:
        return f'_Not run: {status(out, "thrash" + sfx)}._\n'
    info, host = kv(out, f'thrash{sfx}-info.csv'), kv(out, f'thrash{sfx}-host.csv')
    body = [[num(r['room_mib']), num(r['hog_mib']), num(int(r['memavail_kib_min']) / KIB),
             num(r['direct_events']), num(r['missed']), num(r['delay_p50_ms'], 1), num(r['delay_p99_ms'], 1),
             num(r['delay_max_ms'], 1), f"{num(r['read_p50_ms'], 1)} / {num(r['read_p99_ms'], 1)}",
             num(r['majflt_hog']), num(r['majflt_load']),
             f"{num(r['rss_kib_min'])} / {num(r['rss_kib_end'])}",
             'OOM-killed' if r['hog_oom_killed'] == '1' else ('not ready' if r['hog_ready'] != '1' else 'held')]
            for r in rows]
    text = table(['room MiB', 'hog MiB', 'MemAvailable min MiB', 'direct events', 'missed', 'delay p50 ms',
                  'p99', 'max', 'daemon read p50 / p99 ms', 'daemon major faults: hog growing', 'load', 'daemon RSS KiB min / end', 'hog'], body)
    text += ('\nPer step: an anonymous hog (touched pages, oom_score_adj 1000) leaves "room" MiB of '
             'MemAvailable for file pages, then 3 GiB of files on the scratch disk are re-read for '
             f"{info.get('load_s', '?')} s. A direct reader and one pressured subscriber hold the same "
             f"system-wide trigger `{info.get('trigger', '?')}` ({info.get('extra_subscribers', '?')} more "
             'subscribers on it in another process); "direct events": notifications the direct reader got from '
             'the start of the load to 3 s after it; "missed": those pressured did not deliver; delay: the '
             "subscriber's receive time minus the direct reader's, per event. Major faults of the daemon "
             '(/proc/PID/stat field 12) while the hog was being touched and during the load; RSS sampled every '
             '0.5 s. The readers lock their memory and have oom_score_adj -1000; the daemon runs under its '
             f"shipped unit (OOMScoreAdjust=-900, MemoryMin={info.get('memory_min', '?')}). Guest: kernel {info.get('kernel', '?')}, "
             f"{num(int(info.get('memtotal_kib', 0)) / KIB)} MiB, swap {info.get('swap_kib', '?')} KiB, "
             f"{info.get('cpus', '?')} CPUs under TCG; host load average {host.get('host_load_start', '?')} at the "
             f"start and {host.get('host_load_end', '?')} at the end ({host.get('date', '')}, other work on the "
             'machine). Reproduce with `tests/bench/bench-thrash.py --out DIR'
             + (f" --memory-min {sfx.split('-')[-1]}" if sfx else '') + '` (boots tests/vm/run.sh).\n')
    return text


def build(out, suffix=''):
    rows = load(out, f'build{suffix}.csv')
    if not rows:
        return f'_Not run: {status(out, "build" + suffix)}._\n'
    info = kv(out, f'build{suffix}-info.csv')
    body = []
    for r in rows:
        body.append([r['setup'], f"{r['runs']} ({r['failed']} failed)" if r['failed'] != '0' else r['runs'],
                     f"{num(r['wall_s'], 2)} ± {num(r['wall_sd'], 2)}",
                     f"{num(r['wall_min'], 2)} / {num(r['wall_max'], 2)}",
                     f"{num(r['some_s'], 2)} ± {num(r['some_sd'], 2)}", f"{num(r['full_s'], 2)} ± {num(r['full_sd'], 2)}",
                     f"{num(r['watch_cpu_s'], 3)} ± {num(r['watch_cpu_sd'], 3)}",
                     f"{num(r['watch_switches'])} ± {num(r['watch_switches_sd'])}", num(r['events']),
                     f"{r['load_min']}–{r['load_max']}"])
    text = table(['watchers', 'runs', 'wall s (mean ± sd)', 'min / max', 'some stall s', 'full stall s',
                  'watchers CPU s', 'watchers switches', 'events per run', 'load average'], body)
    text += build_per_event(out, suffix, int(info.get('watchers', 100)))
    limit = int(info.get('limit', 0))
    cold = info.get('cache') == 'cold'
    targets = info.get('targets', 'all')
    what = 'this project' if targets == 'all' else f'`{targets}` of this project'
    text += (f"\n`meson setup` and `ninja -j2` of {what} from a clean tree (git archive of HEAD) in a "
             f"fresh cgroup limited to {limit >> 20} MiB "
             f"({'memory.max' if info.get('v2_memory_controller') == '1' else 'v1 memory.limit_in_bytes, plus a cgroup2 directory for PSI'}), "
             f"{info.get('runs', '?')} runs per setup alternating after one unmeasured warm-up "
             f"({num(info.get('warmup_wall_s'), 1)} s). "
             + ('Before each run the page cache is dropped, so the compilers, headers and sources are read inside '
                "the build's cgroup and charged to it. " if cold else '')
             + f"Watchers: {info.get('watchers', '?')} subscribers of one "
             f"daemon (the daemon plus the client process reading them), or {info.get('watchers', '?')} processes "
             f"each holding its own trigger (psi-holders), all with `{info.get('trigger', '?')}` on the build's "
             'cgroup; their on-CPU time (/proc/PID/task/*/schedstat, as utime + stime in ns) and context switches '
             'over the build. "Events per run" counts deliveries of pressure events: one kernel event reaches '
             'every subscriber, or wakes every holder. Stall: memory.pressure '
             f"total= of the cgroup over the build. {where(out, suffix, info)}; the load average column is the "
             "machine's at the start of each run. Reproduce with `tests/bench/bench-build.py "
             f"--runs {info.get('runs', '5')} --limit {limit >> 20}M --trigger \"{info.get('trigger', '')}\""
             f" --cache {info.get('cache', 'warm')}{' --vm' if suffix else ''}"
             + (f' --targets "{targets}"' if targets != 'all' else '') + ' --out DIR`.\n')
    return text


def where(out, suffix, info):
    """Where a build series ran: the host, or the VM with the host's load around it."""
    if not suffix:
        return f"Host: kernel {info.get('kernel', '?')}, {info.get('cpus', '?')} CPUs, {info.get('date', '')}"
    host = kv(out, f'build{suffix}-host.csv')
    return (f"Guest: kernel {info.get('kernel', '?')}, {info.get('cpus', '?')} CPUs under TCG, "
            f"{info.get('date', '')} at the end; host load average {host.get('host_load_start', '?')} at the "
            f"start and {host.get('host_load_end', '?')} at the end")


def total(rows, key):
    return sum(float(r[key]) for r in rows)


def build_per_event(out, suffix, watchers):
    """The watchers' cost per kernel event, summed over the runs of each setup."""
    runs = load(out, f'build{suffix}-runs.csv') or []
    ok = {setup: [r for r in runs if r['setup'] == setup and r['rc'] == '0'] for setup in SETUPS}
    split = bool(runs) and 'daemon_cpu_s' in runs[0]
    body = []
    for setup, what in (('pressured', 'pressured (the daemon and one client process reading all connections)'),
                        ('own-triggers', f'own-triggers ({watchers} processes)')):
        rs = ok[setup]
        kernel_events = total(rs, 'events') / watchers
        if not kernel_events:
            continue
        row = [what, num(kernel_events), num(total(rs, 'watch_switches') / kernel_events, 1),
               f"{num(total(rs, 'watch_cpu_s') / kernel_events * 1000, 1)} ms"]
        if split:
            row.append(f"{num(total(rs, 'daemon_switches') / kernel_events, 1)} / "
                       f"{num(total(rs, 'daemon_cpu_s') / kernel_events * 1000, 1)} ms"
                       if setup == 'pressured' else '–')
        body.append(row)
    if not body:
        return ''
    header = ['watchers', 'kernel events', 'switches per kernel event', 'CPU per kernel event']
    text = '\nPer kernel event, over all runs of each setup:\n\n' + table(
        header + (['of which the daemon: switches / CPU'] if split else []), body)
    pr = ok['pressured']
    if pr and 'cleared' in pr[0] and total(pr, 'cleared'):
        text += (f"\nBesides the pressure events, pressured delivered {num(total(pr, 'cleared') / watchers)} "
                 "`cleared` events per subscriber in all (the end of an episode, from the daemon's own timer); "
                 "they are in the CPU and switches above but not in the kernel events.\n")
    # The daemon's own cost with nobody subscribed: it should do nothing
    # (under systemd, but for its watchdog ping).
    idle = ok['none'] + ok['own-triggers']
    wall = total(idle, 'wall_s')
    if not (split and pr and wall > 0):
        return text
    sw, cpu = total(idle, 'daemon_switches'), total(idle, 'daemon_cpu_s')
    text += (f"\nThe daemon with no subscriber (the none and own-triggers runs, {len(idle)} builds, "
             f"{num(wall)} s): {num(sw)} context switches and {num(cpu * 1000, 1)} ms CPU in all"
             + (f", one context switch every {num(wall / sw, 1)} s." if sw else ': it did nothing.'))
    kernel_events = total(pr, 'events') / watchers
    if kernel_events and (sw or cpu):
        # Take out what the daemon would have spent over the same time with nobody subscribed.
        pwall = total(pr, 'wall_s')
        text += (" Less that rate, the daemon's share in the pressured runs is "
                 f"{num((total(pr, 'daemon_switches') - sw / wall * pwall) / kernel_events, 1)} switches and "
                 f"{num((total(pr, 'daemon_cpu_s') - cpu / wall * pwall) / kernel_events * 1000, 1)} ms CPU "
                 "per kernel event.")
    return text + '\n'


# --- two builds compared (run-ab.sh) ------------------------------------------

def ab_values(rows, figures):
    """{figure: {build: [values over rounds]}} from rows with build and round columns.

    @figures(rows of one build and round) yields (group, figure, lower_is_better, value).
    """
    runs = {}
    for r in rows or []:
        runs.setdefault((r['build'], r['round']), []).append(r)
    out = {}
    for (b, _), rs in sorted(runs.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
        for group, name, lower, v in figures(rs):
            try:
                v = float(v)
            except (TypeError, ValueError):
                continue
            if v != v:   # NaN: nothing measured in that run
                continue
            out.setdefault((group, name, lower), {}).setdefault(b, []).append(v)
    return out


def ratio_of(a, b):
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return None
    return a / b if b else None


def ab_fanout(rs):
    by = {(r['mode'], int(r['subscribers'])): r for r in rs}
    for n in sorted({int(r['subscribers']) for r in rs}):
        d, f = by.get(('daemon', n)), by.get(('floor', n))
        if not d:
            continue
        g = f'Fan-out, {n:,} subscriber' + ('s' if n != 1 else '')
        yield g, 'daemon p50 µs', True, d['p50_us']
        yield g, 'daemon p99 µs', True, d['p99_us']
        yield g, 'daemon CPU µs per delivery', True, d.get('cpu_per_delivery_us')
        if f:
            yield g, 'daemon p99 ÷ floor\'s time to write all', True, ratio_of(d['p99_us'], f['write_p50_us'])
            yield g, 'daemon all written ÷ floor\'s', True, ratio_of(d['write_p50_us'], f['write_p50_us'])
            yield g, 'daemon deliveries/s ÷ floor\'s', False, ratio_of(d['deliveries_per_sec'],
                                                                       f['deliveries_per_sec'])
            yield g, 'daemon CPU per delivery ÷ floor\'s', True, ratio_of(d.get('cpu_per_delivery_us'),
                                                                        f.get('cpu_per_delivery_us'))
        yield g, 'lost deliveries', True, d['missed']


AB_MEMORY = [('pss_at_start', 'PSS at start, KiB'), ('anon_at_start', 'anonymous at start, KiB'),
             ('rss_at_start', 'RSS at start, KiB'), ('per_idle_connection', 'per idle connection, B'),
             ('per_subscription', 'per subscription, B'),
             ('per_subscriber_after_first_event', 'per subscriber after the first event, B'),
             ('per_subscriber_total', 'per idle subscriber in all, B'),
             ('rss_with_subscribers', 'RSS with the subscribers, KiB'),
             ('rss_after_all_left', 'RSS after they all left, KiB')]


def ab_memory(rs):
    m = {r['metric']: r['value'] for r in rs}
    for key, name in AB_MEMORY:
        if key in m:
            yield 'Daemon memory', name, True, m[key]


def ab_idle(rs):
    for r in rs:
        g = f"Idle, {r['subscribers']} subscribers ({r['phase']}), per {num(r['seconds'])} s"
        yield g, 'context switches', True, r['context_switches']
        yield g, 'CPU ticks (1/100 s)', True, r['cpu_ticks']
        if r['phase'] == 'level-root':
            yield g, 'events', True, r['events']


def ab_proxy(rs):
    for r in rs:
        g = f"Proxy, {r['clients']} client" + ('s' if r['clients'] != '1' else '')
        yield g, 'proxied p50 µs', True, r['proxied_p50_us']
        yield g, 'proxied p99 µs', True, r['proxied_p99_us']
        # Against the floor: the direct clients of the same run. A difference,
        # not a ratio: the direct latencies are near 0 and can be negative.
        yield g, 'overhead p50 µs (proxied − direct)', True, r['overhead_p50_us']
        yield g, 'overhead p99 µs (proxied − direct)', True, r['overhead_p99_us']
        yield g, 'daemon CPU µs per wakeup', True, r['daemon_cpu_us_per_wakeup']
        yield g, 'kernel triggers, proxied', True, r['kernel_triggers_proxied']
        yield g, 'events dropped', True, r['proxy_events_dropped']


def ab_top(rs):
    for r in rs:
        g = f"pressurectl top, {int(r['cgroups']):,} cgroups"
        yield g, f"top CPU ms per refresh ({r['scenario']})", True, r['top_cpu_ms']
        if r['daemon_cpu_ms']:
            yield g, f"daemon CPU ms per refresh ({r['scenario']})", True, r['daemon_cpu_ms']


AB_BENCHMARKS = [('fanout', 'fanout.csv', ab_fanout), ('fanout', 'memory.csv', ab_memory),
                 ('idle', 'idle.csv', ab_idle), ('proxy', 'proxy.csv', ab_proxy), ('top', 'top.csv', ab_top)]


def ab_num(x):
    """A figure with the precision it deserves."""
    a = abs(x)
    if a >= 100 or a == int(a):
        return num(x)
    return num(x, 1 if a >= 10 else (2 if a >= 0.1 else 3))


def ab_stats(values):
    """median, max - min over the rounds (None with one round)."""
    if not values:
        return None, None
    return statistics.median(values), (max(values) - min(values) if len(values) > 1 else None)


def ab_row(name, lower, vb, va):
    """One table row and its verdict ('worse', 'better', 'within noise', 'same', '')."""
    mb, rb = ab_stats(vb)
    ma, ra = ab_stats(va)

    def noise(m, r):
        if r is None:
            return '–'
        if m:
            return f'{100 * r / abs(m):.0f}%'
        return f'{ab_num(r)} (abs.)'

    cells = [name, ab_num(mb) if mb is not None else '–', noise(mb, rb), ab_num(ma) if ma is not None else '–',
             noise(ma, ra)]
    if mb is None or ma is None:
        return cells + ['–', 'not measured'], ''
    # A ratio only of positive figures (a latency difference may be negative).
    cells.append(f'{ma / mb:.3f}' if mb > 0 and ma >= 0 else ('1 (both 0)' if ma == mb == 0 else '–'))
    if ma == mb:
        verdict = 'same'
    elif rb is None or ra is None:
        verdict = 'higher' if ma > mb else 'lower'   # one round: no noise to judge by
    else:
        worse_by = (ma - mb) if lower else (mb - ma)
        limit = max(rb, ra)
        verdict = 'worse' if worse_by > limit else ('better' if -worse_by > limit else 'within noise')
    return cells + ['**worse**' if verdict == 'worse' else verdict], verdict


def ab_section(ab):
    info = {}
    try:
        with open(os.path.join(ab, 'ab-info.txt')) as f:
            info = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
    except OSError:
        pass
    runs = load(ab, 'ab-runs.csv') or []
    bl, al = info.get('before_label', 'before'), info.get('after_label', 'after')
    mode = ' (quick run: shorter periods, fewer rounds)' if info.get('quick') == '1' else ''

    def build_line(which):
        commit, subject = info.get(f'{which}_commit', '?'), info.get(f'{which}_subject', '')
        return f"{info.get(f'{which}_label', which)} (commit {commit}" + (f', "{subject}"' if subject else '') + ')'

    top_args = info.get('top_args', '').split()
    top_sizes = f', top trees of {top_args[1]} cgroups' if top_args[:1] == ['--sizes'] and len(top_args) > 1 else ''
    text = f'### Before and after: {bl} and {al}\n\n'
    text += (f"Before: {build_line('before')}; after: {build_line('after')}. Both measured in one run{mode} "
             f"on {info.get('machine', 'this machine')}: kernel {info.get('kernel', '?')}, "
             f"{info.get('cpus', '?')} CPUs, {info.get('memory', '?')}, {info.get('date', '')}, "
             f"{info.get('rounds', '?')} rounds, each running every benchmark for both builds back to back, "
             "the order swapped every round; load average "
             f"{info.get('load_start', '?')} at the start and {info.get('load_end', '?')} at the end, "
             f"{num(info.get('wall_seconds', 0))} s in all. The benchmark programs are the same for both; only "
             'the daemon, pressurectl and its libpressure differ. Idle periods of '
             f"{info.get('idle_seconds', '?')} s, proxy phases of {info.get('proxy_seconds', '?')} s (one "
             f"direct/proxied pair per run){top_sizes}.\n\n"
             'Each build\'s figure is the median over the rounds; its noise is the spread between its rounds, '
             '(max − min) / median. "÷ floor" figures divide by the reference measured in the same run (the '
             'minimal writer for the fan-out, the direct clients for the proxy), so machine drift cancels '
             'out of them. Verdict: worse or better when the medians differ, in that direction, by more than '
             'the larger of the two builds\' max − min; otherwise within noise.\n\n')
    body, worse, start = [], [], {}
    for bench, csv_name, figures in AB_BENCHMARKS:
        rows = load(ab, 'ab-' + csv_name)
        if not rows:
            st = sorted({r['status'] for r in runs if r['benchmark'] == bench}) or ['not run']
            body.append([f'{csv_name[:-4]}: {", ".join(st)}', '', '', '', '', '', ''])
            continue
        last = None
        for (group, name, lower), by in ab_values(rows, figures).items():
            if group != last:
                body.append([f'**{group}**', '', '', '', '', '', ''])
                last = group
            cells, verdict = ab_row(name, lower, by.get('before', []), by.get('after', []))
            body.append(cells)
            if verdict == 'worse':
                worse.append(f'{group}: {name}')
            if group == 'Daemon memory' and name.endswith('at start, KiB') and not name.startswith('RSS'):
                start[name.split(' at start')[0]] = (cells[1], cells[3], verdict)
    text += table(['figure', f'before ({bl}) median', 'noise', f'after ({al}) median', 'noise', 'after / before',
                   'verdict'], body)
    text += '\n'
    if start:
        text += ('At start: ' + '; '.join(f'{k} {b} → {a} KiB, ' + ('**grew** beyond the noise' if v == 'worse' else
                                                                       'did not grow beyond the noise')
                                            for k, (b, a, v) in start.items()) + '. ')
    text += (f"Worse beyond the noise: {len(worse)} figure" + ('s' if len(worse) != 1 else '')
             + (': ' + '; '.join(worse) if worse else '') + '.')
    failed = [r for r in runs if r['status'].startswith('failed')]
    if failed:
        text += (f" {len(failed)} run" + ('s' if len(failed) != 1 else '') + ' failed: '
                 + ', '.join(f"{r['benchmark']} ({r['build']}, round {r['round']})" for r in failed) + '.')
    text += (' Reproduce with `tests/bench/run-ab.sh BEFORE_BUILDDIR AFTER_BUILDDIR'
             + (f" --rounds {info['rounds']}" if info.get('rounds') else '')
             + (' --quick' if info.get('quick') == '1' else '') + '`.\n')
    return text


SETUPS = ['none', 'pressured', 'own-triggers']


def main():
    args = sys.argv[1:]
    ab = None
    splices = {'--reclaim': splice_reclaim, '--lmm': splice_lmm, '--levels': splice_levels, '--takeover': splice_takeover,
               '--level-thresholds': splice_thresholds,
               '--ns-fanout': splice_ns_fanout, '--scrape-delay': splice_scrape_delay, '--metrics': splice_metrics,
               '--prekill': splice_prekill, '--prekill-oomd': splice_prekill_oomd}
    if args[:1] and args[0] in splices:
        if len(args) != 4 or args[2] != '--into':
            sys.exit(f'Usage: make-results.py {args[0]} OUT_DIR --into RESULTS_MD')
        splices[args[0]](args[1], args[3])
        return
    if '--ab' in args:
        i = args.index('--ab')
        if i + 1 >= len(args):
            sys.exit('Usage: make-results.py [OUT_DIR] [--ab AB_DIR]')
        ab = args[i + 1]
        del args[i:i + 2]
    if len(args) > 1 or not (args or ab):
        sys.exit('Usage: make-results.py [OUT_DIR] [--ab AB_DIR]')
    if args:
        results(args[0])
    if ab:
        if args:
            print()
        print(ab_section(ab), end='')


def results(out):
    info = {}
    try:
        with open(os.path.join(out, 'machine.txt')) as f:
            info = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
    except OSError:
        pass
    mode = ' (quick run: fewer rounds and shorter periods)' if info.get('quick') == '1' else ''
    print('<!-- Generated by tests/bench/run-benchmarks.sh; edit make-results.py, not this file. -->')
    print('## Benchmarks\n')
    print(f"Measured side by side in one run{mode} on {info.get('machine', 'this machine')}: "
          f"kernel {info.get('kernel', '?')}, {info.get('cpus', '?')} CPUs, {info.get('memory', '?')}, "
          f"{info.get('date', '')}. Load average {info.get('load_start', '?')} at the start and "
          f"{info.get('load_end', '?')} at the end (other work on the machine adds noise to the latency "
          'tails). Reproduce with `tests/bench/run-benchmarks.sh BUILDDIR`.\n')
    sections = [
        ('Fan-out', 'One registration ("level": "medium" on "/"), N subscribers reading with epoll in one '
                    'process; the floor is a minimal C program writing the same serialized bytes to N '
                    'connected Unix sockets, read the same way.', fanout),
        ('Idle cost', 'The daemon\'s context switches and CPU time with no subscriber, then with 100 '
                      'subscribers on a quiet cgroup.', idle),
        ('Sharing', 'N identical subscribers of the daemon vs N processes each holding its own PSI trigger '
                    '(as `sd_event_add_memory_pressure()` does per process).', sharing),
        ('Memory', 'Daemon RSS at start, per idle connection and per subscription.', memory),
        ('A real workload', 'Page-cache reads and anonymous memory in a 64M cgroup, with nobody watching and '
                            'with 100 subscribers watching it (alternating runs).', workload),
        ('Protection refresh', 'Re-reading usage and propagating protected usage over fake cgroup2 trees.',
         protection),
        ('pressurectl top refresh', 'CPU time of one refresh of `pressurectl top --batch` (walk the tree, read '
                                    'seven files per cgroup, ask the daemon, sort, print the table).', top),
        (METRICS_TITLE, METRICS_INTRO, metrics),
        (SCRAPE_DELAY_TITLE, SCRAPE_DELAY_INTRO, scrape_delay),
        (NS_FANOUT_TITLE, NS_FANOUT_INTRO, ns_fanout),
        (TAKEOVER_TITLE, TAKEOVER_INTRO, takeover_section),
        (PREKILL_TITLE, PREKILL_INTRO, prekill),
        (PREKILL_OOMD_TITLE, PREKILL_OOMD_INTRO, prekill_oomd),
        ('Memory-pressure proxy', 'N sd-event clients (libsystemd 254) watching their cgroup\'s '
                                  'memory.pressure directly, or through pressured\'s memory-pressure socket, '
                                  'same trigger, same cgroup, under real reclaim.', proxy),
        ('Thrashing', 'How far a pressured subscriber trails a direct reader of the same system-wide PSI '
                      'trigger while an anonymous hog leaves less and less room for file pages (VM test bed, '
                      '2 GiB, no swap).', thrash),
        ('Building this project under a memory limit', 'Nobody watching, 100 pressured subscribers, and 100 '
                                                       'processes each holding its own trigger, on the '
                                                       "build's cgroup: this machine.", build),
        ('Building this project under a memory limit, in the VM', 'The same in the VM test bed (cgroup v2 '
                                                                  'memory.max).', lambda o: build(o, '-vm')),
    ]
    if os.path.exists(os.path.join(out, 'thrash-memmin-0.csv')):
        i = [t for t, _, _ in sections].index('Thrashing') + 1
        sections.insert(i, ('Thrashing without the unit\'s MemoryMin=', 'The same steps with a drop-in setting '
                            'MemoryMin=0 on pressured.service, down to 8 MiB of room.',
                            lambda o: thrash(o, '-memmin-0')))
    for title, intro, fn in sections:
        print(f'### {title}\n\n{intro}\n')
        print(fn(out))
    if os.path.exists(os.path.join(out, 'thrash.csv')):
        print('![Delay behind a direct reader per thrash step](tests/bench/thrash.png)\n')
    if os.path.exists(os.path.join(out, 'fanout.csv')):
        print('![Fan-out latency vs subscribers](tests/bench/latency.png)')


if __name__ == '__main__':
    main()
