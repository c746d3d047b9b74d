#!/usr/bin/env bash
# What the service answered: each attempt keeps the headers its job names
# and the first keep_body bytes of the body (attempt_responses), a ${ENV}
# secret the answer echoes is masked before anything is written, keep_body 0
# keeps nothing, and `palisade attempts`, the API and the console show it.
# A header repeated 7,000 times (224 KB, a size libcurl accepts) keeps
# 8 KiB of names and masked values as stored (escaped), flagged as
# headers_truncated, cut before a character or an escape that would not fit
# whole.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "responses - an attempt keeps exactly the named headers and the first keep_body bytes of the answer, truncated flagged, and no byte of a job's secret reaches the database"
T_START=$(date +%s)

it_db excerpt
start_badserver "echoing server up"
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 1s}"
SECRET='Zq9-s3cr3t-v4lue'
export RESP_SECRET=$SECRET
base="schedule: {cron: \"0 0 0 1 1 ? 2099\"}, retry: {max_attempts: 1}"
auth="headers: {Authorization: \"Bearer \${RESP_SECRET}\"}"
apply_jobs apply <<YAML
jobs:
  - {id: resp.cut, $base, target: {url: "http://127.0.0.1:$port/echo?n=10000", $auth, keep_body: 1000, keep_headers: [X-Request-Id, x-echo-auth, X-Request-Id]}}
  - {id: resp.whole, $base, target: {url: "http://127.0.0.1:$port/echo?n=300", $auth}}
  - {id: resp.none, $base, target: {url: "http://127.0.0.1:$port/echo?n=300", $auth, keep_body: 0}}
  - {id: resp.rep, $base, target: {url: "http://127.0.0.1:$port/echo?n=300&rep=7000", $auth, keep_headers: [X-Request-Id, X-Rep]}}
  - {id: resp.utf8, $base, target: {url: "http://127.0.0.1:$port/echo?n=300&rep=7000", headers: {Authorization: "a€€€€€€€€€€"}, keep_headers: [X-Request-Id, X-Rep]}}
  - {id: resp.esc, $base, target: {url: "http://127.0.0.1:$port/echo?n=300&rep=7000", headers: {Authorization: "a\\\\b\\tc"}, keep_headers: [X-Request-Id, X-Rep]}}
YAML
expect_exit "a keep_body that is not a size is refused (65)" 65 "$PAL" validate <(sed 's/keep_body: 1000/keep_body: 2GiB/' "$NODE_DIR/jobs.yaml")
lead_shards 20 x1
for j in cut whole none rep utf8 esc; do
	"$PAL" trigger --config "$CLUSTER_CONF" --job "resp.$j" --reason "excerpt test" >/dev/null
done
settled() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'resp.%' and state = 'succeeded'")" = 6 ]; }
wait_until "the six triggers succeed" 30 settled
tid() { sql "select id from trigger_jobs where job_id = 'resp.$1'"; }
row() { sql "select $2 from attempt_responses r join trigger_jobs t on t.id = r.trigger_id where t.job_id = 'resp.$1'"; }

expect_eq "cut: exactly keep_body (1000) bytes kept" 1000 "$(row cut 'length(body)')"
expect_eq "cut: flagged truncated (the answer had 10000)" t "$(row cut truncated)"
expect_eq "cut: the named headers only, by lower-case name, the secret masked" \
	'{"x-echo-auth": "Bearer ***", "x-request-id": "req-42"}' "$(row cut headers)"
expect_eq "cut: its content type" "text/plain; charset=utf-8" "$(row cut content_type)"
expect_eq "cut: the body starts with the echo, masked" "token=Bearer ***" \
	"$(row cut "convert_from(substring(body from 1 for 16), 'UTF8')")"
