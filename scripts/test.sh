#!/usr/bin/env bash
# Install sigclass with every extra and the test dependencies, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet '.[all,test]'
python3 -m pytest -q
