#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check libpressure's ABI and its one version.

- libpressure.so exports exactly the functions listed in its version
  script, each in a LIBPRESSURE_* node: a function missing from the .so is
  a broken promise, an extra one is an accidental ABI;
- the nodes are named LIBPRESSURE_<major>[.<minor>] with the soname's
  major, each inherits from the one before it, and the newest is the
  library version's MAJOR.MINOR (LIBPRESSURE_<major> for minor 0);
- every released node (RELEASED, the nodes as they were released) is in
  the version script unchanged: the same symbols, the same parent;
- one version: the file's name (libpressure.so.X.Y.Z), libpressure.pc's
  Version, pressure_version() of the built library and the VERSIONS
  section of libpressure(3) say the same, and the SONAME is
  libpressure.so.<major>.

usage: check-symbols.py LIBRARY SYMFILE RELEASED PCFILE MANPAGE"""
import os
import re
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print(f'FAIL: {msg}', flush=True)


def nodes(path):
    """The version nodes of a version script, in order: (name, symbols, parent)."""
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    out = []
    for m in re.finditer(r'(\w[\w.]*)\s*\{(.*?)\}\s*([\w.]*)\s*;', text, flags=re.S):
        body = m.group(2)
        g = re.search(r'global:(.*?)(?:local:|$)', body, flags=re.S)
        syms = {s.strip() for s in (g.group(1) if g else '').split(';') if s.strip()}
        out.append((m.group(1), syms, m.group(3) or None))
    return out


def exported(library):
    out = subprocess.run(['nm', '-D', '--defined-only', library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        name, _, version = fields[2].partition('@')
        if fields[1] == 'A' or name.startswith('LIBPRESSURE_'):
            continue  # the version node itself
        if not version.lstrip('@').startswith('LIBPRESSURE_'):
            fail(f'{name}: exported without a LIBPRESSURE version ({fields[2]})')
        names.add(name)
    return names


def dynamic(library, tag):
    out = subprocess.run(['readelf', '-d', library], check=True, capture_output=True, text=True).stdout
    return [m.group(1) for m in re.finditer(r'\(%s\)\s+.*\[([^\]]+)\]' % tag, out)]


def runtime_version(library):
    """What pressure_version() of @library returns, called through ctypes (a
    sanitizer build's library needs its runtime loaded first)."""
    env = dict(os.environ)
    asan = [n for n in dynamic(library, 'NEEDED') if n.startswith('libasan.so')]
    if asan:
        env.update(LD_PRELOAD=asan[0], ASAN_OPTIONS='detect_leaks=0')
    code = ('import ctypes, sys\n'
            'f = ctypes.CDLL(sys.argv[1]).pressure_version\n'
            'f.restype = ctypes.c_char_p\n'
            'print(f().decode())\n')
    r = subprocess.run([sys.executable, '-c', code, library], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f'calling pressure_version() of {library} failed: {r.stderr.strip()}')
    return r.stdout.strip()


def man_versions(page):
    """The text of the VERSIONS section of @page, font escapes and roff's \\- undone."""
    text = open(page).read()
    m = re.search(r'^\.SH VERSIONS\n(.*?)^\.SH ', text, flags=re.S | re.M)
    body = m.group(1) if m else ''
    return re.sub(r'\\f[BIRP]', '', body).replace('\\-', '-')


def check_symbols(library, script):
    listed = set().union(*(syms for _, syms, _ in script)) if script else set()
    have = exported(library)
    for name in sorted(listed - have):
        fail(f'listed in the version script but not exported: {name}')
    for name in sorted(have - listed):
        fail(f'exported but not listed in the version script: {name}')
    if not listed:
        fail('the version script lists no symbol')
    return len(have)


def check_nodes(script, released, major):
    previous = None
    for name, _, parent in script:
        if not re.fullmatch(r'LIBPRESSURE_%d(\.[1-9]\d*)?' % major, name):
            fail(f'node {name}: not named LIBPRESSURE_{major}.<minor> after the library version that added it')
        if parent != previous:
            fail(f'node {name} inherits from {parent}, not from the node before it ({previous})')
        previous = name
    current = {name: (syms, parent) for name, syms, parent in script}
    for name, syms, parent in released:
        if name not in current:
            fail(f'released node {name} is gone from the version script')
            continue
        now, now_parent = current[name]
        if now != syms or now_parent != parent:
            fail(f'released node {name} was edited: added {sorted(now - syms)}, removed {sorted(syms - now)}, '
                 f'parent {now_parent} (released: {parent}); new functions go into a new node')
    return previous


def main():
    if len(sys.argv) != 6:
        sys.exit('usage: check-symbols.py LIBRARY SYMFILE RELEASED PCFILE MANPAGE')
    library, symfile, released_file, pcfile, manpage = sys.argv[1:]
    script, released = nodes(symfile), nodes(released_file)
    n = check_symbols(library, script)
    if not released:
        fail(f'{released_file} holds no released node')

    with open(pcfile) as f:
        version = next((line.split(':', 1)[1].strip() for line in f if line.startswith('Version:')), '')
    m = re.fullmatch(r'(\d+)\.(\d+)\.(\d+)', version)
    if not m:
        fail(f'{pcfile}: Version {version!r} is not MAJOR.MINOR.PATCH')
        sys.exit(1)
    major, minor = int(m.group(1)), int(m.group(2))

    newest = check_nodes(script, released, major)
    want_node = f'LIBPRESSURE_{major}' + (f'.{minor}' if minor else '')
    if newest != want_node:
        fail(f'the newest node is {newest}, but the library version is {version}: a new node bumps the minor '
             f'version (libpressure_version in client/lib/meson.build) to its name, and {want_node} must be the last')
    if os.path.basename(os.path.realpath(library)) != f'libpressure.so.{version}':
        fail(f'the library file is {os.path.basename(os.path.realpath(library))}, not libpressure.so.{version} '
             f'(libpressure.pc says {version})')
    soname = dynamic(library, 'SONAME')
    if soname != [f'libpressure.so.{major}']:
        fail(f'SONAME {soname}, not libpressure.so.{major}')
    got = runtime_version(library)
    if got != version:
        fail(f'pressure_version() says {got!r}, libpressure.pc {version!r}')
    text = man_versions(manpage)
    if f'libpressure {version}' not in text:
        fail(f'{manpage}: VERSIONS does not say "libpressure {version}"')
    for name, _, _ in script:
        if not re.search(re.escape(name) + r'(?![\d.]*\d)', text):
            fail(f'{manpage}: VERSIONS does not name the node {name}')

    if failures:
        sys.exit(1)
    print(f'{n} symbols, all listed; {len(script)} nodes, the {len(released)} released ones unchanged; '
          f'libpressure {version} ({want_node}, soname libpressure.so.{major}) everywhere')


if __name__ == '__main__':
    main()
