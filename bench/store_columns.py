"""The columns of a store's cells table and their SQLite types (one list, read by
`bench.store`, which writes them, and `bench.disclosure`, which says what each reveals)."""

from __future__ import annotations

#: Cell fields (bench.cells.Cell), stored as columns.
CELL_COLUMNS = {
    "problem": "TEXT", "problem_params": "TEXT", "algorithm": "TEXT", "params": "TEXT",
    "knobs": "TEXT", "n": "INTEGER", "d": "INTEGER", "eps": "REAL", "delta": "REAL",
    "rep": "INTEGER", "calibration": "TEXT", "base_seed": "INTEGER", "target_alpha": "REAL",
    "stop_at_target": "INTEGER", "data": "TEXT",
}
#: Every metric of problems.evaluation.metrics.evaluate (a test checks that none is missing).
METRIC_COLUMNS = {
    "alpha_best": "REAL", "grad_norm_best": "REAL", "lambda_min_best": "REAL",
    "samples_at_best": "INTEGER", "alpha_last": "REAL", "grad_norm_last": "REAL",
    "lambda_min_last": "REAL", "alpha_selected": "REAL", "grad_norm_selected": "REAL",
    "lambda_min_selected": "REAL", "alpha_x0": "REAL", "left_saddle": "INTEGER",
    "samples_used": "INTEGER", "n_steps": "INTEGER", "stop_reason": "TEXT", "eps_spent": "REAL",
    "n_o1": "INTEGER", "n_escapes": "INTEGER", "samples_to_target": "REAL",
    "target_metric": "TEXT",
    # what a search over n read as reaching (bench.n_search): best iterate | own output
    "target_reach": "TEXT", "pop_grad_best": "REAL", "pop_grad_last": "REAL",
    "emp_grad_best": "REAL", "emp_grad_last": "REAL", "emp_grad_selected": "REAL",
    "grad_x0": "REAL", "excess_best": "REAL", "excess_last": "REAL",
    # the empirical route (analysis.empirical_route): alpha_SOSP of F_S, issue 29
    "emp_alpha_best": "REAL", "emp_alpha_last": "REAL", "emp_alpha_selected": "REAL",
    "emp_lambda_min_best": "REAL", "alpha_at_emp_best": "REAL",
}
RUN_COLUMNS = {
    "status": "TEXT", "error_type": "TEXT", "error_message": "TEXT", "traceback": "TEXT",
    "params_used": "TEXT", "warnings": "TEXT", "data_digest": "TEXT", "first_o1_batch": "INTEGER",
    "delta_spent": "REAL", "mu_spent": "REAL", "accountant": "TEXT", "privacy_ledger": "TEXT",
    "privacy_check": "TEXT", "grad_evals": "INTEGER",
    # a multi-pass algorithm's target cell: every run of its search over n (bench.n_search)
    "n_search": "TEXT",
    # hidden by the accountant (a Poisson family's realized batch sizes): bench.disclosure
    "evaluation_only": "TEXT",
    "wall": "REAL", "cpu": "REAL", "run_wall": "REAL", "eval_wall": "REAL",
    "dprates_version": "TEXT", "git_commit": "TEXT", "python": "TEXT", "numpy": "TEXT",
    "plugins": "TEXT",
    "host": "TEXT", "pid": "INTEGER", "started": "TEXT", "finished": "TEXT",
}
ALL_COLUMNS = {**CELL_COLUMNS, **METRIC_COLUMNS, **RUN_COLUMNS}
JSON_COLUMNS = ("problem_params", "params", "knobs", "params_used", "warnings", "privacy_ledger",
                "evaluation_only", "n_search")

__all__ = ["ALL_COLUMNS", "CELL_COLUMNS", "JSON_COLUMNS", "METRIC_COLUMNS", "RUN_COLUMNS"]
