"""Second-order stationary points: the Spider engine (`spider`) and its three variants
(`spiders`: Ganesh et al.'s Gaussian Spider, the fixed-batch and the adaptive-batch tree Spider)."""

from algorithms.sosp.spider import Spider
from algorithms.sosp.spiders import AdaptiveTreeSpider, GaussianSpider, TreeSpider

__all__ = ["AdaptiveTreeSpider", "GaussianSpider", "Spider", "TreeSpider"]
