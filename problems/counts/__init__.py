"""Counts mode: exact batch statistics without materializing records. `stream` draws how many
of each atom a batch holds (prefix-consistent, the record stream's distribution),
`coordinates` does it with one tree per coordinate of a product layout (read lazily: a map
that needs two coordinates walks two), `dataset` does the same for a fixed data set of n
records, and `kernels` holds their compiled draws."""
