"""The one accountant: (eps, delta) and a sensitivity profile -> noise scales. `gdp` holds the
Gaussian-DP calibrations, `pld` the PLD accountant of subsampled releases, `ledger` what a run
stores as spent; this package exports their public names.

Two calibrations, both (eps, delta)-DP:

* **tight**: exact Gaussian differential privacy (Dong, Roth and Su 2022). A Gaussian
  release with L2 sensitivity s and noise std sigma is mu-GDP with mu = s / sigma; an
  adaptive composition of such releases is sqrt(sum mu_i^2)-GDP; mu-GDP is (eps, delta)-DP
  exactly when delta >= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (their Corollary
  2.13). For one release this is the analytic Gaussian mechanism of Balle and Wang (2018).
  We calibrate mu by root finding on that curve.
* **theory**: the papers' formulas: sigma = s sqrt(2 log(1.25/delta)) / eps for one Gaussian
  release (Dwork and Roth 2014, Thm A.1) and sigma = 4 s sqrt(log T log(1/delta)) / eps for
  the tree mechanism over T steps (seed 000, Theorem 2.2). Those formulas are proven only
  for some ranges (eps < 1, natural logs, T >= 3); wherever a formula gives *less* noise
  than (eps, delta) needs, the tight sigma is used instead (`floored=True` says so), so
  the noise is never below what the guarantee needs.

Sensitivity profiles: a record of a Spider run enters one Gaussian release (parallel
composition over disjoint batches), or one leaf of a binary tree, which changes `depth`
node values (one per level) by at most s each: in GDP terms mu = s sqrt(nodes) / sigma.

Poisson-subsampled Gaussians (DP-SGD, private SpiderBoost's difference steps, the ellipsoid
methods) are not mu-GDP for any mu; they are calibrated on dp-accounting's privacy loss
distribution (PLD) accountant, refined until the noise spends at least 99% of eps
(`pld._calibrate_pld`), and their runs store a PLD ledger: the composed releases and the
discretization that certify eps, and eps at a few deltas, never a mu (`ledger_pld`,
`ledger_eps` re-derives any stored eps). GDP runs store mu (`ledger_gdp`).
"""

from algorithms.privacy.accounting.gdp import (
    CALIBRATIONS,
    Calibration,
    calibrate,
    composed_gaussian_multiplier,
    gaussian_sigma,
    gdp_delta,
    gdp_eps,
    gdp_mu,
    require_calibration,
    spent_eps,
)
from algorithms.privacy.accounting.ledger import (
    LEDGER_DELTA_FACTORS,
    ledger_eps,
    ledger_gdp,
    ledger_jl,
    ledger_none,
    ledger_parallel,
    ledger_pld,
)
from algorithms.privacy.accounting.pld import (
    CALIBRATION_SLACK,
    GaussianFamily,
    PldCalibration,
    pld_epsilons,
    poisson_gaussian_calibration,
    poisson_gaussian_eps,
    poisson_gaussian_multiplier,
    two_family_calibration,
    two_family_noise_scale,
    with_noise_factor,
)
from algorithms.privacy.accounting.rounding import (
    counts_rounding_allowance,
    rounding_ledger_entry,
)

__all__ = [
    "CALIBRATIONS",
    "CALIBRATION_SLACK",
    "LEDGER_DELTA_FACTORS",
    "Calibration",
    "GaussianFamily",
    "PldCalibration",
    "calibrate",
    "composed_gaussian_multiplier",
    "counts_rounding_allowance",
    "gaussian_sigma",
    "gdp_delta",
    "gdp_eps",
    "gdp_mu",
    "ledger_eps",
    "ledger_gdp",
    "ledger_jl",
    "ledger_none",
    "ledger_parallel",
    "ledger_pld",
    "pld_epsilons",
    "poisson_gaussian_calibration",
    "poisson_gaussian_eps",
    "poisson_gaussian_multiplier",
    "require_calibration",
    "rounding_ledger_entry",
    "spent_eps",
    "two_family_calibration",
    "two_family_noise_scale",
    "with_noise_factor",
]
