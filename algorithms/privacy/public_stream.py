"""The public generator a plugin may draw from, derived one way from the run's generator.

A plugin on the release API gets a generator for data-independent draws (random restarts,
perturbations, coordinate choices). It used to be `rng.spawn(1)[0]`: a child seed sequence
carries its parent's entropy and spawn key, so a plugin could rebuild the run's generator
from it (`SeedSequence(child.entropy, spawn_key=child.spawn_key[:-1])`), replay the desk's
draws, predict every noise vector and subtract it (issue 71: |denoised - exact| = 2e-17 after
a release of noise 0.113). Whatever it then computed was a function of the clean gradients,
and the forced-transcript replay, run on the same seed, could not see it.

Here the public generator is seeded with SHA-256 of the run's seed sequence (its entropy,
spawn key and pool size) under a domain tag: the same run gives the same public draws (the
suite's reproducibility), and nothing the plugin holds gives back the run's entropy, so the
desk's noise cannot be rebuilt from what the API hands out. Reaching the run's generator
itself (digging past the window) is outside the API; the forced-transcript replay re-seeds the
run's generator while keeping this one (`algorithms.privacy.audit.transcript_replay`), so a
plugin that predicts the noise from the live generator steps elsewhere and is FAILED.

hashlib's SHA-256 rather than our own mixing: a standard one-way function, in the standard
library.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: The domain tag: a public stream under another tag (if one is ever added) is independent.
_TAG = b"dprates.public_stream.v1\x00"


def public_generator(rng: np.random.Generator) -> np.random.Generator:
    """A generator for a plugin's data-independent draws, the same for the same run's
    generator, from which that generator's seed cannot be recovered (module docstring). The
    run's generator is read, not advanced: its draws (batches, noise) are unchanged."""
    seq = rng.bit_generator.seed_seq
    if not isinstance(seq, np.random.SeedSequence):
        raise ValueError(f"rng={rng!r} is invalid for a run on the release API: its bit "
                         "generator must be seeded from a numpy SeedSequence (default_rng(seed))")
    digest = hashlib.sha256(_TAG + repr((int(seq.entropy) if isinstance(seq.entropy, int)
                                         else [int(e) for e in np.atleast_1d(seq.entropy)],
                                         [int(k) for k in seq.spawn_key],
                                         int(seq.pool_size))).encode()).digest()
    return np.random.default_rng(np.random.SeedSequence(int.from_bytes(digest, "big")))


__all__ = ["public_generator"]
