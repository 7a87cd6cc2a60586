"""Where a command's text goes: the file of `-o` (its folder made; one "wrote ..." line) or
stdout."""

from __future__ import annotations

import sys
from pathlib import Path


def write_output(text: str, output: str | None, what: str = "") -> None:
    """Write `text` to `output` (UTF-8) and say so, or to stdout when `output` is None."""
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}" + (f" ({what})" if what else ""))
    else:
        sys.stdout.write(text)
