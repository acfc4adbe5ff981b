"""The ``metadata`` subcommand: the metadata table's partitions and files, and its rebuild."""

from __future__ import annotations

import logging
from typing import Any

from hudi_ds.cli.command import EXIT_ERROR, EXIT_OK, AddCommand, Command, human_size, render_table
from hudi_ds.metadata.bloom_filters import BloomOptions
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.metadata.records import (
    FILES_PARTITION,
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PATH,
    declared_partitions,
)
from hudi_ds.metadata.writer import MetadataWriter
from hudi_ds.services.indexer import build_indexes
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import PROPS_FILE, TableConfig
from hudi_ds.write.metadata_sync import (
    committed_listing,
    committed_record_keys,
    committed_slices,
)

log = logging.getLogger("hudi_ds.cli")


def _metadata_report(table: ReadableTable) -> dict[str, Any]:
    cfg = table.config
    declared = declared_partitions(cfg)
    inflight = declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)
    payload: dict[str, Any] = {
        "table": table.name,
        "path": table.path,
        "declared_partitions": declared,
        "inflight_partitions": inflight,
        "present": table.storage.exists(f"{METADATA_PATH}/{PROPS_FILE}"),
    }
    reader = MetadataReader.open(table.storage, cfg, table.timeline)
    if reader is None:
        payload["in_step"] = None
        payload["used_by_reads"] = False
        return payload
    groups = []
    for g in reader.file_groups:
        s = g.slice
        groups.append(
            {
                "file_id": g.file_id,
                "base_instant": s.base_instant_time or None,
                "base_file": s.base_file.name.name if s.base_file else None,
                "base_size": s.base_file.size if s.base_file else 0,
                "log_files": [lf.name.name for lf in s.log_files],
                "log_size": sum(lf.size for lf in s.log_files),
                "blocks_merged": len(g.blocks),
                "blocks_skipped": [
                    {"log_file": f, "instant": t, "why": why} for f, t, why in g.skipped
                ],
            }
        )
    partitions = reader.partitions()
    payload.update(
        {
            "table_version": reader.config.table_version,
            "latest_instant": reader.latest_instant,
            "bootstrap_instant": reader.bootstrap_instant,
            "mdt_instants": len(reader.timeline.completed()),
            "file_groups": groups,
            "partitions": len(partitions),
            "files": reader.file_count(),
            "files_per_partition": {p: len(reader.files(p)) for p in partitions},
            "in_step": reader.in_step,
            "missing_instants": reader.missing_instants,
            "problems": reader.problems,
            "used_by_reads": table.metadata_reader() is not None,
        }
    )
    return payload


def cmd_metadata(cmd: Command) -> int:
    """``hudi-py metadata PATH [--rebuild | --build PARTITION]``: report the metadata table
    (declared partitions, its ``files`` partition's file groups and blocks, what it lists,
    whether it is in step with the data timeline), rebuild it from a listing of the storage,
    or build its index partitions (column_stats, partition_stats, record_index)."""
    if cmd.args.rebuild:
        return _rebuild_metadata(cmd)
    if cmd.args.build:
        return _build_partitions(cmd, list(cmd.args.build))
    table = cmd.table()
    payload = _metadata_report(table)

    def human() -> str:
        lines = [f"metadata table of {payload['table']} ({payload['path']})"]
        declared = ", ".join(payload["declared_partitions"]) or "(none)"
        lines.append(f"declared partitions  {declared}")
        if payload["inflight_partitions"]:
            lines.append(f"inflight partitions  {', '.join(payload['inflight_partitions'])}")
        if payload["in_step"] is None:
            where = "present" if payload["present"] else "absent"
            lines.append(
                f"{FILES_PARTITION} partition not declared or no metadata table ({where}); "
                "reads list the storage"
            )
            return "\n".join(lines)
        lines += [
            f"table version        {payload['table_version']}",
            f"latest instant       {payload['latest_instant']}",
            f"bootstrap instant    {payload['bootstrap_instant']}",
            f"lists                {payload['partitions']} partition(s), "
            f"{payload['files']} file(s)",
        ]
        if payload["in_step"]:
            lines.append("in step              yes (reads list through it)")
        else:
            lines.append("in step              NO (reads list the storage)")
            if payload["missing_instants"]:
                lines.append(f"  missing instants   {', '.join(payload['missing_instants'])}")
            for p in payload["problems"]:
                lines.append(f"  problem            {p}")
        rows = [
            [
                g["file_id"],
                g["base_file"] or "-",
                human_size(g["base_size"]) if g["base_file"] else "-",
                len(g["log_files"]),
                human_size(g["log_size"]),
                g["blocks_merged"],
                len(g["blocks_skipped"]),
            ]
            for g in payload["file_groups"]
        ]
        headers = ["file group", "base file", "base size", "logs", "log size", "blocks",
                   "skipped"]  # fmt: skip
        lines.append(f"\n{FILES_PARTITION} partition: {len(rows)} file group(s)")
        lines.append(render_table(rows, headers))
        for g in payload["file_groups"]:
            for b in g["blocks_skipped"]:
                lines.append(f"  skipped {b['log_file']} block {b['instant']}: {b['why']}")
        return "\n".join(lines)

    cmd.emit(payload, human)
    return EXIT_OK


