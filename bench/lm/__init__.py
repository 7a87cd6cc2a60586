"""Seed 002's language-model experiment at workstation scale (issue 74): private LSTM language
models on the Shakespeare corpus, Pagan and Pasan against DP-SGD, SGD and AdaGrad.

`setup` (the stated scale, the data and the public moments), `train` (one run), `grid` (the
grid, its store and the resumable parallel driver: `python -m bench.lm`, `make reference-lm`)."""
