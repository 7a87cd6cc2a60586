"""What a sweep would do before it does it: its cells, those already stored, and the cost
estimate of the rest (`bench.cost`), with the warning for cells likely to pass limits.time;
the longest cells first. `bench.runner.run_sweep` runs the plan under the store's lock."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.cells import Cell
from bench.config import SweepSpec
from bench.cost import CostModel, Estimate, cell_horizon, probe_rates
from bench.store import FAILED, Store


@dataclass
class Plan:
    """What a sweep would do: the cells, those already done, and an estimate of the cost."""

    cells: list[Cell]
    pending: list[Cell]
    done: int
    failed_to_retry: int
    cost: Estimate
    cost_basis: str
    status_counts: dict[str, int] = field(default_factory=dict)
    #: one line when cells are likely to pass limits.time ("" otherwise)
    limit_warning: str = ""
    #: each cell likely to pass limits.time with its estimated seconds (longest first)
    over_limit: list[tuple[Cell, float]] = field(default_factory=list)

    @property
    def cost_seconds(self) -> float:
        return self.cost.mid


def plan_sweep(spec: SweepSpec, store_path: str | Path, retry_failed: bool = False,
               probe: Callable[[Cell, float], dict] | None = None) -> Plan:
    """Cells of the spec, minus those in the store (unless failed and retry_failed). `probe`
    (a dry run: the runner's `compute_cell`, handed down so this module never imports the
    runner): the keys nothing stored or shipped prices are priced by running their smallest
    cell with it (`bench.cost.probe_rates`; nothing is stored)."""
    cells = spec.cells()
    stored: dict[str, str] = {}
    path = Path(store_path)
    if path.is_file():
        with Store(path, create=False) as st:
            if any(c.data == "counts" for c in cells):  # a records-only spec draws no counts
                st.check_stream_version(spec.counts_stream)
            stored = st.statuses()
    model = CostModel.from_store(path)
    keys = {c.key: c for c in cells}
    counts: dict[str, int] = {}
    for k in keys:
        if k in stored:
            counts[stored[k]] = counts.get(stored[k], 0) + 1
    pending = [c for c in cells if c.key not in stored or (retry_failed and stored[c.key] in FAILED)]
    failed = sum(1 for c in cells if stored.get(c.key) in FAILED)
    limit = spec.limits.time or math.inf
    probed = 0
    if probe is not None and pending:
        probed = probe_rates(pending, model, cell_horizon, probe, limit)
    estimate, mid = Estimate(), {}
    over: list[tuple[Cell, float]] = []  # cells likely to pass limits.time, their estimates
    for c in pending:
        raw = model.unclipped(c, cell_horizon)
        vals = tuple(min(limit, v) for v in raw)
        estimate.add(vals, model._rate(c)[0] is not None)  # type: ignore[arg-type]
        mid[c.key] = vals[1]
        if raw[1] > limit:
            over.append((c, raw[1]))
    # Longest expected first: with the long cells last, one worker can end a sweep alone.
    # The order never changes results (each cell's seeds come from its key).
    pending.sort(key=lambda c: -mid[c.key])
    basis = "; ".join(part for part in (
        f"learned from {model.stored} stored cells" if model.stored else "",
        f"rates shipped from {model.shipped_cells} reference cells" if model.shipped else "",
        f"{probed} algorithm-problem pairs priced by probing their smallest cell "
        f"({model.probe_seconds:.1f} s)" if probed else "")
        if part) or "default rates: no stored cells yet"
    warning = ""
    over.sort(key=lambda ce: -ce[1])
    if over:
        secs = [e for _, e in over]
        warning = (f"{len(over)} of {len(pending)} cells are likely to pass limits.time = "
                   f"{limit:g} s (estimated {min(secs):.3g}-{max(secs):.3g} s each): raise "
                   "limits.time or shrink them (a cell that passes it is stored as a timeout)")
    return Plan(cells=cells, pending=pending, done=len(cells) - len(pending),
                failed_to_retry=failed if retry_failed else 0, cost=estimate,
                cost_basis=basis, status_counts=counts, limit_warning=warning, over_limit=over)


def format_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "unknown"
    if s < 9.5:  # a sweep of small cells is seconds, not "0 s"
        return f"{s:.2g} s"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
