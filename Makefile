# Every target sets itself up: a fresh clone needs only `make train` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0

.PHONY: setup test test-slow lint train bench clean

setup: $(VENV)/.installed

# torch is pinned and installed first: an unpinned resolve would fetch a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

test: setup
	$(BIN)/python -m pytest -q

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

lint: setup
	$(BIN)/ruff check nmt tests scripts
	$(BIN)/ruff format --check nmt tests scripts

train: setup
	$(BIN)/nmt train --config configs/demo.yaml --overwrite

# Training throughput, then translation speed once a Multi30k checkpoint exists (README).
bench: setup
	$(BIN)/python scripts/bench_train.py
	@if [ -f runs/multi30k_de_en_rnnsearch/best.pt ]; then $(BIN)/python scripts/bench_translate.py; \
	else echo "bench_translate: train runs/multi30k_de_en_rnnsearch first (see README)"; fi

.PHONY: bench-data
bench-data: setup
	$(BIN)/python scripts/bench_data.py

clean:
	rm -rf $(VENV) runs
