# SPDX-License-Identifier: MIT
"""The blocking client: Client, Subscription, LevelWatch, watch_levels().

Calls share one connection per Client, opened on first use and opened
again if the daemon closed it meanwhile. Each subscription has its own
connection, as in libpressure: a Subscribe stream holds its connection
for as long as it lasts. A Client may be used from several threads; a
Subscription by one thread at a time.
"""
import dataclasses
import errno as errno_
import select
import socket as socket_
import threading
import time

from . import _wire, errors
from .types import Headroom, Info, LevelEvent, PrekillEvent, Protection, ReconnectedEvent, RemovedEvent, Status

__all__ = ['Client', 'Subscription', 'LevelWatch', 'watch_levels']


class _Connection:
    """One varlink connection over a blocking socket."""

    def __init__(self, path, max_message_bytes, max_reply_bytes, timeout):
        self.path = path
        self.max_message_bytes = max_message_bytes
        self.decoder = _wire.Decoder(max_reply_bytes)
        self.broken = None
        self.sock = socket_.socket(socket_.AF_UNIX, socket_.SOCK_STREAM | socket_.SOCK_CLOEXEC)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            self.sock.close()
            raise errors.DaemonNotRunning(path, e.errno, e.strerror) from None
        except socket_.timeout:
            self.sock.close()
            raise errors.ConnectionFailed(path, errno_.ETIMEDOUT, 'timed out connecting') from None
        except OSError as e:
            self.sock.close()
            raise errors.ConnectionFailed(path, e.errno, e.strerror) from None

    def send(self, message):
        """Send @message. If the daemon hung up, the error comes from
        recv(), after what it sent before it did: a daemon that refuses a
        connection (LimitExceeded) says why and closes it."""
        data = _wire.encode(message, self.max_message_bytes)
        try:
            self.sock.settimeout(None)
            self.sock.sendall(data)
        except OSError as e:
            self.broken = e.strerror or str(e)

    def recv(self, deadline=None):
        """The next message; None if @deadline (time.monotonic()) passes first."""
        while True:
            msg = self.decoder.next()
            if msg is not None:
                return msg
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket_.timeout:
                return None
            except OSError as e:
                raise errors.ConnectionLost(self.path, e.strerror or str(e)) from None
            if not data:
                raise errors.ConnectionLost(self.path, self.broken or 'the daemon closed the connection'
                                            + (' in the middle of a message' if self.decoder.pending else ''))
            self.decoder.feed(data)

    def is_stale(self):
        """True if the daemon closed the connection, or sent something no
        call asked for: it cannot carry a call."""
        if self.decoder.pending or self.broken:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        try:
            self.sock.shutdown(socket_.SHUT_RDWR)  # wakes a thread blocked in recv()
        except OSError:
            pass
        self.sock.close()


