"""Tables a reader takes away: the claims summary (one row per declared claim, the same rows as
a report's page 1), fit tables as displayed, and their exports (markdown, booktabs LaTeX, CSV).

No plotting here (so `dprates fit` and `dprates claims` do not import matplotlib).

The claims summary decides each claim from one fit row, ranked so that a row that says
something wins: in regime before not in regime (the gate, `analysis.verdicts.apply_gate`), the
fit's declared mode before the other (theory mode where a CSV does not say), a hard instance
before a benign one (the claims are worst-case bounds that bind on hard instances), a
decisive verdict before "inconclusive", then the table's order (the stores' or the CSV's:
`make reference` lists the headline first). The other rows that measure the
claim are counted beside it ("fits: 2 of 6 in regime").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.privacy_checks.ledger import FAILED_MARK, bracket
from analysis.verdicts import NOT_IN_REGIME, NOT_MEASURED, OUT_OF_REACH, apply_gate

#: What "faster / slower than claimed" means for each (view, x): said on every fit table, so
#: that a weak eps dependence reading "slower" against privacy and "faster" against eps is read
#: as the one fact it is (issue 32, point 4). See analysis.verdicts.FAVOURABLE for the signs.
DIRECTION = {
    ("error", "privacy"): "x = sqrt(d)/(n eps) -> 0 (large n): faster = exponent above the "
                          "claim's, the error falls faster as x shrinks",
    ("error", "n"): "x = n -> inf: faster = exponent below the claim's (more negative), the error "
                    "falls faster as n grows",
    ("error", "eps"): "x = eps -> 0 (strong privacy): faster = exponent above the claim's (less "
                      "negative), the error grows more slowly as eps shrinks; a weak eps "
                      "dependence reads faster here and slower against x = privacy",
    ("error", "d"): "x = d -> inf: faster = exponent below the claim's, the error grows more "
                    "slowly with d",
    ("error", "rank"): "x = rank -> inf: faster = exponent below the claim's, the error grows "
                       "more slowly with the rank",
    ("sample_complexity", "alpha"): "x = target alpha -> 0: faster = slope of log n* above the "
                                    "claim's (less negative), n* grows more slowly as alpha shrinks",
    ("sample_complexity", "eps"): "x = eps -> 0 (strong privacy): faster = slope above the "
                                  "claim's (less negative), n* grows more slowly as eps shrinks",
    ("sample_complexity", "d"): "x = d -> inf: faster = slope below the claim's, n* grows more "
                                "slowly with d",
    ("sample_complexity", "privacy"): "x = sqrt(d)/(n eps): faster = slope below the claim's",
}

#: Verdict -> (face colour, meaning) for the coloured tables (report page 1).
VERDICT_COLOURS = {
    "consistent": "#d9f0d3",
    "consistent up to the rules' log factors": "#e5f5e0",
    "faster than claimed": "#deebf7",
    "slower than claimed": "#fde0dd",
    "inconclusive": "#f0f0f0",
    FAILED_MARK: "#f4a6a6",
    NOT_IN_REGIME: "#fff2cc",
    OUT_OF_REACH: "#fff2cc",
    NOT_MEASURED: "#ffffff",
}

#: Columns of the claims summary, in order.
SUMMARY_COLUMNS = ["algorithm", "claim", "source", "claimed", "measured", "rules", "regime",
                   "verdict", "decided by", "fits", "privacy"]


def direction_lines(view_x: Sequence[tuple[str, str]]) -> list[str]:
    """One line per distinct (view, x): what faster / slower than claimed mean there."""
    out, seen = [], set()
    for key in view_x:
        if key in seen:
            continue
        seen.add(key)
        text = DIRECTION.get(tuple(key))
        if text:
            view = "samples" if key[0] == "sample_complexity" else key[0]
            out.append(f"{view} view, {text}.")
    return out


def _num(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    try:
        return f"{float(v):.{digits}g}"
    except (TypeError, ValueError):
        return str(v)


def claims_display(claims: pd.DataFrame) -> pd.DataFrame:
    """A fit table as strings (the PDF's claims pages and `dprates fit`)."""
    f = _num
    regime = claims["regime"] if "regime" in claims else pd.Series("", index=claims.index)
    out = pd.DataFrame({
        "fit": claims["fit"],
        "where": claims["where"] if "where" in claims else "",
        "algorithm": [a if not isinstance(pv, str) or not pv else f"{a} [{bracket(pv)}]"
                      for a, pv in zip(claims["algorithm"],
                                       claims.get("privacy", pd.Series("", claims.index)),
                                       strict=True)],
        "problem": claims["problem"],
        "view": claims["view"].str.replace("sample_complexity", "samples"),
        "mode": claims["mode"], "x": claims["x"],
        "predicted": [f(v) for v in claims["predicted"]],
        "rules": [f(v) for v in claims.get("rules_predicted", pd.Series(math.nan, claims.index))],
        "exponent": [f(v) for v in claims["exponent"]],
        "CI": [f"[{f(lo)}, {f(hi)}]" for lo, hi in zip(claims["ci_low"], claims["ci_high"], strict=True)],
        "window": [f"[{w[0]:g}, {w[1]:g}]" if isinstance(w, (tuple, list)) else
                   (str(w).replace("..", ", ").join("[]") if isinstance(w, str) and w else "-")
                   for w in claims["window"]],
        "verdict": claims["verdict"],
        "flags": [",".join(sorted({p.split(":")[0] for p in (fl if isinstance(fl, str) else "").split("; ")
                                   if p}))
                  for fl in claims["flags"]],
    })
    if (regime.astype(str).str.startswith("no theory cell")).any():
        out["flags"] = [fl or ("no theory cell" if str(r).startswith("no theory") else "")
                        for fl, r in zip(out["flags"], regime, strict=True)]
    if "two_term_p" in claims and claims["two_term_p"].notna().any():
        out["two-term p"] = ["-" if not (isinstance(p, float) and math.isfinite(p)) else
                             f"{p:.2f} [{lo:.2f}, {hi:.2f}] {v.replace(' than claimed', '')}"
                             for p, lo, hi, v in
                             zip(claims["two_term_p"], claims["two_term_ci_low"],
                                 claims["two_term_ci_high"], claims["two_term_verdict"].fillna(""),
                                 strict=True)]
    extra = [c for c in ("d", "eps", "n", "delta") if c in claims and claims[c].notna().any()
             and claims[c].nunique() > 1]
    for c in extra:
        out.insert(4, c, [f(v) for v in claims[c]])
    if not out["where"].astype(bool).any():
        out = out.drop(columns="where")
    return out


def _rank(r: pd.Series) -> tuple:
    in_regime = str(r.get("regime", "in regime")) == "in regime"
    declared = r.get("declared")
    if isinstance(declared, str):
        declared = declared.strip().lower() == "true"
    if declared is None or (isinstance(declared, float) and math.isnan(declared)):
        declared = r.get("mode") == "theory"
    lo, hi = r.get("ci_low"), r.get("ci_high")
    finite_ci = finite(lo) and finite(hi)
    verdict = str(r.get("verdict", ""))
    measured = verdict not in (NOT_MEASURED, "") and finite_ci
    return (not measured, not in_regime, not bool(declared), r.get("character") != "hard",
            verdict == "inconclusive", r.get("_order", 0))


def claims_summary(fits: pd.DataFrame, privacy: Mapping[tuple[str, str], str] | None = None
                   ) -> pd.DataFrame:
    """One row per declared claim (`algorithms.all_claims`), decided by the fit row ranked first
    (see the module docstring), with "not measured" rows for claims no fit measures. `fits`:
    a fit table (`claims_table`, or a claims CSV read by `read_fits`); `privacy`: an optional
    note per (algorithm, spec) or per algorithm ((algorithm, "")), shown in the privacy column
    (the hook for marking cells whose privacy was not verified)."""
    from algorithms import all_claims

    fits = apply_gate(fits) if len(fits) else fits
    privacy = dict(privacy or {})
    rows = []
    for c in all_claims():
        base = {"algorithm": c.algorithm, "claim": f"{c.metric} ~ {c.rate}",
                "source": f"{c.paper}, {c.where}", "short source": short_source(c.paper, c.where),
                "setting": c.setting, "metric": c.metric}
        hits = pd.DataFrame()
        if len(fits) and "metric" in fits:
            hits = fits[(fits["algorithm"] == c.algorithm) & (fits["metric"] == c.metric)]
        note = privacy.get((c.algorithm, ""), "")
        if hits.empty:
            rows.append({**base, "claimed": "-", "measured": "-", "rules": "-", "regime": "-",
                         "verdict": NOT_MEASURED, "decided by": "no declared fit", "fits": "0",
                         "privacy": note})
            continue
        records = [{**r, "_order": i} for i, r in enumerate(hits.to_dict("records"))]
        ranked = sorted(records, key=lambda r: _rank(pd.Series(r)))
        best = ranked[0]
        n_in = sum(str(r.get("regime", "in regime")) == "in regime" for r in ranked)
        lo, hi = best.get("ci_low"), best.get("ci_high")
        measured = (f"{_num(best.get('exponent'))} [{_num(lo)}, {_num(hi)}]"
                    if finite(lo) and finite(hi) else "-")
        if best["verdict"] in (NOT_IN_REGIME, OUT_OF_REACH) and measured != "-":
            measured = f"({measured})"  # a saturated window's slope: not a measurement of the claim
        where = ", ".join(f"{k} {float(best.get(k)):g}" for k in ("eps", "d")
                          if k != best.get("x") and isinstance(best.get(k), (int, float))
                          and math.isfinite(best.get(k)))
        decided = (f"{best.get('spec', '')}/{best.get('fit', '')}, {best.get('mode', '')}, "
                   f"{best.get('problem', '')}, x = {best.get('x', '')}"
                   + (f", {where}" if where else ""))
        note = privacy.get((c.algorithm, str(best.get("spec", ""))), note)
        verdict, regime = reach_verdict(best["verdict"], str(best.get("regime", "in regime")),
                                        best.get("binding_n"))
        rows.append({**base, "claimed": _num(best.get("predicted")), "measured": measured,
                     "rules": _num(best.get("rules_predicted")),
                     "regime": regime, "verdict": verdict,
                     "decided by": decided, "fits": f"{n_in} of {len(ranked)} in regime",
                     "privacy": note, "view": best.get("view"), "x": best.get("x"),
                     "exponent": best.get("exponent"), "ci_low": lo, "ci_high": hi,
                     "predicted": best.get("predicted")})
    return _privacy_failures_first(rows, privacy, {c.algorithm for c in all_claims()})


def _privacy_failures_first(rows: list[dict], privacy: Mapping[tuple[str, str], str],
                            claimed: set[str]) -> pd.DataFrame:
    """The summary with a row for each algorithm whose privacy check FAILED and that declares
    no claim (a plugin: it would otherwise be in no table), and every row of such an algorithm
    first, so page 1 and every export open with the failure."""
    failed = {a for (a, _), note in privacy.items() if str(note).startswith(FAILED_MARK)}
    for a in sorted(failed - claimed):
        note = next(v for (alg, _), v in privacy.items() if alg == a and str(v).startswith(FAILED_MARK))
        rows.append({"algorithm": a, "claim": "(declares no claim)", "source": "-",
                     "short source": "-", "setting": "-", "metric": "-", "claimed": "-",
                     "measured": "-", "rules": "-", "regime": "-", "verdict": FAILED_MARK,
                     "decided by": "its privacy check (analysis.privacy_checks.plugin_checks)",
                     "fits": "-", "privacy": note})
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["algorithm"] not in failed, i))
    return pd.DataFrame([rows[i] for i in order])


