#!/usr/bin/env bash
# cline-mcp review gate: runs ONE `cline-mcp review` of a change, under a hard deadline, and
# turns what it left into a verdict that fails closed:
#
#   passed     the review ran to an answer, the SARIF log is valid and holds no finding at or
#              above the threshold                                      -> exit 0
#   findings   the same, with findings at or above the threshold        -> exit 1
#   no-verdict anything else: the review did not start, crashed, timed out, was killed, wrote
#              no SARIF, an unreadable one, or one whose reviewer answer had no readable
#              findings block, or its exit code disagrees with the log  -> exit 2
#              (exit 0 with a warning only when GATE_ALLOW_NO_VERDICT=true: unsafe)
#
# The verdict is read from the SARIF log, checked against the exit code; never from the exit
# code alone. Shared by the GitHub Action (action.yml) and the GitLab component
# (templates/review.yml); documented in docs/ci-gates.md.
#
# Inputs (environment):
#   GATE_TARGET            what is reviewed: base:<ref>, commit:<sha> or uncommitted (required)
#   GATE_BINARY            the cline-mcp executable (unset: cline-mcp on PATH; empty: none, a no-verdict)
#   GATE_CWD               the checkout (default: .)
#   GATE_FAIL_ON           threshold: critical, high, medium, low or info (default: high)
#   GATE_TIMEOUT           seconds one review attempt may take, 1..7200 (default: 600)
#   GATE_DEADLINE          seconds after which the whole review is stopped (default: twice
#                          the timeout, for the one retry of a transient provider error, + 120)
#   GATE_KILL_GRACE        seconds between the deadline's SIGTERM and its SIGKILL (default: 30)
#   GATE_ISOLATION         docker (default) or host
#   GATE_ARGS              more cline-mcp flags, one per line (no shell evaluation)
#   GATE_FOCUS, GATE_PROMPT  the review's focus and extra instructions
#   GATE_OUT_DIR           where review.sarif, summary.md and codequality.json go (default: cline-review)
#   GATE_ALLOW_NO_VERDICT  true: a no-verdict exits 0 with a warning (UNSAFE; default false)
#   GATE_SERVICE_URL       review through a `cline-mcp serve --http` service instead (its /mcp URL;
#                          https, or http to loopback); the checkout must be on a volume it sees
#   GATE_SERVICE_TOKEN     the service's bearer token (else CLINE_MCP_SERVICE_TOKEN)
#   GATE_SERVICE_CWD       the checkout's path as the service sees it (default: its path here)
#   GATE_DOTENV            a file to write the outputs to as KEY=value (GitLab's dotenv report)
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY  written when set (GitHub Actions)
# shellcheck disable=SC2016 # backquotes are Markdown and $names are jq's, in single quotes on purpose
set -u

SEVERITIES="critical high medium low info"

log() { printf 'cline-mcp gate: %s\n' "$*" >&2; }

# rank SEVERITY: 5 for critical down to 1 for info, 0 for anything else.
rank() {
	case "$1" in
	critical) echo 5 ;; high) echo 4 ;; medium) echo 3 ;; low) echo 2 ;; info) echo 1 ;; *) echo 0 ;;
	esac
}

# set_output NAME VALUE: one output, to every sink that is configured. Values are single-line.
set_output() {
	local name=$1 value=${2//$'\n'/ }
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf '%s=%s\n' "$name" "$value" >>"$GITHUB_OUTPUT"
	fi
	if [ -n "${GATE_DOTENV:-}" ]; then
		local key
		key="CLINE_REVIEW_$(printf '%s' "$name" | tr 'a-z-' 'A-Z_')"
		printf '%s=%s\n' "$key" "$value" >>"$GATE_DOTENV"
	fi
}

# finish VERDICT FINDINGS TOTAL REASON: writes the outputs and the summary, and exits.
finish() {
	local verdict=$1 findings=$2 total=$3 reason=$4 code
	set_output verdict "$verdict"
	set_output findings "$findings"
	set_output findings-total "$total"
	set_output reason "$reason"
	write_summary "$verdict" "$findings" "$total" "$reason"
	set_output summary-file "$summary"
	case "$verdict" in
	passed) code=0 ;;
	findings) code=1 ;;
	*) code=2 ;;
	esac
	if [ "$verdict" = no-verdict ] && [ "${GATE_ALLOW_NO_VERDICT:-false}" = true ] && [ "$config_ok" = true ]; then
		log "WARNING: no verdict ($reason), and GATE_ALLOW_NO_VERDICT=true lets the job pass: UNSAFE, nothing was reviewed"
		code=0
	fi
	log "verdict: $verdict ($reason); exit $code"
	exit "$code"
}

