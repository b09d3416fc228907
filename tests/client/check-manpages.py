#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the manual pages.

libpressure: every function of libpressure.sym is declared in the SYNOPSIS
of a client/lib/*.3 page that names it in its NAME section, and `meson install`
installs a man3 page of its name, that page itself or a ".so man3/PAGE.3"
link to it. Every installed link leads to an installed page.

Every page given (libpressure's and the others) renders without a warning
from groff -ww, as troff and for the terminal, and from man --warnings when
man-db is there.

usage: check-manpages.py SYMFILE BUILD_ROOT PAGE...
Exits 77 when groff is missing."""
import json
import os
import re
import shutil
import subprocess
import sys

if len(sys.argv) < 4:
    sys.exit('usage: check-manpages.py SYMFILE BUILD_ROOT PAGE...')
symfile, build_root, pages = sys.argv[1], sys.argv[2], sys.argv[3:]

if not shutil.which('groff'):
    print('groff is not installed (Debian: groff-base); cannot render the pages')
    sys.exit(77)

failures = []


def fail(msg):
    failures.append(msg)
    print(msg)


def symbols(path):
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    names = set()
    for block in re.finditer(r'global:(.*?)(?:local:|\})', text, flags=re.S):
        names.update(s.strip() for s in block.group(1).split(';') if s.strip())
    return names


def sections(path):
    """The page's lines by .SH section name."""
    out, current = {}, None
    for line in open(path).read().splitlines():
        m = re.match(r'\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            current = m.group(1).strip().upper()
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def name_section(lines):
    """The names before "\\-" in the NAME section."""
    text = ' '.join(l for l in lines if not l.startswith('.'))
    head = text.split('\\-', 1)[0]
    return {n.strip() for n in head.split(',') if n.strip()}


def synopsis_functions(lines):
    """Functions declared in a .B/.BI/.BR line of the SYNOPSIS."""
    found = set()
    for line in lines:
        if re.match(r'\.(B|BI|BR)\s', line):
            found.update(re.findall(r'\b(\w+)\(', line))
    return found


# What each libpressure page documents.
documented = {}  # page file name -> functions both in NAME and SYNOPSIS
for page in pages:
    base = os.path.basename(page)
    if not base.endswith('.3'):
        continue
    secs = sections(page)
    if 'NAME' not in secs or 'SYNOPSIS' not in secs:
        fail(f'{page}: no NAME or SYNOPSIS section')
        continue
    names = name_section(secs['NAME'])
    declared = synopsis_functions(secs['SYNOPSIS'])
    for n in sorted(declared - names):
        if n.startswith('pressure_') and n != 'pressure_event_handler':
            fail(f'{page}: {n} is in the SYNOPSIS but not in NAME')
    documented[base] = names & declared

# What meson install installs into man3: page name -> file installed.
plan = json.load(open(os.path.join(build_root, 'meson-info', 'intro-installed.json')))
man3 = {}
for src, dest in plan.items():
    if os.path.basename(os.path.dirname(dest)) == 'man3' and dest.endswith('.3'):
        man3[os.path.basename(dest)] = src


def target_of(src):
    """The page a ".so" link page sources, or None for a real page."""
    lines = [l for l in open(src).read().splitlines() if l.strip() and not l.startswith('.\\"')]
    if len(lines) == 1:
        m = re.fullmatch(r'\.so\s+man3/(\S+\.3)', lines[0].strip())
        if m:
            return m.group(1)
    return None


for name, src in sorted(man3.items()):
    target = target_of(src)
    if target and target not in man3:
        fail(f'man3/{name} links to {target}, which is not installed')
    if target and target_of(man3.get(target, src)):
        fail(f'man3/{name} links to {target}, itself a link')

syms = symbols(symfile)
if not syms:
    fail(f'{symfile}: no symbols')
for sym in sorted(syms):
    pages_of = [p for p, fns in documented.items() if sym in fns]
    if not pages_of:
        fail(f'{sym}: in no SYNOPSIS (with its name in NAME) of a client/lib/*.3 page')
        continue
    installed = man3.get(sym + '.3')
    if not installed:
        fail(f'{sym}: no man3/{sym}.3 is installed')
        continue
    page = target_of(installed) or os.path.basename(installed)
    if page not in pages_of:
        fail(f'{sym}: man3/{sym}.3 leads to {page}, which does not document it '
             f'(documented in {", ".join(sorted(pages_of))})')

# Rendering.
env = dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80', MANPAGER='cat', PAGER='cat')
renderers = [['groff', '-ww', '-z', '-man'],
             ['groff', '-ww', '-z', '-man', '-Tutf8']]
if shutil.which('man'):
    renderers.append(['man', '--warnings', '-l'])
for page in pages:
    for cmd in renderers:
        r = subprocess.run(cmd + [page], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0 or r.stderr.strip():
            fail(f'{page}: {" ".join(cmd)} (exit {r.returncode}):\n{r.stderr.rstrip()}')

if failures:
    sys.exit(1)
print(f'{len(syms)} symbols documented and installed; '
      f'{len(pages)} pages render without warnings ({len(renderers)} renderers)')
