"""CycleState (and any value plugins keep in it) to msgpack bytes and back, without pickle.

A scheduling cycle's CycleState has to cross process boundaries: to the Ray shard actors
that run Filter and Score, and to the Ray tasks that run the binding cycle. Pickle would
let whoever can put bytes on that path run code, so values travel as msgpack with a few
extension types instead:

=====  ============================================================================
code   payload (itself msgpack)
=====  ============================================================================
1      tuple: its items
2      set: its items
3      frozenset: its items
4      numpy array: ``[dtype.str, shape, raw bytes]`` (object arrays: the items)
5      Enum member: ``["module:QualName", value]``
6      dataclass: ``["module:QualName", {field: value}]`` (every field, init or not)
7      a class with ``to_wire()`` / ``from_wire(doc)``: ``["module:QualName", doc]``
8      int beyond 64 bits: its decimal text
9      numpy scalar: ``[dtype.str, raw bytes]``
=====  ============================================================================

None, bool, int, float, str, bytes, list and dict (any hashable keys, tuples included)
are msgpack's own. Read-only mappings (``MappingProxyType``) travel as dicts.

Decoding resolves a ``module:QualName`` tag only when the module is ``cluster_sched`` or
under it and the attribute is what the code claims (a dataclass, an Enum, a class with
``from_wire``); anything else — ``os:system``, a function, a class of another package —
is refused with StateCodecError. Decoding builds dataclasses with ``object.__new__`` and
sets their fields, so no ``__init__`` or ``__post_init__`` runs on received data.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, cast

import msgpack
import numpy as np

from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.store.codec import map_header, map_header_len

__all__ = [
    "ALLOWED_MODULE_PREFIX",
    "StateCodecError",
    "decode_state",
    "decode_value",
    "encode_state",
    "encode_value",
]

ALLOWED_MODULE_PREFIX: Final = "cluster_sched."
"""Tagged classes are resolved only in this package (and the package module itself)."""

EXT_TUPLE: Final = 1
EXT_SET: Final = 2
EXT_FROZENSET: Final = 3
EXT_NDARRAY: Final = 4
EXT_ENUM: Final = 5
EXT_DATACLASS: Final = 6
EXT_WIRE: Final = 7
EXT_BIGINT: Final = 8
EXT_NPSCALAR: Final = 9

_INT64_MIN: Final = -(2**63)
_UINT64_MAX: Final = 2**64 - 1
#: numpy dtype kinds that round-trip as raw bytes
_RAW_KINDS: Final = frozenset("biufcmMSU")


class StateCodecError(SchedulerError, ValueError):
    """A value cannot be encoded, or bytes do not decode to an allowed value."""


# ---------------------------------------------------------------------------- encoding


def _tag(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _allowed_module(module: str) -> bool:
    return module == ALLOWED_MODULE_PREFIX[:-1] or module.startswith(ALLOWED_MODULE_PREFIX)


#: dataclass type -> field names (fields() is slow enough to matter per cycle)
_FIELDS: dict[type, tuple[str, ...]] = {}

MEMO_SIZE: Final = 4096
"""Frozen dataclasses remembered on each side (encoded by identity, decoded by bytes):
a pod's terms, constraints and selectors recur in every cycle of its Deployment, and
the Score call repeats the Filter call's PreFilter state."""
MEMO_MAX_BYTES: Final = 1 << 16
"""Encodings larger than this are not remembered."""

#: id(obj) -> (obj, its ExtType); holding obj keeps its id from being reused
_ENCODED: OrderedDict[int, tuple[Any, msgpack.ExtType]] = OrderedDict()
#: (code, bytes) -> decoded frozen dataclass
_DECODED: OrderedDict[tuple[int, bytes], Any] = OrderedDict()
#: tag -> class, for tags that resolved (resolution is the slow part of decoding)
_RESOLVED: dict[str, type] = {}
#: dataclass type -> (tag, frozen, has to_wire/from_wire)
_CLASS_INFO: dict[type, tuple[str, bool, bool]] = {}


def _class_info(cls: type) -> tuple[str, bool, bool]:
    info = _CLASS_INFO.get(cls)
    if info is None:
        _check_encodable_class(cls)
        params = getattr(cls, "__dataclass_params__", None)
        wire = callable(getattr(cls, "to_wire", None)) and callable(getattr(cls, "from_wire", None))
        info = _CLASS_INFO[cls] = (_tag(cls), bool(params is not None and params.frozen), wire)
    return info


def _remember(memo: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    memo[key] = value
    if len(memo) > MEMO_SIZE:
        memo.popitem(last=False)


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        _FIELDS[cls] = names
    return names


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, strict_types=True, use_bin_type=True)