# write_summary VERDICT FINDINGS TOTAL REASON: summary.md (and the GitHub step summary).
write_summary() {
	local verdict=$1 findings=$2 total=$3 reason=$4 head
	case "$verdict" in
	passed) head="✅ cline-mcp review: passed" ;;
	findings) head="❌ cline-mcp review: $findings finding(s) at $fail_on or above" ;;
	*) head="⛔ cline-mcp review: no verdict" ;;
	esac
	{
		printf '### %s\n\n' "$head"
		printf 'Target `%s`, threshold `%s`: %s finding(s) at or above the threshold, %s in all.\n\n' \
			"$(safe_line "$target")" "$(safe_line "$fail_on")" "$findings" "$total"
		case "$verdict" in
		no-verdict)
			printf '**The review gave no verdict: %s.** This is not a pass; see the job log.\n' "$reason"
			if [ "${GATE_ALLOW_NO_VERDICT:-false}" = true ] && [ "$config_ok" = true ]; then
				printf '\n> [!WARNING]\n> `allow-no-verdict` is on: this job passes although nothing was reviewed.\n'
			fi
			;;
		*) findings_table ;;
		esac
	} >"$summary"
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		cat "$summary" >>"$GITHUB_STEP_SUMMARY"
	fi
}

# safe_line TEXT: TEXT without backquotes and control characters, at most 200 characters.
safe_line() {
	printf '%s' "$1" | tr -d '`\000-\037\177' | cut -c1-200
}

# findings_table: the findings of the SARIF log as a Markdown table, worst first, at most 50.
# What Cline wrote is hostile text: each cell is a code span (no links, mentions, images or
# HTML), without backquotes, control or format characters, pipes escaped, cut at 200.
findings_table() {
	[ -s "$sarif" ] || return 0
	jq -r '
		def cell: tostring | gsub("[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}]"; " ") | gsub("`"; "'"'"'")
			| .[0:200] | gsub("\\|"; "\\|") | if . == "" then "" else "`" + . + "`" end;
		def rank: {"critical":5,"high":4,"medium":3,"low":2,"info":1}[.] // 0;
		[.runs[0].results[] | {s: (.properties.severity // ""), t: (.properties.title // .message.text // ""),
			u: (.locations[0].physicalLocation.artifactLocation.uri // ""),
			l: (.locations[0].physicalLocation.region.startLine // null),
			o: (.properties.outsideDiff == true)}]
		| sort_by(-(.s | rank)) as $all
		| if ($all | length) == 0 then "No findings." else
			(["| severity | where | finding |", "|---|---|---|"]
			+ [$all[0:50][] | "| \(.s | cell) | \((.u + (if .l then ":\(.l)" else "" end)) | cell)\(if .o then " (outside the change)" else "" end) | \(.t | cell) |"]
			+ (if ($all | length) > 50 then ["", "… and \(($all | length) - 50) more in the SARIF log."] else [] end))
			| join("\n") end' "$sarif" 2>/dev/null || printf 'The findings could not be listed.\n'
}

# check_config: the inputs, before anything runs. A bad one is a no-verdict that
# GATE_ALLOW_NO_VERDICT does not excuse: a gate that cannot be configured is broken.
check_config() {
	command -v jq >/dev/null 2>&1 || config_error "jq is required to read the SARIF log and is not installed"
	[ -n "$target" ] || config_error "no target (base:<ref>, commit:<sha> or uncommitted)"
	[ "$(rank "$fail_on")" -gt 0 ] || config_error "fail-on must be one of: $SEVERITIES"
	case "$timeout" in '' | *[!0-9]*) config_error "timeout must be a number of seconds" ;; esac
	if [ "$timeout" -lt 1 ] || [ "$timeout" -gt 7200 ]; then
		config_error "timeout must be between 1 and 7200 seconds"
	fi
	case "$deadline" in '' | *[!0-9]*) config_error "deadline must be a number of seconds" ;; esac
	[ "$deadline" -ge 1 ] || config_error "deadline must be at least 1 second"
	case "$grace" in '' | *[!0-9]*) config_error "kill grace must be a number of seconds" ;; esac
	case "$isolation" in docker | host) ;; *) config_error "isolation must be docker or host" ;; esac
	case "${GATE_ALLOW_NO_VERDICT:-false}" in true | false) ;; *) config_error "allow-no-verdict must be true or false" ;; esac
	if [ -n "$service_url" ]; then
		check_service_config
	elif [ -z "$binary" ] || ! command -v "$binary" >/dev/null 2>&1; then
		config_error "the cline-mcp binary ($(safe_line "$binary")) is not there or not executable"
	fi
}

