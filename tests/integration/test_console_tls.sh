#!/usr/bin/env bash
# The console's nodes table asks each live peer for /status at the admin
# address the peer registered in ZooKeeper.  It never sends a credential
# there (whoever can write a registration names the address, and the admin
# token is a credential for every node): on a cluster whose admin listeners
# speak TLS, a registration pointing at a plain listener that records what
# it is sent receives no token, and the real TLS peer is asked over
# https://, verified against the node's certificate, and shown ready.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console never sends the node's admin token to a peer's address; on a TLS cluster it reads peers over https"

fresh_db it_console_tls
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
SHARDS=2 write_tls_conf "$CLUSTER_CONF"
D=$TLS_DIR

# a listener that keeps what it is sent: it stands for a network path to a
# peer (anyone on it reads what crosses in clear)
CAP=$(free_port)
: >"$PALISADE_TEST_TMP/captured"
python3 - "$CAP" "$PALISADE_TEST_TMP/captured" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(5)
while True:
    c, _ = s.accept(); c.settimeout(2)
    try:
        data = c.recv(4096)
    except Exception:
        data = b""
    open(sys.argv[2], "ab").write(data + b"\n----\n")
    c.close()
PY
CAP_PID=$!
trap 'stop_all_nodes; kill $CAP_PID 2>/dev/null; wait $CAP_PID 2>/dev/null' EXIT

start_node t1
start_node t2
A=${NODE_ADMIN[t1]}
wait_until "t1 answers over HTTPS" 20 bash -c \
	"[ \"\$(curl -s --cacert $D/cert.pem -o /dev/null -w '%{http_code}' https://$A/readyz)\" = 200 ]"
wait_until "t2 is ready" 20 bash -c \
	"[ \"\$(curl -s --cacert $D/cert.pem -o /dev/null -w '%{http_code}' https://${NODE_ADMIN[t2]}/readyz)\" = 200 ]"
wait_until "t2 registered" 20 bash -c "curl -s --cacert $D/cert.pem https://$A/api/cluster?section=nodes | grep -q '\"t2\"'"
page=$(curl -s --cacert "$D/cert.pem" "https://$A/api/cluster?section=nodes")
t2=$(python3 -c 'import json,sys; print([(n.get("ready"), n.get("status_error")) for n in json.load(sys.stdin)["nodes"] if n["node"] == "t2"])' <<<"$page")
echo "    t2 as t1's console sees it (ready, status_error): $t2"
expect_eq "t1 reads its TLS peer t2 over https: t2 ready, no error" "[(True, None)]" "$t2"

# a third live registration whose admin address is the listener above
ZKCLI=$(command -v zkCli.sh || echo /usr/share/zookeeper/bin/zkCli.sh)
"$ZKCLI" -server "$PALISADE_ZK" create "/palisade-test/$IT_CLUSTER/nodes/t3" \
	"{\"version\":\"0.4.0-dev\",\"roles\":[\"executor\"],\"admin\":\"127.0.0.1:$CAP\",\"schema\":42,\"schema_min\":1}" >/dev/null 2>&1
wait_until "t3's registration is listed" 10 bash -c "curl -s --cacert $D/cert.pem https://$A/api/cluster?section=nodes | grep -q '\"t3\"'"
curl -s --cacert "$D/cert.pem" -o /dev/null "https://$A/console"
sleep 1
echo "    captured: $(head -c 400 "$PALISADE_TEST_TMP/captured" | tr -c '[:print:]' ' ')"
check "t1 asked the registered address of t3 (the listener was reached)" test -s "$PALISADE_TEST_TMP/captured"
check "t1's console page sent no admin token to a peer's address" \
	bash -c '! grep -q "$1" "$2"' _ "$PALISADE_ADMIN_TOKEN" "$PALISADE_TEST_TMP/captured"
check "nor any Authorization header" bash -c '! grep -qi "^authorization:" "$1"' _ "$PALISADE_TEST_TMP/captured"
finish
