#!/usr/bin/env bash
# `make image`: builds deploy/Containerfile with buildah (as root, chroot isolation: no
# container runtime or registry needed). Makes the Debian base first when it is missing
# (deploy/base-image.sh), and the wheel from this checkout.
#   IMAGE (localhost/a2a-wrapper:latest), AGENTS ("opencode"), EXTRAS ("claude,codex")
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE="${IMAGE:-localhost/a2a-wrapper:latest}"
BASE="${BASE:-localhost/a2a-wrapper-base:trixie}"
AGENTS="${AGENTS-opencode}"
EXTRAS="${EXTRAS-claude,codex}"
PYTHON="${PYTHON:-.venv/bin/python}"
start=$(date +%s)
if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
	BASE="$BASE" deploy/base-image.sh
fi
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
"$PYTHON" -m build --wheel --outdir "$context/dist" . >/dev/null
cp -r config "$context/config"
# The host's CA bundle, for the build's pip and npm only (a TLS proxy may stand between this
# machine and the registries): CA_BUNDLE= (empty) mounts none.
CA_BUNDLE="${CA_BUNDLE-${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}}"
mounts=()
if [ -n "$CA_BUNDLE" ] && [ -s "$CA_BUNDLE" ]; then
	mounts=(--volume "$CA_BUNDLE:/run/build-ca.crt:ro")
fi
# Docker format: the OCI format has no HEALTHCHECK.
buildah build --quiet --isolation chroot --format docker --layers=false "${mounts[@]}" \
	--build-arg BASE="$BASE" --build-arg AGENTS="$AGENTS" --build-arg EXTRAS="$EXTRAS" \
	--file deploy/Containerfile --tag "$IMAGE" "$context" >/dev/null
echo "build-image: built $IMAGE (agents: ${AGENTS:-none}; extras: ${EXTRAS:-none}) in $(($(date +%s) - start)) s"
