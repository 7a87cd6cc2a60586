"""The verdict engine (fifth edition, issue 55): how a fit becomes a statement about a paper
that can fail.

A claim is an O~ upper bound: it hides constants and log factors and binds only where its
privacy term dominates. The engine tests the measured curve against the algorithm's own bound
first and reads the O~ claim second, each with a declared margin and its resolution:

- `design`: the measured curve per design point (medians over seeds, the seeds themselves);
- `margins`: the declared margin m (a quarter of the headline gap, relative; at least 0.025),
  the design rule (>= 5 points over >= 1.5 decades) and the rival claims;
- `rules_curve`: every family's own rules (`rules_bound` / `theory_budget`) at the design
  points: their slope, measured / rules, the private share of the bound;
- `rules_test`: the primary test, the residual slope (measured minus rules) with its CI against
  +-m: follows / slower / faster than its rules / undecided, and the pure power laws it accepts;
- `asymptote`: the rules' local slope in the claim's limit (privacy-dominated), against the
  claim: the second link of "follows its rules, whose asymptote is the claim";
- `log_factors`: the log factors each claim declares (`algorithms.claim_logs`), at the design
  points, and the slope they allow at full power;
- `claim_test`: the O~ test, the seeds' CI against the claim's band (its logs, +-m), with the
  range of pure power laws it accepts and "untestable on this window" where that range holds
  the rival claim;
- `log_aware`: the log power share t (reported beside the band);
- `window`: the spread of a slope when the window moves, and the local slopes;
- `bound_level`: the claim as an envelope (its measured constant) and the measured local slopes
  extrapolated to the claim's limit (reported; the fifth edition's "approaches its bound from
  below", no longer a verdict);
- `decide`: the row's columns from all of the above;
- `verdict_rule` (sixth edition, issue 70): the first test that decides is the verdict, on any
  design (the bound exceeded, the rules test rejected, the chain, the O~ test, untestable,
  design too short only where no test can decide), and the band of pure power-law slopes that
  receive it; `typed`: the verdict as a value (kind, direction), its text rendered from it;
- `replant`: a claims row replayed from its committed points, and pure power laws planted on
  them (tests/test_planted_bands.py);
- `one_model`: one verdict per claim when several fits (x, d, eps, rank, alpha) measure it;
- `edition_diff`: old -> new verdict per fit row between two editions of the claims CSV.

The fitting core the engine reads lives here too: `rates` (OLS slopes and the stratified
bootstrap), `envelope` (the tuned envelope, Harrell-Davis medians), `two_term` (power law plus
the non-private floor), `paired` (paired differences and crossovers), `flags` (the saturation
checks and the measured private share), `predictions` (the claim's predicted slope per fit) and
`verdicts` (a CI against a prediction with the margin, the verdict names, the regime gate).
"""