class Client:
    """A client of the pressured daemon.

    @socket: the daemon's socket; without it, with @user=True the per-user
    daemon's ($XDG_RUNTIME_DIR/pressured/io.pressured), else
    $PRESSURED_SOCKET if set, else /run/pressured/io.pressured.
    @timeout: seconds a call waits for its answer (25 by default), None for
    no limit. @max_message_bytes: the daemon's [Limits] MaxMessageBytes=;
    a longer call raises MessageTooLarge and is not sent.

    Nothing is connected until the first call. Use it as a context manager,
    or call close()::

        with pressured.Client() as client:
            print(client.get_status().clients)

    A daemon that is not running raises DaemonNotRunning (naming the
    socket) from the first call. Errors the daemon answers are raised as
    the VarlinkError subclass of their name (NoSuchCgroup, ...).
    """

    def __init__(self, socket=None, *, user=False, timeout=_wire.CALL_TIMEOUT,
                 max_message_bytes=_wire.MAX_MESSAGE_BYTES, max_reply_bytes=_wire.MAX_REPLY_BYTES):
        self.socket = _wire.socket_path(socket, user)
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.max_reply_bytes = max_reply_bytes
        self._conn = None
        self._lock = threading.Lock()

    def __repr__(self):
        return f'<pressured.Client socket={self.socket!r}>'

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # A client made for one call (pressured.Client().get_status()) closes when it goes.
        _close_quietly(getattr(self, '_conn', None))

    def _connect(self):
        return _Connection(self.socket, self.max_message_bytes, self.max_reply_bytes, self.timeout)

    def connect(self):
        """Connect now rather than at the first call (to find out early
        that the daemon is not running). Returns the client."""
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
        return self

    def close(self):
        """Close the connection of calls (subscriptions have their own)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def call(self, method, parameters=None):
        """Call @method ("io.pressured.GetStatus") with the dict
        @parameters; return the reply's parameters as a dict. The way to
        reach a method this module does not wrap."""
        message = _wire.call_message(method, parameters)
        _wire.encode(message, self.max_message_bytes)  # too large: raise before touching the connection
        with self._lock:
            reused = self._conn is not None
            if reused and self._conn.is_stale():
                self._drop()
                reused = False
            try:
                return self._call_locked(method, message)
            except errors.ConnectionLost:
                # The daemon restarted between two calls: ask a new one what changes nothing.
                if not reused or method not in _wire.IDEMPOTENT:
                    raise
            return self._call_locked(method, message)

    def _call_locked(self, method, message):
        if self._conn is None:
            self._conn = self._connect()
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            self._conn.send(message)
            reply = self._conn.recv(deadline)
            if reply is None:
                raise errors.CallTimeout(method, self.timeout)
            return _wire.call_result(reply)
        except errors.VarlinkError:
            raise
        except BaseException:
            # Lost, timed out, garbage or interrupted: the answer may still
            # come, so the connection cannot carry another call.
            self._drop()
            raise

    def _drop(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- org.varlink.service ----

    def get_info(self):
        """org.varlink.service.GetInfo(): vendor, product, version, url and
        interfaces of the daemon, as an Info."""
        return Info.from_dict(self.call('org.varlink.service.GetInfo'))

    def get_interface_description(self, interface='io.pressured'):
        """The varlink interface description (IDL text) of @interface."""
        params = self.call('org.varlink.service.GetInterfaceDescription', {'interface': interface})
        description = params.get('description')
        if not isinstance(description, str):
            raise errors.ProtocolError(f'GetInterfaceDescription without a description: {params!r:.200}')
        return description

    # ---- io.pressured ----

    def get_status(self):
        """io.pressured.GetStatus(): version, uptime, clients,
        subscriptions, registrations, counters... as a Status."""
        return Status.from_dict(self.call('io.pressured.GetStatus'))

    def get_protection(self, cgroup=None):
        """io.pressured.GetProtection(): the protection tree of the cgroup2
        subtree at @cgroup (default: the whole hierarchy), as a Protection
        whose ``nodes`` come parents first."""
        return Protection.from_dict(self.call('io.pressured.GetProtection', _cgroup(cgroup)))

    def get_headroom(self, cgroup=None):
        """io.pressured.GetHeadroom(): how far @cgroup (default: the whole
        system) can grow before its nearest limit, as a Headroom.
        A daemon before 0.4 raises MethodNotFound; reclaim_target_bytes is
        None while no level stream of the daemon follows the cgroup."""
        return Headroom.from_dict(self.call('io.pressured.GetHeadroom', _cgroup(cgroup)))

    def inject(self, level, cgroup=None, *, resource=None):
        """io.pressured.Inject(): a synthetic pressure event of @level
        ("low", "medium", "critical") to the pressure subscriptions on
        exactly @cgroup (default "/"), of @resource (default memory).
        Returns how many subscribers it reached. Root (or [Policy]
        InjectGroup=) only: others get PermissionDenied."""
        params = _cgroup(cgroup) | {'level': level}
        if resource is not None:
            params['resource'] = resource
        return _int(self.call('io.pressured.Inject', params), 'delivered')

    def reload(self):
        """io.pressured.Reload(): the daemon reads its configuration again;
        ConfigurationRejected says why it would not. Root only."""
        self.call('io.pressured.Reload')

    def reexecute(self):
        """io.pressured.Reexecute(): the daemon executes its binary anew,
        keeping every connection. Returns once the new process answers.
        Root only."""
        self.call('io.pressured.Reexecute')

    def acknowledge_prekill(self, id):
        """io.pressured.AcknowledgePrekill(): the warning before a kill @id
        (PrekillEvent.id) was acted on; PrekillEvent.acknowledge() calls it.
        Once per warning: the daemon counts each call for one warned
        subscriber of the caller's user (this process's, else the oldest).
        NoSuchPrekill when no such warning waits for the caller's
        acknowledgement (answered already, the deadline passed, or not the
        caller's); MethodNotFound from a daemon before 0.5."""
        self.call('io.pressured.AcknowledgePrekill', {'id': id})

    def subscribe(self, cgroup=None, *, level=None, levels=False, psi=None, vmpressure=None,
                  memory_events=False, protection=False, kills=False, resource=None,
                  min_interval_ms=None, reconnect=True, parameters=None):
        """io.pressured.Subscribe(): a Subscription, iterated for its events.

        Give one selector: @level ("low", "medium", "critical"; the daemon
        picks the source), @levels=True (the level stream: LevelEvent
        first with the current level, then each change), @psi (a dict,
        a PsiTrigger or "some 150ms 2s"), @vmpressure (a level, a dict or a
        Vmpressure), @memory_events, @protection or @kills. @cgroup is the
        cgroup (default: the whole system), @resource "memory" (default),
        "cpu" or "io", @min_interval_ms merges events. @parameters adds
        to or overrides what is sent.

        The call is made here: the daemon's refusal is raised at once, and
        the stream's first event (SubscribedEvent) waits in the
        Subscription. With @reconnect (default) a connection that ends
        without "removed" is made again, with backoff, and the stream
        resumes with a ReconnectedEvent then a new SubscribedEvent.

        Kills and level streams bring PrekillEvent when systemd-oomd is about
        to kill: acknowledge() it once what must be saved is saved.
        """
        params = _wire.subscribe_parameters(cgroup, level=level, levels=levels, psi=psi, vmpressure=vmpressure,
                                            memory_events=memory_events, protection=protection, kills=kills,
                                            resource=resource, min_interval_ms=min_interval_ms, extra=parameters)
        return Subscription(self, params, reconnect)

    def watch_levels(self, cgroup=None, *, reconnect=True, prekill=True):
        """The level and headroom of @cgroup (default: the whole system):
        a LevelWatch yielding a LevelEvent with the current level, then one
        per change, and PrekillEvent. See watch_levels()."""
        return LevelWatch(self, _wire.subscribe_parameters(cgroup, levels=True), reconnect, prekill)


def _close_quietly(conn):
    """Close @conn from __del__, where the interpreter may be shutting down."""
    if conn is not None:
        try:
            conn.close()
        except Exception:  # nothing can be reported from a finalizer
            pass


def _cgroup(cgroup):
    _wire.check_cgroup(cgroup)
    return {} if cgroup is None else {'cgroup': cgroup}


def _int(params, name):
    v = params.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise errors.ProtocolError(f'the reply has no integer {name!r}: {params!r:.200}')
    return v


class Subscription:
    """A Subscribe stream: iterate it for typed events (SubscribedEvent
    first, then PressureEvent, ClearedEvent, LevelEvent, ... and
    UnknownEvent for kinds this module does not know). Iteration ends after
    RemovedEvent (the cgroup is gone) or close().

    If the connection ends otherwise (the daemon restarted without taking
    it over, or crashed), the subscription connects again (at once, then
    after 100 ms doubling up to 1 s, for as long as it takes) and
    subscribes again; a ReconnectedEvent says events may have been missed,
    and a new SubscribedEvent brings the current state. ``reconnects``
    counts these. With reconnect=False the loss raises ConnectionLost.

    A refusal of the daemon (NoSuchCgroup, ...) ends the stream and is
    raised. Close it (or use ``with``) to end the subscription.
    """

    def __init__(self, client, parameters, reconnect=True):
        self.client = client
        self.socket = client.socket
        self._stream = _wire.StreamState(parameters, reconnect, client)
        self._queue = []
        self._conn = None
        self._retry_at = None
        try:
            self._open()
            reply = self._conn.recv(None if client.timeout is None else time.monotonic() + client.timeout)
            if reply is None:
                raise errors.CallTimeout('io.pressured.Subscribe', client.timeout)
            self._queue += self._stream.handle(reply)
        except BaseException:
            self.close()
            raise

    @property
    def parameters(self):
        """The parameters Subscribe is called with."""
        return self._stream.parameters

    @property
    def reconnects(self):
        """How many times the stream was resumed on a new connection."""
        return self._stream.reconnects

    @property
    def closed(self):
        """True once the stream is over: removed, refused, or closed."""
        return self._stream.state == 'ended' and not self._queue

    def __repr__(self):
        return f'<pressured.Subscription {self.parameters!r} on {self.socket!r}>'

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        _close_quietly(getattr(self, '_conn', None))

    def __iter__(self):
        return self

    def __next__(self):
        event = self.next_event()
        if event is None:
            raise StopIteration
        return event

    def _open(self):
        self._stream.connecting()
        conn = self.client._connect()
        try:
            conn.send(self._stream.request())
        except BaseException:
            conn.close()
            raise
        if self._stream.state == 'ended':  # closed from another thread meanwhile
            conn.close()
            return
        self._conn = conn
        self._stream.connected()

    def _lost(self, error):
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._retry_at = time.monotonic() + self._stream.lost(error)

    def next_event(self, timeout=None):
        """The next event; None once the stream is over, or if @timeout
        seconds pass first (then the stream goes on: call again)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._queue:
            if self._stream.state == 'ended':
                return None
            if self._conn is None:
                wait = self._retry_at - time.monotonic()
                if deadline is not None and deadline - time.monotonic() < wait:
                    time.sleep(max(deadline - time.monotonic(), 0))
                    return None
                if wait > 0:
                    time.sleep(wait)
                    if self._stream.state == 'ended':  # closed meanwhile
                        return None
                try:
                    self._open()
                except errors.ConnectionFailed as e:
                    self._lost(e)
                continue
            conn = self._conn
            try:
                msg = conn.recv(deadline)
            except errors.ConnectionLost as e:
                if self._stream.state == 'ended':  # close() from another thread
                    return None
                self._lost(e)
                continue
            except errors.PressuredError:
                self.close()
                raise
            if msg is None:
                return None
            try:
                self._queue += self._stream.handle(msg)
            finally:
                if self._stream.state == 'ended':
                    conn.close()
                    self._conn = None
        return self._filter(self._queue.pop(0))

    def _filter(self, event):
        return event

    def close(self):
        """End the subscription: close its connection. Iteration stops; a
        thread waiting in it meanwhile gets the end of the stream."""
        self._stream.close()
        self._queue.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class LevelWatch(Subscription):
    """A level stream (Subscribe levels: true) reduced to its levels and
    warnings: iterating yields LevelEvent, first the current level, then
    each change, and PrekillEvent when systemd-oomd is about to kill the
    cgroup (acknowledge() it). ``current`` is the last level read. With
    prekill=False the warnings are acknowledged at once and not yielded.

    Across a reconnect the first level after it has ``reconnected`` True
    (changes in between were not seen; it is the level now). Iteration
    ends when the cgroup is removed (``removed`` is then True)."""

    def __init__(self, client, parameters, reconnect=True, prekill=True):
        self.current = None
        self.removed = False
        self._resumed = False
        self._prekill = prekill
        super().__init__(client, parameters, reconnect)

    def next_event(self, timeout=None):
        """The next level (LevelEvent) or warning (PrekillEvent); None once
        the stream is over or if @timeout seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0)
            event = super().next_event(left)
            if isinstance(event, PrekillEvent) and not self._prekill:
                _acknowledge_quietly(event)
                continue
            if event is None or isinstance(event, (LevelEvent, PrekillEvent)):
                return event

    def _filter(self, event):
        return _level_filter(self, event)


