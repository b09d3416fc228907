#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the build's install paths into a file that names installed files.

The sources (man pages, the commented pressured.conf, the metrics unit
drop-in) name the paths of a distribution package, configured with
--prefix=/usr --sysconfdir=/etc: /etc/pressured, /usr/share/pressured,
/usr/share/doc/pressured and the D-Bus policy in /usr/share/dbus-1/system.d.
meson installs this copy instead, with the directories the build really
installs into, so that a page installed under /usr/local names
/usr/local/etc/pressured. For a package's prefix it is the source unchanged.

usage: install-paths.py --sysconfdir DIR --datadir DIR --dbuspolicydir DIR INPUT OUTPUT
"""
import argparse
import re

POLICY = 'io.pressured.LowMemoryMonitor.conf'


def substitute(text, sysconfdir, datadir, dbuspolicydir):
    """@text with the package paths replaced by the build's (roff's \\- is a '-' too)."""
    rules = [
        (r'/usr/share/dbus(?:-|\\-)1/system\.d/' + re.escape(POLICY), f'{dbuspolicydir}/{POLICY}'),
        (r'/usr/share/doc/pressured(?=/|\b)', f'{datadir}/doc/pressured'),
        (r'/usr/share/pressured(?=/|\b)', f'{datadir}/pressured'),
        (r'/etc/pressured(?=/|\b)', f'{sysconfdir}/pressured'),
    ]
    # One pass over the text, so that a replacement is never rewritten again
    # (datadir /usr/local/share/... contains /share/pressured).
    pattern = re.compile('|'.join(f'({p})' for p, _ in rules))

    def replace(m):
        return rules[m.lastindex - 1][1]
    return pattern.sub(replace, text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sysconfdir', required=True)
    ap.add_argument('--datadir', required=True)
    ap.add_argument('--dbuspolicydir', required=True)
    ap.add_argument('input')
    ap.add_argument('output')
    a = ap.parse_args()
    with open(a.input) as f:
        text = f.read()
    text = substitute(text, a.sysconfdir.rstrip('/'), a.datadir.rstrip('/'), a.dbuspolicydir.rstrip('/'))
    with open(a.output, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
