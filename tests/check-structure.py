#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check five rules about the shape of the C sources.

1. No call cycle between files of daemon/ (every .c file under daemon/, in
   any subfolder, is a node). A function defined in one file that calls a
   function defined in another makes an edge between the two files; files
   that reach each other through such edges form a cycle. A lower layer that
   must reach up does so through a function pointer (a callback or an ops
   table), which this check does not see, on purpose.

2. No function in daemon/ or client/ (.c files, recursively) longer than
   80 lines; up to 2 functions named in ALLOW_LONG may have up to 120; none
   may have more. The length is from the line where ctags puts the
   definition to the closing brace, both included.

3. Every quoted #include of a file in daemon/ names a header of its own
   layer or of one below it. The layers, bottom up, are the folders of
   LAYERS, then daemon/ itself (the manager). The build enforces the same
   through include folders; this names the offending line. Below the
   server, the wire stays out: no file of WIRE_FREE includes a header of
   WIRE_HEADERS (a source, the registry and the source choice fail with an
   errno and a SourceFailure, which the server names for the wire).

4. No dead code: every function of daemon/ and client/ that is not static
   is named somewhere in daemon/ or client/ other than its definition and
   its prototypes (a call, or a pointer to it in an ops table). A function
   only the tests call is dead; tests use what the program uses. Exempt:
   main, libpressure's API (defined with _public_), and ALLOW_UNUSED.

5. The protocol's names are written once: generated from the interface
   into vocabulary-idl.h, or in daemon/common/vocabulary.c. No file of
   client/ (.c and .h, recursively) gives a value of one of libpressure's
   named enums (VOCABULARY_ENUMS, as client/lib/pressure.h declares them) a
   string literal ([PRESSURE_LEVEL_LOW] = "low": a name table), nor
   spells an error of io.pressured or org.varlink.service as a literal
   ("io.pressured.NoSuchCgroup": a row of an error-name table).

Definitions and their line ranges come from Universal Ctags, call sites from
cscope. A call site is credited to the function whose lines hold it, and the
callee is resolved the way the linker would: to the calling file's own
definition if it has one (static or not), else to the only non-static
definition in another file. Calls of members (o->fn(), s.fn()) are calls
through pointers, even when a function has the same name. Functions defined
in headers (static inline) are not nodes, and calls made inside macros are
not seen. A macro used at file scope to define functions (such as
DEFINE_STRING_TABLE_LOOKUP) is given to ctags with its #define from daemon/
or client/, so that the functions it defines are known.

Usage: check-structure.py [--root DIR] [--graph] [--list-long]
       check-structure.py --self-test
