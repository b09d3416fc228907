#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check rules about the shape of the sources.

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
   through include folders; this names the offending line. Below
   protocol/, JSON stays out too: no file of WIRE_FREE includes a header
   of JSON_HEADERS (<jansson.h>), so sources and the registry report typed
   events and fail with an errno and a SourceFailure, and only protocol/
   turns either into JSON or a varlink error.

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

6. The Python module (client/python/pressured, read with ast) spells no
   name that io.pressured.varlink (or org.varlink.service) does not
   declare: the fields of each class made by _record or _event against
   the type or method reply of its name, member names in dict displays,
   subscripts, get() and "in", strings compared with an enum attribute,
   the kinds given to _event(), and full method and error names. Its
   enums and errors come from the generated pressured/_vocabulary.py.
   Exempt: the module's own names (PYTHON_OWN) and the 0.4 contract's
   names the interface does not declare yet (PYTHON_PENDING; one the
   interface declares is reported, to come off the list).

7. Every JSON member name that the C code of JSON_DIRS writes as a
   literal (the key of json_object_get/set/del, of json_pack and
   json_unpack formats, and of the functions that pass a parameter on as
   one: event.c's set(), libpressure's get_u64(), pressurectl's
   jget_str() and so on, found by the check) is a field the interface
   declares, a member of varlink's messages, or one JSON_ALLOWED lists for
   its file with why (pressurectl's own --json documents, libpressure's
   local error); an allowance its file no longer uses is reported. The names are not
   generated as constants: a check keeps the hundreds of call sites
   readable and still fails the build on a name the interface lacks.

9. No function name is defined both in daemon/ and in client/ (.c and .h
   files, recursively; main aside): a function both sides need is written
   once, in daemon/common/, which libpressure and pressurectl link; two
   functions that do different things have names that say which. A
   name given twice within one side (static helpers of the same name in
   two files) is not this rule's business.

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
import ast
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
    # The table-driven encoder and decoder of the generated bindings: the
    # events, the replies and libpressure are to move onto them; until then
    # test-wire (on every golden message too) and fuzz-wire are their
    # users. Each comes off this list with its first caller.
    'daemon/protocol/wire.c:wire_writer_done',
    'daemon/protocol/wire.c:wire_writer_take',
    'daemon/protocol/wire.c:wire_write_object',
    'daemon/protocol/wire.c:wire_write_members',
    'daemon/protocol/wire.c:wire_write_reply',
    'daemon/protocol/wire.c:wire_write_error',
    'daemon/protocol/wire.c:wire_decode',
    'daemon/protocol/wire.c:wire_decode_done',
)

SKIP = 77

