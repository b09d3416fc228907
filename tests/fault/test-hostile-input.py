#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile input over a raw socket, table-driven. Every case gets the
contract's answer: a malformed message (not JSON, not an object, a bad
envelope, over MaxMessageBytes) closes the connection without a reply; a
well-formed call with a parameter of the wrong type or range gets
org.varlink.service.InvalidParameter naming it and the connection stays
usable. After every case the daemon is alive and a fresh connection gets
an answer to GetInfo."""

import json
import os
import socket
import sys

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

MAX_MESSAGE = 65536
WAIT = 60.0 if pt.WRAPPER else 5.0
INVALID = 'org.varlink.service.InvalidParameter'

GETINFO = b'{"method":"org.varlink.service.GetInfo"}'
SUB = b'{"method":"io.pressured.Subscribe","more":true,"parameters":'
PSI = b'{"psi":{"stall":"some","threshold_us":%s,"window_us":1000000}}}'

# Outcomes besides ('error', NAME, PARAMETER):
CLOSED = 'closed'                        # no reply, connection closed
REPLY_THEN_CLOSED = 'reply-then-closed'  # one reply, then closed
REPLY_THEN_EOF = 'reply-then-eof'        # one reply, then closed after our EOF
REPLY = 'reply'                          # one reply, connection still usable
SILENT = 'silent'                        # no reply, connection still usable


def error(name, param=None):
    return ('error', name, param)


def padded_getinfo(size):
    """A valid GetInfo call of exactly @size bytes (before its NUL)."""
    return GETINFO[:-1] + b' ' * (size - len(GETINFO)) + b'}'


# (name, bytes sent, acceptable outcomes). Where the JSON decoder cannot
# represent a value (numbers beyond 64 bits, an escaped NUL) both closing
# and InvalidParameter are contract answers; the one seen is printed.
CASES = [
    ('invalid UTF-8 in a parameter', b'{"method":"org.varlink.service.GetInfo","parameters":{"x":"\xff\xfe"}}\0',
     [CLOSED]),
    ('invalid UTF-8 in the method', b'{"method":"org.varlink.service.GetInfo\xc3"}\0', [CLOSED]),
    ('truncated UTF-8 sequence', b'{"method":"io.pressured.GetStatus","parameters":{"\xe2\x82":1}}\0', [CLOSED]),
    ('overlong UTF-8 encoding of "/"', SUB + b'{"level":"low","cgroup":"\xc0\xaf"}}\0', [CLOSED]),
    ('10000 nested arrays as the message', b'[' * 10000 + b']' * 10000 + b'\0', [CLOSED]),
    ('10000 nested arrays in a parameter', SUB + b'{"level":' + b'[' * 10000 + b']' * 10000 + b'}}\0', [CLOSED]),
    ('10000 nested objects in a parameter',
     SUB + b'{"level":' + b'{"a":' * 10000 + b'1' + b'}' * 10000 + b'}}\0', [CLOSED]),
    ('1e400', SUB + PSI % b'1e400' + b'\0', [CLOSED, error(INVALID, 'psi.threshold_us')]),
    ('-1e400', SUB + PSI % b'-1e400' + b'\0', [CLOSED, error(INVALID, 'psi.threshold_us')]),
    ('2**70', SUB + PSI % str(2 ** 70).encode() + b'\0', [CLOSED, error(INVALID, 'psi.threshold_us')]),
    ('2**64 as min_interval_ms', SUB + b'{"level":"low","min_interval_ms":%d}}\0' % 2 ** 64,
     [CLOSED, error(INVALID, 'min_interval_ms')]),
    ('2**63-1 as min_interval_ms', SUB + b'{"level":"low","min_interval_ms":%d}}\0' % (2 ** 63 - 1),
     [error(INVALID, 'min_interval_ms')]),
    ('2**33 as threshold_us', SUB + PSI % str(2 ** 33).encode() + b'\0', [error(INVALID, 'psi.threshold_us')]),
    ('negative threshold_us', SUB + PSI % b'-1' + b'\0', [error(INVALID, 'psi.threshold_us')]),
    ('negative min_interval_ms', SUB + b'{"level":"low","min_interval_ms":-5}}\0', [error(INVALID, 'min_interval_ms')]),
    ('-2**63 as min_interval_ms', SUB + b'{"level":"low","min_interval_ms":%d}}\0' % -2 ** 63,
     [error(INVALID, 'min_interval_ms')]),
    ('fraction as min_interval_ms', SUB + b'{"level":"low","min_interval_ms":1.5}}\0',
     [error(INVALID, 'min_interval_ms')]),
    ('duplicate key in the envelope', b'{"method":"org.varlink.service.GetInfo","method":"io.pressured.Reload"}\0',
     [CLOSED]),
    ('duplicate key in the parameters', SUB + b'{"level":"low","level":"critical"}}\0', [CLOSED]),
    ('level of type number', SUB + b'{"level":5}}\0', [error(INVALID, 'level')]),
    ('cgroup of type number', SUB + b'{"level":"low","cgroup":5}}\0', [error(INVALID, 'cgroup')]),
    ('cgroup of type object', SUB + b'{"level":"low","cgroup":{}}}\0', [error(INVALID, 'cgroup')]),
    ('memory_events of type string', SUB + b'{"memory_events":"yes"}}\0', [error(INVALID, 'memory_events')]),
    ('psi of type string', SUB + b'{"psi":"some 100ms 1s"}}\0', [error(INVALID, 'psi')]),
    ('psi.stall of type bool', SUB + b'{"psi":{"stall":true,"threshold_us":1,"window_us":1000000}}}\0',
     [error(INVALID, 'psi.stall')]),
    ('Inject level of type array', b'{"method":"io.pressured.Inject","parameters":{"level":[]}}\0',
     [error(INVALID, 'level')]),
    ('GetProtection cgroup of type bool', b'{"method":"io.pressured.GetProtection","parameters":{"cgroup":true}}\0',
     [error(INVALID, 'cgroup')]),
    ('GetInterfaceDescription interface of type number',
     b'{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":1}}\0',
     [error(INVALID, 'interface')]),
    ('parameters of type array', b'{"method":"org.varlink.service.GetInfo","parameters":[]}\0',
     [error(INVALID, 'parameters')]),
    ('parameters of type string', b'{"method":"org.varlink.service.GetInfo","parameters":"x"}\0',
     [error(INVALID, 'parameters')]),
    ('method of type number', b'{"method":5}\0', [CLOSED]),
    ('method missing', b'{"parameters":{}}\0', [CLOSED]),
    ('empty method', b'{"method":""}\0', [CLOSED]),
    ('more of type string', b'{"method":"io.pressured.Subscribe","more":"yes"}\0', [CLOSED]),
    ('oneway of type number', b'{"method":"org.varlink.service.GetInfo","oneway":1}\0', [CLOSED]),
    ('message is an array', b'[1]\0', [CLOSED]),
    ('message is a string', b'"org.varlink.service.GetInfo"\0', [CLOSED]),
    ('message is null', b'null\0', [CLOSED]),
    ('trailing garbage after the object', GETINFO + b'x\0', [CLOSED]),
    ('two objects in one message', GETINFO + GETINFO + b'\0', [CLOSED]),
    ('"\\u0000" inside the method', b'{"method":"org.varlink.service.GetInfo\\u0000x"}\0',
     [CLOSED, error('org.varlink.service.MethodNotFound')]),
    ('"\\u0000" inside a cgroup', SUB + b'{"level":"low","cgroup":"/a\\u0000b"}}\0',
     [CLOSED, error('io.pressured.InvalidCgroupPath')]),
    ('raw NUL inside a string (splits the message)', b'{"method":"org.varl\0ink.service.GetInfo"}\0', [CLOSED]),
    ('empty message (just NUL)', b'\0', [CLOSED]),
    ('message of only NULs', b'\0' * 64, [CLOSED]),
    ('pipelined garbage after a valid call', GETINFO + b'\0' + b'\x01garbage{{{\0', [REPLY_THEN_CLOSED]),
    ('pipelined half message after a valid call, then EOF', GETINFO + b'\0{"method":"org.var', [REPLY_THEN_EOF]),
    ('message of exactly MaxMessageBytes', padded_getinfo(MAX_MESSAGE) + b'\0', [REPLY]),
    ('message one byte over MaxMessageBytes', padded_getinfo(MAX_MESSAGE + 1) + b'\0', [CLOSED]),
    ('1 MiB message', padded_getinfo(1 << 20) + b'\0', [CLOSED]),
    ('no NUL, growing past MaxMessageBytes',
     b'{"method":"org.varlink.service.GetInfo","x":"' + b'a' * (MAX_MESSAGE + 16), [CLOSED]),
    ('oneway call with a wrong type (no reply, stays open)',
     b'{"method":"io.pressured.Inject","oneway":true,"parameters":{"level":5}}\0', [SILENT]),
]


def read_messages(s, buf, until):
    """Read until EOF, a timeout, or until(messages) holds; return (messages, rest, eof)."""
    eof = False
    while True:
        msgs = [json.loads(m) for m in buf.split(b'\0')[:-1]]
        if until(msgs):
            return msgs, buf, eof
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            d = b''
        except socket.timeout:
            return msgs, buf, eof
        if not d:
            return msgs, buf, True
        buf += d


def is_info(msg):
    return 'vendor' in msg.get('parameters', {})


def run_case(path, data, half_close):
    """Send @data; return (outcome, details)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(WAIT)
    s.connect(path)
    try:
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon closed while we were still sending
        if half_close:
            msgs, buf, eof = read_messages(s, b'', lambda m: False)
        else:
            # The first answer or the end of the connection; silence (the
            # oneway case) ends with a short timeout.
            s.settimeout(5.0 if pt.WRAPPER else 0.5)
            msgs, buf, eof = read_messages(s, b'', lambda m: len(m) > 0)
        if not eof and not half_close:
            # Still open: it must answer a further call, after whatever
            # answers the case itself still has coming.
            n = len(msgs)
            s.settimeout(WAIT)
            try:
                s.sendall(GETINFO + b'\0')
            except (BrokenPipeError, ConnectionResetError):
                pass
            msgs, buf, eof = read_messages(s, buf, lambda m: any(is_info(x) for x in m[n:]))
            if not eof:
                follow = msgs.pop()
                if 'error' in follow or not is_info(follow):
                    return 'follow-up call failed', follow
        if buf.rpartition(b'\0')[2]:
            return 'partial reply', buf[:200]
        # Whatever the daemon answers must still be what its interface declares.
        pt.validate_replies(data if eof or half_close else data + GETINFO + b'\0', msgs)
        if eof:
            if not msgs:
                return CLOSED, None
            if len(msgs) == 1 and 'error' not in msgs[0]:
                return (REPLY_THEN_EOF if half_close else REPLY_THEN_CLOSED), msgs[0]
            return 'replies-then-closed', msgs
        if not msgs:
            return SILENT, None
        if len(msgs) == 1 and 'error' in msgs[0]:
            return ('error', msgs[0]['error'], msgs[0].get('parameters', {}).get('parameter')), msgs[0]
        if len(msgs) == 1:
            return REPLY, msgs[0]
        return 'several replies', msgs
    finally:
        s.close()


