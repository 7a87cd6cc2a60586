"""A sweep cell: a frozen record of everything that determines a run, its key and its seeds.

Key: a hash of the cell's canonical content (not its place in the grid), so editing a spec
keeps every cell that did not change. Seeds are paired (README, the protocol, item 5):
the data stream's seed depends only on (base seed, problem, problem parameters, d, repetition),
so every algorithm, knob value and budget sees the same prefix-consistent samples; the
algorithm's randomness depends on the whole cell.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from problems.counts.stream import STREAM_VERSION


def canonical_number(v: Any) -> Any:
    """Numbers compare by value (1 == 1.0) in keys; inf is spelled 'inf'."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, (int, float, np.integer, np.floating)):
        f = float(v)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    return v


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _words(text: str, k: int = 4) -> list[int]:
    """k 32-bit words of sha256(text): entropy for a SeedSequence."""
    digest = hashlib.sha256(text.encode()).digest()
    return [int.from_bytes(digest[4 * i: 4 * i + 4], "little") for i in range(k)]


@dataclass(frozen=True)
class Cell:
    problem: str
    problem_params: tuple[tuple[str, Any], ...]
    algorithm: str
    params: tuple[tuple[str, Any], ...]
    n: int | None
    d: int
    eps: float
    delta: float
    rep: int
    calibration: str
    base_seed: int
    target_alpha: float | None = None
    knobs: tuple[str, ...] = ()  # names of the params that come from the spec's knob grid
    stop_at_target: bool = False  # end the run once alpha_SOSP <= target (n* is then known)
    data: str = "records"  # "records" or "counts" (exact batch statistics, problems.counts.stream)
    #: The counts stream version counts cells draw (problems.counts.stream.STREAM_VERSION). Not
    #: part of the key: a store holds one version (bench.store.Store.check_stream_version).
    counts_stream: int = STREAM_VERSION
    #: The metric a target cell's target is on (the spec's `target_metric`); None: the
    #: algorithm's claim metric. Part of the key only when set: keys of earlier stores stay.
    metric: str | None = None
    #: The largest n a search over n tries (the spec's `search_cap`; None: the budget n). Part
    #: of the key only when set.
    search_cap: int | None = None
    #: What a search over n reads as reaching (the spec's `reach`): None for the best iterate by
    #: the population oracle, "output" for the algorithm's own output (`bench.n_search`). Part
    #: of the key only when set.
    reach: str | None = None

    @classmethod
    def make(cls, *, problem: str, problem_params: dict, algorithm: str, params: dict,
             n: int | None, d: int, eps: float, delta: float, rep: int, calibration: str = "tight",
             base_seed: int = 0, target_alpha: float | None = None,
             knobs: tuple[str, ...] = (), stop_at_target: bool = False,
             data: str = "records", counts_stream: int = STREAM_VERSION,
             metric: str | None = None, search_cap: int | None = None,
             reach: str | None = None) -> Cell:
        return cls(problem=problem,
                   problem_params=tuple(sorted((k, canonical_number(v)) for k, v in problem_params.items())),
                   algorithm=algorithm,
                   params=tuple(sorted((k, canonical_number(v)) for k, v in params.items())),
                   n=None if n is None else int(n), d=int(d), eps=float(eps), delta=float(delta),
                   rep=int(rep), calibration=calibration, base_seed=int(base_seed),
                   target_alpha=None if target_alpha is None else float(target_alpha),
                   knobs=tuple(sorted(knobs)), stop_at_target=bool(stop_at_target), data=data,
                   counts_stream=int(counts_stream), metric=metric,
                   search_cap=None if search_cap is None else int(search_cap), reach=reach)

    def content(self) -> dict[str, Any]:
        """What determines the run's numbers (the knob-grid bookkeeping does not)."""
        c = asdict(self)
        c.pop("knobs")
        c.pop("counts_stream")  # one per store (checked there): keys of earlier stores stay valid
        if not self.stop_at_target:  # absent unless used: keys of earlier stores stay valid
            c.pop("stop_at_target")
        for k in ("metric", "search_cap", "reach"):  # the same
            if c[k] is None:
                c.pop(k)
        c["problem_params"] = dict(self.problem_params)
        c["params"] = dict(self.params)
        for k in ("eps", "delta", "target_alpha"):
            c[k] = canonical_number(c[k]) if c[k] is not None else None
        return c

    @property
    def key(self) -> str:
        return hashlib.sha256(_canonical(self.content()).encode()).hexdigest()[:24]

    def data_seed(self) -> np.random.SeedSequence:
        """Depends on (base seed, problem, problem parameters, d, repetition) only. The two data
        modes draw different (equally distributed) data from one seed: cells are paired within
        a mode, and a spec runs each problem in one mode."""
        ident = _canonical({"problem": self.problem, "problem_params": dict(self.problem_params),
                            "d": self.d})
        return np.random.SeedSequence([self.base_seed, *_words(ident), self.rep, 0])

    def algorithm_seed(self) -> np.random.SeedSequence:
        return np.random.SeedSequence([self.base_seed, *_words(self.key, 8), 1])

    def run_params(self) -> dict[str, Any]:
        """Overrides handed to the algorithm (target_alpha joins the knobs in target mode)."""
        p = {k: (math.inf if v == "inf" else v) for k, v in self.params}
        if self.target_alpha is not None:
            p["target_alpha"] = self.target_alpha
        return p

    def label(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.params)
        size = f"n={self.n}" if self.target_alpha is None else f"target={self.target_alpha:g} cap={self.n}"
        return (f"{self.algorithm}/{self.problem} d={self.d} {size} eps={self.eps:g} "
                f"rep={self.rep} data={self.data}{extra}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["problem_params"] = dict(self.problem_params)
        out["params"] = dict(self.params)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        return cls.make(problem=d["problem"], problem_params=d["problem_params"],
                        algorithm=d["algorithm"], params=d["params"], n=d["n"], d=d["d"],
                        eps=d["eps"], delta=d["delta"], rep=d["rep"], calibration=d["calibration"],
                        base_seed=d["base_seed"], target_alpha=d.get("target_alpha"),
                        knobs=tuple(d.get("knobs", ())), stop_at_target=d.get("stop_at_target", False),
                        data=d.get("data", "records"),
                        counts_stream=d.get("counts_stream", STREAM_VERSION),
                        metric=d.get("metric"), search_cap=d.get("search_cap"),
                        reach=d.get("reach"))
