"""LaTeX export of the tables (`dprates claims --measured --format latex`, `dprates fit --format
latex`): paper-ready booktabs source (issue 46, item 7).

* Rates in math mode: the claims' ASCII rates ("n^-1/3 + (sqrt(d)/(n eps))^(3/7)", "||grad F||",
  "Omega(sqrt(d log(1/delta))/(n eps))") are parsed (`rate_tex`) into
  `n^{-1/3} + (\\sqrt{d}/(n \\varepsilon))^{3/7}`; a claim cell "metric ~ rate" becomes one
  formula (`claim_tex`); numbers and intervals are set as math (minus signs, 1.2e+04 as
  1.2 x 10^4). Rate fragments inside prose (notes, sources) are converted where they parse
  (`text_tex`); everything else is escaped text (`tex_escape`: `_ % & # $ { } ~ ^ \\ | < >`),
  so no raw `^`, `_` or `||` is left outside math.
* Widths: short columns are `l`; long ones are ragged-right `p{}` columns sharing what the
  short ones leave of `\\linewidth` by their content (`_column_spec`); `_` in names may break.
* Long cells of a footnote column (the regime reason, ~280 characters) are set as a short label
  with a number, the reason once below the table (`footnote_columns`).

Needs booktabs and array only (no amsmath); `standalone` is a complete document whose table
(a longtable there) continues on the next page when it is longer than one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def tex_escape(text: Any) -> str:
    """Text as LaTeX source: every special character escaped."""
    return "".join(_TEX.get(ch, ch) for ch in str(text))


# ----- rates as math ---------------------------------------------------------------------------

_WORDS = {"eps": r"\varepsilon", "epsilon": r"\varepsilon", "delta": r"\delta", "alpha": r"\alpha",
          "lambda": r"\lambda", "rho": r"\rho", "sigma": r"\sigma", "mu": r"\mu", "kappa": r"\kappa",
          "Omega": r"\Omega", "Theta": r"\Theta", "grad": r"\nabla", "hess": r"\nabla^2",
          "log": r"\log", "min": r"\min", "max": r"\max", "exp": r"\exp", "inf": r"\infty",
          "polylog": r"\mathrm{polylog}\,"}
_SYMBOLS = {"+": "+", "-": "-", "/": "/", "*": r"\cdot ", ",": ",", "=": "=", "<": "<", ">": ">",
            "~": r"\sim ", ".": ".", "'": "'", "[": "[", "]": "]", ":": ":", "|": "|",
            "||": r"\|", "<=": r"\le ", ">=": r"\ge ", "->": r"\to "}
_TOKEN = re.compile(r"\s+|\|\||<=|>=|->|\d+(?:\.\d+)?|[A-Za-z]+|.")

#: The metrics of the claims (`algorithms.claims`) as math.
METRIC_TEX = {"alpha_sosp": r"\alpha_{\mathrm{SOSP}}", "emp_alpha_sosp": r"\alpha_{\mathrm{SOSP}}(F_S)",
              "grad_norm": r"\|\nabla F\|", "emp_grad_norm": r"\|\nabla F_S\|",
              "excess_risk": r"F - F^{\star}"}


class _Unparsed(ValueError):
    pass


def _group(toks: list[str], i: int) -> tuple[str, int]:
    """The math of toks[i] == "(" ... its matching ")"; returns (inner, index after ")")."""
    inner, i = _seq(toks, i + 1, ")")
    if i >= len(toks):
        raise _Unparsed("unbalanced (")
    return inner, i + 1


def _script(toks: list[str], i: int) -> tuple[str, int]:
    """What follows ^ or _: a (group), or -1/3, 2, d, -."""
    if i >= len(toks):
        raise _Unparsed("nothing after ^ or _")
    if toks[i] == "(":
        return _group(toks, i)
    out = ""
    if toks[i] in "+-":
        out, i = toks[i], i + 1
        if i >= len(toks) or not re.fullmatch(r"\d+(?:\.\d+)?|[A-Za-z]+", toks[i]):
            return out, i  # lambda_-: a bare sign
    if i >= len(toks) or not re.fullmatch(r"\d+(?:\.\d+)?|[A-Za-z]+", toks[i]):
        raise _Unparsed("bad exponent")
    word = toks[i]
    out += _WORDS.get(word, word if len(word) == 1 or word.isdigit() or "." in word
                      else rf"\mathrm{{{word}}}")
    i += 1
    if i + 1 < len(toks) and toks[i] == "/" and toks[i + 1].isdigit():  # n^-1/3
        out, i = out + "/" + toks[i + 1], i + 2
    return out, i


def _seq(toks: list[str], i: int, close: str | None) -> tuple[str, int]:
    out: list[str] = []

    def add(piece: str) -> None:
        if out and re.search(r"\\[A-Za-z]+$", out[-1]) and re.match(r"[A-Za-z0-9]", piece):
            out.append(" ")
        out.append(piece)

    while i < len(toks):
        t = toks[i]
        if t == close:
            return "".join(out).strip(), i
        if t == ")":
            raise _Unparsed("unbalanced )")
        if t.isspace():
            if out and out[-1] != " ":
                out.append(" ")
            i += 1
        elif t == "(":
            inner, i = _group(toks, i)
            add(f"({inner})")
        elif t in ("^", "_"):
            body, i = _script(toks, i + 1)
            while out and out[-1] == " ":
                out.pop()
            out.append(f"{t}{{{body}}}")
        elif t == "sqrt":
            j = i + 1
            if j >= len(toks) or toks[j] != "(":
                raise _Unparsed("sqrt without (")
            inner, i = _group(toks, j)
            add(rf"\sqrt{{{inner}}}")
        elif re.fullmatch(r"[A-Za-z]+", t):
            add(_WORDS.get(t, t if len(t) == 1 else rf"\mathrm{{{t}}}"))
            i += 1
        elif re.fullmatch(r"\d+(?:\.\d+)?", t) or t in _SYMBOLS:
            add(_SYMBOLS.get(t, t))
            i += 1
        else:
            raise _Unparsed(f"no math for {t!r}")
    if close is not None:
        return "".join(out).strip(), i
    return "".join(out).strip(), i


def rate_tex(text: str) -> str | None:
    """An ASCII rate ("n^-1/3 + (sqrt(d)/(n eps))^(3/7)", "||grad F||") as the body of a math
    formula (no $), or None where it does not parse (then set it as escaped text)."""
    toks = _TOKEN.findall(str(text).strip())
    try:
        body, i = _seq(toks, 0, None)
    except _Unparsed:
        return None
    return body if i == len(toks) and body else None


def claim_tex(text: Any) -> str:
    """A claim cell "metric ~ rate" as one formula; anything else as `text_tex`."""
    metric, sep, rate = str(text).partition(" ~ ")
    body = rate_tex(rate) if sep else None
    if body is None:
        return text_tex(text)
    lhs = METRIC_TEX.get(metric.strip(), r"\mbox{\texttt{" + tex_escape(metric.strip()) + "}}")
    return f"${lhs} \\sim {body}$"


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_NUMERIC_CELL = re.compile(rf"\(?{_NUMBER}(?: ?\[{_NUMBER}, {_NUMBER}\])?\)?|\[{_NUMBER}, {_NUMBER}\]")


def number_tex(text: str) -> str | None:
    """A number, "x [lo, hi]" or "(x [lo, hi])" as math (true minus signs, 1.2e+04 as
    1.2 x 10^4); None for anything else."""
    s = str(text).strip()
    if not _NUMERIC_CELL.fullmatch(s):
        return None

    def power(m: re.Match) -> str:
        exp = int(m.group(2))
        return f"{m.group(1)}\\times 10^{{{exp}}}"

    s = re.sub(r"(\d(?:\.\d*)?)e([-+]?\d+)", power, s)
    return "$" + s.replace(" [", "$ $[") + "$"  # a line may break before the CI


#: Rate fragments inside prose that `text_tex` sets as math when they parse.
_MATH_SPAN = re.compile(
    r"\|\|[^|]{1,40}\|\|"
    r"|\(?sqrt\((?:[^()]|\([^()]*\))*\)(?:\s*/\s*\([^()]*\))?\)?(?:\^\(?-?\d+(?:/\d+)?\)?)?"
    r"|(?<=[\w\])])\^(?:\(-?[\w./]+\)|-?\d+(?:/\d+)?|[A-Za-z]\w*)"
    r"|->|<=|>=|\bO~")


def text_tex(text: Any) -> str:
    """Prose as LaTeX: rate fragments ("sqrt(d)/(n eps)", "||grad F||", "j^-3/2", "->") in math
    where they parse, the rest escaped; "_" and "/" may break a line."""
    s = str(text)
    out, pos = [], 0
    for m in _MATH_SPAN.finditer(s):
        span, tail = m.group(0), ""
        body = r"\tilde{O}" if span == "O~" else rate_tex(span)
        if body is None and span.endswith(")"):  # "(x = sqrt(d)/(n eps))": the outer ")"
            span, tail = span[:-1], ")"
            body = rate_tex(span)
        if body is None:
            continue
        out += [_prose(s[pos:m.start()]), f"${body}$", tail]
        pos = m.end()
    out.append(_prose(s[pos:]))
    return "".join(out)


def _prose(s: str) -> str:
    s = re.sub(r'"([^"]*)"', "\x01\\1\x02", s)  # "quoted" as ``quoted''
    return tex_escape(s).replace("/", r"\slash{}").replace("\x01", "``").replace("\x02", "''")


# ----- the table ---------------------------------------------------------------------------

#: Assumed width of a character of \scriptsize text (cmr 7pt digits are 3.5pt; kept generous).
CHAR_PT = 4.0
TABCOLSEP_PT = 3.0
#: A column whose cells all fit in this many characters is an `l` column; longer ones wrap.
SHORT = 16
#: A cell of a footnote column longer than this is set as a label and a numbered note.
FOOTNOTE_AT = 24
#: Defined once per table: inside the table's cells, "\\_" (underscores in names) may break.
BREAKABLE = r"\providecommand{\dpratesbreakable}{\def\_{\textunderscore\allowbreak}}"


def _visible(tex: str) -> str:
    """About what `tex` prints (for widths): commands as one character, no braces or $."""
    s = re.sub(r"\\textsuperscript\{(\w+)\}", r"\1", tex)
    s = re.sub(r"\\(?:mathrm|mbox|texttt|sqrt)\b", "", s)
    s = re.sub(r"\\[A-Za-z]+\s?", "x", s).replace("\\", "")
    return re.sub(r"[{}$^]", "", s)


def _unbreakable(tex: str) -> list[str]:
    """The pieces of a cell no line break splits: text words (broken at spaces, "\\_" and
    "\\slash"), formulas broken only at a top-level "+" or "\\sim"."""
    out = []
    for k, part in enumerate(re.split(r"\$", tex)):
        if k % 2:
            out += re.split(r" (?:\+|\\sim) ", part)
        else:
            out += [w for w in re.split(r"\s+|\\_|\\slash\{\}", part) if w]
    return out or [""]


def _footnoted(values: list[str], notes: list[str]) -> list[str]:
    """Long cells as "label<sup>k</sup>", their text appended to `notes` once each."""
    out = []
    for v in values:
        if len(v) <= FOOTNOTE_AT:
            out.append(text_tex(v))
            continue
        if v not in notes:
            notes.append(v)
        k = notes.index(v) + 1
        label = re.split(r"[:;(]", v, maxsplit=1)[0].strip()
        label = label if 0 < len(label) <= FOOTNOTE_AT else "see note"
        out.append(f"{text_tex(label)}\\textsuperscript{{{k}}}")
    return out


def _cell(col: str, value: Any, rate_columns: Sequence[str]) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "--"
    s = str(value)
    if col in rate_columns:
        return claim_tex(s)
    if s.strip() == "-":
        return "--"
    return number_tex(s) or text_tex(s)


def _column_spec(header: list[str], cells: list[list[str]], wide: Sequence[str],
                 names: list[str]) -> str:
    """`l` for short columns; ragged-right p{} for long ones: each at least its longest
    unbreakable piece, the rest of \\linewidth shared in proportion to their content."""
    reserved, floor, extra = 0.0, {}, {}
    for j, name in enumerate(names):
        longest = max(len(_visible(t)) for t in [header[j], *(r[j] for r in cells)])
        if longest <= SHORT and name not in wide:
            reserved += longest * CHAR_PT + 2 * TABCOLSEP_PT
            continue
        word = max(len(_visible(w)) for t in [header[j], *(r[j] for r in cells)]
                   for w in _unbreakable(t))
        floor[j] = word * CHAR_PT
        extra[j] = max(1, min(longest, 40) - word)
        reserved += floor[j] + 2 * TABCOLSEP_PT
    total = sum(extra.values())
    spec = []
    for j in range(len(names)):
        if j not in floor:
            spec.append("l")
            continue
        width = rf"\dimexpr{floor[j]:.0f}pt+(\linewidth-{reserved:.0f}pt)*{extra[j]}/{total}\relax"
        spec.append(rf">{{\raggedright\arraybackslash\dpratesbreakable}}p{{{width}}}")
    return "".join(spec)


def to_latex(table: pd.DataFrame, caption: str = "", label: str = "", notes: Sequence[str] = (),
             wide: Sequence[str] = (), standalone: bool = False,
             footnote_columns: Sequence[str] = ("regime",),
             rate_columns: Sequence[str] = ("claim", "rate")) -> str:
    """A booktabs table (\\toprule / \\midrule / \\bottomrule, no vertical rules) in a table*
    float, \\scriptsize: rates and numbers in math, text escaped, long columns (and those named
    in `wide`) wrapped in p{} columns, long cells of `footnote_columns` as numbered notes, the
    `notes` beneath. Needs booktabs and array; `standalone`: a complete document, the table a
    longtable that continues over pages."""
    names = [str(c) for c in table.columns]
    reasons: list[str] = []
    columns = []
    for c in names:
        values = list(table[c])
        if c in footnote_columns:
            columns.append(_footnoted(["--" if str(v).strip() in ("", "-") else str(v)
                                       for v in values], reasons))
        else:
            columns.append([_cell(c, v, rate_columns) for v in values])
    cells = [list(r) for r in zip(*columns, strict=True)] if names else []
    header = [text_tex(c) for c in names]
    spec = _column_spec(header, cells, wide, names)
    title = ([rf"\caption{{{text_tex(caption)}}}"] if caption else []) + (
        [rf"\label{{{label}}}"] if label else [])
    rows = [r"\toprule", " & ".join(header) + r" \\", r"\midrule",
            *(" & ".join(r) + r" \\" for r in cells), r"\bottomrule"]
    below = [f"\\textsuperscript{{{k}}}\\,{text_tex(r)}" for k, r in enumerate(reasons, 1)]
    below += [text_tex(n) for n in notes if str(n).strip()]
    if standalone:  # a longtable: a table of many claims continues on the next page
        body = [r"{\scriptsize", rf"\setlength{{\tabcolsep}}{{{TABCOLSEP_PT:g}pt}}",
                rf"\begin{{longtable}}{{{spec}}}", *(["".join(title) + r"\\"] if title else []),
                *rows, r"\end{longtable}", r"\raggedright", "\n\n".join(below), r"\par}"]
        return ("\\documentclass{article}\n\\usepackage[a4paper,landscape,margin=1.5cm]{geometry}\n"
                "\\usepackage{booktabs}\n\\usepackage{array}\n\\usepackage{longtable}\n"
                "\\begin{document}\n" + BREAKABLE + "\n" + "\n".join(body) + "\n\\end{document}\n")
    body = [r"\begin{table*}[tbp]", r"\centering", r"\scriptsize",
            rf"\setlength{{\tabcolsep}}{{{TABCOLSEP_PT:g}pt}}", *title,
            rf"\begin{{tabular}}{{{spec}}}", *rows, r"\end{tabular}"]
    if below:
        body += [r"\par\smallskip", r"\begin{minipage}{\linewidth}\raggedright",
                 "\n\n".join(below), r"\end{minipage}"]
    body.append(r"\end{table*}")
    tex = BREAKABLE + "\n" + "\n".join(body) + "\n"
    return "% requires \\usepackage{booktabs} and \\usepackage{array}\n" + tex
