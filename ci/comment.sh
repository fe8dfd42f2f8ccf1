#!/usr/bin/env bash
# Posts the review gate's summary as ONE pull-request comment, updated in place on every later
# run (found by its marker and author), for action.yml. A comment that cannot be posted (a
# fork's read-only token, an API error) is a warning: the gate step alone decides the job.
#
#   GITHUB_TOKEN          the token (the job's github.token; needs pull-requests: write)
#   GITHUB_API_URL        the REST API (set by the runner; https, or http to a loopback address)
#   GITHUB_REPOSITORY     owner/name
#   GATE_PR_NUMBER        the pull request; empty: nothing is posted
#   GATE_SUMMARY_FILE     the gate's summary.md; missing: the comment says the gate did not run
#   GATE_COMMENT_AUTHOR   whose comment is updated (default github-actions[bot])
set -uo pipefail

marker='<!-- cline-mcp-review-gate -->'

warn() {
	printf '::warning::cline-mcp review comment: %s\n' "$*"
	exit 0
}

pr=${GATE_PR_NUMBER:-}
if [ -z "$pr" ]; then
	echo "cline-mcp review comment: not a pull request, nothing posted"
	exit 0
fi
case "$pr" in *[!0-9]*) warn "pr-number must be a number, not $pr" ;; esac
repo=${GITHUB_REPOSITORY:-}
if ! printf '%s' "$repo" | grep -Eq '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$'; then
	warn "GITHUB_REPOSITORY must be owner/name"
fi
api=${GITHUB_API_URL:-https://api.github.com}
case "$api" in
https://* | http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*) ;;
*) warn "GITHUB_API_URL must be https (or http to a loopback address)" ;;
esac
token=${GITHUB_TOKEN:-}
[ -n "$token" ] || warn "no token"
case "$token" in *[!A-Za-z0-9_.-]*) warn "the token has unexpected characters" ;; esac
author=${GATE_COMMENT_AUTHOR:-github-actions[bot]}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	printf '%s\n' "$marker"
	if [ -n "${GATE_SUMMARY_FILE:-}" ] && [ -s "$GATE_SUMMARY_FILE" ]; then
		head -c 60000 "$GATE_SUMMARY_FILE"
	else
		printf '### ⛔ cline-mcp review: no verdict\n\n**The review gate did not run to a verdict** (see the job log). This is not a pass.\n'
	fi
} >"$tmp/body.md"
jq -Rs '{body: .}' "$tmp/body.md" >"$tmp/body.json" || warn "jq could not encode the comment"

# api METHOD PATH [BODY_FILE]: the response body on stdout; the token goes in through curl's
# config on stdin, never on a command line.
call() {
	local method=$1 path=$2 data=()
	[ $# -ge 3 ] && data=(--data-binary "@$3" -H 'Content-Type: application/json')
	printf 'header = "Authorization: Bearer %s"\n' "$token" |
		curl -fsS --retry 2 --max-time 60 -K - -X "$method" \
			-H 'Accept: application/vnd.github+json' -H 'X-GitHub-Api-Version: 2022-11-28' \
			${data[@]+"${data[@]}"} "$api$path"
}

id=
for page in $(seq 1 30); do
	list=$(call GET "/repos/$repo/issues/$pr/comments?per_page=100&page=$page") || warn "could not list the comments of #$pr"
	id=$(printf '%s' "$list" | jq -r --arg m "$marker" --arg a "$author" \
		'[.[] | select(((.body // "") | startswith($m)) and .user.login == $a) | .id] | first // empty') ||
		warn "the comments of #$pr are not a JSON list"
	[ -n "$id" ] && break
	[ "$(printf '%s' "$list" | jq 'length')" -lt 100 ] && break
done
case "$id" in *[!0-9]*) warn "unexpected comment id" ;; esac

if [ -n "$id" ]; then
	call PATCH "/repos/$repo/issues/comments/$id" "$tmp/body.json" >/dev/null || warn "could not update comment $id"
	echo "cline-mcp review comment: updated comment $id on #$pr"
else
	call POST "/repos/$repo/issues/$pr/comments" "$tmp/body.json" >/dev/null || warn "could not comment on #$pr"
	echo "cline-mcp review comment: commented on #$pr"
fi