def _default(obj: Any) -> Any:
    """msgpack's hook for every value it does not pack natively (strict_types: also
    subclasses of int/str/dict/list, i.e. IntEnum/StrEnum members)."""
    t = type(obj)
    if t is tuple:
        return msgpack.ExtType(EXT_TUPLE, _pack(list(obj)))
    if isinstance(obj, enum.Enum):
        _check_encodable_class(t)
        return msgpack.ExtType(EXT_ENUM, _pack([_tag(t), obj.value]))
    if t is int:  # only reached when out of msgpack's 64-bit range
        return msgpack.ExtType(EXT_BIGINT, str(obj).encode())
    if t is set:
        return msgpack.ExtType(EXT_SET, _pack(list(obj)))
    if t is frozenset:
        return msgpack.ExtType(EXT_FROZENSET, _pack(list(obj)))
    if t is np.ndarray:
        return msgpack.ExtType(EXT_NDARRAY, _pack(_array_doc(obj)))
    if isinstance(obj, np.generic):
        dt = obj.dtype
        if dt.kind not in _RAW_KINDS or dt.fields is not None:
            raise StateCodecError(f"cannot encode numpy scalar of dtype {dt}")
        return msgpack.ExtType(EXT_NPSCALAR, _pack([dt.str, obj.tobytes()]))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag, frozen, wire = _class_info(t)
        if frozen:
            hit = _ENCODED.get(id(obj))
            if hit is not None and hit[0] is obj:
                return hit[1]
        if wire:
            ext = msgpack.ExtType(EXT_WIRE, _pack([tag, cast(Any, obj).to_wire()]))
        else:
            doc = {name: getattr(obj, name) for name in _field_names(t)}
            ext = msgpack.ExtType(EXT_DATACLASS, _pack([tag, doc]))
        if frozen and len(ext.data) <= MEMO_MAX_BYTES:
            _remember(_ENCODED, id(obj), (obj, ext))
        return ext
    if t is MappingProxyType or (isinstance(obj, Mapping) and not isinstance(obj, dict)):
        return dict(obj)
    if isinstance(obj, dict):  # a dict subclass (strict_types sends it here)
        return dict(obj)
    if isinstance(obj, list):
        return list(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, bytes):
        return bytes(obj)
    if isinstance(obj, float):
        return float(obj)
    raise StateCodecError(f"cannot encode a value of type {t.__module__}.{t.__qualname__}")


def _check_encodable_class(cls: type) -> None:
    if not _allowed_module(cls.__module__) or "<" in cls.__qualname__:
        raise StateCodecError(
            f"cannot encode {_tag(cls)}: only classes defined at module level under "
            f"{ALLOWED_MODULE_PREFIX[:-1]} travel"
        )


def _array_doc(arr: np.ndarray) -> list[Any]:
    dt = arr.dtype
    shape = list(arr.shape)
    if dt.kind == "O":
        return ["|O", shape, arr.ravel().tolist()]
    if dt.kind not in _RAW_KINDS or dt.fields is not None:
        raise StateCodecError(f"cannot encode numpy array of dtype {dt}")
    return [dt.str, shape, np.ascontiguousarray(arr).tobytes()]


def encode_value(obj: Any) -> bytes:
    """``obj`` as msgpack bytes (see the module docstring for what is supported)."""
    try:
        return _pack(obj)
    except StateCodecError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise StateCodecError(f"cannot encode value: {exc}") from exc


#: (key, id(value)) -> (value, the entry's msgpack bytes): a CycleState entry whose value
#: is a frozen dataclass or a tuple of scalars (the pods of a Deployment share their
#: PreFilter/PreScore state objects, so most entries of most states were packed before)
_ENTRIES: OrderedDict[tuple[str, int], tuple[Any, bytes]] = OrderedDict()
#: CycleState key -> its packed form (a profile's plugins write a few dozen keys)
_KEYS: dict[str, bytes] = {}
#: CycleState key -> id of the value last encoded under it (a hint only: ids are reused)
_LAST: dict[str, int] = {}
#: plugin-name set -> its packed sorted list (the skip sets repeat from pod to pod)
_NAME_LISTS: OrderedDict[frozenset[str], bytes] = OrderedDict()
_STATE_KEYS: Final = tuple(
    msgpack.packb(k) for k in ("data", "skip_filter", "skip_score", "activate")
)
#: scalar types a remembered tuple may hold (immutable all the way down)
_SCALARS: Final = frozenset({str, int, float, bool, type(None), bytes})


