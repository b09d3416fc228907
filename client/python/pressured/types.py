# SPDX-License-Identifier: MIT
"""Typed results and events of io.pressured.

Each type is a frozen dataclass named after the interface's type
(daemon/protocol/io.pressured.varlink): SubscribedEvent, PressureEvent,
ProtectionNode, Status... A field the interface marks optional, or that a
daemon of another version leaves out, is None. Every object keeps the
dict it was made from in ``raw``, so a field this module does not know
yet is still at hand (``event.raw['new_field']``).

Subscribe streams events of several kinds; parse_event() picks the class
by ``kind`` and returns UnknownEvent for a kind this module does not know,
so a newer daemon never breaks an older program.
"""
import dataclasses
import inspect
import re
import typing

from . import _vocabulary
from .errors import ProtocolError

__all__ = [
    'PsiTrigger', 'Vmpressure', 'Trigger', 'PsiStats', 'ProtectionNode', 'Episode', 'PastEpisode', 'State',
    'ProxiedClient', 'Registration', 'CgroupInfo', 'Takeover', 'ReclaimEntry', 'DBusStatus',
    'FastTriggerUse', 'FastTriggers', 'PrekillStatus', 'Status', 'Protection', 'Headroom', 'Info',
    'Event', 'SubscribedEvent', 'PressureEvent', 'MemoryEventsEvent', 'ProtectionEvent', 'KilledEvent',
    'ClearedEvent', 'RemovedEvent', 'LevelEvent', 'PrekillEvent', 'ReconnectedEvent', 'UnknownEvent',
    'parse_event', 'LEVELS',
]

#: The levels of a level stream, from none to the worst: "normal", then the
#: interface's portable levels.
LEVELS = _vocabulary.STREAM_LEVEL


def _field(convert=None, default=None):
    """A field filled from the dict key of its name, through @convert when
    the value is not None."""
    return dataclasses.field(default=default, metadata={'convert': convert} if convert else {})


def _raw():
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


def _record(cls):
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    # What from_dict() fills, worked out once: (name, default, convert) per field.
    cls._plan = tuple((f.name, None if f.default is dataclasses.MISSING else f.default, f.metadata.get('convert'))
                      for f in dataclasses.fields(cls) if f.name != 'raw')
    return cls


class _Record:
    """Made from a dict of the wire by from_dict()."""

    @classmethod
    def from_dict(cls, d):
        """The object for the dict @d; raises ProtocolError if @d is no dict
        or holds a wrong type where an object or list is expected."""
        if not isinstance(d, dict):
            raise ProtocolError(f'expected a JSON object for {cls.__name__}, got {d!r:.200}')
        # Filled as __init__ would, without its one object.__setattr__() per
        # field of a frozen dataclass: events are made on the way to the
        # program's callback. No type here has a __post_init__.
        values = {}
        for name, default, convert in cls._plan:
            v = d.get(name)
            if v is None:
                v = default
            elif convert is not None:
                v = convert(v)
            values[name] = v
        obj = object.__new__(cls)
        obj.__dict__.update(values, raw=d)
        return obj


def _object(cls):
    return cls.from_dict


def _list_of(cls):
    def convert(v):
        if not isinstance(v, list):
            raise ProtocolError(f'expected a JSON array of {cls.__name__}, got {v!r:.200}')
        return [cls.from_dict(x) for x in v]
    return convert


def _dict(v):
    if not isinstance(v, dict):
        raise ProtocolError(f'expected a JSON object, got {v!r:.200}')
    return v


_DURATION = re.compile(r'(\d+)(us|ms|s)')
_UNITS = {'us': 1, 'ms': 1000, 's': 1000000}


