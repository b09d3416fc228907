#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Per-cgroup series on /metrics ([Metrics] Cgroups=, MaxCgroups=).

Against a fake tree (tests/make-fake-cgroup-tree.py --psi): every series
and value equals what the files say, for the cgroups the globs select and
no other; MaxCgroups= cuts in walk order and the omitted gauge counts the
rest; Reload() applies a new Cgroups= and MaxCgroups=; an empty Cgroups=
gives no per-cgroup series; a removed cgroup disappears; unreadable files
are logged once per scrape. Then once against the real cgroup2 tree, with
a uniquely named cgroup made for the test and removed after it."""

import fnmatch
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('test_metrics', os.path.join(HERE, 'test-metrics.py'))
tm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tm)

MAKE_TREE = os.path.join(os.environ['PRESSURED_SOURCE_ROOT'], 'tests', 'make-fake-cgroup-tree.py')
PREFIX = 'pressured_cgroup_'
OMITTED = 'pressured_cgroup_series_omitted_cgroups'
PSI_FAMILIES = [(res, stall, 'pressured_cgroup_pressure_%s_%s_seconds_total' % (res, word))
                for res in ('memory', 'io', 'cpu') for stall, word in (('some', 'waiting'), ('full', 'stalled'))]
TYPES = dict([(name, 'counter') for _, _, name in PSI_FAMILIES] + [
    ('pressured_cgroup_memory_oom_kills_total', 'counter'),
    ('pressured_cgroup_memory_current_bytes', 'gauge'),
    (OMITTED, 'gauge'),
])


fail = pt.fail


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def seconds(usec_text):
    """Microseconds as the exact decimal number of seconds, as a float."""
    usec = int(usec_text)
    return float('%d.%06d' % (usec // 10**6, usec % 10**6))


def expected_series(root, cgroup):
    """{(name, (('cgroup', cgroup),)): value} read straight from the files."""
    d = root + (cgroup if cgroup != '/' else '')
    label = (('cgroup', cgroup),)
    out = {}
    for res, stall, name in PSI_FAMILIES:
        text = read(os.path.join(d, res + '.pressure'))
        for line in (text or '').splitlines():
            fields = line.split()
            if fields[0] == stall:
                out[(name, label)] = seconds(dict(f.split('=') for f in fields[1:])['total'])
    events = read(os.path.join(d, 'memory.events'))
    if events is not None:
        counts = dict(line.split() for line in events.splitlines())
        out[('pressured_cgroup_memory_oom_kills_total', label)] = float(counts['oom_kill'])
    current = read(os.path.join(d, 'memory.current'))
    if current is not None:
        out[('pressured_cgroup_memory_current_bytes', label)] = float(current)
    return out


def walk_matches(root, patterns):
    """The cgroups matching @patterns in the daemon's order: depth first, siblings sorted."""
    globs = [[c for c in p.split('/') if c] for p in patterns.split()]
    out = []

    def visit(path, comps):
        if any(len(g) == len(comps) and all(fnmatch.fnmatchcase(c, gc) for c, gc in zip(comps, g))
               for g in globs):
            out.append(path)
        d = root + (path if path != '/' else '')
        for name in sorted(os.listdir(d)):
            if os.path.isdir(os.path.join(d, name)) and not os.path.islink(os.path.join(d, name)):
                visit((path.rstrip('/')) + '/' + name, comps + [name])
    visit('/', [])
    return out


def scrape(port):
    code, ctype, body = tm.get(port, '/metrics')
    if code != 200:
        fail('GET /metrics: %d' % code)
    types, samples = tm.parse_exposition(body)
    return body, types, {k: v for k, v in samples.items() if k[0].startswith(PREFIX)}


def check_scrape(port, root, patterns, max_cgroups):
    """Every per-cgroup series and value, exactly; returns the cgroups reported."""
    body, types, got = scrape(port)
    matches = walk_matches(root, patterns)
    kept = matches[:max_cgroups]
    want = {}
    for cg in kept:
        want.update(expected_series(root, cg))
    want[(OMITTED, ())] = float(len(matches) - len(kept))
    for name in {k[0] for k in got}:
        if types.get(name) != TYPES.get(name):
            fail('%s has TYPE %r, want %r' % (name, types.get(name), TYPES.get(name)))
    if got != want:
        missing = sorted(set(want) - set(got))[:5]
        extra = sorted(set(got) - set(want))[:5]
        wrong = sorted((k, got[k], want[k]) for k in set(got) & set(want) if got[k] != want[k])[:5]
        fail('Cgroups=%r MaxCgroups=%d: missing %r, unexpected %r, wrong %r' % (
            patterns, max_cgroups, missing, extra, wrong))
    # The series come in walk order within each family.
    order = [tm.unescape(tm.LABEL_RE.search(line).group(2)) for line in body.splitlines()
             if line.startswith('pressured_cgroup_memory_current_bytes{')]
    if order != [cg for cg in kept if ('pressured_cgroup_memory_current_bytes', (('cgroup', cg),)) in want]:
        fail('series not in walk order: %r' % order[:10])
    return kept