# check_service_config: a service URL the token may travel to, a token, and nothing that only
# a local review could honour.
check_service_config() {
	case "$service_url" in
	https://*) ;;
	http://127.0.0.1:* | http://127.0.0.1/* | http://localhost:* | http://localhost/* | http://\[::1\]:*) ;;
	*) config_error "service-url must be https (or http to a loopback address): the token travels in a header" ;;
	esac
	if ! printf '%s' "$service_url" | grep -Eq '^[A-Za-z0-9._~:/?#@!$&()*+,;=%-]+$'; then
		config_error "service-url has characters a URL does not"
	fi
	[ -n "$service_token" ] || config_error "service-url is set but there is no token (service-token, or CLINE_MCP_SERVICE_TOKEN)"
	case "$service_token" in *[!A-Za-z0-9._~+/=-]*) config_error "the service token has characters a bearer token does not" ;; esac
	[ -z "${GATE_ARGS:-}" ] || config_error "args are cline-mcp flags of a local review; a service uses its own"
	command -v curl >/dev/null 2>&1 || config_error "curl is required to reach the service and is not installed"
}

config_error() {
	log "configuration: $1"
	config_ok=false
	finish no-verdict 0 0 "configuration: $1"
}

# run_review: one review under the deadline; sets rc. A watcher stops the review with SIGTERM
# at the deadline and SIGKILL a grace later; a signal to the gate itself sends SIGTERM.
run_review() {
	local args=(review --cwd "$cwd" --target "$target" --format sarif --out "$sarif"
		--fail-on "$fail_on" --timeout "$timeout" --isolation "$isolation")
	[ -n "${GATE_FOCUS:-}" ] && args+=(--focus "$GATE_FOCUS")
	[ -n "${GATE_PROMPT:-}" ] && args+=(--prompt "$GATE_PROMPT")
	local line
	while IFS= read -r line; do
		[ -n "$line" ] && args+=("$line")
	done <<<"${GATE_ARGS:-}"
	log "running $(safe_line "$binary") review --target $(safe_line "$target") --fail-on $fail_on (timeout ${timeout}s, deadline ${deadline}s)"
	run_bounded "$binary" "${args[@]}"
}

# run_bounded COMMAND...: runs it under the deadline and sets rc.
run_bounded() {
	"$@" </dev/null &
	review_pid=$!
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$deadline" &
		s=$!
		wait "$s"
		: >"$deadline_mark"
		kill -TERM "$review_pid" 2>/dev/null
		sleep "$grace" &
		s=$!
		wait "$s"
		kill -KILL "$review_pid" 2>/dev/null
	) >/dev/null 2>&1 </dev/null &
	watcher_pid=$!
	trap 'on_signal' TERM INT HUP
	rc=0
	wait "$review_pid" || rc=$?
	while [ -n "$interrupted" ] && kill -0 "$review_pid" 2>/dev/null; do
		wait "$review_pid" || rc=$?
	done
	kill -TERM "$watcher_pid" 2>/dev/null
	wait "$watcher_pid" 2>/dev/null
	trap - TERM INT HUP
}

# shellcheck disable=SC2317 # called by the trap
on_signal() {
	interrupted=yes
	log "interrupted: stopping the review"
	kill -TERM "$review_pid" 2>/dev/null
}

# check_stopped: a review the gate stopped (deadline, signal) is no verdict, whatever it said.
check_stopped() {
	if [ -n "$interrupted" ]; then
		finish no-verdict 0 0 "the gate was interrupted before the review ended"
	fi
	if [ -e "$deadline_mark" ]; then
		finish no-verdict 0 0 "the review did not end within the ${deadline}s deadline and was stopped"
	fi
}

