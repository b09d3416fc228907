# SPDX-License-Identifier: MIT
"""The protocol without I/O, shared by the blocking and the asyncio client.

- where the socket is (socket_path()),
- varlink framing: one JSON object followed by a NUL byte (encode(), Decoder),
- what a reply means (call_result()),
- the life of a subscription across reconnects (StreamState).

Nothing here touches a socket or a clock; client.py and aio.py do.
"""
import errno as errno_
import json
import os

from . import errors
from .types import PrekillEvent, PsiTrigger, ReconnectedEvent, Vmpressure, parse_event

SYSTEM_SOCKET = '/run/pressured/io.pressured'
USER_SOCKET_SUFFIX = '/pressured/io.pressured'
#: The daemon's default [Limits] MaxMessageBytes=: a longer call closes the connection.
MAX_MESSAGE_BYTES = 65536
#: The longest message accepted from the daemon (GetStatus grows with its registrations).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: How long a call waits for its answer by default, as libpressure does.
CALL_TIMEOUT = 25.0
#: Reconnect backoff, as libpressure's: the first retry at once, then 100 ms doubling up to 1 s.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 1.0
#: Methods that change nothing: a call of one on a connection found dead is sent again on a new one.
IDEMPOTENT = frozenset({
    'org.varlink.service.GetInfo', 'org.varlink.service.GetInterfaceDescription',
    'io.pressured.GetStatus', 'io.pressured.GetProtection', 'io.pressured.GetHeadroom',
})


def socket_path(socket=None, user=False):
    """The daemon's socket: @socket if given; with @user the per-user
    daemon's $XDG_RUNTIME_DIR/pressured/io.pressured; else
    $PRESSURED_SOCKET if set, else /run/pressured/io.pressured. The same
    rule as pressurectl's --socket and --user."""
    if socket:
        return os.fspath(socket)
    if user:
        runtime = os.environ.get('XDG_RUNTIME_DIR', '')
        if not runtime.startswith('/'):
            raise errors.ConnectionFailed(None, errno_.ENXIO,
                                          '$XDG_RUNTIME_DIR is not set, so there is no per-user daemon to find')
        return runtime + USER_SOCKET_SUFFIX
    return os.environ.get('PRESSURED_SOCKET') or SYSTEM_SOCKET


def _reject_constant(name):
    raise ValueError(f'{name} is not JSON')


# One decoder for every message: json.loads() with an option makes a new one each time.
_json_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def encode(message, limit=MAX_MESSAGE_BYTES):
    """@message as sent: compact JSON and its NUL. Raises MessageTooLarge
    over @limit bytes (NUL included)."""
    data = json.dumps(message, separators=(',', ':'), ensure_ascii=False, allow_nan=False).encode() + b'\0'
    if limit and len(data) > limit:
        raise errors.MessageTooLarge(len(data), limit)
    return data


class Decoder:
    """Splits received bytes into messages (dicts). Raises ProtocolError for
    a message that is not a JSON object or that grows over @limit bytes
    without its NUL."""

    def __init__(self, limit=MAX_REPLY_BYTES):
        self.limit = limit
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data

    def next(self):
        """The next whole message, or None until one is complete."""
        end = self.buf.find(b'\0')
        if end < 0:
            if len(self.buf) > self.limit:
                raise errors.ProtocolError(f'a message from the daemon is over {self.limit} bytes')
            return None
        if end + 1 > self.limit:
            raise errors.ProtocolError(f'a message from the daemon is over {self.limit} bytes')
        data = self.buf[:end]
        del self.buf[:end + 1]
        try:
            msg = _json_decoder.decode(data.decode())
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            head = bytes(data[:200])
            raise errors.ProtocolError(f'the daemon sent a message that is not JSON ({e}): {head!r}') from None
        if not isinstance(msg, dict):
            raise errors.ProtocolError(f'the daemon sent a message that is not a JSON object: {bytes(data[:200])!r}')
        return msg

    @property
    def pending(self):
        """True if part of a message was received."""
        return bool(self.buf)


def call_message(method, parameters=None, more=False):
    msg = {'method': method, 'parameters': parameters or {}}
    if more:
        msg['more'] = True
    return msg


def reply_parameters(msg):
    """The parameters of reply @msg; raises its error as a VarlinkError
    subclass, or ProtocolError for a reply that is neither."""
    if 'error' in msg:
        name, params = msg['error'], msg.get('parameters')
        if not isinstance(name, str) or not (params is None or isinstance(params, dict)):
            raise errors.ProtocolError(f'malformed error reply: {msg!r:.200}')
        raise errors.error_from_reply(name, params)
    params = msg.get('parameters', {})
    if not isinstance(params, dict):
        raise errors.ProtocolError(f'a reply\'s parameters must be an object: {msg!r:.200}')
    return params


def call_result(msg):
    """The parameters answering a call without "more"."""
    params = reply_parameters(msg)
    if msg.get('continues'):
        raise errors.ProtocolError(f'a streamed reply to a call without "more": {msg!r:.200}')
    return params


#: The longest cgroup path, in bytes, and the longest component of one.
CGROUP_PATH_MAX = 4096
CGROUP_NAME_MAX = 255
#: Why a path is no cgroup path, worded as the daemon's log and pressurectl word it.
NOT_ABSOLUTE = "it is not absolute: a cgroup path starts with '/'"
TOO_LONG = 'it is longer than 4096 bytes'
NOT_UTF8 = 'it is not valid UTF-8'
CONTROL_CHARACTER = 'it contains a control character, such as a tab or a newline'
NAME_TOO_LONG = 'a component of it is longer than 255 bytes'
DOT = "it has a '.' component"
DOT_DOT = "it has a '..' component"


