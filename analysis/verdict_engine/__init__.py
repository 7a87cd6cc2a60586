"""The verdict engine (fourth edition, issue 42): how a fit becomes a statement about a paper.

A claim is an O~ upper bound: it hides constants and log factors and binds only where its
privacy term dominates. Before a verdict says "slower" or "faster" it allows for all three:

- `design`: the measured curve per design point (medians over seeds, the seeds themselves),
  from a fit's points;
- `log_factors`: the log factors each claim declares (`algorithms.claims.LogFactor`),
  evaluated at the design points (log T from the rules' horizon, log 1/alpha, log d, ...);
- `log_aware`: the measured curve against the claim times those logs, (log Q)^(t K) with
  t in [0, 1] and a free constant, fitted by a stratified bootstrap: "consistent", "consistent
  up to logs", or "slower / faster than claimed even with logs"; a polylog claim (exponent 0,
  a log factor on x itself) is fitted against log x this way, not as a power;
- `window`: the spread of the slope when the window moves (one design point dropped at either
  end) and the local slopes, added to the seeds' CI;
- `bound_level`: the claim as an envelope: its measured constant C (max over the window of
  measured / claim at constants 1) and whether the local slopes approach the claim's as x
  moves into the regime (such a curve "approaches its bound from below", it is not "slower");
- `rules_curve`: every family's own rules (`rules_bound` of each algorithm) at the design
  points: their slope, measured / rules per point, and the private share of the bound that
  gates the window (`PRIVATE_SHARE_MIN`);
- `decide`: the row's verdict from all of the above, in a fixed order;
- `one_model`: one verdict per claim when several fits (x, d, eps, rank, alpha) measure it;
- `edition_diff`: old -> new verdict per fit row between two editions of the claims CSV.

The fitting core the engine reads lives here too: `rates` (OLS slopes and the stratified
bootstrap), `envelope` (the tuned envelope, Harrell-Davis medians), `two_term` (power law plus
the non-private floor), `paired` (paired differences and crossovers), `flags` (the saturation
checks), `predictions` (the claim's predicted slope per fit) and `verdicts` (the CI against a
prediction, the verdict names, the regime gate).
"""
