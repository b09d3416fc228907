#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the protocol's names and typed bindings from the varlink interfaces.

gen-wire.py --vocabulary VARLINK_IDL_PY OUT_H OUT_C IO_PRESSURED_IDL
gen-wire.py --python-vocabulary VARLINK_IDL_PY OUT_PY IO_PRESSURED_IDL
gen-wire.py --types VARLINK_IDL_PY OUT_H OUT_C IDL...
gen-wire.py --python-types VARLINK_IDL_PY OUT_PY IDL...
gen-wire.py --untagged VARLINK_IDL_PY IDL...

Every mode reads the interfaces with the parser of tests/varlink_idl.py,
which keeps each member's doc comment, and org.varlink.service from there.

--vocabulary writes vocabulary-idl.h/.c (common/): for every enum
io.pressured declares (levels, stalls, vmpressure modes, resources,
protection states, sources, the kinds of the *Event types) and for the
errors of io.pressured and org.varlink.service, a C enum in the interface's
order and its table of names; the daemon and libpressure both compile it.
A LevelEvent's "level" is the portable levels with "normal" in front (its
own enum, checked to be so). An enum that the interface spells differently
in two places fails the build, except where one is a subset in the same
order (a PressureEvent's "source" lists only the sources that make
pressure). --python-vocabulary writes the same enums, the errors with their
parameters and the methods as the Python module's _vocabulary.py.

