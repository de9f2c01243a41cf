#!/usr/bin/env bash
# Installs the mha-lab autograder of @ASSIGNMENT@ (written by `mha release --gradescope`).
#
# Gradescope runs this once, as root, when it builds the autograder image; the
# target is its Ubuntu 22.04 base image, whose python3 is 3.10: mha-lab needs
# 3.11 or newer, so a python3.11 from Ubuntu's archive is installed when no
# Python >= 3.11 with venv is found (Ubuntu 24.04's python3.12 is used as it is).
# The grader goes into its own virtual environment, so Gradescope's python3 is
# left alone. AUTOGRADER_ROOT (default /autograder) moves everything, for trying
# the bundle on your own machine; pip's PIP_* variables are honoured.
set -euo pipefail

ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="$ROOT/mha-venv"
WHEEL="$SOURCE/wheels/@WHEEL@"

usable() {  # a Python >= 3.11 that can make a virtual environment with pip
    "$1" -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

find_python() {
    local candidate
    for candidate in ${MHA_PYTHON:-} python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 && usable "$(command -v "$candidate")"; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

PYTHON="$(find_python || true)"
if [ -z "$PYTHON" ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup.sh: no Python >= 3.11 with venv here, and no apt-get to install one" >&2
        exit 1
    fi
    # the newest python3.X of the archive that is 3.11 or newer, with its venv module
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    for version in 3.13 3.12 3.11; do
        if command -v "python$version" >/dev/null 2>&1 || apt-cache show "python$version" >/dev/null 2>&1; then
            apt-get install -y -qq "python$version" "python$version-venv"
            break
        fi
    done
    PYTHON="$(find_python || true)"
    if [ -z "$PYTHON" ]; then
        echo "setup.sh: could not install a Python >= 3.11 with apt-get; choose Gradescope's Ubuntu 22.04 or 24.04 base image" >&2
        exit 1
    fi
fi
echo "setup.sh: using $PYTHON ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])'))"

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL"

# The worker that runs student code drops to uid nobody: keep the key, the
# solutions and the hidden checks readable by root only, even where the
# container lacks Landlock and the mount namespace that hide them as well.
PACKAGE="$("$VENV/bin/python" -c 'import grader, os; print(os.path.dirname(grader.__file__))')"
chmod -R go-rwx "$SOURCE" "$PACKAGE"

# Grade the reference solution once: the build fails here, not on the first student.
"$VENV/bin/python" -I -m grader.authoring.autograder --self-test --root "$ROOT"
