"""The README and the guides beside the code (issue 46): the README stays short, every guide it
names exists, every relative link (and anchor) resolves, every `dprates` command quoted in
their code parses with the real argument parser, and every `make` target quoted exists."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The README and its guides, one beside the code each describes.
GUIDES = ("bench/README.md", "analysis/README.md", "algorithms/README.md", "problems/README.md",
          "reports/README.md")
DOCS = ("README.md", *GUIDES)
MAX_README_LINES = 300

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
DPRATES = re.compile(r"(?:^|[\s/\"'])dprates\s+([a-z][a-z-]*)")
MAKE = re.compile(r"(?:^|[\s;&(])make\s+([a-z][a-z0-9-]*)")


def _text(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


def _code(doc: str) -> tuple[list[str], list[str]]:
    """(lines of the fenced code blocks, inline code spans outside them) of `doc`."""
    text = _text(doc)
    blocks = FENCE.findall(text)
    prose = FENCE.sub("", text)
    return [ln for b in blocks for ln in b.splitlines()], INLINE.findall(prose)


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    h = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.*?)\s*#*$", text, re.M)}


@pytest.fixture(scope="module")
def parser():
    from bench.cli import build_parser

    return build_parser()


def _subcommands(parser) -> set[str]:
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_readme_is_short_and_names_every_guide():
    lines = _text("README.md").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    linked = set(LINK.findall(_text("README.md")))
    for guide in GUIDES:
        assert (ROOT / guide).is_file(), guide
        assert guide in linked, f"README.md does not link {guide}"


def test_every_relative_link_and_anchor_resolves():
    checked = anchors = 0
    for doc in DOCS:
        for target in LINK.findall(FENCE.sub("", _text(doc))):
            if re.match(r"^[a-z]+://|^mailto:", target):
                continue
            path_part, _, anchor = target.partition("#")
            path = (ROOT / doc).parent / path_part if path_part else ROOT / doc
            path = path.resolve()
            assert path.is_relative_to(ROOT), f"{doc}: {target} leaves the repository"
            assert path.exists(), f"{doc}: {target} does not exist"
            checked += 1
            if anchor:
                assert path.suffix == ".md", f"{doc}: {target}: an anchor into a non-Markdown file"
                assert anchor in _anchors(path), f"{doc}: {target}: no heading with that anchor"
                anchors += 1
    assert checked >= 60 and anchors >= 3, (checked, anchors)


def _commands(doc: str) -> tuple[list[str], list[str]]:
    """(fenced code lines that run `dprates`, with shell variables expanded; inline spans
    that name `dprates SUB`)."""
    lines, spans = _code(doc)
    env: dict[str, str] = {}
    full = []
    joined = "\n".join(lines).replace("\\\n", " ")
    for ln in joined.splitlines():
        m = re.match(r'^([A-Z]+)="([^"]*)"(?:;\s*(.*))?$', ln.strip())
        if m:  # R=".venv/bin/dprates run"; A="--n 1e12 ..."
            env[m.group(1)] = m.group(2)
            for more in re.findall(r'([A-Z]+)="([^"]*)"', m.group(3) or ""):
                env[more[0]] = more[1]
            continue
        ln = re.sub(r"\$([A-Z]+)", lambda v: env.get(v.group(1), v.group(0)), ln)
        if DPRATES.search(ln):
            full.append(ln)
    return full, [s for s in spans if DPRATES.search(s)]


def test_every_quoted_dprates_command_parses(parser):
    """Each `dprates SUB ...` line of a code block parses with the CLI's own parser (the same
    arguments, so a renamed flag fails here), and each inline `dprates SUB` names a real
    subcommand whose --help parses."""
    subs = _subcommands(parser)
    parsed = named = 0
    helped: set[str] = set()
    for doc in DOCS:
        lines, spans = _commands(doc)
        for ln in lines:
            code = ln.split(" #", 1)[0].strip()
            for part in re.split(r"\s*(?:&&|;|\|)\s*", code):
                argv = shlex.split(part)
                i = next((k for k, a in enumerate(argv) if a.endswith("dprates")), None)
                if i is None or i + 1 >= len(argv):
                    continue
                args = argv[i + 1:]
                assert args[0] in subs, f"{doc}: `{part}`: no subcommand {args[0]!r}"
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    try:
                        parser.parse_args(args)
                    except SystemExit as exc:
                        raise AssertionError(f"{doc}: `{part}` does not parse: "
                                             f"{err.getvalue().strip()}") from exc
                parsed += 1
                helped.add(args[0])
        for span in spans:
            for sub in DPRATES.findall(span):
                assert sub in subs, f"{doc}: `{span}`: no subcommand {sub!r}"
                helped.add(sub)
                named += 1
    for sub in sorted(helped):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
            parser.parse_args([sub, "--help"])
        assert exc.value.code == 0 and f"usage: dprates {sub}" in out.getvalue(), sub
    assert parsed >= 35 and named >= 20 and len(helped) >= 12, (parsed, named, sorted(helped))


def test_every_quoted_make_target_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.M))
    quoted = 0
    for doc in DOCS:
        lines, spans = _code(doc)
        for code in [*lines, *spans]:
            for target in MAKE.findall(code.split(" #", 1)[0] if code in lines else code):
                assert target in targets, f"{doc}: `make {target}`: no such Makefile target"
                quoted += 1
    assert {"demo", "test"} <= targets
    assert quoted >= 15, quoted


def test_the_command_table_names_real_commands_and_flags(parser):
    """bench/README.md's "Every command" table: each row's command exists and each flag it
    lists is one of that command's options."""
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = _text("bench/README.md")
    table = text[text.index("## Every command"):]
    table = table[:table.index("\n## ")]
    rows = re.findall(r"^\| `([a-z-]+)` \|[^\n]*\| ([^\n]*) \|$", table, re.M)
    assert len(rows) >= 15, len(rows)
    for sub, flags in rows:
        assert sub in action.choices, f"bench/README.md: no command {sub!r}"
        options = {o for a in action.choices[sub]._actions for o in a.option_strings}
        for flag in re.findall(r"`(--[a-z-]+)`", flags):
            assert flag in options, f"bench/README.md: `dprates {sub}` has no {flag}"