def _pack_entries(data: dict[str, Any], parts: list[bytes]) -> None:
    """Append the packed entries of ``data``, in order. A value remembered under its key
    is taken as it is; one met a second time in a row under its key (the pods of a shape
    share their PreFilter/PreScore values) is packed alone and remembered; the others (a
    pod's own affinity terms, counts) are packed together, a run of them per call, and
    not remembered: remembering them would only churn the memo."""
    run: dict[str, Any] = {}
    for key, value in data.items():
        hit = _ENTRIES.get((key, id(value)))
        if hit is not None and hit[0] is value:
            packed = hit[1]
        elif _LAST.get(key) == id(value):
            packed = _packed_key(key) + _pack(value)
            if _rememberable(value) and len(packed) <= MEMO_MAX_BYTES:
                _remember(_ENTRIES, (key, id(value)), (value, packed))
        else:
            if key in _LAST or len(_LAST) < MEMO_SIZE:
                _LAST[key] = id(value)
            run[key] = value
            continue
        if run:
            parts.append(_without_header(run))
            run = {}
        parts.append(packed)
    if run:
        parts.append(_without_header(run))


def _without_header(run: dict[str, Any]) -> bytes:
    """The entries of ``run`` packed, without the map header in front of them."""
    return _pack(run)[map_header_len(len(run)) :]


def _packed_key(key: str) -> bytes:
    packed = _KEYS.get(key)
    if packed is None:
        packed = _pack(key)
        if len(_KEYS) < MEMO_SIZE:
            _KEYS[key] = packed
    return packed


def _rememberable(value: Any) -> bool:
    """Immutable as the memo needs it: a frozen dataclass, or a tuple of scalars."""
    t = type(value)
    if t is tuple:
        return all(type(item) in _SCALARS for item in value)
    return dataclasses.is_dataclass(t) and _class_info(t)[1]


def _packed_names(names: set[str]) -> bytes:
    key = frozenset(names)
    hit = _NAME_LISTS.get(key)
    if hit is None:
        hit = _pack(sorted(key))
        _remember(_NAME_LISTS, key, hit)
    return hit


def encode_state(state: CycleState) -> bytes:
    """A CycleState's data and skip/activate sets as msgpack bytes: the map
    ``{"data", "skip_filter", "skip_score", "activate"}`` (sets as sorted lists),
    byte for byte what packing that map gives, assembled from remembered pieces."""
    data = state._data
    parts = [map_header(4), _STATE_KEYS[0], map_header(len(data))]
    try:
        _pack_entries(data, parts)
    except (StateCodecError, TypeError, ValueError, OverflowError) as exc:
        # name the key that failed, so the plugin storing it is obvious
        for key, value in data.items():
            try:
                _pack(value)
            except (StateCodecError, TypeError, ValueError, OverflowError) as inner:
                raise StateCodecError(f"CycleState key {key!r}: {inner}") from inner
        raise StateCodecError(f"cannot encode CycleState: {exc}") from exc
    parts += (_STATE_KEYS[1], _packed_names(state.skip_filter_plugins))
    parts += (_STATE_KEYS[2], _packed_names(state.skip_score_plugins))
    parts += (_STATE_KEYS[3], _packed_names(state.pods_to_activate))
    return b"".join(parts)


# ---------------------------------------------------------------------------- decoding


def _unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext_hook, strict_map_key=False, raw=False, use_list=True)


def _resolve(tag: Any) -> Any:
    """The class a ``module:QualName`` tag names, if it may be decoded at all."""
    hit = _RESOLVED.get(tag) if isinstance(tag, str) else None
    if hit is not None:
        return hit
    if not isinstance(tag, str) or tag.count(":") != 1:
        raise StateCodecError(f"bad type tag {tag!r}: expected 'module:QualName'")
    module_name, qualname = tag.split(":")
    if not _allowed_module(module_name):
        raise StateCodecError(
            f"refusing type tag {tag!r}: only types under {ALLOWED_MODULE_PREFIX[:-1]} are decoded"
        )
    parts = qualname.split(".")
    if not all(p.isidentifier() and not p.startswith("__") for p in parts):
        raise StateCodecError(f"refusing type tag {tag!r}: not a plain qualified name")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise StateCodecError(f"refusing type tag {tag!r}: no module {module_name!r}") from exc
    for part in parts:
        obj = getattr(obj, part, None)
        if obj is None:
            raise StateCodecError(f"refusing type tag {tag!r}: {module_name} has no {qualname}")
    if not isinstance(obj, type) or obj.__module__ != module_name or obj.__qualname__ != qualname:
        # also refuses classes of other packages reached through a module's imports
        raise StateCodecError(f"refusing type tag {tag!r}: not a class defined there")
    _RESOLVED[tag] = obj
    return obj


