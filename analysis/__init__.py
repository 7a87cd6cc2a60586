"""What the runs mean: the SOSP metric and samples-to-accuracy curves (`metrics`), rate fits
with bootstrap CIs, envelopes and paired differences (`rates`), claims and verdicts per
declared fit (`claims`), figures (`plots`), PDF reports (`report`) and the privacy
verification (`privacy_checks`, `audit`)."""
