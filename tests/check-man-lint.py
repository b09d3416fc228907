#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lint every manual page of the project, so that a page that renders
wrong fails here instead of in a reader's terminal:

- `mandoc -T lint -W warning` has nothing to say (a missing date, an
  unknown macro, a broken font escape, a section out of order, ...);
- every .TQ (another tag of the same item) comes right after the tag line
  of a .TP or of another .TQ: a .TQ after plain text merges its tag into
  the paragraph above (pressured.conf(5) printed `MarginLow=` inside the
  `StepDownSec=` paragraph that way), and neither groff nor mandoc warns;
- every .TP is followed by its tag line, not by a request that starts a
  new paragraph (the item would have no tag);
- every page carries the same date in its .TH line, as YYYY-MM-DD: the
  pages are released together.

usage: check-man-lint.py PAGE...   (PAGE: a source page or a page the build
made from one). Every page of the source tree must be among them, so that a
new page is not left out. Exits 77 without mandoc (Debian: mandoc)."""
import glob
import os
import re
import shutil
import subprocess
import sys

# Requests that end an item or start a new paragraph: none of them can be a tag line.
PARAGRAPH = re.compile(r'^\.(TP|TQ|PP|LP|P|IP|HP|SH|SS|RS|RE|in|sp|br|nf|fi)\b')
COMMENT = re.compile(r'^\.\s*\\"|^\'\\"|^\.\s*$')


def structure(page, lines):
    """The .TP/.TQ mistakes of @page (its @lines, comments dropped, with their numbers)."""
    found = []
    for i, (no, line) in enumerate(lines):
        if not line.startswith(('.TP', '.TQ')) or not re.match(r'^\.(TP|TQ)\b', line):
            continue
        tag = lines[i + 1] if i + 1 < len(lines) else None
        if tag is None or PARAGRAPH.match(tag[1]):
            found.append(f'{page}:{no}: {line.split()[0]} without a tag line after it')
        if line.startswith('.TQ'):
            before = lines[i - 2][1] if i >= 2 else ''
            if not re.match(r'^\.(TP|TQ)\b', before) or PARAGRAPH.match(lines[i - 1][1]):
                found.append(f'{page}:{no}: .TQ after {lines[i - 1][1]!r}, which is not the tag line of a '
                             '.TP or .TQ: its tag runs into the paragraph above')
    return found


def main():
    pages = sys.argv[1:]
    if not pages:
        sys.exit('usage: check-man-lint.py PAGE...')
    if not shutil.which('mandoc'):
        print('mandoc is not installed (Debian: mandoc); cannot lint the pages')
        sys.exit(77)
    failures, dates = [], {}
    source = os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..'))
    given = {os.path.realpath(p) for p in pages}
    for d in ('daemon', 'client', 'conf', 'systemd'):
        for page in glob.glob(os.path.join(source, d, '**', '*.[1-8]'), recursive=True):
            if os.path.realpath(page) not in given:
                failures.append(f'{os.path.relpath(page, source)} is a page this test was not given (tests/meson.build)')
    for page in pages:
        with open(page) as f:
            text = f.read()
        lines = [(n, l) for n, l in enumerate(text.splitlines(), 1) if not COMMENT.match(l)]
        failures += structure(page, lines)
        th = next((l for _, l in lines if l.startswith('.TH ')), '')
        fields = re.findall(r'"[^"]*"|\S+', th)
        date = fields[3].strip('"') if len(fields) > 3 else ''
        if not re.fullmatch(r'\d{4}-\d{2}-\d{2}', date):
            failures.append(f'{page}: .TH date {date!r} is not YYYY-MM-DD')
        dates.setdefault(date, []).append(page)
        r = subprocess.run(['mandoc', '-T', 'lint', '-W', 'warning', page], capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or out:
            failures.append(f'{page}: mandoc -T lint -W warning (exit {r.returncode}):\n{out}')
    if len(dates) > 1:
        failures.append('the pages are not all of one date: ' +
                        '; '.join(f'{d or "(none)"}: {len(p)} pages, e.g. {p[0]}' for d, p in sorted(dates.items())))
    for f in failures:
        print(f'FAIL: {f}')
    if failures:
        sys.exit(1)
    print(f'{len(pages)} pages: mandoc lint clean, every .TP and .TQ has its tag, one date')


if __name__ == '__main__':
    main()
