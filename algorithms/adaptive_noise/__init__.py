"""Seed 002's adaptive-noise methods (Pasan, Pagan and the estimated-scale Pagans), the
isotropic baselines and PDP-SGD, with the private second-moment estimates they use."""

from algorithms.adaptive_noise.baselines import PDPSGD, PrivateAdaGradIsotropic, PrivateSGDIsotropic
from algorithms.adaptive_noise.ellipsoid import Pagan, Pasan
from algorithms.adaptive_noise.estimated_scales import PaganPrivateScales, PaganPublicScales

__all__ = ["PDPSGD", "Pagan", "PaganPrivateScales", "PaganPublicScales", "Pasan",
           "PrivateAdaGradIsotropic", "PrivateSGDIsotropic"]
