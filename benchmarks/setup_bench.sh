#!/usr/bin/env bash
# The speed benchmarks' environment: inferbound with its `bench` extra (llm-analysis, the peer the
# benchmarks time against) in .venv-bench, apart from .venv (llm-analysis needs transformers<5, the
# tests transformers>=4.56). Byte-compiled as a wheel install is. Then:
#   .venv-bench/bin/python benchmarks/bench_engine.py      .venv-bench/bin/python benchmarks/bench_search.py
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv-bench/bin/python ] || "$PY" -m venv .venv-bench
.venv-bench/bin/python -m pip install -q --disable-pip-version-check -e '.[bench]'
.venv-bench/bin/python -m compileall -q src/inferbound >/dev/null
echo "setup_bench: $(.venv-bench/bin/python -c 'import importlib.metadata as m; print("llm-analysis", m.version("llm-analysis"))')"
