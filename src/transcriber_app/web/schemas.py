"""JSON bodies of the API: attrs classes, turned into JSON by cattrs and into JSON Schema here.

An answer body is an ``@attrs.frozen`` class. ``to_json`` unstructures it
with one cattrs converter (datetimes as ISO 8601, enums as their values, a
field left at its default omitted), and ``Schemas`` derives the JSON Schema
(2020-12, as OpenAPI 3.1 uses) of the same class from its fields: a field
with a default is optional, ``X | None = None`` is an ``X`` that may be
absent (never ``null``), and ``attrs.field(metadata=doc("..."))`` gives the
description. So the body a route sends and the schema the document shows
come from one definition (ADR 37).

cattrs has no JSON Schema export; this derivation covers the types the API
uses and refuses any other, so a new field type fails loudly, not silently.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn

T = TypeVar("T")

#: A JSON Schema, as a plain mapping.
Schema = dict[str, Any]

#: Where the document keeps named schemas; a ``$ref`` points here.
COMPONENTS = "#/components/schemas/"


def doc(text: str) -> dict[str, str]:
    """Field metadata giving its description in the document: ``attrs.field(metadata=doc(...))``."""
    return {"description": text}


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    converter.register_unstructure_hook(datetime, datetime.isoformat)
    converter.register_structure_hook(datetime, lambda value, _: datetime.fromisoformat(value))
    converter.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(cls, converter, _cattrs_omit_if_default=True),
    )
    return converter


#: The one converter of API bodies.
converter = _converter()


def to_json(body: object) -> Any:
    """``body`` (an attrs answer class) as JSON-ready data; fields at their default are left out."""
    return converter.unstructure(body)


def from_json(data: Any, cls: type[T]) -> T:
    """JSON data as an instance of the attrs class ``cls``; ``cattrs`` errors name what is wrong."""
    return converter.structure(data, cls)


_PRIMITIVES: Mapping[type, Schema] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    datetime: {"type": "string", "format": "date-time"},
}


@attrs.define
class Schemas:
    """Derives JSON Schemas of attrs classes, collecting each named class once in ``components``."""

    #: Named schemas by class name, for the document's ``components.schemas``.
    components: dict[str, Schema] = attrs.Factory(dict)
    _classes: dict[str, type] = attrs.Factory(dict)

    def ref(self, cls: type) -> Schema:
        """A ``$ref`` to the attrs class ``cls``, deriving its schema on first use."""
        name = cls.__name__
        known = self._classes.setdefault(name, cls)
        if known is not cls:
            raise TypeError(f"two answer classes are named {name}: {known!r} and {cls!r}")
        if name not in self.components:
            self.components[name] = {}  # a class that refers to itself stops here
            self.components[name] = self._object(cls)
        return {"$ref": COMPONENTS + name}

    def of(self, tp: Any) -> Schema:
        """The schema of a field type: primitives, enums, literals, generics, attrs classes."""
        if isinstance(tp, type) and attrs.has(tp):
            return self.ref(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = [member.value for member in tp]
            strings = all(isinstance(value, str) for value in values)
            return {"type": "string", "enum": values} if strings else {"enum": values}
        if tp in _PRIMITIVES:
            return dict(_PRIMITIVES[tp])
        return self._generic(typing.get_origin(tp), typing.get_args(tp), tp)

    def _generic(self, origin: Any, args: tuple[Any, ...], tp: Any) -> Schema:
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            options = [self.of(arg) for arg in args if arg is not type(None)]
            if type(None) in args:
                options.append({"type": "null"})
            return options[0] if len(options) == 1 else {"anyOf": options}
        if origin in (list, tuple, Sequence) and (origin is not tuple or args[-1:] == (...,)):
            return {"type": "array", "items": self.of(args[0])}
        if origin in (dict, Mapping) and args[0] is str:
            return {"type": "object", "additionalProperties": self.of(args[1])}
        raise TypeError(f"no JSON Schema for the field type {tp!r}")

    def _object(self, cls: type) -> Schema:
        fields = attrs.fields(attrs.resolve_types(cls))
        properties: dict[str, Schema] = {}
        required: list[str] = []
        for field in fields:
            optional = field.default is not attrs.NOTHING
            # Left at None the field is omitted (``to_json``): absent, never null.
            tp = _without_none(field.type) if field.default is None else field.type
            described = self.of(tp)
            if "description" in field.metadata:
                described = {**described, "description": field.metadata["description"]}
            properties[field.name] = described
            if not optional:
                required.append(field.name)
        schema: Schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if cls.__doc__:
            schema["description"] = cls.__doc__.strip().splitlines()[0]
        return schema


def _is_optional(tp: Any) -> bool:
    return type(None) in typing.get_args(tp)


def _without_none(tp: Any) -> Any:
    """``X`` of ``X | None``; other types unchanged."""
    if not _is_optional(tp):
        return tp
    rest = tuple(arg for arg in typing.get_args(tp) if arg is not type(None))
    return rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