def reach_verdict(verdict: str, regime: str, binding_n: Any) -> tuple[str, str]:
    """A claim's verdict and regime text with where it binds (`analysis.regime_forecast`):
    a claim no fit measures in regime is "out of reach" when its own bound, constants at 1,
    stays above a tenth of the start's metric up to n = 1e12 (the counts streams' budget), and
    stays "not in regime" with the size it binds from otherwise (the window then saturates for
    the algorithm's constants, not the claim's)."""
    from analysis.regime_forecast import N_BUDGET, describe_n

    if verdict != NOT_IN_REGIME or not isinstance(binding_n, (int, float)) or math.isnan(binding_n):
        return verdict, regime
    if binding_n > N_BUDGET:
        return OUT_OF_REACH, (f"out of reach: the claim's bound (constants at 1) first falls below "
                              f"a tenth of the start's metric at n = {describe_n(binding_n)}")
    return verdict, f"{regime}; the claim binds from n = {describe_n(binding_n)}"


def short_source(paper: str, where: str) -> str:
    """The theorem first, then the paper as "Lead et al. YEAR, arXiv ID" (page 1's cell, where
    a full author list would push the theorem out of view)."""
    import re

    arxiv = re.search(r"arXiv[: ]*(\d{4}\.\d{4,5})", paper)
    year = re.search(r"\b(19|20)\d\d\b", paper)
    lead = paper.split(",")[0].split(" (")[0].strip()
    if " " not in lead and year:
        lead = f"{lead} et al. {year.group(0)}"
    elif year and year.group(0) not in lead:
        lead = f"{lead} {year.group(0)}"
    ref = lead + (f", arXiv {arxiv.group(1)}" if arxiv and arxiv.group(1) not in lead else "")
    return f"{where} ({ref})"


