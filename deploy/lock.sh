#!/usr/bin/env bash
# Refreshes the two lock files from pyproject.toml (run it after any change of
# the dependencies there; CI's and the image's installs use only the locks):
#   deploy/requirements-dev.lock  what CI and a development checkout install:
#                                 the runtime and `dev` dependencies, pip, and
#                                 the build backend ([build-system] requires)
#   deploy/requirements.lock      what the image installs: the runtime
#                                 dependencies, pip and the build backend, at
#                                 the same versions as the dev lock
# Every line names an exact version and the hashes of its distributions. The
# resolution is universal (any platform, Python 3.11 or newer); versions
# already in the locks are kept when they still fit, so a refresh after a
# pyproject change only adds, drops or moves what that change asks for.
# Extra arguments go to both `uv pip compile` runs, e.g. `--upgrade` (newest
# versions of everything) or `--upgrade-package NAME`.
#   bash deploy/lock.sh [--upgrade | --upgrade-package NAME ...]
set -euo pipefail
cd "$(dirname "$0")/.."

uv=.venv/bin/uv
[[ -x $uv ]] || uv=$(command -v uv) || {
    echo "lock: uv not found: install the dev dependencies (.venv/bin/pip install -r deploy/requirements-dev.lock)" >&2
    exit 1
}

# pip and the build backend are installed from the locks too: list them as
# extra requirements beside pyproject.toml's own.
python=.venv/bin/python
[[ -x $python ]] || python=python3
tools=$("$python" -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(["pip", *tomllib.load(f)["build-system"]["requires"]]))
')

compile=(
    "$uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes
    --custom-compile-command "bash deploy/lock.sh"
)
"${compile[@]}" pyproject.toml - --extra dev -o deploy/requirements-dev.lock "$@" <<<"$tools"
"${compile[@]}" pyproject.toml - -c deploy/requirements-dev.lock -o deploy/requirements.lock "$@" <<<"$tools"
echo "lock: wrote deploy/requirements-dev.lock and deploy/requirements.lock"
