"""The Spark schema of a journal line (docs/journal.md): every field of every entry type.

Read with an explicit schema: inference would scan the whole input once more, and a field
absent from some file would change types between runs.
"""

from __future__ import annotations

from typing import Any


def journal_schema() -> Any:
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    size = StructType([StructField("bytes", LongType()), StructField("partitions", LongType())])
    fields = [
        ("v", IntegerType()),
        ("ts", StringType()),
        ("ts_ms", LongType()),
        ("node", IntegerType()),
        ("seq", LongType()),
        ("type", StringType()),
        ("group", StringType()),
        ("member", StringType()),
        ("instance", StringType()),
        ("client_id", StringType()),
        ("client_host", StringType()),
        ("protocols", ArrayType(StringType())),
        ("old_member", StringType()),
        ("reason", StringType()),
        ("detail", StringType()),
        ("timer", StringType()),
        ("trigger", StringType()),
        ("generation", IntegerType()),
        ("members", IntegerType()),
        ("leader", StringType()),
        ("protocol", StringType()),
        ("duration_ms", LongType()),
        ("rebalance_duration_ms", LongType()),
        ("assignment", MapType(StringType(), size)),
        ("from", StringType()),
        ("to", StringType()),
        ("state", StringType()),
        ("count", LongType()),
        ("offsets", LongType()),
    ]
    return StructType([StructField(name, kind) for name, kind in fields])
