#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The varlink service of a running daemon: org.varlink.service (GetInfo,
GetInterfaceDescription, whose text must parse as varlink IDL), the
standard errors (InterfaceNotFound, MethodNotFound, InvalidParameter naming
the parameter, ExpectedMore), pipelined and oneway calls, and hostile
input (malformed JSON, a non-object, an oversized message) that closes only
the offending connection.

Only one part needs root: that a subscriber still receives the events
Inject sends (Inject is reserved to root) after each hostile input, on a
cgroup of the test's own. Without root that part is left out, saying so,
the rest runs and the test then exits 77."""

import contextlib
import json
import os
import re
import socket
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds


class IdlError(Exception):
    pass


class IdlParser:
    """A checker for the varlink interface definition language.

    interface NAME, then any number of
      type NAME (STRUCT | ENUM)
      method NAME STRUCT -> STRUCT
      error NAME STRUCT
    where a type is bool, int, float, string, object, a type name, a struct,
    an enum, []T, [string]T, or ?T (not ??T). '#' starts a comment.
    """

    TOKEN_RE = re.compile(r'\s+|#[^\n]*|->|\[\]|\[string\]|[(),:?]|[A-Za-z0-9_.-]+|.', re.S)
    INTERFACE_RE = re.compile(r'^[A-Za-z](?:-*[A-Za-z0-9])*(?:\.[A-Za-z0-9](?:-*[A-Za-z0-9])*)+$')
    TYPE_NAME_RE = re.compile(r'^[A-Z][A-Za-z0-9]*$')
    FIELD_RE = re.compile(r'^[A-Za-z](?:_?[A-Za-z0-9])*$')
    BUILTIN = {'bool', 'int', 'float', 'string', 'object'}

    def __init__(self, text):
        self.tokens = []
        for m in self.TOKEN_RE.finditer(text):
            tok = m.group(0)
            if tok.isspace() or tok.startswith('#'):
                continue
            line = text.count('\n', 0, m.start()) + 1
            self.tokens.append((tok, line))
        self.pos = 0
        self.used_types = []
        self.members = {}

    def peek(self, ahead=0):
        i = self.pos + ahead
        return self.tokens[i][0] if i < len(self.tokens) else None

    def line(self):
        return self.tokens[min(self.pos, len(self.tokens) - 1)][1] if self.tokens else 0

    def next(self):
        if self.pos >= len(self.tokens):
            raise IdlError('unexpected end of text')
        tok = self.tokens[self.pos][0]
        self.pos += 1
        return tok

    def expect(self, want):
        line = self.line()
        tok = self.next()
        if tok != want:
            raise IdlError(f'line {line}: expected {want!r}, got {tok!r}')

    def name(self, regex, what):
        line = self.line()
        tok = self.next()
        if not regex.match(tok):
            raise IdlError(f'line {line}: {tok!r} is not a valid {what}')
        return tok

    def parse(self):
        self.expect('interface')
        iface = self.name(self.INTERFACE_RE, 'interface name')
        while self.peek() is not None:
            line = self.line()
            kw = self.next()
            if kw == 'type':
                name = self.declare('type')
                if self.is_struct():
                    self.struct()
                else:
                    self.enum()
            elif kw == 'method':
                name = self.declare('method')
                self.struct()
                self.expect('->')
                self.struct()
            elif kw == 'error':
                name = self.declare('error')
                self.struct()
            else:
                raise IdlError(f'line {line}: expected type, method or error, got {kw!r}')
            del name
        types = {n for n, kind in self.members.items() if kind == 'type'}
        for t, line in self.used_types:
            if t not in types:
                raise IdlError(f'line {line}: type {t} is used but not declared')
        return iface, self.members

    def declare(self, kind):
        line = self.line()
        name = self.name(self.TYPE_NAME_RE, f'{kind} name')
        if name in self.members:
            raise IdlError(f'line {line}: {name} is declared twice')
        self.members[name] = kind
        return name

    def is_struct(self):
        # '(' then ')' or 'name :' is a struct; '(' then 'name ,|)' an enum.
        if self.peek() != '(':
            raise IdlError(f'line {self.line()}: expected "("')
        return self.peek(1) == ')' or self.peek(2) == ':'

    def struct(self):
        self.expect('(')
        seen = set()
        if self.peek() == ')':
            self.next()
            return
        while True:
            line = self.line()
            field = self.name(self.FIELD_RE, 'field name')
            if field in seen:
                raise IdlError(f'line {line}: field {field} appears twice')
            seen.add(field)
            self.expect(':')
            self.type()
            tok = self.next()
            if tok == ')':
                return
            if tok != ',':
                raise IdlError(f'line {line}: expected "," or ")" after field {field}, got {tok!r}')

    def enum(self):
        self.expect('(')
        seen = set()
        while True:
            line = self.line()
            value = self.name(self.FIELD_RE, 'enum value')
            if value in seen:
                raise IdlError(f'line {line}: enum value {value} appears twice')
            seen.add(value)
            tok = self.next()
            if tok == ')':
                return
            if tok != ',':
                raise IdlError(f'line {line}: expected "," or ")" in an enum, got {tok!r}')

    def type(self, allow_maybe=True):
        line = self.line()
        tok = self.peek()
        if tok == '?':
            if not allow_maybe:
                raise IdlError(f'line {line}: "??" is not a type')
            self.next()
            self.type(allow_maybe=False)
        elif tok in ('[]', '[string]'):
            self.next()
            self.type()
        elif tok == '(':
            if self.is_struct():
                self.struct()
            else:
                self.enum()
        elif tok in self.BUILTIN:
            self.next()
        else:
            name = self.name(self.TYPE_NAME_RE, 'type')
            self.used_types.append((name, line))


def parse_idl(text):
    return IdlParser(text).parse()


def self_test_parser():
    """The checker must reject broken text, or passing it would prove nothing."""
    good = 'interface a.b\n# c\ntype T (x: ?[]int, y: [string](p, q), z: object)\nmethod M(t: T) -> ()\nerror E ()\n'
    parse_idl(good)
    bad = [
        'type T (x: int)\n',                               # no interface line
        'interface nodots\n',                              # interface name without a dot
        'interface a.b\ntype T (x: integer)\n',            # unknown type
        'interface a.b\ntype T (x: ??int)\n',              # double maybe
        'interface a.b\nmethod M(x: int)\n',               # method without ->
        'interface a.b\ntype T (x: int,, y: int)\n',       # stray comma
        'interface a.b\ntype T (x: int)\ntype T (y: int)\n',  # declared twice
        'interface a.b\nerror E (x: U)\n',                 # undeclared type
        'interface a.b\ntype T (x int)\n',                 # missing colon
    ]
    for text in bad:
        try:
            parse_idl(text)
        except IdlError:
            continue
        raise AssertionError(f'the IDL checker accepted broken text {text!r}')


def expect_error(reply, name, **params):
    pt.check(reply.get('error') == name, f'expected {name}', reply)
    for k, v in params.items():
        pt.check(reply.get('parameters', {}).get(k) == v, f'{name}: parameter {k} should be {v!r}', reply)


def test_info(d):
    v = pt.Varlink(d.socket)
    r = v.call_sync('org.varlink.service.GetInfo')
    p = r.get('parameters', {})
    for key in ('vendor', 'product', 'version', 'url'):
        pt.check(isinstance(p.get(key), str) and p[key], f'GetInfo {key} is a non-empty string', r)
    pt.check(isinstance(p.get('interfaces'), list), 'GetInfo interfaces is a list', r)
    pt.check({'org.varlink.service', 'io.pressured'} <= set(p['interfaces']), 'GetInfo lists both interfaces', r)
    pt.check('error' not in r and 'continues' not in r, 'GetInfo is a plain reply', r)

    with open(os.path.join(pt.SOURCE_ROOT, 'daemon', 'protocol', 'io.pressured.varlink')) as f:
        text = f.read()
    r = v.call_sync('org.varlink.service.GetInterfaceDescription', {'interface': 'io.pressured'})
    desc = r.get('parameters', {}).get('description')
    pt.check(desc == text, 'the description of io.pressured is daemon/protocol/io.pressured.varlink verbatim',
             (desc or '')[:80])
    iface, members = parse_idl(desc)
    pt.check(iface == 'io.pressured', 'interface name', iface)
    for method in ('Subscribe', 'GetStatus', 'GetProtection', 'Inject', 'Reload'):
        pt.check(members.get(method) == 'method', f'io.pressured declares method {method}', members)
    for error in ('NoSuchCgroup', 'InvalidCgroupPath', 'PermissionDenied', 'SourceUnavailable',
                  'InvalidTrigger', 'LimitExceeded', 'ConfigurationRejected'):
        pt.check(members.get(error) == 'error', f'io.pressured declares error {error}', members)

    r = v.call_sync('org.varlink.service.GetInterfaceDescription', {'interface': 'org.varlink.service'})
    iface, members = parse_idl(r['parameters']['description'])
    pt.check(iface == 'org.varlink.service', 'service interface name', iface)
    for name in ('GetInfo', 'GetInterfaceDescription'):
        pt.check(members.get(name) == 'method', f'org.varlink.service declares {name}', members)
    for name in ('InterfaceNotFound', 'MethodNotFound', 'InvalidParameter', 'ExpectedMore'):
        pt.check(members.get(name) == 'error', f'org.varlink.service declares {name}', members)
    v.close()


def test_errors(d):
    v = pt.Varlink(d.socket)
    expect_error(v.call_sync('org.varlink.service.GetInterfaceDescription', {'interface': 'com.example.nope'}),
                 'org.varlink.service.InterfaceNotFound', interface='com.example.nope')
    expect_error(v.call_sync('com.example.nope.Frob', {}), 'org.varlink.service.InterfaceNotFound',
                 interface='com.example.nope')
    expect_error(v.call_sync('io.pressured.Frobnicate', {}), 'org.varlink.service.MethodNotFound',
                 method='io.pressured.Frobnicate')
    expect_error(v.call_sync('org.varlink.service.Frobnicate', {}), 'org.varlink.service.MethodNotFound',
                 method='org.varlink.service.Frobnicate')

    def sub_error(params):
        v.call('io.pressured.Subscribe', params, more=True)
        return v.recv()

    invalid = 'org.varlink.service.InvalidParameter'
    expect_error(sub_error({'level': 'medium', 'bogus': 1}), invalid, parameter='bogus')
    expect_error(sub_error({'level': 5}), invalid, parameter='level')
    expect_error(sub_error({'level': 'extreme'}), invalid, parameter='level')
    expect_error(sub_error({'psi': {'stall': 'some', 'threshold_us': 'x', 'window_us': 1000000}}), invalid,
                 parameter='psi.threshold_us')
    expect_error(sub_error({'level': 'medium', 'min_interval_ms': -1}), invalid, parameter='min_interval_ms')
    expect_error(sub_error({'level': 'medium', 'cgroup': 7}), invalid, parameter='cgroup')
    expect_error(sub_error({'memory_events': 'yes'}), invalid, parameter='memory_events')
    expect_error(v.call_sync('io.pressured.GetStatus', {'verbose': True}), invalid, parameter='verbose')
    expect_error(v.call_sync('io.pressured.Inject', {'level': 3}), invalid, parameter='level')
    expect_error(v.call_sync('org.varlink.service.GetInterfaceDescription', {}), invalid, parameter='interface')

    v.send_raw(b'{"method": "io.pressured.GetStatus", "parameters": [1]}\0')
    expect_error(v.recv(), invalid, parameter='parameters')

    # A stream method without "more".
    expect_error(v.call_sync('io.pressured.Subscribe', {'level': 'medium'}), 'org.varlink.service.ExpectedMore')
    # After all those errors the connection still works and nothing is subscribed.
    st = v.call_sync('io.pressured.GetStatus')['parameters']
    pt.check(st['subscriptions'] == 0 and st['registrations'] == [], 'failed calls left nothing behind', st)
    v.close()


def test_pipelined(d):
    v = pt.Varlink(d.socket)
    calls = [
        {'method': 'org.varlink.service.GetInfo'},
        {'method': 'io.pressured.GetStatus'},
        {'method': 'io.pressured.Frobnicate'},
        {'method': 'org.varlink.service.GetInterfaceDescription', 'parameters': {'interface': 'org.varlink.service'}},
        {'method': 'io.pressured.GetStatus', 'parameters': {'nope': 1}},
        {'method': 'org.varlink.service.GetInfo'},
    ]
    v.send_raw(b''.join(json.dumps(c).encode() + b'\0' for c in calls))
    replies = [v.recv(timeout=WAIT) for _ in calls]
    pt.check('vendor' in replies[0].get('parameters', {}), 'pipelined reply 1 is GetInfo', replies[0])
    pt.check('uptime_us' in replies[1].get('parameters', {}), 'pipelined reply 2 is GetStatus', replies[1])
    pt.check(replies[2].get('error') == 'org.varlink.service.MethodNotFound', 'pipelined reply 3', replies[2])
    pt.check('org.varlink.service' in replies[3].get('parameters', {}).get('description', ''),
             'pipelined reply 4 is the description', replies[3])
    pt.check(replies[4].get('error') == 'org.varlink.service.InvalidParameter', 'pipelined reply 5', replies[4])
    pt.check('vendor' in replies[5].get('parameters', {}), 'pipelined reply 6 is GetInfo', replies[5])

    # Oneway calls get no reply: the next thing read is the normal call's answer.
    v.call('io.pressured.GetStatus', oneway=True)
    v.call('io.pressured.Frobnicate', oneway=True)
    v.call('org.varlink.service.GetInterfaceDescription', {'interface': 'nope.nope'}, oneway=True)
    v.call('org.varlink.service.GetInfo')
    r = v.recv(timeout=WAIT)
    pt.check('vendor' in r.get('parameters', {}), 'after oneway calls the first reply is GetInfo\'s', r)
    # Separately sent oneway call, then a normal one.
    v.call('io.pressured.GetStatus', oneway=True)
    r = v.call_sync('org.varlink.service.GetInfo')
    pt.check('vendor' in r.get('parameters', {}), 'a separately sent oneway call got no reply', r)
    pt.check(v.buf == b'', 'nothing else was received', v.buf)
    v.close()


def send_bad(d, data):
    """Send @data on a fresh connection; True if the daemon closed it."""
    v = pt.Varlink(d.socket)
    try:
        v.send_raw(data)
    except (BrokenPipeError, ConnectionResetError):
        return True
    closed = False
    try:
        # Drain anything (there should be nothing) until EOF.
        v.sock.settimeout(WAIT)
        while True:
            chunk = v.sock.recv(65536)
            if not chunk:
                closed = True
                break
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    v.close()
    return closed


def test_hostile(d, cg):
    """@cg: an empty cgroup for a subscriber that must keep receiving
    injected events (real pressure on / would interleave its events), or
    None to leave that out."""
    sub = None
    if cg:
        sub = pt.Varlink(d.socket)
        first = sub.subscribe(cgroup=cg, level='medium')
        pt.check(first['parameters']['event']['kind'] == 'subscribed', 'subscribed', first)
    bystander = pt.Varlink(d.socket)
    pt.check('parameters' in bystander.call_sync('io.pressured.GetStatus'), 'bystander served')

    cases = [
        ('malformed JSON', b'{"method": "io.pressured.GetStatus",\0'),
        ('not JSON at all', b'hello daemon\0'),
        ('a JSON array', b'[1, 2, 3]\0'),
        ('a JSON string', b'"io.pressured.GetStatus"\0'),
        ('an object without method', b'{"parameters": {}}\0'),
        ('1 MiB message', b'{"method": "io.pressured.GetStatus", "parameters": {"x": "'
         + b'a' * (1 << 20) + b'"}}\0'),
        ('1 MiB without a terminator', b'x' * (1 << 20)),
    ]
    seq = 0
    for what, data in cases:
        pt.check(send_bad(d, data), f'the daemon closes a connection that sent {what}')
        # Everybody else is still served.
        r = bystander.call_sync('io.pressured.GetStatus')
        pt.check('parameters' in r, f'a bystander is served after {what}', r)
        if not sub:
            continue
        r = d.inject('medium', cg)
        pt.check(r.get('parameters', {}).get('delivered') == 1, f'inject after {what}', r)
        ev = sub.recv(timeout=WAIT)['parameters']['event']
        seq += 1
        pt.check(ev['kind'] == 'pressure' and ev['seq'] == seq and ev['missed'] == 0,
                 f'the subscriber still receives events after {what}', ev)
    st = d.status()
    pt.check(st['subscriptions'] == (1 if sub else 0), 'the subscription survived', st['subscriptions'])
    if sub:
        sub.close()
    bystander.close()


def main():
    self_test_parser()
    with contextlib.ExitStack() as stack:
        cg = None
        if os.geteuid() == 0:
            cg = stack.enter_context(pt.quiet_cgroup())
        else:
            pt.skip_part('that a subscriber still receives injected events after each hostile input: '
                         'needs root (Inject is reserved to root; its cgroup is made in the machine\'s '
                         'cgroup2 hierarchy)')
        d = stack.enter_context(pt.Daemon())
        test_info(d)
        test_errors(d)
        test_pipelined(d)
        test_hostile(d, cg)
    pt.finish()


if __name__ == '__main__':
    main()