--types writes idl-types.h/.c (protocol/): one C struct per type, per
method's parameters and reply and per error of every interface given (and
org.varlink.service), with its field table (name, kind, flags, offset) that
protocol/wire.c's encoder and decoder walk; the unions of "@oneof" members;
IDL_NAME_x and IDL_KEY_x for every member name. --python-types writes the
same types as frozen dataclasses with their field tables (_types.py).
--untagged prints the string members that carry neither @cgroup nor
@host-path, one "Record.member" per line (Python's class names).

The doc tags (lines of a member's comment that begin with "@", explained in
each interface's header comment):
  @cgroup       on string or ?string: a cgroup path, named as the peer names it
  @host-path    on string or ?string: a path of the daemon's file system
  @subscriber   on int or ?int of an *Event type: the receiving subscription's value
  @oneof FIELD TYPE...  on object: one of the TYPEs, told apart by their one-valued FIELD
The generator refuses a tag on another type, @subscriber outside an *Event
type, an unknown or unfit @oneof type, an unknown tag, a string member
whose name says it is a path (cgroup, path, root, parent, dir, victim)
without @cgroup or @host-path, and member names that are C keywords.
"""
import importlib.util
import keyword
import re
import sys

MAIN = 'io.pressured'
SERVICE = 'org.varlink.service'
PATH_WORDS = ('cgroup', 'path', 'root', 'parent', 'dir', 'victim')
TAGS = ('cgroup', 'host-path', 'subscriber', 'oneof')
C_KEYWORDS = frozenset('''auto break case char const continue default do double else enum extern float for
    goto if inline int long register restrict return short signed sizeof static struct switch typedef union
    unsigned void volatile while bool true false'''.split())
# The vocabulary enum of an enum member, by the member's name (LevelEvent's "level" aside).
FIELD_ENUMS = {'level': 'level', 'peak_level': 'level', 'stall': 'psi_stall', 'mode': 'vmpressure_mode',
               'resource': 'resource', 'state': 'protection_state', 'previous': 'protection_state',
               'source': 'source', 'kind': 'event_kind'}


class Refused(Exception):
    """The interface says something the bindings cannot be made of."""


def load_idl_module(path):
    spec = importlib.util.spec_from_file_location('varlink_idl', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_interfaces(idl, paths):
    """The interfaces of @paths (io.pressured first if given), then org.varlink.service."""
    out = []
    for p in paths:
        with open(p, encoding='utf-8') as f:
            out.append(idl.parse(f.read()))
    out.sort(key=lambda i: i.name != MAIN)
    return out + [idl.parse(idl.ORG_VARLINK_SERVICE)]


# --- the vocabulary (vocabulary-idl.h/.c, _vocabulary.py) --------------------

def enum_of(t):
    """The values of an enum type, looking through ?T; None for other types."""
    while t[0] == 'optional':
        t = t[1]
    return t[1] if t[0] == 'enum' else None


def enum_fields(iface):
    """(type name, field name, values) of every enum field of every struct type and method."""
    out = []
    structs = [(n, t) for n, t in iface.types.items() if t[0] == 'struct']
    for n, (inp, outp) in iface.methods.items():
        structs += [(n, inp), (n, outp)]
    for name, st in structs:
        for fname, ftype in st[1].items():
            values = enum_of(ftype)
            if values:
                out.append((name, fname, values))
    return out


def union(lists, what):
    """The values of @lists in order of first appearance; each list must keep that order."""
    result = []
    for values in lists:
        for v in values:
            if v not in result:
                result.append(v)
    for values in lists:
        order = [result.index(v) for v in values]
        if order != sorted(order):
            raise Refused(f'{what}: {values} lists names in another order than {result}')
    return result


def same(lists, what):
    first = lists[0]
    for values in lists:
        if tuple(values) != tuple(first):
            raise Refused(f'{what} is {first} in one place and {values} in another')
    return list(first)


def c_ident(name):
    """NoSuchCgroup -> NO_SUCH_CGROUP, memory_events -> MEMORY_EVENTS."""
    name = re.sub(r'(?<=[a-z0-9])(?=[A-Z])', '_', name)
    return re.sub(r'[^A-Za-z0-9]', '_', name).upper()


def vocabulary(iface):
    """The enums of io.pressured: [(name, what, values)]."""
    fields = enum_fields(iface)

    def by_field(fname, types=None):
        return [v for t, f, v in fields if f == fname and (types is None or t in types)]

    event_types = [n for n in iface.types if n.endswith('Event')]
    level_types = [t for t, f, v in fields if f == 'level' and t != 'LevelEvent']
    stream_levels = same(by_field('level', ['LevelEvent']), 'LevelEvent level')
    levels = same(by_field('level', level_types) + by_field('peak_level'), 'level')
    if stream_levels[:1] != ['normal'] or stream_levels[1:] != levels:
        raise Refused(f'the levels of a level stream {stream_levels} are not "normal" and {levels}')
    return [
        ('level', 'the portable pressure levels', levels),
        ('stream_level', 'the levels of a level stream: normal, then the portable ones', stream_levels),
        ('psi_stall', 'the stall types of a PSI trigger', same(by_field('stall'), 'stall')),
        ('vmpressure_mode', 'the cgroup v1 vmpressure modes', same(by_field('mode'), 'mode')),
        ('resource', 'the pressure resources', same(by_field('resource'), 'resource')),
        ('protection_state', 'the effective-protection states',
         same(by_field('state', ['ProtectionNode'] + event_types) + by_field('previous', event_types), 'state')),
        ('source', 'the sources of events and registrations', union(by_field('source'), 'source')),
        ('event_kind', 'the kinds of the *Event types, in the order the interface declares them',
         union(by_field('kind', event_types), 'kind')),
    ]


def enum_c_type(name):
    return 'Idl' + ''.join(p.capitalize() for p in name.split('_'))


def write_vocabulary_c(iface, service, enums, out_h, out_c):
    h = ['/* Generated by daemon/protocol/gen-wire.py from io.pressured.varlink: do not edit. */',
         '/*', ' * The names of the varlink interface: every enum it declares and every',
         ' * error, each as a C enum in the interface\'s order with its table of',
         ' * names and lookups. Shared by the daemon and libpressure (hidden there).', ' */',
         '#pragma once', '']
    c = ['/* Generated by daemon/protocol/gen-wire.py from io.pressured.varlink: do not edit. */',
         '#include "util.h"', '#include "vocabulary-idl.h"', '']

    def emit(name, what, values, idents):
        typ, upper = enum_c_type(name), name.upper()
        h.append(f'/* {what}: {", ".join(values)} */')
        h.append(f'typedef enum {typ} {{')
        h.extend(f'        IDL_{upper}_{ident},' for ident in idents)
        h.append(f'        _IDL_{upper}_MAX,')
        h.append(f'        _IDL_{upper}_INVALID = -1,')
        h.append(f'}} {typ};')
        h.append(f'extern const char *const idl_{name}_table[_IDL_{upper}_MAX];')
        h.append(f'const char *idl_{name}_to_string({typ} i);')
        h.append(f'{typ} idl_{name}_from_string(const char *s);')
        h.append(f'/* IDL_{upper}_NAME(VALUE): the name of IDL_{upper}_VALUE. */')
        h.append(f'#define IDL_{upper}_NAME(v) (idl_{name}_table[IDL_{upper}_##v])')
        h.append('')
        c.append(f'const char *const idl_{name}_table[_IDL_{upper}_MAX] = {{')
        c.extend(f'        [IDL_{upper}_{ident}] = "{v}",' for ident, v in zip(idents, values))
        c.append('};')
        c.append(f'DEFINE_STRING_TABLE_LOOKUP(idl_{name}, {typ})')
        c.append('')

    for name, what, values in enums:
        emit(name, what, values, [c_ident(v) for v in values])
    errors = [f'{iface.name}.{e}' for e in iface.errors] + [f'{service.name}.{e}' for e in service.errors]
    emit('error', 'the errors of io.pressured and org.varlink.service', errors,
         [('VARLINK_' if e.startswith(service.name) else '') + c_ident(e.rsplit('.', 1)[1]) for e in errors])
    write_lines(out_h, h)
    write_lines(out_c, c)


def write_vocabulary_python(path, iface, service, enums):
    """pressured/_vocabulary.py: each enum as a tuple, the errors (full name ->
    parameter names) and the methods (full names), in the interface's order."""
    py = ['# Generated by daemon/protocol/gen-wire.py from io.pressured.varlink: do not edit.',
          '"""The names of the varlink interface io.pressured, and of org.varlink.service."""', '',
          f'INTERFACE = {iface.name!r}', f'SERVICE = {service.name!r}', '']
    for name, what, values in enums:
        py.append(f'#: {what[:1].upper() + what[1:]}.')
        py.append(f'{name.upper()} = {tuple(values)!r}')
    py += ['', '#: Every error: its full name and the names of its parameters.', 'ERRORS = {']
    for i in (iface, service):
        py += [f'    {i.name + "." + e!r}: {tuple(st[1])!r},' for e, st in i.errors.items()]
    py += ['}', '', '#: Every method, by its full name.', 'METHODS = (']
    for i in (service, iface):
        py += [f'    {i.name + "." + m!r},' for m in i.methods]
    py.append(')')
    write_lines(path, py)


def write_lines(path, lines):
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines).rstrip('\n') + '\n')


