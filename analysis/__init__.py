"""What the runs mean: the SOSP and first-order metrics and samples-to-accuracy curves
(`metrics`); rate fits with bootstrap CIs (`rates`: the fit core; `envelope`: the tuned
envelope; `two_term`: power law plus floor; `paired`: paired differences); claims per declared
fit (`claims`, from the fit's points `points`, the predictions `predictions`, the flags' measures
`flags` and the verdicts and regime gate `verdicts`), the path-length table (`path_length`);
the PDF report, its plots and tables (`report`) and the privacy verification (`privacy_checks`).

Imports: `algorithms`, `problems` and the declarations in `analysis.declarations`; never
`bench` (it reads stores and specs and hands them down as `StoreData`; tests/test_docs.py
checks the import graph)."""
