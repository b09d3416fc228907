#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that libpressure.so exports exactly the functions listed in its
version script, each in a LIBPRESSURE_* node: a function missing from the
.so is a broken promise, an extra one is an accidental ABI."""
import re
import subprocess
import sys

if len(sys.argv) != 3:
    sys.exit('usage: check-symbols.py LIBRARY SYMFILE')
library, symfile = sys.argv[1:]

text = open(symfile).read()
text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
listed = set()
for block in re.finditer(r'global:(.*?)(?:local:|\})', text, flags=re.S):
    listed.update(s.strip() for s in block.group(1).split(';') if s.strip())

out = subprocess.run(['nm', '-D', '--defined-only', library], check=True,
                     capture_output=True, text=True).stdout
exported = set()
for line in out.splitlines():
    fields = line.split()
    if len(fields) != 3:
        continue
    name, _, version = fields[2].partition('@')
    if fields[1] == 'A' or name.startswith('LIBPRESSURE_'):
        continue  # the version node itself
    if not version.lstrip('@').startswith('LIBPRESSURE_'):
        print(f'{name}: exported without a LIBPRESSURE version ({fields[2]})')
        sys.exit(1)
    exported.add(name)

missing = sorted(listed - exported)
extra = sorted(exported - listed)
for name in missing:
    print(f'listed in {symfile} but not exported: {name}')
for name in extra:
    print(f'exported but not listed in {symfile}: {name}')
if missing or extra or not listed:
    sys.exit(1)
print(f'{len(exported)} symbols, all listed')
