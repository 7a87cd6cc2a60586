"""The log factors each claim's O~ hides (`algorithms.claims.LogFactor`), read from the papers'
theorems and proofs: one factor per quantity, with the largest power it reaches anywhere in the
bound (the verdict engine multiplies the factors of a claim, so a quantity is declared once).

Papers, by the short forms the sources use:
* seed 000: *Adaptive Batch Size for Privately Finding Second-Order Stationary Points*, arXiv
  2410.07502 (with the Ganesh et al. 2023 frame it follows, *Private (Stochastic) Non-Convex
  Optimization Revisited*, arXiv 2302.09699, whose full text is not among our sources);
* seed 001: Arora, Bassily, Gonzalez, Guzman, Menart, Ullah 2023, *Faster Rates of Convergence
  to Stationary Points in Differentially Private Optimization*, arXiv 2206.00846;
* seed 002: Asi, Duchi, Fallah, Javidbakht, Talwar 2021, *Private Adaptive Gradient Methods for
  Convex Optimization*, arXiv 2106.13756 (bodies and formulas reconstructed).
A Gaussian mechanism's noise std is ~ sqrt(log(1/delta)) / eps per unit of sensitivity, so a
privacy term (sqrt(d)/(n eps))^p carries log(1/delta)^(p/2).
"""

from __future__ import annotations

from algorithms.claims import LogFactor

_LEMMA33_D = ("seed 000, Lemma 3.3 (the escape lemma of the Ganesh et al. frame): the SOSP "
              "threshold alpha = gamma log^3(d B M / (rho iota)), power 3")
_PROP34_T = ("seed 000, Proposition 3.4: success probability 1 - T iota, so iota = omega / T sits "
             "inside Lemma 3.3's log^3(d B M / (rho iota)): power 3 on the second-order threshold")
_WINDOW = ("seed 000, Lemma 3.3 / Proposition 3.4: the escape window Gamma = M log(d M B / (rho "
           "gamma iota)) / sqrt(rho gamma) enters the horizon T = O~(B M / gamma^2) and so the "
           "sample budget; inverted at fixed n the accuracy carries at most its first power")


def _delta(power: float, why: str) -> LogFactor:
    return LogFactor("1/delta", power, why)


_SPIDERBOOST_DELTA = ("seed 001, Theorem 4.2 / B.3: abar = sqrt(d log(1/delta))/(n eps) enters as "
                      "abar^(2/3) (power 1/3) and in the second term L0 abar (power 1/2)")
_REC_NEPS = ("seed 001, Theorem 5.1 proof: the bound sums 4 sqrt(lambda 2^(t+1) alpha_t) over "
             "T = ceil(log2(L1/lambda)) stages, each ~ sqrt(d log(1/delta)) G T / (n eps) on its "
             "chunk n/T: T^2 on the privacy term, and lambda ~ d/(n eps)^2 makes T ~ 2 log(n eps)")
_REC_N = ("seed 001, Theorem 5.1 proof: the statistical part is T sqrt(T/n) G summed over the "
          "T ~ log2(n) stages of the non-private schedule (lambda ~ 1/n): power 3/2")
_ISO_D = ("seed 002, Theorems 1-2 (stylized case, p = log d): the bounds use the p-th moments of "
          "the gradients' C-norm, which for sub-Gaussian coordinates grow like sqrt(p) = sqrt(log d)")

