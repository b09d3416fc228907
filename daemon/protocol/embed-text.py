#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn a text file into a C header defining `static const char NAME[]`."""
import sys

name, src, dst = sys.argv[1:4]
with open(src, encoding='utf-8') as f:
    text = f.read()
lines = [f'/* Generated from {src.rsplit("/", 1)[-1]}; do not edit. */',
         '#pragma once', f'static const char {name}[] =']
for line in text.splitlines(keepends=True):
    esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
    lines.append(f'        "{esc}"')
lines[-1] += ';'
if len(lines) == 3:
    lines.append('        "";')
with open(dst, 'w', encoding='utf-8') as f:
    f.write('\n'.join(lines) + '\n')
