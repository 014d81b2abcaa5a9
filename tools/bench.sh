#!/usr/bin/env bash
# bench.sh - `make bench` and `make bench-compare`: how fast dra-guard decides.
#
#   tools/bench.sh [STEP...]     steps: engine e2e profile perf compare replay view ledger hmap gate report
#                                (default: engine e2e profile [perf] [compare] replay view ledger hmap gate report)
#
#   engine   bench_engine on deterministic bodies (bench/gen_bodies.py --seed 1):
#            ns per scan / decode / decide / encode / whole request, per body;
#            then the worst shape of each rule's input (-w, CPU time)
#   e2e      `dra-guard serve` over TLS with keep-alive on loopback, loaded by wrk
#            (bench/wrk_post.lua): req/s, p50/p90/p99/max, errors (must be 0),
#            server CPU per request, RSS before and after; then the same at each
#            of SCALE_THREADS server threads
#   profile  callgrind instructions per byte inside admission_handle, per body; then
#            the whole server's instructions per request (dra-guard serve under
#            callgrind, SERVER_PROFILE_REQUESTS requests of each size over one
#            keep-alive TLS connection, counted on the server's side only)
#   perf     perf record of the server under wrk: its CPU by component (TLS, HTTP,
#            dra-guard, libc, kernel) and by symbol; skipped when perf cannot record
#   compare  ../shared/bench/compare.sh with dra-guard as A and each Go peer as B
#            (peers built into PEER_DIR); runs with BENCH_COMPARE=1 or when named
#   replay   bench_replay (one core, CPU time) on audit logs made by bench/gen_audit.py from the
#            recorded fixture: only guarded writes (ledger sampled every 1s, and never), and a busy
#            cluster's log with REPLAY_OTHER skipped events per write; then dra-guard replay on
#            that log plain and gzip'd (wall, CPU with gzip's, peak RSS) -> replay.json
#   base     the release build of BENCH_BASE (a commit, tag or branch; default: the last tag,
#            else HEAD~1), built from `git archive` in $BUILD/bench-base/<sha> (kept, built once),
#            side by side with this tree's through ../shared/bench/compare.sh (A: this tree,
#            B: the base; the same bodies, ports, rounds and settings as `compare`): the
#            ratio of req/s and of CPU per request shows a regression
#   view     bench_view --one-device VIEW_ONE_DEVICE: a claims relist whose claims all share one
#            device (the device's holders are rebuilt at each relist) -> view-one-device.txt
#   ledger   bench_ledger LEDGER_NODES LEDGER_CLAIMS LEDGER_ROUNDS [5000 100000 3]: the kept ledger
#            brought up to date after 1, 100 and 10,000 claim changes against a whole build of the
#            same snapshot (CPU time, alternating in one run: the ratio), one node's /debug/ledger,
#            and the gauges' lag -> ledger.txt
#   hmap     bench_hmap -n HMAP_KEYS: the hash index (policy/hmap) beside a copy of each table
#            it replaced, alternating, the ratio hmap/old per table -> hmap.txt
#   gate     tools/bench_gate.py against a real API server (KUBE_APISERVER): GATE_PODS Pods
#            gated by a freeze, the freeze lifted, the time until two replicas released them,
#            beside the API server's own time for the same PATCHes, GATE_ROUNDS rounds -> gate.json
#            (skipped, with one line, where KUBE_APISERVER is unset)
#   report   merge everything into $BUILD/bench/results.json and print the tables
#
# Settings (environment), defaults in brackets; the defaults take about 12 minutes
# (the gate step, 8 of them, needs KUBE_APISERVER):
#   BUILD [build]            build directory (binaries in $BUILD/release, results in $BUILD/bench)
#   BENCH_BUILD [1]          0: measure the binaries already in $BUILD/release, do not run make
#   DURATION [5]             seconds per measured e2e run       WARMUP [2]  seconds, discarded
#   SIZES ["1 8 32 128"]     devices per ResourceSlice body     CONNS ["1 16 64"] wrk connections
#   SCALE_THREADS ["1 2 4"]  server --threads for the scaling runs
#   SCALE_CONNS ["64"]  SCALE_SIZES [$SIZES]                    WRK_THREADS [1]
#   BUSY_PCT [25]            an e2e run during which other processes took more than this % of a
#   RETRIES [1]              CPU is rerun up to RETRIES times after a quiet second, waited
#   QUIET_WAIT [10]          for at most QUIET_WAIT s (compare.sh reads BUSY_PCT, RETRIES and
#                            QUIET_WAIT too; its own defaults are 15, 2 and 60)
#   ENGINE_ROUNDS [7]  ENGINE_MIN_MS [300]                      bench_engine -r / -m
#   PROFILE_BYTES [3000000]  bytes of review per body under callgrind
#   SERVER_PROFILE_SIZES ["32 128"]  SERVER_PROFILE_REQUESTS [100]
#   PERF [1]                 0: skip the perf step     PERF_SIZES ["1 128"]  PERF_SECONDS [5]
#   BENCH_COMPARE [0]        1: also run the compare step (about 4 min per peer by default)
#   COMPARE_PEERS ["peer-go peer-go-fast"]  COMPARE_DURATION [10s]  COMPARE_CONNS ["16 64"]
#   COMPARE_ROUNDS [2]  COMPARE_SIZES [$SIZES]  COMPARE_PORTS ["18543 18544"]
#   REPLAY_COPIES [200]  REPLAY_OTHER [20]  REPLAY_ROUNDS [5]
#   VIEW_ONE_DEVICE [100000]  HMAP_KEYS [50000]
#   GATE_PODS [1000]  GATE_ROUNDS [3]
#   PEER_DIR [/tmp/dra-bench]  DRA_GUARD_SHARED [../shared]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