expect_eq "cut: a NUL and a 0xff byte kept as bytes" "00ff" "$(row cut "encode(substring(body from 34 for 2), 'hex')")"
# The whole answer (300 bytes, under the 4 KiB default), the secret's
# echoes masked: byte for byte what the server sent, with *** for each.
want=$(curl -s "http://127.0.0.1:$port/echo?n=300" -H "Authorization: Bearer $SECRET" |
	python3 -c 'import sys; sys.stdout.write(sys.stdin.buffer.read().replace(sys.argv[1].encode(), b"***").hex())' "$SECRET")
expect_eq "whole: the whole answer, secrets masked, not truncated" "$want false" \
	"$(row whole "encode(body, 'hex') || ' ' || truncated")"
expect_eq "whole: no headers named, none kept" "{}" "$(row whole headers)"
expect_eq "keep_body 0 and no headers: no row" "" "$(row none r.fence)"
expect_eq "... though the attempt has its status" 200 "$(sql "select http_status from attempt_ledger where trigger_id = $(tid none)")"
# The repeated header: its names and masked values fill PAL_KEEP_HEADERS_BYTES
# (8192; the cut may leave the 2 bytes of a ", " unused), cut after the
# masking (never inside a secret: what follows the last whole "Bearer ***"
# is the start of ", Bearer ***"), the rest left out and flagged.
kept="(select coalesce(sum(octet_length(key) + octet_length(value)), 0) from jsonb_each_text(r.headers) where key <> '(truncated)')"
expect_eq "rep: the kept names and values fill the 8 KiB cap, no more" t "$(row rep "$kept between 8190 and 8192")"
expect_eq "rep: the header before the repeated one kept whole" req-42 "$(row rep "headers->>'x-request-id'")"
expect_eq "rep: cut after masking, at a \"Bearer ***\" boundary or inside one" t \
	"$(row rep "starts_with(', Bearer ***', regexp_replace(headers->>'x-rep', '(, )?Bearer \\*\\*\\*', '', 'g'))")"
expect_eq "rep: the cut is flagged in the row" t "$(row rep "headers ? '(truncated)'")"
expect_eq "rep: the body kept whole beside it" t "$(row rep "length(body) > 0 and not truncated")"
# "a" and ten euro signs (31 bytes) repeated: the cut lands inside a
# character, which is left out whole (never stored as "\xe2\x82").
expect_eq "utf8: the cut is flagged" t "$(row utf8 "headers ? '(truncated)'")"
echo "    tail of the kept utf8 value: $(row utf8 "right(headers->>'x-rep', 12)")"
expect_eq "utf8: no torn character kept (no \\x escape: the service sent none)" f \
	"$(row utf8 "strpos(headers->>'x-rep', '\\x') > 0")"
expect_eq "utf8: the kept value ends on a whole character" t "$(row utf8 "right(headers->>'x-rep', 1) in ('a', '€')")"
expect_eq "utf8: within the 8 KiB cap, no more" t "$(row utf8 "$kept between 8186 and 8192")"
# "a\b<tab>c" (5 bytes) is stored as a\\b\tc (7): the cap counts what is
# stored, and the cut falls between escapes.
expect_eq "esc: the cut is flagged" t "$(row esc "headers ? '(truncated)'")"
expect_eq "esc: the stored (escaped) names and values fill the 8 KiB cap, no more" t \
	"$(row esc "$kept between 8186 and 8192")"
expect_eq "esc: every value whole but the last, cut between escapes" ok \
	"$(row esc "headers->>'x-rep'" | python3 -c '