# review_service: one review_cline call to the service (MCP over streamable HTTP, stateless: one
# POST); its result becomes the SARIF log classify reads, and rc what cline-mcp review would
# have exited. The deadline bounds the request; closing it cancels the run on the service.
review_service() {
	local svc_cwd svc_timeout=$timeout cfg status msg
	svc_cwd=${GATE_SERVICE_CWD:-$(cd "$cwd" 2>/dev/null && pwd -P)} || svc_cwd=$cwd
	if [ "$svc_timeout" -gt 300 ]; then
		log "the service takes at most 300 s per attempt: timeout ${timeout}s lowered to 300s"
		svc_timeout=300
	fi
	jq -n --arg cwd "$svc_cwd" --arg target "$target" --argjson t "$svc_timeout" \
		--arg focus "${GATE_FOCUS:-}" --arg prompt "${GATE_PROMPT:-}" '{jsonrpc: "2.0", id: 1, method: "tools/call",
		params: {name: "review_cline", arguments: ({cwd: $cwd, target: $target, timeoutSeconds: $t}
			+ (if $focus != "" then {focus: $focus} else {} end) + (if $prompt != "" then {prompt: $prompt} else {} end))}}' \
		>"$out_dir/request.json" || finish no-verdict 0 0 "the request could not be written"
	# The token goes to curl in a private file outside the output directory (an artifact),
	# removed however the gate ends; never on a command line.
	cfg=$(mktemp "${TMPDIR:-/tmp}/cline-gate-auth.XXXXXX") || finish no-verdict 0 0 "no private file for the token"
	trap 'rm -f "$cfg"' EXIT
	printf 'header = "Authorization: Bearer %s"\n' "$service_token" >"$cfg" ||
		finish no-verdict 0 0 "the request could not be written"
	log "asking $(safe_line "$service_url") for a review of $(safe_line "$target") (timeout ${svc_timeout}s, deadline ${deadline}s)"
	run_bounded curl -sS -K "$cfg" --max-time "$deadline" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data-binary "@$out_dir/request.json" \
		-D "$out_dir/headers.txt" -o "$out_dir/response.txt" "$service_url"
	rm -f "$cfg"
	check_stopped
	case $rc in
	0) ;;
	18 | 52 | 56) finish no-verdict 0 0 "the service closed the connection before it answered (curl exit $rc: a service restarted or killed mid-review stops its run); run the gate again" ;;
	*) finish no-verdict 0 0 "the service did not answer (curl exit $rc)" ;;
	esac
	status=$(awk '/^HTTP\// { s = $2 } END { print s }' "$out_dir/headers.txt")
	case "$status" in
	200) ;;
	401) finish no-verdict 0 0 "the service refused the token (HTTP 401)" ;;
	*[!0-9]* | '') finish no-verdict 0 0 "the service's answer has no HTTP status" ;;
	*) finish no-verdict 0 0 "the service answered HTTP $status" ;;
	esac
	# The JSON-RPC answer with id 1: the body itself, or the data of a server-sent event.
	msg=$(sed -n 's/^data: \{0,1\}//p' "$out_dir/response.txt" | grep . || cat "$out_dir/response.txt")
	printf '%s\n' "$msg" | jq -s -e "$SERVICE_RESULT" >"$out_dir/result.json" 2>/dev/null ||
		finish no-verdict 0 0 "the service's answer is not a JSON-RPC result"
	msg=$(jq -r "$SERVICE_PROBLEM" "$out_dir/result.json") || finish no-verdict 0 0 "the service's answer could not be read"
	[ -z "$msg" ] || finish no-verdict 0 0 "$msg"
	jq --arg v "service" "$SARIF_OF_REVIEW" "$out_dir/result.json" >"$sarif" || finish no-verdict 0 0 "the service's review could not be written as SARIF"
	rc=$(jq -r --argjson min "$(rank "$fail_on")" "$SARIF_COUNTS" "$sarif" 2>/dev/null | awk '{ print ($2 > 0) ? 1 : 0 }')
	rc=${rc:-3}
}

SERVICE_RESULT='[.[] | select(type == "object" and .id == 1 and (has("result") or has("error")))] | last // error("none")'