@_record
class PsiTrigger(_Record):
    """A PSI trigger: ``stall`` ("some" or "full") for ``threshold_us`` of
    every ``window_us`` (microseconds). PsiTrigger.parse("some 150ms 2s")
    reads the notation of pressured.conf and pressurectl."""
    stall: str = None
    threshold_us: int = None
    window_us: int = None
    raw: dict = _raw()

    @classmethod
    def parse(cls, text):
        """The trigger written as "STALL THRESHOLD WINDOW", each duration a
        whole number with its unit us, ms or s: "some 150ms 2s"."""
        parts = text.split()
        durations = [_DURATION.fullmatch(p) for p in parts[1:]]
        if len(parts) != 3 or parts[0] not in _vocabulary.PSI_STALL or not all(durations):
            raise ValueError(f'not a PSI trigger "STALL THRESHOLD WINDOW" (e.g. "some 150ms 2s"): {text!r}')
        threshold, window = (int(m.group(1)) * _UNITS[m.group(2)] for m in durations)
        return cls(stall=parts[0], threshold_us=threshold, window_us=window)

    def to_dict(self):
        """The trigger as Subscribe's ``psi`` parameter."""
        return {'stall': self.stall, 'threshold_us': self.threshold_us, 'window_us': self.window_us}


@_record
class Vmpressure(_Record):
    """A cgroup v1 vmpressure registration: ``level`` ("low", "medium",
    "critical") and ``mode`` ("default", "hierarchy", "local" or None)."""
    level: str = None
    mode: str = None
    raw: dict = _raw()

    def to_dict(self):
        """The registration as Subscribe's ``vmpressure`` parameter."""
        return {'level': self.level} | ({'mode': self.mode} if self.mode else {})


@_record
class Trigger(_Record):
    """The kernel registration a subscription uses: ``psi`` or
    ``vmpressure``, and the portable ``level`` it was asked for, if any."""
    psi: PsiTrigger = _field(_object(PsiTrigger))
    vmpressure: Vmpressure = _field(_object(Vmpressure))
    level: str = None
    raw: dict = _raw()


@_record
class PsiStats(_Record):
    """The averages (percent) and totals (microseconds) of a pressure file."""
    some_avg10: float = None
    some_avg60: float = None
    some_avg300: float = None
    some_total_us: int = None
    full_avg10: float = None
    full_avg60: float = None
    full_avg300: float = None
    full_total_us: int = None
    raw: dict = _raw()


@_record
class ProtectionNode(_Record):
    """A cgroup's protected usage as the kernel's page_counter models it;
    bytes, None for an unlimited setting. ``state`` is "min", "low" or
    "none"."""
    cgroup: str = None
    usage: int = None
    min: int = None
    low: int = None
    emin: int = None
    elow: int = None
    min_usage: int = None
    low_usage: int = None
    children_min_usage: int = None
    children_low_usage: int = None
    state: str = None
    raw: dict = _raw()


@_record
class Episode(_Record):
    """A pressure episode still going on (CLOCK_MONOTONIC microseconds)."""
    active_since_us: int = None
    duration_us: int = None
    events: int = None
    peak: float = None
    peak_level: str = None
    raw: dict = _raw()


@_record
class PastEpisode(_Record):
    """A pressure episode that has ended, from a registration's history."""
    start_us: int = None
    end_us: int = None
    start_time_us: int = None
    end_time_us: int = None
    duration_us: int = None
    events: int = None
    peak: float = None
    peak_level: str = None
    resource: str = None
    raw: dict = _raw()


@_record
class State(_Record):
    """The current picture sent with "subscribed": ``psi`` averages,
    memory.events ``counters`` (a dict), the protection ``node``, the
    ``kill_sources`` or the active ``episode``, by source."""
    psi: PsiStats = _field(_object(PsiStats))
    counters: dict = _field(_dict)
    node: ProtectionNode = _field(_object(ProtectionNode))
    kill_sources: list = None
    episode: Episode = _field(_object(Episode))
    raw: dict = _raw()


@_record
class ProxiedClient(_Record):
    """A client of the systemd memory-pressure socket."""
    pid: int = None
    cgroup: str = None
    unit: str = None
    raw: dict = _raw()


