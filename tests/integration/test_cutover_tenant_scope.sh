#!/usr/bin/env bash
# A cut-over's answer through the API names only jobs the token sees: a
# chain (after:) whose other job is of a tenant a scoped token does not see
# is counted in hidden_split_chains, its ids unsaid, as plan diff does with
# hidden_followers.  An unscoped token sees the chain.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "api: a tenant-scoped token's cut-over answer names no job of another tenant (split_chains), and counts what it leaves out"

it_db
cat >"$NODE_DIR/scope.yaml" <<'YAML'
jobs:
  - {id: red.up, tenant: red, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: red.down, tenant: red, after: [{job: red.up}], target: {url: "http://127.0.0.1:9/x"}}
  - {id: blue.secret-down, tenant: blue, after: [{job: red.up}], target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply: red.up, red.down and blue's job after it" 0 "$PAL" apply "$NODE_DIR/scope.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node r1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1

declare -A TOK
for t in admin:admin admin-red:admin; do
	name=${t%%:*} role=${t##*:}
	extra=(); [[ "$name" = *-red ]] && extra=(--tenant red)
	out=$("$PAL" token create --name "$name" --role "$role" "${extra[@]}") || fail "token create $name"
	TOK[$name]=$(tail -1 <<<"$out")
done
api() {
	local tok=$1 method=$2 path=$3 body=${4:-}
	curl -s -o "$NODE_DIR/api-out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok" \
		-H 'Content-Type: application/json' --data "$body" "http://${NODE_ADMIN[r1]}/api/v1$path"
}
# the answer's body of the last api call (which runs in a command substitution)
body() { cat "$NODE_DIR/api-out"; }
expect_eq "blue in shadow" 200 "$(api "${TOK[admin]}" POST /shadow '{"tenant":"blue","reason":"migrate blue"}')"
expect_eq "red in shadow (by red's admin)" 200 "$(api "${TOK[admin-red]}" POST /shadow '{"tenant":"red","reason":"migrate red"}')"
at=$(date -u -d '+30 sec' +%Y-%m-%dT%H:%M:%SZ)
step="{\"tenant\":\"red\",\"reason\":\"go\",\"at\":\"$at\"}"

expect_eq "red's admin: a dry-run cut-over of tenant red" 200 "$(api "${TOK[admin-red]}" POST '/cutover?dry_run=true' "$step")"
echo "    red's admin: $(jq -c '{made_live, split_chains, hidden_split_chains}' <<<"$(body)")"
expect_eq "... names no job of tenant blue" 0 "$(grep -c 'blue\.' <<<"$(body)")"
expect_eq "... counts the chain it leaves out" 1 "$(jq -r .hidden_split_chains <<<"$(body)")"
expect_eq "... and answers no tenant field" "null null" "$(jq -r '[.split_chains[]? | .job_tenant, .upstream_tenant] | if length == 0 then "null null" else map(tostring) | join(" ") end' <<<"$(body)")"

expect_eq "the unscoped admin: the same dry run" 200 "$(api "${TOK[admin]}" POST '/cutover?dry_run=true' "$step")"
expect_eq "... names the chain to blue's job" "blue.secret-down red.up false" \
	"$(jq -r '.split_chains[] | select(.job == "blue.secret-down") | "\(.job) \(.upstream) \(.job_live)"' <<<"$(body)")"
expect_eq "... and hides nothing" 0 "$(jq -r .hidden_split_chains <<<"$(body)")"
expect_eq "... with no tenant field" 0 "$(grep -c '_tenant' <<<"$(body)")"
expect_eq "nothing written by the dry runs" 0 "$(sql "select count(*) from cutover_steps")"
finish
