"""The box domain X = [-box, box]^d of seed 002's (piecewise-)linear problems (Asi et al. 2021,
arXiv 2106.13756): the start x0 = 0, the constants' domain fields, and zero curvature (the
Hessian vanishes wherever it exists, so M = rho = 0). Their algorithms project onto the box,
so the loss may be unbounded outside it."""

from __future__ import annotations

import math

import numpy as np

from problems.base import Constants


class BoxDomain:
    """Mixin for piecewise-linear losses on [-box, box]^d (set `box`; default the unit box)."""

    #: The feasible set is the box [-box, box]^d.
    box = 1.0

    @property
    def x0(self) -> np.ndarray:
        return np.zeros(self.d)

    def box_constants(self, G: float, B0: float) -> Constants:
        """Constants with M = rho = 0 (piecewise-linear losses) on the box (l2 radius
        box sqrt(d))."""
        return Constants(G=G, M=0.0, rho=0.0, B0=B0, domain=f"box [-{self.box}, {self.box}]^d",
                         domain_radius=self.box * math.sqrt(self.d))

    def population_hessian(self, x):
        return np.zeros((self.d, self.d))

    def population_hvp(self, x, v):
        return np.zeros(self.d)

    def population_lambda_min(self, x):
        return 0.0
