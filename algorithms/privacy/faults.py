"""Planted privacy bugs: negative controls for the privacy verification (tests/test_privacy.py,
`dprates audit --fault`). Each is a switch of one run (`Spider(planted_faults=(...))`), never
on by default; the verification must flag every one of them.
"""

from __future__ import annotations

from collections.abc import Iterable

FAULTS: dict[str, str] = {
    "noise_third": "privacy noise scaled by 1/3 (the accountant still reports the calibrated noise)",
    "no_clipping": "per-sample gradients and gradient differences are not clipped",
    "o2_wrong_step": "O2 sensitivity computed from x_{t-1} - x_{t-2} (not x_t - x_{t-1}) and "
                     "trusted without an enforcing clip",
    "tree_depth_1": "tree noise calibrated for depth 1 (one node per record)",
    "tree_one_leaf": "global-scope tree noise calibrated for depth nodes, forgetting the second "
                     "leaf (the next O1 restart) that a record moves",
    "reuse_sample": "each batch re-uses the last record of the previous batch",
    "no_domain": "records are not mapped into the domain where the stated smoothness holds "
                 "(PhasedSGD's output perturbation then trusts an unenforced sensitivity)",
    "noise_isotropic": "shaped noise N(0, z^2 A^-1) replaced by isotropic noise at the stiffest "
                       "coordinate's scale (Pasan / Pagan: too little noise where A is small)",
}


def check_faults(faults: Iterable[str]) -> frozenset[str]:
    out = frozenset(faults)
    unknown = sorted(out - set(FAULTS))
    if unknown:
        raise ValueError(f"planted_faults={unknown!r} is invalid: must be among {', '.join(FAULTS)}")
    return out