LOGS: dict[str, tuple[LogFactor, ...]] = {
    "gaussian_spider": (
        _delta(3 / 14, "Gaussian mechanism per release (the rules' eps_eff = 1/(2 x multiplier), "
                       "multiplier ~ sqrt(log(1/delta))/eps) inside (sqrt(d)/(n eps))^(3/7)"),
        LogFactor("T", 3, _PROP34_T), LogFactor("d", 3, _LEMMA33_D),
        LogFactor("1/alpha", 1, _WINDOW)),
    "adaptive_tree_spider": (
        _delta(0.5, "seed 000, Lemma 3.7: sigma = (G/b + max_t ||nabla~_t||/b_t) log(1/delta)/eps, "
                    "inside Theorem 3.11's (sqrt(d)/(n eps))^(1/2)"),
        LogFactor("T", 3, "seed 000, Lemma 3.8 proof: tree depth log2 T in the noise (sigma "
                          "sqrt(d log T), power 1/2, and Theorem 2.2's log T nodes in sigma, power "
                          "1/2 more: power 1 on the first-order error); " + _PROP34_T),
        LogFactor("d", 3, _LEMMA33_D), LogFactor("1/alpha", 1, _WINDOW)),
    "empirical_sosp_spider": (
        _delta(1 / 3, "GDP budget mu ~ eps/sqrt(log(1/delta)) inside (sqrt(d)/(n mu))^(2/3) "
                      "(Ganesh et al. Theorem 3.9 via seed 000 Appendix A.2)"),
        LogFactor("T", 3, _PROP34_T), LogFactor("d", 3, _LEMMA33_D),
        LogFactor("1/alpha", 1, _WINDOW + "; seed 000 Theorem A.2's net gives sqrt(d log(R/r)/n) "
                                          "with R = B0/gamma, power 1/2 (within 1)")),
    "dp_gd": (_delta(0.25, "Gaussian noise composed over T steps (multiplier sqrt(T)/mu, mu ~ "
                           "eps/sqrt(log(1/delta))) inside (sqrt(d)/(n eps))^(1/2), the descent "
                           "lemma bound of the noisy_gd module (Wang et al. 2017 as cited in "
                           "seed 001, Table 1)"),),
    "dp_sgd": (_delta(0.25, "subsampled Gaussian noise (the same budget as DP-GD's up to the "
                            "accountant) inside (sqrt(d log(1/delta))/(n eps))^(1/2) (Wang et al. "
                            "2017 as cited in seed 001, Table 1)"),),
    "noisy_sgd": (_delta(1 / 6, "noise std 2C/(b mu), mu ~ eps/sqrt(log(1/delta)), inside "
                                "(sqrt(d)/(n eps))^(1/3) (the noisy_gd module's one-pass "
                                "derivation)"),),
    "private_spiderboost": (_delta(0.5, _SPIDERBOOST_DELTA),),
    "tree_private_spider": (
        _delta(1, "seed 001, Theorem 3.2: C~ = 256 log(1.25/delta) log(2 T 2^(D+1)/p) + ..., a "
                  "factor of the bound 3 sqrt(2) L0 C~ max{...}"),
        LogFactor("n", 1.5, "seed 001, Theorem 3.2: C~'s log(2 T 2^(D+1)/p) <= log(2n/p) (power "
                            "1) and 8 L1 F0 sqrt(2D)(D/2+1)/(2 L0^2) with depth D <= log2 n "
                            "(power 3/2)")),
    "recursive_regularization": (
        LogFactor("n eps", 2, _REC_NEPS), LogFactor("n", 1.5, _REC_N),
        _delta(0.5, "seed 001, Theorem 5.1 / Lemma D.3: sigma_t^2 ~ K log(1/delta)/(n eps)^2, "
                    "alpha_t's d G^2 log(1/delta)/(lambda_t n^2 eps^2) under a square root")),
    "recursive_regularization_linear": (
        LogFactor("n eps", 2, _REC_NEPS),
        LogFactor("n", 1.5, _REC_N + "; Lemma D.6's sigma^2 carries log^2(n) (power 1 on the "
                                     "privacy term) and lambda >= L1 log(n)/n gives "
                                     "L1 ||w*|| sqrt(log(n)/n) (power 1/2)"),
        _delta(0.5, "seed 001, Lemma D.5 / D.6: sigma^2 ~ log(1/delta)/(lambda n eps)^2")),
    "jl_private_spiderboost": (
        _delta(1, _SPIDERBOOST_DELTA + "; seed 001 Theorem 6.1's k = rank log(2n/delta) inside "
                                       "sqrt(k): up to power 1 in all"),
        LogFactor("n", 1, "seed 001, Theorem 6.1: k = rank log(2n/delta) inside (sqrt(k)/(n eps))"
                          "^(2/3) (power 1/3) and the embedding error L0 ||X|| log(n)/sqrt(k) "
                          "the choice of k balances (power 1)")),
    "jl_recursive_regularization": (
        LogFactor("n eps", 2, _REC_NEPS),
        LogFactor("n", 1.5, _REC_N + "; seed 001 Theorem 6.1's k = rank log(2n/delta) inside "
                                     "sqrt(k) (power 1/2) and the embedding error "
                                     "L0 ||X|| log(n)/sqrt(k) (power 1)"),
        _delta(1, "seed 001, Theorem 5.1 (power 1/2) and Theorem 6.1's k = rank log(2n/delta) "
                  "inside sqrt(k) (power 1/2 more)")),
    "jl_dp_gd": (
        _delta(0.5, "DP-GD's (sqrt(k log(1/delta))/(n eps))^(1/2) (power 1/4) with seed 001 "
                    "Theorem 6.1's k = rank log(2n/delta) (power 1/4 more)"),
        LogFactor("n", 1, "seed 001, Theorem 6.1: k = rank log(2n/delta) (power 1/4) and the "
                          "embedding error L0 ||X|| log(n)/sqrt(k) (power 1)")),
    "pasan": (_delta(0.5, "seed 002, Lemma 3.1 / Theorem 1: Gaussian noise of the moments "
                          "accountant, sqrt(log(1/delta))/(n eps) on the privacy term"),
              LogFactor("d", 0.5, _ISO_D)),
    "pagan": (_delta(0.5, "seed 002, Lemma 3.1 / Theorem 2: Gaussian noise of the moments "
                          "accountant, sqrt(log(1/delta))/(n eps) on the privacy term"),
              LogFactor("d", 2, "seed 002, Theorem 2, stylized case: the privacy term's "
                                "(sum_j sigma_j^(2/3))^(3/2) = H_d^(3/2) ~ (log d)^(3/2) for "
                                "sigma_j = j^(-3/2) (power 3/2), times sqrt(p) = sqrt(log d) of "
                                "the p = log d moments (power 1/2): polylog, exponent 0 in d")),
    "private_sgd_iso": (_delta(0.5, "seed 002, Lemma 3.1: Gaussian noise, sqrt(log(1/delta))/"
                                    "(n eps) on the privacy term"),
                        LogFactor("d", 0.5, _ISO_D)),
    "private_adagrad_iso": (_delta(0.5, "seed 002, Lemma 3.1: Gaussian noise, "
                                        "sqrt(log(1/delta))/(n eps) on the privacy term"),
                            LogFactor("d", 0.5, _ISO_D)),
    "pdp_sgd": (_delta(0.5, "Gaussian noise of private SGD, sqrt(log(1/delta))/(n eps) on the "
                            "privacy term (Zhou, Wu, Banerjee 2021, arXiv 2007.03813)"),
                LogFactor("d", 0.5, "Zhou, Wu, Banerjee 2021 (not among our sources; chosen "
                                    "from the standard step): the public top-k subspace estimate's "
                                    "matrix concentration over d dimensions carries sqrt(log d)")),
}
LOGS["pagan_private_scales"] = LOGS["pagan"]
LOGS["pagan_public_scales"] = LOGS["pagan"]

__all__ = ["LOGS"]