# SERVICE_PROBLEM prints why the call gave no review, or nothing.
SERVICE_PROBLEM='
	def kind: if type == "string" and test("^[a-z_]{1,40}$") then . else "unknown" end;
	if has("error") then "the service answered a JSON-RPC error"
	elif .result.isError == true or .result.structuredContent.ok != true then
		"the review did not run to an answer (kind \(.result.structuredContent.kind | kind))"
	elif (.result.structuredContent.review | type) != "object" then "the service answered without a review"
	else "" end'

# SARIF_OF_REVIEW is the service's review as cline-mcp review writes it (bridge/review/sarif.go);
# a location only for a plain repository-relative path.
SARIF_OF_REVIEW='
	def level: if . == "critical" or . == "high" then "error" elif . == "medium" then "warning" else "note" end;
	def safe: type == "string" and test("^[A-Za-z0-9_][A-Za-z0-9._ -]*(/[A-Za-z0-9_][A-Za-z0-9._ -]*)*$");
	def region: if (.line | type) == "number" and .line > 0
		then {region: {startLine: .line, endLine: ([(.endLine // 0), .line] | max)}} else {} end;
	.result.structuredContent.review as $r | {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", version: "2.1.0",
	runs: [{tool: {driver: {name: "cline-mcp review_cline", version: $v, informationUri: "https://github.com/cline-mcp/cline-mcp",
			rules: [("critical", "high", "medium", "low", "info") | {id: ("review/" + .), shortDescription: {text: ("A " + . + " finding of the review")}}]}},
		results: [($r.findings // [])[] | {ruleId: ("review/" + (.severity | tostring)), level: (.severity | level),
			message: {text: ((.title // "") + (if (.detail // "") != "" then ": " + .detail else "" end)
				+ (if (.suggestion // "") != "" then "\nSuggestion: " + .suggestion else "" end))},
			properties: {severity: .severity, title: .title, outsideDiff: (.outsideDiff == true)}}
			+ (if (.file | safe) then {locations: [{physicalLocation: ({artifactLocation: {uri: (.file | @uri | gsub("%2F"; "/"))}} + region)}]} else {} end)],
		properties: {target: $r.target, base: $r.base, head: $r.head, summary: $r.summary, findingsParsed: ($r.parsed == true)}}]}'

# classify: the verdict from the exit code and the SARIF log; calls finish.
classify() {
	check_stopped
	case "$rc" in
	0 | 1) ;;
	2) finish no-verdict 0 0 "cline-mcp refused its flags or crashed (exit 2)" ;;
	3)
		# With --fail-on, an answer without a findings block exits 3 and says so in its SARIF.
		if [ -s "$sarif" ] && [ "$(jq -r '.runs[0].properties.findingsParsed' "$sarif" 2>/dev/null)" = false ]; then
			finish no-verdict 0 0 "the reviewer answer had no readable findings block (exit 3)"
		fi
		finish no-verdict 0 0 "the review did not run to an answer (exit 3: its kind and message are in the log)"
		;;
	*) finish no-verdict 0 0 "cline-mcp ended with exit code $rc (crashed or killed)" ;;
	esac
	[ -s "$sarif" ] || finish no-verdict 0 0 "cline-mcp exited $rc but wrote no SARIF log"
	local problem
	problem=$(jq -r "$SARIF_PROBLEM" "$sarif" 2>/dev/null) || problem="the SARIF log is not valid JSON"
	[ -z "$problem" ] || finish no-verdict 0 0 "$problem"
	local counts total findings
	counts=$(jq -r --argjson min "$(rank "$fail_on")" "$SARIF_COUNTS" "$sarif") ||
		finish no-verdict 0 0 "the SARIF log's findings could not be counted"
	total=${counts% *}
	findings=${counts#* }
	local want=0
	[ "$findings" -gt 0 ] && want=1
	if [ "$rc" -ne "$want" ]; then
		finish no-verdict 0 "$total" "cline-mcp exited $rc but its SARIF log holds $findings finding(s) at $fail_on or above"
	fi
	write_codequality
	set_output sarif-file "$sarif"
	if [ "$findings" -gt 0 ]; then
		finish findings "$findings" "$total" "$findings finding(s) at $fail_on or above"
	fi
	finish passed 0 "$total" "no finding at $fail_on or above"
}

# SARIF_PROBLEM prints why the log is not a verdict, or nothing. A run that reports an
# unsuccessful invocation, or whose reviewer answer had no readable findings block
# (findingsParsed false: "no findings" would then mean "not read"), is no verdict.
SARIF_PROBLEM='
	def sev: . as $s | ["critical","high","medium","low","info"] | index([$s]) != null;
	if type != "object" then "the SARIF log is not an object"
	elif .version != "2.1.0" then "the log is not SARIF 2.1.0"
	elif (.runs | type) != "array" or (.runs | length) != 1 then "the SARIF log does not hold exactly one run"
	elif (.runs[0].tool.driver.name | type) != "string" then "the SARIF run names no tool"
	elif (.runs[0].results | type) != "array" then "the SARIF run has no results array"
	elif any(.runs[0].invocations[]?; .executionSuccessful != true) then "the SARIF run reports an unsuccessful invocation"
	elif .runs[0].properties.findingsParsed != true then "the reviewer answer had no readable findings block"
	elif any(.runs[0].results[]; (.properties.severity | sev) | not) then "a SARIF result has no known severity"
	else "" end'

# SARIF_COUNTS prints "TOTAL AT_OR_ABOVE" for the threshold rank $min.
SARIF_COUNTS='
	def rank: {"critical":5,"high":4,"medium":3,"low":2,"info":1}[.] // 0;
	[.runs[0].results[].properties.severity | rank] | "\(length) \(map(select(. >= $min)) | length)"'

# write_codequality: the findings as a GitLab Code Quality report (codequality.json).
write_codequality() {
	jq '[.runs[0].results | to_entries[] | .value as $r | {
		description: (($r.properties.title // $r.message.text // "finding") | tostring | .[0:500]),
		check_name: ($r.ruleId // "review"),
		fingerprint: "cline-mcp-review-\(.key)-\($r.ruleId)-\($r.locations[0].physicalLocation.artifactLocation.uri // "")-\($r.locations[0].physicalLocation.region.startLine // 0)",
		severity: ({"critical":"blocker","high":"critical","medium":"major","low":"minor","info":"info"}[$r.properties.severity] // "info"),
		location: {path: ($r.locations[0].physicalLocation.artifactLocation.uri // "."),
			lines: {begin: ($r.locations[0].physicalLocation.region.startLine // 1)}}}]' \
		"$sarif" >"$out_dir/codequality.json" 2>/dev/null && set_output codequality-file "$out_dir/codequality.json"
}

main() {
	# Unset: cline-mcp on PATH. Set but empty (the Action's install step failed): no binary.
	binary=${GATE_BINARY-cline-mcp}
	cwd=${GATE_CWD:-.}
	target=${GATE_TARGET:-}
	fail_on=${GATE_FAIL_ON:-high}
	timeout=${GATE_TIMEOUT:-600}
	isolation=${GATE_ISOLATION:-docker}
	grace=${GATE_KILL_GRACE:-30}
	out_dir=${GATE_OUT_DIR:-cline-review}
	config_ok=true
	interrupted=
	mkdir -p "$out_dir" || {
		log "cannot make $out_dir"
		exit 2
	}
	sarif=$out_dir/review.sarif
	summary=$out_dir/summary.md
	deadline_mark=$out_dir/.deadline-reached
	service_url=${GATE_SERVICE_URL:-}
	service_token=${GATE_SERVICE_TOKEN:-${CLINE_MCP_SERVICE_TOKEN:-}}
	# Nothing an earlier run left may count as this run's answer.
	rm -f "$sarif" "$summary" "$deadline_mark" "$out_dir/codequality.json" "$out_dir/request.json" "$out_dir/response.txt" "$out_dir/headers.txt" "$out_dir/result.json"
	if [ -n "${GATE_DOTENV:-}" ]; then
		: >"$GATE_DOTENV"
	fi
	case "$timeout" in '' | *[!0-9]*) deadline=${GATE_DEADLINE:-0} ;; *) deadline=${GATE_DEADLINE:-$((2 * timeout + 120))} ;; esac
	check_config
	if [ -n "$service_url" ]; then
		review_service
	else
		run_review
	fi
	classify
}

main "$@"
