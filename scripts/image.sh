#!/usr/bin/env bash
# Builds the container image of deploy/container/Containerfile with podman,
# or with docker when podman is missing (CONTAINER_ENGINE=docker forces it):
# the static binary (CGO_ENABLED=0) is built on the host and copied, with the
# host's CA certificates and the image's passwd and group files, into a
# build context of its own, so the build pulls nothing (FROM scratch).
#
#   scripts/image.sh [TAG]        # default $IMAGE, else shardkeeper:latest
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-${IMAGE:-shardkeeper:latest}}

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
	if command -v podman >/dev/null 2>&1; then
		engine=podman
	elif command -v docker >/dev/null 2>&1; then
		engine=docker
	else
		echo "image: neither podman nor docker is installed (Debian: apt-get install podman runc)" >&2
		exit 1
	fi
fi
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$certs" ]; then
	echo "image: no CA bundle at $certs to copy into the image (Debian: apt-get install ca-certificates)" >&2
	exit 1
fi

ctx=$(mktemp -d /tmp/shardkeeper-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/shardkeeper" ./cmd/shardkeeper
cp deploy/container/Containerfile deploy/container/passwd deploy/container/group "$ctx/"
cp "$certs" "$ctx/ca-certificates.crt"
mkdir "$ctx/data"

# HEALTHCHECK is part of the Docker image format only: podman's default
# (OCI) format would drop it.
format=()
[ "$engine" = podman ] && format=(--format docker)
"$engine" build --quiet "${format[@]}" -t "$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
size=$("$engine" image inspect --format '{{.Size}}' "$tag")
echo "image: built $tag with $engine: $size bytes ($((size / 1024 / 1024)) MiB), binary $(stat -c %s "$ctx/shardkeeper") bytes"
