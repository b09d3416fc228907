#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a release is made of, checked on the source tree and the build:

- the top level holds only what CONTRACT section 1 allows (daemon/,
  client/, systemd/, conf/, tests/, meson.build, meson_options.txt,
  README.md, NEWS.md, LICENSE and dotfiles);
- one version: meson.build's is the one `pressured --version`,
  `pressurectl --version`, libpressure.pc's `pressured_version` and the
  Python module's `pressured.__version__` say,
  the one every man page names in its footer, and the one NEWS.md's first
  heading is about. (libpressure's own version, the .pc's Version, is
  checked with its ABI by tests/client/check-symbols.py.)

Usage: check-release.py (PRESSURED_SOURCE_ROOT and PRESSURED_BUILD_ROOT
set, as meson test does)."""
import glob
import os
import re
import subprocess
import sys

SOURCE = os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..'))
BUILD = os.environ.get('PRESSURED_BUILD_ROOT', os.path.join(SOURCE, 'build'))
TOP_LEVEL = {'daemon', 'client', 'systemd', 'conf', 'tests', 'meson.build', 'meson_options.txt', 'README.md',
             'NEWS.md', 'LICENSE'}
MAN_DIRS = ('daemon', 'client', 'conf', 'systemd')

failures = []


def fail(what):
    failures.append(what)
    print(f'FAIL: {what}', flush=True)


def top_level_entries():
    """The entries of the top level that belong to the tree: git's, or (an
    unpacked tarball) the directory's without build directories."""
    try:
        out = subprocess.run(['git', '-C', SOURCE, 'ls-files'], capture_output=True, text=True, check=True).stdout
        if out:
            return {line.split('/', 1)[0] for line in out.splitlines()}
    except (OSError, subprocess.CalledProcessError):
        pass
    build = os.path.realpath(BUILD)
    return {e for e in os.listdir(SOURCE) if os.path.realpath(os.path.join(SOURCE, e)) != build}


def check_layout():
    for entry in sorted(top_level_entries()):
        if entry.startswith('.'):
            continue
        if entry not in TOP_LEVEL:
            fail(f'{entry} at the top level: CONTRACT section 1 allows only {", ".join(sorted(TOP_LEVEL))} '
                 'and dotfiles')


def project_version():
    with open(os.path.join(SOURCE, 'meson.build')) as f:
        m = re.search(r"project\([^)]*?version:\s*'([^']+)'", f.read(), re.S)
    if not m:
        fail('meson.build has no project version')
        return None
    return m.group(1)


def check_version(version):
    with open(os.path.join(SOURCE, 'NEWS.md')) as f:
        heading = next((line for line in f if line.startswith('## ')), '')
    if not re.search(r'\b%s\b' % re.escape(version), heading):
        fail(f'NEWS.md\'s first heading {heading.strip()!r} is not about {version}, meson.build\'s version')

    pages = sorted(p for d in MAN_DIRS for p in glob.glob(os.path.join(SOURCE, d, '**', '*.[1358]'), recursive=True))
    if not pages:
        fail('no man pages found')
    for page in pages:
        with open(page) as f:
            th = next((line for line in f if line.startswith('.TH ')), '')
        # .TH TITLE SECTION DATE SOURCE MANUAL: the source names the package and its version.
        fields = re.findall(r'"[^"]*"|\S+', th)
        source = fields[4].strip('"') if len(fields) > 4 else ''
        if source != f'pressured {version}':
            fail(f'{os.path.relpath(page, SOURCE)}: .TH says {source!r}, not "pressured {version}"')

    for prog, path in (('pressured', 'daemon/pressured'), ('pressurectl', 'client/pressurectl/pressurectl')):
        try:
            out = subprocess.run([os.path.join(BUILD, path), '--version'], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        except OSError as e:
            out = str(e)
        if out != f'{prog} {version}':
            fail(f'{prog} --version says {out!r}, not "{prog} {version}"')

    # The module as the build put it together (the tests' PYTHONPATH).
    try:
        out = subprocess.run([sys.executable, '-c', 'import pressured; print(pressured.__version__)'],
                             capture_output=True, text=True, timeout=30)
        py_version = out.stdout.strip() or out.stderr.strip().splitlines()[-1]
    except (OSError, IndexError) as e:
        py_version = str(e)
    if py_version != version:
        fail(f'pressured.__version__ is {py_version!r}, not {version!r}')

    pc = os.path.join(BUILD, 'meson-private', 'libpressure.pc')
    try:
        with open(pc) as f:
            pc_version = next((line.split('=', 1)[1].strip() for line in f
                               if line.startswith('pressured_version=')), None)
    except OSError:
        pc_version = None
    if pc_version != version:
        fail(f'libpressure.pc says pressured_version={pc_version}, not {version}')


def main():
    check_layout()
    version = project_version()
    if version:
        check_version(version)
    if failures:
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main()
