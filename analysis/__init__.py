"""What the runs mean: rate fits with bootstrap CIs (`rates`: the fit core; `envelope`: the
tuned envelope; `two_term`: power law plus floor; `paired`: paired differences); claims per
declared fit (`claims`, from the fit's points `points`, the predictions `predictions`, the flags'
measures `flags` and the verdicts and regime gate `verdicts`), the path-length table
(`path_length`); which algorithm wins where (`comparisons`); the PDF report, its plots and
tables (`report`). The evaluation of points lives beside the problems (`problems.evaluation`;
`analysis.metrics` re-exports the design's names) and the privacy audit beside the mechanisms
(`algorithms.privacy.audit`).

Imports: `algorithms`, `problems` and the declarations in `analysis.declarations`; never
`bench` (it reads stores and specs and hands them down as `StoreData`; tests/test_docs.py
checks the import graph)."""