# daemon/'s layers, bottom up; daemon/ itself (manager.c, main.c) is on top.
LAYERS = ('common', 'model', 'sources', 'registry', 'protocol', 'server')
# Headers made by the build, and the layer they belong to.
GENERATED_HEADERS = {'io.pressured.varlink.h': 'protocol', 'io.systemd.oom.Prekill.varlink.h': 'protocol',
                     'io.systemd.Metrics.varlink.h': 'protocol',
                     'idl-types.h': 'protocol',
                     'config-build.h': 'common',
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


def check_shared_names(root, defs, out):
    """Rule 9: no function name defined in both daemon/ and client/ (main
    aside). @defs are those of the .c files; the headers' are read here."""
    headers = sorted(os.path.relpath(p, root) for p in source_files(root, ['daemon', 'client'])
                     if p.endswith('.h'))
    macros = function_like_macros(root, ['daemon', 'client'])
    where = {}
    for d in defs + run_ctags(root, headers, ctags_defines(root, headers, macros)):
        where.setdefault(d.name, {}).setdefault(d.path.split('/')[0], []).append(d)
    twice = sorted(n for n, sides in where.items() if len(sides) == 2 and n != 'main')
    if not twice:
        return True
    print('Functions of the same name in daemon/ and client/ (one both need goes into daemon/common/, '
          'which libpressure and pressurectl link; two that differ get names that say what each does):',
          file=out)
    for n in twice:
        places = ', '.join(f'{d.path}:{d.start}' for side in ('daemon', 'client') for d in where[n][side])
        print(f'  {n}: {places}', file=out)
    return False


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


# The layers below protocol/, which know no JSON, and the headers that would bring it.
WIRE_FREE = LAYERS[:LAYERS.index('protocol')]
JSON_HEADERS = ('jansson.h',)


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
                    j = re.match(r'\s*#\s*include\s+[<"]([^>"]+)[>"]', line)
                    if j and mine in WIRE_FREE and os.path.basename(j.group(1)) in JSON_HEADERS:
                        bad.append(f'  daemon/{rel}:{lineno}: includes {j.group(1)} in {mine}/, below protocol/ '
                                   f'(report a typed event or a SourceFailure; protocol/ writes the JSON)')
                        continue
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
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


# ---------------------------------------------------------------------------
# Rule 6: the Python module spells no protocol name the interface lacks.

PYTHON_PACKAGE = 'client/python/pressured'
# The members of a varlink message itself, around the interface's fields.
VARLINK_MEMBERS = ('method', 'parameters', 'more', 'oneway', 'upgrade', 'continues', 'error')
# Keys the module uses that are not members of a message: the units of
# PsiTrigger.parse() ("150ms"), the metadata of its dataclass fields, and a
# class's annotations.
PYTHON_NOT_MEMBERS = ('us', 'ms', 's', 'convert', '__annotations__')
# Attributes of the module's objects that hold a value of an enum of the
# interface: a string compared with one must be one of its values. Not
# "state": the module's own streams have a state of their own.
PYTHON_ENUM_ATTRIBUTES = ('level', 'peak_level', 'kind', 'source', 'resource', 'stall', 'mode', 'previous')
# Classes of the module named otherwise than the type they read: the
# method whose reply they are.
PYTHON_REPLY_CLASSES = {'Status': 'io.pressured.GetStatus', 'Protection': 'io.pressured.GetProtection',
                        'Headroom': 'io.pressured.GetHeadroom', 'Info': 'org.varlink.service.GetInfo'}
# The module's own names, never on the wire: ReconnectedEvent (kind
# "reconnected", with "attempts") that a subscription makes when it
# connected again by itself, LevelWatch's "reconnected" flag, the base
# Event and UnknownEvent for a kind the module does not know.
PYTHON_OWN = {'field': {'attempts', 'reconnected'}, 'kind': {'reconnected'},
              'type': {'Event', 'ReconnectedEvent', 'UnknownEvent'}}
# Names of the 0.4 contract (CONTRACT.md section 9: the level stream and
# GetHeadroom) that the module has and io.pressured.varlink does not
# declare yet. The check fails once the interface declares one: then it
# comes off this list, and from then on only the interface vouches for it.
PYTHON_PENDING = {}


def load_varlink_idl():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import varlink_idl
    return varlink_idl


class Vocabulary:
    """What the interface and org.varlink.service declare, by what it is."""

    def __init__(self, root):
        idl = load_varlink_idl()
        with open(os.path.join(root, INTERFACE_IDL), errors='replace') as f:
            ifaces = [idl.parse(f.read()), idl.parse(idl.ORG_VARLINK_SERVICE)]
        self.structs = {}   # type name or full method name -> its fields
        self.values = {}    # field name -> the values of its enums
        for i in ifaces:
            named = [(n, t) for n, t in i.types.items() if t[0] == 'struct']
            named += [(f'{i.name}.{n}', out) for n, (inp, out) in i.methods.items()]
            named += [(f'{i.name}.{n}()', inp) for n, (inp, out) in i.methods.items()]
            named += [(f'{i.name}.{n}', st) for n, st in i.errors.items()]
            for name, st in named:
                self.structs[name] = st[1]
                for field, t in st[1].items():
                    while t[0] == 'optional':
                        t = t[1]
                    if t[0] == 'enum':
                        self.values.setdefault(field, set()).update(t[1])
        self.names = {'field': {f for st in self.structs.values() for f in st},
                      'kind': {k for n, st in self.structs.items() if n.endswith('Event')
                               for k in st.get('kind', ('', ()))[1]},
                      'value': {v for vs in self.values.values() for v in vs},
                      'method': {f'{i.name}.{n}' for i in ifaces for n in i.methods},
                      'error': {f'{i.name}.{n}' for i in ifaces for n in i.errors},
                      'type': {n for n in self.structs if '.' not in n}}

    def allows(self, what, name, values=None):
        known = values if values is not None else self.names[what]
        return name in known or name in PYTHON_OWN.get(what, ()) or name in PYTHON_PENDING.get(what, ())

    def stale(self):
        """The pending names the interface declares now."""
        return sorted(f'{what} "{n}"' for what, names in PYTHON_PENDING.items()
                      for n in names if n in self.names[what] or
                      (what == 'type' and PYTHON_REPLY_CLASSES.get(n) in self.structs))


def python_class_fields(voc, cls):
    """The fields the interface declares for the module's class @cls, or
    None where it declares none (the module's own or a pending class)."""
    if cls.name == 'Event':
        events = [set(st) for n, st in voc.structs.items() if n.endswith('Event')]
        return set.intersection(*events) if events else set()
    st = voc.structs.get(PYTHON_REPLY_CLASSES.get(cls.name, cls.name))
    return set(st) if st is not None else None


def python_records(tree):
    """The module's classes that read a type of the wire (made by _record or _event)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            decos = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            if any(isinstance(d, ast.Name) and d.id in ('_record', '_event') for d in decos):
                yield node


def python_record_names(voc, tree, bad):
    for cls in python_records(tree):
        declared = python_class_fields(voc, cls)
        if declared is None and not voc.allows('type', cls.name):
            bad(cls, cls.name, 'a class named after no type or method of the interface')
        for st in cls.body:
            if not isinstance(st, ast.AnnAssign) or not isinstance(st.target, ast.Name):
                continue
            name = st.target.id
            if name == 'raw' or 'ClassVar' in ast.unparse(st.annotation):
                continue
            if declared is not None and name not in declared and name not in PYTHON_OWN['field']:
                bad(st, name, f'a field {cls.name} does not have in the interface')
            elif declared is None and not voc.allows('field', name):
                bad(st, name, 'a field the interface does not declare')


def python_keys(node):
    """The string constants @node uses as member names of a message: keys of
    a dict display, subscripts, d.get(KEY) (not os.environ's) and KEY in d."""
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    if isinstance(node, ast.Subscript):
        return [node.slice]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'get'
            and node.args and 'environ' not in ast.unparse(node.func.value)):
        return node.args[:1]
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        return [node.left]
    return []


def python_enum_values(node):
    """(attribute, string constant) of a comparison of an enum attribute with a string."""
    if not isinstance(node, ast.Compare) or not isinstance(node.left, ast.Attribute):
        return []
    if node.left.attr not in PYTHON_ENUM_ATTRIBUTES:
        return []
    out = []
    for c in node.comparators:
        for e in (c.elts if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else [c]):
            out.append((node.left.attr, e))
    return out


def is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def python_spelled_names(voc, tree, bad):
    qualified = re.compile(r'(io\.pressured|org\.varlink\.service)\.\w+')
    for node in ast.walk(tree):
        for k in python_keys(node):
            if (is_str(k) and k.value not in VARLINK_MEMBERS + PYTHON_NOT_MEMBERS
                    and not voc.allows('field', k.value)):
                bad(k, k.value, 'a member name the interface does not declare')
        for attr, v in python_enum_values(node):
            known = voc.names['kind'] if attr == 'kind' else voc.values.get(attr, set())
            if is_str(v) and not voc.allows('kind' if attr == 'kind' else 'value', v.value, known):
                bad(v, v.value, f'a value of "{attr}" the interface does not declare')
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == '_event'
                and node.args and is_str(node.args[0]) and not voc.allows('kind', node.args[0].value)):
            bad(node, node.args[0].value, 'an event kind the interface does not declare')
        if is_str(node) and qualified.fullmatch(node.value) and not (
                voc.allows('method', node.value) or voc.allows('error', node.value)):
            bad(node, node.value, 'a method or error the interface does not declare')


