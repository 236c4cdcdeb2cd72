# The two commands a user needs. Each creates .venv when it is missing and
# (re)installs the project into it when pyproject.toml changed, so on a fresh
# machine `make demo` or `make test` is the whole set-up.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The extras installed for the tests; CI adds `distributed` (PyTorch) so that the
# torchrun tests run instead of skipping: `make test EXTRAS=test,distributed`.
EXTRAS ?= test
comma  := ,
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: demo test clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@touch $@

# The suite on both paths, recorded and opened side by side in the TUI (q quits);
# without a terminal it prints the comparison. Traces go to build/ (ignored by git).
demo: $(STAMP)
	$(PY) -m profiler demo -o build/demo.json

# The HTML report's tests drive a headless Chromium: tests/browser.py installs one when none is there
# (Playwright's download, else the system's package as root, said on one line first); without one those tests skip and say why.
test: $(STAMP)
	@$(PY) tests/browser.py install
	$(PY) -m pytest

# Everything the commands above and the tools leave behind: the environment,
# build/ (demo traces), the linter's cache, pytest's and Hypothesis's.
clean:
	rm -rf $(VENV) build .pytest_cache .offload-lint-cache .hypothesis
