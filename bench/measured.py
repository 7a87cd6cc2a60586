"""Measured fit tables from what a user has: stores (their declared fits, run now) or claims
CSVs (`dprates report --csv`), with the regime gate applied; the bench side of
`analysis.report.tables` (data flows one way: bench reads stores and specs, analysis never does)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.verdict_engine.verdicts import apply_gate, read_back


def read_fits(sources: Sequence[str | Path], n_boot: int = 2000) -> pd.DataFrame:
    """A fit table from stores (`.sqlite`: their declared fits, run now) and / or claims CSVs
    (`dprates report --csv`, e.g. reports/reference_exponents.csv), the regime gate applied."""
    frames = []
    for src in sources:
        p = Path(src)
        if not p.is_file():
            raise ValueError(f"--measured {str(src)!r} is invalid: no such file (a .sqlite store "
                             "or a claims .csv)")
        if p.suffix.lower() == ".csv":
            table = read_back(pd.read_csv(p))
            missing = {"algorithm", "problem", "view", "x", "exponent", "ci_low", "ci_high",
                       "verdict", "flags"} - set(table.columns)
            if missing:
                raise ValueError(f"--measured {str(src)!r} is invalid: not a claims CSV (missing "
                                 f"{', '.join(sorted(missing))})")
            if "declared" not in table:
                table["declared"] = declared_from_specs(table)
            if "metric" not in table:
                table["metric"] = [_csv_metric(a, v) for a, v in zip(table["algorithm"],
                                                                    table.get("y", table["view"]),
                                                                    strict=True)]
            frames.append(table)
        else:
            from analysis.claims import claims_table
            from bench.store import open_store_data

            part = claims_table(open_store_data(p), n_boot=n_boot)
            if len(part):
                frames.append(part)
    frames = [f for f in frames if len(f)]
    return apply_gate(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()


def privacy_notes(sources: Sequence[str | Path]) -> dict[tuple[str, str], str]:
    """(algorithm, "") -> its privacy cell, for the algorithms of `sources` whose privacy is not
    verified: from a store's cells (every algorithm, with a declared fit or not: a plugin that
    FAILED its check must reach every table) and from a claims CSV's privacy column."""
    from algorithms.privacy.audit.ledger import privacy_note, unverified_algorithms

    out: dict[tuple[str, str], str] = {}
    for src in sources:
        p = Path(src)
        if p.suffix.lower() == ".csv":
            table = pd.read_csv(p, keep_default_na=False, dtype=str)
            if "privacy" in table:
                for a, note in zip(table["algorithm"], table["privacy"], strict=True):
                    if str(note).strip():
                        out.setdefault((str(a), ""), str(note))
        elif p.is_file():
            from bench.store import load

            for a, label in unverified_algorithms(load(p)).items():
                out.setdefault((a, ""), privacy_note(label))
    return out


def declared_from_specs(table: pd.DataFrame) -> list[Any]:
    """For a CSV written before it carried `declared`: True where the row's mode is its fit's
    declared mode in the committed spec bench/configs/<spec>.toml (or the algorithm has no knob
    grid there), None where that spec is not in this checkout."""
    from bench.config import load_spec

    configs = Path(__file__).resolve().parent.parent / "bench" / "configs"
    cache: dict[str, Any] = {}
    out: list[Any] = []
    for spec, fit, alg, mode in zip(table["spec"], table["fit"], table["algorithm"], table["mode"],
                                    strict=True):
        if spec not in cache:
            path = configs / f"{spec}.toml"
            try:
                cache[spec] = load_spec(path) if path.is_file() else None
            except ValueError:
                cache[spec] = None
        sp = cache[spec]
        if sp is None:
            out.append(None)
            continue
        fits = {f.name: f.mode for f in sp.fits}
        grids = {a["name"]: a["grid"] for a in sp.algorithms}
        out.append(mode == fits.get(fit) or not grids.get(alg))
    return out


def _csv_metric(algorithm: str, _y: Any) -> str:
    """The claim metric of a CSV row written before the CSV carried one: the algorithm's first
    claim's (every committed fit measures that metric)."""
    from analysis.verdict_engine.predictions import claim_metric

    return claim_metric(algorithm)