def check_python(root, out):
    """Rule 6. Returns True when the Python module spells no name the interface lacks."""
    pkg = os.path.join(root, PYTHON_PACKAGE)
    if not os.path.isdir(pkg):
        return True
    voc = Vocabulary(root)
    problems = []
    for name in sorted(os.listdir(pkg)):
        if not name.endswith('.py'):
            continue
        rel = os.path.join(PYTHON_PACKAGE, name)
        with open(os.path.join(root, rel)) as f:
            tree = ast.parse(f.read(), rel)

        def bad(node, name, what, rel=rel):
            problems.append(f'  {rel}:{node.lineno}: "{name}": {what}')
        python_record_names(voc, tree, bad)
        python_spelled_names(voc, tree, bad)
    stale = voc.stale()
    if problems:
        print('Names in the Python module that io.pressured.varlink does not declare (take them from '
              'pressured._vocabulary, or declare them in the interface first):', file=out)
        for p in problems:
            print(p, file=out)
    if stale:
        print('PYTHON_PENDING in check-structure.py lists names the interface declares now; '
              'take them off: ' + ', '.join(stale), file=out)
    return not problems and not stale


# ---------------------------------------------------------------------------
# Rule 7: the C code reads and writes only JSON members the interface declares.

JSON_DIRS = ('daemon/protocol', 'daemon/server', 'client')
# jansson's calls that take a member name as their second argument.
JSON_KEY_CALLS = ('json_object_get', 'json_object_set', 'json_object_set_new', 'json_object_del',
                  'json_object_set_nocheck', 'json_object_set_new_nocheck')