def matches(outcome, expected):
    if outcome == expected:
        return True
    # error(name) without a parameter accepts any parameters
    return (isinstance(expected, tuple) and expected[2] is None and isinstance(outcome, tuple) and
            outcome[:2] == expected[:2])


def fresh_getinfo(d):
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return v.call_sync('org.varlink.service.GetInfo')
    finally:
        v.close()


def main():
    with pt.Daemon(config_text=f'[Limits]\nMaxMessageBytes={MAX_MESSAGE}\n', log_level='warning') as d:
        tally = {}
        failures = []
        for name, data, expected in CASES:
            half_close = REPLY_THEN_EOF in expected
            outcome, details = run_case(d.socket, data, half_close)
            key = outcome if isinstance(outcome, str) else outcome[1].rsplit('.', 1)[-1]
            tally[key] = tally.get(key, 0) + 1
            ok = any(matches(outcome, e) for e in expected)
            print(f'hostile input: {"ok  " if ok else "FAIL"} {name}: {outcome}', flush=True)
            if not ok:
                failures.append(f'{name}: got {outcome} {details!r:.200}, expected one of {expected}')
            if d.proc.poll() is not None:
                raise AssertionError(f'daemon died on case {name!r} (exit {d.proc.returncode})')
            info = fresh_getinfo(d)
            if info.get('parameters', {}).get('product') != 'pressured':
                raise AssertionError(f'GetInfo after case {name!r} answered {info}')
        st = d.status()
        print(f'hostile input: {len(CASES)} cases tried, ' +
              ', '.join(f'{k} {n}' for k, n in sorted(tally.items())) +
              f'; daemon alive, GetInfo answered after each; clients now {st["clients"]}', flush=True)
        pt.check(not failures, f'{len(failures)} case(s) got a wrong answer:\n' + '\n'.join(failures))
        pt.check(st['clients'] == 1, 'hostile connections left open', st['clients'])


if __name__ == '__main__':
    main()
    pt.finish()
