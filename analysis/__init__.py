"""What the runs mean: the SOSP and first-order metrics and samples-to-accuracy curves
(`metrics`), rate fits with bootstrap CIs, envelopes and paired differences (`rates`), claims,
verdicts and the declared-claims table per fit (`claims`), figures (`plots`), PDF reports
(`report`) and the privacy verification (`privacy_checks`, `audit`, `multi_release_audit`).

Imports: `algorithms`, `problems` and the declarations in `analysis.declarations`; never
`bench` (it reads stores and specs and hands them down as `StoreData`; tests/test_docs.py
checks the import graph)."""