def config(port, patterns, max_cgroups=None):
    text = '[Metrics]\nListen=127.0.0.1:%d\nCgroups=%s\n' % (port, patterns)
    if max_cgroups is not None:
        text += 'MaxCgroups=%d\n' % max_cgroups
    return text


def reload(d):
    p = pt.run_ctl('reload', socket=d.socket)
    if p.returncode != 0:
        fail('pressurectl reload: %d %s%s' % (p.returncode, p.stdout, p.stderr))


def fake_tree_checks(tmp):
    root = os.path.join(tmp, 'tree')
    subprocess.run([sys.executable, MAKE_TREE, root, '--nodes', '60', '--depth', '3', '--psi', '--seed', '7'],
                   check=True)
    # A cgroup whose name needs escaping in a label value.
    odd = os.path.join(root, 'cg1', 'q"b\\s\nn')
    shutil.copytree(os.path.join(root, 'cg1'), odd, ignore=lambda d, names: [n for n in names
                                                                          if os.path.isdir(os.path.join(d, n))])
    port = pt.free_port()
    patterns = '/ /cg1/* /cg2/*/*'
    # The fake tree is the only hierarchy: an empty v1 one, not the machine's (test-metrics-v1 reads that).
    no_v1 = os.path.join(tmp, 'no-v1')
    os.mkdir(no_v1)
    d = pt.Daemon(config_text=config(port, patterns), cgroup_root=root, cgroup_v1_root=no_v1)
    with d:
        tm.wait_listening(port)
        kept = check_scrape(port, root, patterns, 1000)
        if len(kept) < 5 or '/' not in kept or '/cg1/q"b\\s\nn' not in kept:
            fail('the fake tree selected too little to test: %r' % kept)
        print('%d cgroups checked exactly' % len(kept))

        # A cgroup removed between scrapes is gone; nothing is cached.
        victim = kept[-1]
        shutil.rmtree(root + victim)
        after = check_scrape(port, root, patterns, 1000)
        if victim in after:
            fail('%s still reported after removal' % victim)

        # Reload: new patterns and a cut; the omitted gauge counts the rest.
        patterns = '/*/* /cg1'
        d.write_config(config(port, patterns, 4))
        reload(d)
        kept = check_scrape(port, root, patterns, 4)
        if len(kept) != 4 or len(walk_matches(root, patterns)) <= 4:
            fail('MaxCgroups=4 did not cut: %r' % kept)
        _, _, got = scrape(port)
        print('MaxCgroups=4: omitted %d' % got[(OMITTED, ())])

        # Unreadable files: values left out, one log line per scrape.
        broken = root + kept[0]
        os.remove(os.path.join(broken, 'memory.pressure'))
        os.mkdir(os.path.join(broken, 'memory.pressure'))
        with open(os.path.join(broken, 'io.pressure'), 'w') as f:
            f.write('garbage\n')
        before = d.log().count('cgroup file(s) for metrics')
        check_scrape(port, root, patterns, 4)
        logged = d.log().count('cgroup file(s) for metrics') - before
        if logged != 1:
            fail('one scrape with two unreadable files logged %d lines, want 1:\n%s' % (logged, d.log()[-2000:]))

        # An empty Cgroups= turns the per-cgroup series off, gauge included.
        d.write_config(config(port, ''))
        reload(d)
        _, _, got = scrape(port)
        if got:
            fail('Cgroups= empty still gives %r' % sorted(got)[:5])


def real_tree_check():
    v2 = pt.V2_ROOT
    with pt.v2_cgroup_part('metrics') as name:
        if name is None:
            return
        port = pt.free_port()
        with pt.Daemon(config_text=config(port, name + ' ' + name + '/*')):
            tm.wait_listening(port)
            _, _, got = scrape(port)
            # An empty cgroup never stalls: its totals stay what the files say.
            want = expected_series(v2, name)
            want[(OMITTED, ())] = 0.0
            if got != want:
                fail('real cgroup %s: got %r, want %r' % (name, got, want))
            names = {k[0] for k in got}
            for res in ('memory', 'io', 'cpu'):
                if os.path.exists(v2 + name + '/%s.pressure' % res) and \
                        'pressured_cgroup_pressure_%s_waiting_seconds_total' % res not in names:
                    fail('no %s waiting series for %s' % (res, name))
            print('real cgroup %s: %d series' % (name, len(got) - 1))


def main():
    with tempfile.TemporaryDirectory(prefix='pressured-metrics-cgroups-') as tmp:
        fake_tree_checks(tmp)
    real_tree_check()
    pt.finish()


if __name__ == '__main__':
    main()
