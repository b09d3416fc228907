#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the daemon answers where there is nothing to answer with.

- Inject on a cgroup that does not exist is NoSuchCgroup (pressurectl:
  exit 1 and the sentence), not "Delivered 0 times".
- An episode made only of injected events has its peak unknown: null in
  GetStatus (active and history), in "subscribed" and in "cleared";
  `pressurectl history` says "peak unknown", `watch` "peak=unknown".
- Without the memory controller, GetProtection is SourceUnavailable with
  the reason Subscribe protection gives (pressurectl protection prints it,
  exit 1), and `pressurectl top` shows no protection columns (no emin and
  elow with --json) and does not ask for it.
- NoSuchCgroup's sentence names the daemon's hierarchies; a cgroup only in
  the v1 memory hierarchy gets one sentence from every selector that needs
  cgroup2 and from GetProtection, naming both hierarchies (and one only in
  cgroup2 the like from vmpressure); a path that names a file is
  InvalidCgroupPath for every selector, Inject and GetProtection.
- Every reason of InvalidCgroupPath (not absolute, too long, a control
  character, a component over 255 bytes, '.', '..', a file, a symlink,
  another mount): the reply has only its declared parameter, the daemon's
  log line and pressurectl's sentence name the actual reason."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402
import top_test as tt  # noqa: E402