# --- the model of the typed bindings ------------------------------------------

def snake(name):
    """KilledEvent -> killed_event, DBusStatus -> dbus_status."""
    return re.sub(r'(?<=[a-z0-9])(?=[A-Z])', '_', name).lower()


def camel(name):
    """memory_events -> MemoryEvents."""
    return ''.join(p[:1].upper() + p[1:] for p in name.split('_'))


def iface_prefix(iface):
    """What C and Python names of @iface's records start with: nothing for
    io.pressured, "Varlink" for org.varlink.service, else the interface's
    last component ("Prekill", "Metrics")."""
    if iface.name == MAIN:
        return ''
    if iface.name == SERVICE:
        return 'Varlink'
    return iface.name.rsplit('.', 1)[1]


class Field:
    """One member of a record, as the tables describe it."""

    def __init__(self, rec, name, kind, optional, c_type, py_type, flags=(), sub=None, values=0, const=None):
        self.rec, self.name, self.kind, self.optional = rec, name, kind, optional
        self.c_type, self.py_type = c_type, py_type
        self.flags = list(flags) + (['WIRE_OPTIONAL'] if optional else [])
        self.sub = sub              # Record (OBJECT, ARRAY of objects), Union (ONEOF), enum (ENUM), None
        self.values = values        # ENUM: bit mask of the allowed values
        self.const = const          # CONST: the one value

    @property
    def where(self):
        return f'{self.rec.iface.name}.{self.rec.idl_name}.{self.name}'


class Record:
    """A type, a method's parameters or reply, or an error of an interface."""

    def __init__(self, iface, idl_name, role, members, doc):
        self.iface, self.idl_name, self.role, self.members, self.doc = iface, idl_name, role, members, doc
        suffix = {'type': '', 'params': 'Params', 'reply': 'Reply', 'error': 'Error'}[role]
        if idl_name.endswith(suffix):
            suffix = ''     # InternalError, not InternalErrorError
        self.py_name = iface_prefix(iface) + idl_name + suffix
        self.c_name = 'Idl' + self.py_name
        self.var = snake(self.c_name)
        self.fields = []

    @property
    def label(self):
        return f'{self.iface.name}.{self.idl_name}' + ('' if self.role == 'type' else f' ({self.role})')


class Union:
    """The C union of an "@oneof" member: one of its types, by the value of their one-valued field."""

    def __init__(self, rec, name, field, enum, records):
        self.c_name = 'Idl' + iface_prefix(rec.iface) + camel(name)
        self.var = snake(self.c_name)
        self.field, self.enum, self.records = field, enum, records    # records: [(value, Record)]