# jansson's calls whose format string names members: (name, index of the format).
JSON_FORMAT_CALLS = {'json_pack': 0, 'json_unpack': 1, 'json_pack_ex': 2, 'json_unpack_ex': 3}
# Member names the C code may use that io.pressured.varlink does not
# declare, by the file (its name, wherever it lies in JSON_DIRS) that uses
# them: JSON that is not the interface's. An entry the file no longer uses
# is reported too.
JSON_ALLOWED = {
    # libpressure's own error DaemonNotRunning (nothing answered; never
    # sent by the daemon) carries the socket it tried.
    'pressure-result.c': ('socket',),
    # pressurectl --json: its error objects on stderr (pressurectl(1)).
    'error-text.c': ('socket', 'errno', 'message', 'command', 'notice'),
    # pressurectl notify: --dry-run --json lines and its error message.
    'notify.c': ('action', 'id', 'urgency', 'summary', 'body', 'message'),
    # pressurectl history --json: whether the episode is still going on.
    'history.c': ('active',),
    # pressurectl top --json: its own document (the view, the sort, the
    # per-cgroup rows with cpu and io pressure, rates, the roots).
    'top.c': ('message', 'cpu_psi', 'io_psi', 'reachable', 'active_episodes', 'reclaim_cgroups',
              'events_read_per_sec', 'events_delivered_per_sec', 'protection_error', 'kills_error',
              'depth', 'hierarchy', 'cpu_some_avg10', 'io_some_avg10', 'killed', 'changed', 'iteration',
              'sort', 'view', 'system', 'daemon', 'v2', 'v1_memory', 'roots', 'cgroups', 'mem_available',
              'mem_total', 'current'),
}


