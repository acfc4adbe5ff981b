"""The ``clustering`` subcommand: schedule, run and list clusterings."""

from __future__ import annotations

from typing import Any

from hudi_ds.cli.command import EXIT_OK, AddCommand, Command, human_size, render_table
from hudi_ds.services import clustering
from hudi_ds.services.clustering import ClusteringResult


def _result(r: ClusteringResult) -> dict[str, Any]:
    return {
        "instant": r.instant,
        "groups": r.groups,
        "file_groups_replaced": r.replaced,
        "file_groups_created": r.created,
        "rows": r.rows,
        "bytes_written": r.bytes_written,
        "seconds": round(r.seconds, 3),
    }


def _list(cmd: Command) -> int:
    tl = cmd.context().timeline()
    payload = []
    for inst in clustering.pending_clusterings(tl):
        plan = tl.read_requested_replace(inst).clustering_plan
        groups = (plan.input_groups or []) if plan is not None else []
        params = (plan.strategy.strategy_params if plan and plan.strategy else None) or {}
        payload.append(
            {
                "instant": inst.requested_time,
                "state": inst.state.value,
                "groups": len(groups),
                "file_slices": sum(len(g.slices or []) for g in groups),
                "output_file_groups": sum(g.num_output_file_groups or 1 for g in groups),
                "sort_columns": params.get("hoodie.clustering.plan.strategy.sort.columns"),
            }
        )

    def human() -> str:
        if not payload:
            return "no pending clustering"
        body = [
            [p["instant"], p["state"], p["groups"], p["file_slices"], p["output_file_groups"]]
            for p in payload
        ]
        return render_table(body, ["clustering", "state", "groups", "slices", "new files"])

    cmd.emit({"pending": payload}, human)
    return EXIT_OK


def cmd_clustering(cmd: Command) -> int:
    action = cmd.args.action
    if action == "list":
        return _list(cmd)
    ctx = cmd.context()
    if action == "schedule" or cmd.args.schedule:
        c = clustering.schedule_clustering(ctx)
        if action == "schedule":
            slices = 0
            if c is not None:
                plan = ctx.timeline().read_requested_replace(c).clustering_plan
                groups = (plan.input_groups or []) if plan is not None else []
                slices = sum(len(g.slices or []) for g in groups)
            cmd.emit(
                {"scheduled": c, "file_slices": slices},
                lambda: (
                    f"scheduled clustering {c} of {slices} file slice(s)"
                    if c
                    else "nothing to cluster (no small file slices in the selected partitions)"
                ),
            )
            return EXIT_OK
    results = clustering.run_clustering(ctx, cmd.args.instant)
    cmd.progress.close()

    def human() -> str:
        if not results:
            return "no pending clustering to run"
        return "\n".join(
            f"clustering {r.instant}: {r.replaced} file group(s) into {r.created}, "
            f"{r.rows:,} rows, {human_size(r.bytes_written)} written in {r.seconds:.2f}s"
            for r in results
        )

    cmd.emit({"clusterings": [_result(r) for r in results]}, human)
    return EXIT_OK


def add_clustering_command(add: AddCommand) -> None:
    """The ``clustering`` subcommand."""
    sp = add("clustering", cmd_clustering, "schedule, run or list clusterings")
    sp.add_argument("action", choices=["schedule", "run", "list"])
    sp.add_argument("path")
    sp.add_argument("--instant", default=None, help="run: only this clustering instant")
    sp.add_argument("--schedule", action="store_true", help="run: schedule a new clustering first")
