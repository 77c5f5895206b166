"""How messages are declared: once, as typed dataclasses whose fields carry Kafka's schema.

A message is a ``@dataclass(slots=True, kw_only=True)`` subclass of :class:`Struct`; each field
is declared with :func:`f`, giving its Kafka type, the versions it is on the wire, the versions
in which it may be null, its default, and (for tagged fields) its tag. Top-level messages get
their valid and flexible version ranges from :func:`message`. ``protocol.structs`` derives one
construct per (message, version) from these declarations; nothing is written per version.

Versions use Kafka's notation: ``"0+"``, ``"3-7"``, ``"5"``, ``"none"``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

NO_MAX = 0x7FFF

VersionRange = tuple[int, int]

PRIMITIVES = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "float64",
        "bool",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)


def versions(spec: str) -> VersionRange | None:
    """Parse Kafka's version-range notation; ``None`` for ``"none"``."""
    spec = spec.strip()
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), NO_MAX
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return int(lo), int(hi)
    return int(spec), int(spec)


def in_range(version: int, vrange: VersionRange | None) -> bool:
    return vrange is not None and vrange[0] <= version <= vrange[1]


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """An array type: element is a primitive name or a :class:`Struct` subclass."""

    element: str | type[Struct]


TypeSpec = str | ArrayOf | type["Struct"]


def array(element: str | type[Struct]) -> ArrayOf:
    return ArrayOf(element)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    type: TypeSpec
    versions: VersionRange
    nullable: VersionRange | None
    tag: int | None
    tagged: VersionRange | None
    ignorable: bool
    classic: bool  # always the non-flexible encoding (request header's client_id)
    default: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class MessageInfo:
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange | None


_UNSET: Any = object()


def _implicit_default(type_: TypeSpec, nullable: bool) -> Any:
    if isinstance(type_, ArrayOf):
        return None if nullable else list
    if isinstance(type_, type):
        return None if nullable else type_
    return {
        "int8": 0,
        "int16": 0,
        "int32": 0,
        "int64": 0,
        "uint16": 0,
        "float64": 0.0,
        "bool": False,
        "uuid": uuid.UUID(int=0),
        "string": "",
        "bytes": b"",
        "records": None,
    }[type_]


def f(
    type_: TypeSpec,
    vers: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = _UNSET,
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
    classic: bool = False,
) -> Any:
    """Declare a message field (see the module docstring)."""
    if isinstance(type_, str) and type_ not in PRIMITIVES:
        raise ValueError(f"unknown Kafka type {type_!r}")
    nullable_range = versions(nullable) if nullable else None
    dflt = default if default is not _UNSET else _implicit_default(type_, nullable is not None)
    factory: Callable[[], Any]
    if dflt is list or (isinstance(dflt, type) and issubclass(dflt, Struct)):
        factory = dflt
        kwargs: dict[str, Any] = {"default_factory": dflt}
    else:
        value = dflt
        factory = lambda: value  # noqa: E731 - immutable default
        kwargs = {"default": dflt}
    spec = FieldSpec(
        type=type_,
        versions=versions(vers) or (1, 0),
        nullable=nullable_range,
        tag=tag,
        tagged=versions(tagged) if tagged else None,
        ignorable=ignorable,
        classic=classic,
        default=factory,
    )
    return dataclasses.field(metadata={"kafka": spec}, **kwargs)


@dataclass(slots=True, kw_only=True)
class Struct:
    """Base of every message and nested struct."""

    #: Tagged fields this code does not know, kept as raw payloads so that re-encoding a
    #: decoded message reproduces its bytes.
    unknown_tagged_fields: dict[int, bytes] | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    kafka: ClassVar[MessageInfo | None] = None


S = TypeVar("S", bound=type[Struct])


def message(*, api_key: int | None = None, valid: str, flexible: str) -> Callable[[S], S]:
    """Mark a top-level message: its API key and valid/flexible version ranges."""
    valid_range = versions(valid)
    if valid_range is None:
        raise ValueError("a message needs valid versions")

    def wrap(cls: S) -> S:
        cls.kafka = MessageInfo(api_key, valid_range, versions(flexible))
        return cls

    return wrap


def field_specs(cls: type[Struct]) -> list[tuple[str, FieldSpec]]:
    """Declared Kafka fields of ``cls`` in wire order (cached on the class)."""
    cached: list[tuple[str, FieldSpec]] | None = cls.__dict__.get("_kafka_fields")
    if cached is not None:
        return cached
    out = [
        (fld.name, fld.metadata["kafka"])
        for fld in dataclasses.fields(cls)
        if "kafka" in fld.metadata
    ]
    type.__setattr__(cls, "_kafka_fields", out)
    return out


def is_flexible(cls: type[Struct], version: int) -> bool:
    info = cls.kafka
    if info is None:
        raise TypeError(f"{cls.__name__} is not a top-level message")
    return in_range(version, info.flexible)