class Model:
    def __init__(self, interfaces, vocab):
        self.interfaces = interfaces
        self.enums = {name: values for name, _, values in vocab}    # the vocabulary's
        self.named_enums = {}       # C type -> (iface, name, values): top-level enum types of the interfaces
        self.records = []
        self.by_name = {}           # (iface name, type name) -> Record
        self.unions = []
        self.opt_enums = set()      # C enum types used as ?(...)
        self.arrays = {}            # element C type -> its array type
        self.untagged = []          # "iface.Record.member" of untagged string members
        for iface in interfaces:
            for name, t in iface.types.items():
                if t[0] == 'enum':
                    self.named_enums[f'Idl{iface_prefix(iface)}{name}'] = (iface, name, t[1])
                elif t[0] == 'struct':
                    self.add(Record(iface, name, 'type', t[1], iface.docs.get(name, [])))
            for name, (inp, outp) in iface.methods.items():
                self.add(Record(iface, name, 'params', inp[1], iface.docs.get(name, [])))
                self.add(Record(iface, name, 'reply', outp[1], iface.docs.get(name, [])))
            for name, t in iface.errors.items():
                self.add(Record(iface, name, 'error', t[1], iface.docs.get(name, [])))
        names = [r.c_name for r in self.records] + list(self.named_enums)
        for n in set(names):
            if names.count(n) > 1:
                raise Refused(f'two records of the interfaces would both be {n}')
        for rec in self.records:
            rec.fields = [f for f in (self.field(rec, m) for m in rec.members) if f]

    def add(self, rec):
        self.records.append(rec)
        if rec.role == 'type':
            self.by_name[(rec.iface.name, rec.idl_name)] = rec

    def field(self, rec, name):
        t, doc = rec.members[name], rec.members.docs.get(name, [])
        tags = self.tags(rec, name, doc)
        if name in C_KEYWORDS or keyword.iskeyword(name):
            raise Refused(f'{rec.label}.{name}: a member named like a C or Python keyword')
        optional = t[0] == 'optional'
        base = t[1] if optional else t
        if base[0] == 'optional':
            raise Refused(f'{rec.label}.{name}: ?? is no type')
        self.check_tags(rec, name, base, tags)
        if base[0] == 'string':
            return self.string_field(rec, name, optional, tags)
        if base[0] in ('bool', 'int', 'float'):
            c = {'bool': ('bool', 'WireOptBool'), 'int': ('uint64_t', 'WireOptU64'),
                 'float': ('double', 'WireOptF64')}[base[0]]
            flags = ['WIRE_SUBSCRIBER'] if 'subscriber' in tags else []
            return Field(rec, name, base[0].upper(), optional, c[optional], base[0], flags)
        if base[0] == 'enum':
            return self.enum_field(rec, name, optional, base[1])
        if base[0] == 'named':
            return self.named_field(rec, name, optional, base[1])
        if base[0] == 'array':
            return self.array_field(rec, name, optional, base[1])
        if base[0] == 'object' and 'oneof' in tags:
            return self.oneof_field(rec, name, optional, tags['oneof'])
        if base[0] in ('object', 'any'):
            return Field(rec, name, 'ANY', optional, 'WireAny', 'object')
        raise Refused(f'{rec.label}.{name}: the bindings have no {base[0]} type')

    def tags(self, rec, name, doc):
        tags = {}
        for line in doc:
            words = line.split()
            if not words or not words[0].startswith('@'):
                continue
            tag = words[0][1:]
            if tag not in TAGS:
                raise Refused(f'{rec.label}.{name}: unknown tag @{tag} (known: @{", @".join(TAGS)})')
            if tag in tags:
                raise Refused(f'{rec.label}.{name}: @{tag} given twice')
            tags[tag] = words[1:]
        return tags

    def check_tags(self, rec, name, base, tags):
        what = f'{rec.label}.{name}'
        for tag in ('cgroup', 'host-path'):
            if tag in tags and base[0] != 'string':
                raise Refused(f'{what}: @{tag} on a member of type {base[0]}; only string and ?string carry it')
            if tag in tags and tags[tag]:
                raise Refused(f'{what}: @{tag} takes no words')
        if 'cgroup' in tags and 'host-path' in tags:
            raise Refused(f'{what}: @cgroup and @host-path exclude each other')
        if 'subscriber' in tags:
            if rec.role != 'type' or not rec.idl_name.endswith('Event'):
                raise Refused(f'{what}: @subscriber outside an *Event type')
            if base[0] != 'int':
                raise Refused(f'{what}: @subscriber on a member of type {base[0]}; only int and ?int carry it')
        if 'oneof' in tags and base[0] != 'object':
            raise Refused(f'{what}: @oneof on a member of type {base[0]}; only object carries it')

    def string_field(self, rec, name, optional, tags):
        if 'cgroup' in tags:
            return Field(rec, name, 'CGROUP', optional, 'IdlCgroup', 'str')
        flags = []
        if 'host-path' in tags:
            flags = ['WIRE_HOST_PATH']
        else:
            if any(w in name for w in PATH_WORDS):
                raise Refused(f'{rec.label}.{name}: a string named like a path carries neither @cgroup nor '
                              '@host-path; say which it is')
            self.untagged.append(f'{rec.py_name}.{name}')
        return Field(rec, name, 'STRING', optional, 'const char *', 'str', flags)

    def vocab_enum(self, rec, name, values):
        """The vocabulary enum (its name) of an enum member, checked to hold @values in its order."""
        ename = 'stream_level' if (rec.idl_name, name) == ('LevelEvent', 'level') else FIELD_ENUMS.get(name)
        if rec.iface.name not in (MAIN,) or ename not in self.enums:
            raise Refused(f'{rec.label}.{name}: an enum the vocabulary does not name; declare it as a type')
        all_values = self.enums[ename]
        idx = [all_values.index(v) if v in all_values else -1 for v in values]
        if -1 in idx or idx != sorted(idx):
            raise Refused(f'{rec.label}.{name}: {values} are not values of {ename} {all_values} in their order')
        return ename, sum(1 << i for i in idx)

    def enum_field(self, rec, name, optional, values):
        if len(values) == 1 and not optional:
            return Field(rec, name, 'CONST', False, None, 'str', const=values[0])
        ename, mask = self.vocab_enum(rec, name, values)
        c = enum_c_type(ename)
        if optional:
            self.opt_enums.add(c)
        return Field(rec, name, 'ENUM', optional, c + 'Opt' if optional else c, 'str', sub=('vocab', ename, c),
                     values=mask)

    def named_field(self, rec, name, optional, tname):
        t = rec.iface.types.get(tname)
        if t is None:
            raise Refused(f'{rec.label}.{name}: no type {tname}')
        if t[0] == 'enum':
            c = f'Idl{iface_prefix(rec.iface)}{tname}'
            if optional:
                self.opt_enums.add(c)
            return Field(rec, name, 'ENUM', optional, c + 'Opt' if optional else c, 'str', sub=('named', tname, c),
                         values=(1 << len(t[1])) - 1)
        sub = self.by_name[(rec.iface.name, tname)]
        return Field(rec, name, 'OBJECT', optional, f'const {sub.c_name} *' if optional else sub.c_name,
                     sub.py_name, sub=sub)

    def array_field(self, rec, name, optional, elem):
        if elem[0] == 'string':
            self.untagged.append(f'{rec.py_name}.{name}')
            return Field(rec, name, 'ARRAY', optional, 'IdlStringArray', 'str')
        if elem[0] == 'named' and rec.iface.types.get(elem[1], ('',))[0] == 'struct':
            sub = self.by_name[(rec.iface.name, elem[1])]
            self.arrays[sub.c_name] = sub.c_name + 'Array'
            return Field(rec, name, 'ARRAY', optional, sub.c_name + 'Array', sub.py_name, sub=sub)
        raise Refused(f'{rec.label}.{name}: arrays hold strings or named struct types here, not {elem}')

    def oneof_field(self, rec, name, optional, words):
        if optional:
            raise Refused(f'{rec.label}.{name}: @oneof on an optional member')
        if len(words) < 2:
            raise Refused(f'{rec.label}.{name}: @oneof needs a FIELD and at least one TYPE')
        field, tnames = words[0], words[1:]
        members, values = [], []
        for tname in tnames:
            t = rec.iface.types.get(tname)
            if t is None or t[0] != 'struct':
                raise Refused(f'{rec.label}.{name}: @oneof names {tname}, which is no struct type of '
                              f'{rec.iface.name}')
            d = t[1].get(field)
            if d is None or d[0] != 'enum' or len(d[1]) != 1:
                raise Refused(f'{rec.label}.{name}: @oneof type {tname} has no one-valued enum {field!r}')
            if d[1][0] in values:
                raise Refused(f'{rec.label}.{name}: @oneof types share the {field} {d[1][0]!r}')
            values.append(d[1][0])
            members.append((d[1][0], self.by_name[(rec.iface.name, tname)]))
        ename = FIELD_ENUMS.get(field)
        if ename not in self.enums or any(v not in self.enums[ename] for v in values):
            raise Refused(f'{rec.label}.{name}: the {field} values {values} are no vocabulary enum')
        u = Union(rec, name, field, ename, members)
        self.unions.append(u)
        return Field(rec, name, 'ONEOF', False, u.c_name, 'object', sub=u)

    def field_names(self):
        return sorted({f.name for r in self.records for f in r.fields} |
                      {m for r in self.records for m in r.members})