@_record
class Registration(_Record):
    """A kernel registration and the subscriptions sharing it."""
    cgroup: str = None
    source: str = None
    resource: str = None
    trigger: Trigger = _field(_object(Trigger))
    subscribers: int = None
    episode: Episode = _field(_object(Episode))
    history: list = _field(_list_of(PastEpisode))
    proxied: list = _field(_list_of(ProxiedClient))
    fast_trigger_uid: int = None
    raw: dict = _raw()


@_record
class CgroupInfo(_Record):
    """The hierarchies the daemon uses."""
    v2_root: str = None
    v1_memory_root: str = None
    recursive_protection: bool = None
    raw: dict = _raw()


@_record
class Takeover(_Record):
    """What the daemon took over from the process before it."""
    connections: int = None
    proxied_clients: int = None
    registrations: int = None
    closed: int = None
    clean: bool = None
    time_us: int = None
    raw: dict = _raw()


@_record
class ReclaimEntry(_Record):
    """A cgroup under proactive reclaim."""
    cgroup: str = None
    reclaimed_bytes: int = None
    last_step_bytes: int = None
    stall_pct: float = None
    io_stall_pct: float = None
    floor_bytes: int = None
    state: str = None
    raw: dict = _raw()


@_record
class DBusStatus(_Record):
    """The system bus side ([DBus] LowMemoryMonitor=)."""
    connected: bool = None
    low_memory_monitor: str = None
    low_memory_warnings: int = None
    raw: dict = _raw()


@_record
class FastTriggerUse(_Record):
    """Fast PSI triggers held by one uid."""
    uid: int = None
    fast_triggers: int = None
    raw: dict = _raw()


@_record
class FastTriggers(_Record):
    """[Policy] MaxFastTriggersPerUser= and its use per uid."""
    max_per_user: int = None
    users: list = _field(_list_of(FastTriggerUse))
    raw: dict = _raw()


@_record
class PrekillStatus(_Record):
    """The warnings before a kill, per call of systemd-oomd's pre-kill
    hook: ``warned`` (calls that warned at least one subscriber), of these
    ``acknowledged`` (answered when every warned subscriber had
    acknowledged or gone), ``deadline_reached`` and ``pending`` (waiting
    now)."""
    warned: int = None
    acknowledged: int = None
    deadline_reached: int = None
    pending: int = None
    raw: dict = _raw()


@_record
class Status(_Record):
    """GetStatus(): the daemon, its registrations and counters (a dict:
    ``status.counters['events_delivered']``)."""
    version: str = None
    uptime_us: int = None
    generation: int = None
    takeover: Takeover = _field(_object(Takeover))
    clients: int = None
    subscriptions: int = None
    proxied_clients: int = None
    registrations: list = _field(_list_of(Registration), default=())
    cgroup: CgroupInfo = _field(_object(CgroupInfo))
    counters: dict = _field(_dict)
    fast_triggers: FastTriggers = _field(_object(FastTriggers))
    reclaim: list = _field(_list_of(ReclaimEntry), default=())
    dbus: DBusStatus = _field(_object(DBusStatus))
    #: None from a daemon before 0.5.
    prekill: PrekillStatus = _field(_object(PrekillStatus))
    raw: dict = _raw()


@_record
class Protection(_Record):
    """GetProtection(): the ``nodes`` of a subtree, parents before children.
    Iterating a Protection iterates its nodes."""
    nodes: list = _field(_list_of(ProtectionNode), default=())
    raw: dict = _raw()

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self):
        return len(self.nodes)


@_record
class Headroom(_Record):
    """GetHeadroom(): how far a cgroup can grow before its nearest limit.

    ``usage_bytes``: its memory use; ``limit_bytes`` and ``limiting_cgroup``:
    the nearest limit (memory.high or memory.max of the cgroup or an
    ancestor) and where it is set, None without one; ``headroom_bytes``:
    the limit minus the usage, or MemAvailable where no limit applies, None
    where nothing can be known; ``reclaim_target_bytes``: how much to free
    to get back to the comfort margin of the current level (0 at normal)."""
    usage_bytes: int = None
    limit_bytes: int = None
    limiting_cgroup: str = None
    headroom_bytes: int = None
    reclaim_target_bytes: int = None
    raw: dict = _raw()


