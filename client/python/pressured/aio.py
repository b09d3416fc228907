# SPDX-License-Identifier: MIT
"""The asyncio client: AsyncClient, AsyncSubscription, AsyncLevelWatch,
watch_levels_async().

The same calls as the blocking Client, as coroutines, and subscriptions
as asynchronous iterators. Nothing runs in the background: no task is
created, a connection is read only while a coroutine of this module
awaits it.

Cancelling a task that awaits a subscription (``async for``, or
next_event()) ends the subscription and closes its connection at once;
to wait for an event with a time limit, use next_event(timeout), which
leaves the subscription going.
"""
import asyncio
import select
import socket as socket_

from . import _wire, errors
from .client import _cgroup, _close_quietly, _int, _level_filter
from .types import Headroom, Info, LevelEvent, PrekillEvent, Protection, Status

__all__ = ['AsyncClient', 'AsyncSubscription', 'AsyncLevelWatch', 'watch_levels_async']


class _Connection:
    """One varlink connection: a non-blocking socket the running loop
    watches while a coroutine waits for it. As in the blocking client, what
    the daemon sent before it hung up is read even when a write failed
    (asyncio transports stop reading at a failed write, and a refusal such
    as LimitExceeded would be lost). close() may come from another task
    while one waits: the wait then ends."""

    def __init__(self, path, sock, loop, max_message_bytes, max_reply_bytes):
        self.path = path
        self.sock = sock
        self.loop = loop
        self.max_message_bytes = max_message_bytes
        self.decoder = _wire.Decoder(max_reply_bytes)
        self.broken = None
        self.eof = False
        self.closed = False
        self.waiter = None

    @classmethod
    async def open(cls, path, max_message_bytes, max_reply_bytes):
        loop = asyncio.get_running_loop()
        sock = socket_.socket(socket_.AF_UNIX, socket_.SOCK_STREAM | socket_.SOCK_CLOEXEC)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            sock.close()
            raise errors.DaemonNotRunning(path, e.errno, e.strerror) from None
        except OSError as e:
            sock.close()
            raise errors.ConnectionFailed(path, e.errno, e.strerror) from None
        except BaseException:
            _forget_writer(loop, sock)
            sock.close()
            raise
        return cls(path, sock, loop, max_message_bytes, max_reply_bytes)

    async def send(self, message):
        """Send @message. A daemon that hung up is reported by recv(), after
        what it sent before."""
        data = _wire.encode(message, self.max_message_bytes)
        if self.broken is None and not self.closed:
            try:
                await self.loop.sock_sendall(self.sock, data)
            except OSError as e:
                self.broken = e.strerror or str(e)

    async def _readable(self):
        """Wait until the socket is readable: True, or False if close() came first."""
        fut = self.loop.create_future()

        def ready():
            if not fut.done():
                fut.set_result(True)
        fd = self.sock.fileno()
        self.loop.add_reader(fd, ready)
        self.waiter = fut
        try:
            return await fut
        finally:
            if self.waiter is fut:
                self.waiter = None
                self.loop.remove_reader(fd)

    async def recv(self):
        while True:
            msg = self.decoder.next()
            if msg is not None:
                return msg
            if self.closed:
                raise errors.ConnectionLost(self.path, 'closed by the client')
            if self.eof:
                raise errors.ConnectionLost(self.path, self.broken or 'the daemon closed the connection')
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                await self._readable()
                continue
            except OSError as e:
                raise errors.ConnectionLost(self.path, e.strerror or str(e)) from None
            if not data:
                self.eof = True
                if self.decoder.pending:
                    raise errors.ConnectionLost(self.path, 'the daemon closed the connection '
                                                           'in the middle of a message')
            self.decoder.feed(data)

    def is_stale(self):
        """True if the connection cannot carry a call: the daemon hung up or
        sent what nobody asked for."""
        if self.decoder.pending or self.broken or self.eof or self.closed:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self):
        """Close now: safe where nothing may be awaited (cancellation, another task)."""
        if self.closed:
            return
        self.closed = True
        fut, self.waiter = self.waiter, None
        if fut is not None:
            if not self.loop.is_closed():
                self.loop.remove_reader(self.sock.fileno())
            if not fut.done():
                fut.set_result(False)
        _forget_writer(self.loop, self.sock)
        self.sock.close()

    async def aclose(self):
        self.close()


