"""The evaluation of a point against a problem's exact oracles (the SOSP metric and its parts,
first-order and empirical metrics, samples-to-accuracy curves: `metrics`), with the batched
oracles (`batched_oracles`) and the lambda_min screen (`curvature_screen`) that make it cheap
along a trajectory. It needs nothing but the problems: a running sweep evaluates each finished
run here (bench.single_run) and never calls into analysis."""
