"""Plugin source for tests/test_plugin_leaks.py: the leaking plugins of issue 56, each a plausible
research bug written as a user would (one plugin file, no import from the tests), and the
honest plugins they derive from: DP-GD with momentum and Poisson DP-SGD, self-noised and on the
release API.

The self-noised loop (`_Loop`) clips, noises and accounts exactly as the release desk does
(full batch: GDP-composed noise z 2C / n; Poisson batches at q = b / n: dp-accounting's PLD,
noise z C / b on the sum over b), reports every release to the probe, and logs the released
norm. A subclass sets `fault` to one bug of the list."""

from __future__ import annotations

import textwrap

LEAKS = textwrap.dedent('''
    import copy

    import numpy as np

    import algorithms
    from algorithms import DPGD, DPSGD
    from algorithms.first_order.base import TrajectoryBuilder
    from algorithms.privacy.accounting.gdp import composed_gaussian_multiplier, gdp_mu
    from algorithms.privacy.accounting.ledger import ledger_gdp, ledger_pld
    from algorithms.privacy.accounting.pld import poisson_gaussian_calibration
    from algorithms.privacy.mechanisms import clip_rows
    from algorithms.release_api import PrivateByConstruction, ReleasePlan


    class _Loop:
        """Self-noised DP-GD (full batch) or DP-SGD (Poisson batches), heavy-ball momentum beta."""
        claims = ()
        fault = ""
        poisson = False
        beta = 0.0
        #: the noise cap of fault "capped" (set by the test)
        cap = 0.1

        def _run(self, problem, stream, n, privacy, rng, p, deadline, probe, monitor):
            T, eta, C = int(p["T"]), float(p["eta"]), float(p["C"])
            sample = np.asarray(stream.take(n), dtype=float)
            if self.fault == "standardize":  # the sample's own statistics: every record moves
                sample = (sample - sample.mean(axis=0)) / (sample.std(axis=0) + 1e-12)
            if self.poisson:
                b = int(p["b"])
                cal = poisson_gaussian_calibration(privacy.eps, privacy.delta, min(1.0, b / n), T)
                z, denom = cal.scale, b
            else:
                z = composed_gaussian_multiplier(privacy.eps, privacy.delta, T)
                denom = n
            x, v = problem.x0.copy(), np.zeros(problem.d)
            traj = TrajectoryBuilder(x, T, p["max_iterate_floats"])
            draw, first, stop, t = None, None, "T_reached", 0
            for t in range(1, T + 1):
                if self.poisson:
                    sampler = np.random.default_rng(0) if self.fault == "same_batch" else rng
                    batch = sample[sampler.random(n) < b / n]
                    if self.fault == "capped_batch":  # a memory cap the ledger never hears of
                        batch = batch[:150]
                    if self.fault == "shuffled":  # epochs of a shuffle, each record once
                        at = (t - 1) * b % n
                        if at == 0:
                            perm = rng.permutation(n)
                        batch = sample[perm[at:at + b]]
                else:
                    batch = sample
                per = problem.per_sample_grads(x, batch)
                clip = C
                if self.fault == "median_clip":  # clip and noise at the batch's median norm
                    clip = float(np.median(np.linalg.norm(per, axis=1)))
                if self.fault == "raise_10C":  # no clipping; refuses records past 10 C instead
                    if np.linalg.norm(per, axis=1).max() > 10 * C:
                        raise ValueError("a record's gradient is past 10 C")
                    leaf = per.sum(axis=0) / denom
                elif self.fault == "refresh" and rng.random() < 0.1:  # an unclipped refresh
                    leaf = per.sum(axis=0) / denom
                elif self.fault == "float32_clip":  # the clip in float32: an outlier's norm is inf
                    h = per.astype(np.float32)
                    norm = np.sqrt((h * h).sum(axis=1))
                    leaf = (h * np.minimum(1.0, clip / norm)[:, None]).astype(float).sum(axis=0) / denom
                else:
                    leaf = clip_rows(per, clip).sum(axis=0) / denom
                std = z * (clip if self.poisson else 2 * clip) / denom
                if self.fault == "tenth" and t % 10 == 0:
                    std = 0.0
                if self.fault == "quiet":  # noise a hundredth of what the budget needs
                    std = std / 100
                if self.fault == "typo" and privacy.eps == 0.7:  # a noise table's one bad row
                    std = std / 10
                if self.fault == "capped":
                    std = min(std, self.cap)
                if self.fault == "one_draw":
                    draw = rng.standard_normal(problem.d) if draw is None else draw
                    g = leaf + std * draw
                elif self.fault == "anticorrelated":  # (w_t - w_{t-1}) / sqrt 2: the right
                    w = rng.standard_normal(problem.d)  # variance, cancelling in any sum
                    g = leaf + std * (w - (draw if draw is not None else 0.0)) / np.sqrt(2)
                    draw = w
                else:
                    g = leaf + std * rng.standard_normal(problem.d)
                if probe is not None and self.fault != "no_probe":
                    probe.release(t=t, oracle=1, x=x.copy(), batch=batch, clip=clip, leaf=leaf,
                                  told=2 * clip / denom, denom=denom, released=g.copy())
                step = leaf if self.fault == "clean_step" else g
                v = self.beta * v + step
                x = x - eta * v
                logged = leaf if self.fault == "log_clean" else g
                traj.step(x, t, n, b if self.poisson else n, std, float(np.linalg.norm(logged)))
                first = first if first is not None else float(np.linalg.norm(leaf))
                if self.fault == "early_stop" and np.linalg.norm(leaf) < 0.5 * first:
                    stop = "stopped_by_algorithm"
                    break
            spent = ledger_pld(cal) if self.poisson else \\
                ledger_gdp(gdp_mu(privacy.eps, privacy.delta), privacy.delta)
            p["privacy_mu"] = spent["mu"] if spent["mu"] is not None else float("nan")
            made = b * t if self.poisson else n * t
            return traj.build(x, t, n, made, stop, spent, p, sample, [])


    @algorithms.register
    class MomentumGD(_Loop, DPGD):
        name = "leak_honest_momentum_gd"
        beta = 0.5


    @algorithms.register
    class PoissonSGD(_Loop, DPSGD):
        name = "leak_honest_poisson_sgd"
        poisson = True


    FAULTS = {
        "clean_step": MomentumGD, "one_draw": MomentumGD, "same_batch": PoissonSGD,
        "shuffled": PoissonSGD, "float32_clip": MomentumGD, "capped_batch": PoissonSGD,
        "anticorrelated": MomentumGD, "typo": MomentumGD,
        "early_stop": MomentumGD, "log_clean": MomentumGD, "median_clip": PoissonSGD,
        "standardize": MomentumGD, "tenth": MomentumGD, "raise_10C": MomentumGD,
        "refresh": MomentumGD, "capped": MomentumGD, "no_probe": MomentumGD,
        "quiet": MomentumGD,
    }
    for _fault, _base in FAULTS.items():
        algorithms.register(type(f"Leak_{_fault}", (_base,),
                                 {"name": f"leak_{_fault}", "fault": _fault}))


    class DeskMomentumGD(PrivateByConstruction):
        """DP-GD with heavy-ball momentum on the release API."""
        name, setting = "leak_desk_momentum_gd", "empirical"
        params_used, knob_defaults = DPGD.params_used, DPGD.knob_defaults
        theory_params = classmethod(DPGD.theory_params.__func__)
        data_modes, counts_rereads = DPGD.data_modes, DPGD.counts_rereads
        claims = ()
        beta, fault = 0.5, ""

        def release_plan(self, p, n, privacy):
            return ReleasePlan("full", int(p["T"]), float(p["C"]))

        def steps(self, desk, public):
            x, v, eta = public.x0.copy(), np.zeros(public.d), float(public.params["eta"])
            sample = None
            if self.fault:  # the bug: the sample dug out of the desk, past the window
                sample = np.asarray(desk._ReleaseWindow__desk.sample, dtype=float)
            for _ in range(desk.plan.releases):
                if self.fault == "desk_live_noise":  # the run's generator, dug out of the desk
                    ahead = copy.deepcopy(desk._ReleaseWindow__desk._rng)
                g = desk.mean_gradient(x)
                if self.fault == "desk_live_noise":  # its noise predicted and subtracted
                    g = g - desk.last_noise_std * ahead.standard_normal(public.d)
                if self.fault == "desk_clean_step":
                    g = g - 1e-3 * sample[:, 0].mean()
                v = self.beta * v + g
                x = x - eta * v
                if self.fault == "desk_unwatched" and desk._ReleaseWindow__desk._probe is None:
                    x = 0.99 * x  # behaves otherwise when nobody watches
                yield x
                if self.fault == "desk_early_stop" and sample[:, 0].mean() > 0.5:
                    return


    class DeskPoissonSGD(DeskMomentumGD):
        name = "leak_desk_poisson_sgd"
        params_used, knob_defaults = DPSGD.params_used, DPSGD.knob_defaults
        theory_params = classmethod(DPSGD.theory_params.__func__)
        data_modes, counts_rereads = DPSGD.data_modes, DPSGD.counts_rereads
        beta = 0.0

        def release_plan(self, p, n, privacy):
            return ReleasePlan("poisson", int(p["T"]), float(p["C"]), int(p["b"]))


    class DeskAccumulate(DeskMomentumGD):
        """Three releases at each iterate, averaged into one step (gradient accumulation)."""
        name, beta = "leak_desk_accumulate", 0.0

        def steps(self, desk, public):
            x, eta = public.x0.copy(), float(public.params["eta"])
            while desk.remaining >= 3:
                g = sum(desk.mean_gradient(x) for _ in range(3)) / 3
                x = x - eta * g
                yield x


    class DeskNoisedStop(DeskMomentumGD):
        """Stops once the released gradient norm falls below 0.3 of the first: a decision on
        released values only (a neighbouring data set may flip it, honestly)."""
        name, beta = "leak_desk_noised_stop", 0.0

        def steps(self, desk, public):
            x, eta, first = public.x0.copy(), float(public.params["eta"]), None
            for _ in range(desk.plan.releases):
                g = desk.mean_gradient(x)
                first = first if first is not None else float(np.linalg.norm(g))
                x = x - eta * g
                yield x
                if np.linalg.norm(g) < 0.3 * first:
                    return


    #: eps -> the last iterate of a run at that eps (the warm start's module state)
    _WARM = {}


    class DeskWarmStart(DeskMomentumGD):
        """Starts a run from the last iterate of a run at a looser eps (on the same data, in
        this process): a tighter run that reads a looser one's output."""
        name, beta = "leak_desk_warm_start", 0.0

        def steps(self, desk, public):
            eps, eta = desk.privacy.eps, float(public.params["eta"])
            looser = [e for e in _WARM if e > eps]
            x = _WARM[min(looser)].copy() if looser else public.x0.copy()
            for _ in range(desk.plan.releases):
                x = x - eta * desk.mean_gradient(x)
                yield x
            _WARM[eps] = x.copy()


    algorithms.register(DeskMomentumGD)
    algorithms.register(DeskWarmStart)
    algorithms.register(DeskPoissonSGD)
    algorithms.register(DeskAccumulate)
    algorithms.register(DeskNoisedStop)
    for _fault in ("desk_clean_step", "desk_early_stop", "desk_unwatched", "desk_live_noise"):
        algorithms.register(type(f"Leak_{_fault}", (DeskMomentumGD,),
                                 {"name": f"leak_{_fault}", "fault": _fault}))
''')
