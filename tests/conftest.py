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


@pytest.fixture
def compiled_steps(monkeypatch) -> list[int]:
    """The O2 steps the compiled path ran, per kernel call (to show whether it ran)."""
    from algorithms.sosp import compiled_o2

    done: list[int] = []
    real = compiled_o2.O2Kernel.run

    def counting(self, *args):
        out = real(self, *args)
        done.append(out[0])
        return out

    monkeypatch.setattr(compiled_o2.O2Kernel, "run", counting)
    return done