# --- C ----------------------------------------------------------------------------

def c_comment_lines(doc, indent=''):
    text = [line for line in doc if not line.lstrip().startswith('@')]
    if not text:
        return []
    if len(text) == 1:
        return [f'{indent}/* {text[0].replace("*/", "* /")} */']
    return [f'{indent}/*'] + [f'{indent} * {t.replace("*/", "* /")}'.rstrip() for t in text] + [f'{indent} */']


def struct_order(model):
    """Records and unions in an order where every by-value member is defined before its user."""
    done, order = set(), []

    def deps(item):
        if isinstance(item, Union):
            return [r for _, r in item.records]
        return [f.sub for f in item.fields if (f.kind == 'OBJECT' and not f.optional) or f.kind == 'ONEOF']

    def visit(item, path):
        if id(item) in done:
            return
        if id(item) in path:
            raise Refused(f'{item.c_name} contains itself')
        for d in deps(item):
            visit(d, path | {id(item)})
        done.add(id(item))
        order.append(item)

    for r in model.records:
        visit(r, set())
    return order


def member_comment(f):
    notes = []
    if f.kind == 'CGROUP':
        notes.append('@cgroup')
    if 'WIRE_HOST_PATH' in f.flags:
        notes.append('@host-path')
    if 'WIRE_SUBSCRIBER' in f.flags:
        notes.append('@subscriber')
    return f'  /* {" ".join(notes)} */' if notes else ''


def c_struct(rec):
    lines = c_comment_lines(rec.doc if rec.role != 'params' else []) or [f'/* {rec.label} */']
    members = [f for f in rec.fields if f.kind != 'CONST']
    if not members:
        return lines + [f'/* {rec.c_name}: no members; its table alone says so (idl_{rec.var[4:]}_type). */']
    lines.append(f'struct {rec.c_name} {{')
    for f in rec.fields:
        if f.kind == 'CONST':
            lines.append(f'        /* {f.name}: always "{f.const}", written from the table */')
            continue
        decl = f'{f.c_type}{f.name}' if f.c_type.endswith('*') else f'{f.c_type} {f.name}'
        lines.append(f'        {decl};{member_comment(f)}')
    return lines + ['};']


def c_union(u):
    lines = [f'/* One of {", ".join(r.idl_name for _, r in u.records)}, by their "{u.field}". */',
             f'struct {u.c_name} {{', f'        {enum_c_type(u.enum)} {u.field};', '        union {']
    lines += [f'                {r.c_name} {v};' for v, r in u.records]
    return lines + ['        };', '};']


