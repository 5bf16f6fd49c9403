#!/usr/bin/env bash
# `make tck TCK=path/to/a2a-tck`: the official A2A conformance kit (a clone of
# github.com/a2aproject/a2a-tck, at the branch you want) against this checkout's daemon with
# the conformance backend (tests/conformance/tck.json), on 127.0.0.1 (docs/conformance.md).
#
#   TCK             the kit's clone (required). Its branch decides the protocol: 1.0-dev (a
#                   tests/compatibility folder) tests v1.0, 0.3.x tests v0.3.
#   TCK_TRANSPORTS  1.0: grpc,jsonrpc,http_json (default: every one the card lists);
#                   0.3: jsonrpc,grpc,rest (default jsonrpc)
#   TCK_CONFIG      the daemon's config (default tests/conformance/tck.json; tck-full.json
#                   adds gRPC, push, the extended card and signing)
#   TCK_VENV        the kit's venv (default: .venv-tck in the kit's clone), made once from
#                   the kit's own dependency list
#   TCK_ARGS        more arguments for pytest (e.g. "-k cancel -x")
# Exit: the kit's (0 when conformant), 2 for a usage or setup problem.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "tck: $*" >&2; exit 2; }
[ -n "${TCK:-}" ] || die "TCK is not set: make tck TCK=path/to/a2a-tck (a clone of github.com/a2aproject/a2a-tck)"
[ -f "$TCK/run_tck.py" ] || die "$TCK has no run_tck.py: is it a clone of a2a-tck?"
TCK="$(cd "$TCK" && pwd)"
CONFIG="${TCK_CONFIG:-tests/conformance/tck.json}"
VENV="${TCK_VENV:-$TCK/.venv-tck}"
DAEMON=.venv/bin/a2a-wrapper
[ -x "$DAEMON" ] || die "$DAEMON is missing: make .venv/.installed"
if [ -d "$TCK/tests/compatibility" ]; then VERSION=1.0; else VERSION=0.3; fi

# The kit's dependencies, from its pyproject.toml (else requirements.txt), by name.
deps="$(python3 - "$TCK" <<'PY'
import pathlib, sys, tomllib
root = pathlib.Path(sys.argv[1])
project = root / "pyproject.toml"
deps = tomllib.loads(project.read_text()).get("project", {}).get("dependencies") if project.is_file() else None
if deps is None:
    lines = (root / "requirements.txt").read_text().splitlines()
    deps = [l.split("#", 1)[0].strip() for l in lines if l.split("#", 1)[0].strip()]
print("\n".join(deps))
PY
)" || die "cannot read the kit's dependency list"
if [ ! -f "$VENV/.tck-deps" ] || [ "$(cat "$VENV/.tck-deps")" != "$deps" ]; then
	echo "tck: installing the kit's dependencies into $VENV"
	rm -rf "$VENV"
	python3 -m venv "$VENV"
	mapfile -t list <<<"$deps"
	"$VENV/bin/pip" install --quiet --disable-pip-version-check "${list[@]}"
	printf '%s' "$deps" >"$VENV/.tck-deps"
fi

# The daemon on a free loopback port; the v0.3 kit reads the v0.3 card fields.
log="$(mktemp)"
v03=false; [ "$VERSION" = 0.3 ] && v03=true
A2A_WRAPPER__AGENT_CARD__V03_FIELDS=$v03 "$DAEMON" serve "$CONFIG" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
daemon=$!
stop() { kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -f "$log"; }
trap stop EXIT
for _ in $(seq 150); do
	grep -q "listening on" "$log" && break
	kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; die "the daemon exited"; }
	sleep 0.2
done
url="$(grep -m1 -o 'listening on http://[^ ]*' "$log" | cut -d' ' -f3)"
[ -n "$url" ] || die "the daemon did not listen within 30 s"
echo "tck: A2A v$VERSION kit $(git -C "$TCK" describe --always --all 2>/dev/null || echo "$TCK") against $url ($CONFIG)"

cd "$TCK"
export PYTHONPATH="$TCK"
# shellcheck disable=SC2206
pytest_args=(-p no:cacheprovider ${TCK_ARGS:-})
if [ "$VERSION" = 1.0 ]; then
	args=(--sut-host "$url")
	[ -n "${TCK_TRANSPORTS:-}" ] && args+=(--transport "$TCK_TRANSPORTS")
	"$VENV/bin/python" run_tck.py "${args[@]}" -- "${pytest_args[@]}"
	exit $?
fi
# v0.3: a run per category; the kit's own gate is mandatory, capabilities and
# transport-equivalence (quality and features are reported, not gating).
status=0
for category in mandatory capabilities transport-equivalence quality features; do
	echo "tck: category $category"
	rc=0
	PYTEST_ADDOPTS="${pytest_args[*]}" "$VENV/bin/python" run_tck.py --sut-url "$url/a2a/jsonrpc" \
		--category "$category" --transports "${TCK_TRANSPORTS:-jsonrpc}" || rc=$?
	case "$category:$rc" in
	quality:* | features:* | *:0 | *:5) ;;
	*) status=1 ;;
	esac
done
exit $status
