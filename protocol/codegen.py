"""Compile a :class:`~protocol.structs.KStruct` construct into two plain Python functions.

``decode(buf, o, blen) -> (obj, o)`` and ``encode(obj, w: bytearray) -> None`` are generated
from the construct tree: each primitive contributes its emitted snippet, runs of fixed-width
fields are coalesced into one ``struct`` call, and nested structs become their own compiled
functions. The generated code keeps every check the construct performs (lengths against the
buffer, nulls, negative counts, varint size, UTF-8); ``protocol.codec`` maps the low-level
exceptions it may raise to ``DecodeError``/``EncodeError``.
"""

from __future__ import annotations

import itertools
import struct
import uuid
from collections.abc import Callable
from typing import Any

from construct import Construct

from . import primitives
from .errors import DecodeError, EncodeError
from .primitives import KTaggedField, UVarint, fixed_format
from .structs import KStruct

Decoder = Callable[[bytes, int, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

_const_ids = itertools.count()

_BASE_NAMESPACE: dict[str, Any] = {
    "DecodeError": DecodeError,
    "EncodeError": EncodeError,
    "UUID": uuid.UUID,
    "new": object.__new__,
    "read_uvarint_tail": primitives.read_uvarint_tail,
    "write_uvarint": primitives.write_uvarint,
    "write_unknown_tags": primitives.write_unknown_tags,
    "write_tag_section": primitives.write_tag_section,
    "pack_int32s": primitives.pack_int32s,
    "pack_int64s": primitives.pack_int64s,
    "unpack_int32s": primitives.unpack_int32s,
    "unpack_int64s": primitives.unpack_int64s,
}


class CodeGen:
    """Accumulates the source of one function and the names it refers to."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.ns = namespace
        self.lines: list[str] = []
        self._depth = 1
        self._counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self._depth + text)

    def indent(self) -> None:
        self._depth += 1

    def dedent(self) -> None:
        self._depth -= 1

    def tmp(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def const(self, value: Any) -> str:
        # Unique across every generator sharing this namespace.
        name = f"k{next(_const_ids)}"
        self.ns[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        key = "unpack_" + _fmt_name(fmt)
        self.ns.setdefault(key, struct.Struct(fmt).unpack_from)
        return key

    def packer(self, fmt: str) -> str:
        key = "pack_" + _fmt_name(fmt)
        self.ns.setdefault(key, struct.Struct(fmt).pack)
        return key

    def struct_functions(self, ks: KStruct) -> tuple[str, str]:
        dec, enc = compile_struct(ks)
        dname = f"dec_{ks.cls.__name__}_{ks.version}"
        ename = f"enc_{ks.cls.__name__}_{ks.version}"
        self.ns[dname] = dec
        self.ns[ename] = enc
        return dname, ename

    def emit_decode(self, sub: Construct, target: str) -> None:
        fmt = fixed_format(sub)
        if fmt is not None:
            self.line(f"{target}, = {self.unpacker('>' + fmt)}(buf, o)")
            self.line(f"o += {struct.calcsize('>' + fmt)}")
            if fmt == "16s":
                self.line(f"{target} = UUID(bytes={target})")
        else:
            sub.emit_decode(self, target)

    def emit_encode(self, sub: Construct, expr: str, w: str) -> None:
        fmt = fixed_format(sub)
        if fmt is not None:
            value = f"{expr}.bytes" if fmt == "16s" else expr
            self.line(f"{w} += {self.packer('>' + fmt)}({value})")
        else:
            sub.emit_encode(self, expr, w)

    def source(self, header: str) -> str:
        return header + "\n" + "\n".join(self.lines or ["    pass"]) + "\n"


def _fmt_name(fmt: str) -> str:
    return fmt.replace(">", "").replace("?", "B1").replace("16s", "U")


def _runs(fields: list[tuple[str, Construct]]) -> list[list[tuple[str, Construct]]]:
    """Split fields into runs: consecutive fixed-width fields share a run."""
    runs: list[list[tuple[str, Construct]]] = []
    for name, sub in fields:
        fixed = fixed_format(sub) is not None
        if fixed and runs and fixed_format(runs[-1][-1][1]) is not None:
            runs[-1].append((name, sub))
        else:
            runs.append([(name, sub)])
    return runs


def _default_expr(g: CodeGen, factory: Callable[[], Any]) -> str:
    if factory is list:
        return "[]"
    value = factory()
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return repr(value)
    if isinstance(value, uuid.UUID):
        return g.const(value)
    return f"{g.const(factory)}()"


def _emit_decode_body(g: CodeGen, ks: KStruct, view: tuple[str, ...] | None = None) -> None:
    """The decoder's body: it returns ``(obj, o)``, or with ``view`` the tuple of those
    fields' values (absent ones at their defaults) instead of ``obj``."""
    targets: dict[str, str] = {}
    for run in _runs(ks.fields):
        fmts = [fixed_format(sub) for _, sub in run]
        if len(run) > 1:
            fmt = ">" + "".join(f for f in fmts if f)
            names = [g.tmp("f") for _ in run]
            g.line(f"{', '.join(names)} = {g.unpacker(fmt)}(buf, o)")
            g.line(f"o += {struct.calcsize(fmt)}")
            for (fname, _), tname, ffmt in zip(run, names, fmts, strict=True):
                if ffmt == "16s":
                    g.line(f"{tname} = UUID(bytes={tname})")
                targets[fname] = tname
        else:
            fname, sub = run[0]
            tname = g.tmp("f")
            g.emit_decode(sub, tname)
            targets[fname] = tname
    for tf in ks.tagged:
        targets[tf.name] = g.tmp("t")
        g.line(f"{targets[tf.name]} = {_default_expr(g, tf.default)}")
    if ks.flexible:
        _emit_decode_tags(g, ks.tagged, targets)
    else:
        g.line("unknown = None")
    if view is not None:
        absent = {fname: factory for fname, factory, _ in ks.absent}
        values = [
            targets[name] if name in targets else _default_expr(g, absent[name]) for name in view
        ]
        g.line(f"return ({''.join(v + ', ' for v in values)}), o")
        return
    obj = "obj"
    g.line(f"{obj} = new({g.const(ks.cls)})")
    for fname, tname in targets.items():
        g.line(f"{obj}.{fname} = {tname}")
    for fname, factory, _ in ks.absent:
        g.line(f"{obj}.{fname} = {_default_expr(g, factory)}")
    g.line(f"{obj}.unknown_tagged_fields = unknown")
    g.line(f"return {obj}, o")


def _emit_decode_tags(g: CodeGen, tagged: list[KTaggedField], targets: dict[str, str]) -> None:
    g.line("unknown = None")
    count = g.tmp("nt")
    UVarint.emit_read(g, count)
    g.line(f"if {count}:")
    g.indent()
    g.line("last = -1")
    g.line(f"for _ in range({count}):")
    g.indent()
    UVarint.emit_read(g, "tag")
    UVarint.emit_read(g, "size")
    g.line("if tag <= last:")
    g.line("    raise DecodeError('tagged fields out of order or repeated')")
    g.line("last = tag")
    g.line("end = o + size")
    g.line("if end > blen:")
    g.line("    raise DecodeError('truncated tagged field')")
    keyword = "if"
    for tf in tagged:
        g.line(f"{keyword} tag == {tf.tag}:")
        g.indent()
        # Decode the payload against its own end so it cannot read past its size.
        g.line("outer_blen = blen")
        g.line("blen = end")
        g.emit_decode(tf.sub, targets[tf.name])
        g.line("blen = outer_blen")
        g.line("if o != end:")
        g.line(f"    raise DecodeError('tagged field {tf.tag} size mismatch')")
        g.dedent()
        keyword = "elif"
    if tagged:
        g.line("else:")
        g.indent()
    g.line("if unknown is None:")
    g.line("    unknown = {}")
    g.line("unknown[tag] = buf[o:end]")
    g.line("o = end")
    if tagged:
        g.dedent()
    g.dedent()
    g.dedent()


def _emit_encode_body(g: CodeGen, ks: KStruct) -> None:
    for run in _runs(ks.fields):
        if len(run) > 1:
            fmts = [fixed_format(sub) or "" for _, sub in run]
            values = [
                f"obj.{name}.bytes" if ffmt == "16s" else f"obj.{name}"
                for (name, _), ffmt in zip(run, fmts, strict=True)
            ]
            g.line(f"w += {g.packer('>' + ''.join(fmts))}({', '.join(values)})")
        else:
            name, sub = run[0]
            g.emit_encode(sub, f"obj.{name}", "w")
    for name, factory, ignorable in ks.absent:
        if not ignorable:
            g.line(f"if obj.{name} != {_default_expr(g, factory)}:")
            g.line(
                f"    raise EncodeError('{ks.cls.__name__}.{name} is not in version {ks.version}')"
            )
    if not ks.flexible:
        return
    if not ks.tagged:
        g.line("u = obj.unknown_tagged_fields")
        g.line("if u:")
        g.line("    write_unknown_tags(w, u)")
        g.line("else:")
        g.line("    w.append(0)")
        return
    g.line("known = []")
    for tf in ks.tagged:
        v = g.tmp("v")
        g.line(f"{v} = obj.{tf.name}")
        g.line(f"if {v} != {_default_expr(g, tf.default)}:")
        g.indent()
        tw = g.tmp("tw")
        g.line(f"{tw} = bytearray()")
        g.emit_encode(tf.sub, v, tw)
        g.line(f"known.append(({tf.tag}, {tw}))")
        g.dedent()
    g.line("write_tag_section(w, known, obj.unknown_tagged_fields)")


def compile_view(ks: KStruct, fields: tuple[str, ...]) -> Decoder:
    """A decoder of ``ks`` that returns ``(values of fields, o)``: the same checks as the
    full decoder, without building the object (for the hottest requests, whose handlers
    read a few fields once). Unknown tagged fields are skipped."""
    known = {name for name, _ in ks.fields} | {tf.name for tf in ks.tagged}
    known |= {name for name, _, _ in ks.absent}
    missing = [name for name in fields if name not in known]
    if missing:
        raise ValueError(f"{ks.cls.__name__} has no field {', '.join(missing)}")
    ns = dict(_BASE_NAMESPACE)
    gen = CodeGen(ns)
    _emit_decode_body(gen, ks, fields)
    src = gen.source("def view(buf, o, blen):")
    exec(compile(src, f"<kafka {ks.cls.__name__} v{ks.version} view>", "exec"), ns)
    view: Decoder = ns["view"]
    return view


def compile_struct(ks: KStruct) -> tuple[Decoder, Encoder]:
    """Generate (or fetch the cached) decode and encode functions for ``ks``."""
    if ks.compiled is not None:
        return ks.compiled  # type: ignore[no-any-return]
    ns = dict(_BASE_NAMESPACE)
    dec_gen = CodeGen(ns)
    _emit_decode_body(dec_gen, ks)
    enc_gen = CodeGen(ns)
    _emit_encode_body(enc_gen, ks)
    src = dec_gen.source("def decode(buf, o, blen):") + enc_gen.source("def encode(obj, w):")
    code = compile(src, f"<kafka {ks.cls.__name__} v{ks.version}>", "exec")
    exec(code, ns)
    ks.compiled = (ns["decode"], ns["encode"])
    ks.source = src  # kept for debugging and for the curious
    return ks.compiled  # type: ignore[no-any-return]
