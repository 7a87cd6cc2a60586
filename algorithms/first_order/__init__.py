"""First-order private optimizers (population and empirical stationary points) and the
baselines people use; one contract with the Spider engine (`FirstOrderAlgorithm.run`)."""

from algorithms.first_order.base import FirstOrderAlgorithm
from algorithms.first_order.ellipsoid import (
    PDPSGD,
    Pagan,
    PaganPrivateScales,
    PaganPublicScales,
    Pasan,
    PrivateAdaGradIsotropic,
    PrivateSGDIsotropic,
)
from algorithms.first_order.jl_method import JLDPGD, JLMethod, JLPrivateSpiderBoost, JLRecursiveRegularization
from algorithms.first_order.noisy_gd import DPGD, DPSGD, NoisySGD
from algorithms.first_order.private_spiderboost import PrivateSpiderBoost
from algorithms.first_order.recursive_regularization import (
    RecursiveRegularization,
    RecursiveRegularizationLinear,
)
from algorithms.first_order.tree_private_spider import TreePrivateSpider

__all__ = [
    "DPGD",
    "DPSGD",
    "JLDPGD",
    "PDPSGD",
    "FirstOrderAlgorithm",
    "JLMethod",
    "JLPrivateSpiderBoost",
    "JLRecursiveRegularization",
    "NoisySGD",
    "Pagan",
    "PaganPrivateScales",
    "PaganPublicScales",
    "Pasan",
    "PrivateAdaGradIsotropic",
    "PrivateSGDIsotropic",
    "PrivateSpiderBoost",
    "RecursiveRegularization",
    "RecursiveRegularizationLinear",
    "TreePrivateSpider",
]
