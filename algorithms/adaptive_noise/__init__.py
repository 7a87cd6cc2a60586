"""Seed 002's adaptive-noise methods (Pasan, Pagan and the estimated-scale Pagans), the
isotropic baselines and PDP-SGD, with the private second-moment estimates they use."""

from algorithms.adaptive_noise.ellipsoid import (
    PDPSGD,
    Pagan,
    PaganPrivateScales,
    PaganPublicScales,
    Pasan,
    PrivateAdaGradIsotropic,
    PrivateSGDIsotropic,
)

__all__ = ["PDPSGD", "Pagan", "PaganPrivateScales", "PaganPublicScales", "Pasan",
           "PrivateAdaGradIsotropic", "PrivateSGDIsotropic"]
