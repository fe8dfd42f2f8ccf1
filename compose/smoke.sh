#!/bin/sh
# Builds the static binaries into the runner's build context (there is no Go image to build
# them in a container) and runs the docker-compose smoke session; exits with the smoke
# client's status. Usage: compose/smoke.sh  (from anywhere; needs go, docker and docker-compose)
set -eu
cd "$(dirname "$0")/.."
ctx=compose/runner
# The runner image is Linux of the engine's architecture, whatever the host runs.
arch=$(docker version --format '{{.Server.Arch}}' 2>/dev/null || go env GOARCH)
for pkg in cline-mcp:./cmd/cline-mcp fake-cline:./internal/cmd/fake-cline smokeclient:./internal/cmd/smokeclient; do
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -o "$ctx/${pkg%%:*}" "${pkg#*:}"
done
project="${COMPOSE_PROJECT_NAME:-cline-mcp-smoke}"
status=0
docker-compose -p "$project" -f docker-compose.yml up --build --abort-on-container-exit --exit-code-from smoke || status=$?
docker-compose -p "$project" -f docker-compose.yml down --remove-orphans >/dev/null 2>&1 || true
if [ "$status" -eq 0 ]; then echo "compose smoke: PASS"; else echo "compose smoke: FAIL (exit $status)" >&2; fi
exit "$status"