def _rebuild_metadata(cmd: Command) -> int:
    """Delete the metadata table and create it again from the committed files the storage
    lists (Java's ``hudi-cli metadata delete`` + ``metadata create``): a write, so the table
    version must be one hudi_ds writes, and it runs under the table lock (``-o`` lock
    options) with the current ``hoodie.properties``."""
    ctx = cmd.context()  # validates -o (unknown keys refused)
    ctx.require_writable("metadata rebuild")
    with ctx.locked():
        state = ctx.state
        state.config = TableConfig.load(state.storage)  # as another writer may have left it
        writer = MetadataWriter(state, committed_listing, enable=True)
        # the index partitions hudi_ds keeps in step are built again with the listing: a
        # global record index and bloom filters with the bootstrap, the stats partitions after
        rli = writer.rli.maintained()
        partitioned = rli and writer.rli.partitioned  # rebuilt of the same kind
        stats = writer.stats.maintained(writer.declared)
        bloom = writer.indexes.bloom.maintained(writer.declared) or None
        writer = MetadataWriter(
            state,
            committed_listing,
            enable=True,
            slices=committed_slices,
            record_keys=committed_record_keys,
            record_index=rli,
            bloom=BloomOptions(enable=bloom),
        )
        writer.rli.new_partitioned = partitioned
        had = writer.present()
        writer.delete()
        writer.create()
        if stats:
            writer.build_stats(writer.timeline(), stats)
    table = cmd.table()
    payload = _metadata_report(table)
    payload["rebuilt"] = True
    payload["replaced_existing"] = had

    def human() -> str:
        verb = "rebuilt" if had else "created"
        return (
            f"{verb} the metadata table of {payload['table']}: {payload['partitions']} "
            f"partition(s), {payload['files']} file(s), bootstrap instant "
            f"{payload['bootstrap_instant']}; in step: {'yes' if payload['in_step'] else 'NO'}"
        )

    cmd.emit(payload, human)
    return EXIT_OK if payload["in_step"] else EXIT_ERROR


def _build_partitions(cmd: Command, names: list[str]) -> int:
    """Build metadata table partitions ``names`` (column_stats, partition_stats,
    record_index, bloom_filters) the table lacks with the ``indexing`` action, under the table lock
    (:mod:`hudi_ds.services.indexer`); a build killed earlier is finished first."""
    ctx = cmd.context()
    ctx.require_writable("metadata build")
    result = build_indexes(ctx, names)
    table = cmd.table()
    declared = declared_partitions(table.config)
    payload = {
        "table": table.name,
        "path": table.path,
        "built": result.built,
        "indexing_instants": result.instants,
        "skipped": result.skipped,
        "declared": declared,
    }

    def human() -> str:
        lines = [f"{payload['table']}: metadata table partitions {', '.join(declared)}"]
        if result.built:
            lines.append(f"built {', '.join(result.built)} (indexing {', '.join(result.instants)})")
        if result.skipped:
            lines.append(
                f"not built: {', '.join(result.skipped)} (already built, or partition stats "
                "of a non-partitioned table)"
            )
        return "\n".join(lines)

    cmd.emit(payload, human)
    wanted = [n for n in names if n not in result.skipped]
    return EXIT_OK if all(n in declared for n in wanted) else EXIT_ERROR


def add_metadata_command(add: AddCommand) -> None:
    """The ``metadata`` subcommand."""
    sp = add(
        "metadata",
        cmd_metadata,
        "the metadata table: declared partitions, its files partition, what it lists, in step",
    )
    sp.add_argument("path")
    sp.add_argument(
        "--rebuild",
        action="store_true",
        help="delete the metadata table and create it again from a listing of the storage",
    )
    sp.add_argument(
        "--build",
        action="append",
        metavar="PARTITION",
        help="build a metadata table partition the table lacks from its files, with the "
        "indexing action: column_stats, partition_stats, record_index or bloom_filters "
        "(repeatable; versions 8 and 9; -o lock options when other writers run)",
    )