def union_accessors(u):
    """(member name, C type, kinds) of the members each of @u's types has with one C type."""
    out = []
    names = []
    for _, r in u.records:
        names += [f.name for f in r.fields if f.kind != 'CONST' and f.name not in names]
    for n in names:
        has = [(v, f) for v, r in u.records for f in r.fields if f.name == n]
        types = {f.c_type for _, f in has}
        if len(has) >= 2 and len(types) == 1:
            out.append((n, types.pop(), [v for v, _ in has]))
    return out


def accessor_type(c):
    """What an accessor of a member of C type @c returns: a pointer to it."""
    return f'{c}const *' if c.endswith('*') else f'const {c} *'


def write_types_h(model, sources, path):
    h = [f'/* Generated by daemon/protocol/gen-wire.py from {", ".join(sources)}: do not edit. */',
         '/*',
         ' * The typed bindings of the varlink interfaces: one struct per type, per',
         ' * method\'s parameters and reply, and per error, each with its field table',
         ' * (idl_*_type) that protocol/wire.c encodes and decodes by; the unions of',
         ' * "@oneof" members and their accessors; IDL_NAME_x ("x") and IDL_KEY_x',
         ' * ("\\"x\\":") for every member name. Zero-initialised, every optional',
         ' * member is absent. No JSON library here: wire.h says how a table is read.',
         ' */', '#pragma once', '', '#include <stdbool.h>', '#include <stddef.h>', '#include <stdint.h>', '',
         '#include "vocabulary-idl.h"', '#include "wire.h"', '',
         '/* Every member name of the interfaces. */']
    for n in model.field_names():
        h.append(f'#define IDL_NAME_{n} "{n}"')
        h.append(f'#define IDL_KEY_{n} "\\"{n}\\":"')
    h.append('')
    for c, (iface, name, values) in sorted(model.named_enums.items()):
        e = snake(c)
        upper = e.upper()
        h += c_comment_lines(iface.docs.get(name, []))
        h.append(f'typedef enum {c} {{')
        h += [f'        {upper}_{c_ident(v)},' for v in values]
        h += [f'        _{upper}_MAX,', f'        _{upper}_INVALID = -1,', f'}} {c};',
              f'extern const char *const {e}_table[_{upper}_MAX];', '']
    for c in sorted(model.opt_enums):
        h.append(f'typedef struct {c}Opt {{ {c} v; WirePresence is; }} {c}Opt;')
    h.append('')
    for r in model.records:
        if any(f.kind != 'CONST' for f in r.fields):
            h.append(f'typedef struct {r.c_name} {r.c_name};')
    for u in model.unions:
        h.append(f'typedef struct {u.c_name} {u.c_name};')
    h.append('')
    for elem, arr in sorted(model.arrays.items()):
        h.append(f'typedef struct {arr} {{ const {elem} *items; size_t n; WirePresence is; }} {arr};')
    h.append('')
    for item in struct_order(model):
        h += c_union(item) if isinstance(item, Union) else c_struct(item)
        if isinstance(item, Record):
            h.append(f'extern const WireType {item.var}_type;')
        h.append('')
    for u in model.unions:
        h.append(f'/* The types of {u.c_name}, by its {u.field} (NULL: not one of them). */')
        h.append(f'extern const WireType *const {u.var}_types[_IDL_{u.enum.upper()}_MAX];')
        for n, c, kinds in union_accessors(u):
            ret = accessor_type(c)
            h.append(f'/* {n} of {", ".join(kinds)}; NULL for the others. */')
            h.append(f'{ret}{u.var}_{n}(const {u.c_name} *v);')
        h.append('')
    h += ['/* Every record, for walks over all of them (tests, the fuzzer). */',
          'extern const WireType *const idl_types[];', 'extern const size_t idl_n_types;', '',
          '/* Every method: its full name, the types of its parameters and of its reply. */',
          'typedef struct IdlMethod {', '        const char *name;', '        const WireType *params, *reply;',
          '} IdlMethod;', 'extern const IdlMethod idl_methods[];', 'extern const size_t idl_n_methods;', '',
          '/* Every error: its full name and the type of its parameters. */',
          'typedef struct IdlErrorType {', '        const char *name;', '        const WireType *parameters;',
          '} IdlErrorType;', 'extern const IdlErrorType idl_errors[];', 'extern const size_t idl_n_errors;']
    write_lines(path, h)


def c_field_row(f):
    flags = ' | '.join(f.flags) or '0'
    if f.kind == 'CONST':
        return f'        {{ WIRE_KEY("{f.name}"), WIRE_CONST, 0, 0, 0, "{f.const}" }},'
    off = f'offsetof({f.rec.c_name}, {f.name})'
    if f.kind == 'ENUM':
        sub = f'&{snake(f.sub[2])}_enum'
    elif f.kind in ('OBJECT', 'ARRAY') and f.sub is not None:
        sub = f'&{f.sub.var}_type'
    elif f.kind == 'ONEOF':
        sub = f'&{f.sub.var}_oneof'
    else:
        sub = 'NULL'
    values = f'{f.values:#x}u' if f.values else '0'
    return f'        {{ WIRE_KEY("{f.name}"), WIRE_{f.kind}, {flags}, {off}, {values}, {sub} }},'


