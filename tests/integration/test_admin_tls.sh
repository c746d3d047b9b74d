#!/usr/bin/env bash
# The admin listener over TLS (admin.tls_cert, admin.tls_key): HTTPS only,
# the API and its tokens through it, the Host check and the admin token as
# over HTTP; a half-configured pair refused at load.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the admin endpoint and the API speak HTTPS when admin.tls_cert and admin.tls_key are set: a client that trusts the certificate gets /healthz and /api/v1, plain HTTP gets nothing, an untrusted client is refused by the handshake, the Host check and the tokens still apply"
T0=$SECONDS

it_db
SHARDS=2 write_tls_conf "$CLUSTER_CONF"
D=$TLS_DIR
start_node t1
A=${NODE_ADMIN[t1]}
wait_until "the node answers /readyz over HTTPS" 20 bash -c \
	"[ \"\$(curl -s --cacert $D/cert.pem -o /dev/null -w '%{http_code}' https://$A/readyz)\" = 200 ]"
expect_eq "/healthz over HTTPS" 200 "$(curl -s --cacert "$D/cert.pem" -o /dev/null -w '%{http_code}' "https://$A/healthz")"
code=$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://$A/healthz")
expect_eq "plain HTTP gets no HTTP answer" 000 "$code"
curl -s -m 3 -o /dev/null "https://$A/healthz"
expect_eq "a client that does not trust the certificate fails the handshake (curl 60)" 60 "$?"
TOK=$("$PAL" token create --name tls-viewer --role viewer | tail -1)
expect_eq "the API over HTTPS with a token" 200 \
	"$(curl -s --cacert "$D/cert.pem" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK" "https://$A/api/v1/jobs")"
expect_eq "and without one: 401" 401 \
	"$(curl -s --cacert "$D/cert.pem" -o /dev/null -w '%{http_code}' "https://$A/api/v1/jobs")"
hdr=$(curl -s --cacert "$D/cert.pem" -D - -o /dev/null --data-urlencode "token=$TOK" "https://$A/console/login" | tr -d '\r')
expect_match "a console login over HTTPS: a Secure, HttpOnly, SameSite=Strict session cookie (no token in it)" \
	'^Set-Cookie: palisade_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict; Secure$' "$(grep -i '^set-cookie' <<<"$hdr")"
expect_eq "a foreign Host over HTTPS: 421" 421 \
	"$(curl -s --cacert "$D/cert.pem" -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "https://$A/healthz")"
expect_eq "POST /drain without the admin token: 401" 401 \
	"$(curl -s --cacert "$D/cert.pem" -o /dev/null -w '%{http_code}' -X POST "https://$A/drain")"
expect_exit "the CLI through --server https:// (PALISADE_CACERT)" 0 env -u PALISADE_PG \
	PALISADE_CACERT="$D/cert.pem" PALISADE_TOKEN="$TOK" "$PAL" jobs --server "https://$A"
expect_exit "without the CA: unreachable (69)" 69 env -u PALISADE_PG \
	PALISADE_TOKEN="$TOK" "$PAL" jobs --server "https://$A"
stop_node t1

# Half a pair: refused when the configuration is loaded (exit 65).
SHARDS=2 write_conf "$CLUSTER_CONF" "admin: {tls_cert: $D/cert.pem}"
expect_exit "admin.tls_cert without admin.tls_key: the node refuses its configuration" 65 \
	timeout 20 "$PAL" node --config "$CLUSTER_CONF" --node-id t2 --admin 127.0.0.1:0
expect_match "naming the pair" 'admin.tls_cert and admin.tls_key go together' "$OUT"
echo "  took $((SECONDS - T0)) s"
finish
