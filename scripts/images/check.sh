#!/usr/bin/env bash
# CI's image check: builds both images from the Dockerfile and runs them as the chart does
# (test/images/check.ts). Starts its own Docker engine and stops it at the end, leaving nothing
# running; the Dockerfile's base image is made locally (base-image.sh), as CI machines reach no
# image registry (a production build pulls the same name). Runs as root after `npm ci`. Prints
# each image's size (its own layers and the whole; over the goals fails the check), its start-up
# time and the time taken, and writes each image's SBOM to $SBOM_DIR (helm/sbom/, beside the chart).
# A step that cannot run here fails the check with one line saying so; only a Docker engine that
# is missing and cannot be installed skips it, loudly.
set -euo pipefail
trap 'echo "images: FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/../.."
started=$SECONDS

cannot() {
  echo "images: CANNOT RUN HERE: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || cannot "starting a Docker engine (dockerd) needs root"

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "images: installing ${need[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/dev/null ||
    echo "images: apt-get install ${need[*]} failed" >&2
fi
if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  echo "!!! images: SKIPPED: no Docker engine, and apt could not install docker.io." >&2
  echo "!!! images: the images were NOT built and NOT run." >&2
  exit 0
fi
command -v debootstrap >/dev/null || cannot "debootstrap is missing and apt could not install it"

# The engine keeps its images and build cache in $IMAGES_CACHE between runs (the base image and
# unchanged build steps are reused; a fresh machine starts from nothing), one run at a time.
# Its sockets and state go to a short temporary path: a socket's path must fit in 108 bytes.
cache="${IMAGES_CACHE:-/var/cache/tool-directory-images}"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -n 9 || {
  echo "images: waiting for another image check to finish ($cache/lock)"
  flock 9
}
work="$(mktemp -d /tmp/td-docker.XXXXXX)"
export DOCKER_HOST="unix://$work/docker.sock"
ca_copied=""
dockerd_pid=""
finish() {
  [ -z "$ca_copied" ] || rm -f build-ca.crt
  if [ -n "$dockerd_pid" ] && kill -0 "$dockerd_pid" 2>/dev/null; then
    # Images no tag names any more (the previous run's) go; the rest is the next run's cache.
    docker image prune -f >/dev/null 2>&1 || true
    kill -TERM "$dockerd_pid"
    wait "$dockerd_pid" 2>/dev/null || true
  fi
  # dockerd unmounts its layers when it stops; what it leaves mounted (its network namespace)
  # is unmounted here.
  findmnt -rn -o TARGET | grep -E "^($work|$cache/docker)/" | sort -r | xargs -r umount -l
  rm -rf "$work"
}
trap finish EXIT

echo "images: starting dockerd (images in $cache/docker)"
dockerd --iptables=false --bridge=none --data-root "$cache/docker" --exec-root "$work/exec" \
  --pidfile "$work/dockerd.pid" -H "$DOCKER_HOST" >"$work/dockerd.log" 2>&1 9>&- &
dockerd_pid=$!
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && break
  kill -0 "$dockerd_pid" 2>/dev/null || break
  sleep 0.5
done
docker info >/dev/null 2>&1 || {
  tail -5 "$work/dockerd.log" >&2
  cannot "dockerd --iptables=false --bridge=none did not start (its log above)"
}

# Containers and volumes an interrupted run left behind.
docker ps -aq --filter name=td-check- | xargs -r docker rm -f >/dev/null
docker volume ls -q --filter name=td-check- | xargs -r docker volume rm -f >/dev/null

base="$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile)"
[ -n "$base" ] || cannot "the Dockerfile has no 'ARG NODE_IMAGE=' default"
t0=$SECONDS
scripts/images/base-image.sh "$base"
base_s=$((SECONDS - t0))

version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
# The OCI labels: the clone's origin, the commit's time (so an unchanged commit builds the same
# labels), and the base's registry digest when it was pulled (a base made here has none).
source_url="$(git remote get-url origin 2>/dev/null || echo unknown)"
created="$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)"
base_digest="$(docker image inspect --format '{{range .RepoDigests}}{{.}} {{end}}' "$base" |
  sed -n 's/^[^@ ]*@\(sha256:[0-9a-f]*\).*/\1/p')"
# npm in the build stage reaches the registry through the proxy the host trusts.
if [ -f /etc/ssl/certs/ca-certificates.crt ] && [ ! -e build-ca.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt build-ca.crt
  ca_copied=1
fi
t0=$SECONDS
# The build stage is tagged too, so the next run finds its layers (npm ci while the lockfile is
# unchanged) in the engine's cache.
for target in build gateway catalog; do
  tag="tool-directory/$target:$version"
  [ "$target" != build ] || tag="tool-directory-cache:build"
  # The classic builder: BuildKit's RUN cannot reach the network in this sandbox.
  if ! DOCKER_BUILDKIT=0 docker build --network host --target "$target" \
    --build-arg REVISION="$revision" --build-arg SOURCE="$source_url" \
    --build-arg CREATED="$created" --build-arg BASE_DIGEST="$base_digest" \
    -t "$tag" . >"$work/build-$target.log" 2>&1; then
    tail -40 "$work/build-$target.log" >&2
    echo "images: FAIL: docker build --target $target (its last lines above)" >&2
    exit 1
  fi
done
build_s=$((SECONDS - t0))
[ -z "$ca_copied" ] || rm -f build-ca.crt
ca_copied=""

# What the build stage printed of each image's dependency set.
grep -h '^assemble: ' "$work/build-build.log" | sed 's/^/images: /' || true

t0=$SECONDS
GATEWAY_IMAGE="tool-directory/gateway:$version" CATALOG_IMAGE="tool-directory/catalog:$version" \
  BASE_IMAGE="$base" EXPECTED_REVISION="$revision" EXPECTED_SOURCE="$source_url" \
  EXPECTED_CREATED="$created" EXPECTED_BASE_DIGEST="$base_digest" \
  SBOM_DIR="${SBOM_DIR:-$PWD/helm/sbom}" \
  PATH="$PWD/node_modules/.bin:$PATH" tsx test/images/check.ts
check_s=$((SECONDS - t0))

docker image ls --format 'images: {{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E "tool-directory/|$base" || true
echo "images: stage took $((SECONDS - started)) s (base image ${base_s} s, builds ${build_s} s, run checks ${check_s} s)"
