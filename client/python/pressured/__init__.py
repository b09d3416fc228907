# SPDX-License-Identifier: MIT
"""pressured: be told when memory gets tight, from Python.

A client of pressured, the memory-pressure notification daemon, over its
varlink socket; standard library only. Every call has a blocking form
(Client) and an asyncio form (AsyncClient).

The one call a program needs: its level and headroom, then every change::

    import pressured

    for ev in pressured.watch_levels('/system.slice/app.service'):
        if isinstance(ev, pressured.PrekillEvent):
            save_state()
            ev.acknowledge()
        else:
            print(ev.level, ev.headroom_bytes, ev.reclaim_target_bytes)

``level`` is "normal", "low", "medium" or "critical"; the first event is
the level now, the others each change (back to "normal" included).
``headroom_bytes`` is how far the cgroup can grow before its nearest
limit, ``reclaim_target_bytes`` how much to give back. When systemd-oomd
is about to kill the cgroup, a PrekillEvent comes: save what must be
saved, then ``event.acknowledge()``. With asyncio::

    async for lv in pressured.watch_levels_async(cgroup):
        ...

Any subscription, and the other methods::

    with pressured.Client() as client:
        with client.subscribe(level='medium') as sub:
            for event in sub:
                if isinstance(event, pressured.PressureEvent):
                    drop_caches()
        client.get_status(); client.get_protection('/'); client.get_headroom()
        client.inject('critical', '/my.slice'); client.reload()

The socket is the argument ``socket``, else with ``user=True`` the per-user
daemon's $XDG_RUNTIME_DIR/pressured/io.pressured, else $PRESSURED_SOCKET,
else /run/pressured/io.pressured.

Events are typed (SubscribedEvent, PressureEvent, MemoryEventsEvent,
ProtectionEvent, KilledEvent, ClearedEvent, RemovedEvent, LevelEvent,
PrekillEvent; UnknownEvent for a kind this module does not know), each with the dict
it came from in ``raw``. A subscription whose connection ends without
"removed" (the daemon restarted or crashed) connects and subscribes
again by itself, and says so with a ReconnectedEvent: events may have
been missed. Errors of the daemon are exceptions named after them
(NoSuchCgroup, PermissionDenied, InvalidParameter, ...), all
PressuredError; a daemon that is not running is DaemonNotRunning.

``pressured.__version__`` is the release of pressured the module came with.

See pressured.py(3) for the whole manual.
"""
from .aio import AsyncClient, AsyncLevelWatch, AsyncSubscription, watch_levels_async
from .client import Client, LevelWatch, Subscription, watch_levels
from .errors import (CallTimeout, ConfigurationRejected, ConnectionFailed, ConnectionLost, DaemonNotRunning,
                     ExpectedMore, InterfaceNotFound, InternalError, InvalidCgroupPath,
                     InvalidCgroupPathArgument, InvalidParameter,
                     InvalidTrigger, LimitExceeded, MessageTooLarge, MethodNotFound, MethodNotImplemented,
                     NoSuchCgroup, NoSuchPrekill, PermissionDenied, PressuredError, ProtocolError,
                     SourceUnavailable, VarlinkError)
from .types import (LEVELS, CgroupInfo, ClearedEvent, DBusStatus, Episode, Event, FastTriggers, FastTriggerUse,
                    Headroom, Info, KilledEvent, LevelEvent, MemoryEventsEvent, PastEpisode, PrekillEvent,
                    PrekillStatus, PressureEvent,
                    Protection, ProtectionEvent, ProtectionNode, ProxiedClient, PsiStats, PsiTrigger,
                    ReclaimEntry, ReconnectedEvent, Registration, RemovedEvent, State, Status,
                    SubscribedEvent, Takeover, Trigger, UnknownEvent, Vmpressure, parse_event)
from ._wire import SYSTEM_SOCKET, socket_path
from ._version import __version__

__all__ = [
    # clients and subscriptions
    'Client', 'Subscription', 'LevelWatch', 'watch_levels',
    'AsyncClient', 'AsyncSubscription', 'AsyncLevelWatch', 'watch_levels_async',
    'socket_path', 'SYSTEM_SOCKET', 'LEVELS',
    # events
    'Event', 'SubscribedEvent', 'PressureEvent', 'MemoryEventsEvent', 'ProtectionEvent', 'KilledEvent',
    'ClearedEvent', 'RemovedEvent', 'LevelEvent', 'PrekillEvent', 'ReconnectedEvent', 'UnknownEvent',
    'parse_event',
    # results and their parts
    'Status', 'Protection', 'Headroom', 'Info', 'ProtectionNode', 'Registration', 'Trigger', 'PsiTrigger',
    'Vmpressure', 'PsiStats', 'Episode', 'PastEpisode', 'State', 'ProxiedClient', 'CgroupInfo', 'Takeover',
    'ReclaimEntry', 'DBusStatus', 'FastTriggers', 'FastTriggerUse', 'PrekillStatus',
    # errors
    'PressuredError', 'VarlinkError', 'NoSuchCgroup', 'InvalidCgroupPath', 'PermissionDenied',
    'SourceUnavailable', 'InvalidTrigger', 'LimitExceeded', 'ConfigurationRejected', 'InternalError', 'NoSuchPrekill',
    'InterfaceNotFound', 'MethodNotFound', 'MethodNotImplemented', 'InvalidParameter', 'ExpectedMore',
    'ConnectionFailed', 'DaemonNotRunning', 'ConnectionLost', 'CallTimeout', 'ProtocolError', 'MessageTooLarge',
    'InvalidCgroupPathArgument',
]
