#!/usr/bin/env bash
# Makes the image's Debian base, `localhost/a2a-wrapper-base:trixie`, from Debian's package
# registry alone (no container registry is needed): mmdebstrap builds a minimal trixie root
# file system (Python 3, Node.js 20 and npm for the pinned agent CLIs, git for workspaces),
# and buildah commits it as an image. Run as root; `make image` runs it when the base is missing.
set -euo pipefail
BASE="${BASE:-localhost/a2a-wrapper-base:trixie}"
SUITE="${SUITE:-trixie}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
for tool in mmdebstrap buildah; do
	command -v "$tool" >/dev/null || {
		echo "base-image: $tool is missing: apt-get install -y $tool" >&2
		exit 2
	}
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --variant=apt --format=tar \
	--include=ca-certificates,python3,python3-venv,nodejs,npm,git,curl,tini \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
	"$SUITE" "$work/rootfs.tar" "$MIRROR"
ctr="$(buildah from scratch)"
buildah add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
buildah commit --quiet --rm "$ctr" "$BASE" >/dev/null
echo "base-image: built $BASE"
