#!/usr/bin/env bash
# Installs cline-mcp for the review gate (action.yml): the release archive of GATE_VERSION for
# this OS and architecture, checked against the release's checksums.txt before anything in it
# runs; or, with GATE_BINARY_PATH, a binary already on the machine (tests, self-built). Prints
# the binary's path and writes it to GITHUB_OUTPUT as `binary`.
#
#   GATE_VERSION      vX.Y.Z, or latest (default; pin a version for a reproducible gate)
#   GATE_BINARY_PATH  use this binary instead of downloading one
#   GATE_RELEASE_URL  the releases page (default https://github.com/cline-mcp/cline-mcp/releases);
#                     https, or http to a loopback address only
#   GATE_INSTALL_DIR  where the binary goes (default: $RUNNER_TEMP or $TMPDIR, /cline-mcp-bin)
set -euo pipefail

fail() {
	printf 'cline-mcp install: %s\n' "$*" >&2
	exit 1
}

emit() {
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf 'binary=%s\n' "$1" >>"$GITHUB_OUTPUT"
	fi
	printf '%s\n' "$1"
}

if [ -n "${GATE_BINARY_PATH:-}" ]; then
	if [ ! -f "$GATE_BINARY_PATH" ] || [ ! -x "$GATE_BINARY_PATH" ]; then
		fail "binary-path $GATE_BINARY_PATH is not an executable file"
	fi
	path=$(cd "$(dirname "$GATE_BINARY_PATH")" && pwd)/$(basename "$GATE_BINARY_PATH")
	"$path" --version >&2 || fail "$path --version failed"
	emit "$path"
	exit 0
fi

version=${GATE_VERSION:-latest}
release=${GATE_RELEASE_URL:-https://github.com/cline-mcp/cline-mcp/releases}
case "$version" in
latest) base=$release/latest/download ;;
v[0-9]*.[0-9]*.[0-9]*) base=$release/download/$version ;;
*) fail "version must be latest or vX.Y.Z, not $version" ;;
esac
case "$version" in *[!0-9A-Za-z.+-]*) fail "version must be latest or vX.Y.Z, not $version" ;; esac
case "$release" in
https://*) ;;
http://127.0.0.1:* | http://127.0.0.1/* | http://localhost:* | http://localhost/* | http://\[::1\]:*) ;;
*) fail "release-url must be https (or http to a loopback address), not $release" ;;
esac

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) fail "no release archive for $(uname -s) (use binary-path)" ;;
esac
case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no release archive for $(uname -m) (use binary-path)" ;;
esac
asset=cline-mcp_${os}_${arch}.tar.gz

dir=${GATE_INSTALL_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/cline-mcp-bin}
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

get() {
	curl -fsSL --retry 3 --connect-timeout 20 --max-time 300 -o "$tmp/$1" "$base/$1" ||
		fail "could not download $base/$1"
}
get "$asset"
get checksums.txt

# The line of checksums.txt naming exactly this archive: one, with a SHA-256.
want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1 }' "$tmp/checksums.txt")
case "$want" in
'' | *[!0-9a-f]*) fail "checksums.txt of $version has no single SHA-256 for $asset" ;;
esac
[ "${#want}" -eq 64 ] || fail "checksums.txt of $version has no single SHA-256 for $asset"
if command -v sha256sum >/dev/null 2>&1; then
	got=$(sha256sum "$tmp/$asset" | cut -d' ' -f1)
else
	got=$(shasum -a 256 "$tmp/$asset" | cut -d' ' -f1)
fi
[ "$got" = "$want" ] || fail "$asset does not match checksums.txt (sha256 $got, want $want): not installed"

tar -xzf "$tmp/$asset" -C "$tmp" cline-mcp || fail "$asset holds no cline-mcp"
mv -f "$tmp/cline-mcp" "$dir/cline-mcp"
chmod 0755 "$dir/cline-mcp"
"$dir/cline-mcp" --version >&2 || fail "the installed cline-mcp does not run"
emit "$dir/cline-mcp"