def write_types_c(model, sources, path):
    c = [f'/* Generated by daemon/protocol/gen-wire.py from {", ".join(sources)}: do not edit. */',
         '#include "idl-types.h"', '', '#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))', '',
         '/* The layouts wire.c reads every optional enum and array as. */',
         '_Static_assert(sizeof(IdlLevel) == sizeof(int), "enums are ints");']
    for o in sorted(model.opt_enums):
        c.append(f'_Static_assert(sizeof({o}Opt) == sizeof(WireOptEnum) && offsetof({o}Opt, is) == '
                 f'offsetof(WireOptEnum, is), "{o}Opt");')
    for arr in sorted(model.arrays.values()):
        c.append(f'_Static_assert(sizeof({arr}) == sizeof(WireArray) && offsetof({arr}, n) == offsetof(WireArray, n) '
                 f'&& offsetof({arr}, is) == offsetof(WireArray, is), "{arr}");')
    c.append('')
    used = sorted({f.sub for r in model.records for f in r.fields if f.kind == 'ENUM'} |
                  {('vocab', u.enum, enum_c_type(u.enum)) for u in model.unions})
    for kind, name, ctype in used:
        table = f'idl_{name}_table' if kind == 'vocab' else f'{snake(ctype)}_table'
        count = f'_IDL_{name.upper()}_MAX' if kind == 'vocab' else f'_{snake(ctype).upper()}_MAX'
        c.append(f'static const WireEnum {snake(ctype)}_enum = {{ {table}, {count} }};')
    for ctype, (iface, name, values) in sorted(model.named_enums.items()):
        c.append(f'const char *const {snake(ctype)}_table[_{snake(ctype).upper()}_MAX] = {{')
        c += [f'        "{v}",' for v in values]
        c.append('};')
    c.append('')
    for u in model.unions:
        c.append(f'const WireType *const {u.var}_types[_IDL_{u.enum.upper()}_MAX] = {{')
        c += [f'        [IDL_{u.enum.upper()}_{c_ident(v)}] = &{r.var}_type,' for v, r in u.records]
        c.append('};')
        c.append(f'static const WireOneof {u.var}_oneof = {{ WIRE_KEY("{u.field}"), &{snake(enum_c_type(u.enum))}'
                 f'_enum, {u.var}_types, offsetof({u.c_name}, {u.field}), offsetof({u.c_name}, {u.records[0][0]}) }};')
        c.append('')
    for r in model.records:
        if r.fields:
            c.append(f'static const WireField {r.var}_fields[] = {{')
            c += [c_field_row(f) for f in r.fields]
            c.append('};')
        size = f'sizeof({r.c_name})' if any(f.kind != 'CONST' for f in r.fields) else '0'
        fields = f'{r.var}_fields, ELEMENTS({r.var}_fields)' if r.fields else 'NULL, 0'
        c.append(f'const WireType {r.var}_type = {{ "{r.py_name}", {size}, {fields} }};')
        c.append('')
    for u in model.unions:
        for n, ct, kinds in union_accessors(u):
            ret = accessor_type(ct)
            c.append(f'{ret}{u.var}_{n}(const {u.c_name} *v) {{')
            c.append(f'        switch (v->{u.field}) {{')
            for k in kinds:
                c += [f'        case IDL_{u.enum.upper()}_{c_ident(k)}:', f'                return &v->{k}.{n};']
            c += ['        default:', '                return NULL;', '        }', '}', '']
    c.append('const WireType *const idl_types[] = {')
    c += [f'        &{r.var}_type,' for r in model.records]
    c += ['};', 'const size_t idl_n_types = ELEMENTS(idl_types);', '', 'const IdlMethod idl_methods[] = {']
    for iface in model.interfaces:
        for m in iface.methods:
            p = next(r for r in model.records if r.iface is iface and r.idl_name == m and r.role == 'params')
            q = next(r for r in model.records if r.iface is iface and r.idl_name == m and r.role == 'reply')
            c.append(f'        {{ "{iface.name}.{m}", &{p.var}_type, &{q.var}_type }},')
    c += ['};', 'const size_t idl_n_methods = ELEMENTS(idl_methods);', '', 'const IdlErrorType idl_errors[] = {']
    for r in model.records:
        if r.role == 'error':
            c.append(f'        {{ "{r.iface.name}.{r.idl_name}", &{r.var}_type }},')
    c += ['};', 'const size_t idl_n_errors = ELEMENTS(idl_errors);']
    write_lines(path, c)


# --- Python -----------------------------------------------------------------------

