# SPDX-License-Identifier: MIT
"""The records of the varlink interfaces, read from and written to JSON values.

decode() makes one of the frozen dataclasses of _types.py (generated from
the interfaces by daemon/protocol/gen-wire.py) from a JSON value, by the
class's FIELDS; encode() makes the JSON value of one. The same rules as
the C bindings (daemon/protocol/wire.c): a lenient reader (a client's)
skips members it does not know and keeps enum names it does not know;
a strict one refuses both. Null and absent are the same: None.
"""
import sys

INT_MAX = (1 << 63) - 1


class DecodeError(ValueError):
    """A JSON value that is not the record it should be: where, and why."""

    def __init__(self, path, why):
        super().__init__(f'{path or "the value"}: {why}')
        self.path = path
        self.why = why


class UnknownKind(DecodeError):
    """An object of a "@oneof" member whose kind names none of its types."""


def _classes(cls):
    return sys.modules[cls.__module__].CLASSES


def _join(path, name):
    return f'{path}.{name}' if path else name


def _value(cls, kind, sub, v, lenient, path):
    if kind == 'bool':
        if not isinstance(v, bool):
            raise DecodeError(path, f'not a bool: {v!r}')
        return v
    if kind == 'int':
        if isinstance(v, float) and lenient:
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool):
            raise DecodeError(path, f'not an integer: {v!r}')
        if not 0 <= v <= INT_MAX:
            raise DecodeError(path, f'out of range: {v!r}')
        return v
    if kind == 'float':
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise DecodeError(path, f'not a number: {v!r}')
        return v
    if kind in ('string', 'cgroup'):
        if not isinstance(v, str):
            raise DecodeError(path, f'not a string: {v!r}')
        return v
    if kind == 'enum':
        if not isinstance(v, str) or (v not in sub and not lenient):
            raise DecodeError(path, f'not one of {", ".join(sub)}: {v!r}')
        return v
    if kind == 'const':
        if v != sub:
            raise DecodeError(path, f'not {sub!r}: {v!r}')
        return v
    if kind == 'object':
        return decode(_classes(cls)[sub], v, lenient, path)
    if kind == 'array':
        if not isinstance(v, list):
            raise DecodeError(path, f'not a list: {v!r}')
        item = 'object' if sub else 'string'
        return tuple(_value(cls, item, sub, x, lenient, f'{path}[{i}]') for i, x in enumerate(v))
    if kind == 'oneof':
        field, types = sub
        if not isinstance(v, dict):
            raise DecodeError(path, f'not an object: {v!r}')
        if v.get(field) not in types:
            raise UnknownKind(_join(path, field), f'not one of {", ".join(types)}: {v.get(field)!r}')
        return decode(_classes(cls)[types[v[field]]], v, lenient, path)
    return v    # any


def decode(cls, value, lenient=True, path=''):
    """The record of class @cls (of _types.py) that the JSON value @value is;
    raises DecodeError (UnknownKind for an unknown "@oneof" type)."""
    if not isinstance(value, dict):
        raise DecodeError(path, f'not an object: {value!r}')
    names = {f[0] for f in cls.FIELDS}
    for key in value:
        if key not in names and not lenient:
            raise DecodeError(_join(path, key), 'not a member of ' + cls.__name__)
    members = {}
    for name, kind, optional, sub in cls.FIELDS:
        v = value.get(name)
        if v is None:
            if not optional:
                raise DecodeError(_join(path, name), 'missing')
            continue
        v = _value(cls, kind, sub, v, lenient, _join(path, name))
        if kind != 'const':
            members[name] = v
    return cls(**members)


def encode(obj):
    """The JSON value of the record @obj: its members in the interface's
    order, the optional ones that are not None."""
    out = {}
    for name, kind, _, sub in type(obj).FIELDS:
        if kind == 'const':
            out[name] = sub
            continue
        v = getattr(obj, name)
        if v is None:
            continue
        if kind in ('object', 'oneof'):
            v = encode(v)
        elif kind == 'array' and sub:
            v = [encode(x) for x in v]
        elif kind == 'array':
            v = list(v)
        out[name] = v
    return out
