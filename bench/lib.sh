# lib.sh: what the side-by-side scripts (compare.sh, outbound-compare.sh)
# share. Sourced; the caller defines log, MAXLOAD and MAXWAIT.

load1() { cut -d' ' -f1 /proc/loadavg; }

# wait_quiet waits until the machine's 1-minute load average is below
# MAXLOAD (other work shares its two cores), for at most MAXWAIT seconds,
# and records the load it started at.
wait_quiet() {
	local waited=0
	while awk -v l="$(load1)" -v m="$MAXLOAD" 'BEGIN{exit !(l >= m)}'; do
		if ((waited >= MAXWAIT)); then
			log "load $(load1) still >= $MAXLOAD after ${MAXWAIT}s; running anyway"
			break
		fi
		sleep 15
		waited=$((waited + 15))
	done
	log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
