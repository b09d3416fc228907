#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The generator of the typed bindings (daemon/protocol/gen-wire.py) and the
Python records it writes (pressured/_types.py, read by pressured/_records.py).

- The string members that are neither @cgroup nor @host-path are exactly
  those of tests/unit/data/untagged-strings.txt: a new string member fails
  here until someone says what it is (a tag, or a line in that list).
- The generator refuses what it must: an untagged string named like a path,
  @subscriber outside an *Event type or on a string, a "@oneof" naming an
  unknown type or one without the one-valued field, a tag on the wrong
  type, an unknown tag, @cgroup with @host-path, a member named like a C
  keyword. Each on the real interface with one bad type added.
- Every class of _types.py has the members of its record in the IDL's
  order (the one-valued "kind" as a class constant).
- Every golden message (tests/unit/data/wire, what the daemon writes today)
  decodes into those classes and encodes back to the same JSON (null and
  absent alike, as the module treats them); the strict reader refuses
  unknown members and names.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import pressured_test as pt  # noqa: E402
import varlink_idl  # noqa: E402
from pressured import _records, _types  # noqa: E402

PROTOCOL = os.path.join(pt.SOURCE_ROOT, 'daemon', 'protocol')
GEN = os.path.join(PROTOCOL, 'gen-wire.py')
IDL_PY = os.path.join(pt.SOURCE_ROOT, 'tests', 'varlink_idl.py')
IDLS = [os.path.join(PROTOCOL, n) for n in ('io.pressured.varlink', 'io.systemd.oom.Prekill.varlink',
                                            'io.systemd.Metrics.varlink')]
DATA = os.path.join(pt.SOURCE_ROOT, 'tests', 'unit', 'data')


def generate(idls, mode, *outputs):
    return subprocess.run([sys.executable, GEN, mode, IDL_PY, *outputs, *idls], capture_output=True, text=True)


def test_untagged():
    r = generate(IDLS, '--untagged')
    pt.check(r.returncode == 0, 'gen-wire.py --untagged runs', r.stderr)
    with open(os.path.join(DATA, 'untagged-strings.txt')) as f:
        want = [line.strip() for line in f if line.strip() and not line.startswith('#')]
    got = r.stdout.split()
    pt.check(got == want, 'the untagged string members are those of untagged-strings.txt (tag a new path member; '
             'list a new name or text member there)', sorted(set(got) - set(want)), sorted(set(want) - set(got)))
    print(f'{len(got)} untagged string members, as listed', flush=True)


REFUSALS = [
    ('an untagged string named like a path', 'type Bad (\n  parent_dir: string\n)',
     'Bad.parent_dir: a string named like a path carries neither @cgroup nor @host-path'),
    ('@subscriber outside an *Event type', 'type Bad (\n  # @subscriber\n  seq: int\n)',
     'Bad.seq: @subscriber outside an *Event type'),
    ('@subscriber on a string', 'type BadEvent (\n  kind: (bad),\n  # @subscriber\n  by: string\n)',
     'BadEvent.by: @subscriber on a member of type string'),
    ('@oneof of an unknown type', 'type Bad (\n  # @oneof kind KilledEvent NoSuchEvent\n  event: object\n)',
     '@oneof names NoSuchEvent, which is no struct type'),
    ('@oneof of a type without the field', 'type Bad (\n  # @oneof kind KilledEvent PsiTrigger\n  event: object\n)',
     '@oneof type PsiTrigger has no one-valued enum \'kind\''),
    ('@oneof on a string', 'type Bad (\n  # @oneof kind KilledEvent\n  event: string\n)',
     'Bad.event: @oneof on a member of type string'),
    ('@cgroup on an int', 'type Bad (\n  # @cgroup\n  n: int\n)', 'Bad.n: @cgroup on a member of type int'),
    ('@host-path on a list', 'type Bad (\n  # @host-path\n  roots: []string\n)',
     'Bad.roots: @host-path on a member of type array'),
    ('an unknown tag', 'type Bad (\n  # @cgroups\n  cgroup: string\n)', 'Bad.cgroup: unknown tag @cgroups'),
    ('@cgroup with @host-path', 'type Bad (\n  # @cgroup\n  # @host-path\n  cgroup: string\n)',
     'Bad.cgroup: @cgroup and @host-path exclude each other'),
    ('a member named like a C keyword', 'type Bad (\n  default: int\n)',
     'Bad.default: a member named like a C or Python keyword'),
    ('a map', 'type Bad (\n  m: [string]int\n)', 'Bad.m: the bindings have no map type'),
]


def test_refusals():
    with open(IDLS[0]) as f:
        text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, 'io.pressured.varlink')
        with open(good, 'w') as f:
            f.write(text)
        r = generate([good], '--types', os.path.join(tmp, 'h'), os.path.join(tmp, 'c'))
        pt.check(r.returncode == 0, 'the interface as it is generates', r.stderr)
        for what, extra, message in REFUSALS:
            bad = os.path.join(tmp, 'io.pressured.varlink')
            with open(bad, 'w') as f:
                f.write(text + '\n' + extra + '\n')
            r = generate([bad], '--types', os.path.join(tmp, 'h'), os.path.join(tmp, 'c'))
            pt.check(r.returncode != 0 and message in r.stderr, f'the generator refuses {what}', r.stderr, message)
    print(f'{len(REFUSALS)} refusals', flush=True)