BUILD=${BUILD:-build}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-2}
SIZES=${SIZES:-1 8 32 128}
CONNS=${CONNS:-1 16 64}
SCALE_THREADS=${SCALE_THREADS:-1 2 4}
SCALE_CONNS=${SCALE_CONNS:-64}
SCALE_SIZES=${SCALE_SIZES:-$SIZES}
WRK_THREADS=${WRK_THREADS:-1}
BUSY_PCT=${BUSY_PCT:-25}
RETRIES=${RETRIES:-1}
ENGINE_ROUNDS=${ENGINE_ROUNDS:-7}
ENGINE_MIN_MS=${ENGINE_MIN_MS:-300}
PROFILE_BYTES=${PROFILE_BYTES:-3000000}
SERVER_PROFILE_SIZES=${SERVER_PROFILE_SIZES:-32 128}
SERVER_PROFILE_REQUESTS=${SERVER_PROFILE_REQUESTS:-100}
BENCH_COMPARE=${BENCH_COMPARE:-0}
COMPARE_PEERS=${COMPARE_PEERS:-peer-go peer-go-fast}
COMPARE_DURATION=${COMPARE_DURATION:-10s}
COMPARE_CONNS=${COMPARE_CONNS:-16 64}
COMPARE_ROUNDS=${COMPARE_ROUNDS:-2}
COMPARE_SIZES=${COMPARE_SIZES:-$SIZES}
COMPARE_PORTS=${COMPARE_PORTS:-18543 18544}
PEER_DIR=${PEER_DIR:-/tmp/dra-bench}
SHARED=${DRA_GUARD_SHARED:-$root/../shared}
export DRA_GUARD_SHARED=$SHARED

out="$root/$BUILD/bench"
bin="$root/$BUILD/release/dra-guard"
engine="$root/$BUILD/release/bench/bench_engine"
bodies="$out/bodies"

die() {
	echo "bench.sh: $*" >&2
	exit 1
}

steps=("$@")
if [ ${#steps[@]} -eq 0 ]; then
	steps=(engine e2e profile)
	[ "${PERF:-1}" = 1 ] && steps+=(perf)
	[ "$BENCH_COMPARE" = 1 ] && steps+=(compare)
	steps+=(replay view ledger hmap gate report)
fi
for s in "${steps[@]}"; do
	case "$s" in engine | e2e | profile | perf | compare | base | replay | view | ledger | hmap | gate | report) ;; *) die "unknown step '$s' (engine e2e profile perf compare base replay view ledger hmap gate report)" ;; esac
done

