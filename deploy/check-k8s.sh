#!/usr/bin/env bash
# Renders every overlay of deploy/k8s/overlays with kubectl's built-in
# kustomize (no cluster needed) and validates every rendered object offline
# against the schemas of Kubernetes 1.32 (the kubernetes-validate package,
# strict: an unknown field is an error) and KEDA's custom resources against
# deploy/k8s/schemas (deploy/validate_k8s.py). Nothing is sent anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VERSION=1.32.0
PYTHON=${PYTHON:-.venv/bin/python}

if ! command -v kubectl >/dev/null; then
    echo "check-k8s: kubectl not found: install kubectl 1.32 (kustomize is built in), e.g. the Debian package" \
        "kubectl from https://pkgs.k8s.io/core:/stable:/v1.32/deb/ or the binary from https://dl.k8s.io/" >&2
    exit 1
fi
if ! "$PYTHON" -c "import kubernetes_validate" 2>/dev/null; then
    echo "check-k8s: kubernetes-validate not importable by $PYTHON: install the development dependencies" \
        "(.venv/bin/pip install -e '.[dev]')" >&2
    exit 1
fi

rendered=$(mktemp -d)
trap 'rm -rf "$rendered"' EXIT
overlays=()
for overlay in deploy/k8s/overlays/*/; do
    name=$(basename "$overlay")
    kubectl kustomize "$overlay" >"$rendered/$name.yaml"
    overlays+=("$rendered/$name.yaml")
done
"$PYTHON" deploy/validate_k8s.py --kubernetes-version "$KUBERNETES_VERSION" "${overlays[@]}"
echo "check-k8s: ${#overlays[@]} overlays render and validate against Kubernetes $KUBERNETES_VERSION"