def _ext_hook(code: int, data: bytes) -> Any:
    if code == EXT_TUPLE:
        return tuple(_unpack(data))
    if code == EXT_SET:
        return set(_unpack(data))
    if code == EXT_FROZENSET:
        return frozenset(_unpack(data))
    if code == EXT_NDARRAY:
        return _array_from(_unpack(data))
    if code == EXT_BIGINT:
        return int(data.decode())
    if code == EXT_NPSCALAR:
        dtype_str, raw = _unpack(data)
        dt = _raw_dtype(dtype_str)
        return np.frombuffer(raw, dtype=dt, count=1)[0]
    if code == EXT_ENUM:
        tag, value = _unpack(data)
        cls = _resolve(tag)
        if not issubclass(cls, enum.Enum):
            raise StateCodecError(f"refusing type tag {tag!r}: not an Enum")
        try:
            return cls(value)
        except ValueError as exc:
            raise StateCodecError(f"{tag}: {exc}") from exc
    if code in (EXT_DATACLASS, EXT_WIRE):
        key = (code, data)
        hit = _DECODED.get(key)
        if hit is not None:
            return hit
        obj = _decode_class_instance(code, data)
        params = getattr(type(obj), "__dataclass_params__", None)
        if params is not None and params.frozen and len(data) <= MEMO_MAX_BYTES:
            _remember(_DECODED, key, obj)
        return obj
    raise StateCodecError(f"unknown extension type {code}")


def _decode_class_instance(code: int, data: bytes) -> Any:
    if code == EXT_DATACLASS:
        tag, doc = _unpack(data)
        cls: type = _resolve(tag)
        if not dataclasses.is_dataclass(cls):
            raise StateCodecError(f"refusing type tag {tag!r}: not a dataclass")
        cls = cast(type, cls)
        if not isinstance(doc, dict):
            raise StateCodecError(f"{tag}: fields must be a map")
        names = _field_names(cls)
        if set(doc) != set(names):
            raise StateCodecError(
                f"{tag}: fields {sorted(map(str, doc))} do not match {list(names)}"
            )
        obj: Any = object.__new__(cls)
        for name in names:
            object.__setattr__(obj, name, doc[name])
        return obj
    if code == EXT_WIRE:
        tag, doc = _unpack(data)
        wire_cls: Any = _resolve(tag)
        if not callable(getattr(wire_cls, "from_wire", None)):
            raise StateCodecError(f"refusing type tag {tag!r}: it has no from_wire")
        return wire_cls.from_wire(doc)
    raise StateCodecError(f"unknown extension type {code}")  # pragma: no cover


def _raw_dtype(dtype_str: Any) -> np.dtype[Any]:
    if not isinstance(dtype_str, str):
        raise StateCodecError(f"bad dtype {dtype_str!r}")
    try:
        dt = np.dtype(dtype_str)
    except TypeError as exc:
        raise StateCodecError(f"bad dtype {dtype_str!r}") from exc
    if dt.kind not in _RAW_KINDS or dt.fields is not None:
        raise StateCodecError(f"refusing dtype {dtype_str!r}")
    return dt


def _array_from(doc: Any) -> np.ndarray:
    if not isinstance(doc, list) or len(doc) != 3:
        raise StateCodecError("bad array encoding")
    dtype_str, shape, payload = doc
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise StateCodecError(f"bad array shape {shape!r}")
    if dtype_str == "|O":
        if not isinstance(payload, list):
            raise StateCodecError("bad object array payload")
        arr = np.empty(len(payload), dtype=object)
        for i, item in enumerate(payload):  # item by item: never broadcast nested lists
            arr[i] = item
        try:
            return arr.reshape(shape)
        except ValueError as exc:
            raise StateCodecError(f"bad array shape: {exc}") from exc
    dt = _raw_dtype(dtype_str)
    if not isinstance(payload, bytes):
        raise StateCodecError("bad array payload")
    try:
        return np.frombuffer(payload, dtype=dt).reshape(shape).copy()
    except ValueError as exc:
        raise StateCodecError(f"bad array payload: {exc}") from exc


def decode_value(data: bytes) -> Any:
    """The value ``encode_value`` encoded. Raises StateCodecError on refused or bad input."""
    try:
        return _unpack(data)
    except StateCodecError:
        raise
    except (msgpack.UnpackException, ValueError, TypeError) as exc:
        raise StateCodecError(f"cannot decode value: {exc}") from exc


def decode_state(data: bytes) -> CycleState:
    doc = decode_value(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise StateCodecError("not an encoded CycleState")
    state = CycleState()
    state._data = doc["data"]
    state.skip_filter_plugins = set(doc.get("skip_filter") or ())
    state.skip_score_plugins = set(doc.get("skip_score") or ())
    state.pods_to_activate = set(doc.get("activate") or ())
    return state
