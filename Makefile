# From Tokens to Vectors: set-up, build and tests.
#   make install  create .venv and install the pinned requirements, nothing else (a learner's set-up)
#   make book   create .venv if needed, install the pinned requirements, build the site into _build/html
#   make book STUDENT=1  the student site instead: no solutions anywhere, no instructor guide, the
#               chapters' download and Colab/Binder buttons give the student notebooks of student/;
#               built into _build/student-site/_build/html (tools/student_site.py)
#   make pdf    the whole book as one PDF with a bookmark per page: _build/pdf/tokens-to-vectors.pdf,
#               printed from the built site, offline (tools/pdf.py; STUDENT=1: the student site,
#               _build/pdf/tokens-to-vectors-student.pdf). Needs Debian's Chromium:
#               `apt-get install chromium` (Playwright and pypdf come with the requirements)
#   make test   create .venv if needed, install, run every test (package, notebooks, strict book build)
#   make check  the fast loop while you work: lint (ruff) and the unit tests, about two minutes
#   TORCH=cpu   (with install, book, test or check) install requirements-cpu.txt: torch's 192 MB CPU build
#               instead of 2.7 GB of CUDA wheels, for machines without an NVIDIA GPU
#   make serve  preview the built site on http://localhost:8000
#   make clean  remove build outputs (keeps .venv; 'make distclean' removes it too)
#   make outputs  re-run every notebook top to bottom in a fresh kernel and store its outputs
#   make student  regenerate the student handout in student/ (nbgrader release notebooks: plain Jupyter
#               Markdown, solutions replaced by TODO cells, visible tests; committed, checked by the tests)
#   make figures  redraw the chapters' diagrams into chapters/figures/ (tokvec.course.figures: an SVG
#               for the site and a PNG for the student notebooks each; committed, checked by the tests)
#   make grade SUBMISSIONS=folder [GRADES=grades.csv] [ONLY=05_positional_embedding] [JOBS=2]
#               [TIMEOUT=seconds] [COURSE=folder]  autograde a class's notebooks offline (nbgrader):
#               folder/<student>/<chapter>.ipynb -> a CSV of points per student per exercise (no
#               maximum row: ready for an LMS; the maxima in grades.max.csv), one progress line per
#               notebook. Collect an LMS export first: python -m tokvec.course.collect --help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
TORCH  ?= cuda
REQUIREMENTS := $(if $(filter cpu,$(TORCH)),requirements-cpu.txt,requirements.txt)
STAMP  := $(VENV)/.installed-$(TORCH)
PORT   ?= 8000
NOTEBOOKS := $(shell find chapters -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)
JB_FLAGS := -W -n --keep-going --builder html

.PHONY: install book test check serve clean distclean lock outputs student figures grade pdf

$(STAMP): $(REQUIREMENTS) pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(REQUIREMENTS)
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# A learner's set-up: the virtual environment with the pinned packages, nothing else.
install: $(STAMP)
	@echo "Installed in $(VENV). Start Jupyter with: $(BIN)/jupyter lab"

STUDENT ?=
book: $(STAMP)
ifeq ($(STUDENT),1)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tools/student_site.py
else
	$(BIN)/jupyter-book build . $(JB_FLAGS)
	@echo "The site is in _build/html. Open: file://$(CURDIR)/_build/html/index.html"
endif

# The book as one PDF, printed page by page from the site just built (`make book` first) by
# Debian's Chromium through Playwright, joined with pypdf. Needs: apt-get install chromium.
pdf: book
ifeq ($(STUDENT),1)
	$(BIN)/python tools/pdf.py --site _build/student-site/_build/html \
	    --toc _build/student_config/_toc.yml --out _build/pdf/tokens-to-vectors-student.pdf
else
	$(BIN)/python tools/pdf.py --site _build/html --toc _toc.yml --out _build/pdf/tokens-to-vectors.pdf
endif

# `make test` runs two pytest sessions side by side, one per core, of about equal length: the
# notebooks (nbval) with the grading, class-grading, install, CPU-benchmark and most
# process-group tests, and every other test. The tests that build the site (test_book,
# test_site, test_pdf, test_student_site, test_accessibility) stay in one session: they share
# the build in _build/. The first session's report is printed after the second's.
SIDE := tests/test_grading.py tests/test_install.py tests/test_grade_class.py \
        tests/test_parallel.py tests/test_parallel_loss.py tests/test_parallel_dtensor.py \
        tests/test_bench_cpu.py
