#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reply validator of the test harness (tests/varlink_idl.py): it
accepts what the interface declares and rejects each kind of violation
(wrong type, unknown field, missing required field, bad enum value, an
error without its parameters), and the harness's client runs it on every
message it receives, so a daemon sending a wrong reply fails the test that
received it. The daemon's own description of its interfaces parses to the
same thing the validator uses."""

import os
import socket
import sys
import threading

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402
import varlink_idl  # noqa: E402

V = varlink_idl.default_validator(pt.SOURCE_ROOT)
SUB = 'io.pressured.Subscribe'
NODE = {'cgroup': '/a', 'usage': 100, 'min': 50, 'low': None, 'emin': 50, 'elow': 0, 'min_usage': 50,
        'low_usage': 0, 'children_min_usage': 0, 'children_low_usage': 0, 'state': 'min'}
SUBSCRIBED = {'kind': 'subscribed', 'cgroup': '/', 'source': 'psi', 'resource': 'memory',
              'trigger': {'psi': {'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000},
                          'level': 'medium'},
              'adjusted': False,
              'state': {'psi': {'some_avg10': 0.0, 'some_avg60': 0.12, 'some_avg300': 0, 'some_total_us': 5}}}
PRESSURE = {'kind': 'pressure', 'cgroup': '/', 'source': 'inject', 'resource': 'memory', 'level': 'critical', 'count': 1,
            'missed': 0, 'time_us': 1, 'monotonic_us': 2, 'seq': 1, 'synthetic': True}
PROTECTION = {'kind': 'protection', 'cgroup': '/a', 'state': 'min', 'previous': 'none', 'node': NODE,
              'time_us': 1, 'monotonic_us': 2, 'seq': 1, 'count': 1, 'missed': 0}
CLEARED = {'kind': 'cleared', 'cgroup': '/', 'source': 'psi', 'resource': 'cpu', 'level': 'medium', 'seq': 3,
           'missed': 0,
           'time_us': 1, 'monotonic_us': 2, 'duration_us': 4000000, 'events': 2, 'peak': 7.5}
KILLED = {'kind': 'killed', 'cgroup': '/system.slice/x.service', 'by': 'systemd-oomd', 'reason': 'memory-pressure',
          'count': 1, 'seq': 1, 'missed': 0, 'time_us': 1, 'monotonic_us': 2}
PREKILL = {'kind': 'prekill', 'cgroup': '/system.slice/x.service', 'by': 'systemd-oomd', 'id': 3, 'deadline_us': 750002,
           'seq': 4, 'missed': 0, 'time_us': 1, 'monotonic_us': 2}
SUBSCRIBED_KILLS = {'kind': 'subscribed', 'cgroup': '/', 'source': 'kills', 'resource': 'memory', 'trigger': {},
                    'adjusted': False, 'state': {'kill_sources': ['kernel', 'systemd-oomd']}}
EPISODE = {'active_since_us': 5, 'duration_us': 10, 'events': 1, 'peak': 12.5}
STATUS = {'version': '0.1', 'uptime_us': 5, 'generation': 2,
          'takeover': {'connections': 3, 'proxied_clients': 1, 'registrations': 2, 'closed': 0, 'clean': True,
                       'time_us': 7},
          'clients': 1, 'subscriptions': 0, 'proxied_clients': 1,
          'registrations': [{'cgroup': '/', 'source': 'psi', 'resource': 'io', 'subscribers': 2,
                             'proxied': [{'pid': 7, 'cgroup': '/', 'unit': None}],
                             'trigger': {'psi': {'stall': 'full', 'threshold_us': 1, 'window_us': 2}}}],
          'cgroup': {'v2_root': '/sys/fs/cgroup', 'v1_memory_root': None, 'recursive_protection': False},
          'counters': {k: 0 for k in ('events_read', 'events_delivered', 'events_dropped',
                                      'propagations_applied', 'propagations_skipped', 'registrations_created',
                                      'registrations_removed', 'events_injected', 'protection_refreshes',
                                      'proxy_connections', 'proxy_events_sent', 'proxy_events_dropped',
                                      'proxy_invalid_requests', 'kills_kernel', 'kills_systemd_oomd')},
          'reclaim': [{'cgroup': '/a', 'reclaimed_bytes': 8192, 'last_step_bytes': 4096, 'stall_pct': 0.05,
                       'io_stall_pct': 0, 'floor_bytes': 104857600, 'state': 'backing-off'}],
          'dbus': {'connected': False, 'low_memory_monitor': 'off', 'low_memory_warnings': 0}}


def ev(event, continues=True):
    return {'parameters': {'event': event}, 'continues': continues}


def changed(obj, path, value):
    """A deep copy of @obj with the item at @path (a tuple of keys) set, or removed if @value is DELETE."""
    import copy
    out = copy.deepcopy(obj)
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    if value is DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return out


DELETE = object()

# (what, message, method, more[, request parameters]) and for BAD, last, a
# text the error must contain
GOOD = [
    ('subscribed event', ev(SUBSCRIBED), SUB, True),
    ('pressure event', ev(PRESSURE), SUB, True),
    ('protection event, state a string', ev(PROTECTION), SUB, True),
    ('removed event', ev({'kind': 'removed', 'cgroup': '/a'}, continues=False), SUB, True),
    ('killed event by systemd-oomd', ev(KILLED), SUB, True, {'kills': True}),
    ('killed event by the kernel', ev(changed(changed(changed(KILLED, ('by',), 'kernel'), ('reason',), 'oom_kill'),
                                              ('count',), 3)), SUB, True),
    ('subscribed to kills', ev(SUBSCRIBED_KILLS), SUB, True, {'kills': True}),
    ('a warning before a kill', ev(PREKILL), SUB, True, {'kills': True}),
    ('the hook answers Notify', {'parameters': {}}, 'io.systemd.oom.Prekill.Notify', False),
    ('the hook refuses a Notify with an error of io.pressured',
     {'error': 'io.pressured.PermissionDenied', 'parameters': {'reason': 'x'}}, 'io.systemd.oom.Prekill.Notify', False),
    ('subscribed to kills, nobody can report', ev(changed(SUBSCRIBED_KILLS, ('state', 'kill_sources'), [])), SUB, True),
    ('a kills registration in GetStatus',
     {'parameters': changed(STATUS, ('registrations', 0), {'cgroup': '/', 'source': 'kills', 'resource': 'memory',
                                                           'subscribers': 2, 'proxied': [], 'trigger': {}})},
     'io.pressured.GetStatus', False),
    ('pressure of an explicit PSI trigger has no level',
     ev(changed(changed(PRESSURE, ('level',), DELETE), ('source',), 'psi')), SUB, True,
     {'psi': {'stall': 'some', 'threshold_us': 1, 'window_us': 2}}),
    ('GetStatus', {'parameters': STATUS}, 'io.pressured.GetStatus', False),
    ('cleared event of PSI', ev(CLEARED), SUB, True, {'level': 'medium'}),
    ('cleared event of PSI, injected events only: peak unknown', ev(changed(CLEARED, ('peak',), None)), SUB, True,
     {'level': 'medium'}),
    ('cleared event of vmpressure',
     ev(changed(changed(changed(CLEARED, ('peak',), DELETE), ('source',), 'vmpressure'), ('peak_level',), 'low')),
     SUB, True, {'vmpressure': {'level': 'low'}}),
    ('subscribed with an active episode', ev(changed(SUBSCRIBED, ('state', 'episode'), EPISODE)), SUB, True),
    ('GetStatus with episode and history',
     {'parameters': changed(changed(STATUS, ('registrations', 0, 'episode'), EPISODE),
                            ('registrations', 0, 'history'),
                            [{'start_us': 1, 'end_us': 2, 'start_time_us': 3, 'end_time_us': 4, 'duration_us': 1,
                              'events': 1, 'peak': 0.5, 'resource': 'io'}])},
     'io.pressured.GetStatus', False),
    ('GetProtection', {'parameters': {'nodes': [NODE]}}, 'io.pressured.GetProtection', False),
    ('Inject', {'parameters': {'delivered': 3}}, 'io.pressured.Inject', False),
    ('Reload', {'parameters': {}}, 'io.pressured.Reload', False),
    ('GetInfo', {'parameters': {'vendor': 'v', 'product': 'p', 'version': '1', 'url': 'u',
                                'interfaces': ['io.pressured']}}, 'org.varlink.service.GetInfo', False),
    ('LimitExceeded', {'error': 'io.pressured.LimitExceeded', 'parameters': {'limit': 'MaxClients', 'value': 5}},
     None, False),
    ('LimitExceeded to a call', {'error': 'io.pressured.LimitExceeded',
                                 'parameters': {'limit': 'MaxRegistrations', 'value': 1}}, SUB, True),
    ('SourceUnavailable', {'error': 'io.pressured.SourceUnavailable',
                           'parameters': {'source': 'vmpressure', 'reason': 'no v1'}}, SUB, True),
    ('ExpectedMore', {'error': 'org.varlink.service.ExpectedMore', 'parameters': {}}, SUB, False),
    ('InvalidParameter', {'error': 'org.varlink.service.InvalidParameter', 'parameters': {'parameter': 'level'}},
     SUB, True),
    ('MethodNotFound', {'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': 'x.Y'}},
     'x.Y', False),
]
BAD_WITH_REQUEST = [
    ('level subscription, cleared without level', ev(changed(CLEARED, ('level',), DELETE)), SUB, True,
     {'level': 'medium'}, 'event.level: required in a "cleared" event'),
    ('level subscription, pressure without level',
     ev(changed(changed(PRESSURE, ('level',), DELETE), ('source',), 'psi')), SUB, True, {'level': 'low'},
     'event.level: required in a "pressure" event'),
]

BAD = [
    ('subscribed without its resource', ev(changed(SUBSCRIBED, ('resource',), DELETE)), SUB, True,
     'event.resource: required field of type one of (memory, cpu, io) missing'),
    ('pressure of an unknown resource', ev(changed(PRESSURE, ('resource',), 'gpu')), SUB, True,
     "event.resource: expected one of (memory, cpu, io), received 'gpu'"),
    ('cleared without its resource', ev(changed(CLEARED, ('resource',), DELETE)), SUB, True,
     'event.resource: required field'),
    ('cleared of PSI without peak', ev(changed(CLEARED, ('peak',), DELETE)), SUB, True,
     'event.peak: required in a "cleared" event'),
    ('cleared of vmpressure without peak_level',
     ev(changed(changed(CLEARED, ('peak',), DELETE), ('source',), 'vmpressure')), SUB, True,
     'event.peak_level: required in a "cleared" event'),
    ('cleared with both peaks', ev(changed(CLEARED, ('peak_level',), 'low')), SUB, True, 'exclusive'),
    ('cleared with a count', ev(changed(CLEARED, ('count',), 1)), SUB, True, 'event.count: field not declared by the interface'),
    ('cleared without duration', ev(changed(CLEARED, ('duration_us',), DELETE)), SUB, True,
     'event.duration_us: required field of type int missing'),
    ('cleared of an injection source', ev(changed(CLEARED, ('source',), 'inject')), SUB, True,
     "event.source: expected one of (psi, vmpressure), received 'inject'"),
    ('cleared peak beyond 100 percent', ev(changed(CLEARED, ('peak',), 150.0)), SUB, True,
     'a percentage in 0..100'),
    ('episode with a string peak', ev(changed(SUBSCRIBED, ('state', 'episode'), changed(EPISODE, ('peak',), 'x'))),
     SUB, True, "episode.peak: expected float, received 'x'"),
    ('LimitExceeded without value',
     {'error': 'io.pressured.LimitExceeded', 'parameters': {'limit': 'MaxRegistrations'}}, SUB, True,
     'LimitExceeded.parameters.value: required field of type int missing'),
    ('LimitExceeded with {}', {'error': 'io.pressured.LimitExceeded', 'parameters': {}}, None, False,
     'LimitExceeded.parameters.limit: required field'),
    ('LimitExceeded value a string',
     {'error': 'io.pressured.LimitExceeded', 'parameters': {'limit': 'MaxClients', 'value': '5'}}, None, False,
     "LimitExceeded.parameters.value: expected int, received '5'"),
    ('LimitExceeded with an extra field',
     {'error': 'io.pressured.LimitExceeded', 'parameters': {'limit': 'MaxClients', 'value': 5, 'max': 5}},
     None, False, 'LimitExceeded.parameters.max: field not declared'),
    ('undeclared error', {'error': 'io.pressured.TooBad', 'parameters': {}}, SUB, True,
     'io.pressured.TooBad is not declared'),
    ('wrong type: delivered a string', {'parameters': {'delivered': '3'}}, 'io.pressured.Inject', False,
     "Inject.parameters.delivered: expected int, received '3'"),
    ('wrong type: bool for int', {'parameters': {'delivered': True}}, 'io.pressured.Inject', False,
     'Inject.parameters.delivered: expected int, received True'),
    ('wrong type: float for int', ev(changed(PRESSURE, ('seq',), 1.5)), SUB, True,
     'event.seq: expected int, received 1.5'),
    ('int out of range: max as 2^64-1', {'parameters': {'nodes': [changed(NODE, ('min',), 2**64 - 1)]}},
     'io.pressured.GetProtection', False, 'nodes[0].min: expected int in the 64-bit signed range'),
    ('unknown field in a reply', {'parameters': {'delivered': 3, 'extra': 1}}, 'io.pressured.Inject', False,
     'Inject.parameters.extra: field not declared'),
    ('unknown field in an event', ev(changed(PRESSURE, ('pressure_level',), 'x')), SUB, True,
     'event.pressure_level: field not declared'),
    ('unknown field deep inside', {'parameters': changed(STATUS, ('counters', 'bogus'), 1)},
     'io.pressured.GetStatus', False, 'counters.bogus: field not declared'),
    ('reclaim state not one of the four', {'parameters': changed(STATUS, ('reclaim', 0, 'state'), 'backing_off')},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.reclaim[0].state: expected one of (probing, '),
    ('reclaim bytes below zero', {'parameters': changed(STATUS, ('reclaim', 0, 'floor_bytes'), -1)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.reclaim[0].floor_bytes: expected at least 0'),
    ('reclaim stall above 100%', {'parameters': changed(STATUS, ('reclaim', 0, 'io_stall_pct'), 100.5)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.reclaim[0].io_stall_pct: expected a percentage'),
    ('LowMemoryMonitor state not one of the four',
     {'parameters': changed(STATUS, ('dbus', 'low_memory_monitor'), 'name_taken')},
     'io.pressured.GetStatus', False,
     'GetStatus.parameters.dbus.low_memory_monitor: expected one of (off, waiting-for-bus, owner, name-taken)'),
    ('LowMemoryWarning count below zero', {'parameters': changed(STATUS, ('dbus', 'low_memory_warnings'), -1)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.dbus.low_memory_warnings: expected at least 0'),
    ('dbus missing', {'parameters': changed(STATUS, ('dbus',), DELETE)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.dbus: required field of type DBusStatus missing'),
    ('reclaim missing', {'parameters': changed(STATUS, ('reclaim',), DELETE)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.reclaim: required field of type []ReclaimEntry missing'),
    ('missing required field', {'parameters': changed(STATUS, ('uptime_us',), DELETE)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.uptime_us: required field of type int missing'),
    ('missing required field in an array item', {'parameters': {'nodes': [changed(NODE, ('usage',), DELETE)]}},
     'io.pressured.GetProtection', False, 'nodes[0].usage: required field'),
    ('null for a required field', {'parameters': changed(STATUS, ('version',), None)},
     'io.pressured.GetStatus', False, 'GetStatus.parameters.version: expected string, received None'),
    ('missing field a kind needs', ev(changed(PRESSURE, ('seq',), DELETE)), SUB, True,
     'event.seq: required field of type int missing'),
    ('injected pressure without level', ev(changed(PRESSURE, ('level',), DELETE)), SUB, True,
     'event.level: required in a "pressure" event'),
    ('field of another kind', ev(changed(SUBSCRIBED, ('seq',), 1)), SUB, True,
     'event.seq: field not declared by the interface (declared: kind, cgroup, source, resource, trigger'),
    ('bad enum value: level', ev(changed(PRESSURE, ('level',), 'extreme')), SUB, True,
     "event.level: expected one of (low, medium, critical), received 'extreme'"),
    ('bad enum value: kind', ev(changed(PRESSURE, ('kind',), 'panic')), SUB, True,
     "event.kind: expected one of (subscribed, pressure, memory_events, protection, killed, prekill, cleared, trigger_changed, "
     "removed, level), "
     "received 'panic'"),
    ('killed by someone else', ev(changed(KILLED, ('by',), 'earlyoom')), SUB, True,
     "event.by: expected one of (kernel, systemd-oomd), received 'earlyoom'"),
    ('killed by the kernel for another reason', ev(changed(changed(KILLED, ('by',), 'kernel'), ('reason',), 'x')),
     SUB, True, 'event.reason: expected "oom_kill" for the kernel'),
    ('killed without a reason', ev(changed(KILLED, ('reason',), DELETE)), SUB, True,
     'event.reason: required field of type string missing'),
    ('killed with an empty reason', ev(changed(KILLED, ('reason',), '')), SUB, True,
     'event.reason: expected a non-empty string'),
    ('killed with count 0', ev(changed(KILLED, ('count',), 0)), SUB, True, 'event.count: expected at least 1'),
    ('a warning by someone else', ev(changed(PREKILL, ('by',), 'earlyoom')), SUB, True,
     "event.by: expected \"systemd-oomd\", received 'earlyoom'"),
    ('a warning numbered 0', ev(changed(PREKILL, ('id',), 0)), SUB, True, 'event.id: expected at least 1'),
    ('a warning whose deadline is before its call', ev(changed(PREKILL, ('deadline_us',), 2)), SUB, True,
     'event.deadline_us: expected after monotonic_us 2'),
    ('a warning without its id', ev(changed(PREKILL, ('id',), DELETE)), SUB, True,
     'event.id: required field of type int missing'),
    ('killed with a source', ev(changed(KILLED, ('source',), 'kills')), SUB, True,
     'event.source: field not declared by the interface'),
    ('kills subscription without kill_sources', ev(changed(SUBSCRIBED_KILLS, ('state',), {})), SUB, True,
     'event.state.kill_sources: required in a "kills" subscription'),
    ('kill_sources naming a stranger', ev(changed(SUBSCRIBED_KILLS, ('state', 'kill_sources'), ['nohang'])), SUB,
     True, 'event.state.kill_sources: expected distinct items of kernel, systemd-oomd'),
    ('kill_sources twice the same', ev(changed(SUBSCRIBED_KILLS, ('state', 'kill_sources'), ['kernel', 'kernel'])),
     SUB, True, 'event.state.kill_sources: expected distinct items'),

    ('bad enum value deep inside', ev(changed(SUBSCRIBED, ('trigger', 'psi', 'stall'), 'most')), SUB, True,
     "trigger.psi.stall: expected one of (some, full), received 'most'"),
    ('subscribed state a string', ev(changed(SUBSCRIBED, ('state',), 'min')), SUB, True,
     "event.state: expected object (psi, counters, node, kill_sources, unavailable_kill_sources, episode), received 'min'"),
    ('protection state an object', ev(changed(PROTECTION, ('state',), {})), SUB, True,
     'event.state: expected one of (min, low, none), received {}'),
    ('array expected', {'parameters': {'nodes': NODE}}, 'io.pressured.GetProtection', False,
     'GetProtection.parameters.nodes: expected []ProtectionNode'),
    ('continues without more', {'parameters': {'delivered': 1}, 'continues': True}, 'io.pressured.Inject', False,
     'called without "more"'),
    ('continuing error', {'error': 'io.pressured.NoSuchCgroup', 'parameters': {'cgroup': '/x'}, 'continues': True},
     SUB, True, 'an error ends the call'),
    ('unknown top-level field', {'parameters': {'delivered': 1}, 'more': True}, 'io.pressured.Inject', False,
     'message.more: not a varlink reply field'),
    ('reply to an undeclared method', {'parameters': {}}, 'io.pressured.Frobnicate', False,
     'not a declared method'),
    ('not an object', [1], None, False, 'message: expected object'),
]


def test_good():
    for what, msg, method, more, *request in GOOD:
        try:
            V.check(msg, method, more, *request)
        except varlink_idl.Invalid as e:
            raise AssertionError(f'{what}: a correct message was rejected: {e}') from None


def test_bad():
    for what, msg, method, more, *request, expect in BAD + BAD_WITH_REQUEST:
        try:
            V.check(msg, method, more, *request)
        except varlink_idl.Invalid as e:
            pt.check(expect in str(e), f'{what}: rejected, but the message does not say what is wrong',
                     expect, str(e))
            continue
        raise AssertionError(f'{what}: a wrong message was accepted: {msg!r}')


def test_parser():
    i = varlink_idl.parse('''
        # comment
        interface a.b
        type T (x: ?[]int, y: [string]?T, z: (p, q), w: object, v: (n: float))
        method M() -> ()
        error E ()
    ''')
    pt.check(i.name == 'a.b', 'interface name', i.name)
    x = i.types['T'][1]
    pt.check(x['x'] == ('optional', ('array', ('int',))), 'optional array', x['x'])
    pt.check(x['y'] == ('map', ('optional', ('named', 'T'))), 'map of optional named', x['y'])
    pt.check(x['z'] == ('enum', ('p', 'q')), 'inline enum', x['z'])
    pt.check(x['v'] == ('struct', {'n': ('float',)}), 'inline struct', x['v'])
    pt.check(i.methods['M'] == (('struct', {}), ('struct', {})), 'empty method', i.methods['M'])
    pt.check(i.errors['E'] == ('struct', {}), 'empty error', i.errors['E'])


STRICT = varlink_idl.parse('''
    interface t.strict
    type N (x: int)
    type T (b: ?bool, i: ?int, f: ?float, s: ?string, o: ?object, e: ?(x, y), a: ?[]int, m: ?[string]int,
            n: ?N, r: int)
    method M() -> (t: T)
''')
# (field, value) the IDL declares, and (field, value, text the error must
# contain) for values of the wrong type: each JSON value is exactly one type.
STRICT_GOOD = [('o', {}), ('o', {'any': [1, None]}), ('f', 1), ('f', -1.5), ('i', -2**63), ('a', []), ('m', {}),
               ('e', 'y'), ('n', {'x': 0}), ('s', ''), ('b', False)] + \
    [(k, None) for k in 'bifsoeamn']
STRICT_BAD = [
    ('o', 'low', "t.o: expected object, received 'low'"),
    ('o', [], 't.o: expected object, received []'),
    ('o', 1, 't.o: expected object, received 1'),
    ('o', True, 't.o: expected object, received True'),
    ('b', 1, 't.b: expected bool, received 1'),
    ('b', 'true', "t.b: expected bool, received 'true'"),
    ('i', True, 't.i: expected int, received True'),
    ('i', 1.0, 't.i: expected int, received 1.0'),
    ('i', '1', "t.i: expected int, received '1'"),
    ('i', 2**63, 't.i: expected int in the 64-bit signed range'),
    ('f', False, 't.f: expected float, received False'),
    ('f', '1.5', "t.f: expected float, received '1.5'"),
    ('f', float('nan'), 't.f: expected a finite float'),
    ('f', float('inf'), 't.f: expected a finite float'),
    ('s', 1, 't.s: expected string, received 1'),
    ('s', {}, 't.s: expected string, received {}'),
    ('e', 'z', "t.e: expected one of (x, y), received 'z'"),
    ('e', 1, 't.e: expected one of (x, y), received 1'),
    ('a', {}, 't.a: expected []int, received {}'),
    ('a', [1, 'x'], "t.a[1]: expected int, received 'x'"),
    ('m', [], 't.m: expected [string]int, received []'),
    ('m', {'k': 'v'}, "t.m['k']: expected int, received 'v'"),
    ('n', 'x', "t.n: expected object (x), received 'x'"),
    ('n', {}, 't.n.x: required field of type int missing'),
    ('n', {'x': 1, 'y': 2}, 't.n.y: field not declared'),
    ('r', None, 't.r: expected int, received None'),
]


def test_strict_types():
    """Every IDL type accepts its own JSON values and nothing else."""
    v = varlink_idl.Validator(STRICT)
    for field, value in STRICT_GOOD:
        t = {'r': 1, field: value}
        try:
            v.check({'parameters': {'t': t}}, 't.strict.M')
        except varlink_idl.Invalid as e:
            raise AssertionError(f'{field}={value!r}: a correct value was rejected: {e}') from None
    for field, value, expect in STRICT_BAD:
        t = {'r': 1, field: value}
        try:
            v.check({'parameters': {'t': t}}, 't.strict.M')
        except varlink_idl.Invalid as e:
            pt.check(expect in str(e), f'{field}={value!r}: rejected, but the message does not say why',
                     expect, str(e))
            continue
        raise AssertionError(f'{field}={value!r} was accepted for {STRICT.types["T"][1][field]}')
    pt.check(not v.check({'parameters': {'t': {'r': 1}}}, 't.strict.M'), 'only the required field')


def test_event_state_declared_object():
    """An event is checked as its type declares it: a "state" declared
    ?object is no string, whatever kind of event carries it. (This is how
    io.pressured once declared the protection event's state, which the
    daemon sends as a string; the validator had let its own table of kinds
    override the IDL and accepted it.)"""
    i = varlink_idl.parse('''
        interface io.pressured
        type ProtectionEvent (kind: (protection), cgroup: string, state: ?object)
        method Subscribe() -> (event: object)
    ''')
    v = varlink_idl.Validator(i)
    v.check(ev({'kind': 'protection', 'cgroup': '/', 'state': {}}), SUB, True)
    try:
        v.check(ev({'kind': 'protection', 'cgroup': '/', 'state': 'low'}), SUB, True)
    except varlink_idl.Invalid as e:
        pt.check("event.state: expected object, received 'low'" in str(e), 'names the field and the type', str(e))
    else:
        raise AssertionError('a string "state" was accepted where the IDL declares ?object')
    try:
        v.check(ev({'kind': 'pressure', 'cgroup': '/'}), SUB, True)
    except varlink_idl.Invalid as e:
        pt.check("event.kind: expected one of (protection), received 'pressure'" in str(e),
                 'a kind no type declares', str(e))
    else:
        raise AssertionError('an event of an undeclared kind was accepted')


def test_idl_declares_all_used_types():
    """A type used but not declared is an error of the IDL, found when it
    is loaded rather than when a message happens to use it."""
    try:
        varlink_idl.Validator(varlink_idl.parse('interface a.b\nmethod M() -> (x: ?Missing)'))
    except ValueError as e:
        pt.check('Missing' in str(e), 'names the type', str(e))
    else:
        raise AssertionError('an IDL using an undeclared type was accepted')


def fake_daemon(path, reply):
    """A one-shot server that answers the first call on @path with @reply."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        c, _ = srv.accept()
        with c:
            buf = b''
            while b'\0' not in buf:
                buf += c.recv(4096)
            c.sendall(reply + b'\0')
            c.recv(1)
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def test_harness_checks_every_reply(tmp):
    """The harness's client rejects a wrong reply where the test receives it."""
    path = os.path.join(tmp, 'fake.sock')
    fake_daemon(path, b'{"error":"io.pressured.LimitExceeded","parameters":{"limit":"MaxRegistrations"}}')
    v = pt.Varlink(path, timeout=10)
    v.call('io.pressured.Subscribe', {'level': 'medium'}, more=True)
    try:
        r = v.recv(timeout=10)
    except varlink_idl.Invalid as e:
        pt.check('value: required field' in str(e), 'the harness names the missing field', str(e))
    else:
        raise AssertionError(f'the harness accepted a LimitExceeded without "value": {r!r}')
    v.close()
    os.unlink(path)

    fake_daemon(path, b'{"parameters":{"event":{"kind":"pressure","cgroup":"/","source":"inject","resource":"memory",'
                      b'"level":"medium","count":"1","missed":0,"time_us":1,"monotonic_us":1,"seq":1}},'
                      b'"continues":true}')
    v = pt.Varlink(path, timeout=10)
    v.send_raw(b'{"method":"io.pressured.Subscribe","more":true,"parameters":{"level":"medium"}}\0')
    try:
        r = v.recv(timeout=10)
    except varlink_idl.Invalid as e:
        pt.check("event.count: expected int, received '1'" in str(e), 'the harness names the wrong type', str(e))
    else:
        raise AssertionError(f'the harness accepted a count that is a string: {r!r}')
    v.close()


def test_daemon_descriptions():
    """The interfaces the daemon describes are the ones the validator checks against."""
    with pt.Daemon() as d:
        v = pt.Varlink(d.socket)
        for name in ('io.pressured', 'org.varlink.service'):
            r = v.call_sync('org.varlink.service.GetInterfaceDescription', {'interface': name})
            served = varlink_idl.parse(r['parameters']['description'])
            mine = V.interfaces[name]
            for what in ('types', 'methods', 'errors'):
                pt.check(getattr(served, what) == getattr(mine, what), f'{name}: {what} as described by the daemon',
                         sorted(getattr(served, what)), sorted(getattr(mine, what)))
        v.close()


def main():
    import tempfile
    test_parser()
    test_strict_types()
    test_event_state_declared_object()
    test_idl_declares_all_used_types()
    test_good()
    test_bad()
    with tempfile.TemporaryDirectory() as tmp:
        test_harness_checks_every_reply(tmp)
    test_daemon_descriptions()
    print(f'ok: {len(GOOD) + len(STRICT_GOOD)} correct messages accepted, '
          f'{len(BAD) + len(BAD_WITH_REQUEST) + len(STRICT_BAD)} wrong ones rejected')


if __name__ == '__main__':
    main()
    pt.finish()
