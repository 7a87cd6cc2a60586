"""The log factors each claim's O~ hides (`algorithms.claims.LogFactor`), read from the papers'
theorems and proofs.

The rule (issue 55, item 4): one factor per log the theorem writes (a single log^3(d B M T /
(rho omega)) is one factor, never (log d)^3 (log T)^3), only the logs the implementation's
default rules carry (horizon T, batch sizes, noise, escape threshold, escape window, tree depth,
stage count, embedding dimension, projection radius), each at the power the proof gives it. The
concentration and union-bound logs of the high-probability proofs (log(d/iota), log(T d/iota),
log(2T 2^(D+1)/p), ...) are not carried by any rule and are not declared. Where one log appears
in several terms of a bound, it is declared once with the largest power it reaches (the verdict
engine multiplies the factors of a claim, so a log declared twice would be counted twice).

The powers are on the claim's metric at fixed n (the error view); the verdict engine divides
them by the privacy exponent a in the samples-to-target view (`analysis.verdict_engine.
log_factors`). A log the rules spend on the sample count (a batch size, or the steps of a
horizon) multiplies n* by (log Q)^k and is declared with power a k on the accuracy, which is how
the papers' own proofs invert it (seed 000, Lemma 3.10; the Ganesh frame likewise).

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

The SOSP Spiders and the escape rule. Seed 000's Lemma 3.3 writes ONE log^3: the SOSP threshold
alpha = gamma log^3(d B M / (rho iota)), which Algorithm 2 line 9 tests as gamma log^3(B M d /
(rho omega)) and Proposition 3.4's union bound (success 1 - T iota, iota = omega / T) makes
log^3(d B M T / (rho omega)). The Spiders' default `escape_rule = "noise_scaled"`
(`algorithms.sosp.noise_rules.escape_params`) has no such log: it tests the released estimate's
norm against c_escape max(gamma, noise_norm), and the batch rules hold noise_norm ~ gamma; its
perturbation zeta = c_zeta max(gamma, noise_norm) / sqrt(log(d / omega)) only shrinks the
perturbation (Lemma 3.3's N(0, gamma^2 / (d log(d / iota)))), never the accuracy. So no
Spider declares the log^3. `escape_rule = "literal"` would carry it: its threshold is
c_escape gamma log^3(B0 M d / (rho omega)) (written with omega where the theorem has iota =
omega / T, so over a fit in alpha at fixed d it is a constant, and it moves with d only); a
claim for the literal rule would declare that single log once, at power 3 (Lemma 3.3's alpha =
gamma log^3, on the accuracy). The claims below are for the default rules.
"""

from __future__ import annotations

from algorithms.claims import LogFactor

_SEED000 = ("seed 000 (Adaptive Batch Size for Privately Finding Second-Order Stationary Points, "
            "arXiv 2410.07502)")
_SEED001 = ("seed 001 (Arora et al. 2023, Faster Rates of Convergence to Stationary Points in "
            "Differentially Private Optimization, arXiv 2206.00846)")
_NO_LOG3 = ("; the default escape_rule = noise_scaled carries no log^3 (threshold c_escape "
            "max(gamma, noise_norm)): Lemma 3.3's single log^3(d B M / (rho iota)) is not "
            "declared (escape_rule = literal would carry it, power 3)")


def _window(power: float, shown: str, route: str) -> LogFactor:
    """The escape window's one log: Gamma = c_Gamma M log(d M B0 / (rho gamma omega)) /
    sqrt(rho gamma), the only log the default escape rule carries (`shown`: the power as text)."""
    return LogFactor("d M B0/(rho alpha omega)", power, (
        f"{_SEED000}, Lemma 3.3 / Proposition 3.4: the escape window Gamma = M log(d M B / (rho "
        "gamma iota)) / sqrt(rho gamma) is one log, which the rules carry as c_Gamma M "
        "log(d M B0 / (rho gamma omega)) / sqrt(rho gamma) (omega for iota); Proposition 3.4's "
        "proof spends Gamma steps per escape, so the steps T = O~(B M / gamma^2) carry it to "
        f"power 1; {route}: power {shown} on alpha" + _NO_LOG3))


def _delta(power: float, why: str) -> LogFactor:
    return LogFactor("1/delta", power, why)


