"""Seed 002's language-model experiment at workstation scale (issue 74): the corpus, split by
work into private training, public, validation and test parts (`corpus`)."""
