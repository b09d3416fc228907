#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installed libpressure works for a program built the way users build
one: `meson install --destdir`, then `cc prog.c $(pkg-config --cflags --libs
libpressure)` against that tree. The program subscribes and receives an
injected event from the built daemon. Also checks that the installed header
is plain C89 and that the library needs nothing beyond libc and jansson.
The Python module lands in the directory meson chose for the interpreter
of the build option "python" ($PRESSURED_PYTHON_DIR), one that interpreter
searches when it belongs to the install prefix, and the installed copy
talks to the daemon."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check

PROGRAM = r'''
#include <pressure.h>
#include <stdio.h>

static int on_event(pressure_subscription *s, const pressure_event *e, void *done) {
        if (pressure_event_get_kind(e) == PRESSURE_EVENT_PRESSURE) {
                printf("event %s %s\n", pressure_level_to_string(pressure_event_get_level(e)),
                       pressure_event_get_cgroup(e));
                *(int *) done = 1;
        }
        return 0;
}

/* argv[1]: the cgroup to watch (default: the whole system). */
int main(int argc, char **argv) {
        pressure_client *c;
        pressure_selector *sel;
        int done = 0, r;

        if (pressure_client_new(&c) < 0 || pressure_selector_new(&sel) < 0)
                return 1;
        pressure_selector_set_level(sel, PRESSURE_LEVEL_CRITICAL);
        if (argc > 1 && pressure_selector_set_cgroup(sel, argv[1]) < 0)
                return 1;
        r = pressure_client_subscribe(c, sel, on_event, &done, NULL, NULL);
        pressure_selector_free(sel);
        if (r < 0)
                return 2;
        printf("subscribed\n");
        fflush(stdout);
        while (!done && pressure_client_wait(c, 10000000) > 0)
                ;
        pressure_client_free(c);
        return done ? 0 : 3;
}
'''


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    check(res.returncode == 0, f'{" ".join(cmd)} failed', res.stdout, res.stderr)
    return res.stdout


def find(root, name):
    for d, _, files in os.walk(root):
        if name in files:
            return os.path.join(d, name)
    return None


def check_python_install(dest):
    """Check where the module was installed; return (interpreter, installed
    directory in @dest), or None when the build did not say where."""
    exe, pydir = os.environ.get('PRESSURED_PYTHON'), os.environ.get('PRESSURED_PYTHON_DIR')
    if not exe or not pydir:
        pt.skip_part('$PRESSURED_PYTHON(_DIR) not set: not run by meson test')
        return None
    pydir = os.path.normpath(pydir)
    installed = dest + pydir
    sources = os.path.join(pt.SOURCE_ROOT, 'client', 'python', 'pressured')
    want = sorted([f for f in os.listdir(sources) if f.endswith('.py')] +
                  ['_version.py', '_vocabulary.py', '_types.py'])
    got = sorted(os.listdir(os.path.join(installed, 'pressured'))) if os.path.isdir(installed) else []
    check(got == want, f'the module is installed in {pydir}', got, want)
    with open(os.path.join(pt.BUILD_ROOT, 'meson-info', 'intro-buildoptions.json')) as f:
        prefix = next(o['value'] for o in json.load(f) if o['name'] == 'prefix').rstrip('/')
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    path = json.loads(run([exe, '-c', 'import json, sys; print(json.dumps(sys.path))'], env=env))
    path = [os.path.normpath(p) for p in path if p]
    # An interpreter of this prefix (Debian's /usr/bin/python3 for /usr and
    # /usr/local) must find it without help.
    if any(p.startswith(prefix + '/') for p in path):
        check(pydir in path, f'{exe} searches {pydir}', path)
    else:
        print(f'{exe} belongs to no directory under {prefix}: it needs PYTHONPATH for {pydir}', flush=True)
    return exe, installed


