"""How privacy is checked, in three layers: the sensitivity and noise checks on recorded runs
(`layers`), the black-box one-release audit (`audit`) and the multi-release audit
(`multi_release_audit`), the table of planted bugs over all three (`fault_table`), the checks a
plugin algorithm gets at its first private cell (`plugin_checks`), and the privacy spent per
run (`ledger`)."""
