# SPDX-License-Identifier: MIT
"""Check what the daemon sends against its varlink interfaces.

parse() reads varlink IDL (interface, type, method, error; structs, enums,
optional ?T, arrays []T, maps [string]T, object, and systemd's any). A
Validator holds the parsed io.pressured (daemon/protocol/io.pressured.varlink),
the other interfaces the daemon serves (daemon/protocol/*.varlink: systemd's
io.systemd.Metrics on the report socket) and org.varlink.service
and checks one received message against the call it answers: a reply's
parameters against the method's output, an error against the declared
error's parameters. Every violation raises Invalid with the path of the
field, what the interface expects and what was received.

Varlink has no sum types, so io.pressured declares one type per kind of
event (SubscribedEvent, PressureEvent, ...; each has a "kind" field that is
an enum of that one kind) and Subscribe returns the event as object. The
Validator finds the event's type by its "kind" and checks the event
against it like any other value. A few rules of the public contract that
the IDL cannot express (a field required only with some subscriptions,
fields that exclude each other) are checked on top, in check_event(); they
only ever add requirements: what the IDL declares is always checked as
declared.

The harness (pressured_test.Varlink) runs every message it receives
through here, so every integration, fault and kernel test checks every
reply, event and error it gets.
"""
import math
import os
import re

INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1

# The standard interface every varlink service implements (varlink.org),
# as the daemon describes it in GetInterfaceDescription.
ORG_VARLINK_SERVICE = '''
interface org.varlink.service
method GetInfo() -> (vendor: string, product: string, version: string, url: string, interfaces: []string)
method GetInterfaceDescription(interface: string) -> (description: string)
error InterfaceNotFound (interface: string)
error MethodNotFound (method: string)
error MethodNotImplemented (method: string)
error InvalidParameter (parameter: string)
error PermissionDenied ()
error ExpectedMore ()
'''

class Invalid(AssertionError):
    """A message that does not match the interface."""


class Interface:
    def __init__(self, name):
        self.name = name
        self.types = {}
        self.methods = {}   # name -> (input struct, output struct)
        self.errors = {}    # name -> struct
        self.doc = []       # the interface's own doc comment
        self.docs = {}      # type, method or error name -> its doc comment


# --- parsing ---------------------------------------------------------------

_TOKEN = re.compile(r'->|[()\[\]?:,]|[A-Za-z_][A-Za-z0-9_.]*|\S')


class Members(dict):
    """The members of a struct in their order, name -> type, and in .docs
    each one's doc comment: the lines (without "# ") of the comment block
    right above the line it begins, if it is the first on that line."""

    def __init__(self):
        super().__init__()
        self.docs = {}


def _tokenize(text):
    """The tokens of @text, and for each the doc comment it begins (a list
    of lines; empty but for the first token of a line right below a
    comment block)."""
    tokens, docs, block = [], [], []
    for line in text.splitlines():
        code, sharp, comment = line.partition('#')
        if not code.strip():
            if sharp:
                block.append(comment[1:] if comment.startswith(' ') else comment)
            else:
                block = []
            continue
        for n, tok in enumerate(_TOKEN.findall(code)):
            if len(tok) == 1 and not re.match(r'[()\[\]?:,A-Za-z_]', tok):
                raise ValueError(f'IDL: unexpected character {tok!r}')
            tokens.append(tok)
            docs.append(block if n == 0 else [])
        block = []
    return tokens, docs


def tags(doc):
    """The tags of a doc comment: {"cgroup": [], "oneof": ["kind", "A", "B"]}
    for its lines "@cgroup" and "@oneof kind A B"."""
    out = {}
    for line in doc:
        words = line.split()
        if words and words[0].startswith('@'):
            out[words[0][1:]] = words[1:]
    return out


