"""Derive one construct per (struct class, version, flexible) from the declarations.

``build_struct`` turns a :class:`~protocol.schema.Struct` subclass into a :class:`KStruct`
construct for one version: the fields on the wire in that version, each with the primitive
construct its type, nullability and flexibility call for, plus the tagged-field section in
flexible versions. ``KStruct`` parses into and builds from the dataclass directly.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from construct import (
    Construct,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    stream_read,
    stream_write,
)

from .errors import DecodeError, EncodeError
from .primitives import (
    KArray,
    KBytes,
    KString,
    KTaggedField,
    KUuid,
    UVarint,
    write_tag_section,
)
from .schema import ArrayOf, FieldSpec, Struct, TypeSpec, field_specs, in_range

if TYPE_CHECKING:
    from .codegen import CodeGen

_uvarint = UVarint()

_FIXED: dict[str, Construct] = {
    "int8": Int8sb,
    "int16": Int16sb,
    "int32": Int32sb,
    "int64": Int64sb,
    "uint16": Int16ub,
    "float64": Float64b,
    "bool": Flag,
    "uuid": KUuid(),
}


class KStruct(Construct):  # type: ignore[misc]
    """A Kafka struct for one version, mapped onto its dataclass."""

    def __init__(
        self,
        cls: type[Struct],
        version: int,
        flexible: bool,
        fields: list[tuple[str, Construct]],
        tagged: list[KTaggedField],
        absent: list[tuple[str, Callable[[], Any], bool]],
    ) -> None:
        super().__init__()
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.fields = fields
        self.tagged = tagged
        self.absent = absent  # (name, default factory, ignorable) of fields not in this version
        self.compiled: Any = None  # set by protocol.codegen

    # -- construct protocol: the reference implementation -------------------------------

    def _parse(self, stream: Any, context: Any, path: str) -> Struct:
        obj = object.__new__(self.cls)
        for name, sub in self.fields:
            object.__setattr__(obj, name, sub._parsereport(stream, context, f"{path} -> {name}"))
        for name, factory, _ in self.absent:
            object.__setattr__(obj, name, factory())
        for tf in self.tagged:
            object.__setattr__(obj, tf.name, tf.default())
        unknown: dict[int, bytes] | None = None
        if self.flexible:
            by_tag = {tf.tag: tf for tf in self.tagged}
            last = -1
            for _ in range(_uvarint._parsereport(stream, context, path)):
                tag = _uvarint._parsereport(stream, context, path)
                size = _uvarint._parsereport(stream, context, path)
                if tag <= last:
                    raise DecodeError("tagged fields out of order or repeated")
                last = tag
                payload = stream_read(stream, size, path)
                known = by_tag.get(tag)
                if known is None:
                    if unknown is None:
                        unknown = {}
                    unknown[tag] = payload
                    continue
                inner = io.BytesIO(payload)
                object.__setattr__(obj, known.name, known.sub._parsereport(inner, context, path))
                if inner.tell() != size:
                    raise DecodeError(f"tagged field {tag} has trailing bytes")
        object.__setattr__(obj, "unknown_tagged_fields", unknown)
        return obj

    def _build(self, obj: Struct, stream: Any, context: Any, path: str) -> Struct:
        if not isinstance(obj, self.cls):
            raise EncodeError(f"expected {self.cls.__name__}, got {type(obj).__name__}")
        for name, sub in self.fields:
            sub._build(getattr(obj, name), stream, context, f"{path} -> {name}")
        for name, factory, ignorable in self.absent:
            if not ignorable and getattr(obj, name) != factory():
                raise EncodeError(f"{self.cls.__name__}.{name} is not in version {self.version}")
        if self.flexible:
            known: list[tuple[int, bytearray]] = []
            for tf in self.tagged:
                value = getattr(obj, tf.name)
                if value != tf.default():
                    inner = io.BytesIO()
                    tf.sub._build(value, inner, context, path)
                    known.append((tf.tag, bytearray(inner.getvalue())))
            w = bytearray()
            write_tag_section(w, known, obj.unknown_tagged_fields)
            stream_write(stream, bytes(w), len(w), path)
        return obj

    # -- emitters: nested structs are separate compiled functions -----------------------

    def emit_decode(self, g: CodeGen, target: str) -> None:
        dec, _ = g.struct_functions(self)
        g.line(f"{target}, o = {dec}(buf, o, blen)")

    def emit_encode(self, g: CodeGen, expr: str, w: str) -> None:
        _, enc = g.struct_functions(self)
        g.line(f"{enc}({expr}, {w})")


class KNullableStruct(Construct):  # type: ignore[misc]
    """A nullable (non-tagged) struct: int8 marker, -1 = null, 1 = present."""

    def __init__(self, inner: KStruct) -> None:
        super().__init__()
        self.inner = inner

    def _parse(self, stream: Any, context: Any, path: str) -> Struct | None:
        marker = Int8sb._parsereport(stream, context, path)
        if marker < 0:
            return None
        return self.inner._parsereport(stream, context, path)  # type: ignore[no-any-return]

    def _build(self, obj: Struct | None, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            Int8sb._build(-1, stream, context, path)
        else:
            Int8sb._build(1, stream, context, path)
            self.inner._build(obj, stream, context, path)
        return obj

    def emit_decode(self, g: CodeGen, target: str) -> None:
        m = g.tmp("m")
        g.line(f"{m} = buf[o]")
        g.line("o += 1")
        g.line(f"if {m} > 127:")  # int8 < 0
        g.line(f"    {target} = None")
        g.line("else:")
        g.indent()
        self.inner.emit_decode(g, target)
        g.dedent()

    def emit_encode(self, g: CodeGen, expr: str, w: str) -> None:
        v = g.tmp("v")
        g.line(f"{v} = {expr}")
        g.line(f"if {v} is None:")
        g.line(f"    {w}.append(255)")
        g.line("else:")
        g.indent()
        g.line(f"{w}.append(1)")
        self.inner.emit_encode(g, v, w)
        g.dedent()


_CACHE: dict[tuple[type[Struct], int, bool], KStruct] = {}


def _type_construct(type_: TypeSpec, version: int, compact: bool, nullable: bool) -> Construct:
    if isinstance(type_, ArrayOf):
        element = _type_construct(type_.element, version, compact, False)
        return KArray(element, compact, nullable)
    if isinstance(type_, type):
        inner = build_struct(type_, version, compact)
        return KNullableStruct(inner) if nullable else inner
    if type_ == "string":
        return KString(compact, nullable)
    if type_ in ("bytes", "records"):
        return KBytes(compact, nullable)
    return _FIXED[type_]


def _field_construct(spec: FieldSpec, version: int, flexible: bool) -> Construct:
    compact = flexible and not spec.classic
    return _type_construct(spec.type, version, compact, in_range(version, spec.nullable))


def build_struct(cls: type[Struct], version: int, flexible: bool) -> KStruct:
    """The construct for ``cls`` at ``version`` (cached)."""
    key = (cls, version, flexible)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    fields: list[tuple[str, Construct]] = []
    tagged: list[KTaggedField] = []
    absent: list[tuple[str, Callable[[], Any], bool]] = []
    for name, spec in field_specs(cls):
        if flexible and spec.tag is not None and in_range(version, spec.tagged):
            sub = _field_construct(spec, version, flexible)
            tagged.append(KTaggedField(spec.tag, name, sub, spec.default))
        elif spec.tag is None and in_range(version, spec.versions):
            fields.append((name, _field_construct(spec, version, flexible)))
        else:
            # Tagged fields are always ignorable: a non-flexible version just drops them.
            absent.append((name, spec.default, spec.ignorable or spec.tag is not None))
    tagged.sort(key=lambda t: t.tag)
    result = KStruct(cls, version, flexible, fields, tagged, absent)
    _CACHE[key] = result
    return result