def record_members(iface, name):
    """The members of the record the class @name stands for, or None."""
    prefix = {'io.pressured': '', 'org.varlink.service': 'Varlink'}.get(iface.name, iface.name.rsplit('.', 1)[1])
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):]
    if rest in iface.types and iface.types[rest][0] == 'struct':
        return iface.types[rest][1]
    for suffix, index in (('Params', 0), ('Reply', 1)):
        if rest.endswith(suffix) and rest[:-len(suffix)] in iface.methods:
            return iface.methods[rest[:-len(suffix)]][index][1]
    for e, t in iface.errors.items():
        if rest in (e, e + 'Error'):
            return t[1]
    return None


def test_classes():
    interfaces = varlink_idl.served_interfaces(pt.SOURCE_ROOT) + [varlink_idl.parse(varlink_idl.ORG_VARLINK_SERVICE)]
    n = 0
    for name, cls in _types.CLASSES.items():
        found = [m for m in (record_members(i, name) for i in interfaces) if m is not None]
        pt.check(len(found) == 1, f'{name} stands for one record of the interfaces', len(found))
        members = list(found[0])
        pt.check([f[0] for f in cls.FIELDS] == members, f'{name}.FIELDS are its members in order', members)
        consts = [f[0] for f in cls.FIELDS if f[1] == 'const']
        fields = [f.name for f in __import__('dataclasses').fields(cls)]
        pt.check(fields == [m for m in members if m not in consts], f'{name} has its members as attributes', fields)
        n += 1
    pt.check(set(_types.EVENT_TYPES) == set(varlink_idl.Validator(*interfaces).event_types['io.pressured']),
             'EVENT_TYPES has every kind of event', sorted(_types.EVENT_TYPES))
    print(f'{n} classes match their records', flush=True)


def without_nulls(v):
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


# What the daemon writes today that its interface does not allow (test-wire.c lists them too).
KNOWN_VIOLATIONS = {'event-protection-no-node.json': 'event.node: missing',
                    'event-pressure-vmpressure.json': 'event.seq: out of range'}

METHODS = [('reply-get-info', 'org.varlink.service.GetInfo'),
           ('reply-get-interface-description', 'org.varlink.service.GetInterfaceDescription'),
           ('reply-get-status', 'io.pressured.GetStatus'), ('reply-get-protection', 'io.pressured.GetProtection'),
           ('reply-get-headroom', 'io.pressured.GetHeadroom'), ('reply-inject', 'io.pressured.Inject'),
           ('reply-reload', 'io.pressured.Reload'), ('reply-subscribe', 'io.pressured.Subscribe'),
           ('subscribed-', 'io.pressured.Subscribe'), ('event-', 'io.pressured.Subscribe'),
           ('report-list', 'io.systemd.Metrics.List'), ('report-describe', 'io.systemd.Metrics.Describe')]


def test_golden():
    d = os.path.join(DATA, 'wire')
    messages = 0
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            lines = f.read().splitlines()
        for line in lines:
            msg = json.loads(line)
            if 'error' in msg:
                cls = _types.ERRORS[msg['error']]
            else:
                cls = _types.METHODS[next(m for p, m in METHODS if name.startswith(p))][1]
            try:
                rec = _records.decode(cls, msg['parameters'])
            except _records.DecodeError as e:
                pt.check(KNOWN_VIOLATIONS.get(name) == f'{e.path}: {e.why.split(":")[0]}',
                         f'{name}: a known violation of the interface', str(e))
                continue
            pt.check(name not in KNOWN_VIOLATIONS, f'{name} is no longer a violation: take it off the list')
            again = _records.encode(rec)
            pt.check(again == without_nulls(msg['parameters']), f'{name}: decoded and encoded again', line, again)
            messages += 1
    pt.check(messages > 100, 'the golden messages were read', messages)
    print(f'{messages} golden messages decoded and encoded again', flush=True)


def test_strict():
    for value, cls, why in [({'level': 'low', 'bogus': 1}, _types.SubscribeParams, 'bogus: not a member'),
                            ({'level': 'extreme'}, _types.SubscribeParams, 'level: not one of'),
                            ({'psi': {'stall': 'some', 'threshold_us': 1}}, _types.SubscribeParams,
                             'psi.window_us: missing')]:
        try:
            _records.decode(cls, value, lenient=False)
            pt.fail(f'{value} was accepted')
        except _records.DecodeError as e:
            pt.check(str(e).startswith(why), f'{value} is refused: {why}', str(e))
    rec = _records.decode(_types.SubscribeParams, {'level': 'extreme', 'future': True})
    pt.check(rec.level == 'extreme', 'a lenient reader keeps an unknown name and skips an unknown member', rec)
    try:
        _records.decode(_types.SubscribeReply, {'event': {'kind': 'new'}})
        pt.fail('an unknown kind was accepted')
    except _records.UnknownKind as e:
        pt.check(e.path == 'event.kind', 'an unknown kind is UnknownKind at event.kind', e.path)


def main():
    test_untagged()
    test_refusals()
    test_classes()
    test_golden()
    test_strict()
    pt.finish()


main()