def cgroup_problem(cgroup):
    """The rule the cgroup path @cgroup breaks, in words, or None: the
    daemon's rules, checked in the same order. None and "" are the whole
    system. A str that came from bytes that are not UTF-8 (os.fsdecode(),
    sys.argv) holds surrogates: not valid UTF-8."""
    if cgroup is None or cgroup == '':
        return None
    if not cgroup.startswith('/'):
        return NOT_ABSOLUTE
    try:
        raw, utf8 = cgroup.encode(), True
    except UnicodeEncodeError:
        raw, utf8 = cgroup.encode(errors='surrogatepass'), False
    if len(raw) > CGROUP_PATH_MAX:
        return TOO_LONG
    if not utf8:
        return NOT_UTF8
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in cgroup):
        return CONTROL_CHARACTER
    names = [n for n in cgroup.split('/') if n]
    if any(len(n.encode()) > CGROUP_NAME_MAX for n in names):
        return NAME_TOO_LONG
    if any(n == '..' for n in names):
        return DOT_DOT
    if any(n == '.' for n in names):
        return DOT
    return None


def check_cgroup(cgroup):
    """Raise InvalidCgroupPathArgument if no daemon accepts @cgroup, before anything is sent;
    TypeError if it is not a str (or None)."""
    if cgroup is not None and not isinstance(cgroup, str):
        raise TypeError(f'a cgroup path is a str, not {type(cgroup).__name__}')
    problem = cgroup_problem(cgroup)
    if problem:
        raise errors.InvalidCgroupPathArgument(cgroup, problem)


def subscribe_parameters(cgroup=None, *, level=None, levels=False, psi=None, vmpressure=None,
                         memory_events=False, protection=False, kills=False, resource=None,
                         min_interval_ms=None, extra=None):
    """Subscribe's parameters; the daemon checks them, but for the cgroup
    path (check_cgroup()). @psi may be a dict, a PsiTrigger or its text
    ("some 150ms 2s"); @vmpressure a dict, a Vmpressure or a level."""
    check_cgroup(cgroup)
    p = {}
    if cgroup is not None:
        p['cgroup'] = cgroup
    if level is not None:
        p['level'] = level
    if levels:
        p['levels'] = True
    if psi is not None:
        if isinstance(psi, str):
            psi = PsiTrigger.parse(psi)
        p['psi'] = psi.to_dict() if isinstance(psi, PsiTrigger) else psi
    if vmpressure is not None:
        if isinstance(vmpressure, str):
            vmpressure = Vmpressure(level=vmpressure)
        p['vmpressure'] = vmpressure.to_dict() if isinstance(vmpressure, Vmpressure) else vmpressure
    for name, on in (('memory_events', memory_events), ('protection', protection), ('kills', kills)):
        if on:
            p[name] = True
    if resource is not None:
        p['resource'] = resource
    if min_interval_ms is not None:
        p['min_interval_ms'] = min_interval_ms
    if extra:
        p.update(extra)
    return p


class StreamState:
    """One Subscribe stream across its connections.

    States: "pending" (the call is sent, waiting for its first reply),
    "live", "backoff" (the connection is gone; connect again after
    delay()), "ended" (removed, an error, closed). The first connection
    that fails before any reply raises: only a stream that was live is
    resumed. After a resumption the first reply is preceded by a
    ReconnectedEvent, as libpressure reports PRESSURE_EVENT_RECONNECTED.
    """

    def __init__(self, parameters, reconnect=True, client=None):
        self.parameters = parameters
        self.reconnect = reconnect
        #: The client whose calls acknowledge the warnings before a kill the stream brings.
        self.client = client
        self.state = 'pending'
        self.confirmed = False
        self.resuming = False
        self.reason = None
        self.attempts = 0
        self.backoff = 0.0
        #: How many times the stream was resumed.
        self.reconnects = 0

    def request(self):
        return call_message('io.pressured.Subscribe', self.parameters, more=True)

    def connecting(self):
        """A new connection is being tried."""
        self.attempts += 1

    def connected(self):
        """The call went out on a new connection."""
        self.state = 'pending'

    def handle(self, msg):
        """The events reply @msg brings (a list). Raises the daemon's error
        (the stream is then over) or ProtocolError."""
        try:
            params = reply_parameters(msg)
            event = parse_event(params.get('event'))
        except errors.PressuredError:
            self.state = 'ended'
            raise
        out = []
        if self.state == 'pending':
            self.state = 'live'
            self.confirmed = True
            self.backoff = 0.0
            if self.resuming:
                self.resuming = False
                self.reconnects += 1
                raw = {'kind': 'reconnected', 'cgroup': event.cgroup, 'reason': self.reason,
                       'attempts': self.attempts}
                out.append(ReconnectedEvent.from_dict(raw))
        if isinstance(event, PrekillEvent):
            event.bind(self.client)
        out.append(event)
        if not msg.get('continues'):
            self.state = 'ended'
        return out

    def lost(self, error):
        """The connection ended with @error (ConnectionLost or
        ConnectionFailed): raise it if the stream is not to be resumed,
        else return the seconds to wait before connecting again."""
        if not self.reconnect or not self.confirmed or self.state == 'ended':
            self.state = 'ended'
            raise error
        if self.state == 'live':
            self.resuming = True
            self.reason = getattr(error, 'reason', None) or str(error)
            self.attempts = 0
            delay = 0.0
        else:
            delay = self.backoff = min(max(self.backoff * 2, BACKOFF_MIN), BACKOFF_MAX)
        self.state = 'backoff'
        return delay

    def close(self):
        self.state = 'ended'
