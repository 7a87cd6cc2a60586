"""The results store: one SQLite file per sweep (stdlib sqlite3, WAL mode).

Tables:
- `schema_version(version)`: one row; a store of another version is refused with a clear error.
- `meta(key, value)`: the spec (name, TOML text, source path), creation and update times,
  and `counts_stream_version` (`problems.counts.stream.STREAM_VERSION`: counts-mode cells are only
  comparable, and a sweep only resumes, on the counts data they were made with).
- `spec_cells(key)`: the keys of the spec last run into this store (editing a spec keeps the
  rows of cells that did not change; `load(current=True)` returns only the current spec's).
- `cells`: one row per cell: every cell field, status and error, every metric, the parameters
  used, timings, privacy spent, and provenance (dprates / Python / numpy versions, git commit,
  host, start and end time).
- `curves(key, kind, data)`: curve-valued results as JSON (the samples-to-accuracy curve, the
  thinned trajectory), written in the same transaction as the cell's row.

Only the sweep's parent process writes; workers return records (see bench.runner).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.declarations import StoreData

# The columns live in their own module (bench.disclosure reads them too); re-exported here.
from bench.store_columns import ALL_COLUMNS as ALL_COLUMNS
from bench.store_columns import CELL_COLUMNS as CELL_COLUMNS
from bench.store_columns import JSON_COLUMNS as JSON_COLUMNS
from bench.store_columns import METRIC_COLUMNS as METRIC_COLUMNS
from bench.store_columns import RUN_COLUMNS as RUN_COLUMNS
from problems.counts.stream import STREAM_VERSION, SUPPORTED_STREAM_VERSIONS

SCHEMA_VERSION = 4
#: Older versions this one reads after adding the columns they lack (additive changes only).
MIGRATABLE = (3,)

#: Statuses are ok, diverged, error and timeout; these two are what --retry-failed reruns.
FAILED = ("error", "timeout")


class StoreError(ValueError):
    """A store that cannot be opened or read (wrong schema version, not a dprates store)."""


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    return str(o)


def dumps(obj: Any) -> str:
    """JSON that round-trips float64 exactly (inf and nan included)."""
    return json.dumps(obj, default=_json_default, sort_keys=True)


class Store:
    """An open store. Use as a context manager or call close()."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise StoreError(f"store path {str(self.path)!r} is invalid: no such file")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self._init_schema(create)

    def _init_schema(self, create: bool) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_version" in tables:
            row = self.conn.execute("SELECT version FROM schema_version").fetchone()
            version = row[0] if row else None
            if version in (*MIGRATABLE, SCHEMA_VERSION):  # additive: add the columns it lacks
                have = {r[1] for r in self.conn.execute("PRAGMA table_info(cells)")}
                missing = [(k, t) for k, t in ALL_COLUMNS.items() if k not in have]
                if missing or version != SCHEMA_VERSION:
                    with self.conn:
                        for name, typ in missing:
                            self.conn.execute(f"ALTER TABLE cells ADD COLUMN {name} {typ}")
                        self.conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                version = SCHEMA_VERSION
            if version != SCHEMA_VERSION:
                self.conn.close()
                raise StoreError(f"store {str(self.path)!r} has schema version {version}; this dprates "
                                 f"reads version {SCHEMA_VERSION}: rerun the sweep into a new store "
                                 "(--out) or use the dprates version that wrote it")
            return
        if tables - {"sqlite_sequence"}:
            self.conn.close()
            raise StoreError(f"{str(self.path)!r} is not a dprates store (tables: {sorted(tables)})")
        if not create:
            self.conn.close()
            raise StoreError(f"{str(self.path)!r} is not a dprates store (empty database)")
        cols = ",\n".join(f"{name} {typ}" for name, typ in ALL_COLUMNS.items())
        with self.conn:
            self.conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            self.conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            self.conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            self.conn.execute("CREATE TABLE spec_cells (key TEXT PRIMARY KEY)")
            self.conn.execute(f"CREATE TABLE cells (key TEXT PRIMARY KEY,\n{cols})")
            self.conn.execute("CREATE TABLE curves (key TEXT NOT NULL, kind TEXT NOT NULL, "
                              "data TEXT NOT NULL, PRIMARY KEY (key, kind))")

    # -- writing (parent process only) ------------------------------------------------------
    def set_spec(self, name: str, text: str, source: str, keys: Iterable[str], now: str,
                 stream_version: int | None = STREAM_VERSION) -> None:
        """Record the spec being run, the keys of its cells (replacing the previous spec's) and
        the counts stream version its counts cells draw (None: it has none; the store's
        recorded version stays)."""
        with self.conn:
            for k, v in (("spec_name", name), ("spec_text", text), ("spec_source", source),
                         ("updated", now)):
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, v))
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (now,))
            if stream_version is not None:
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('counts_stream_version', ?)",
                                  (str(stream_version),))
            self.conn.execute("DELETE FROM spec_cells")
            self.conn.executemany("INSERT INTO spec_cells VALUES (?)", ((k,) for k in keys))

    def write(self, record: dict[str, Any]) -> None:
        """One cell's row and its curves, in one transaction (replacing an earlier row)."""
        row = {"key": record["key"]}
        for name in ALL_COLUMNS:
            v = record.get(name)
            if name in JSON_COLUMNS and v is not None:
                v = dumps(v)
            elif isinstance(v, float) and math.isnan(v):
                v = None
            elif hasattr(v, "item"):  # numpy scalar
                v = v.item()
            row[name] = v
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.conn:
            self.conn.execute(f"INSERT OR REPLACE INTO cells ({names}) VALUES ({marks})",
                              tuple(row.values()))
            self._insert_curves(record["key"], record.get("curves") or {})

    def _insert_curves(self, key: str, curves: dict[str, Any]) -> None:
        """Part of write's transaction (a separate method so tests can interrupt it midway)."""
        self.conn.execute("DELETE FROM curves WHERE key = ?", (key,))
        self.conn.executemany("INSERT INTO curves VALUES (?, ?, ?)",
                              ((key, kind, dumps(data)) for kind, data in curves.items()))

    # -- reading -------------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def check_stream_version(self, version: int = STREAM_VERSION) -> None:
        """StoreError unless the store's counts-mode cells were made by counts stream `version`
        (the spec's; stores from before the version was recorded hold version 1)."""
        made = self.meta().get("counts_stream_version", "1")
        has_counts = self.conn.execute("SELECT 1 FROM cells WHERE data = 'counts' LIMIT 1").fetchone()
        if has_counts and made != str(version):
            drawable = made in {str(v) for v in SUPPORTED_STREAM_VERSIONS}
            raise StoreError(f"store {str(self.path)!r} holds counts-mode cells made by counts stream "
                             f"version {made}; this spec draws version {version} (other data): rerun "
                             "the sweep into a new store (--out)"
                             + (f", or set counts_stream = {made} in the spec" if drawable else ""))

    def statuses(self) -> dict[str, str]:
        """key -> status of every stored cell."""
        return dict(self.conn.execute("SELECT key, status FROM cells").fetchall())

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def load(path: str | Path, current: bool = True) -> pd.DataFrame:
    """The cells table as a DataFrame (JSON columns decoded; each algorithm parameter of the
    cell also as a column `param_<name>`). `current`: only the cells of the spec last run.

    Sample-complexity cells have `samples_to_target` (NaN when censored: the run ended without
    reaching its target), `censored` (bool) and `n_star` (samples_to_target with censored runs
    as +inf: take medians of this column, see `problems.evaluation.metrics.median_n_star`)."""
    with Store(path, create=False) as st:
        query = "SELECT * FROM cells"
        if current:
            query += " WHERE key IN (SELECT key FROM spec_cells)"
        df = pd.read_sql_query(query + " ORDER BY key", st.conn)
    for col in JSON_COLUMNS:
        df[col] = [json.loads(v) if isinstance(v, str) else None for v in df[col]]
    # a store written before the disclosure rule: realized Poisson sizes out of the run facts
    from bench.disclosure import public_cells  # it reads this module's column lists

    df = public_cells(df)
    # The knob names as a tuple, not a list: a DataFrame can group by it (groupby("knobs")).
    df["knobs"] = [tuple(k) if k is not None else () for k in df["knobs"]]
    names = sorted({k for p in df["params"] if p for k in p})
    for k in names:
        df[f"param_{k}"] = [(p or {}).get(k) for p in df["params"]]
    for col in ("eps", "delta", "target_alpha"):
        df[col] = df[col].astype(float)
    # per-sample gradient evaluations of the run (NaN in cells stored before it was recorded)
    df["grad_evals"] = pd.to_numeric(df["grad_evals"], errors="coerce").astype(float)
    df["left_saddle"] = df["left_saddle"].astype("boolean")
    # Censoring has one representation: a finished sample-complexity run that never reached its
    # target has samples_to_target NaN (the stored value) and censored True; n_star is the same
    # number with censored runs as +inf, so a plain median counts them as "more than any budget"
    # instead of silently dropping them (which biases medians down).
    ok_target = (df["status"] == "ok") & df["target_alpha"].notna()
    df["censored"] = ok_target & df["samples_to_target"].isna()
    df["n_star"] = np.where(df["censored"], np.inf, df["samples_to_target"].astype(float))
    return df


