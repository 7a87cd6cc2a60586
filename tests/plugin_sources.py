"""Plugin source shared by tests/test_plugin_privacy.py and tests/test_plugin_privacy_planted.py:
a compact DP-GD as a user writes it (one plugin file, no import from the tests), whose leaf,
noise and move are methods a variant overrides to plant a fault or add momentum. The test
files append their subclasses to this text and load the whole as one plugin."""

from __future__ import annotations

import textwrap

TOY_DPGD = textwrap.dedent('''
    import numpy as np
    import algorithms
    from algorithms import DPGD
    from algorithms.first_order.base import TrajectoryBuilder
    from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
    from algorithms.privacy.accounting.ledger import ledger_gdp
    from algorithms.privacy.mechanisms import clip_rows

    class ToyDPGD(DPGD):
        """DP-GD's rules and releases: full-batch clipped mean, Gaussian noise of std
        z 2 C / n, one release to the probe a step."""
        claims = ()

        def _leaf(self, per, C, n, t):
            return clip_rows(per, C).sum(axis=0) / n

        def _std(self, z, C, n, t):
            return z * 2 * C / n

        def _move(self, x, g, eta, state):
            return x - eta * g

        def _run(self, problem, stream, n, privacy, rng, p, deadline, probe, monitor):
            T, eta, C = int(p["T"]), float(p["eta"]), float(p["C"])
            z = composed_gaussian_multiplier(privacy.eps, privacy.delta, T)
            sample = stream.take(n)
            x, state = problem.x0.copy(), {}
            traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
            for t in range(T):
                leaf = self._leaf(problem.per_sample_grads(x, sample), C, n, t)
                std = self._std(z, C, n, t)
                g = leaf + std * rng.standard_normal(problem.d)
                if probe is not None:
                    probe.release(t=t + 1, oracle=1, x=x.copy(), batch=sample, clip=C, leaf=leaf,
                                  told=2 * C / n, denom=n, released=g.copy())
                x = self._move(x, g, eta, state)
                traj.step(x, t + 1, n, n, std, float(np.linalg.norm(g)))
            spent = ledger_gdp(gdp_mu(privacy.eps, privacy.delta), privacy.delta)
            p["privacy_mu"] = spent["mu"]
            return traj.build(x, T, n, T * n, "T_reached", spent, p, sample, [])
''')
