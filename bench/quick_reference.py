"""The quick reference (`make reference-quick`): reduced versions of the committed reference
specs, run into their own stores, and per claim whether the verdict agrees with the committed
full reference (reports/reference_exponents.csv).

A reduced spec is the committed spec with fewer repetitions (its first k data seeds: the same
paired seeds the full run used first) and, where the manifest says `theory_only`, each knob
grid cut to its theory default (the declared theory fits keep every cell they fit; the tuned
envelope is then not measured). Windows, design points, budgets and fits are unchanged. The
manifest, bench/reference_quick.toml, lists the specs and says why each was chosen.
"""

from __future__ import annotations

import dataclasses
import time
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd

from bench.config import SpecError, SweepSpec, load_spec

CONFIGS = Path(__file__).resolve().parent / "configs"
MANIFEST = Path(__file__).resolve().parent / "reference_quick.toml"  # not a spec: beside configs/
FULL_CSV = Path(__file__).resolve().parent.parent / "reports" / "reference_exponents.csv"


def reduce_spec(spec: SweepSpec, repetitions: int, theory_only: bool = False) -> SweepSpec:
    """`spec` with `repetitions` paired seeds (<= the spec's) and, with `theory_only`, every
    knob grid cut to the theory default of its knobs (an algorithm whose grid lacks the
    default keeps its grid: cutting it would leave no cell)."""
    if not 1 <= repetitions <= spec.repetitions:
        raise SpecError(f"repetitions={repetitions} is invalid for {spec.name}: must be in "
                        f"1..{spec.repetitions} (the full spec's)")
    algs = spec.algorithms
    if theory_only:
        import algorithms
        from algorithms.sosp.spider import KNOB_DEFAULTS

        algs = []
        for a in spec.algorithms:
            cls = algorithms.get_algorithm(a["name"])
            defaults = {**KNOB_DEFAULTS, **getattr(cls, "knob_defaults", {})}
            grid = a["grid"]
            if grid and all(k in defaults and defaults[k] in v for k, v in grid.items()):
                grid = {k: [defaults[k]] for k in grid}
            algs.append({**a, "grid": grid})
    return dataclasses.replace(spec, repetitions=repetitions, algorithms=algs)


def load_manifest(path: str | Path = MANIFEST) -> list[dict[str, Any]]:
    """The manifest's [[spec]] entries: name, repetitions, theory_only (validated)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"manifest {str(p)!r} is invalid: no such file")
    raw = tomllib.loads(p.read_text(encoding="utf-8"))
    entries = []
    for i, e in enumerate(raw.get("spec", [])):
        unknown = set(e) - {"name", "repetitions", "theory_only"}
        if unknown:
            raise SpecError(f"spec[{i}].{sorted(unknown)[0]} is an unknown key: allowed are name, "
                            "repetitions, theory_only")
        if not (CONFIGS / f"{e.get('name')}.toml").is_file():
            raise SpecError(f"spec[{i}].name={e.get('name')!r} is invalid: no bench/configs/"
                            f"{e.get('name')}.toml")
        entries.append({"name": e["name"], "repetitions": int(e.get("repetitions", 3)),
                        "theory_only": bool(e.get("theory_only", False))})
    if not entries:
        raise SpecError(f"manifest {str(p)!r} is invalid: it lists no [[spec]]")
    return entries


def reduced_specs(path: str | Path = MANIFEST) -> list[SweepSpec]:
    return [reduce_spec(load_spec(CONFIGS / f"{e['name']}.toml"), e["repetitions"],
                        e["theory_only"]) for e in load_manifest(path)]


def compare(quick: pd.DataFrame, full: pd.DataFrame, covered_specs: set[str]) -> pd.DataFrame:
    """Per declared claim: the full reference's verdict and the quick one's, and whether they
    agree. A claim is covered when the full reference decided it from a spec the quick run
    reduced (else "not covered": the quick run has no fit that could decide it alike). Verdicts
    agree by name (`verdict_key`: the sixth edition's "by X", "(accepts a..b)" or "(Rx)" are
    numbers of the run, not the verdict)."""
    from analysis.report.tables import verdict_key

    rows = []
    for f, q in zip(full.to_dict("records"), quick.to_dict("records"), strict=True):
        full_spec = str(f["decided by"]).split("/")[0]
        covered = full_spec in covered_specs
        agree = ("not covered" if not covered else
                 "yes" if verdict_key(q["verdict"]) == verdict_key(f["verdict"]) else "no")
        same = str(q["decided by"]).split(", x =")[0] == str(f["decided by"]).split(", x =")[0]
        rows.append({"algorithm": f["algorithm"], "claim": f["claim"],
                     "full": f["verdict"], "quick": q["verdict"] if covered else "-",
                     "agree": agree, "same fit": ("yes" if same else "no") if covered else "-",
                     "full decided by": f["decided by"],
                     "quick measured": q["measured"] if covered else "-",
                     "full measured": f["measured"]})
    return pd.DataFrame(rows)


def run(manifest: str | Path = MANIFEST, out_dir: str | Path = "results/quick_reference",
        jobs: int | None = None, full_csv: str | Path = FULL_CSV, n_boot: int = 1000,
        progress: bool = False) -> dict[str, Any]:
    """Sweep every reduced spec into `out_dir`, fit, and compare with `full_csv`."""
    from analysis.claims import claims_table
    from analysis.report.tables import claims_summary
    from bench.measured import read_fits
    from bench.runner import run_sweep
    from bench.store import open_store_data

    specs = reduced_specs(manifest)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    timings, stores = {}, []
    for spec in specs:
        t0 = time.perf_counter()
        store = out / f"{spec.name}.sqlite"
        run_sweep(spec, store, jobs=jobs, progress=progress)
        timings[spec.name] = time.perf_counter() - t0
        stores.append(store)
        print(f"  {spec.name}: {len(spec.cells())} cells ({spec.repetitions} seeds"
              + (", theory knobs only" if any(len(v) == 1 for a in spec.algorithms
                                              for v in a["grid"].values()) else "")
              + f"), {timings[spec.name]:.0f} s", flush=True)
    t0 = time.perf_counter()
    fits = pd.concat([claims_table(open_store_data(s), n_boot=n_boot) for s in stores],
                     ignore_index=True)
    timings["fits"] = time.perf_counter() - t0
    quick = claims_summary(fits)
    full = claims_summary(read_fits([full_csv]))
    table = compare(quick, full, {s.name for s in specs})
    return {"table": table, "timings": timings, "stores": stores, "fits": fits}