def verdict_counts(summary: pd.DataFrame) -> dict[str, int]:
    """How many claims got each verdict ("not in regime" counted as such, never folded in)."""
    return {str(k): int(v) for k, v in summary["verdict"].value_counts().items()}


# ----- exports -------------------------------------------------------------------------------

def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured pipe table ("|" inside a cell escaped)."""
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}"}


def tex_escape(text: Any) -> str:
    """Text as LaTeX source: every special character escaped."""
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def to_latex(table: pd.DataFrame, caption: str = "", label: str = "", notes: Sequence[str] = (),
             wide: Sequence[str] = (), standalone: bool = False) -> str:
    """A booktabs table (\\toprule / \\midrule / \\bottomrule, no vertical rules) in a table*
    float, \\small; columns named in `wide` are set as wrapped p{} columns. Needs only the
    booktabs package (and array for p{}); `standalone` wraps it in a compilable document."""
    cols = list(table.columns)
    spec = "".join("p{3.2cm}" if c in wide else "l" for c in cols)
    body = [r"\begin{table*}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
            rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
            " & ".join(tex_escape(c) for c in cols) + r" \\", r"\midrule"]
    for row in table.itertuples(index=False):
        body.append(" & ".join(tex_escape(v) for v in row) + r" \\")
    body.append(r"\bottomrule")
    body.append(r"\end{tabular}")
    if caption or notes:
        text = " ".join([tex_escape(caption), *(tex_escape(n) for n in notes)]).strip()
        body.append(rf"\caption{{{text}}}")
    if label:
        body.append(rf"\label{{{label}}}")
    body.append(r"\end{table*}")
    tex = "\n".join(body) + "\n"
    if standalone:
        tex = ("\\documentclass{article}\n\\usepackage[a4paper,landscape,margin=1.5cm]{geometry}\n"
               "\\usepackage{booktabs}\n\\usepackage{array}\n\\begin{document}\n" + tex
               + "\\end{document}\n")
    else:
        tex = "% requires \\usepackage{booktabs} and \\usepackage{array}\n" + tex
    return tex


def export(table: pd.DataFrame, fmt: str, *, caption: str = "", label: str = "",
           notes: Sequence[str] = (), wide: Sequence[str] = (), standalone: bool = False) -> str:
    """`table` as markdown, latex or csv text."""
    if fmt == "markdown":
        return to_markdown(table) + "".join(f"\n{n}\n" for n in notes)
    if fmt == "latex":
        return to_latex(table, caption=caption, label=label, notes=notes, wide=wide,
                        standalone=standalone)
    if fmt == "csv":
        return table.to_csv(index=False)
    raise ValueError(f"--format={fmt!r} is invalid: must be one of markdown, latex, csv")


#: The claims summary's columns in the exports (the `setting`, `metric`, `view` helpers dropped).
EXPORT_COLUMNS = ["algorithm", "claim", "source", "claimed", "measured", "rules", "verdict",
                  "regime", "decided by", "privacy"]


def summary_for_export(summary: pd.DataFrame, numeric: bool = False) -> pd.DataFrame:
    """The summary's reader-facing columns (the privacy column only where a note exists);
    `numeric` (CSV): also the deciding fit's x, exponent, ci_low, ci_high and predicted slope
    as numbers."""
    cols = [*EXPORT_COLUMNS, *(["x", "predicted", "exponent", "ci_low", "ci_high"] if numeric else [])]
    out = summary[[c for c in cols if c in summary]].copy()
    if "privacy" in out and not out["privacy"].astype(str).str.strip().astype(bool).any():
        out = out.drop(columns="privacy")
    return out


def summary_notes(summary: pd.DataFrame) -> list[str]:
    """The lines under an exported claims table: the counts and what faster / slower mean."""
    counts = verdict_counts(summary)
    order = ["consistent", "consistent up to the rules' log factors", "faster than claimed",
             "slower than claimed", "inconclusive", NOT_IN_REGIME, OUT_OF_REACH, NOT_MEASURED,
             FAILED_MARK]
    head = (f"{len(summary)} claims: " + ", ".join(f"{counts[k]} {k}" for k in order if k in counts)
            + ". Measured: slope [95% CI] of the fit that decides the claim; claimed: the slope "
            "its O~ rate predicts; rules: the slope of the algorithm's own rules (log factors "
            "included). A fit that fails the regime gate (ceiling or floor) is \"not in regime\" "
            "with the reason, never consistent / slower / faster; its slope is shown in "
            "parentheses: the saturation's, not a measurement of the claim.")
    keys = [(v, x) for v, x in zip(summary.get("view", []), summary.get("x", []), strict=True)
            if isinstance(v, str)]
    return [*privacy_failure_lines(summary), head, *direction_lines(keys)]


def privacy_failure_lines(summary: pd.DataFrame) -> list[str]:
    """One line per algorithm whose privacy check FAILED (a plugin swept with
    --allow-unverified): said above every exported claims table and on page 1."""
    if "privacy" not in summary:
        return []
    seen: dict[str, str] = {}
    for a, note in zip(summary["algorithm"], summary["privacy"], strict=True):
        if str(note).startswith(FAILED_MARK):
            seen.setdefault(str(a), str(note))
    return [f"PRIVACY FAILED: {a}: {note.removeprefix(FAILED_MARK).lstrip(': ')} (its cells ran "
            "with --allow-unverified: its results are not private results)"
            for a, note in seen.items()]


def finite(v: Any) -> bool:
    return isinstance(v, (int, float, np.floating)) and math.isfinite(float(v))
