"""Protobuf wire encoding of ``google.protobuf.Struct`` / ``ListValue`` / ``Value``, straight
from JSON-like Python values.

Why: a view's game-specific ``table`` (columns, bids, melds, the deal's log...) is a Struct of a
hundred-odd nodes, and it is different for every audience of every action (a seat's table
names cards only that seat knows). protobuf's Python helpers (``Struct.update``) build it node
by node through message objects, ~2.5 µs a node; encoding the bytes directly is several times
cheaper, and the result is parsed (in C) or concatenated into the enclosing message.

Semantics are those of ``json.dumps`` followed by ``Struct.update(json.loads(...))``, the path
the codec used before: mapping keys become JSON's key strings (``1`` -> ``"1"``, ``True`` ->
``"true"``, ``None`` -> ``"null"``), tuples are arrays, sets sorted arrays, numbers doubles; a
non-finite float is a ValueError and an unknown type a TypeError, never silently dropped.
"""

from __future__ import annotations

import marshal
import math
import struct as _struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

_pack_double = _struct.Struct("<d").pack
_SMALL_VARINTS = [bytes((i,)) for i in range(128)]
# a tag (field 1 of a Struct entry or a ListValue; Value's struct_value, list_value) followed by
# a one-byte length: the common case, looked up instead of built
_ENTRY_TAGS = [bytes((0x0A, i)) for i in range(128)]
_STRUCT_TAGS = [bytes((0x2A, i)) for i in range(128)]
_LIST_TAGS = [bytes((0x32, i)) for i in range(128)]

# Value oneof tags: null_value = 1 (varint), number_value = 2 (fixed64), string_value = 3,
# bool_value = 4 (varint), struct_value = 5, list_value = 6 (length-delimited)
_NULL = b"\x08\x00"
_TRUE = b"\x20\x01"
_FALSE = b"\x20\x00"
_NUMBER = b"\x11"
_STRING = 0x1A
_STRUCT = 0x2A
_LIST = 0x32

#: Encoded Values and map-entry key prefixes of short strings (card codes, phases, keys): the
#: same few hundred recur in every view. Bounded: a string only enters while there is room.
_STRING_CACHE: dict[str, bytes] = {}
_KEY_CACHE: dict[str, bytes] = {}
_CACHE_MAX = 8192
_CACHE_STRING_CHARS = 32


