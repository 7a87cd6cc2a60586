"""Seed 001's reduction for generalized linear models: a Johnson-Lindenstrauss projection in
front of DP-GD, private SpiderBoost or recursive regularization (the JL method)."""

from algorithms.glm.jl_method import JLDPGD, JLMethod, JLPrivateSpiderBoost, JLRecursiveRegularization

__all__ = ["JLDPGD", "JLMethod", "JLPrivateSpiderBoost", "JLRecursiveRegularization"]
