# SPDX-License-Identifier: MIT
"""The exceptions of the pressured module.

Everything the module raises on purpose is a PressuredError:

    PressuredError
    +-- VarlinkError            the daemon answered with a varlink error
    |   +-- NoSuchCgroup, InvalidCgroupPath, PermissionDenied,
    |   |   SourceUnavailable, InvalidTrigger, LimitExceeded,
    |   |   ConfigurationRejected, InternalError,
    |   |   NoSuchPrekill                               (io.pressured)
    |   +-- InterfaceNotFound, MethodNotFound, MethodNotImplemented,
    |       InvalidParameter, ExpectedMore               (org.varlink.service)
    +-- ConnectionFailed        connecting to the socket failed (also a ConnectionError)
    |   +-- DaemonNotRunning    nothing listens there, or there is no socket
    +-- ConnectionLost          the daemon hung up before it answered (also a ConnectionError)
    +-- CallTimeout             no answer in time (also a TimeoutError)
    +-- ProtocolError           the daemon sent something that is not varlink
    +-- MessageTooLarge         a call over the daemon's size limit, not sent (also a ValueError)
    +-- InvalidCgroupPathArgument  a cgroup path no daemon accepts, not sent (also a ValueError)

A VarlinkError carries the error's name (``name``) and its parameters
(``parameters``, a dict), and each parameter the interface declares as an
attribute: ``NoSuchCgroup.cgroup``, ``LimitExceeded.limit`` and ``.value``,
``InvalidParameter.parameter`` and so on (None when the daemon left it
out). ``PermissionDenied`` stands for both io.pressured.PermissionDenied
(with ``reason``) and org.varlink.service.PermissionDenied; ``name`` says
which.
"""

__all__ = [
    'PressuredError', 'VarlinkError',
    'NoSuchCgroup', 'InvalidCgroupPath', 'PermissionDenied', 'SourceUnavailable', 'InvalidTrigger',
    'LimitExceeded', 'ConfigurationRejected', 'InternalError', 'NoSuchPrekill',
    'InterfaceNotFound', 'MethodNotFound', 'MethodNotImplemented', 'InvalidParameter', 'ExpectedMore',
    'ConnectionFailed', 'DaemonNotRunning', 'ConnectionLost', 'CallTimeout', 'ProtocolError',
    'MessageTooLarge', 'InvalidCgroupPathArgument', 'error_from_reply',
]

from . import _vocabulary


class PressuredError(Exception):
    """Base class of every error the pressured module raises."""


class VarlinkError(PressuredError):
    """An error the daemon answered a call with.

    ``name`` is the varlink error name (``"io.pressured.NoSuchCgroup"``),
    ``parameters`` its parameters as sent. Errors of a name this module
    does not know are raised as VarlinkError itself.
    """

    #: The parameters the interface declares for this error, set as attributes.
    PARAMETERS = ()
    #: What the error means, for the message.
    DESCRIPTION = 'the daemon refused the call'

    def __init__(self, name, parameters=None):
        self.name = name
        self.parameters = dict(parameters or {})
        for p in self.PARAMETERS:
            setattr(self, p, self.parameters.get(p))
        super().__init__(name, self.parameters)

    def __str__(self):
        details = ', '.join(f'{k}={v!r}' for k, v in self.parameters.items())
        return f'{self.name}: {self.DESCRIPTION}' + (f' ({details})' if details else '')

    def __reduce__(self):
        return (self.__class__, (self.name, self.parameters))


class NoSuchCgroup(VarlinkError):
    """io.pressured.NoSuchCgroup: the cgroup does not exist in the hierarchy
    the source needs. Attribute: ``cgroup``."""
    DESCRIPTION = 'no such cgroup'


class InvalidCgroupPath(VarlinkError):
    """io.pressured.InvalidCgroupPath: the daemon found no cgroup directory
    at the path: it names a file, or a symbolic link or another mount is on
    the way (the daemon's log says which); or, sent by something else than
    this module, which refuses them (InvalidCgroupPathArgument), the path
    breaks a rule. Attribute: ``cgroup``."""
    DESCRIPTION = 'invalid cgroup path'


class PermissionDenied(VarlinkError):
    """io.pressured.PermissionDenied (attribute ``reason``): the caller, as
    the daemon sees it through SO_PEERCRED, may not do this; also
    org.varlink.service.PermissionDenied, which has no reason."""
    DESCRIPTION = 'permission denied'


class SourceUnavailable(VarlinkError):
    """io.pressured.SourceUnavailable: the source cannot be used here, e.g.
    vmpressure without a cgroup v1 memory hierarchy. Attributes: ``source``,
    ``reason``."""
    DESCRIPTION = 'source unavailable'


class InvalidTrigger(VarlinkError):
    """io.pressured.InvalidTrigger: the kernel or the daemon's rules reject
    the PSI or vmpressure trigger. Attribute: ``reason``."""
    DESCRIPTION = 'invalid trigger'


class LimitExceeded(VarlinkError):
    """io.pressured.LimitExceeded: a configured limit was reached.
    Attributes: ``limit`` (the key, e.g. "MaxClients"), ``value`` (its
    value)."""
    DESCRIPTION = 'limit exceeded'


class ConfigurationRejected(VarlinkError):
    """io.pressured.ConfigurationRejected: Reload() could not load the
    configuration; the previous one stays in force. Attribute: ``reason``
    (file, line and key)."""
    DESCRIPTION = 'configuration rejected'


class InternalError(VarlinkError):
    """io.pressured.InternalError: the daemon failed for a reason of its own
    (e.g. out of memory); the call may be retried. Attribute: ``reason``."""
    DESCRIPTION = 'internal error of the daemon'