class _Parser:
    def __init__(self, text):
        self.t, self.docs = _tokenize(text)
        self.i = 0

    def doc(self):
        """The doc comment of the next token."""
        return self.docs[self.i] if self.i < len(self.docs) else []

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f'IDL: expected {want or "a token"}, got {tok!r} at token {self.i}')
        self.i += 1
        return tok

    def type_(self):
        tok = self.peek()
        if tok == '?':
            self.take()
            return ('optional', self.type_())
        if tok == '[':
            self.take()
            if self.peek() == ']':
                self.take()
                return ('array', self.type_())
            self.take('string')
            self.take(']')
            return ('map', self.type_())
        if tok == '(':
            return self.struct_or_enum()
        self.take()
        if tok in ('bool', 'int', 'float', 'string', 'object', 'any'):
            return (tok,)
        return ('named', tok)

    def struct_or_enum(self):
        self.take('(')
        if self.peek() == ')':
            self.take()
            return ('struct', Members())
        if self.peek(1) != ':':
            values = [self.take()]
            while self.peek() == ',':
                self.take()
                values.append(self.take())
            self.take(')')
            return ('enum', tuple(values))
        fields = Members()
        while True:
            fields.docs[self.peek()] = self.doc()
            name = self.take()
            self.take(':')
            fields[name] = self.type_()
            if self.peek() != ',':
                break
            self.take()
        self.take(')')
        return ('struct', fields)

    def interface(self):
        doc = self.doc()
        self.take('interface')
        iface = Interface(self.take())
        iface.doc = doc
        while self.peek() is not None:
            doc = self.doc()
            kw = self.take()
            name = self.take()
            iface.docs[name] = doc
            if kw == 'type':
                iface.types[name] = self.type_()
            elif kw == 'method':
                inp = self.struct_or_enum()
                self.take('->')
                iface.methods[name] = (inp, self.struct_or_enum())
            elif kw == 'error':
                iface.errors[name] = self.struct_or_enum()
            else:
                raise ValueError(f'IDL: unknown keyword {kw!r}')
        return iface


def parse(text):
    """Parse varlink IDL text into an Interface."""
    return _Parser(text).interface()


# --- validation --------------------------------------------------------------

def _describe(t):
    kind = t[0]
    if kind == 'optional':
        return '?' + _describe(t[1])
    if kind == 'array':
        return '[]' + _describe(t[1])
    if kind == 'map':
        return '[string]' + _describe(t[1])
    if kind == 'named':
        return t[1]
    if kind == 'enum':
        return 'one of (' + ', '.join(t[1]) + ')'
    if kind == 'struct':
        return 'object (' + ', '.join(t[1]) + ')'
    return kind


def _fail(path, expected, got):
    raise Invalid(f'{path}: expected {expected}, received {got!r}')


def _kind_of(t):
    """The one value of a struct's "kind" field if it is an enum of one
    value (the event types of io.pressured), else None."""
    if t[0] != 'struct':
        return None
    k = t[1].get('kind')
    if k is not None and k[0] == 'enum' and len(k[1]) == 1:
        return k[1][0]
    return None


def _named_types(t):
    """The names of the types @t refers to."""
    kind = t[0]
    if kind == 'named':
        yield t[1]
    elif kind in ('optional', 'array', 'map'):
        yield from _named_types(t[1])
    elif kind == 'struct':
        for f in t[1].values():
            yield from _named_types(f)


