# Every target sets itself up: a fresh clone needs only `make train` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
# e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu: PyTorch's CPU wheels, without the
# CUDA packages that the same pin pulls from PyPI on Linux x86-64
TORCH_INDEX ?=

.PHONY: setup browser test test-slow lint train bench clean

setup: $(VENV)/.installed

# torch is pinned and installed first, so nothing later resolves another version of it.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# The page test of `nmt serve` drives Debian's chromium through chromedriver: installed here
# when missing (CI runs as root; elsewhere through sudo), so CI always runs that test.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if command -v apt-get >/dev/null; then \
	    sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	    { $$sudo apt-get update -q && $$sudo apt-get install -y -q chromium chromium-driver; } \
	      || echo "warning: chromium was not installed; the page test will skip (fail under CI)"; \
	  else echo "no apt-get: install chromium and chromedriver to run the page test"; fi; \
	fi

test: setup browser
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

lint: setup
	$(BIN)/lint-imports
	$(BIN)/ruff check nmt tests scripts
	$(BIN)/ruff format --check nmt tests scripts

train: setup
	$(BIN)/nmt train --config configs/demo.yaml --overwrite

# Training throughput of the additive, multi-head and Transformer models, then translation
# speed (fp32 and int8) with each Multi30k checkpoint that exists (README, "Results"), the
# Transformer's with its vocabulary shortlist, and exported to CTranslate2 (fp32 and int8,
# int8 with and without the shortlist as its vocabulary map).
# With ../shared/bench, the SentencePiece model JoeyNMT is measured with there.
BENCH_MODELS := rnnsearch multihead transformer
BENCH_SPM    := ../shared/bench/spm8k.model
BENCH_SET    := $(if $(wildcard $(BENCH_SPM)),--set tokenizer.model=$(BENCH_SPM))
BENCH_CT2    := runs/multi30k_de_en_transformer/ctranslate2
# --shortlist K of the shortlist runs (chosen on valid: docs/results.md, "Faster search")
BENCH_SHORTLIST ?= 20

bench: setup
	for model in $(BENCH_MODELS); do $(BIN)/python scripts/bench_train.py \
	  --config configs/multi30k_de_en_$$model.yaml $(BENCH_SET) || exit 1; done
	@for model in $(BENCH_MODELS); do ckpt=runs/multi30k_de_en_$$model/best.pt; \
	  if [ -f $$ckpt ]; then \
	    $(BIN)/python scripts/bench_translate.py --checkpoint $$ckpt --batch-size 64 128 --workers 1 2 || exit 1; \
	    $(BIN)/python scripts/bench_translate.py --checkpoint $$ckpt --quantize int8 || exit 1; \
	  else echo "bench_translate: no $$ckpt yet; train it first (see README)"; fi; done
	@ckpt=runs/multi30k_de_en_transformer/best.pt; if [ -f $$ckpt ]; then \
	  $(BIN)/nmt shortlist --checkpoint $$ckpt && \
	  $(BIN)/python scripts/bench_translate.py --checkpoint $$ckpt --no-reference \
	    --shortlist $(BENCH_SHORTLIST) && \
	  rm -rf $(BENCH_CT2) && $(BIN)/nmt export --format ctranslate2 --checkpoint $$ckpt \
	    --output $(BENCH_CT2) --shortlist $(BENCH_SHORTLIST) >/dev/null && \
	  $(BIN)/python scripts/bench_translate.py --model $(BENCH_CT2) --shortlist 0 && \
	  $(BIN)/python scripts/bench_translate.py --model $(BENCH_CT2) --quantize int8 \
	    --shortlist 0 $(BENCH_SHORTLIST); fi

.PHONY: bench-data
bench-data: setup
	$(BIN)/python scripts/bench_data.py

clean:
	rm -rf $(VENV) runs