def py_field_row(model, f):
    if f.kind == 'CONST':
        sub = repr(f.const)
    elif f.kind == 'ENUM' and f.sub[0] == 'vocab':
        sub = repr(tuple(v for i, v in enumerate(model.enums[f.sub[1]]) if f.values >> i & 1))
    elif f.kind == 'ENUM':
        sub = repr(tuple(f.rec.iface.types[f.sub[1]][1]))
    elif f.kind in ('OBJECT', 'ARRAY') and f.sub is not None:
        sub = repr(f.sub.py_name)
    elif f.kind == 'ONEOF':
        sub = repr((f.sub.field, {v: r.py_name for v, r in f.sub.records}))
    else:
        sub = 'None'
    return f'        ({f.name!r}, {f.kind.lower()!r}, {f.optional!r}, {sub}),'


def py_annotation(f):
    if f.kind == 'ARRAY':
        t = f'tuple[{f.sub.py_name if f.sub else "str"}, ...]'
    elif f.kind == 'ONEOF':
        t = ' | '.join(r.py_name for _, r in f.sub.records)
    elif f.kind == 'OBJECT':
        t = f.sub.py_name
    else:
        t = f.py_type
    return f"'{t} | None' = None" if f.optional else f"'{t}'"


def write_types_python(model, sources, path):
    py = [f'# Generated by daemon/protocol/gen-wire.py from {", ".join(sources)}: do not edit.',
          '"""The records of the varlink interfaces as frozen dataclasses.',
          '',
          'One class per type, per method\'s parameters (NameParams) and reply',
          '(NameReply) and per error (NameError); those of other interfaces than',
          'io.pressured begin with its last component (PrekillNotifyParams), those of',
          'org.varlink.service with Varlink. Each has FIELDS: (name, kind, optional, sub)',
          'per member in the interface\'s order, which _records.py decodes and encodes',
          'by. EVENT_TYPES: the event classes by kind; METHODS: (params, reply) by the',
          'full method name; ERRORS: the class by the full error name.',
          '"""', 'import dataclasses', 'import typing', '']
    for r in model.records:
        py += ['', '']
        py.append('@dataclasses.dataclass(frozen=True, kw_only=True)')
        py.append(f'class {r.py_name}:')
        text = [line for line in r.doc if not line.lstrip().startswith('@')] if r.role != 'params' else []
        py.append(f'    """{" ".join(text) or r.label}"""'.replace('\\', '\\\\'))
        for f in r.fields:
            if f.kind == 'CONST':
                continue
            py.append(f'    {f.name}: {py_annotation(f)}')
        consts = [f for f in r.fields if f.kind == 'CONST']
        for f in consts:
            py.append(f'    {f.name.upper()}: typing.ClassVar[str] = {f.const!r}')
        py.append('    FIELDS: typing.ClassVar[tuple] = (')
        py += [py_field_row(model, f) for f in r.fields]
        py.append('    )')
    py += ['', '', '#: Every class by its name.', 'CLASSES = {']
    py += [f'    {r.py_name!r}: {r.py_name},' for r in model.records]
    py.append('}')
    main_events = next((u for u in model.unions if u.field == 'kind'), None)
    if main_events:
        py += ['', '#: The event classes by their "kind".', 'EVENT_TYPES = {']
        py += [f'    {v!r}: {r.py_name},' for v, r in main_events.records]
        py.append('}')
    py += ['', '#: Every method: (parameters, reply) by its full name.', 'METHODS = {']
    for iface in model.interfaces:
        for m in iface.methods:
            pre = iface_prefix(iface)
            py.append(f'    {iface.name + "." + m!r}: ({pre}{m}Params, {pre}{m}Reply),')
    py += ['}', '', '#: Every error\'s parameters by its full name.', 'ERRORS = {']
    py += [f'    {r.iface.name + "." + r.idl_name!r}: {r.py_name},' for r in model.records if r.role == 'error']
    py.append('}')
    write_lines(path, py)


# --- main ---------------------------------------------------------------------------

def main(argv):
    modes = {'--vocabulary': 3, '--python-vocabulary': 2, '--types': 3, '--python-types': 2, '--untagged': 1}
    if len(argv) < 3 or argv[1] not in modes or len(argv) < 2 + modes[argv[1]] + 1:
        sys.exit(__doc__.split('\n\n')[1])
    mode, idl = argv[1], load_idl_module(argv[2])
    outs, paths = argv[3:2 + modes[mode]], argv[2 + modes[mode]:]
    try:
        interfaces = read_interfaces(idl, paths)
        main_iface = next((i for i in interfaces if i.name == MAIN), None)
        if main_iface is None:
            raise Refused(f'{MAIN} is not among the interfaces given')
        service = interfaces[-1]
        vocab = vocabulary(main_iface)
        if mode == '--vocabulary':
            return write_vocabulary_c(main_iface, service, vocab, *outs)
        if mode == '--python-vocabulary':
            return write_vocabulary_python(outs[0], main_iface, service, vocab)
        model = Model(interfaces, vocab)
        sources = [p.rsplit('/', 1)[-1] for p in paths]
        if mode == '--types':
            write_types_h(model, sources, outs[0])
            write_types_c(model, sources, outs[1])
        elif mode == '--python-types':
            write_types_python(model, sources, outs[0])
        else:
            print('\n'.join(model.untagged))
    except Refused as e:
        sys.exit(f'gen-wire: {e}')


if __name__ == '__main__':
    main(sys.argv)
