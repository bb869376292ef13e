#!/usr/bin/env bash
# Install sigclass with every extra and the test dependencies, then run the whole suite.
#
# Never into a system Python (Debian, Ubuntu and Homebrew refuse that: "externally-managed-environment"):
# it uses the active virtualenv or conda environment, else the virtualenv .venv/ of this checkout, made
# when missing. PYTHON=/path/to/python3.11 picks the interpreter that makes it. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "scripts/test.sh: $*" >&2; }

py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
  say "'$py' not found; install Python 3.11 or newer, or set PYTHON=/path/to/python3.11"
  exit 2
fi
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; }
if ! new_enough "$py"; then
  say "$(command -v "$py") is $("$py" -V 2>&1); sigclass needs Python 3.11 or newer: set PYTHON=/path/to/python3.11"
  exit 2
fi

# In an environment already? A virtualenv (sys.prefix differs from the base) or the conda env that is active.
in_env=$("$py" -c '
import os, sys
conda = os.environ.get("CONDA_PREFIX")
in_conda = bool(conda) and os.path.realpath(conda) == os.path.realpath(sys.prefix)
print(int(sys.prefix != sys.base_prefix or in_conda))')
if [ "$in_env" = 1 ]; then
  say "using the environment $("$py" -c 'import sys; print(sys.prefix)') ($("$py" -V 2>&1))"
else
  if ! .venv/bin/python -c '' >/dev/null 2>&1; then
    say "making the virtualenv .venv/ with $(command -v "$py") ($("$py" -V 2>&1))"
    "$py" -m venv --clear .venv || {
      say "could not make .venv/ with '$py -m venv'; on Debian/Ubuntu install python3-venv (apt-get install python3-venv), or activate a virtualenv or conda env first"
      exit 2
    }
  else
    say "using the virtualenv .venv/ ($(.venv/bin/python -V 2>&1))"
  fi
  py=.venv/bin/python
fi

if ! new_enough "$py"; then
  say "the Python of .venv/ is $("$py" -V 2>&1); sigclass needs 3.11 or newer: remove .venv/ and run again (PYTHON=/path/to/python3.11 picks the interpreter)"
  exit 2
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  say "this environment has no pip; add it with '$py -m ensurepip' (conda: conda install pip)"
  exit 2
fi

# Chromium is optional: without it the report's browser tests are skipped. As root on Debian or Ubuntu,
# Debian's package is installed (a browser's own download does not work everywhere).
have_chromium() {
  [ -n "${SIGCLASS_CHROMIUM:-}" ] || [ -x /usr/bin/chromium ] \
    || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || command -v google-chrome >/dev/null 2>&1
}
if ! have_chromium && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || say "could not install chromium"
fi
have_chromium || say "no Chromium found: the report's browser tests will be skipped (install chromium, or set SIGCLASS_CHROMIUM=/path/to/chrome)"

"$py" -m pip install --quiet '.[all,test]'

status=0
"$py" -m pytest -q "$@" || status=$?
if [ "$status" = 5 ]; then
  say "pytest ran no test (exit status 5); that counts as a failure"
  exit 1
fi
exit "$status"
