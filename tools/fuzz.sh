#!/bin/sh
# fuzz.sh - run one libFuzzer target for a while.
#
#   tools/fuzz.sh BINARY SECONDS smoke|full
#
# The corpus lives in build/fuzz-corpus/<target>/ (grown by every run) and is
# seeded from tests/fuzz/seeds/<target>/, tests/fixtures and the golden cases.
# A crash,
# leak, sanitizer report or timeout fails the run and leaves the input as
# build/fuzz-artifacts/<target>/crash-* ; turn it into a regression test.
set -eu

bin=$1
seconds=$2
mode=$3
name=$(basename "$bin")
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$(dirname "$bin")/.." && pwd)
corpus="$build/fuzz-corpus/$name"
artifacts="$build/fuzz-artifacts/$name"
seeds="$root/tests/fuzz/seeds/$name"
mkdir -p "$corpus" "$artifacts"

# Seeds: the project's own, then the objects (JSON and YAML) under tests/fixtures.
if [ -d "$seeds" ]; then
	cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
fi
case "$name" in
fuzz_review | fuzz_jscan | fuzz_doc | fuzz_policy)
	find "$root/tests/fixtures" -type f \( -name '*.json' -o -name '*.yaml' \) -size -256k |
		while read -r f; do
			cp -n "$f" "$corpus/seed-$(echo "$f" | md5sum | cut -c1-16)" 2>/dev/null || true
		done
	for f in "$root"/tests/golden/cases/*.json "$root"/tests/golden/policies/*.yaml "$root"/examples/*.yaml; do
		[ -f "$f" ] && cp -n "$f" "$corpus/seed-$(basename "$f")" 2>/dev/null || true
	done
	;;
esac

log="$build/fuzz-artifacts/$name.log"
echo "fuzz: $name for ${seconds}s ($mode)"
if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
	-artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
	tail -n 60 "$log"
	echo "fuzz: $name FAILED; inputs in $artifacts" >&2
	exit 1
fi
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | sed "s/^/fuzz: $name /"