test: $(STAMP)
	@log=$$(mktemp); \
	$(BIN)/python -m pytest -p no:cacheprovider $(SIDE) --nbval --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg $(NOTEBOOKS) >$$log 2>&1 & side=$$!; \
	$(BIN)/python -m pytest -p no:cacheprovider tests $(addprefix --ignore=,$(SIDE)); t=$$?; \
	wait $$side; n=$$?; \
	echo "=== the notebooks (nbval), the grading and install tests ==="; cat $$log; rm -f $$log; \
	echo "tests/: exit $$t; notebooks, grading, install: exit $$n"; \
	test $$t -eq 0 && test $$n -eq 0

# The fast loop: lint, then every unit test except the slow ones (site build, browser, fresh
# installs, package index). `make test` stays the gate before a commit lands.
check: $(STAMP)
	$(BIN)/ruff check src tests tools benchmarks experiments grading _ext
	$(BIN)/python -m pytest tests -q -m "not book and not slow and not index"

# After editing a chapter: store fresh outputs (then `make test` checks them, `make book` shows them).
outputs: $(STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
	    --ExecutePreprocessor.record_timing=False $(NOTEBOOKS)

# The student handout: generated from the filled chapters and grading/ (never edited by hand).
# nbgrader calls the `alembic` command of the environment, hence PATH.
# These two use the environment already installed, TORCH=cpu or not, instead of installing the
# other one.
INSTALLED := $(firstword $(wildcard $(VENV)/.installed-*))
student: $(if $(INSTALLED),,$(STAMP))
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m tokvec.course.grading release chapters grading student

# The drawn diagrams: drawn by code (never by hand), deterministic, so the committed SVGs can be
# compared byte for byte with what the module draws (tests/test_figures.py). After changing a
# figure, or the chapter code whose numbers it shows: make figures, then make student.
figures: $(if $(INSTALLED),,$(STAMP))
	$(BIN)/python -m tokvec.course.figures chapters/figures

# make grade: ONLY (chapters or exercise labels, comma-separated) grades only those chapters;
# JOBS notebooks at once (default: one per core); TIMEOUT seconds per cell; COURSE keeps nbgrader's
# gradebook (with its nbgrader_config.py, for Formgrader) in that folder. The instructor guide
# has the rest (python -m tokvec.course.grading grade --help).
SUBMISSIONS ?= submissions
GRADES ?= grades.csv
ONLY ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
TIMEOUT ?=
COURSE ?=
grade: $(if $(INSTALLED),,$(STAMP))
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m tokvec.course.grading grade $(SUBMISSIONS) --out $(GRADES) \
	    -j $(JOBS) $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(ONLY),--only $(ONLY)) $(if $(COURSE),--course $(COURSE))

serve: book
	@echo "Serving _build/html on http://localhost:$(PORT) (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

clean:
	rm -rf _build .pytest_cache .hypothesis .jupyter_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

# Regenerate the exact pins from requirements.in in a throw-away environment.
lock:
	rm -rf /tmp/tokvec-lock && $(PYTHON) -m venv /tmp/tokvec-lock
	/tmp/tokvec-lock/bin/python -m pip install --quiet -r requirements.in
	{ echo "# Exact pins of every package the course uses, generated by 'make lock' from requirements.in"; \
	  echo "# on Python 3.11 (Linux x86-64). Edit requirements.in, then run 'make lock'; do not edit by hand."; \
	  echo "# torch is the CPU build of 2.13.0 (the '+cpu' local label is dropped so the pin matches any 2.13.0 build)."; \
	  echo "# triton: the version and marker torch 2.13.0 from PyPI requires (tokvec.fused falls back without it)."; \
	  /tmp/tokvec-lock/bin/python -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/' \
	    | sed 's/^triton==\(.*\)$$/triton==\1 ; platform_system == "Linux"/'; \
	  echo "-e ."; } > requirements.txt
	{ echo "# CPU-only install, for a machine without an NVIDIA GPU: the pins of requirements.txt, with torch 2.13.0"; \
	  echo "# from PyPI or PyTorch's CPU index (Linux: the 192 MB CPU build instead of 2.7 GB of CUDA wheels)"; \
	  echo "# and Triton on Linux (its interpreter runs chapter 10.1's kernel on a CPU; it needs no GPU)."; \
	  echo "# Used by 'make book TORCH=cpu' and 'make test TORCH=cpu', and by Binder."; \
	  echo "# Generated by 'make lock' from requirements.txt; do not edit by hand."; \
	  echo "--extra-index-url https://download.pytorch.org/whl/cpu"; \
	  grep -v '^#' requirements.txt; } > requirements-cpu.txt
