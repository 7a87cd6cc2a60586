"""Sweeps and their bookkeeping: specs (`config`), cell identities and paired seeds (`cells`),
one run of one cell (`single_run`), the parallel runner (`runner`) with its cost estimate
(`cost`), the SQLite results store (`store`) and the `dprates` command line (`cli`)."""
