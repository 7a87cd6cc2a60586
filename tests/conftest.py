import numpy as np
import pytest

import problems

#: Small instances of every problem (the real-data one only when scikit-learn is installed).
SMALL = {
    "strict_saddle": {"d": 5},
    "hard_valley": {"d": 5},
    "hard_ramp": {"d": 5, "alpha": 0.05},
    "phase_retrieval": {"d": 5},
    "logistic": {"d": 5, "n_atoms": 300},
    "mean_estimation": {"d": 5},
    "glm": {"d": 5, "rank": 3, "n_atoms": 300},
}


def make(name: str, **extra) -> problems.Problem:
    return problems.get_problem(name, **{**SMALL[name], **extra})


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)
