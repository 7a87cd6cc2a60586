"""The privacy audit, beside the mechanisms and accountant it checks: the sensitivity and noise
checks on recorded runs (`layers`), the black-box one-release audit (`audit`) and the
multi-release audit (`multi_release_audit`), the table of planted bugs over all three
(`fault_table`), the checks a plugin algorithm gets at its first private cell (`plugin_checks`)
and a plugin problem before its first cell (`problem_checks`), the privacy spent per run
(`ledger`) and the share of the budget each run spent by the accountant's PLD (`eps_spent`).
It runs algorithms, so it sits above the mechanisms in the import order, never below them."""
