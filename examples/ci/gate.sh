#!/usr/bin/env bash
# The resilience gate, as a CI job runs it (examples/ci/github-actions.yaml calls this script; chaoskit's own e2e
# suite runs it too): bring up the kind cluster, deploy the example shop, run its playbooks as one suite, and leave
# the JUnit file and the HTML report in OUT. The exit code is chaoskit's: 0 passed, 1 the shop deviated (a probe's
# SLO, a fault's recovery or a threshold), 4 chaoskit could not do its job.
#   usage: examples/ci/gate.sh [OUT]            (OUT default: chaoskit-out)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-chaoskit-out}" && cd "${1:-chaoskit-out}" && pwd)
chaoskit=${CHAOSKIT:-chaoskit}
"$chaoskit" cluster up                       # stock kind images when a registry answers; built offline otherwise
"$repo/examples/shop/deploy.sh"
status=0
"$chaoskit" run "$repo/examples/shop/playbooks/" --junit "$out/junit.xml" --html "$out/report.html" \
  -o json > "$out/record.json" || status=$?
echo "chaoskit run exited $status; JUnit $out/junit.xml, report $out/report.html"
exit "$status"
