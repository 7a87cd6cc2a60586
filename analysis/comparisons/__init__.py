"""Which algorithm wins where: the comparisons between algorithms on one axis.

- `compare`: samples (or error) to a target per algorithm, paired over seeds, with the passes
  and gradient evaluations beside them.
- `atlas`: per metric and instance, the winner at every design point with its margin over the
  runner-up (`atlas_map`: its maps; `atlas_recommend`: one recommendation line for a user's
  n, d, eps and target).
- `crossover_law`: where the adaptive tree Spider starts to need fewer samples than the
  Gaussian one, and the law of that crossover in eps and d (`crossover_files`: its CSVs).
- `sensitivity`: how the crossover moves when each Spider's hidden constants move.

Data flows one way: these modules read stores and fit tables (`analysis.points`,
`analysis.verdict_engine`) and are read by `analysis.report` and `bench.cli`.
"""
