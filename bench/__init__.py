"""Sweeps and their bookkeeping: specs (`config`, with `config_values`, `config_parameters` and
`config_grid_checks`), cell identities and paired seeds (`cells`), one run of one cell
(`single_run`), the parallel runner (`runner`) with its cost estimate (`cost`), the SQLite
results store (`store`, which also opens a store as the analysis reads it) and the `dprates`
command line (the package `cli`, one module per command group).

Imports: everything below it (`algorithms`, `problems`, `analysis`); nothing imports `bench`
except its own modules and the tests."""