_SPIDERBOOST_DELTA = (f"{_SEED001}, Theorem 4.2 / B.3: abar = sqrt(d log(1/delta))/(n eps) enters "
                      "as abar^(2/3) (power 1/3) and in the second term L0 abar (power 1/2)")
_STAGES = (f"{_SEED001}, Theorem 5.1 (1) proof: T = ceil(log2(L1/lambda)) stages, one log (lambda "
           "~ G^2/(M R^2) max{1/n, d/(n eps)^2}: the rules' stage count), each stage "
           "contributing ~ sqrt(d log(1/delta)) G T/(n eps) on its chunk n/T to the sum "
           "4 sum_t sqrt(lambda 2^(t+1) alpha_t): T^2 on the privacy term (T^(3/2) on the "
           "statistical term T sqrt(T/n) G): power 2")
_K = (f"{_SEED001}, Theorem 6.1: the rules' embedding dimension k = rank log(2n/delta) (one log) "
      "inside the base algorithm's (sqrt(k)/(n eps))^p: power p/2")
_UNIFORM = (f"{_SEED001}, Theorem 6.1 proof (Appendix E): the population claim's statistical "
            "term 4 L0 ||X|| log(2 n^(3/2) ||W|| L1 ||X|| / L0)/sqrt(n), one log, ||W|| <= "
            "poly(n) by the theorem's assumption: power 1 (the empirical claim shares the "
            "declaration). The embedding error L0 ||X|| log(n)/sqrt(j) only sets the other branch "
            "of the argmin (Corollary 6.2's min), not the claimed rank term")
_SEED002 = ("seed 002 (Asi et al. 2021, Private Adaptive Gradient Methods for Convex Optimization, "
            "arXiv 2106.13756)")
_WANG = "Wang, Ye, Xu 2017 (arXiv 1802.05251) as cited in seed 001, Table 1"
_ISO_D = (f"{_SEED002}, Theorems 1-2 (stylized case, p = log d): the bounds use the p-th moments of "
          "the gradients' C-norm, which for sub-Gaussian coordinates grow like sqrt(p) = sqrt(log d)")

