# tests/ports.sh - free_port, sourced by the test and bench scripts.
#
# free_port prints a TCP port on 127.0.0.1 that nothing listens on, chosen
# BELOW the kernel's ephemeral range (net.ipv4.ip_local_port_range): a port
# inside it can be the local end of some outgoing connection (a node's
# PostgreSQL session, say), which no connect probe sees and which makes the
# later bind fail with "Address already in use".  Ports handed out in this
# test run are remembered (in $PALISADE_TEST_TMP, when set) so that two
# servers started one after the other never get the same one.
free_port() {
	local used=${PALISADE_TEST_TMP:+$PALISADE_TEST_TMP/ports.used}
	if [ -z "$used" ]; then
		__free_port_pick ""
		return
	fi
	# tests running side by side (PALISADE_IT_JOBS) pick one at a time
	(
		flock 9
		__free_port_pick "$used"
	) 9>>"$used.lock"
}
__free_port_pick() {
	local lo hi p used=$1
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	local base=10000 span=$((lo - 10000))
	if [ "$span" -lt 2000 ]; then base=$((hi + 1)); span=$((65535 - hi)); fi
	while :; do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		if [ -n "$used" ] && grep -qx "$p" "$used" 2>/dev/null; then continue; fi
		if ! (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
			[ -n "$used" ] && echo "$p" >>"$used"
			echo "$p"
			return
		fi
	done
}