def varint(n: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    if n < 128:
        return _SMALL_VARINTS[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: ``tag`` (field number << 3 | 2) and ``payload``."""
    size = len(payload)
    return _tag_bytes(tag) + (_SMALL_VARINTS[size] if size < 128 else varint(size)) + payload


_TAGS: dict[int, bytes] = {}


def _tag_bytes(tag: int) -> bytes:
    b = _TAGS.get(tag)
    if b is None:
        b = _TAGS[tag] = varint(tag)
    return b


def _string_value(s: str) -> bytes:
    b = _STRING_CACHE.get(s)
    if b is None:
        raw = s.encode("utf-8")
        b = bytes((_STRING,)) + varint(len(raw)) + raw
        if len(s) <= _CACHE_STRING_CHARS and len(_STRING_CACHE) < _CACHE_MAX:
            _STRING_CACHE[s] = b
    return b


def json_key(k: Any) -> str:
    """The key string ``json.dumps`` writes for a mapping key."""
    t = type(k)
    if t is str:
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    if isinstance(k, float):
        if not math.isfinite(k):
            raise ValueError(f"non-finite number as a key: {k!r}")
        return float.__repr__(k)
    if isinstance(k, str):
        return str.__str__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {t.__name__}")


def _entry_prefix(key: str) -> bytes:
    """``fields`` map entry up to its value: entry key (field 1) and the value's tag (field 2)."""
    b = _KEY_CACHE.get(key)
    if b is None:
        raw = key.encode("utf-8")
        b = b"\x0a" + varint(len(raw)) + raw + b"\x12"
        if len(key) <= _CACHE_STRING_CHARS and len(_KEY_CACHE) < _CACHE_MAX:
            _KEY_CACHE[key] = b
    return b


def struct_body(data: Mapping[Any, Any]) -> bytes:
    """The serialized ``Struct`` of a mapping."""
    parts = []
    append = parts.append
    for k, v in data.items():
        t = type(v)
        if type(k) is str and (t is str or t is bool or v is None or (t is int and -1024 <= v <= 1024)):
            # a leaf entry: the same (key, value) pairs recur in every view ({"up": "8H"})
            leaf = (k, v, t)
            entry = _LEAF_CACHE.get(leaf)
            if entry is None:
                entry = _leaf_entry(leaf)
            append(entry)
            continue
        append(_entry(k, value_bytes(v)))
    return b"".join(parts)


def _entry(key: Any, value: bytes) -> bytes:
    """One ``fields`` entry of a Struct: ``key`` and an encoded Value."""
    prefix = _KEY_CACHE.get(key) if type(key) is str else None
    if prefix is None:
        prefix = _entry_prefix(key if type(key) is str else json_key(key))
    size = len(value)
    entry = prefix + (_SMALL_VARINTS[size] if size < 128 else varint(size)) + value
    size = len(entry)
    return (_ENTRY_TAGS[size] if size < 128 else b"\x0a" + varint(size)) + entry


map_entry = _entry  # the codec assembles tables from entries too


def scalar_entry(k: Any, v: Any) -> bytes:
    """``struct_body({k: v})`` of a value that is not a dict or a list, without the dict."""
    t = type(v)
    if type(k) is str and (t is str or t is bool or v is None or (t is int and -1024 <= v <= 1024)):
        leaf = (k, v, t)
        entry = _LEAF_CACHE.get(leaf)
        return entry if entry is not None else _leaf_entry(leaf)
    return _entry(k, value_bytes(v))


# ---- encodings memoized by content -----------------------------------------------------------
#
# A view's table is mostly what it was for the previous audience and the previous action (the
# columns, the options, the deal's log but for its last entry), yet each audience gets a view
# of its own. Container values are therefore encoded once per *content*: keyed by their
# ``marshal`` serialization, which is exact (equal bytes, equal value: types included, 1,
# 1.0 and True differ) and several times cheaper to compute than the encoding. The key is the
# content itself, so an entry serves every audience that has the same value, and none other:
# it cannot carry anything from one audience's view into another's.

_MEMO_VALUES: "OrderedDict[bytes, bytes]" = OrderedDict()  # top-level table values
_MEMO_ELEMENTS: "OrderedDict[bytes, bytes]" = OrderedDict()  # elements of those lists
_MEMO_VALUES_MAX = 4096
_MEMO_ELEMENTS_MAX = 16384


def lru_get(table: "OrderedDict[Any, Any]", key: Any) -> Any:
    """``table[key]`` or None; a hit becomes the most recently used entry."""
    value = table.get(key)
    if value is not None:
        table.move_to_end(key)
    return value


def lru_put(table: "OrderedDict[Any, Any]", key: Any, value: Any, limit: int) -> Any:
    """Store ``value`` (returned) and drop the least recently used entry past ``limit``."""
    table[key] = value
    if len(table) > limit:
        table.popitem(last=False)
    return value


def memo_struct_body(data: Mapping[Any, Any]) -> bytes:
    """:func:`struct_body`, its container values (and the containers in its lists) encoded
    once per content (see above)."""
    parts = []
    append = parts.append
    for k, v in data.items():
        t = type(v)
        if t is dict or t is list:
            append(_entry(k, _memo_value(v, t is list)))
        else:
            append(scalar_entry(k, v))
    return b"".join(parts)


def memo_value_bytes(v: Any) -> bytes:
    """:func:`value_bytes`, once per content."""
    return _memo_value(v, type(v) is list)


def list_value_payload(value: bytes) -> bytes:
    """The ListValue inside an encoded Value of a list (tag 6 and its length stripped)."""
    if value[0] != _LIST:
        raise ValueError("not the Value of a list")
    i = 1
    while value[i] & 0x80:
        i += 1
    return value[i + 1:]


def _memo_value(v: Any, is_list: bool) -> bytes:
    try:
        # a list's key must not depend on reference counts (marshal 3+ marks objects
        # referenced elsewhere): its prefix is looked up from a copy (see _grown_list)
        key = marshal.dumps(v, 2) if is_list else marshal.dumps(v)
    except ValueError:  # not made of the core types: encoded as it is (the encoder decides)
        return value_bytes(v)
    value = lru_get(_MEMO_VALUES, key)
    if value is None:
        value = lru_put(_MEMO_VALUES, key, _grown_list(v, key) if is_list else value_bytes(v), _MEMO_VALUES_MAX)
    return value


_pack_count = _struct.Struct("<i").pack


def _grown_list(items: list[Any], key: bytes) -> bytes:
    """A list's Value (``key``: its version-2 marshal). A deal's log grows by one entry an
    action: when the list without its last element was encoded (the previous action's view),
    its encoding is extended by that element instead of walking the whole list again.

    The key of that shorter list is cut from ``key`` rather than computed again: in version 2
    a list is ``[``, its count (4 bytes) and its items' own serializations one after another,
    so ``marshal.dumps(items[:-1], 2)`` is ``[``, the count less one, and ``key`` without the
    header and the last item's bytes."""
    n = len(items)
    if n > 1:
        last = items[-1]
        last_key = marshal.dumps(last, 2)
        previous = _MEMO_VALUES.get(b"[" + _pack_count(n - 1) + key[5:len(key) - len(last_key)])
        if previous is not None:
            return _list_value(list_value_payload(previous) + _memo_element(last))
    return _memo_list(items)


def _memo_list(items: list[Any]) -> bytes:
    """A list's Value, its container elements (a deal log's entries) memoized one by one."""
    return _list_value(b"".join([_memo_element(v) for v in items]))


def _list_value(body: bytes) -> bytes:
    size = len(body)
    return (_LIST_TAGS[size] if size < 128 else b"\x32" + varint(size)) + body


def _memo_element(v: Any) -> bytes:
    """One ``values`` entry of a ListValue; a container element encoded once per content.

    ``v`` is an element of a list whose marshal succeeded (:func:`_memo_value`), so its own
    marshal does too: no fallback for an unmarshallable element is needed here."""
    t = type(v)
    if t is dict or t is list:
        key = marshal.dumps(v)
        value = lru_get(_MEMO_ELEMENTS, key)
        if value is None:
            value = lru_put(_MEMO_ELEMENTS, key, value_bytes(v), _MEMO_ELEMENTS_MAX)
    else:
        value = value_bytes(v)
    size = len(value)
    return (_ENTRY_TAGS[size] if size < 128 else b"\x0a" + varint(size)) + value


_LEAF_CACHE: dict[tuple[str, Any, type], bytes] = {}


def _leaf_entry(leaf: tuple[str, Any, type]) -> bytes:
    key, v, _ = leaf
    value = value_bytes(v)
    entry = _entry_prefix(key) + varint(len(value)) + value
    out = b"\x0a" + varint(len(entry)) + entry
    if len(key) <= _CACHE_STRING_CHARS and (type(v) is not str or len(v) <= _CACHE_STRING_CHARS) \
            and len(_LEAF_CACHE) < _CACHE_MAX:
        _LEAF_CACHE[leaf] = out
    return out


def list_body(items: Any) -> bytes:
    """The serialized ``ListValue`` of a sequence."""
    parts = []
    append = parts.append
    for v in items:
        t = type(v)
        if t is str:
            value = _STRING_CACHE.get(v) or _string_value(v)
        elif t is dict:
            body = struct_body(v)
            size = len(body)
            value = (_STRUCT_TAGS[size] if size < 128 else b"\x2a" + varint(size)) + body
        elif t is int:
            value = _NUMBER + _pack_double(v)
        else:
            value = value_bytes(v)
        size = len(value)
        append((_ENTRY_TAGS[size] if size < 128 else b"\x0a" + varint(size)) + value)
    return b"".join(parts)


def value_bytes(v: Any) -> bytes:
    """The serialized ``Value`` of one JSON-like value."""
    t = type(v)
    if t is str:
        return _string_value(v)
    if t is int:
        return _NUMBER + _pack_double(v)
    if t is dict:
        body = struct_body(v)
        size = len(body)
        return (_STRUCT_TAGS[size] if size < 128 else b"\x2a" + varint(size)) + body
    if t is list or t is tuple:
        body = list_body(v)
        size = len(body)
        return (_LIST_TAGS[size] if size < 128 else b"\x32" + varint(size)) + body
    if t is bool:
        return _TRUE if v else _FALSE
    if v is None:
        return _NULL
    if t is float:
        if not math.isfinite(v):
            raise ValueError(f"non-finite number in a view: {v!r}")
        return _NUMBER + _pack_double(v)
    return _other_value(v)


def _other_value(v: Any) -> bytes:
    """Subclasses and the less common containers, with json.dumps' precedence."""
    if isinstance(v, str):
        return _string_value(str.__str__(v))
    if isinstance(v, int):  # an int subclass: bool, final, never gets here (value_bytes)
        return _NUMBER + _pack_double(int(v))
    if isinstance(v, float):
        return value_bytes(float(v))
    if isinstance(v, Mapping):
        body = struct_body(v)
        return bytes((_STRUCT,)) + varint(len(body)) + body
    if isinstance(v, (list, tuple)):
        body = list_body(v)
        return bytes((_LIST,)) + varint(len(body)) + body
    if isinstance(v, (set, frozenset)):
        body = list_body(sorted(v))
        return bytes((_LIST,)) + varint(len(body)) + body
    raise TypeError(f"not a JSON value: {type(v).__name__}")