@_record
class Info(_Record):
    """org.varlink.service.GetInfo()."""
    vendor: str = None
    product: str = None
    version: str = None
    url: str = None
    interfaces: list = None
    raw: dict = _raw()


# ---- Events ----

_EVENT_TYPES = {}


def _event(kind, register=True):
    """Make an event class whose ``kind`` defaults to @kind, and let
    parse_event() find it by that kind if @register."""
    def make(cls):
        cls.__annotations__ = {'kind': str} | cls.__dict__.get('__annotations__', {})
        cls.kind = kind
        cls.KIND = kind
        cls = _record(cls)
        if register:
            _EVENT_TYPES[kind] = cls
        return cls
    return make


@_record
class Event(_Record):
    """Base of every event of a subscription: ``kind`` and ``cgroup``."""
    KIND: typing.ClassVar[str] = None
    kind: str = None
    cgroup: str = None
    raw: dict = _raw()


@_event('subscribed')
class SubscribedEvent(Event):
    """The first event of a stream: the ``source`` the daemon chose, the
    ``trigger`` it uses (``adjusted`` when it had to change it, with
    ``adjusted_reason``) and the current ``state``."""
    source: str = None
    resource: str = None
    trigger: Trigger = _field(_object(Trigger))
    adjusted: bool = False
    adjusted_reason: str = None
    state: State = _field(_object(State))


@_event('pressure')
class PressureEvent(Event):
    """Pressure from the kernel, or from Inject() (``synthetic``, source
    "inject"). ``count``: kernel notifications merged; ``missed``: events
    this client lost before it; ``time_us`` and ``monotonic_us``: when the
    daemon read it (CLOCK_REALTIME, CLOCK_MONOTONIC)."""
    source: str = None
    resource: str = None
    seq: int = None
    count: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None
    level: str = None
    synthetic: bool = False
    psi: PsiStats = _field(_object(PsiStats))
    protection: ProtectionNode = _field(_object(ProtectionNode))


@_event('memory_events')
class MemoryEventsEvent(Event):
    """A change of memory.events: ``counters`` now and their ``delta``
    (dicts: low, high, max, oom, oom_kill, oom_group_kill)."""
    source: str = None
    seq: int = None
    count: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None
    counters: dict = _field(_dict)
    delta: dict = _field(_dict)


@_event('protection')
class ProtectionEvent(Event):
    """A change of the effective-protection ``state`` ("min", "low",
    "none") from ``previous``, with the cgroup's ``node``."""
    source: str = None
    seq: int = None
    count: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None
    state: str = None
    previous: str = None
    node: ProtectionNode = _field(_object(ProtectionNode))


@_event('killed')
class KilledEvent(Event):
    """A kill in the subscribed subtree: ``by`` "systemd-oomd" or "kernel",
    its ``reason`` and the number of kills in ``count``."""
    by: str = None
    reason: str = None
    seq: int = None
    count: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None


