#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GetHeadroom against the built daemon.

- On fake cgroup2 and v1 trees: the nearest limit over several depths
  (memory.high below memory.max), a limit below the usage (0), a path with
  no limit and the whole system (MemAvailable), a garbled ancestor (nulls),
  a cgroup only in the v1 tree, and the declared errors with exactly their
  parameters: InvalidParameter, InvalidCgroupPath, NoSuchCgroup,
  SourceUnavailable. reclaim_target_bytes is null: no level stream follows
  the cgroups. Every error is logged once.
- On the real cgroup v1 memory hierarchy (when there is one): a child with
  memory.limit_in_bytes and a process using memory in it, compared with the
  kernel's files read around the call. The child is always removed."""
import os
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

MIB = 1 << 20
# What usage and MemAvailable may drift by between the daemon's read and ours.
DRIFT = 256 * MIB


def call(d, params):
    v = pt.Varlink(d.socket, timeout=pt.scaled(10))
    try:
        return v.call_sync('io.pressured.GetHeadroom', params)
    finally:
        v.close()


def mem_available():
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) * 1024
    raise AssertionError('no MemAvailable in /proc/meminfo')


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def make_v2(root, cg, current, mx='max', high='max'):
    d = os.path.join(root, cg.lstrip('/'))
    write(os.path.join(d, 'memory.current'), f'{current}\n')
    write(os.path.join(d, 'memory.max'), f'{mx}\n')
    write(os.path.join(d, 'memory.high'), f'{high}\n')


def fake_trees(tmp):
    v2, v1 = os.path.join(tmp, 'v2'), os.path.join(tmp, 'v1')
    write(os.path.join(v2, 'cgroup.controllers'), 'cpu io memory pids\n')
    make_v2(v2, '/a', 60 * MIB, mx=100 * MIB)
    make_v2(v2, '/a/b', 50 * MIB, mx=90 * MIB, high=70 * MIB)
    make_v2(v2, '/a/b/c', 10 * MIB)
    make_v2(v2, '/over', 20 * MIB, mx=10 * MIB)
    make_v2(v2, '/free', 10 * MIB)
    make_v2(v2, '/garbled', 10 * MIB, high='lots')
    make_v2(v2, '/garbled/x', 10 * MIB, mx=20 * MIB)
    os.makedirs(os.path.join(v2, 'nomem'))
    os.makedirs(os.path.join(v2, 'v1only'))
    os.symlink(os.path.join(v2, 'a'), os.path.join(v2, 'link'))
    write(os.path.join(v1, 'memory.usage_in_bytes'), f'{1 << 30}\n')
    write(os.path.join(v1, 'memory.limit_in_bytes'), '9223372036854771712\n')
    write(os.path.join(v1, 'v1only', 'memory.usage_in_bytes'), f'{30 * MIB}\n')
    write(os.path.join(v1, 'v1only', 'memory.limit_in_bytes'), f'{64 * MIB}\n')
    os.makedirs(os.path.join(v1, 'nomem'))
    return v2, v1


def answer(usage, limit, limiting, headroom):
    return {'parameters': {'usage_bytes': usage, 'limit_bytes': limit, 'limiting_cgroup': limiting,
                           'headroom_bytes': headroom, 'reclaim_target_bytes': None}}


def check_unlimited(d, params, usage, what):
    before = mem_available()
    r = call(d, params)
    after = mem_available()
    p = r.get('parameters', {})
    pt.check(p.get('limit_bytes') is None and p.get('limiting_cgroup') is None and
             p.get('reclaim_target_bytes') is None, f'{what}: no limit', r)
    pt.check(min(before, after) - DRIFT <= p.get('headroom_bytes', -1) <= max(before, after) + DRIFT,
             f'{what}: MemAvailable', r, before, after)
    if usage is not None:
        pt.check_eq(p.get('usage_bytes'), usage, f'{what}: its own usage')


def test_fake(d):
    pt.check_eq(call(d, {'cgroup': '/a/b/c'}), answer(10 * MIB, 70 * MIB, '/a/b', 20 * MIB),
                'the nearest limit is /a/b\'s memory.high')
    pt.check_eq(call(d, {'cgroup': '/a'}), answer(60 * MIB, 100 * MIB, '/a', 40 * MIB), 'a limit of its own')
    pt.check_eq(call(d, {'cgroup': '/over'}), answer(20 * MIB, 10 * MIB, '/over', 0), 'a limit below the usage: 0')
    pt.check_eq(call(d, {'cgroup': '/garbled/x'}), answer(10 * MIB, None, None, None),
                'a garbled ancestor: nothing known but the usage')
    pt.check_eq(call(d, {'cgroup': '/v1only'}), answer(30 * MIB, 64 * MIB, '/v1only', 34 * MIB),
                'no memory controller in cgroup2: the v1 tree')
    check_unlimited(d, {'cgroup': '/free'}, 10 * MIB, '/free')
    check_unlimited(d, {}, None, 'the whole system')
    check_unlimited(d, {'cgroup': None}, None, 'cgroup null')