WAIT = pt.scaled(10)
NO_MEMORY = 'the cgroup has no memory controller files'
PSI = {'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000}


def call(d, method, params=None):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return v.call_sync(method, params or {})
    finally:
        v.close()


def subscribe_error(d, **params):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return v.subscribe(**params)
    finally:
        v.close()


def ctl(d, *args):
    return pt.run_ctl(*args, socket=d.socket, timeout=WAIT * 3)


def test_inject_nope(d):
    r = call(d, 'io.pressured.Inject', {'cgroup': '/pressured-test-nope', 'level': 'low'})
    pt.check_eq(r, {'error': 'io.pressured.NoSuchCgroup', 'parameters': {'cgroup': '/pressured-test-nope'}},
                'Inject on a cgroup that does not exist')
    res = ctl(d, 'inject', '/pressured-test-nope', '--level', 'low')
    pt.check(res.returncode == 1 and 'No cgroup /pressured-test-nope' in res.stderr and 'Delivered' not in res.stdout,
             'pressurectl inject /nope: exit 1 and the sentence', res.returncode, res.stdout, res.stderr)
    if pt.V2_ROOT and os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')):
        pt.check(f'cgroup2 at {pt.V2_ROOT}' in res.stderr, 'the sentence names the daemon\'s cgroup2 root',
                 res.stderr)
    res = ctl(d, '--json', 'inject', '/pressured-test-nope', '--level', 'low')
    err = json.loads(res.stderr.strip().splitlines()[-1])
    pt.check(res.returncode == 1 and err['error'] == 'io.pressured.NoSuchCgroup' and
             err['parameters'] == {'cgroup': '/pressured-test-nope'}, '--json: the error as the daemon sent it', err)
    res = ctl(d, 'watch', '/pressured-test-nope', '--level', 'low', '--timeout', '5')
    pt.check(res.returncode == 1 and 'No cgroup /pressured-test-nope' in res.stderr,
             'watch /nope: the same sentence', res.returncode, res.stderr)


def test_injected_peak(d, cg):
    # The history lives while somebody subscribes: sub stays to the end.
    sub = pt.Varlink(d.socket, timeout=WAIT)
    sub.subscribe(cgroup=cg, level='medium')
    watch = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch', cg, '--level', 'medium',
                              '--until-cleared', '--timeout', str(int(WAIT * 6))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pt.wait_for(lambda: d.status()['subscriptions'] >= 2, timeout=WAIT, what='the watch to subscribe')
        pt.check_eq(d.inject('medium', cg)['parameters']['delivered'], 2, 'the injection reaches both')
        reg = next(r for r in d.status()['registrations'] if r['cgroup'] == cg)
        pt.check('peak' in reg['episode'] and reg['episode']['peak'] is None,
                 'GetStatus: the active episode has its peak unknown', reg['episode'])
        late = subscribe_state(d, cg)
        pt.check(late['episode']['peak'] is None, 'subscribed: the active episode has its peak unknown', late)
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        pt.check(ev['kind'] == 'pressure' and ev['synthetic'], 'the injected event', ev)
        ev = sub.recv(timeout=WAIT * 6)['parameters']['event']
        pt.check(ev['kind'] == 'cleared' and 'peak' in ev and ev['peak'] is None and ev['events'] == 1,
                 'cleared: the peak is null', ev)
        out, err = watch.communicate(timeout=WAIT * 6)
        pt.check(watch.returncode == 0 and 'peak=unknown' in out, 'watch: peak=unknown on the cleared line',
                 out, err)
        reg = next(r for r in d.status()['registrations'] if r['cgroup'] == cg)
        pt.check(reg['history'] and reg['history'][-1]['peak'] is None, 'GetStatus history: peak null', reg)
        res = ctl(d, 'history', cg)
        pt.check(res.returncode == 0 and 'peak unknown' in res.stdout and '%' not in res.stdout,
                 'history: peak unknown', res.stdout, res.stderr)
        res = ctl(d, '--json', 'history', cg)
        eps = json.loads(res.stdout)['history']
        pt.check(eps and eps[-1]['peak'] is None, 'history --json: peak null', res.stdout)
    finally:
        sub.close()
        if watch.poll() is None:
            watch.kill()
            watch.wait()


def subscribe_state(d, cg):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return v.subscribe(cgroup=cg, level='medium')['parameters']['event']['state']
    finally:
        v.close()


def test_no_memory_controller(tmp):
    """A fake cgroup2 tree without the memory controller's files."""
    root = os.path.join(tmp, 'no-memory')
    for name in ('a', 'a/b'):
        os.makedirs(os.path.join(root, name))
        open(os.path.join(root, name, 'cgroup.procs'), 'w').close()
    with pt.Daemon(cgroup_root=root) as d:
        sub = subscribe_error(d, cgroup='/a', protection=True)
        pt.check(sub.get('error') == 'io.pressured.SourceUnavailable', 'Subscribe protection refuses', sub)
        for cg in ('/', '/a', '/a/b'):
            r = call(d, 'io.pressured.GetProtection', {'cgroup': cg})
            pt.check_eq(r, {'error': 'io.pressured.SourceUnavailable', 'parameters': sub['parameters']},
                        f'GetProtection {cg}: the same answer as Subscribe protection')
        res = ctl(d, 'protection', '/a')
        pt.check(res.returncode == 1 and NO_MEMORY in res.stderr and '0B' not in res.stdout,
                 'pressurectl protection: the error, no table of zeroes', res.returncode, res.stdout, res.stderr)
        res = ctl(d, '--json', 'protection', '/a')
        pt.check(res.returncode == 1 and json.loads(res.stderr.strip().splitlines()[-1])['error'] ==
                 'io.pressured.SourceUnavailable', 'protection --json: the error', res.stdout, res.stderr)

        res = tt.run_top('--batch', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        pt.check_eq(res.returncode, 0, 'top --batch')
        table = [line for line in res.stdout.splitlines() if line.startswith(('CGROUP', '/', ' '))]
        head = table[0].split()
        pt.check('EMIN' not in head and 'ELOW' not in head and 'protection' not in res.stdout,
                 'top: no protection columns, and no GetProtection error, without the memory controller',
                 res.stdout)
        res = tt.run_top('--json', '--iterations', '1', '--cgroup-root', root, socket=d.socket)
        refresh = json.loads(res.stdout.splitlines()[0])
        pt.check(all('emin' not in c and 'elow' not in c for c in refresh['cgroups']) and
                 'protection_error' not in refresh['daemon'], 'top --json: no protection', refresh)


def test_real_no_memory(d, cg):
    v2dir = pt.V2_ROOT + cg
    if os.path.exists(os.path.join(v2dir, 'memory.current')):
        pt.skip_part('this machine\'s cgroup2 has the memory controller: its GetProtection has data')
        return
    r = call(d, 'io.pressured.GetProtection', {'cgroup': cg})
    pt.check(r.get('error') == 'io.pressured.SourceUnavailable' and NO_MEMORY in r['parameters']['reason'],
             'GetProtection on a real cgroup2 cgroup without the memory controller', r)


def test_hierarchies(d, cg):
    if not pt.have_v1_memory():
        pt.skip_part('no cgroup v1 memory hierarchy: the v1-only sentences are not checked')
        return
    with pt.real_cgroups(v1=True, v2=False, limit=None) as (v1cg, _, _):
        answers = [subscribe_error(d, cgroup=v1cg, psi=PSI), subscribe_error(d, cgroup=v1cg, memory_events=True),
                   subscribe_error(d, cgroup=v1cg, protection=True), subscribe_error(d, cgroup=v1cg, kills=True),
                   subscribe_error(d, cgroup=v1cg, level='low', resource='cpu'),
                   call(d, 'io.pressured.GetProtection', {'cgroup': v1cg})]
        reasons = set()
        for a in answers:
            pt.check(a.get('error') == 'io.pressured.SourceUnavailable', 'a v1-only cgroup: SourceUnavailable', a)
            reason = a['parameters']['reason'].replace(a['parameters']['source'], 'SOURCE')
            reasons.add(reason)
        pt.check_eq(reasons, {f'the cgroup exists only in the cgroup v1 memory hierarchy ({pt.V1_MEMORY_ROOT}), '
                              f'and SOURCE needs it in the cgroup2 hierarchy ({pt.V2_ROOT})'},
                    'one sentence from every selector, naming both hierarchies')
        res = ctl(d, 'watch', v1cg, '--memory-events', '--timeout', '5')
        pt.check(res.returncode == 1 and pt.V1_MEMORY_ROOT in res.stderr and pt.V2_ROOT in res.stderr,
                 'pressurectl says so', res.returncode, res.stderr)
    vm = subscribe_error(d, cgroup=cg, vmpressure={'level': 'low'})
    pt.check(vm.get('error') == 'io.pressured.SourceUnavailable' and
             vm['parameters']['reason'] == f'the cgroup exists only in the cgroup2 hierarchy ({pt.V2_ROOT}), and '
                                           f'vmpressure needs it in the cgroup v1 memory hierarchy '
                                           f'({pt.V1_MEMORY_ROOT})', 'vmpressure on a cgroup2-only cgroup', vm)


def test_file_paths(d, cg):
    path = cg + '/memory.pressure'
    want = {'error': 'io.pressured.InvalidCgroupPath', 'parameters': {'cgroup': path}}
    for sel in ({'level': 'low'}, {'psi': PSI}, {'vmpressure': {'level': 'low'}}, {'memory_events': True},
                {'protection': True}, {'kills': True}):
        r = subscribe_error(d, cgroup=path, **sel)
        pt.check_eq({k: r.get(k) for k in ('error', 'parameters')}, want, f'Subscribe {list(sel)[0]} on a file')
    pt.check_eq(call(d, 'io.pressured.Inject', {'cgroup': path, 'level': 'low'}), want, 'Inject on a file')
    pt.check_eq(call(d, 'io.pressured.GetProtection', {'cgroup': path}), want, 'GetProtection on a file')


# Each path the daemon refuses, and the reason its log gives; the reply has the declared parameter only.
PATH_REASONS = [
    ('relative', "it is not absolute: a cgroup path starts with '/'"),
    ('/' + 'a/' * 2100, 'it is longer than 4096 bytes'),
    ('/a\tb', 'it contains a control character, such as a tab or a newline'),
    ('/' + 'x' * 256, 'a component of it is longer than 255 bytes'),
    ('/a/./b', "it has a '.' component"),
    ('/a/../b', "it has a '..' component"),
    ('/a/memory.current', 'it names a file, not a cgroup directory'),
    ('/esc', 'it goes through a symbolic link'),
]


def test_path_reasons(tmp):
    """InvalidCgroupPath from every method that takes a cgroup, for every reason the daemon knows:
    the reply carries {"cgroup": the path as given} and nothing more, the daemon's log line names
    the actual reason (escaped where the path has control characters), and pressurectl's sentence
    the same reason for what only the daemon can see (a file, a symlink, another mount)."""
    root = os.path.join(tmp, 'reasons')
    pt.make_fake_tree(root, {'/': dict(current=1 << 30), '/a': dict(current=4096), '/m': dict(current=4096)})
    os.symlink('/tmp', os.path.join(root, 'esc'))
    reasons = list(PATH_REASONS)
    mounted = subprocess.run(['mount', '-t', 'tmpfs', 'none', os.path.join(root, 'm')], capture_output=True)
    if mounted.returncode == 0:
        reasons.append(('/m', 'it leads out of the cgroup hierarchy into another mount'))
    else:
        pt.skip_part(f'no tmpfs could be mounted in the fake tree for the other-mount reason: {mounted.stderr!r}')
    calls = [('io.pressured.Subscribe', {'level': 'low'}), ('io.pressured.Subscribe', {'levels': True}),
             ('io.pressured.GetHeadroom', {}), ('io.pressured.GetProtection', {}),
             ('io.pressured.Inject', {'level': 'low'})]
    try:
        with pt.Daemon(cgroup_root=root, log_level='debug') as d:
            for path, reason in reasons:
                for method, extra in calls:
                    v = pt.Varlink(d.socket, timeout=WAIT)
                    try:
                        if method == 'io.pressured.Subscribe':
                            r = v.subscribe(cgroup=path, **extra)
                        else:
                            r = v.call_sync(method, dict(extra, cgroup=path))
                    finally:
                        v.close()
                    pt.check_eq({k: r.get(k) for k in ('error', 'parameters')},
                                {'error': 'io.pressured.InvalidCgroupPath', 'parameters': {'cgroup': path}},
                                f'{method} {list(extra)} on {path[:40]!r}: the declared parameter only')
                shown = path.replace('\t', '\\x09')[:200]
                line = f'failed: io.pressured.InvalidCgroupPath ({reason}): {shown}'
                pt.wait_for(lambda: d.log().count(line) >= len(calls), timeout=WAIT,
                            what=f'the log to give the reason for {path[:40]!r}')
                pt.check('\t' not in d.log(), 'no control character reaches the log', path[:40])
            for path, reason in reasons[-3:]:
                res = ctl(d, 'headroom', path)
                pt.check(res.returncode == 2 and
                         res.stderr == f"pressurectl: headroom: Invalid cgroup path '{path}': {reason}.\n",
                         f'pressurectl names the reason for {path}', res.returncode, res.stderr)
    finally:
        if mounted.returncode == 0:
            subprocess.run(['umount', os.path.join(root, 'm')], check=False)


def main():
    pt.require_root('Inject is reserved to root; the test makes real cgroups')
    tmp = tempfile.mkdtemp(prefix='pressured-error-answers-')
    try:
        test_path_reasons(tmp)
        test_no_memory_controller(tmp)
        with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Levels]\nClearAfterSec=1\n') as d:
            test_inject_nope(d)
            test_file_paths(d, cg)
            test_real_no_memory(d, cg)
            test_hierarchies(d, cg)
            test_injected_peak(d, cg)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
