#!/usr/bin/env bash
# soak.sh - `make soak`: dra-guard serve under sustained load, checked for leaks.
#
#   tools/soak.sh
#
# Runs tools/soak_run.py: wrk keeps SOAK_CONNS keep-alive connections busy with a mix of
# ResourceSlice, ResourceClaim and Pod status reviews (allowed and denied) for SOAK_SECONDS,
# while the server's RSS and open fds are sampled from /proc; the certificate is rotated and
# the policy freeze flipped under load (..data symlink swaps, as the kubelet does), a broken
# policy is published once, and a prober sends a review over a new TLS connection 4 times a
# second. Fails on any error response or failed probe, an RSS trend over the second half
# beyond noise, fd growth, or a change that does not take effect. Results:
# $BUILD/soak/results.json.
#
# Then tools/soak_hostile.py: memory attacks at full size against the Deployment's settings
# (idle, stalled and 200 concurrent 8 MiB bodies, 11 MiB echoed answers left unread, a burst
# of 100 clients); fails when RSS passes the sizing's worst case without a cluster view
# (the Deployment's memory limit less the view's share), the budget holds more
# than its size, or RSS stays up once the clients are gone. Results: $BUILD/soak/hostile.json.
#
# Settings (environment), defaults in brackets:
#   BUILD [build]  SOAK_BUILD [1] (0: the binary already in $BUILD/release, no make)  SOAK_SECONDS [600]  SOAK_CONNS [16]  SOAK_THREADS [server default]
#   SOAK_ROTATIONS [4]  SOAK_FLIPS [4]  SOAK_SAMPLE [seconds between samples: SOAK_SECONDS/60, 1..5]
#   SOAK_RSS_TOL_KIB [2048]  smallest RSS growth over the second half counted as a trend
#   SOAK_HOSTILE [1] (0: skip the memory attacks)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
BUILD=${BUILD:-build}
SOAK_SECONDS=${SOAK_SECONDS:-600}
out="$root/$BUILD/soak"
export DRA_GUARD_SHARED=${DRA_GUARD_SHARED:-$root/../shared}

tools/deps.sh build bench
if [ "${SOAK_BUILD:-1}" = 1 ]; then
	make -s BUILD="$BUILD" "$BUILD/release/dra-guard" >/dev/null
fi
mkdir -p "$out"
python3 bench/gen_bodies.py --seed 1 --out "$out/bodies"
rm -rf "$out/work"
rc=0
python3 tools/soak_run.py --bin "$root/$BUILD/release/dra-guard" --bodies "$out/bodies" \
	--out "$out/results.json" --workdir "$out/work" --seconds "$SOAK_SECONDS" \
	--conns "${SOAK_CONNS:-16}" --server-threads "${SOAK_THREADS:-0}" --rotations "${SOAK_ROTATIONS:-4}" \
	--flips "${SOAK_FLIPS:-4}" --sample "${SOAK_SAMPLE:-0}" --rss-tolerance-kib "${SOAK_RSS_TOL_KIB:-2048}" || rc=1
if [ "${SOAK_HOSTILE:-1}" = 1 ]; then
	rm -rf "$out/hostile-work"
	python3 tools/soak_hostile.py --bin "$root/$BUILD/release/dra-guard" --workdir "$out/hostile-work" \
		--out "$out/hostile.json" || rc=1
fi
exit $rc