def test_errors(d):
    cases = [
        ({'bogus': 1}, 'org.varlink.service.InvalidParameter', {'parameter': 'bogus'}),
        ({'cgroup': 5}, 'org.varlink.service.InvalidParameter', {'parameter': 'cgroup'}),
        ({'cgroup': '/..'}, 'io.pressured.InvalidCgroupPath', {'cgroup': '/..'}),
        ({'cgroup': 'relative'}, 'io.pressured.InvalidCgroupPath', {'cgroup': 'relative'}),
        ({'cgroup': '/link'}, 'io.pressured.InvalidCgroupPath', {'cgroup': '/link'}),
        ({'cgroup': '/a/memory.max'}, 'io.pressured.InvalidCgroupPath', {'cgroup': '/a/memory.max'}),
        ({'cgroup': '/nope'}, 'io.pressured.NoSuchCgroup', {'cgroup': '/nope'}),
        ({'cgroup': '/nomem'}, 'io.pressured.SourceUnavailable',
         {'source': 'headroom', 'reason': 'the cgroup has no memory controller in any hierarchy'}),
    ]
    for params, error, parameters in cases:
        r = call(d, params)
        pt.check_eq(r, {'error': error, 'parameters': parameters}, f'GetHeadroom {params}')
    log = d.log()
    pt.check_eq(log.count('GetHeadroom from client'), len(cases), 'each error logged once')


def test_fake_trees():
    with tempfile.TemporaryDirectory(prefix='pressured-headroom-') as tmp:
        v2, v1 = fake_trees(tmp)
        with pt.Daemon(cgroup_root=v2, cgroup_v1_root=v1) as d:
            test_fake(d)
            test_errors(d)


def v1_file(d, name):
    with open(os.path.join(d, name)) as f:
        return int(f.read())


def test_real_v1():
    root = pt.cgroup_v1_memory_mount()
    if root is None or not os.path.exists(os.path.join(root, 'memory.usage_in_bytes')):
        pt.skip_part('no cgroup v1 memory hierarchy')
        return
    name = f'/pressured-test-headroom-{os.getpid()}-{uuid.uuid4().hex[:8]}'
    cgdir = os.path.join(root, name.lstrip('/'))
    os.mkdir(cgdir)
    proc = None
    try:
        with open(os.path.join(cgdir, 'memory.limit_in_bytes'), 'w') as f:
            f.write(str(256 * MIB))

        def enter():
            with open(os.path.join(cgdir, 'cgroup.procs'), 'w') as f:
                f.write(str(os.getpid()))
        # 64 MiB touched, then held until stdin closes.
        proc = subprocess.Popen([sys.executable, '-c', 'import sys; b = bytearray(64 << 20); '
                                 'b[::4096] = b"x" * len(b[::4096]); print("ready", flush=True); sys.stdin.read()'],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=enter)
        pt.check_eq(proc.stdout.readline().strip(), 'ready', 'the process holds its memory')
        pt.wait_for(lambda: v1_file(cgdir, 'memory.usage_in_bytes') >= 64 * MIB, timeout=pt.scaled(30),
                    what='the usage to show')
        with pt.Daemon() as d:
            before = v1_file(cgdir, 'memory.usage_in_bytes')
            r = call(d, {'cgroup': name})
            after = v1_file(cgdir, 'memory.usage_in_bytes')
            p = r.get('parameters', {})
            pt.check(min(before, after) - DRIFT <= p.get('usage_bytes', -1) <= max(before, after) + DRIFT,
                     'usage_bytes is the kernel\'s memory.usage_in_bytes', r, before, after)
            pt.check_eq((p.get('limit_bytes'), p.get('limiting_cgroup')), (256 * MIB, name),
                        'the limit is the child\'s memory.limit_in_bytes')
            pt.check_eq(p.get('headroom_bytes'), max(0, 256 * MIB - p.get('usage_bytes', 0)),
                        'headroom is limit - usage (the machine has more)')
            pt.check(p.get('reclaim_target_bytes', 0) is None, 'no level stream: no reclaim target', r)
    finally:
        if proc:
            proc.stdin.close()
            proc.wait()
        pt.remove_cgroup(cgdir)


def main():
    pt.require_root('the test makes a real cgroup v1 memory child')
    test_fake_trees()
    test_real_v1()
    pt.finish()


if __name__ == '__main__':
    main()