def main():
    meson = shutil.which('meson')
    cc = shutil.which('cc')
    pkg_config = shutil.which('pkg-config')
    if not meson or not cc or not pkg_config:
        pt.skip('needs meson, cc and pkg-config')
    if not os.access(os.path.join(pt.BUILD_ROOT, 'meson-logs'), os.W_OK):
        pt.skip(f'meson install writes its log into {pt.BUILD_ROOT}, which this user may not write')

    tmp = tempfile.mkdtemp(prefix='pressured-install-')
    try:
        dest = os.path.join(tmp, 'dest')
        run([meson, 'install', '-C', pt.BUILD_ROOT, '--destdir', dest, '--no-rebuild', '--quiet'])

        pc = find(dest, 'libpressure.pc')
        check(pc is not None, 'libpressure.pc is installed')
        check(find(dest, 'pressure.h') is not None, 'pressure.h is installed')
        check(find(dest, 'libpressure.so.1') is not None, 'the soname link is installed')
        check(find(dest, 'pressurectl.1') is not None and find(dest, 'libpressure.3') is not None,
              'the man pages are installed')
        check(find(dest, 'pressurectl') is not None, 'pressurectl and its completion are installed')
        policy = find(dest, 'io.pressured.LowMemoryMonitor.conf')
        check(policy is not None and os.path.dirname(policy).endswith(os.path.join('dbus-1', 'system.d')),
              'the D-Bus policy of [DBus] LowMemoryMonitor= is installed where dbus-daemon reads policies', policy)

        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc), PKG_CONFIG_SYSROOT_DIR=dest)
        cflags = run([pkg_config, '--cflags', 'libpressure'], env=env).split()
        libs = run([pkg_config, '--libs', 'libpressure'], env=env).split()
        check(any(f.startswith('-I' + dest) for f in cflags) or not cflags, 'cflags point into the tree', cflags)
        check(any(f.startswith('-L' + dest) for f in libs) and '-lpressure' in libs, 'libs point into the tree', libs)
        check(not any('event' in f for f in libs), 'no libevent for library users', libs)

        # The library's own needs: libc and jansson, nothing else.
        so = find(dest, 'libpressure.so.1')
        soname = [line for line in run(['readelf', '-d', so]).splitlines()
                  if '(SONAME)' in line] if shutil.which('readelf') else []
        check(not soname or '[libpressure.so.1]' in soname[0], 'the soname is libpressure.so.1', soname)
        needed = [line.split('[')[1].rstrip(']') for line in run(['readelf', '-d', so]).splitlines()
                  if '(NEEDED)' in line] if shutil.which('readelf') else []
        for lib in needed:
            # A sanitizer build links its runtimes; nothing else may appear.
            check(lib.startswith(('libc.so', 'libjansson.so', 'libasan.so', 'libubsan.so')),
                  'libpressure needs only libc and jansson', needed)

        src = os.path.join(tmp, 'prog.c')
        with open(src, 'w') as f:
            f.write(PROGRAM)
        # The public header is C89 (with <stdint.h>), warning-free.
        run([cc, '-std=c89', '-pedantic', '-Wall', '-Wextra', '-Werror', '-fsyntax-only', '-x', 'c', '-']
            + cflags, input='#include <pressure.h>\nint main(void) { return 0; }\n')
        prog = os.path.join(tmp, 'prog')
        # A library built with sanitizers needs their runtimes loaded first.
        san = ['-fsanitize=address,undefined'] if any(n.startswith('libasan') for n in needed) else []
        run([cc, '-o', prog, src] + san + cflags + libs)

        python = check_python_install(dest)

        libdir = os.path.dirname(so)
        # On an empty cgroup: a real event on / could end the program before the injected one.
        with pt.quiet_cgroup() as cg, pt.Daemon() as d:
            penv = dict(os.environ, LD_LIBRARY_PATH=libdir, PRESSURED_SOCKET=d.socket)
            proc = subprocess.Popen([prog, cg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=penv)
            line = proc.stdout.readline()
            check(line == 'subscribed\n', 'the program subscribed', line, proc.poll())
            reply = d.inject('critical', cg)
            check(reply['parameters']['delivered'] == 1, 'the injection reached the program', reply)
            out, err = proc.communicate(timeout=10)
            check(proc.returncode == 0, 'the program got its event', proc.returncode, out, err)
            check(out == f'event critical {cg}\n', 'the event as the program saw it', out)
            # It really ran against the installed copy.
            maps_lib = run(['ldd', prog], env=penv)
            check(libdir in maps_lib, 'the installed library was used', maps_lib)
            if python:
                exe, pydir = python
                out = run([exe, '-c', 'import pressured, sys; print(pressured.__file__); '
                           'print(pressured.Client(sys.argv[1]).get_status().version); print(pressured.__version__)',
                           d.socket], env=dict(os.environ, PYTHONPATH=pydir)).split('\n')
                check(out[0].startswith(pydir + '/pressured/'), 'the installed module was used', out)
                version = pt.first_line([pt.PRESSURED, '--version']).split()[-1]
                check(out[1] == version, 'it reached the daemon', out)
                check(out[2] == version, 'the installed module says its version in __version__', out, version)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
