"""Seed 001's first-order stationary-point finders (private SpiderBoost, the tree-based private
Spider) and the baselines people use (DP-GD, DP-SGD, one-pass noisy SGD); `base` holds the
first-order loop (`FirstOrderAlgorithm`) that every non-Spider family builds on."""

from algorithms.first_order.base import FirstOrderAlgorithm
from algorithms.first_order.noisy_gd import DPGD, DPSGD, NoisySGD
from algorithms.first_order.private_spiderboost import PrivateSpiderBoost
from algorithms.first_order.tree_private_spider import TreePrivateSpider

__all__ = ["DPGD", "DPSGD", "FirstOrderAlgorithm", "NoisySGD", "PrivateSpiderBoost", "TreePrivateSpider"]