def load_curves(path: str | Path, kind: str, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """key -> decoded curve of `kind` ("samples_to_accuracy" or "trajectory")."""
    with Store(path, create=False) as st:
        rows = st.conn.execute("SELECT key, data FROM curves WHERE kind = ?", (kind,)).fetchall()
        cells = {}
        if kind == "trajectory":  # what `public_trajectory` needs of each cell
            cols = {r[1] for r in st.conn.execute("PRAGMA table_info(cells)")}
            hidden = "evaluation_only" if "evaluation_only" in cols else "NULL"
            cells = {r[0]: {"algorithm": r[1], "n": r[2],
                            "params_used": json.loads(r[3]) if r[3] else None,
                            "evaluation_only": r[4]}
                     for r in st.conn.execute("SELECT key, algorithm, n, params_used, "
                                              f"{hidden} FROM cells")}
    wanted = None if keys is None else set(keys)
    out = {k: json.loads(v) for k, v in rows if wanted is None or k in wanted}
    if cells:
        from bench.disclosure import public_trajectory

        out = {k: public_trajectory(cells[k], v) if k in cells else v for k, v in out.items()}
    return out


def load_meta(path: str | Path) -> dict[str, str]:
    with Store(path, create=False) as st:
        return st.meta()


def open_store_data(path: str | Path) -> StoreData:
    """A store as the analysis reads it: its spec (parsed again from the recorded text), its
    cells and a curve loader."""
    from bench.config import parse_spec

    path = str(path)
    meta = load_meta(path)
    if "spec_text" not in meta:
        raise ValueError(f"store {path!r} has no spec recorded: run `dprates sweep` into it first")
    spec = parse_spec(meta["spec_text"], source=meta.get("spec_source", path))
    controls, refused = _lent_controls(path, spec)
    return StoreData(spec=spec, cells=load(path), path=path,
                     load_curves=lambda kind, keys=None: load_curves(path, kind, keys),
                     controls=controls, controls_refused=refused)


def _lent_controls(path: str, spec: Any) -> tuple[pd.DataFrame | None, tuple[str, ...]]:
    """The eps = inf cells the stores of `spec.controls_from` lend (beside `path`: results/<name>
    .sqlite). A store lends only when its cells are runs this spec would have made: the same
    calibration, data mode and counts stream (the same rules on data of the same law; then its
    eps = inf cell at a matching target, instance, d, budget and knob setting is a control of
    this spec's point, `analysis.verdict_engine.flags`: a non-private run reads no delta, and the
    share is a ratio of medians, so the seeds need not pair). Anything else lends nothing and
    says why."""
    from bench.config import parse_spec

    frames, refused = [], []
    for name in getattr(spec, "controls_from", ()):
        other = Path(path).with_name(f"{name}.sqlite")
        if not other.is_file():
            refused.append(f"controls_from {name!r}: no store {str(other)!r}")
            continue
        meta = load_meta(str(other))
        if "spec_text" not in meta:
            refused.append(f"controls_from {name!r}: store {str(other)!r} has no spec")
            continue
        lender = parse_spec(meta["spec_text"], source=meta.get("spec_source", str(other)))
        differs = [k for k in ("calibration", "data", "counts_stream")
                   if getattr(lender, k) != getattr(spec, k)]
        if differs:
            verb = "differs" if len(differs) == 1 else "differ"
            refused.append(f"controls_from {name!r}: its {', '.join(differs)} {verb} from this "
                           "spec's, so its cells are not this spec's controls")
            continue
        cells = load(str(other))
        ok = (cells["status"] == "ok") & ~np.isfinite(cells["eps"].to_numpy(float))
        if "target_alpha" in cells:
            ok &= cells["target_alpha"].notna()
        frames.append(cells[ok].assign(control_store=name))
    controls = pd.concat(frames, ignore_index=True) if frames else None
    return controls, tuple(refused)
