"""Tables a reader takes away: the claims summary (one row per declared claim, the same rows as
a report's page 1), fit tables as displayed, and their exports (markdown, booktabs LaTeX, CSV).

No plotting here (so `dprates fit` and `dprates claims` do not import matplotlib).

The claims summary decides each claim from one fit row, ranked so that a row that says
something wins: in regime before not in regime (the gate, `analysis.verdict_engine.verdicts.apply_gate`), the
fit's declared mode before the other (theory mode where a CSV does not say), a hard instance
before a benign one (the claims are worst-case bounds that bind on hard instances), a row
whose measured claim link tells the claim from its rival's (issue 70, item 3: the deepest decade
of a two-decade window clear of the rival's +- m, `link_excludes_rival`) before one that does
not, a decisive verdict before "inconclusive", then the table's order (the stores' or the CSV's:
`make reference` lists the headline first). The other rows that measure the
claim are counted beside it ("fits: 2 of 6 in regime").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from algorithms.privacy.audit.ledger import FAILED_MARK, bracket
from analysis.report.latex import to_latex
from analysis.report.methods_text import CLAIMS_LEGEND
from analysis.report.verdict_cells import finite, resolution_text, rules_text
from analysis.verdict_engine.verdicts import NOT_IN_REGIME, NOT_MEASURED, OUT_OF_REACH, apply_gate

#: What "faster / slower than claimed" means for each (view, x): said on every fit table, so
#: that a weak eps dependence reading "slower" against privacy and "faster" against eps is read
#: as the one fact it is (issue 32, point 4). See analysis.verdict_engine.verdicts.FAVOURABLE for the signs.
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

#: The verdict of a fit row whose algorithm declares no claim on its metric (an ablation such as
#: tree_spider): there is nothing to be inconclusive about (issue 46, item 8).
NO_CLAIM = "no claim"

#: Every verdict the tables show, in the order the counts list them, with its row colour (report
#: page 1). A verdict that extends one of these ("consistent up to logs (log^2 n)") takes the
#: colour and place of the longest one it starts with (`verdict_key`).
VERDICT_COLOURS = {
    "consistent": "#d9f0d3",
    "follows its rules, whose asymptote is the claim": "#d9f0d3",
    "follows its rules, whose asymptote is not the claim": "#fde0dd",
    "not refuted by the O~ claim": "#e5f5e0",
    "approaches its bound from below": "#edf8e9",  # the fifth edition's, for its CSVs read back
    "the O~ claim is untestable on this window": "#f0f0f0",
    "exceeds its bound": "#f9a88f",
    "slower than its rules": "#fcbba1",
    "faster than its rules": "#c6dbef",
    "design too short": "#fff2cc",
    "faster than claimed": "#deebf7",
    "faster than claimed even with logs": "#c6dbef",
    "slower than claimed": "#fde0dd",
    "slower than claimed even with logs": "#fcbba1",
    "inconclusive": "#f0f0f0",
    "consistent up to logs": "#e5f5e0",  # the fourth edition's names, for its CSVs read back
    "consistent up to the rules' log factors": "#e5f5e0",
    NOT_IN_REGIME: "#fff2cc",
    OUT_OF_REACH: "#fff2cc",
    NOT_MEASURED: "#ffffff",
    NO_CLAIM: "#f7f7f7",
    FAILED_MARK: "#f4a6a6",
}
#: Verdicts that decide nothing about a claim (ranked after a decisive one by `summary_rank`).
UNDECIDED = ("inconclusive", NO_CLAIM, NOT_MEASURED, NOT_IN_REGIME, OUT_OF_REACH, "design too short",
             "the O~ claim is untestable on this window")


def verdict_key(verdict: Any) -> str:
    """The entry of VERDICT_COLOURS `verdict` is (the longest it starts with), else itself."""
    v = str(verdict)
    keys = [k for k in VERDICT_COLOURS if v.startswith(k)]
    return max(keys, key=len) if keys else v


def verdict_colour(verdict: Any, privacy: Any = "") -> str:
    """A row's colour: red where its privacy check FAILED, else its verdict's."""
    if str(privacy).startswith(FAILED_MARK):
        return VERDICT_COLOURS[FAILED_MARK]
    return VERDICT_COLOURS.get(verdict_key(verdict), "#ffffff")


def claimless(algorithm: Any, metric: Any = None) -> bool:
    """True where `algorithm` is registered and declares no claim on `metric` (on any metric
    when `metric` is missing); a name not registered (a plugin not loaded) is not claimless."""
    from algorithms import get_algorithm

    try:
        claims = getattr(get_algorithm(str(algorithm)), "claims", ()) or ()
    except (KeyError, ValueError):
        return False
    if not isinstance(metric, str) or not metric:
        return not claims
    return not any(c.metric == metric for c in claims)


def display_verdict(row: Mapping[str, Any]) -> str:
    """A fit row's verdict as the tables show it: "no claim" where the row has no predicted
    exponent and its algorithm declares no claim on its metric (never "inconclusive")."""
    verdict = str(row.get("verdict", ""))
    if verdict == NO_CLAIM or finite(row.get("predicted")):
        return verdict
    return NO_CLAIM if claimless(row.get("algorithm"), row.get("metric")) else verdict


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
        "verdict": [display_verdict(r) for r in claims.to_dict("records")],
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


def summary_rank(r: pd.Series) -> tuple:
    in_regime = str(r.get("regime", "in regime")) == "in regime"
    declared = r.get("declared")
    if isinstance(declared, str):
        declared = declared.strip().lower() == "true"
    if declared is None or (isinstance(declared, float) and math.isnan(declared)):
        declared = r.get("mode") == "theory"
    lo, hi = r.get("ci_low"), r.get("ci_high")
    finite_ci = finite(lo) and finite(hi)
    verdict = display_verdict(r)
    measured = verdict not in (NOT_MEASURED, NO_CLAIM, "") and finite_ci
    told = r.get("link_excludes_rival")
    told = told.strip().lower() == "true" if isinstance(told, str) else told is True or told == 1
    return (not measured, not in_regime, not bool(declared), r.get("character") != "hard",
            not told, verdict_key(verdict) in UNDECIDED, r.get("_order", 0))


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
            rows.append({**base, "claimed": "-", "measured": "-", "rules": "-",
                         "against its rules": "-", "resolution": "-", "regime": "-",
                         "verdict": NOT_MEASURED, "decided by": "no declared fit", "fits": "0",
                         "privacy": note})
            continue
        records = [{**r, "_order": i} for i, r in enumerate(hits.to_dict("records"))]
        ranked = sorted(records, key=lambda r: summary_rank(pd.Series(r)))
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
                                        best.get("binding_n"), best.get("rules_binding_n"))
        joint = best.get("claim_verdict")
        if isinstance(joint, str) and joint and str(best.get("regime", "")) == "in regime":
            # one model per claim (issue 42, item 5): the verdict of all its in-regime fits
            verdict = joint
            fits_note = best.get("claim_fits")
            if isinstance(fits_note, str) and fits_note.count(":") > 1:
                decided += f"; joint with its other fits ({fits_note})"
        rows.append({**base, "claimed": _num(best.get("predicted")), "measured": measured,
                     "rules": _num(best.get("rules_predicted")),
                     "against its rules": rules_text(best), "resolution": resolution_text(best),
                     "regime": regime, "verdict": verdict,
                     "decided by": decided, "fits": f"{n_in} of {len(ranked)} in regime",
                     "privacy": note, "view": best.get("view"), "x": best.get("x"),
                     "exponent": best.get("exponent"), "ci_low": lo, "ci_high": hi,
                     "predicted": best.get("predicted"), "margin": best.get("margin"),
                     "rules_ci_low": best.get("rules_residual_low"),
                     "rules_ci_high": best.get("rules_residual_high")})
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
                     "measured": "-", "rules": "-", "against its rules": "-", "resolution": "-",
                     "regime": "-", "verdict": FAILED_MARK,
                     "decided by": "its privacy check (algorithms.privacy.audit.plugin_checks)",
                     "fits": "-", "privacy": note})
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["algorithm"] not in failed, i))
    return pd.DataFrame([rows[i] for i in order])


def reach_verdict(verdict: str, regime: str, binding_n: Any,
                  rules_binding_n: Any = None) -> tuple[str, str]:
    """A claim's verdict and regime text with where it binds (`algorithms.regime_forecast`):
    a claim no fit measures in regime is "out of reach" when its own bound, constants at 1,
    stays above a tenth of the start's metric up to n = 1e12 (the counts streams' budget), or
    when the claim binds earlier but the algorithm's own rules' bound (`rules_binding_n`,
    `analysis.verdict_engine.rules_curve.rules_binding_n`) does not before that budget ("out of
    reach for this algorithm", e.g. an output that stalls at ~1/log n); it stays "not in
    regime" with the size it binds from otherwise (the window then saturates for the
    algorithm's constants, not the claim's)."""
    from algorithms.regime_forecast import N_BUDGET, describe_n

    if verdict != NOT_IN_REGIME or not isinstance(binding_n, (int, float)) or math.isnan(binding_n):
        return verdict, regime
    if binding_n > N_BUDGET:
        return OUT_OF_REACH, (f"out of reach: the claim's bound (constants at 1) first falls below "
                              f"a tenth of the start's metric at n = {describe_n(binding_n)}")
    if isinstance(rules_binding_n, (int, float)) and not math.isnan(rules_binding_n) \
            and rules_binding_n > N_BUDGET:
        at = (f"n = {describe_n(rules_binding_n)}" if math.isfinite(rules_binding_n)
              else "no n up to 1e40")
        return OUT_OF_REACH, (f"out of reach for this algorithm: the claim binds from n = "
                              f"{describe_n(binding_n)}, but the algorithm's own rules' bound "
                              f"first falls below a tenth of the start's metric at {at}")
    own = ""
    if isinstance(rules_binding_n, (int, float)) and math.isfinite(rules_binding_n) \
            and rules_binding_n > binding_n:
        # the algorithm's own rules reach the regime later than the stylized claim: say where
        own = f", this algorithm's own rules' bound from n = {describe_n(rules_binding_n)}"
    return verdict, f"{regime}; the claim binds from n = {describe_n(binding_n)}{own}"


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
    """How many claims got each verdict ("not in regime" counted as such, never folded in), by
    its name (the "by X", "(accepts a..b)" or "(Rx)" a row adds left out), in the order of
    VERDICT_COLOURS (a verdict it does not name last)."""
    order = {k: i for i, k in enumerate(VERDICT_COLOURS)}
    counts = summary["verdict"].astype(str).map(verdict_key).value_counts()
    keys = sorted(counts.index, key=lambda k: (order.get(verdict_key(k), len(order)), k))
    return {str(k): int(counts[k]) for k in keys}


def shown_claims(summary: pd.DataFrame, all_claims: bool = False) -> tuple[pd.DataFrame, int]:
    """The rows page 1 and the markdown / LaTeX claims tables show by default (issue 46, item 3):
    every measured claim (any verdict but "not measured") and every row of an algorithm whose
    privacy check FAILED (first, as `claims_summary` orders them); with `all_claims` every row.
    Returns (rows, how many claims are left out)."""
    if all_claims or not len(summary):
        return summary, 0
    failed = (summary["privacy"].astype(str).str.startswith(FAILED_MARK) if "privacy" in summary
              else pd.Series(False, index=summary.index))
    keep = (summary["verdict"].astype(str) != NOT_MEASURED) | failed
    return summary[keep], int((~keep).sum())


def hidden_claims_line(hidden: int, total: int, command: str) -> str:
    """The line under a table that leaves out the claims no fit measures: how many, and how to
    list them."""
    return (f"{hidden} of {total} declared claims are not measured by these data and not listed: "
            f"{command} lists every claim (`dprates claims` lists the claims themselves).")


# ----- exports -------------------------------------------------------------------------------

def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured pipe table ("|" inside a cell escaped)."""
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


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
EXPORT_COLUMNS = ["algorithm", "claim", "source", "claimed", "measured", "rules",
                  "against its rules", "verdict", "resolution", "regime", "decided by", "privacy"]


def summary_for_export(summary: pd.DataFrame, numeric: bool = False,
                       short_sources: bool = False) -> pd.DataFrame:
    """The summary's reader-facing columns (the privacy column only where a note exists);
    `numeric` (CSV): also the deciding fit's x, exponent, ci_low, ci_high and predicted slope
    as numbers; `short_sources` (LaTeX): the source as page 1 gives it (the theorem, then
    "Lead et al. YEAR, arXiv ID")."""
    cols = [*EXPORT_COLUMNS, *(["x", "predicted", "exponent", "ci_low", "ci_high"] if numeric else [])]
    out = summary[[c for c in cols if c in summary]].copy()
    if short_sources and "short source" in summary:
        out["source"] = summary["short source"]
    if "privacy" in out and not out["privacy"].astype(str).str.strip().astype(bool).any():
        out = out.drop(columns="privacy")
    return out


def summary_notes(summary: pd.DataFrame) -> list[str]:
    """The lines under an exported claims table: the counts and what faster / slower mean."""
    counts = verdict_counts(summary)
    head = (f"{len(summary)} claims: " + ", ".join(f"{counts[k]} {k}" for k in counts)
            + ". " + CLAIMS_LEGEND)
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
