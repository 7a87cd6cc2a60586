"""Sweeps and their bookkeeping: specs (`config`), cell identities and paired seeds (`cells`),
one run of one cell (`single_run`), the parallel runner (`runner`) with its cost estimate
(`cost`), the SQLite results store (`store`, which also opens a store as the analysis reads it)
and the `dprates` command line (`cli`).

Imports: everything below it (`algorithms`, `problems`, `analysis`); nothing imports `bench`
except its own modules and the tests."""