class Validator:
    def __init__(self, *interfaces):
        self.interfaces = {i.name: i for i in interfaces}
        # Per interface: event kind -> the name of the type declaring it.
        self.event_types = {}
        for i in interfaces:
            self.event_types[i.name] = {}
            decls = list(i.types.values()) + [io for m in i.methods.values() for io in m] + \
                list(i.errors.values())
            for t in decls:
                for name in _named_types(t):
                    if name not in i.types:
                        raise ValueError(f'IDL {i.name}: type {name} is used but not declared')
            for name, t in i.types.items():
                kind = _kind_of(t)
                if kind is not None:
                    if kind in self.event_types[i.name]:
                        raise ValueError(f'IDL {i.name}: kind {kind!r} declared by '
                                         f'{self.event_types[i.name][kind]} and {name}')
                    self.event_types[i.name][kind] = name

    def check_value(self, iface, value, t, path):
        """@value against the IDL type @t, exactly: no JSON value passes for
        a type it is not (a string is no object, a bool no int, an int
        with a fraction no int, NaN no float)."""
        kind = t[0]
        if kind == 'optional':
            if value is not None:
                self.check_value(iface, value, t[1], path)
            return
        if value is None:
            _fail(path, _describe(t), value)
        if kind == 'named':
            if t[1] not in iface.types:
                raise Invalid(f'{path}: the interface declares no type {t[1]}')
            self.check_value(iface, value, iface.types[t[1]], path)
        elif kind == 'bool':
            if not isinstance(value, bool):
                _fail(path, 'bool', value)
        elif kind == 'int':
            if not isinstance(value, int) or isinstance(value, bool):
                _fail(path, 'int', value)
            if not INT_MIN <= value <= INT_MAX:
                _fail(path, 'int in the 64-bit signed range', value)
        elif kind == 'float':
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                _fail(path, 'float', value)
            if isinstance(value, float) and not math.isfinite(value):
                _fail(path, 'a finite float (JSON has no NaN or infinity)', value)
        elif kind == 'string':
            if not isinstance(value, str):
                _fail(path, 'string', value)
        elif kind == 'object':
            if not isinstance(value, dict):
                _fail(path, 'object', value)
        elif kind == 'any':
            pass  # any JSON value but null (checked above)
        elif kind == 'enum':
            if not isinstance(value, str) or value not in t[1]:
                _fail(path, _describe(t), value)
        elif kind == 'array':
            if not isinstance(value, list):
                _fail(path, _describe(t), value)
            for n, v in enumerate(value):
                self.check_value(iface, v, t[1], f'{path}[{n}]')
        elif kind == 'map':
            if not isinstance(value, dict):
                _fail(path, _describe(t), value)
            for k, v in value.items():
                if not isinstance(k, str):
                    _fail(f'{path}[{k!r}]', 'a string key', k)
                self.check_value(iface, v, t[1], f'{path}[{k!r}]')
        elif kind == 'struct':
            self.check_struct(iface, value, t[1], path)
        else:
            raise Invalid(f'{path}: unknown type {t!r}')

    def check_struct(self, iface, value, fields, path):
        if not isinstance(value, dict):
            _fail(path, _describe(('struct', fields)), value)
        for k in value:
            if k not in fields:
                raise Invalid(f'{path}.{k}: field not declared by the interface '
                              f'(declared: {", ".join(fields) or "none"}), received {value[k]!r}')
        for k, t in fields.items():
            if k not in value:
                if t[0] != 'optional':
                    raise Invalid(f'{path}.{k}: required field of type {_describe(t)} missing, '
                                  f'received {value!r}')
                continue
            self.check_value(iface, value[k], t, f'{path}.{k}')

    def check_event(self, iface, event, path, request=None):
        """An io.pressured event: the type its "kind" names, as the IDL
        declares it, then the rules of the contract the IDL cannot express.
        @request: the Subscribe parameters, if known."""
        if not isinstance(event, dict):
            _fail(path, 'object', event)
        types = self.event_types[iface.name]
        kind = event.get('kind')
        if kind not in types:
            _fail(f'{path}.kind', 'one of (' + ', '.join(types) + ')', kind)
        self.check_value(iface, event, ('named', types[kind]), path)
        required = set()
        # A pressure event names its level, except on a subscription to an
        # explicit PSI trigger, which has none (an injection still does).
        if kind == 'pressure' and (event.get('source') in ('vmpressure', 'inject') or
                                   (isinstance(request, dict) and 'psi' not in request)):
            required.add('level')
        if kind == 'subscribed':
            # An adjustment always says why; nothing else carries a reason.
            if event.get('adjusted') is True:
                required.add('adjusted_reason')
            elif 'adjusted_reason' in event:
                raise Invalid(f'{path}.adjusted_reason: only with "adjusted": true, received {event!r}')
        if kind == 'cleared':
            # The peak is typed by the source; a level or vmpressure
            # subscription's events name their level, cleared included. A
            # PSI peak is null when unknown (an episode of injected events
            # only), never left out.
            if event['source'] == 'psi' and 'peak' not in event:
                raise Invalid(f'{path}.peak: required in a "cleared" event of psi (null if unknown), '
                              f'missing in {event!r}')
            if event['source'] != 'psi':
                required.add('peak_level')
            if event.get('peak') is not None and event.get('peak_level') is not None:
                raise Invalid(f'{path}: "peak" and "peak_level" are exclusive, received {event!r}')
            if event.get('peak') is not None and not 0 <= event['peak'] <= 100:
                _fail(f'{path}.peak', 'a percentage in 0..100', event['peak'])
            if event['events'] < 1:
                _fail(f'{path}.events', 'at least 1', event['events'])
            if isinstance(request, dict) and ('level' in request or 'vmpressure' in request):
                required.add('level')
        if kind == 'killed':
            self.check_killed(event, path)
        if kind == 'prekill':
            self.check_prekill(event, path)
        if kind == 'subscribed' and event.get('source') == 'kills':
            # A kills stream says who can report kills, possibly nobody.
            sources = event['state'].get('kill_sources')
            if sources is None:
                raise Invalid(f'{path}.state.kill_sources: required in a "kills" subscription, missing in {event!r}')
            if any(x not in self.KILLERS for x in sources) or len(set(sources)) != len(sources):
                _fail(f'{path}.state.kill_sources', 'distinct items of ' + ', '.join(self.KILLERS), sources)
        for k in sorted(required):
            if event.get(k) is None:
                raise Invalid(f'{path}.{k}: required in a "{kind}" event, missing in {event!r}')

    KILLERS = ('kernel', 'systemd-oomd')

    def check_killed(self, event, path):
        """A "killed" event: by one of KILLERS, the kernel's reason is
        "oom_kill", at least one kill."""
        if event['by'] not in self.KILLERS:
            _fail(f'{path}.by', 'one of (' + ', '.join(self.KILLERS) + ')', event['by'])
        if event['by'] == 'kernel' and event['reason'] != 'oom_kill':
            _fail(f'{path}.reason', '"oom_kill" for the kernel', event['reason'])
        if not event['reason']:
            _fail(f'{path}.reason', 'a non-empty string', event['reason'])
        if event['count'] < 1:
            _fail(f'{path}.count', 'at least 1', event['count'])

    def check_prekill(self, event, path):
        """A "prekill" event: by systemd-oomd (the only caller of the hook), a
        warning id from 1, a deadline after the call was read."""
        if event['by'] != 'systemd-oomd':
            _fail(f'{path}.by', '"systemd-oomd"', event['by'])
        if event['id'] < 1:
            _fail(f'{path}.id', 'at least 1', event['id'])
        if event['deadline_us'] <= event['monotonic_us']:
            _fail(f'{path}.deadline_us', f'after monotonic_us {event["monotonic_us"]}', event['deadline_us'])

    RECLAIM_STATES = ('probing', 'backing-off', 'at-floor', 'unsupported')

    def check_reclaim(self, entries, path):
        """GetStatus "reclaim": the state is a string in the IDL (varlink
        names have no "-"), one of the contract's four; sizes are never
        negative."""
        for n, e in enumerate(entries):
            if e['state'] not in self.RECLAIM_STATES:
                _fail(f'{path}[{n}].state', 'one of (' + ', '.join(self.RECLAIM_STATES) + ')', e['state'])
            for k in ('reclaimed_bytes', 'last_step_bytes', 'floor_bytes'):
                if e[k] < 0:
                    _fail(f'{path}[{n}].{k}', 'at least 0', e[k])
            for k in ('stall_pct', 'io_stall_pct'):
                if not 0 <= e[k] <= 100:
                    _fail(f'{path}[{n}].{k}', 'a percentage in 0..100', e[k])

    DBUS_LMM_STATES = ('off', 'waiting-for-bus', 'owner', 'name-taken')

    def check_dbus(self, status, path):
        """GetStatus "dbus": the LowMemoryMonitor state is a string in the
        IDL (varlink names have no "-"), one of four; counts are never
        negative."""
        if status['low_memory_monitor'] not in self.DBUS_LMM_STATES:
            _fail(f'{path}.low_memory_monitor', 'one of (' + ', '.join(self.DBUS_LMM_STATES) + ')',
                  status['low_memory_monitor'])
        if status['low_memory_warnings'] < 0:
            _fail(f'{path}.low_memory_warnings', 'at least 0', status['low_memory_warnings'])

    def check(self, msg, method=None, more=False, request=None):
        """Check one received message; @method is the call it answers (None if
        unknown), @request that call's parameters."""
        if not isinstance(msg, dict):
            _fail('message', 'object', msg)
        for k in msg:
            if k not in ('parameters', 'continues', 'error'):
                raise Invalid(f'message.{k}: not a varlink reply field, received {msg[k]!r}')
        params = msg.get('parameters', {})
        if not isinstance(params, dict):
            _fail('message.parameters', 'object', params)
        if 'continues' in msg:
            if not isinstance(msg['continues'], bool):
                _fail('message.continues', 'bool', msg['continues'])
            if msg['continues'] and method is not None and not more:
                raise Invalid(f'message.continues: true in a reply to {method}, called without "more"')
        if 'error' in msg:
            name = msg['error']
            if not isinstance(name, str) or '.' not in name:
                _fail('message.error', 'a qualified error name', name)
            iface_name, _, err = name.rpartition('.')
            iface = self.interfaces.get(iface_name)
            if iface is None or err not in iface.errors:
                raise Invalid(f'message.error: {name} is not declared by '
                              f'{", ".join(self.interfaces)}, received {msg!r}')
            if msg.get('continues'):
                raise Invalid(f'message.continues: an error ends the call, received {msg!r}')
            self.check_struct(iface, params, iface.errors[err][1], f'{name}.parameters')
            return
        if method is None:
            return
        iface_name, _, m = method.rpartition('.')
        iface = self.interfaces.get(iface_name)
        if iface is None or m not in iface.methods:
            raise Invalid(f'{method}: not a declared method, yet the reply is no error: {msg!r}')
        if 'parameters' not in msg:
            raise Invalid(f'{method}: reply without "parameters": {msg!r}')
        out = iface.methods[m][1][1]
        self.check_struct(iface, params, out, f'{method}.parameters')
        if (iface_name, m) == ('io.pressured', 'GetStatus'):
            self.check_reclaim(params.get('reclaim', []), f'{method}.parameters.reclaim')
            if 'dbus' in params:
                self.check_dbus(params['dbus'], f'{method}.parameters.dbus')
        if (iface_name, m) == ('io.pressured', 'Subscribe'):
            # Declared as object: its type is the one its kind names.
            self.check_event(iface, params['event'], f'{method}.parameters.event', request)


def served_interfaces(source_root):
    """The interfaces the daemon serves, parsed from daemon/protocol/*.varlink
    (io.pressured's first)."""
    d = os.path.join(source_root, 'daemon', 'protocol')
    names = sorted(n for n in os.listdir(d) if n.endswith('.varlink'))
    names.sort(key=lambda n: n != 'io.pressured.varlink')
    out = []
    for n in names:
        with open(os.path.join(d, n)) as f:
            out.append(parse(f.read()))
    return out


def default_validator(source_root=None):
    """A Validator for the interfaces the daemon serves (from the source tree:
    io.pressured, the pre-kill hook's io.systemd.oom.Prekill, whose errors
    are io.pressured's, systemd-report's io.systemd.Metrics) and
    org.varlink.service."""
    root = source_root or os.path.join(os.path.dirname(__file__), '..')
    return Validator(*served_interfaces(root), parse(ORG_VARLINK_SERVICE))
