"""Journal lines to a pruned, Parquet copy of the entries, incrementally.

Parsing JSON is most of the job's cost, so each journal file is parsed once: its entries,
cut down to the columns the tables use (assignment maps reduced to their sizes, reason
texts split into a template, a member id and the client's words), are stored under
``OUT/staging/entries`` in one partition per file. A rerun into the same ``--out`` parses
only the files that are new or whose size or modification time changed (the file still
being written), replacing that file's partition; the analysis then covers exactly the
files given this time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .schema import journal_schema

CONCURRENT_WRITERS = "spark.sql.maxConcurrentOutputFileWriters"

#: Bumped whenever the staged columns change: older staging is then ignored and rebuilt.
STAGING_VERSION = 1

#: Reason templates: the member id or instance becomes a field, the text a small set.
_CLIENT_REASON = r" \(client reason: (.*)\)( with another protocol)?$"
_TEMPLATES = (
    (r"^adding new member \S+", "adding new member <member>"),
    (r"^member \S+ ", "member <member> "),
    (r"^static member \S+ rejoined as \S+", "static member <instance> rejoined as <member>"),
    (r"^LeaveGroup for \(.*\)$", "LeaveGroup for (<members>)"),
)
_MEMBER = (
    r"^(?:adding new member |member |LeaveGroup for \(|static member \S+ rejoined as )"
    r"([^ ,()]+)"
)


def staging_path(out: str) -> str:
    return f"{out}/staging/entries-v{STAGING_VERSION}"


def ingest(spark: Any, paths: list[str], out: str, incremental: bool) -> tuple[Any, int]:
    """The staged entries of exactly the files under ``paths``, and how many files were
    parsed this time (all of them unless ``incremental`` finds earlier staging)."""
    from pyspark.sql import functions as F

    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .load(paths)
        .select("path", "length", "modificationTime")
        .withColumn("source", F.xxhash64("path"))
        .collect()
    )
    if not files:
        raise ValueError(f"no journal files under {', '.join(paths)}")
    manifest_path = f"{staging_path(out)}-files"
    seen: set[tuple[str, int, Any]] = set()
    if incremental and exists(spark, manifest_path):
        seen = {
            (r["path"], r["length"], r["modificationTime"])
            for r in spark.read.parquet(manifest_path).collect()
        }
    fresh = [
        r["path"] for r in files if (r["path"], r["length"], r["modificationTime"]) not in seen
    ]
    if fresh:
        # Dynamic: only the partitions of the files parsed now are replaced.
        with _writers_per_partition(spark):
            (
                _entries(spark, fresh, F)
                .write.mode("overwrite")
                .option("partitionOverwriteMode", "dynamic" if seen else "static")
                .partitionBy("source")
                .parquet(staging_path(out))
            )
        _manifest(spark, files, F).write.mode("overwrite").parquet(manifest_path)
    sources = [int(r["source"]) for r in files]
    staged = spark.read.parquet(staging_path(out)).where(F.col("source").isin(sources))
    return staged, len(fresh)


def _manifest(spark: Any, files: list[Any], F: Any) -> Any:
    """The files' path, length and modification time as a one-partition frame built from
    literals in the JVM: ``createDataFrame`` of Python rows starts a Python worker, seconds
    of a small journal's job."""
    rows = [
        F.struct(
            F.lit(r["path"]).cast("string").alias("path"),
            F.lit(r["length"]).cast("long").alias("length"),
            F.lit(r["modificationTime"]).cast("timestamp").alias("modificationTime"),
        )
        for r in files
    ]
    return spark.range(1).select(F.inline(F.array(*rows)))


@contextmanager
def _writers_per_partition(spark: Any) -> Iterator[None]:
    """Unless the user set it: a file open per partition while staging, rather than sort
    every row by partition first (Spark's default). A task reads one journal file, so it
    writes one partition: no sort is needed, and this halves the cost of staging. The
    tables, with many (date, node) partitions per task, are cheaper written sorted."""
    if spark.conf.get(CONCURRENT_WRITERS, None) is not None:
        yield
        return
    spark.conf.set(CONCURRENT_WRITERS, "64")
    try:
        yield
    finally:
        spark.conf.unset(CONCURRENT_WRITERS)


def exists(spark: Any, path: str) -> bool:
    """Whether ``path`` (any URI Hadoop knows) exists, asked of Hadoop's FileSystem."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(hadoop_path))


def _entries(spark: Any, paths: list[str], F: Any) -> Any:
    raw = spark.read.schema(journal_schema()).json(paths)
    reason = F.col("reason")
    rebalance = F.col("type") == "rebalance_started"
    template = F.regexp_replace(reason, _CLIENT_REASON, "$2")
    for pattern, replacement in _TEMPLATES:
        template = F.regexp_replace(template, pattern, replacement)
    sizes = F.map_values("assignment")
    removal = F.col("type").isin("member_left", "member_expired", "member_evicted")
    return raw.where(F.col("type").isNotNull() & F.col("ts_ms").isNotNull()).select(
        "ts_ms",
        "node",
        # Journals from before ``seq`` keep their order within a file (and a split of it).
        F.coalesce("seq", F.monotonically_increasing_id()).alias("seq"),
        "type",
        "group",
        "member",
        "instance",
        "client_id",
        "client_host",
        "old_member",
        "trigger",
        F.when(rebalance, template).alias("reason"),
        F.when(rebalance, F.regexp_extract(reason, _MEMBER, 1)).alias("reason_member"),
        F.when(rebalance, F.nullif(F.regexp_extract(reason, _CLIENT_REASON, 1), F.lit(""))).alias(
            "client_reason"
        ),
        # Why a member went: the timer, the client's LeaveGroup reason, or group_max_size.
        F.when(removal, F.coalesce("timer", "reason")).alias("removal_reason"),
        "generation",
        "members",
        "leader",
        "duration_ms",
        "rebalance_duration_ms",
        F.size(sizes).alias("assigned_members"),
        F.array_max(F.transform(sizes, lambda s: s["partitions"])).alias("max_partitions"),
        F.array_min(F.transform(sizes, lambda s: s["partitions"])).alias("min_partitions"),
        F.aggregate(sizes, F.lit(0).cast("long"), lambda acc, s: acc + s["bytes"]).alias(
            "assignment_bytes"
        ),
        "from",
        "to",
        "state",
        "count",
        F.xxhash64(F.col("_metadata.file_path")).alias("source"),
    )
