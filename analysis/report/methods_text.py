"""The report's Methods page (`METHODS`, refilled and set by `analysis.report.build.write_report`):
what is measured, the two views, fits and CIs, data modes, theory vs tuned mode, censoring,
verdicts, which way each x counts and the regime gate.
"""


METHODS = """\
What is measured. alpha_SOSP(x) = max(|grad F(x)|, max(0, -lambda_min(hess F(x)))^2 / rho), the
smallest alpha for which x is an alpha-second-order stationary point (seed 000, Definition 1.2),
computed from the problem's exact population gradient and Hessian. A run's running minimum over its
stored iterates is its "best" output (the theorems' "at least one output").

Two views (README, the protocol, items 2-3). Sample complexity (primary): each cell configures an
algorithm for a target alpha and gives it a generous prefix-consistent stream; n* is the number of
samples consumed when the running minimum first falls to <= the target. The claim alpha ~
(sqrt(d)/(n eps))^p predicts log n* against log alpha with slope -1/p (-2 for p = 1/2, -7/3 for
p = 3/7), slope -1 in eps and +1/2 in d. Error at a fixed budget: alpha achieved with n samples
against x = sqrt(d)/(n eps), slope p. Predictions come from each algorithm's claimed exponent.

Fits and CIs. Error view: OLS slopes in log-log space over every repetition in the fit window,
which the spec declares before the run; 95% CIs from a stratified bootstrap that resamples
repetitions within each design point (2000 resamples), widened by sqrt(m/(m-1)) t_{N-2}/z for m
repetitions and N points; the OLS standard error alongside; in x = sqrt(d)/(n eps) also the
power law plus floor a x^p + b n^{-1/3} (eps = inf runs pin b). Sample-complexity view: OLS
slopes through the Harrell-Davis medians of n* per design point, the bootstrap resampling
repetitions before taking medians. Calibration tests check 90-98% coverage on simulated data.

Data modes. "records": every record is drawn and its per-sample gradient computed. "counts" (exact
batch statistics): on problems whose records take finitely many values, the stream hands out the
value counts of the next k records, distributed exactly as for k i.i.d. records and prefix-
consistent (a tree of binomial / hypergeometric draws); subsamples come from exact reads of the
counts (binomial thinning, hypergeometric splits), and every clipped or projected batch mean is
computed per atom on atoms problems, or on two-point problems only where a guard on public values
(the whole support at the public iterate) proves the clip the identity. It is the same algorithm on
the same distribution; tests hold it equal to record mode on records made from the same counts. The
privacy verification runs in record mode. The title page names each problem's mode.

Theory vs tuned mode. Theory mode runs every hidden constant (knob) at 1: it checks the parameter
rules as written. Tuned mode takes, at each design point, the best median over the spec's knob grid
(the envelope; non-private tuning), with the bootstrap resampling repetitions before taking the
minimum so that the CI includes the selection.

Censoring. A run that never reached its threshold (its budget or its own horizon T ran out) is
censored and counts as n* = inf: a design point is excluded (and counted) only when its median is
censored. Flags: "ceiling" (a run never left the start saddle, or the window's top is
within 10x of the start saddle's alpha_SOSP), "floor" (a design point within 3x of its eps = inf
median). A flagged window is reported as declared, never moved. Advisory, in the CSV column
`advisory` and not a flag: "floor unchecked" (design points with no eps = inf run of their n
and d to compare with; the forecast from the rules gates such a fit).

Verdicts (fifth and sixth editions). Margin m = |p|/24 (>= 0.025): a quarter of the 1/3 between the SOSP
claims in n*. Primary: the residual slope, measured minus the algorithm's own rules (its bound
as implemented, logs included), CI inside +-m: "follows its rules"; outside: "slower / faster
than its rules by X"; across: "undecided". If the rules' own local slope tends to the claim
(evaluated beyond the design, privacy-dominated): "follows its rules, whose asymptote is the
claim". Secondary, the O~ test: the CI against the claim's band (its declared logs, +-m):
"consistent" (inside p +- m), "not refuted (accepts a..b)", "slower / faster than claimed";
"untestable on this window" where a..b holds the rival claim (the Spiders; Pasan and Pagan).
Sixth edition: the first test that decides is the verdict, on any design (a short one is
marked): "exceeds its bound" (the seeds' mean above the rules' bound beyond a one-sided 95%
interval, Bonferroni over the points), then a rejected rules test ("slower / faster than its
rules by X", whatever the O~ test says), the chain, the O~ test. "design too short" only where
no test decides and every CI half-width exceeds m, with the design that would decide. Every row
gives the band of pure power-law slopes that receive its verdict. A benign problem is expected
to read "faster than claimed".

Which way each x counts. "Faster" always means the favourable side in the regime the claim is
about, and that regime differs by x: against x = sqrt(d)/(n eps) it is x -> 0 (large n), so a
larger error exponent is faster; against eps it is eps -> 0 (strong privacy), so an error
exponent above the claim's (less negative) is faster: the error grows more slowly as eps
shrinks. A weak eps dependence therefore reads "slower" against privacy and "faster" against eps:
one fact, two directions. In samples, n* against alpha or eps: a slope above the claim's (less
negative) is faster. Against n, d or rank: an exponent below the claim's is faster. Every fit
table carries this line for its x.

The regime gate. A fit whose window fails the gate (a "ceiling" flag: the window reaches within
10x of the start's metric, or runs never halved it; a "floor" flag: a design point within 3x of
the eps = inf median) gets the verdict "not in regime" with that reason, never consistent /
slower / faster, and is counted so; censoring is counted, not gated. A target at or above the
start's metric is refused when the spec is checked. Before the run the dry run forecasts each
fit from its claim's bound with every hidden constant at 1: a design point where the bound is
above a tenth of the start's metric is a ceiling, one where the statistical term outweighs
the privacy term a floor. For the Spiders the balance comes from their own rules (the private
part of the sample budget or accuracy against the non-private part), and a failure there gates
the verdict too; elsewhere the forecast is advisory. A claim that no fit measures in regime is
"out of reach" when its bound binds only past n = 1e12, with the n where it would.
"""

