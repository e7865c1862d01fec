#!/usr/bin/env bash
# Build the shop's image offline (a static Go binary in a FROM-scratch image), load it into the kind cluster,
# deploy the shop and wait until both tiers are ready.   usage: examples/shop/deploy.sh [CLUSTER]
set -euo pipefail
cd "$(dirname "$0")"
cluster=${1:-chaoskit}
export PATH="$HOME/.cache/chaoskit/bin:$PATH"  # kind and kubectl, as `chaoskit cluster up` left them
CGO_ENABLED=0 go -C app build -trimpath -o ../shop .
docker build --quiet --tag example.com/shop:v1 . >/dev/null
kind load docker-image example.com/shop:v1 --name "$cluster"
kubectl --context "kind-$cluster" apply -f k8s/shop.yaml
kubectl --context "kind-$cluster" --namespace shop rollout status deployment/prices deployment/storefront --timeout=180s
