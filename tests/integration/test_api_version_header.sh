#!/usr/bin/env bash
# Every /api/v1 answer names the node's release in Palisade-Version, those the
# admin listener gives before the API runs as well (a refused cross-site
# request: 403; a body over the limit: 413), so that a client judging the
# release from any answer does not take a 0.4.0 node for 0.3.0.  Paths outside
# /api/v1 carry none.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "every /api/v1 answer names the node's release"
fresh_db it_api_version_header
"$PAL" migrate >/dev/null
SHARDS=1 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "s1 ready" 20 node_ready s1
A="http://${NODE_ADMIN[s1]}"
expect_eq "HEAD openapi.json: the header" 1 "$(curl -sI "$A/api/v1/openapi.json" | grep -ci '^palisade-version: ')"
h=$(curl -sI -H 'Sec-Fetch-Site: cross-site' "$A/api/v1/openapi.json"); echo "$h" | head -3 | sed 's/^/    | /'
expect_eq "a refused cross-site /api/v1 answer: the header" 1 "$(grep -ci '^palisade-version: ' <<<"$h")"
h=$(head -c 5000000 /dev/zero | tr '\0' a | curl -s -D - -o /dev/null -X POST -H 'Authorization: Bearer x' -H 'Content-Type: application/json' --data-binary @- "$A/api/v1/drain"); echo "$h" | head -3 | sed 's/^/    | /'
expect_eq "a 413 /api/v1 answer: the header" 1 "$(grep -ci '^palisade-version: ' <<<"$h")"
h=$(curl -sI -H 'Sec-Fetch-Site: cross-site' "$A/status")
expect_eq "a refused cross-site answer outside /api/v1: no header" 0 "$(grep -ci '^palisade-version: ' <<<"$h")"
stop_node s1
finish