import sys
v = sys.stdin.read().rstrip("\n").split(", ")
whole = "a\\\\b\\tc"
ok = all(x == whole for x in v[:-1]) and v[-1] in ("a", "a\\\\", "a\\\\b", "a\\\\b\\t", whole)
print("ok" if ok else "no: ...%r" % v[-3:])')"
# The secret, in clear or hex, appears nowhere in the table (a bytea shows
# as hex in text output).
dump=$(sql "select r::text from attempt_responses r")
hexsecret=$(printf %s "$SECRET" | od -An -tx1 | tr -d ' \n')
check "the table holds rows for the dump to be meaningful" [ "$(wc -l <<<"$dump")" -ge 2 ]
expect_eq "the secret's value appears nowhere in attempt_responses" 0 "$(grep -c -e "$SECRET" -e "$hexsecret" <<<"$dump")"
expect_eq "... nor any 8-byte piece of it" 0 "$(grep -c -e "${SECRET:0:8}" -e "${SECRET:8:8}" <<<"$dump")"
expect_eq "every range's attempts partition has its responses partition" 0 \
	"$(sql "select count(*) from palisade_partitions p where to_regclass(palisade_responses_part(p.attempts_part)) is null")"

j=$("$PAL" attempts --config "$CLUSTER_CONF" --output json "$(tid cut)")
expect_eq "attempts --output json: response.status" 200 "$(jq -r '.[0].response.status' <<<"$j")"
expect_eq "... response.headers" "Bearer *** req-42" "$(jq -r '.[0].response.headers | "\(.["x-echo-auth"]) \(.["x-request-id"])"' <<<"$j")"
expect_eq "... response.truncated" true "$(jq -r '.[0].response.truncated' <<<"$j")"
expect_eq "... response.body shown escaped" 'token=Bearer ***\n0123456789abcdef\x00\xffBearer ***|' \
	"$(jq -r '.[0].response.body[0:53]' <<<"$j")"
expect_eq "... and its exact bytes" 1000 "$(jq -r '.[0].response.body_base64' <<<"$j" | base64 -d | wc -c)"
expect_eq "an attempt that kept nothing: the status alone" '200 {} false' \
	"$("$PAL" attempts --config "$CLUSTER_CONF" --output json "$(tid none)" | jq -r '.[0].response | "\(.status) \(.headers) \(.truncated)"')"
jr=$("$PAL" attempts --config "$CLUSTER_CONF" --output json "$(tid rep)")
expect_eq "attempts --output json: response.headers_truncated, the body's truncated apart" "true false" \
	"$(jq -r '.[0].response | "\(.headers_truncated) \(.truncated)"' <<<"$jr")"
expect_eq "... the flag is no header" "req-42 x-rep,x-request-id" \
	"$(jq -r '.[0].response.headers | "\(.["x-request-id"]) \(keys | join(","))"' <<<"$jr")"
expect_eq "... and false where nothing was cut" false "$(jq -r '.[0].response.headers_truncated' <<<"$j")"
check "attempts (table) says the headers were cut" grep -qF '(headers cut at 8192 B)' \
	<("$PAL" attempts --config "$CLUSTER_CONF" "$(tid rep)")
check "attempts (table) shows a short escaped excerpt" grep -qF 'token=Bearer ***\n0123' \
	<("$PAL" attempts --config "$CLUSTER_CONF" "$(tid cut)")
tok=$("$PAL" token create --name excerpt-viewer --role viewer | tail -1)
api=$(curl -s -H "Authorization: Bearer $tok" "http://${NODE_ADMIN[x1]}/api/v1/triggers/$(tid cut)/attempts")
expect_eq "the API's attempts route returns the same response" "$(jq -c '.[0].response' <<<"$j")" "$(jq -c '.items[0].response' <<<"$api")"
page=$(curl -s "http://${NODE_ADMIN[x1]}/console/job?id=resp.cut")
check "the console's job page shows the excerpt, HTML-escaped" grep -qF 'token=Bearer ***\n0123456789abcdef\x00\xffBearer ***|' <<<"$page"
check "... and the kept header" grep -qF 'x-request-id: req-42' <<<"$page"
check "... and where kept headers were cut" grep -qF '(headers cut at 8192 B)' \
	<(curl -s "http://${NODE_ADMIN[x1]}/console/job?id=resp.rep")
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