def _forget_writer(loop, sock):
    """Take @sock out of @loop's selector before it is closed, so that a
    write cancelled on it cannot touch a later file of the same number."""
    if sock.fileno() < 0 or loop.is_closed():
        return
    try:
        loop.remove_writer(sock)
    except (RuntimeError, ValueError, OSError):
        pass


class AsyncClient:
    """A client of the pressured daemon for asyncio programs.

    The arguments are those of Client: @socket (else, with @user=True,
    $XDG_RUNTIME_DIR/pressured/io.pressured; else $PRESSURED_SOCKET; else
    /run/pressured/io.pressured), @timeout for calls (seconds, None for
    none), @max_message_bytes. Every method of Client is a coroutine here::

        async with pressured.AsyncClient() as client:
            status = await client.get_status()
            async with client.subscribe(level='medium') as sub:
                async for event in sub:
                    ...

    Calls from several tasks on one AsyncClient are made one after the
    other on its connection.
    """

    def __init__(self, socket=None, *, user=False, timeout=_wire.CALL_TIMEOUT,
                 max_message_bytes=_wire.MAX_MESSAGE_BYTES, max_reply_bytes=_wire.MAX_REPLY_BYTES):
        self.socket = _wire.socket_path(socket, user)
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.max_reply_bytes = max_reply_bytes
        self._conn = None
        self._lock = asyncio.Lock()

    def __repr__(self):
        return f'<pressured.AsyncClient socket={self.socket!r}>'

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def __del__(self):
        _close_quietly(getattr(self, '_conn', None))

    async def _connect(self):
        return await _Connection.open(self.socket, self.max_message_bytes, self.max_reply_bytes)

    async def connect(self):
        """Connect now rather than at the first call. Returns the client."""
        async with self._lock:
            if self._conn is None:
                self._conn = await self._connect()
        return self

    async def close(self):
        """Close the connection of calls (subscriptions have their own)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.aclose()

    def _drop(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def call(self, method, parameters=None):
        """Call @method with the dict @parameters; return the reply's
        parameters (a dict). See Client.call()."""
        message = _wire.call_message(method, parameters)
        _wire.encode(message, self.max_message_bytes)
        async with self._lock:
            reused = self._conn is not None
            if reused and self._conn.is_stale():
                self._drop()
                reused = False
            try:
                return await self._call_locked(method, message)
            except errors.ConnectionLost:
                if not reused or method not in _wire.IDEMPOTENT:
                    raise
            return await self._call_locked(method, message)

    async def _call_locked(self, method, message):
        try:
            async with asyncio.timeout(self.timeout) as limit:
                if self._conn is None:
                    self._conn = await self._connect()
                await self._conn.send(message)
                return _wire.call_result(await self._conn.recv())
        except errors.VarlinkError:
            raise
        except TimeoutError:
            self._drop()
            if limit.expired():
                raise errors.CallTimeout(method, self.timeout) from None
            raise
        except BaseException:
            # Lost, garbage or cancelled: the answer may still come, so the
            # connection cannot carry another call.
            self._drop()
            raise

    async def get_info(self):
        """org.varlink.service.GetInfo() as an Info."""
        return Info.from_dict(await self.call('org.varlink.service.GetInfo'))

    async def get_interface_description(self, interface='io.pressured'):
        """The varlink interface description (IDL text) of @interface."""
        params = await self.call('org.varlink.service.GetInterfaceDescription', {'interface': interface})
        description = params.get('description')
        if not isinstance(description, str):
            raise errors.ProtocolError(f'GetInterfaceDescription without a description: {params!r:.200}')
        return description

    async def get_status(self):
        """io.pressured.GetStatus() as a Status."""
        return Status.from_dict(await self.call('io.pressured.GetStatus'))

    async def get_protection(self, cgroup=None):
        """io.pressured.GetProtection(@cgroup) as a Protection."""
        return Protection.from_dict(await self.call('io.pressured.GetProtection', _cgroup(cgroup)))

    async def get_headroom(self, cgroup=None):
        """io.pressured.GetHeadroom(@cgroup) as a Headroom."""
        return Headroom.from_dict(await self.call('io.pressured.GetHeadroom', _cgroup(cgroup)))

    async def inject(self, level, cgroup=None, *, resource=None):
        """io.pressured.Inject(); returns the subscribers reached."""
        params = _cgroup(cgroup) | {'level': level}
        if resource is not None:
            params['resource'] = resource
        return _int(await self.call('io.pressured.Inject', params), 'delivered')

    async def reload(self):
        """io.pressured.Reload()."""
        await self.call('io.pressured.Reload')

    async def reexecute(self):
        """io.pressured.Reexecute(); returns once the new process answers."""
        await self.call('io.pressured.Reexecute')

    async def acknowledge_prekill(self, id):
        """io.pressured.AcknowledgePrekill(@id); see Client.acknowledge_prekill()."""
        await self.call('io.pressured.AcknowledgePrekill', {'id': id})

    def subscribe(self, cgroup=None, *, level=None, levels=False, psi=None, vmpressure=None,
                  memory_events=False, protection=False, kills=False, resource=None,
                  min_interval_ms=None, reconnect=True, parameters=None):
        """io.pressured.Subscribe(): an AsyncSubscription (the arguments are
        those of Client.subscribe()). The call is made when it is awaited,
        entered with ``async with``, or first iterated; a refusal is raised
        there."""
        params = _wire.subscribe_parameters(cgroup, level=level, levels=levels, psi=psi, vmpressure=vmpressure,
                                            memory_events=memory_events, protection=protection, kills=kills,
                                            resource=resource, min_interval_ms=min_interval_ms, extra=parameters)
        return AsyncSubscription(self, params, reconnect)

    def watch_levels(self, cgroup=None, *, reconnect=True, prekill=True):
        """The level and headroom of @cgroup as an AsyncLevelWatch; see
        watch_levels_async()."""
        return AsyncLevelWatch(self, _wire.subscribe_parameters(cgroup, levels=True), reconnect, prekill)


class AsyncSubscription:
    """A Subscribe stream for asyncio: ``async for event in sub``.

    It subscribes when awaited (``sub = await client.subscribe(...)``),
    entered (``async with client.subscribe(...) as sub``) or first
    iterated. Events, reconnects (ReconnectedEvent, then a new
    SubscribedEvent) and the end after RemovedEvent are those of the
    blocking Subscription. aclose(), leaving ``async with`` or cancelling
    the task that awaits it closes the connection.
    """

    def __init__(self, client, parameters, reconnect=True):
        self.client = client
        self.socket = client.socket
        self._parameters = parameters
        self._reconnect = reconnect
        self._stream = _wire.StreamState(parameters, reconnect, client)
        self._queue = []
        self._conn = None
        self._started = False
        self._retry_at = None

    @property
    def parameters(self):
        """The parameters Subscribe is called with."""
        return self._parameters

    @property
    def reconnects(self):
        """How many times the stream was resumed on a new connection."""
        return self._stream.reconnects

    @property
    def closed(self):
        """True once the stream is over: removed, refused, or closed."""
        return self._stream.state == 'ended' and not self._queue

    def __repr__(self):
        return f'<pressured.AsyncSubscription {self._parameters!r} on {self.socket!r}>'

    def __await__(self):
        return self._start().__await__()

    async def __aenter__(self):
        return await self._start()

    async def __aexit__(self, *exc):
        await self.aclose()

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            event = await self._next()
        except asyncio.CancelledError:
            self._abort()
            raise
        if event is None:
            raise StopAsyncIteration
        return event

    def __del__(self):
        _close_quietly(getattr(self, '_conn', None))

    async def _start(self):
        if self._started or self._stream.state == 'ended':
            return self
        self._started = True
        try:
            async with asyncio.timeout(self.client.timeout) as limit:
                await self._open()
                if self._conn is not None:  # else closed meanwhile
                    self._queue += self._stream.handle(await self._conn.recv())
        except TimeoutError:
            self._abort()
            if limit.expired():
                raise errors.CallTimeout('io.pressured.Subscribe', self.client.timeout) from None
            raise
        except asyncio.CancelledError:
            # Interrupted before the answer (a timeout of next_event()): start
            # afresh next time, unless the subscription was closed meanwhile.
            self._close_conn()
            if self._stream.state != 'ended':
                self._stream = _wire.StreamState(self._parameters, self._reconnect, self.client)
                self._started = False
            raise
        except BaseException:
            self._abort()
            raise
        return self

    async def _open(self):
        self._stream.connecting()
        conn = await self.client._connect()
        try:
            await conn.send(self._stream.request())
        except BaseException:
            conn.close()
            raise
        if self._stream.state == 'ended':  # closed by another task meanwhile
            conn.close()
            return
        self._conn = conn
        self._stream.connected()

    def _lost(self, error):
        self._close_conn()
        self._retry_at = asyncio.get_running_loop().time() + self._stream.lost(error)

    def _close_conn(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def _next_any(self):
        await self._start()
        loop = asyncio.get_running_loop()
        while not self._queue:
            if self._stream.state == 'ended':
                return None
            if self._conn is None:
                wait = self._retry_at - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    if self._stream.state == 'ended':  # closed by another task meanwhile
                        return None
                try:
                    await self._open()
                except errors.ConnectionFailed as e:
                    self._lost(e)
                continue
            try:
                msg = await self._conn.recv()
            except errors.ConnectionLost as e:
                if self._stream.state == 'ended':  # aclose() from another task
                    return None
                self._lost(e)
                continue
            except errors.PressuredError:
                self._abort()
                raise
            try:
                self._queue += self._stream.handle(msg)
            finally:
                if self._stream.state == 'ended':
                    self._close_conn()
        return self._filter(self._queue.pop(0))

    async def _next(self):
        return await self._next_any()

    def _filter(self, event):
        return event

    async def next_event(self, timeout=None):
        """The next event; None once the stream is over, or if @timeout
        seconds pass first (the subscription then goes on)."""
        try:
            async with asyncio.timeout(timeout) as limit:
                return await self._next()
        except TimeoutError:
            if limit.expired():
                return None
            raise
        except asyncio.CancelledError:
            self._abort()
            raise

    def _abort(self):
        self._stream.close()
        self._queue.clear()
        self._close_conn()

    async def aclose(self):
        """End the subscription and close its connection."""
        conn, self._conn = self._conn, None
        self._abort()
        if conn is not None:
            await conn.aclose()


class AsyncLevelWatch(AsyncSubscription):
    """A level stream reduced to its LevelEvent and PrekillEvent objects,
    for asyncio; see LevelWatch (``await event.acknowledge()`` here).
    ``current`` is the last level read, ``removed`` True once the cgroup is
    gone."""

    def __init__(self, client, parameters, reconnect=True, prekill=True):
        super().__init__(client, parameters, reconnect)
        self.current = None
        self.removed = False
        self._resumed = False
        self._prekill = prekill

    async def _next(self):
        while True:
            event = await self._next_any()
            if isinstance(event, PrekillEvent) and not self._prekill:
                try:
                    await event.acknowledge()
                except errors.PressuredError:
                    pass  # past the deadline the daemon answered systemd-oomd anyway
                continue
            if event is None or isinstance(event, (LevelEvent, PrekillEvent)):
                return event

    def _filter(self, event):
        return _level_filter(self, event)


def watch_levels_async(cgroup=None, *, socket=None, user=False, reconnect=True, prekill=True):
    """Follow the memory level and headroom of @cgroup (default: the whole
    system) from asyncio: an AsyncLevelWatch yielding LevelEvent objects,
    the current level first, then one per change, and PrekillEvent
    objects::

        async for ev in pressured.watch_levels_async('/system.slice/app.service'):
            if isinstance(ev, pressured.PrekillEvent):
                await save_state()
                await ev.acknowledge()
            else:
                print(ev.level, ev.headroom_bytes)

    It reconnects by itself; cancelling the task closes it. See
    watch_levels().
    """
    return AsyncClient(socket, user=user).watch_levels(cgroup, reconnect=reconnect, prekill=prekill)