LOGS: dict[str, tuple[LogFactor, ...]] = {
    "gaussian_spider": (
        _delta(3 / 14, "Gaussian mechanism per release: the rules' eps_eff = 1/(2 x multiplier), "
                       "multiplier sqrt(2 log(1.25/delta))/eps (calibration theory) or "
                       "1/mu(eps, delta) (tight), so the batches b, B and the sample count "
                       "n ~ sqrt(d)/(eps_eff alpha^(7/3)) carry sqrt(log(1/delta)): power 3/14 on "
                       "alpha (Ganesh et al. 2023, arXiv 2302.09699, Theorem 3.12, as seed 000 "
                       "Sections 1.1-1.2 describe it; its per-release noise does not depend on "
                       "T, so no log T)"),
        _window(3 / 7, "3/7", "the Ganesh frame's sample count n ~ alpha^(-7/3) (Theorem 3.12 "
                              "as seed 000 Section 1.2 describes it) inverts it")),
    "adaptive_tree_spider": (
        _delta(1 / 4, f"{_SEED000}, Theorem 2.2: the tree's node std 4 s sqrt(log T log(1/delta))"
                      "/eps (calibration theory; tight: through mu(eps, delta)) puts "
                      "sqrt(log(1/delta)) in the rules' eps_eff, hence in b, b_t, kappa and "
                      "Lemma 3.9's sample count B M sqrt(d)/(gamma^2 eps_eff) (power 1/2 on n); "
                      "Lemma 3.10 inverts it: power 1/4 on alpha (Lemma 3.7 prints sigma ~ "
                      "log(1/delta)/eps, a calibration the implementation does not use)"),
        LogFactor("T", 1 / 2, (
            f"{_SEED000}, Theorem 2.2 and Lemma 3.8: the tree over T steps has depth log2 T; the "
            "node std carries Theorem 2.2's sqrt(log T) (tight: sqrt of the 2 depth nodes a record "
            "moves) and a prefix sums up to depth nodes (Lemma 3.8's sigma sqrt(d log T)); the "
            "rules budget both into eps_eff = 1/(2 multiplier sqrt(depth)), so the released noise "
            "stays ~ alpha and the batches, hence Lemma 3.9's sample count, carry (log T)^1; "
            "Lemma 3.10 inverts it: power 1/2 on alpha (at fixed batches the paper's route would "
            "put the depth on the noise norm, alpha log T: the rules spend it on n instead). "
            "Lemma 3.6 / 3.8's log(n d / iota) is concentration, carried by no rule")),
        _window(1 / 2, "1/2", "Lemma 3.9's sample count (the steps of small estimates, each "
                              "~ gamma sqrt(d)/(alpha eps) samples) carries it to power 1 and "
                              "Lemma 3.10 inverts it")),
    "empirical_sosp_spider": (
        _delta(1 / 3, "GDP budget mu ~ eps/sqrt(log(1/delta)) inside (sqrt(d)/(n mu))^(2/3) "
                      "(Ganesh et al. 2023, arXiv 2302.09699, Theorem 3.9, via "
                      f"{_SEED000}, Appendix A.2): the rules' "
                      "gamma_priv = (16 G B0 M x^2)^(1/3), x = sqrt(d)/(n mu): power 1/3"),
        _window(1 / 3, "1/3", "the empirical route's rules hold B0 M = T gamma^2 in gamma^3 "
                              ">= 4 G B0 M x^2/(1 - beta) (algorithms.sosp.empirical: the epoch "
                              "noise and the anchors' path length), so a log on T is a log on "
                              "gamma^3"),
        LogFactor("R/r", 1 / 2, (
            f"{_SEED000}, Theorem A.2 proof, eq. (3): the gradient and Hessian gaps are "
            "sqrt(d log(R/r)/n), one log, R the domain's diameter and r <= min{1, M/rho} "
            "sqrt(d/n) the net's resolution; the rules carry R (the projection onto "
            "B(x0, c_R B0/gamma): diameter 2 B0/gamma at c_R = 1): power 1/2, on the "
            "statistical term"))),
    "dp_gd": (_delta(0.25, "Gaussian noise composed over T steps (multiplier sqrt(T)/mu, mu ~ "
                           "eps/sqrt(log(1/delta))) inside (sqrt(d)/(n eps))^(1/2), the descent "
                           "lemma bound of the noisy_gd module (" + _WANG + ")"),),
    "dp_sgd": (_delta(0.25, "subsampled Gaussian noise (the same budget as DP-GD's up to the "
                            "accountant) inside (sqrt(d log(1/delta))/(n eps))^(1/2) (" + _WANG
                            + ")"),),
    "noisy_sgd": (_delta(1 / 6, "noise std 2C/(b mu), mu ~ eps/sqrt(log(1/delta)), inside "
                                "(sqrt(d)/(n eps))^(1/3) (the noisy_gd module's one-pass "
                                "derivation)"),),
    "private_spiderboost": (_delta(0.5, _SPIDERBOOST_DELTA),),
    "tree_private_spider": (
        _delta(0.5, f"{_SEED001}, Algorithm 1 lines 5 and 14: node variances ~ log(1.25/delta)/"
                    "eps^2, so the estimate's noise (Lemma C.1) is ~ sqrt(log(1.25/delta)) alpha: "
                    "power 1/2. Theorem 3.2's C~ = 256 log(1.25/delta) log(2T 2^(D+1)/p) + ... "
                    "puts power 1 on it (with a union bound's log over the leaves) through the "
                    "early-return threshold 2 C~ alpha: the default stop_rule = scaled sets C~ = "
                    "c_stop (no log) and sample-complexity cells return no early, so neither "
                    "is carried"),
        LogFactor("n", 1.5, f"{_SEED001}, Theorem 3.2 / Lemma C.2: C~'s descent term 8 L1 F0 "
                            "sqrt(2D)(D/2+1)/(2 L0^2), with the depth D ~ log2 b <= log2 n the "
                            "rules set (rounds of b (D/2+1) records, leaf steps beta/(2^(D/2) M)): "
                            "power 3/2")),
    "recursive_regularization": (
        LogFactor("L1/lambda", 2, _STAGES),
        _delta(0.5, f"{_SEED001}, Theorem 5.1 / Lemma D.3: sigma_t^2 ~ K log(1/delta)/(n eps)^2, "
                    "alpha_t's d G^2 log(1/delta)/(lambda_t n^2 eps^2) under a square root")),
    "recursive_regularization_linear": (
        LogFactor("L1/lambda", 2, _STAGES + " (the rules' lambda >= M log(n)/n, as printed)"),
        LogFactor("n", 1, f"{_SEED001}, Lemma D.6: the PhasedSGD noise sigma^2 carries log^2(m) "
                          "(m = n/T <= n; power 1 on the privacy term), and lambda >= M log(n)/n "
                          "gives the last term M ||w*|| sqrt(log(n)/n) (power 1/2)"),
        _delta(0.5, f"{_SEED001}, Lemma D.5 / D.6: sigma^2 ~ log(1/delta)/(lambda n eps)^2")),
    "jl_private_spiderboost": (
        _delta(0.5, _SPIDERBOOST_DELTA + " (the base runs at delta/2)"),
        LogFactor("2n/delta", 1 / 3, _K + " = 2/3: power 1/3"),
        LogFactor("n", 1, _UNIFORM)),
    "jl_recursive_regularization": (
        LogFactor("L1/lambda", 2, _STAGES + " (the base's rules on the projected problem)"),
        _delta(0.5, f"{_SEED001}, Theorem 5.1 / Lemma D.3 (the base at delta/2): sigma_t^2 ~ "
                    "K log(1/delta)/(n eps)^2 under a square root"),
        LogFactor("2n/delta", 0.5, _K + " = 1: power 1/2"),
        LogFactor("n", 1, _UNIFORM)),
    "jl_dp_gd": (
        _delta(0.25, "the base DP-GD's (sqrt(k log(1/delta))/(n eps))^(1/2) at delta/2, the "
                     "descent lemma bound of the noisy_gd module (" + _WANG + ")"),
        LogFactor("2n/delta", 0.25, _K + " = 1/2: power 1/4"),
        LogFactor("n", 1, _UNIFORM)),
    "pasan": (_delta(0.5, f"{_SEED002}, Lemma 3.1 / Theorem 1: Gaussian noise of the moments "
                          "accountant, sqrt(log(1/delta))/(n eps) on the privacy term"),
              LogFactor("d", 0.5, _ISO_D)),
    "pagan": (_delta(0.5, f"{_SEED002}, Lemma 3.1 / Theorem 2: Gaussian noise of the moments "
                          "accountant, sqrt(log(1/delta))/(n eps) on the privacy term"),
              LogFactor("d", 2, f"{_SEED002}, Theorem 2, stylized case: the privacy term's "
                                "(sum_j sigma_j^(2/3))^(3/2) = H_d^(3/2) ~ (log d)^(3/2) for "
                                "sigma_j = j^(-3/2) (power 3/2), times sqrt(p) = sqrt(log d) of "
                                "the p = log d moments (power 1/2): one log d, power 2 in all: "
                                "polylog, exponent 0 in d")),
    "private_sgd_iso": (_delta(0.5, f"{_SEED002}, Lemma 3.1: Gaussian noise, sqrt(log(1/delta))/"
                                    "(n eps) on the privacy term"),
                        LogFactor("d", 0.5, _ISO_D)),
    "private_adagrad_iso": (_delta(0.5, f"{_SEED002}, Lemma 3.1: Gaussian noise, "
                                        "sqrt(log(1/delta))/(n eps) on the privacy term"),
                            LogFactor("d", 0.5, _ISO_D)),
    "pdp_sgd": (_delta(0.5, "Gaussian noise of private SGD, sqrt(log(1/delta))/(n eps) on the "
                            "privacy term (Zhou, Wu, Banerjee 2021, arXiv 2007.03813, their main "
                            "Theorem as seed 002 cites it)"),
                LogFactor("d", 0.5, "Zhou, Wu, Banerjee 2021, arXiv 2007.03813 (not among our "
                                    "sources; chosen from the standard step of their main "
                                    "Theorem): the public top-k subspace estimate's matrix "
                                    "concentration over d dimensions carries sqrt(log d) (in "
                                    "expectation too, unlike a union bound)")),
}
LOGS["pagan_private_scales"] = LOGS["pagan"]
LOGS["pagan_public_scales"] = LOGS["pagan"]

__all__ = ["LOGS"]
