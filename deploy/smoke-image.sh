#!/usr/bin/env bash
# `make image-smoke`: runs the image's daemon with the echo agent (`buildah run --isolation
# chroot`: the image's user, directories and environment, the host's network, bound to
# loopback only) and sends it one message over JSON-RPC; checks /health and that the answer is
# the message. The daemon, its check and its stop all run inside the one `buildah run`, so
# nothing outlives it. Exit 0 when the answer is right. As root.
set -euo pipefail
IMAGE="${IMAGE:-localhost/a2a-wrapper:latest}"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
ctr="$(buildah from "$IMAGE")"
trap 'buildah rm "$ctr" >/dev/null' EXIT
read -r -d '' inside <<'SH' || true
set -eu
log=/tmp/smoke.log
a2a-wrapper serve --log-format console /etc/a2a-wrapper/echo.json >"$log" 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true' EXIT
i=0
until grep -q "listening on" "$log"; do
	kill -0 "$daemon" 2>/dev/null || { cat "$log"; echo "smoke: the daemon exited" >&2; exit 1; }
	i=$((i + 1)); [ "$i" -lt 150 ] || { cat "$log"; echo "smoke: no listen line in 30 s" >&2; exit 1; }
	sleep 0.2
done
grep "listening on" "$log"
echo "smoke: GET /health -> $(curl -fsS "http://127.0.0.1:$A2A_WRAPPER__SERVER__PORT/health")"
request='{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "ROLE_USER", "messageId": "smoke-1", "parts": [{"text": "hello from the smoke test"}]}}}'
answer="$(curl -fsS -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' \
	-d "$request" "http://127.0.0.1:$A2A_WRAPPER__SERVER__PORT/a2a/jsonrpc")"
echo "smoke: SendMessage -> $answer"
python3 - "$answer" <<'PY'
import json, sys
task = json.loads(sys.argv[1])["result"]["task"]
state = task["status"]["state"]
text = "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])
assert state == "TASK_STATE_COMPLETED", state
assert text == "hello from the smoke test", text
print(f"smoke: ok ({state}: {text!r})")
PY
SH
timeout 120 buildah run --isolation chroot --user a2a --workingdir /workspace \
	--env A2A_WRAPPER__SERVER__HOST=127.0.0.1 --env A2A_WRAPPER__SERVER__PORT="$PORT" \
	"$ctr" -- sh -c "$inside"