tools/deps.sh build bench
if [ "${BENCH_BUILD:-1}" = 1 ]; then
	make -s BUILD="$BUILD" "$BUILD/release/dra-guard" "$BUILD/release/bench/bench_engine" \
		"$BUILD/release/bench/bench_replay" "$BUILD/release/bench/bench_view" \
		"$BUILD/release/bench/bench_ledger" "$BUILD/release/bench/bench_hmap" >/dev/null
fi
[ -x "$bin" ] && [ -x "$engine" ] || die "no $bin or $engine (run make BUILD=$BUILD first)"
mkdir -p "$out"
python3 bench/gen_bodies.py --seed 1 --out "$bodies"

echo "bench: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench: dra-guard $("$bin" --version 2>/dev/null || git describe --always --dirty 2>/dev/null || echo dev)"
echo

status=0
for s in "${steps[@]}"; do
	case "$s" in
	engine)
		echo "== engine: bench_engine -r $ENGINE_ROUNDS -m $ENGINE_MIN_MS"
		"$engine" -d "$bodies" -r "$ENGINE_ROUNDS" -m "$ENGINE_MIN_MS" -o "$out/engine.json"
		echo
		echo "== engine, the worst shape of each rule's input: bench_engine -w -c (CPU time)"
		"$engine" -w -c -d "$bodies" -r "$ENGINE_ROUNDS" -m "$ENGINE_MIN_MS" -o "$out/engine-worst.json"
		echo
		;;
	e2e)
		python3 tools/bench_e2e.py --bin "$bin" --bodies "$bodies" --out "$out/e2e.json" --workdir "$out/e2e" \
			--duration "$DURATION" --warmup "$WARMUP" --sizes "$SIZES" --conns "$CONNS" \
			--scale-threads "$SCALE_THREADS" --scale-conns "$SCALE_CONNS" --scale-sizes "$SCALE_SIZES" \
			--wrk-threads "$WRK_THREADS" --busy-pct "$BUSY_PCT" --retries "$RETRIES" \
			--quiet-wait "${QUIET_WAIT:-10}" || status=1
		;;
	replay)
		echo "== replay: bench_replay -r ${REPLAY_ROUNDS:-5}, ${REPLAY_COPIES:-200} copies of the recorded log"
		rp="$root/tests/fixtures/replay/policy.yaml"
		python3 bench/gen_audit.py --copies "${REPLAY_COPIES:-200}" --other 0 "$out/replay-guarded.log"
		python3 bench/gen_audit.py --copies "$(( ${REPLAY_COPIES:-200} / 2 ))" --other "${REPLAY_OTHER:-20}" \
			"$out/replay-mixed.log"
		gzip -1 -c "$out/replay-mixed.log" >"$out/replay-mixed.log.gz"
		{
			printf '{"guarded":'
			"$root/$BUILD/release/bench/bench_replay" -r "${REPLAY_ROUNDS:-5}" -s 1 "$rp" "$out/replay-guarded.log"
			printf ',"guarded_no_ledger":'
			"$root/$BUILD/release/bench/bench_replay" -r "${REPLAY_ROUNDS:-5}" -s 1000000 "$rp" "$out/replay-guarded.log"
			printf ',"mixed":'
			"$root/$BUILD/release/bench/bench_replay" -r "${REPLAY_ROUNDS:-5}" -s 1 "$rp" "$out/replay-mixed.log"
			for f in replay-mixed.log replay-mixed.log.gz; do
				# the bytes are the plain log's either way: MB/s of audit log
				printf ',"cli_%s":' "${f//[.-]/_}"
				/usr/bin/time -q -f '{"wall_s":%e,"cpu_s":%U,"sys_s":%S,"max_rss_kib":%M}' -o "$out/time.json" \
					"$bin" replay --policy "$rp" --output json "$out/$f" >/dev/null || true
				tr -d '\n' <"$out/time.json"
				printf ',"cli_%s_bytes":%s' "${f//[.-]/_}" "$(stat -c %s "$out/replay-mixed.log")"
			done
			# memory: the same cluster, a log 100 times longer
			for n in 20 2000; do
				python3 bench/gen_audit.py --copies "$n" --same-cluster "$out/replay-same.log"
				printf ',"cli_same_cluster_%s":' "$n"
				/usr/bin/time -q -f '{"wall_s":%e,"cpu_s":%U,"sys_s":%S,"max_rss_kib":%M}' -o "$out/time.json" \
					"$bin" replay --policy "$rp" --output json "$out/replay-same.log" >/dev/null || true
				tr -d '\n' <"$out/time.json"
				printf ',"cli_same_cluster_%s_bytes":%s' "$n" "$(stat -c %s "$out/replay-same.log")"
			done
			rm -f "$out/replay-same.log"
			printf '}\n'
		} >"$out/replay.json"
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for k in ("guarded","guarded_no_ledger","mixed"):
    x=r[k]; print("  %-18s %8.1f MB/s (median %.1f)  %d lines, %d judged, peak RSS %d MiB" % (k, x["mb_per_s"], x["median_mb_per_s"], x["lines"], x["judged"], x["max_rss_kib"]//1024))
for k in ("cli_replay_mixed_log","cli_replay_mixed_log_gz","cli_same_cluster_20","cli_same_cluster_2000"):
    x=r[k]; b=r[k+"_bytes"]; print("  %-24s %6.2f s wall, %6.2f s CPU (%.0f MB/s of log per CPU second), peak RSS %d MiB" % (k, x["wall_s"], x["cpu_s"]+x["sys_s"], b/1e6/max(x["cpu_s"]+x["sys_s"],1e-9), x["max_rss_kib"]//1024))' "$out/replay.json"
		echo
		;;
	profile)
		echo "== profile: callgrind --toggle-collect=admission_handle"
		python3 tools/bench_profile.py --engine "$engine" --bodies "$bodies" --out "$out/profile.json" \
			--workdir "$out/callgrind" --target-bytes "$PROFILE_BYTES"
		echo
		echo "== profile: callgrind of the whole server (TLS, HTTP, copies, decision) per request"
		python3 tools/bench_server_profile.py --bin "$bin" --bodies "$bodies" --out "$out/profile-server.json" \
			--workdir "$out/callgrind-server" --sizes "$SERVER_PROFILE_SIZES" --requests "$SERVER_PROFILE_REQUESTS" ||
			status=1
		echo
		;;
	perf)
		if ! command -v perf >/dev/null || ! perf record -q -o /dev/null true >/dev/null 2>&1; then
			echo "== perf: skipped (no perf, or not allowed to record; apt-get install linux-perf)"
			echo
			continue
		fi
		echo "== perf: the server's CPU by component"
		python3 tools/bench_perf.py --bin "$bin" --bodies "$bodies" --out "$out/perf.json" --workdir "$out/perf" \
			--sizes "${PERF_SIZES:-1 128}" --seconds "${PERF_SECONDS:-5}" || status=1
		echo
		;;
	compare)
		[ -x "$SHARED/bench/compare.sh" ] || die "no $SHARED/bench/compare.sh (set DRA_GUARD_SHARED)"
		mkdir -p "$PEER_DIR"
		read -r pa pb <<<"$COMPARE_PORTS"
		for peer in $COMPARE_PEERS; do
			case "$peer" in
			peer-go) exe="$PEER_DIR/peer" ;;
			peer-go-fast) exe="$PEER_DIR/peerfast" ;;
			*) die "unknown peer '$peer' (peer-go peer-go-fast)" ;;
			esac
			# Build when missing or older than its sources (the commands in docs/performance.md).
			if [ ! -x "$exe" ] || [ -n "$(find "$SHARED/bench/$peer" -newer "$exe" -type f | head -n1)" ]; then
				echo "building $peer into $exe"
				(cd "$SHARED/bench/$peer" && go build -o "$exe" .)
			fi
			dest="$out/compare/$peer"
			rm -rf "$dest"
			echo "== compare: dra-guard (A) vs $peer (B)"
			DURATION=$COMPARE_DURATION CONNS=$COMPARE_CONNS ROUNDS=$COMPARE_ROUNDS SIZES=$COMPARE_SIZES \
				A_PORT=$pa B_PORT=$pb A_NAME=dra-guard B_NAME=$peer BODIES="$bodies" OUT="$dest" \
				"$SHARED/bench/compare.sh" \
				"'$bin' serve --listen 127.0.0.1:\$PORT --tls-cert \$CERT --tls-key \$KEY --metrics-listen off --log-level warn" \
				"'$exe' -listen 127.0.0.1:\$PORT -cert \$CERT -key \$KEY" | tee "$out/compare-$peer.txt" ||
				status=1
			echo
		done
		;;
	base)
		[ -x "$SHARED/bench/compare.sh" ] || die "no $SHARED/bench/compare.sh (set DRA_GUARD_SHARED)"
		rev=${BENCH_BASE:-$(git describe --tags --abbrev=0 2>/dev/null || echo HEAD~1)}
		sha=$(git rev-parse --verify --quiet "$rev^{commit}") || die "BENCH_BASE '$rev' is not a commit"
		short=${sha:0:12}
		wt="$root/$BUILD/bench-base/$sha"
		if [ ! -x "$wt/build/release/dra-guard" ]; then
			echo "building the release of $rev ($short) in $wt"
			rm -rf "$wt"
			mkdir -p "$wt"
			git archive "$sha" | tar -x -C "$wt"
			make -s -C "$wt" VERSION="$short" build/release/dra-guard >"$wt.log" 2>&1 ||
				die "the release of $short did not build (see $wt.log)"
		fi
		read -r pa pb <<<"$COMPARE_PORTS"
		dest="$out/compare/base-$short"
		rm -rf "$dest"
		echo "== base: dra-guard (A) vs dra-guard@$short (B)"
		DURATION=$COMPARE_DURATION CONNS=$COMPARE_CONNS ROUNDS=$COMPARE_ROUNDS SIZES=$COMPARE_SIZES \
			A_PORT=$pa B_PORT=$pb A_NAME=dra-guard B_NAME="dra-guard@$short" BODIES="$bodies" OUT="$dest" \
			"$SHARED/bench/compare.sh" \
			"'$bin' serve --listen 127.0.0.1:\$PORT --tls-cert \$CERT --tls-key \$KEY --metrics-listen off --log-level warn" \
			"'$wt/build/release/dra-guard' serve --listen 127.0.0.1:\$PORT --tls-cert \$CERT --tls-key \$KEY --metrics-listen off --log-level warn" |
			tee "$out/compare-base.txt" || status=1
		echo
		;;
	view)
		echo "== view: bench_view --one-device ${VIEW_ONE_DEVICE:-100000} (one shared device's holders, rebuilt per relist)"
		"$root/$BUILD/release/bench/bench_view" --one-device "${VIEW_ONE_DEVICE:-100000}" |
			tee "$out/view-one-device.txt" || status=1
		echo
		;;
	ledger)
		echo "== ledger: bench_ledger ${LEDGER_NODES:-5000} ${LEDGER_CLAIMS:-100000} ${LEDGER_ROUNDS:-3}" \
			"(kept up to date vs a whole build, CPU time, one run)"
		"$root/$BUILD/release/bench/bench_ledger" "${LEDGER_NODES:-5000}" "${LEDGER_CLAIMS:-100000}" \
			"${LEDGER_ROUNDS:-3}" | tee "$out/ledger.txt" || status=1
		echo
		;;
	hmap)
		echo "== hmap: bench_hmap -n ${HMAP_KEYS:-50000} (the hash index beside each table it replaced; ratio < 1: faster)"
		"$root/$BUILD/release/bench/bench_hmap" -n "${HMAP_KEYS:-50000}" | tee "$out/hmap.txt" || status=1
		echo
		;;
	gate)
		echo "== gate: ${GATE_PODS:-1000} gated Pods released after a freeze, ${GATE_ROUNDS:-3} rounds"
		rm -f "$out/gate.json"
		python3 tools/bench_gate.py --bin "$bin" --pods "${GATE_PODS:-1000}" --rounds "${GATE_ROUNDS:-3}" \
			--out "$out/gate.json" || status=1
		echo
		;;
	report)
		echo "== summary"
		soak=()
		[ -f "$root/$BUILD/soak/results.json" ] && soak=(--soak "$root/$BUILD/soak/results.json")
		python3 tools/bench_report.py --dir "$out" --out "$out/results.json" --command "make bench" \
			--markdown "$out/results.md" "${soak[@]}" || status=1
		;;
	esac
done
exit $status