def c_call_args(text, start):
    """The arguments of the call whose '(' is at @start, split at its own
    commas, and the offset after its ')'."""
    depth, args, cur, i = 0, [], [], start + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            if depth == 0:
                args.append(''.join(cur).strip())
                return args, i + 1
            depth -= 1
        elif ch == ',' and depth == 0:
            args.append(''.join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    return args, i


def c_literal(arg):
    """The value of @arg if it is a string literal (adjacent ones joined), else None."""
    parts = re.fullmatch(r'(?:\s*"(?:[^"\\]|\\.)*")+\s*', arg or '')
    return ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', arg)) if parts else None


def json_format_keys(fmt, args):
    """The member names a jansson format @fmt gives as literals among @args
    (the arguments after it): the "s" of a key inside {}. Each value takes
    one argument but "n" none, and "s#" or "s%" two; "?", "*", "+" and "!"
    take none."""
    keys, stack, k, i = [], [], 0, 0
    while i < len(fmt):
        ch = fmt[i]
        i += 1
        if ch in '{[':
            if stack and stack[-1][0] == '{':
                stack[-1][1] = True
            stack.append([ch, True])
        elif ch in '}]':
            stack.pop()
        elif ch in 'sbiIfFoOn':
            in_object = stack and stack[-1][0] == '{'
            if in_object and stack[-1][1]:
                if k < len(args) and c_literal(args[k]) is not None:
                    keys.append(c_literal(args[k]))
                stack[-1][1] = False
                k += 1
                continue
            if in_object:
                stack[-1][1] = True
            k += 0 if ch == 'n' else 2 if i < len(fmt) and fmt[i] in '#%' else 1
    return keys


C_FUNCTION_RE = re.compile(r'^(static\s+)?[A-Za-z_][\w \t*]*?\b(\w+)\(([^)]*)\)\s*\{(.*?)^\}', re.M | re.S)


def json_key_calls(wrappers, path):
    """{function: index of its member-name argument} as the file @path sees
    @wrappers: the non-static ones and its own static ones."""
    return {k[1] if isinstance(k, tuple) else k: v for k, v in wrappers.items()
            if not isinstance(k, tuple) or k[0] == path}


def json_key_wrappers(texts):
    """Functions that hand a string parameter to a jansson call as a member
    name, or to another such function: {name: index} for the non-static
    ones, {(file, name): index} for the static ones of each file of @texts
    ({file: text})."""
    wrappers = {name: 1 for name in JSON_KEY_CALLS}
    for _ in range(3):  # wrappers of wrappers
        for path, text in texts.items():
            calls = json_key_calls(wrappers, path)
            for m in C_FUNCTION_RE.finditer(text):
                for index, param in enumerate(m.group(3).split(',')):
                    name = re.findall(r'\w+', param)[-1:]
                    if 'char' not in param or not name:
                        continue
                    for callee, at in calls.items():
                        before = r'[^,()]*(?:\([^()]*\))?[^,()]*,' * at
                        if re.search(rf'\b{callee}\s*\({before}\s*\(?{name[0]}\)?\s*[,)]', m.group(4)):
                            wrappers[(path, m.group(2)) if m.group(1) else m.group(2)] = index
    return wrappers


def json_member_names(text, wrappers=None, path=None):
    """(offset, name) of every member name literal the C code @text reads or
    writes, through jansson or one of its @wrappers (json_key_wrappers())."""
    out = []
    names = json_key_calls(wrappers or {name: 1 for name in JSON_KEY_CALLS}, path)
    calls = '|'.join(sorted(names) + list(JSON_FORMAT_CALLS))
    for m in re.finditer(rf'(?<![\w.>])({calls})\s*\(', text):
        args, _ = c_call_args(text, m.end() - 1)
        if m.group(1) in JSON_FORMAT_CALLS:
            at = JSON_FORMAT_CALLS[m.group(1)]
            fmt = c_literal(args[at]) if len(args) > at else None
            if fmt is not None:
                out += [(m.start(), k) for k in json_format_keys(fmt, args[at + 1:])]
        elif len(args) > names[m.group(1)] and c_literal(args[names[m.group(1)]]) is not None:
            out.append((m.start(), c_literal(args[names[m.group(1)]])))
    return out


def served_fields(root):
    """The fields declared by the other interfaces the daemon serves
    (daemon/protocol/*.varlink beside io.pressured's: systemd's, on sockets
    of their own), whose members the C code writes too."""
    idl = load_varlink_idl()
    fields = set()
    for iface in idl.served_interfaces(root):
        structs = [t for t in iface.types.values() if t[0] == 'struct']
        structs += [io for m in iface.methods.values() for io in m] + list(iface.errors.values())
        fields |= {f for st in structs for f in st[1]}
    return fields


def check_json_members(root, out, allowed=None):
    """Rule 7. Returns True when every member name literal of JSON_DIRS is
    declared by the interface or allowed for its file, and every allowed
    name is used."""
    if not os.path.exists(os.path.join(root, INTERFACE_IDL)):
        return True
    known = Vocabulary(root).names['field'] | set(VARLINK_MEMBERS) | served_fields(root)
    allowed = JSON_ALLOWED if allowed is None else allowed
    bad, used, texts = [], set(), {}
    for path in source_files(root, list(JSON_DIRS)):
        with open(path, errors='replace') as f:
            texts[path] = re.sub(r'/\*.*?\*/|//[^\n]*', lambda c: '\n' * c.group(0).count('\n'), f.read(),
                                 flags=re.S)
    wrappers = json_key_wrappers(texts)
    for path, text in texts.items():
        rel, base = os.path.relpath(path, root), os.path.basename(path)
        for offset, name in json_member_names(text, wrappers, path):
            if name in allowed.get(base, ()):
                used.add((base, name))
            elif name not in known:
                bad.append(f'  {rel}:{text.count(chr(10), 0, offset) + 1}: "{name}"')
    stale = sorted(f'{b}: "{n}"' for b, names in allowed.items() for n in names if (b, n) not in used)
    if bad:
        print('JSON member names that io.pressured.varlink does not declare (declare them, or list '
              'them in JSON_ALLOWED with why they are not the interface\'s):', file=out)
        for b in bad:
            print(b, file=out)
    if stale:
        print('JSON_ALLOWED lists names their file does not use: ' + ', '.join(stale), file=out)
    return not bad and not stale


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
    ok = check_python(root, out) and ok
    ok = check_json_members(root, out) and ok
    ok = check_shared_names(root, defs, out) and ok
    ok = used and ok
    if ok:
        print(f'structure: no call cycle between the {len(daemon_files)} files '
              f'of daemon/; no function over {MAX_LINES} lines in '
              f'{len(all_files)} files of daemon/ and client/; no include '
              f'reaching up a layer; no function without a user; no protocol name '
              f'written again in client/; no name in the Python module and no JSON member name '
              f'in {", ".join(JSON_DIRS)} that the interface lacks; no function name defined in both '
              f'daemon/ and client/', file=out)
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
    # A function of daemon/common/ that a client program calls: one
    # definition, linked by both sides. Each side has its main().
    'daemon/common/both.c': '''
        int both_fn(void) {
                return 0;
        }
    ''',
    'client/main.c': '''
        int both_fn(void);
        int main(void) {
                return both_fn();
        }
    ''',
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


FIXTURE_PYTHON_IDL = """
    interface io.pressured
    type Trigger (level: ?(low, medium, critical), window_us: int)
    type PressureEvent (kind: (pressure), cgroup: string, level: ?(low, medium, critical))
    type HeadroomEvent (kind: (headroom), cgroup: string, usage_bytes: int)
    method GetStatus() -> (version: string)
    method Subscribe(cgroup: ?string) -> (event: object)
    error NoSuchCgroup (cgroup: string)
    """

FIXTURE_PYTHON = {
    PYTHON_PACKAGE + '/types.py': """
        import os
        _UNITS = {'us': 1}
        @_record
        class Trigger(_Record):
            level: str = None
            window_ms: int = None
            raw: dict = _raw()
        @_record
        class Status(_Record):
            version: str = None
            uptime_us: int = None
        @_event('pressure')
        class PressureEvent(Event):
            level: str = None
        @_event('pressur')
        class PressurEvent(Event):
            level: str = None
        @_event('reconnected', register=False)
        class ReconnectedEvent(Event):
            attempts: int = None
        def f(msg, ev):
            home = os.environ.get('HOME')
            if 'error' in msg and msg.get('parameters') and msg['continues']:
                return {'cgroup': '/', 'levle': 'low', 'method': 'io.pressured.GetStatus'}
            if ev.level == 'medium' or ev.level in ('low', 'hihg') or ev.kind == 'pressure':
                return 'io.pressured.NoSuchCgroup', 'io.pressured.GetStatsu', ev.state == 'ended'
        """,
}


def expect_python(tmp, expect):
    """Rule 6 on a small package: what it reports, and a stale PYTHON_PENDING."""
    global PYTHON_PENDING
    root = os.path.join(tmp, 'python')
    write_tree(root, dict(FIXTURE_PYTHON, **{INTERFACE_IDL: FIXTURE_PYTHON_IDL}))
    buf = io.StringIO()
    saved, PYTHON_PENDING = PYTHON_PENDING, {'field': {'usage_bytes'}}
    try:
        ok = check_python(root, buf)
    finally:
        PYTHON_PENDING = saved
    report = buf.getvalue()
    rel = PYTHON_PACKAGE + '/types.py'
    want = [f'{rel}:6: "window_ms": a field Trigger does not have in the interface',
            f'{rel}:11: "uptime_us": a field Status does not have in the interface',
            f'{rel}:16: "PressurEvent": a class named after no type or method of the interface',
            f'{rel}:15: "pressur": an event kind the interface does not declare',
            f'{rel}:24: "levle": a member name the interface does not declare',
            f'{rel}:25: "hihg": a value of "level" the interface does not declare',
            f'{rel}:26: "io.pressured.GetStatsu": a method or error the interface does not declare',
            'PYTHON_PENDING in check-structure.py lists names the interface declares now; '
            'take them off: field "usage_bytes"']
    missing = [w for w in want if w not in report]
    expect(not ok and not missing and report.count('\n  ') == len(want) - 1,
           'the Python module: a field a type lacks, a class of no type, an unknown kind, member '
           'name, enum value and method are flagged; the module\'s own names, varlink\'s members, '
           'os.environ and a stream state are not; a pending name the interface declares is stale'
           + (f': missing {missing}' if missing else ''))


FIXTURE_JSON = {
    INTERFACE_IDL: FIXTURE_PYTHON_IDL,
    'daemon/protocol/event.c': """
        json_t *f(const char *key, json_t *o) {
                /* json_object_get(o, "in_a_comment") */
                json_object_get(o, "level");
                json_object_get(o, key);
                json_object_set_new(o, "lvel", json_string("not_a_key"));
                json_unpack(o, "{s:s, s?I}", "kind", &a, "sequ", &b);
                return json_pack("{s:s, s:{s:n, s:[s, s]}, s:o}", "method", "io.pressured.GetStatus",
                                 "parameters", "cgroup", "windw_us", "low", g(a, b),
                                 "more", o);
        }
        """,
    'daemon/server/status.c': """
        static bool put(json_t *o, const char *key, json_t *v) {
                return json_object_set_new(o, key, v) == 0;
        }
        bool wrap(json_t *o, const char *name) {
                return put(o, name, json_null());
        }
        void h(json_t *o) {
                put(o, "vrsion", json_null());
                wrap(o, "uptme_us");
                put(o, "version", json_null());
        }
        """,
    'client/top.c': """
        static void put(json_t *o, const char *k, const char *v) {
                json_object_set_new(o, "rows", json_string(v));
        }
        void g(json_t *o) {
                put(o, "not_a_key", "x");
                wrap(o, "windw");
                json_object_set_new(o, "rows", json_array());
                json_object_set_new(o, "window_us", json_integer(1));
        }
        """,
}


def expect_json_members(tmp, expect):
    """Rule 7 on a small tree: undeclared member names, allowed ones and a stale allowance."""
    root = os.path.join(tmp, 'json')
    write_tree(root, FIXTURE_JSON)
    buf = io.StringIO()
    ok = check_json_members(root, buf, {'top.c': ('rows', 'columns'), 'event.c': ('sequ',)})
    report = buf.getvalue()
    want = ['  daemon/protocol/event.c:5: "lvel"', '  daemon/protocol/event.c:7: "windw_us"',
            '  daemon/server/status.c:8: "vrsion"', '  daemon/server/status.c:9: "uptme_us"',
            '  client/top.c:6: "windw"',
            'JSON_ALLOWED lists names their file does not use: top.c: "columns"']
    with open(os.devnull, 'w') as devnull:
        clean = check_json_members(os.path.join(tmp, 'python'), devnull, {})
    expect(not ok and clean and all(w in report for w in want) and report.count('\n  ') == 5,
           'JSON member names: an undeclared key of json_object_set_new(), of a nested '
           'json_pack(), of a static wrapper in its file and of a wrapper of it anywhere are flagged; declared ones, varlink\'s members, values, keys in a variable or '
           'a comment, and a name allowed for its file are not; an allowance no longer used is')


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
               'function, main and a function of daemon/common/ on both sides)')
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
        # Names defined on both sides: a static helper(), as daemon/p.c and
        # daemon/sub/q.c have, and a static inline q_entry() in a header.
        files['client/dup.c'] = 'static int helper(void) {\n        return 0;\n}\n'
        files['client/inline.h'] = '#pragma once\nstatic inline int q_entry(void) {\n        return 1;\n}\n'
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
        twice = out.split('Functions of the same name in daemon/ and client/')[-1].split('\n')[1:]
        twice = list(itertools.takewhile(lambda line: line.startswith('  '), twice))
        expect(twice == ['  helper: daemon/p.c:2, daemon/sub/q.c:2, client/dup.c:1',
                         '  q_entry: daemon/sub/q.c:8, client/inline.h:2'],
               f'a name defined in daemon/ and client/ (a static one, one in a header) is reported; '
               f'main and a function of daemon/common/ that client/ calls are not: {twice}')

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
            'daemon/protocol/event.c': '#include <jansson.h>\n',
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
               '(protocol/ is above them); server/ including both and protocol/ including jansson.h are not')

        json = os.path.join(tmp, 'json')
        write_tree(json, {
            'daemon/model/event-data.h': '#pragma once\n#include <stdint.h>\n',
            'daemon/sources/source.h': '#pragma once\n#include <jansson.h>\n',
            'daemon/registry/registration.c': '  #  include "jansson.h"\n',
            'daemon/server/methods.c': '#include <jansson.h>\n',
        })
        buf = io.StringIO()
        dirty = check_includes(json, buf)
        report = buf.getvalue()
        os.remove(os.path.join(json, 'daemon/sources/source.h'))
        os.remove(os.path.join(json, 'daemon/registry/registration.c'))
        with open(os.devnull, 'w') as devnull:
            clean = check_includes(json, devnull)
        expect(not dirty and clean and 'daemon/sources/source.h:2: includes jansson.h in sources/' in report and
               'daemon/registry/registration.c:1: includes jansson.h in registry/' in report and
               report.count('\n  ') == 2,
               'jansson.h included in sources/ (<>) and registry/ ("") is flagged; in server/ it is not')

        expect_python(tmp, expect)
        expect_json_members(tmp, expect)

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