class NoSuchPrekill(VarlinkError):
    """io.pressured.NoSuchPrekill: no warning before a kill numbered ``id``
    waits for an acknowledgement of the caller's user: unknown, answered
    already (every warned subscriber acknowledged, or the deadline passed:
    systemd-oomd was answered anyway), or not the caller's."""
    DESCRIPTION = 'no such warning before a kill'


class InterfaceNotFound(VarlinkError):
    """org.varlink.service.InterfaceNotFound. Attribute: ``interface``."""
    DESCRIPTION = 'no such interface'


class MethodNotFound(VarlinkError):
    """org.varlink.service.MethodNotFound, e.g. a method this daemon is too
    old for. Attribute: ``method``."""
    DESCRIPTION = 'no such method'


class MethodNotImplemented(VarlinkError):
    """org.varlink.service.MethodNotImplemented. Attribute: ``method``."""
    DESCRIPTION = 'method not implemented'


class InvalidParameter(VarlinkError):
    """org.varlink.service.InvalidParameter: a parameter is unknown or of
    the wrong type or value; also what a daemon that predates a Subscribe
    selector answers. Attribute: ``parameter``."""
    DESCRIPTION = 'invalid parameter'


class ExpectedMore(VarlinkError):
    """org.varlink.service.ExpectedMore: a stream method called without
    "more": true (only through Client.call())."""
    DESCRIPTION = 'the method streams and needs "more": true'


def _by_name():
    """Each error of the interface (_vocabulary.ERRORS) to the class of its
    short name, given the parameters the interface declares for it;
    PermissionDenied gets those of both names."""
    classes = {cls.__name__: cls for cls in VarlinkError.__subclasses__()}
    by_name = {}
    for name, parameters in _vocabulary.ERRORS.items():
        cls = classes.get(name.rsplit('.', 1)[1])
        if cls is not None:
            cls.PARAMETERS += tuple(p for p in parameters if p not in cls.PARAMETERS)
            by_name[name] = cls
    return by_name


_BY_NAME = _by_name()


def error_from_reply(name, parameters):
    """The exception for a varlink error reply: the class of @name (a
    VarlinkError subclass), or VarlinkError for a name this module does
    not know."""
    return _BY_NAME.get(name, VarlinkError)(name, parameters)


class ConnectionFailed(PressuredError, ConnectionError):
    """Connecting to the daemon's socket failed. ``socket`` is the path,
    ``errno`` and ``strerror`` say why."""

    def __init__(self, socket, errno=None, strerror=None):
        super().__init__(errno, strerror)
        self.socket = socket

    def __str__(self):
        return f'cannot connect to pressured at {self.socket}: {self.strerror}'

    def __reduce__(self):
        return (self.__class__, (self.socket, self.errno, self.strerror))


class DaemonNotRunning(ConnectionFailed):
    """No daemon at the socket: the path does not exist or nothing listens
    on it (ENOENT, ECONNREFUSED). ``socket`` is the path."""

    def __str__(self):
        return f'pressured is not running (no daemon at {self.socket}: {self.strerror})'


class ConnectionLost(PressuredError, ConnectionError):
    """The daemon closed the connection (or it broke) before answering.
    ``socket`` is the path. Whether a call that was sent took effect is
    unknown."""

    def __init__(self, socket, reason='the daemon closed the connection'):
        super().__init__(reason)
        self.socket = socket
        self.reason = reason

    def __str__(self):
        return f'connection to pressured at {self.socket} lost: {self.reason}'

    def __reduce__(self):
        return (self.__class__, (self.socket, self.reason))


class CallTimeout(PressuredError, TimeoutError):
    """The daemon did not answer a call within the client's ``timeout``.
    The connection is closed; the next call opens a new one."""

    def __init__(self, method, timeout):
        super().__init__(f'pressured did not answer {method} within {timeout:g} s')
        self.method = method
        self.timeout = timeout

    def __reduce__(self):
        return (self.__class__, (self.method, self.timeout))


class ProtocolError(PressuredError):
    """The daemon (or whatever listens on the socket) sent something that
    is not a varlink message this module understands: not JSON, not an
    object, a reply without its parameters, an event without a kind, a
    message over the size limit. The connection is closed."""


class MessageTooLarge(PressuredError, ValueError):
    """A call would exceed the daemon's message size limit
    (``[Limits] MaxMessageBytes=``, 65536 bytes by default) and was not
    sent: the daemon would close the connection. ``size`` and ``limit``
    are in bytes, the terminating NUL included."""

    def __init__(self, size, limit):
        super().__init__(f'the call is {size} bytes, over the limit of {limit} bytes; not sent')
        self.size = size
        self.limit = limit

    def __reduce__(self):
        return (self.__class__, (self.size, self.limit))


class InvalidCgroupPathArgument(PressuredError, ValueError):
    """A cgroup path that no daemon accepts, refused before anything was
    sent: not absolute, longer than 4096 bytes, not valid UTF-8 (a str
    decoded from other bytes holds surrogates), with a control character,
    a component over 255 bytes, or a "." or ".." component. ``cgroup`` is
    the path, ``reason`` the rule it breaks, in the words of the daemon's
    log and of pressurectl."""

    def __init__(self, cgroup, reason):
        super().__init__(f'invalid cgroup path {cgroup!r}: {reason}; not sent')
        self.cgroup = cgroup
        self.reason = reason

    def __reduce__(self):
        return (self.__class__, (self.cgroup, self.reason))