Exit status: 0 when the rules hold, 1 when one does not (the report says
what to change), 77 when ctags or cscope is missing.
"""
import argparse
import io
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

MAX_LINES = 80          # any function
LONG_MAX_LINES = 120    # the allowed long ones
LIST_LONG_OVER = 60     # --list-long prints those over this

# Functions allowed between 81 and 120 lines, as "path:function" relative to
# the source root, e.g. "daemon/model/config.c:config_key_parse". At most 2, and
# only for a table that reads better long (a switch over every key of a
# configuration file, say), not for a function nobody has split yet.
ALLOW_LONG = ()
MAX_ALLOW_LONG = 2

# Non-static functions allowed without a user in daemon/ or client/, as
# "path:function"; each needs its reason.
ALLOW_UNUSED = (
    # Switches of tests/bench/bench-protection.c: the same results the slow
    # way (what the kernel did before the skip), and the work counted.
    'daemon/model/protection-tree.c:protection_reader_set_list_always',
    'daemon/model/protection-tree.c:protection_reader_get_stats',
    'daemon/model/protection.c:protection_tree_set_always_propagate',
    'daemon/model/protection.c:protection_tree_size',
    # Seams of test-reclaim-controller: a fake memory.reclaim write and
    # clock, and what the controller has under way.
    'daemon/server/reclaim-controller.c:reclaim_controller_set_write_fn',
    'daemon/server/reclaim-controller.c:reclaim_controller_set_clock',
    'daemon/server/reclaim-controller.c:reclaim_controller_in_flight',
    'daemon/server/reclaim-controller.c:reclaim_controller_active',
)

SKIP = 77

# daemon/'s layers, bottom up; daemon/ itself (manager.c, main.c) is on top.
LAYERS = ('common', 'model', 'protocol', 'sources', 'registry', 'server')
# Headers made by the build, and the layer they belong to.
GENERATED_HEADERS = {'io.pressured.varlink.h': 'protocol', 'config-build.h': 'common',
                     'vocabulary-idl.h': 'common'}
# libpressure's enums whose values have protocol names (rule 5).
VOCABULARY_ENUMS = ('pressure_level', 'pressure_stall', 'pressure_vmpressure_mode', 'pressure_source',
                    'pressure_resource', 'pressure_protection_state', 'pressure_reclaim_state',
                    'pressure_event_kind')
INTERFACE_IDL = 'daemon/protocol/io.pressured.varlink'
# org.varlink.service's errors (tests/varlink_idl.py has the interface).
VARLINK_SERVICE_ERRORS = ('InterfaceNotFound', 'MethodNotFound', 'MethodNotImplemented',
                          'InvalidParameter', 'PermissionDenied', 'ExpectedMore')


class Trouble(Exception):
    """A tool failed or gave output this script cannot trust."""


# ---------------------------------------------------------------------------
# Tools

def tools_missing():
    """Why the check cannot run here, or None."""
    for tool, package in (('ctags', 'universal-ctags'), ('cscope', 'cscope')):
        if shutil.which(tool) is None:
            return f'{tool} not found (Debian package {package})'
    out = subprocess.run(['ctags', '--version'], capture_output=True,
                         text=True).stdout
    if 'Universal Ctags' not in out:
        return ('ctags is not Universal Ctags (Debian package '
                'universal-ctags), it gives no end lines')
    return None


def source_files(root, tops):
    """The .c and .h files under root/top for each top, recursively."""
    found = []
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith('.'))
            found += [os.path.join(dirpath, f) for f in sorted(filenames)
                      if f.endswith(('.c', '.h'))]
    return found


def c_files(root, top):
    """The .c files under root/top, as sorted paths relative to root."""
    return sorted(os.path.relpath(p, root) for p in source_files(root, [top])
                  if p.endswith('.c'))


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


# A macro used at file scope that expands to function definitions, such as
# DEFINE_STRING_TABLE_LOOKUP(level, Level), is what ctags cannot read on its
# own: it takes the macro for an old-style definition that runs on into the
# next function. Such macros are handed to ctags with their bodies (-D), so
# that it sees the functions they define.
DEFINE_RE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)(.*)$')
FILE_SCOPE_CALL_RE = re.compile(r'^([A-Z_][A-Z0-9_]*)\s*\(.*\)\s*;?\s*$')


def function_like_macros(root, tops):
    """{name: (params, body)} of the function-like macros in the sources."""
    macros = {}
    for path in source_files(root, tops):
        with open(path, errors='replace') as f:
            text = strip_comments(f.read().replace('\\\n', ' '))
        for line in text.splitlines():
            m = DEFINE_RE.match(line)
            if m:
                macros.setdefault(m.group(1),
                                  (m.group(2).strip(), ' '.join(m.group(3).split())))
    return macros


def ctags_defines(root, files, macros):
    """-D options for the macros used at file scope that define functions."""
    # A macro defines functions if its body has a brace, or uses one that does.
    defining = {n for n, (_, body) in macros.items() if '{' in body}
    grew = True
    while grew:
        grew = False
        for n, (_, body) in macros.items():
            if n not in defining and any(c in defining for c in re.findall(r'\b([A-Za-z_]\w*)\s*\(', body)):
                defining.add(n)
                grew = True
    wanted = set()
    for rel in files:
        with open(os.path.join(root, rel), errors='replace') as f:
            for line in f:
                m = FILE_SCOPE_CALL_RE.match(line)
                if m and m.group(1) in defining:
                    wanted.add(m.group(1))
    # and the macros of that kind their bodies use
    pending = sorted(wanted)
    while pending:
        body = macros[pending.pop()][1]
        for name in re.findall(r'\b([A-Za-z_]\w*)\s*\(', body):
            if name in defining and name not in wanted:
                wanted.add(name)
                pending.append(name)
    return [f'-D{n}({macros[n][0]})={macros[n][1]}' for n in sorted(wanted)]


class Definition:
    __slots__ = ('name', 'path', 'start', 'end', 'static')

    def __init__(self, name, path, start, end, static):
        self.name, self.path = name, path
        self.start, self.end, self.static = start, end, static

    @property
    def length(self):
        return self.end - self.start + 1

    def __repr__(self):
        return f'{self.path}:{self.start}:{self.name}'


def run_ctags(root, files, defines):
    """Function definitions in files, sorted by path and line."""
    if not files:
        return []
    cmd = ['ctags', '--options=NONE', '--language-force=C', '--kinds-C=f',
           '--fields=+ne', '--excmd=number', '--sort=no', '-f', '-']
    r = subprocess.run(cmd + defines + files, cwd=root, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise Trouble(f'ctags failed ({r.returncode}): {r.stderr.strip()}')
    defs = []
    for line in r.stdout.splitlines():
        cols = line.split('\t')
        if len(cols) < 4:
            continue
        fields = dict(c.partition(':')[::2] for c in cols[3:])
        if 'line' not in fields or 'end' not in fields:
            raise Trouble(f'ctags gave no line range: {line}')
        defs.append(Definition(cols[0], cols[1], int(fields['line']),
                               int(fields['end']), 'file' in fields))
    defs.sort(key=lambda d: (d.path, d.start, d.name))
    return defs


def check_macros_read(root, defs):
    """A definition that is a macro used at file scope (NAME(...) alone on
    its line, no type) means ctags misread the file: the range it gives
    runs on into the next function, which it then misses."""
    bad = []
    for d in defs:
        if not re.fullmatch(r'[A-Z_][A-Z0-9_]*', d.name):
            continue
        with open(os.path.join(root, d.path), errors='replace') as f:
            lines = f.read().splitlines()
        m = FILE_SCOPE_CALL_RE.match(lines[d.start - 1] if d.start <= len(lines) else '')
        if m and m.group(1) == d.name:
            bad.append(d)
    if bad:
        raise Trouble('ctags took these macro uses for function definitions, '
                      'so the line ranges after them are wrong (is the macro '
                      'defined under daemon/ or client/?):\n' +
                      '\n'.join(f'  {d.path}:{d.start}: {d.name}' for d in bad))


def run_cscope(root, files, names, tmp, query='3'):
    """{name: [(path, line), ...]}: the sites where each name is called
    (@query 3), or named at all (@query 0)."""
    namefile = os.path.join(tmp, 'files')
    with open(namefile, 'w') as f:
        f.writelines(f'"{p}"\n' for p in files)
    db = os.path.join(tmp, 'cscope.out')
    env = dict(os.environ, TMPDIR=tmp)
    env.pop('CSCOPEOPTIONS', None)
    r = subprocess.run(['cscope', '-b', '-q', '-k', '-i', namefile, '-f', db],
                       cwd=root, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise Trouble(f'cscope -b failed ({r.returncode}): {r.stderr.strip()}')
    # One cscope in line mode answers every query ("3NAME": who calls NAME).
    queries = ''.join(f'{query}{n}\n' for n in names)
    r = subprocess.run(['cscope', '-d', '-l', '-k', '-f', db], cwd=root,
                       input=queries, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise Trouble(f'cscope -d failed ({r.returncode}): {r.stderr.strip()}')
    lines = r.stdout.splitlines()
    sites = {}
    i = 0
    for name in names:
        while i < len(lines):
            # "Unable to search database" is how it says "no calls".
            m = re.match(r'^(?:>> )*(?:cscope: (\d+) lines?|'
                         r'Unable to search database)$', lines[i])
            i += 1
            if m:
                break
        else:
            raise Trouble(f'cscope gave no answer for {name}')
        count = int(m.group(1) or 0)
        found = []
        for line in lines[i:i + count]:
            cols = line.split(' ', 3)
            if len(cols) < 3 or not cols[2].isdigit():
                raise Trouble(f'unexpected cscope line: {line}')
            found.append((cols[0], int(cols[2])))
        if len(found) != count:
            raise Trouble(f'cscope answer for {name} is cut short')
        i += count
        sites[name] = found
    return sites


# ---------------------------------------------------------------------------
# The call graph

def code_only(line):
    """line without string and character literals and comments."""
    line = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', '""', line)
    return re.sub(r'/\*.*?(\*/|$)|//.*', ' ', line)


def is_member_call(text, name):
    """Whether every call of name on this line is o->name( or s.name(."""
    code = code_only(text)
    seen = False
    for m in re.finditer(r'\b' + re.escape(name) + r'\s*\(', code):
        seen = True
        before = code[:m.start()].rstrip()
        if not (before.endswith('->') or before.endswith('.')):
            return False
    return seen


class CallGraph:
    def __init__(self):
        self.defs = []
        self.calls = {}         # (caller Definition, callee Definition) -> sites
        self.warnings = []

    def file_edges(self):
        """{(caller file, callee file): sorted [(caller, callee) names]}."""
        edges = {}
        for (a, b) in self.calls:
            if a.path != b.path:
                edges.setdefault((a.path, b.path), set()).add((a.name, b.name))
        return {k: sorted(v) for k, v in sorted(edges.items())}


def build_call_graph(root, files, defs, tmp):
    g = CallGraph()
    g.defs = defs
    by_path = {}
    for d in defs:
        by_path.setdefault(d.path, []).append(d)
    by_name = {}
    for d in defs:
        by_name.setdefault(d.name, []).append(d)
    names = sorted(by_name)
    sites = run_cscope(root, files, names, tmp)
    texts = {}

    def enclosing(path, line):
        for d in by_path.get(path, ()):
            if d.start <= line <= d.end:
                return d
        return None

    for name in names:
        for path, line in sites.get(name, ()):
            caller = enclosing(path, line)
            if caller is None:
                continue        # outside any function (a macro, say)
            if path not in texts:
                with open(os.path.join(root, path), errors='replace') as f:
                    texts[path] = f.read().splitlines()
            text = texts[path][line - 1] if line <= len(texts[path]) else ''
            if is_member_call(text, name):
                continue        # a call through a pointer
            own = [d for d in by_name[name] if d.path == path]
            if own:
                callee = own[0]
            else:
                public = [d for d in by_name[name] if not d.static]
                if not public:
                    continue    # static elsewhere: not this function
                if len(public) > 1:
                    g.warnings.append(
                        f'{path}:{line}: {name} is defined in ' +
                        ', '.join(sorted({d.path for d in public})) +
                        '; the call is left out of the graph')
                    continue
                callee = public[0]
            g.calls.setdefault((caller, callee), []).append((path, line))
    g.warnings = sorted(set(g.warnings))
    return g


def strongly_connected(nodes, edges):
    """Tarjan's algorithm without recursion. nodes: sorted list; edges:
    {node: sorted successors}. Returns the components, each sorted, in a
    deterministic order."""
    index = {}
    low = {}
    on_stack = set()
    stack = []
    components = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(edges.get(start, ())))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    components.append(sorted(component))
    return sorted(components)


def cycles(graph, files):
    edges = {}
    for (a, b) in graph.file_edges():
        edges.setdefault(a, []).append(b)
    for a in edges:
        edges[a].sort()
    return [c for c in strongly_connected(files, edges) if len(c) > 1]


# ---------------------------------------------------------------------------
# The checks

def check_cycles(graph, files, out):
    bad = cycles(graph, files)
    if not bad:
        return True
    file_edges = graph.file_edges()
    for comp in bad:
        members = set(comp)
        print(f'Call cycle between {len(comp)} files of daemon/ (each reaches '
              'every other through direct calls):', file=out)
        for f in comp:
            print(f'  {f}', file=out)
        print('Calls inside the cycle (caller -> callee); turn one direction '
              'into a callback, or move the function, to break it:', file=out)
        for (a, b), pairs in file_edges.items():
            if a in members and b in members:
                print(f'  {a} -> {b}', file=out)
                for caller, callee in pairs:
                    print(f'      {caller} -> {callee}', file=out)
    return False


def is_declaration(text, name):
    """Whether the line is a prototype of name (ends in ';', no body)."""
    code = code_only(text)
    return re.match(r'^\s*(?!(?:return|else|case|do)\b)(?:extern\s+)?[A-Za-z_][\w\s*]*\b' + re.escape(name) +
                    r'\s*\([^;{]*\)[\w\s()]*;\s*$', code) is not None


def check_unused(root, files, defs, tmp, out, allow=None):
    """Rule 4: every non-static function is named outside its definition."""
    allow = ALLOW_UNUSED if allow is None else allow
    candidates = []
    for d in defs:
        if d.static or d.name == 'main' or f'{d.path}:{d.name}' in allow:
            continue
        with open(os.path.join(root, d.path), errors='replace') as f:
            lines = f.read().splitlines()
        head = ' '.join(lines[max(0, d.start - 3):d.start])
        if '_public_' in head:
            continue
        candidates.append(d)
    # Headers too: a macro there may be what calls a function (log.h's log_internal).
    headers = sorted(os.path.relpath(p, root) for p in source_files(root, ['daemon', 'client'])
                     if p.endswith('.h'))
    sites = run_cscope(root, files + headers, sorted({d.name for d in candidates}), tmp, query='0')
    texts = {}
    unused = []
    for d in candidates:
        used = False
        for path, line in sites.get(d.name, ()):
            if path == d.path and d.start <= line <= d.start + 2:
                continue        # the definition itself
            if path not in texts:
                with open(os.path.join(root, path), errors='replace') as f:
                    texts[path] = f.read().splitlines()
            lines = texts[path]
            text = lines[line - 1] if line <= len(lines) else ''
            if path.endswith('.h'):
                # A header uses a function only in a macro (its prototypes
                # may span lines).
                in_macro = text.lstrip().startswith('#') or text.rstrip().endswith('\\') or \
                    (line >= 2 and lines[line - 2].rstrip().endswith('\\'))
                if in_macro:
                    used = True
                    break
            elif not is_declaration(text, d.name):
                used = True
                break
        if not used:
            unused.append(d)
    if not unused:
        return True
    print('Functions nothing in daemon/ or client/ uses (remove them, give them '
          'a user, or name them with a reason in ALLOW_UNUSED of '
          'tests/check-structure.py):', file=out)
    for d in unused:
        print(f'  {d.path}:{d.start}: {d.name}', file=out)
    return False


def check_lengths(defs, out, allow=None):
    allow = ALLOW_LONG if allow is None else allow
    ok = True
    if len(allow) > MAX_ALLOW_LONG:
        print(f'ALLOW_LONG names {len(allow)} functions; at most '
              f'{MAX_ALLOW_LONG} may be longer than {MAX_LINES} lines.', file=out)
        ok = False
    too_long = []
    allowed_used = set()
    for d in defs:
        key = f'{d.path}:{d.name}'
        if d.length > LONG_MAX_LINES:
            too_long.append((d, f'over {LONG_MAX_LINES}'))
        elif d.length > MAX_LINES:
            if key in allow:
                allowed_used.add(key)
            else:
                too_long.append((d, f'over {MAX_LINES}'))
    if too_long:
        ok = False
        print(f'Functions too long (at most {MAX_LINES} lines; up to '
              f'{LONG_MAX_LINES} for at most {MAX_ALLOW_LONG} listed in '
              'ALLOW_LONG of tests/check-structure.py):', file=out)
        for d, why in sorted(too_long, key=lambda t: (-t[0].length, t[0].path,
                                                       t[0].start)):
            print(f'  {d.path}:{d.start}: {d.name}: {d.length} lines ({why})',
                  file=out)
    for key in sorted(set(allow) - allowed_used):
        print(f'note: ALLOW_LONG lists {key}, which is not a function of '
              f'{MAX_LINES + 1} to {LONG_MAX_LINES} lines; drop it.', file=out)
    return ok


def print_graph(graph, out):
    edges = graph.file_edges()
    print(f'File-level call graph of daemon/ ({len(edges)} edges; the count '
          'is the number of distinct caller -> callee functions):', file=out)
    width = max((len(a) for a, _ in edges), default=0)
    for (a, b), pairs in edges.items():
        print(f'  {a:<{width}} -> {b}  {len(pairs)}', file=out)


def print_long(defs, out):
    long_defs = sorted((d for d in defs if d.length > LIST_LONG_OVER),
                       key=lambda d: (-d.length, d.path, d.start))
    print(f'Functions over {LIST_LONG_OVER} lines ({len(long_defs)}):', file=out)
    for d in long_defs:
        print(f'  {d.length:4}  {d.path}:{d.start}: {d.name}', file=out)


def layer_rank(layer):
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def layer_of(rel):
    """The layer of a path relative to daemon/: its folder, or '' on top."""
    head = rel.split('/', 1)[0]
    return head if '/' in rel and head in LAYERS else ''


# Layers that fail in types and the protocol headers that would name the wire for them.
WIRE_FREE = ('common', 'model', 'sources', 'registry')
WIRE_HEADERS = ('varlink-error.h', 'subscribe.h')


def check_includes(root, out):
    """Rule 3. Returns True when every quoted include points down or across."""
    daemon = os.path.join(root, 'daemon')
    headers = {}
    for dirpath, _, names in os.walk(daemon):
        for n in names:
            if n.endswith('.h'):
                rel = os.path.relpath(os.path.join(dirpath, n), daemon)
                headers.setdefault(n, layer_of(rel))
    headers.update(GENERATED_HEADERS)
    bad = []
    for dirpath, _, names in os.walk(daemon):
        for n in sorted(names):
            if not n.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, daemon)
            mine = layer_of(rel)
            with open(path, errors='replace') as f:
                for lineno, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if m and mine in WIRE_FREE and os.path.basename(m.group(1)) in WIRE_HEADERS:
                        bad.append(f'  daemon/{rel}:{lineno}: includes {m.group(1)}, the wire, in {mine}/ '
                                   f'(fail with a SourceFailure; the server names it)')
                        continue
                    if not m or os.path.basename(m.group(1)) not in headers:
                        continue
                    theirs = headers[os.path.basename(m.group(1))]
                    if layer_rank(theirs) > layer_rank(mine):
                        bad.append(f'  daemon/{rel}:{lineno}: includes {m.group(1)} of '
                                   f'{theirs or "the top (daemon/)"}, above {mine or "the top"}')
    if bad:
        print('Includes that reach up a layer (a lower layer takes a callback instead):', file=out)
        for b in bad:
            print(b, file=out)
    return not bad


def vocabulary_constants(root):
    """The constants of VOCABULARY_ENUMS in client/lib/pressure.h."""
    path = os.path.join(root, 'client', 'lib', 'pressure.h')
    if not os.path.exists(path):
        return set()
    with open(path, errors='replace') as f:
        text = strip_comments(f.read())
    names = set()
    for m in re.finditer(r'typedef\s+enum\s+(\w+)\s*\{([^}]*)\}', text):
        if m.group(1) in VOCABULARY_ENUMS:
            names.update(re.findall(r'\b(PRESSURE_[A-Z0-9_]+)\b', m.group(2)))
    return names


def interface_errors(root):
    """The full names of the errors of io.pressured (from its IDL) and org.varlink.service."""
    errors = {f'org.varlink.service.{e}' for e in VARLINK_SERVICE_ERRORS}
    path = os.path.join(root, INTERFACE_IDL)
    if os.path.exists(path):
        with open(path, errors='replace') as f:
            text = re.sub(r'#[^\n]*', '', f.read())
        iface = re.search(r'\binterface\s+([\w.]+)', text)
        if iface:
            errors.update(f'{iface.group(1)}.{e}' for e in re.findall(r'^\s*error\s+(\w+)', text, re.M))
    return errors


def check_vocabulary(root, out):
    """Rule 5. Returns True when client/ spells no protocol name of its own."""
    constants = vocabulary_constants(root)
    errors = interface_errors(root)
    bad = []
    for path in source_files(root, ['client']):
        rel = os.path.relpath(path, root)
        with open(path, errors='replace') as f:
            for lineno, line in enumerate(strip_comments(f.read()).splitlines(), 1):
                for m in re.finditer(r'\[\s*(PRESSURE_[A-Z0-9_]+)\s*\]\s*=\s*"([^"]*)"', line):
                    if m.group(1) in constants:
                        bad.append(f'  {rel}:{lineno}: [{m.group(1)}] = "{m.group(2)}": a name table')
                for m in re.finditer(r'"([^"\\]*)"', line):
                    if m.group(1) in errors:
                        bad.append(f'  {rel}:{lineno}: "{m.group(1)}": an error name')
    if bad:
        print('Protocol names written again in client/ (take them from vocabulary.h: '
              'IDL_*_NAME(), the idl_*_table and voc_*_table arrays, NAME_REF()):', file=out)
        for b in bad:
            print(b, file=out)
    return not bad


def check(root, graph_out=False, list_long=False, out=sys.stdout, allow=None):
    """Run both checks on root. Returns 0 or 1; raises Trouble."""
    daemon_files = c_files(root, 'daemon')
    all_files = daemon_files + c_files(root, 'client')
    if not daemon_files:
        raise Trouble(f'no .c files under {os.path.join(root, "daemon")}')
    macros = function_like_macros(root, ['daemon', 'client'])
    defs = run_ctags(root, all_files, ctags_defines(root, all_files, macros))
    check_macros_read(root, defs)
    daemon_set = set(daemon_files)
    daemon_defs = [d for d in defs if d.path in daemon_set]
    with tempfile.TemporaryDirectory(prefix='check-structure.') as tmp:
        graph = build_call_graph(root, daemon_files, daemon_defs, tmp)
    with tempfile.TemporaryDirectory(prefix='check-structure.') as tmp:
        used = check_unused(root, all_files, defs, tmp, out)
    for w in graph.warnings:
        print(f'warning: {w}', file=out)
    if graph_out:
        print_graph(graph, out)
    if list_long:
        print_long(defs, out)
    ok = check_cycles(graph, daemon_files, out)
    ok = check_lengths(defs, out, allow) and ok
    ok = check_includes(root, out) and ok
    ok = check_vocabulary(root, out) and ok
    ok = used and ok
    if ok:
        print(f'structure: no call cycle between the {len(daemon_files)} files '
              f'of daemon/; no function over {MAX_LINES} lines in '
              f'{len(all_files)} files of daemon/ and client/; no include '
              f'reaching up a layer; no function without a user; no protocol name '
              f'written again in client/', file=out)
    return 0 if ok else 1


# ---------------------------------------------------------------------------
# Self-test: small trees with known answers.

def body(n, first='return 0;'):
    """Statements that make a function of n lines in all."""
    return '\n'.join([f'        {first}'] + ['        ;'] * (n - 3))


FIXTURE_CYCLE = {
    # a/x.c -> b/y.c -> a/x.c
    'daemon/a/x.c': '''
        int y_entry(int n);
        int x_entry(int n) {
                return n > 0 ? y_entry(n - 1) : 0;
        }
    ''',
    'daemon/b/y.c': '''
        int x_entry(int n);
        int y_entry(int n) {
                return x_entry(n);
        }
    ''',
}

FIXTURE_CLEAN = {
    # q.c calls p.c, r.c calls q.c, and p.c calls nothing outside: both p.c
    # and q.c have a static helper(), p.c has a static shared() and q.c a
    # public one, and p.c calls q_entry() only through pointers.
    'daemon/p.c': '''
        struct ops { int (*q_entry)(void); };
        static int helper(void) {
                return 1;
        }
        static int shared(void) {
                return 2;
        }
        int p_entry(void) {
                return helper() + shared();
        }
        int p_callback(struct ops *o, struct ops s) {
                return o->q_entry() + s.q_entry();
        }
    ''',
    'daemon/sub/q.c': '''
        int p_entry(void);
        static int helper(void) {
                return p_entry();
        }
        int shared(void) {
                return 3;
        }
        int q_entry(void) {
                return helper();
        }
    ''',
    'daemon/sub/r.c': '''
        int shared(void);
        int r_entry(void) {
                return shared();
        }
    ''',
    'daemon/t.c': '''
        #define DEFINE_TO_STRING(name) \\
                const char *name##_to_string(int i) { \\
                        return i ? "yes" : "no"; \\
                }
        DEFINE_TO_STRING(flag)
        int t_entry(void) {
                return 0;
        }
    ''',
    'client/short.c': 'int short_fn(void) {\n' + body(80) + '\n}\n',
    # Every function above has a user: a call, or a pointer in a table.
    'daemon/ops.c': '''
        int ops_fn(void) {
                return 0;
        }
    ''',
    'daemon/main.c': '''
        struct ops;
        int r_entry(void);
        int t_entry(void);
        int ops_fn(void);
        int short_fn(void);
        int p_callback(struct ops *o, struct ops s);
        const char *flag_to_string(int i);
        static int (*const table[])(void) = { ops_fn };
        int main(void) {
                return r_entry() + t_entry() + short_fn() + table[0]() + (flag_to_string(0) != 0) +
                       (p_callback != 0);
        }
    ''',
}


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(textwrap.dedent(text).lstrip('\n'))


def self_test():
    failures = []

    def expect(cond, what):
        print(('ok      ' if cond else 'FAILED  ') + what)
        if not cond:
            failures.append(what)

    # Tarjan on a graph with two cycles, a tail, and a long chain that would
    # overflow a recursive version.
    g = {'a': ['b'], 'b': ['c'], 'c': ['a', 'd'], 'd': ['e'], 'e': ['d'],
         'f': ['a']}
    chain = {f'n{i:05}': [f'n{i + 1:05}'] for i in range(20000)}
    chain['n20000'] = ['n00000']
    comps = strongly_connected(sorted(set(g) | {'g'}), g)
    expect(comps == [['a', 'b', 'c'], ['d', 'e'], ['f'], ['g']],
           f'strongly_connected finds a-b-c and d-e: {comps}')
    comps = strongly_connected(sorted(chain), chain)
    expect(len(comps) == 1 and len(comps[0]) == 20001,
           'strongly_connected handles a cycle of 20001 nodes')

    with tempfile.TemporaryDirectory(prefix='check-structure-test.') as tmp:
        clean = os.path.join(tmp, 'clean')
        write_tree(clean, FIXTURE_CLEAN)
        r = subprocess.run([sys.executable, __file__, '--root', clean,
                            '--graph'], capture_output=True, text=True)
        print(textwrap.indent(r.stdout + r.stderr, '    | '), end='')
        expect(r.returncode == 0, 'clean tree passes (static namesakes, calls '
               'through pointers, a function defined by a macro, an 80-line '
               'function)')
        expect('daemon/sub/q.c -> daemon/p.c  1' in r.stdout,
               'graph shows q.c -> p.c (helper -> p_entry)')
        expect('daemon/sub/r.c -> daemon/sub/q.c  1' in r.stdout,
               'graph shows r.c -> q.c (r_entry -> the public shared)')
        expect('daemon/p.c ->' not in r.stdout,
               'graph has no edge from p.c (its own static helper() and '
               'shared(); o->q_entry() and s.q_entry() are through pointers)')

        bad = os.path.join(tmp, 'bad')
        files = dict(FIXTURE_CYCLE, **FIXTURE_CLEAN)
        # Named only by a prototype elsewhere: dead.
        files['daemon/dead.c'] = 'int dead_fn(void) {\n        return 0;\n}\n'
        files['daemon/sub/r.c'] = FIXTURE_CLEAN['daemon/sub/r.c'] + '        int dead_fn(void);\n'
        files['client/long.c'] = (
            'int long_fn(void) {\n' + body(130) + '\n}\n\n'
            'int longish_fn(void) {\n' + body(95) + '\n}\n\n'
            'static int short_one(void) {\n' + body(61) + '\n}\n')
        write_tree(bad, files)
        r = subprocess.run([sys.executable, __file__, '--root', bad,
                            '--list-long'], capture_output=True, text=True)
        print(textwrap.indent(r.stdout + r.stderr, '    | '), end='')
        out = r.stdout
        expect(r.returncode == 1, 'bad tree fails with status 1')
        expect('Call cycle between 2 files' in out and
               '  daemon/a/x.c\n  daemon/b/y.c\n' in out,
               'the cycle a/x.c <-> b/y.c is reported')
        expect('      x_entry -> y_entry' in out and
               '      y_entry -> x_entry' in out,
               'the calls inside the cycle are named')
        expect(out.count('Call cycle') == 1, 'no other cycle (p.c, q.c)')
        expect('client/long.c:1: long_fn: 130 lines (over 120)' in out,
               'the 130-line function is reported')
        expect('client/long.c:132: longish_fn: 95 lines (over 80)' in out,
               'the 95-line function is reported')
        expect('short_fn: 80 lines' not in out.split('Functions too long')[-1],
               'the 80-line function is not')
        expect('  61  client/long.c:228: short_one' in out,
               '--list-long lists the 61-line function')
        unused = out.split('Functions nothing in daemon/ or client/ uses')[-1].split('\n')[1:]
        unused = '\n'.join(itertools.takewhile(lambda line: line.startswith('  '), unused))
        expect('daemon/dead.c:1: dead_fn' in unused,
               'a function named only by a prototype is reported as unused')
        expect('ops_fn' not in unused and 'short_fn' not in unused and 'main' not in unused,
               'a pointer in a table and a call are uses; main needs none')

        # ALLOW_LONG lets a listed function of 81 to 120 lines through, not
        # one over 120, and not more than two names.
        macros = function_like_macros(bad, ['daemon', 'client'])
        defs = run_ctags(bad, c_files(bad, 'client'), [])
        with open(os.devnull, 'w') as devnull:
            with_long_fn = check_lengths(defs, devnull,
                                         ('client/long.c:longish_fn',))
            without = check_lengths([d for d in defs if d.name != 'long_fn'],
                                    devnull, ('client/long.c:longish_fn',))
            three = check_lengths([d for d in defs if d.length <= 80], devnull,
                                  ('a:x', 'b:y', 'c:z'))
        expect(without and not with_long_fn,
               'ALLOW_LONG admits longish_fn (95) but not long_fn (130)')
        expect(not three, 'ALLOW_LONG with three names is refused')
        expect('DEFINE_TO_STRING' in macros, 'function-defining macros found')

        layered = os.path.join(tmp, 'layered')
        write_tree(layered, {
            'daemon/common/base.h': '#pragma once\n',
            'daemon/server/srv.h': '#pragma once\n#include "base.h"\n',
            'daemon/common/base.c': '#include "base.h"\n#include "srv.h"\nint f(void) { return 0; }\n',
            'daemon/manager.h': '#pragma once\n#include "srv.h"\n',
        })
        with open(os.devnull, 'w') as devnull:
            up = check_includes(layered, devnull)
        os.remove(os.path.join(layered, 'daemon/common/base.c'))
        with open(os.devnull, 'w') as devnull:
            down = check_includes(layered, devnull)
        expect(not up and down, 'an include from common/ of a server/ header is flagged; '
               'server/ including common/ and the top including server/ are not')

        words = os.path.join(tmp, 'words')
        write_tree(words, {
            INTERFACE_IDL: """
                interface io.pressured
                # error NotAnError (x: int)
                error NoSuchCgroup (cgroup: string)
                """,
            'client/lib/pressure.h': """
                typedef enum pressure_level { PRESSURE_LEVEL_NONE = 0, PRESSURE_LEVEL_LOW } pressure_level;
                typedef enum pressure_memory_event { PRESSURE_MEMORY_EVENT_LOW = 0 } pressure_memory_event;
                """,
            'client/pressurectl/names.c': """
                static const char *const level_names[] = {
                        [PRESSURE_LEVEL_LOW] = "low",
                };
                static const char *const keys[] = { [PRESSURE_MEMORY_EVENT_LOW] = "low" };
                static const char *e = "io.pressured.NoSuchCgroup";
                static const char *m = "io.pressured.GetStatus";
                static const char *v = "org.varlink.service.ExpectedMore";
                static const char *n = "io.pressured.NotAnError";
                """,
        })
        buf = io.StringIO()
        dirty = check_vocabulary(words, buf)
        report = buf.getvalue()
        os.remove(os.path.join(words, 'client/pressurectl/names.c'))
        with open(os.devnull, 'w') as devnull:
            clean = check_vocabulary(words, devnull)
        expect(not dirty and clean and
               'client/pressurectl/names.c:2: [PRESSURE_LEVEL_LOW] = "low": a name table' in report and
               'client/pressurectl/names.c:5: "io.pressured.NoSuchCgroup": an error name' in report and
               'client/pressurectl/names.c:7: "org.varlink.service.ExpectedMore": an error name' in report and
               report.count('\n  ') == 3,
               'a name table of a public enum and error names in client/ are flagged; a table of '
               'another enum, a method name and an undeclared error are not')

        wire = os.path.join(tmp, 'wire')
        write_tree(wire, {
            'daemon/protocol/varlink-error.h': '#pragma once\n',
            'daemon/protocol/subscribe.h': '#pragma once\n',
            'daemon/server/methods.c': '#include "varlink-error.h"\n#include "subscribe.h"\n',
            'daemon/sources/source.c': '#include "varlink-error.h"\n',
            'daemon/registry/registration.h': '#pragma once\n#include "subscribe.h"\n',
        })
        with open(os.devnull, 'w') as devnull:
            both = check_includes(wire, devnull)
        os.remove(os.path.join(wire, 'daemon/sources/source.c'))
        with open(os.devnull, 'w') as devnull:
            registry = check_includes(wire, devnull)
        os.remove(os.path.join(wire, 'daemon/registry/registration.h'))
        with open(os.devnull, 'w') as devnull:
            server = check_includes(wire, devnull)
        expect(not both and not registry and server,
               'sources/ including varlink-error.h and registry/ including subscribe.h are flagged '
               '(though protocol/ is below them); server/ including both is not')

    print(f'self-test: {"FAILED" if failures else "passed"}')
    return 1 if failures else 0


# ---------------------------------------------------------------------------

def default_root():
    env = os.environ.get('PRESSURED_SOURCE_ROOT')
    if env:
        return env
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(
        description='Check that daemon/ has no call cycle between files and '
                    'that no function in daemon/ or client/ is too long.')
    p.add_argument('--root', help='source root (default: $PRESSURED_SOURCE_ROOT '
                   'or the directory above this script)')
    p.add_argument('--graph', action='store_true',
                   help='print the file-level call graph of daemon/')
    p.add_argument('--list-long', action='store_true',
                   help=f'print every function over {LIST_LONG_OVER} lines')
    p.add_argument('--self-test', action='store_true',
                   help='check this script on small trees with known answers')
    args = p.parse_args()

    why = tools_missing()
    if why:
        print(f'SKIP: {why}')
        return SKIP
    try:
        if args.self_test:
            return self_test()
        return check(os.path.abspath(args.root or default_root()),
                     args.graph, args.list_long)
    except Trouble as e:
        print(f'check-structure: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