#: The legend under every exported claims table (`tables.summary_notes`, README Results).
CLAIMS_LEGEND = ("Measured: slope [95% CI] of the fit that decides the claim; claimed: the slope "
    "its O~ rate predicts; rules: the slope of the algorithm's own rules (log factors "
    "included); against its rules: the residual slope (measured minus rules) [CI] "
    "against the declared margin m (follows: the CI inside +-m; slower / faster: "
    "outside; undecided: across); resolution: the pure power laws each test would "
    "accept on this design, first the slopes that would receive this row's verdict "
    "(planted pure power laws; CI-tested). Sixth edition: the first test that decides "
    "is the verdict, on any design: \"exceeds its bound\": the seeds' mean above the "
    "algorithm's own bound beyond its one-sided 95% interval; \"slower / faster than its "
    "rules by X\": the rules test rejected, whatever the O~ test says; \"follows its "
    "rules and reaches the claim on its deepest decade\": the rules test holds and, on a "
    "window of two decades or more, the measured slope over its deepest decade is within "
    "+-m of the claim (CI-resolved); \"follows its rules, whose asymptote is the claim\": "
    "the rules test holds and the rules' local slope tends to the claimed one (the link "
    "read off the rules); \"reaches the claim on its deepest decade\": the rules test "
    "undecided, the O~ test not rejected, the deepest decade within +-m; \"not refuted "
    "by the O~ claim\": the CI meets the "
    "claim's band (its declared logs, +-m); \"untestable on this window\": that band "
    "accepts the rival claim too; \"design too short\": no test decides and every CI "
    "is wider than m (the reason names the design that would decide). A fit that "
    "fails the regime gate (ceiling or floor) is \"not in regime\" "
    "with the reason, never consistent / slower / faster; its slope is shown in "
    "parentheses: the saturation's, not a measurement of the claim.")
