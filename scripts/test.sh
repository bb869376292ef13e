#!/usr/bin/env bash
# Install sigclass with every extra and the test dependencies, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium for the report's browser tests: Debian's package (the browser's own download does not work here).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "scripts/test.sh: could not install chromium; the report's browser tests will be skipped" >&2
fi
python3 -m pip install --quiet '.[all,test]'
python3 -m pytest -q
