"""Seed 001's convex methods: recursive regularization (Theorem 5.1) and its linear-loss form."""

from algorithms.convex.recursive_regularization import (
    RecursiveRegularization,
    RecursiveRegularizationLinear,
)

__all__ = ["RecursiveRegularization", "RecursiveRegularizationLinear"]
