#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A build installed with --prefix=/usr/local and one installed with
--prefix=/usr (a distribution package's, where meson makes sysconfdir
/etc) each install a daemon that reads the configuration file it
installed, and pages and files that name the paths they were installed at.

For each prefix: the build under test if it has that prefix (CI's has
meson's default, /usr/local), else a `meson setup` of the source tree in a
temporary folder with the installed targets built; then `meson install
--destdir`. The installed
pressured.conf gets a value no default has; the installed daemon runs
`--dump-config` in a private mount namespace where the staged
<sysconfdir>/pressured is at its real path (nothing on this machine is
touched), and must print that value. Its --help names the same files.
Every path of ours an installed man page, pressured.conf or the metrics
drop-in names is under the build's sysconfdir, datadir or D-Bus policy
directory and is installed there (for drop-in examples, their folder)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
# Installed paths of other programs and run-time paths that pages name on purpose.
NOT_OURS = ('/run/', '/proc/', '/sys/', '/etc/systemd/', '/usr/local/bin/')
MARK = 'MaxClients=4321'


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    check(res.returncode == 0, f'{" ".join(cmd)} exited {res.returncode}', res.stdout[-2000:], res.stderr[-2000:])
    return res.stdout


def build_options(build):
    with open(os.path.join(build, 'meson-info', 'intro-buildoptions.json')) as f:
        return {o['name']: o['value'] for o in json.load(f)}


def build_and_install(meson, prefix, tmp):
    """The build under test if it has @prefix, else the sources configured with
    @prefix in @tmp and what is installed built; installed into a staging
    tree. Returns (staging tree, the build's options)."""
    build, dest = os.path.join(tmp, 'build'), os.path.join(tmp, 'dest')
    if build_options(pt.BUILD_ROOT)['prefix'] == prefix and os.access(os.path.join(pt.BUILD_ROOT, 'meson-logs'),
                                                                       os.W_OK):
        build = pt.BUILD_ROOT
    else:
        run([meson, 'setup', build, pt.SOURCE_ROOT, f'--prefix={prefix}', '--buildtype=plain', '-Dwerror=false'],
            env=dict(os.environ, CFLAGS='', LDFLAGS=''))
        with open(os.path.join(build, 'meson-info', 'intro-targets.json')) as f:
            targets = [t for t in json.load(f) if t.get('installed')]
        names = [os.path.relpath(os.path.dirname(t['filename'][0]), build) + '/' + t['name'] for t in targets]
        run([meson, 'compile', '-j', '2', '-C', build] + [n.removeprefix('./') for n in names])
    run([meson, 'install', '-C', build, '--no-rebuild', '--quiet', '--destdir', dest])
    return dest, build_options(build)


def in_namespace(staged, real, cmd):
    """Run @cmd where the staged directory @staged is seen at its real path
    @real: a bind mount if @real exists here, else a read-only overlay of
    @staged's copy of the nearest existing parent over that parent."""
    if os.path.isdir(real):
        mount = f'mount --bind {staged} {real}'
    else:
        above = os.path.dirname(real)
        while not os.path.isdir(above):
            above = os.path.dirname(above)
        lower = staged[:len(staged) - len(real)] + above
        mount = f'mount -t overlay overlay -o lowerdir={lower}:{above} {above}'
    return subprocess.run(['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-ec',
                           mount + ' && exec "$@"', 'sh'] + cmd, capture_output=True, text=True, timeout=60)


def named_paths(text):
    """The absolute paths of ours in a page or file: with "pressured" in
    them, roff escapes undone, run-time and other programs' paths left out."""
    text = text.replace('\\-', '-').replace('\\%', '')
    found = set()
    for m in re.finditer(r'(?<![\w.])(/[\w.*-]+)+', text):
        p = m.group(0).rstrip('.')
        if 'pressured' in p and not p.startswith(NOT_OURS):
            found.add(p)
    return found


def check_named_paths(dest, dirs, prefix):
    """Every path of ours that an installed page or file names is one this build installed."""
    named = {}
    for d, _, files in os.walk(dest):
        for name in files:
            path = os.path.join(d, name)
            if re.search(r'/man/man\d/', path) or name in ('pressured.conf', 'pressured-metrics.conf'):
                with open(path, errors='replace') as f:
                    for p in named_paths(f.read()):
                        named.setdefault(p, path[len(dest):])
    check(named, f'{prefix}: the installed pages name installed files', sorted(named))
    for p, where in sorted(named.items()):
        check(p.startswith(tuple(d + '/' for d in dirs)), f'{prefix}: {where} names {p}, outside the directories '
              'this build installs into', dirs)
        # A drop-in or a glob names a folder the administrator fills: the folder above it is installed.
        there = p if '*' not in p and '.conf.d' not in p else re.sub(r'/[^/]*\.conf\.d(/.*)?$', '', p)
        check(os.path.exists(dest + there), f'{prefix}: {where} names {p}, which is not installed', there)
    return len(named)


def check_prefix(meson, prefix, tmp):
    dest, opts = build_and_install(meson, prefix, tmp)
    sysconfdir = os.path.join(opts['prefix'], opts['sysconfdir'])
    datadir = os.path.join(opts['prefix'], opts['datadir'])
    want_sysconfdir = '/etc' if prefix == '/usr' else prefix + '/etc'
    check(sysconfdir == want_sysconfdir, f'{prefix}: meson chose sysconfdir {sysconfdir}', want_sysconfdir)
    confdir = os.path.join(sysconfdir, 'pressured')
    conf = dest + confdir + '/pressured.conf'
    check(os.path.isfile(conf), f'{prefix}: pressured.conf is installed in {confdir}', conf)
    daemon = dest + os.path.join(opts['prefix'], opts['sbindir'], 'pressured')
    check(os.access(daemon, os.X_OK), f'{prefix}: the daemon is installed', daemon)

    # The daemon reads the file it installed, at the path it installed it to.
    with open(conf, 'a') as f:
        f.write(f'\n[Limits]\n{MARK}\n')
    if os.geteuid() != 0 or not shutil.which('unshare'):
        pt.skip_part(f'{prefix}: running the installed daemon against its staged {confdir} needs root and unshare')
    else:
        res = in_namespace(dest + confdir, confdir, [daemon, '--dump-config'])
        check(res.returncode == 0, f'{prefix}: the installed daemon --dump-config', res.returncode, res.stderr)
        check(re.search(r'^' + MARK + r'$', res.stdout, re.M), f'{prefix}: the installed daemon did not read '
              f'the pressured.conf installed in {confdir}', res.stdout[:600])
        print(f'{prefix}: the installed daemon reads {confdir}/pressured.conf', flush=True)
    helptext = run([daemon, '--help'])
    check(f'{confdir}/pressured.conf' in helptext and f'{confdir}/pressured.conf.d/*.conf' in helptext,
          f'{prefix}: --help names the installed configuration', helptext)
    policy = next((os.path.join(d, f)[len(dest):] for d, _, fs in os.walk(dest) for f in fs
                   if f == 'io.pressured.LowMemoryMonitor.conf'), None)
    check(policy, f'{prefix}: the D-Bus policy is installed')
    n = check_named_paths(dest, [confdir, datadir + '/pressured', datadir + '/doc/pressured',
                                 os.path.dirname(policy)], prefix)
    print(f'{prefix}: {n} installed paths named by installed files, all there', flush=True)


def main():
    meson = shutil.which('meson')
    if not meson or not shutil.which('cc'):
        pt.skip('needs meson and cc')
    if pt.STRICT_EXIT:
        # The builds it makes are plain ones whatever the setup: the plain run checks all of it.
        pt.skip('under the valgrind and sanitize setups: its own builds are plain, the plain run checks them')
    for prefix in ('/usr/local', '/usr'):
        tmp = tempfile.mkdtemp(prefix='pressured-prefix-')
        try:
            check_prefix(meson, prefix, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