def _acknowledge_quietly(event):
    """Acknowledge a warning nobody asked for; what the daemon answers
    changes nothing (past the deadline it answered systemd-oomd anyway)."""
    try:
        event.acknowledge()
    except errors.PressuredError:
        pass


def _level_filter(watch, event):
    """What a level watch makes of @event: the LevelEvent to hand out (marked
    after a reconnect), or another event that the caller skips."""
    if isinstance(event, ReconnectedEvent):
        watch._resumed = True
    elif isinstance(event, RemovedEvent):
        watch.removed = True
    elif isinstance(event, LevelEvent):
        if watch._resumed:
            watch._resumed = False
            event = dataclasses.replace(event, reconnected=True)
        watch.current = event
    return event


def watch_levels(cgroup=None, *, socket=None, user=False, reconnect=True, prekill=True):
    """Follow the memory level and headroom of @cgroup (default: the whole
    system): the one call a program needs.

    Returns a LevelWatch; iterate it for LevelEvent objects, the current
    level first, then one per change (back to "normal" included), and
    PrekillEvent objects when systemd-oomd is about to kill the cgroup::

        for ev in pressured.watch_levels('/system.slice/app.service'):
            if isinstance(ev, pressured.PrekillEvent):
                save_state()
                ev.acknowledge()
            elif ev.level != 'normal':
                shrink_cache(ev.reclaim_target_bytes)

    A LevelEvent carries ``level`` ("normal", "low", "medium", "critical"),
    ``headroom_bytes`` and ``reclaim_target_bytes``. With prekill=False the
    warnings are acknowledged at once instead, and only levels come (as
    before pressured 0.5). It reconnects by itself if the daemon restarts.
    @socket and @user choose the daemon as for Client. A daemon before 0.4
    refuses with InvalidParameter (parameter "levels").
    """
    return Client(socket, user=user).watch_levels(cgroup, reconnect=reconnect, prekill=prekill)
