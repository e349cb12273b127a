"""Finding repeated keys in records the strict decoder accepted, at the
cost of counting one byte.

In JSON, every ``"`` outside a string opens or closes a string, and inside
a string a ``"`` is escaped. A record of ``n`` strings (keys and string
values) therefore holds exactly ``2 n`` unescaped ``"`` and ``2 n`` more for
each escaped one. Once a record has decoded, the strings it must hold are
known: one key per field present (the decoder tells which optional fields
are), one string value per string field, and so on inside nested records.
A repeated key adds at least one string (itself). So a batch of decoded
records whose bytes hold exactly twice as many ``"`` as the strings their
fields need repeats no key; any other count (a repeated key, an escaped
``"`` inside a string) sends the batch to the strict reading
(:func:`eceb_worker.core.lenient.decode_lenient`), which names each
repeated key.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

import msgspec
import msgspec.inspect as mi

__all__ = ["StringLayout", "repeats_no_key", "required_strings", "string_layout", "unrepeated"]


def _unwrapped(kind: Any) -> Any:
    while isinstance(kind, mi.Metadata):
        kind = kind.type
    return kind


def _is_string(kind: Any) -> bool:
    kind = _unwrapped(kind)
    return isinstance(kind, mi.StrType) or (
        isinstance(kind, mi.LiteralType) and all(isinstance(v, str) for v in kind.values)
    )


def _scalar(kind: Any) -> bool:
    kind = _unwrapped(kind)
    if isinstance(kind, mi.UnionType):
        return all(isinstance(_unwrapped(t), (mi.IntType, mi.NoneType, mi.BoolType)) for t in kind.types)
    return _is_string(kind) or isinstance(kind, (mi.IntType, mi.BoolType, mi.NoneType))


class StringLayout(msgspec.Struct, frozen=True):
    """How many strings a decoded record of one Struct type holds when it
    names each key once.

    Fields:
        required: strings of the required fields (a key, and a value for a
            string field), arrays' items aside.
        optional: each optional field's name and strings when present (its
            key, and its value for a string field).
        arrays: each required array of flat records: its name and the
            strings of one item.
    """

    required: int
    optional: tuple[tuple[str, int], ...]
    arrays: tuple[tuple[str, int], ...]

    def expected(self, records: Sequence[Any], present: int) -> int:
        """The strings of ``records`` (decoded) naming each key once;
        ``present`` is the strings their optional fields hold (their
        :meth:`present` summed)."""
        total = self.required * len(records) + present
        for name, strings in self.arrays:
            total += strings * sum(map(len, map(attrgetter(name), records)))
        return total

    @property
    def uniform(self) -> int:
        """The strings of each optional field when they all hold as many, else 0."""
        weights = {strings for _, strings in self.optional}
        return weights.pop() if len(weights) == 1 else 0

    def present(self, keys: Any) -> int:
        """The strings the optional fields of one record hold: ``keys`` is the
        record decoded as :meth:`keys_struct` (absent fields ``UNSET``)."""
        return sum(strings for name, strings in self.optional if getattr(keys, name) is not msgspec.UNSET)

    def keys_struct(self, extra: Iterable[tuple[str, type]] = ()) -> type[msgspec.Struct]:
        """A Struct reading only the optional fields (``UNSET`` when absent)
        and the ``extra`` required fields, skipping the others."""
        fields: list[Any] = [(name, kind) for name, kind in extra]
        fields += [(name, Any, msgspec.UNSET) for name, _ in self.optional]
        return msgspec.defstruct("Keys", fields, kw_only=True, gc=False)


def _item_strings(struct: mi.StructType) -> int | None:
    """The strings of one flat record whose fields are all required scalars."""
    if not all(field.required and _scalar(field.type) for field in struct.fields):
        return None
    return sum(1 + _is_string(field.type) for field in struct.fields)


@functools.cache
def string_layout(struct: type[msgspec.Struct]) -> StringLayout | None:
    """The :class:`StringLayout` of ``struct``, or ``None`` when its fields
    are not of the shapes it counts (scalars, optional scalars, required
    arrays of flat records)."""
    info = mi.type_info(struct)
    assert isinstance(info, mi.StructType)
    required = 0
    optional: list[tuple[str, int]] = []
    arrays: list[tuple[str, int]] = []
    for field in info.fields:
        kind = _unwrapped(field.type)
        if _scalar(kind):
            strings = 1 + _is_string(kind)
            if field.required:
                required += strings
            else:
                optional.append((field.encode_name, strings))
            continue
        item = _unwrapped(getattr(kind, "item_type", None))
        per_item = _item_strings(item) if isinstance(item, mi.StructType) else None
        if not field.required or per_item is None or field.encode_name != field.name:
            return None
        required += 1
        arrays.append((field.name, per_item))
    return StringLayout(required, tuple(optional), tuple(arrays))


def unrepeated(data: bytes, layout: StringLayout, records: Sequence[Any], present: int) -> bool:
    """Whether ``data``, the bytes of ``records`` (decoded), surely repeats
    no key: its ``"`` are exactly twice the strings they need (``present``
    as in :meth:`StringLayout.expected`)."""
    return data.count(b'"') == 2 * layout.expected(records, present)


def required_strings(struct: type[msgspec.Struct]) -> int:
    """The strings of a record of ``struct``, whose fields are all required
    scalars. Raises ValueError for any other Struct."""
    layout = string_layout(struct)
    if layout is None or layout.optional or layout.arrays:
        raise ValueError(f"{struct.__name__} has optional or nested fields")
    return layout.required


def repeats_no_key(data: bytes) -> bool:
    """Whether the valid JSON document ``data`` surely repeats no key:
    decoded as plain JSON (a repeated key keeps its last value) and encoded
    again, it holds as many ``"``. ``False`` too when it escapes a ``"`` as
    ``\\u0022`` (encoded again, that is ``\\"``) or cannot be decoded plainly."""
    if b"\\u0022" in data:
        return False
    try:
        again = msgspec.json.encode(msgspec.json.decode(data))
    except (msgspec.DecodeError, msgspec.EncodeError, RecursionError, OverflowError):
        return False
    return again.count(b'"') == data.count(b'"')