@_event('prekill')
class PrekillEvent(Event):
    """A warning before a kill: systemd-oomd is about to kill ``cgroup``
    (the subscribed one or one below it; on a level stream, it or one above
    it), ``by`` is "systemd-oomd". The daemon holds systemd-oomd's call
    until every warned subscriber acknowledged or went away, or until
    ``deadline_us`` (CLOCK_MONOTONIC microseconds, as time.monotonic_ns()
    // 1000 on the same machine): save what must be saved, then
    acknowledge(). ``id`` is the warning's number. A warning cannot stop
    the kill."""
    by: str = None
    id: int = None
    deadline_us: int = None
    seq: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None

    def bind(self, client):
        """Let acknowledge() go through @client (a Client or an
        AsyncClient); a subscription binds the warnings it yields to its own."""
        object.__setattr__(self, '_client', client)
        object.__setattr__(self, '_acknowledged', False)
        return self

    def acknowledge(self):
        """Tell the daemon the warning was acted on (AcknowledgePrekill):
        systemd-oomd is answered, and kills, once every warned subscriber
        has. Through the client of the subscription that yielded the event,
        on that client's connection for calls (the stream goes on): from a
        Client's subscription or watch_levels() it blocks; from an
        AsyncClient's it is a coroutine, ``await event.acknowledge()``.
        Once per warning: a call after one that succeeded does nothing (a
        second acknowledgement would count for another program of the
        user). NoSuchPrekill when the daemon answered systemd-oomd already
        (the deadline passed); MethodNotFound from a daemon before 0.5."""
        client = getattr(self, '_client', None)
        if client is None:
            raise ValueError('this PrekillEvent came from no subscription: use Client.acknowledge_prekill(event.id)')
        if inspect.iscoroutinefunction(client.acknowledge_prekill):
            return self._acknowledge_async(client)
        if not getattr(self, '_acknowledged', False):
            client.acknowledge_prekill(self.id)
            object.__setattr__(self, '_acknowledged', True)
        return None

    async def _acknowledge_async(self, client):
        if not getattr(self, '_acknowledged', False):
            await client.acknowledge_prekill(self.id)
            object.__setattr__(self, '_acknowledged', True)


@_event('cleared')
class ClearedEvent(Event):
    """The end of a pressure episode: its ``duration_us``, its pressure
    ``events`` and the ``peak`` stall (PSI) or ``peak_level`` (vmpressure)."""
    source: str = None
    resource: str = None
    seq: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None
    level: str = None
    duration_us: int = None
    events: int = None
    peak: float = None
    peak_level: str = None


@_event('removed')
class RemovedEvent(Event):
    """The last event of a stream: the cgroup is gone."""
    source: str = None
    seq: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None


@_event('level')
class LevelEvent(Event):
    """The level of a level stream (Subscribe ``levels``): first the
    current one, then each change, back to "normal" included.

    ``level``: "normal", "low", "medium" or "critical"; ``headroom_bytes``:
    how far the cgroup can grow before its nearest limit (None where
    nothing can be known); ``reclaim_target_bytes``: how much to free to
    get back to the level's comfort margin (0 at normal); ``missed``:
    changes folded into this one because the client had not read them.

    ``reconnected`` is set by watch_levels() on the first level after the
    connection to the daemon was lost and made again: changes in between
    were not seen, and this is the level now.
    """
    level: str = None
    headroom_bytes: int = None
    reclaim_target_bytes: int = None
    seq: int = None
    missed: int = None
    time_us: int = None
    monotonic_us: int = None
    reconnected: bool = False

    @property
    def severity(self):
        """The level as a number, 0 (normal) to 3 (critical), for comparisons;
        None for a level this module does not know."""
        return LEVELS.index(self.level) if self.level in LEVELS else None


@_event('reconnected', register=False)
class ReconnectedEvent(Event):
    """Not from the daemon: the subscription's connection ended without
    "removed" (the daemon restarted or crashed), and the module connected
    and subscribed again by itself. Events may have been missed meanwhile;
    a fresh SubscribedEvent (with the current state) follows.

    ``reason``: how the connection ended; ``attempts``: connections tried
    until one was subscribed."""
    reason: str = None
    attempts: int = None


@_record
class UnknownEvent(Event):
    """An event of a kind this module does not know (a newer daemon): its
    ``kind``, ``cgroup`` and everything else in ``raw``."""


def parse_event(d):
    """The typed event for the dict @d of a Subscribe reply, by its "kind";
    UnknownEvent for a kind not known here. Raises ProtocolError if @d is
    no object or has no string "kind"."""
    if not isinstance(d, dict) or not isinstance(d.get('kind'), str):
        raise ProtocolError(f'an event must be a JSON object with a string "kind", got {d!r:.200}')
    return _EVENT_TYPES.get(d['kind'], UnknownEvent).from_dict(d)
