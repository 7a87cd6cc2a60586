"""Counts mode: exact batch statistics without materializing records. `stream` draws how many
of each atom a batch holds (prefix-consistent, the record stream's distribution), `dataset`
does the same for a fixed data set of n records, and `kernels` holds their compiled draws."""
