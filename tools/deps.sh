#!/bin/sh
# deps.sh - install the Debian packages a make target needs, only when missing.
#
#   tools/deps.sh GROUP...     groups: build test bench fuzz image
#
# A no-op (one dpkg query) when everything is there; otherwise one apt-get
# update and one apt-get install of exactly what is missing.
set -eu

pkgs=""
for group in "$@"; do
	case "$group" in
	build) pkgs="$pkgs gcc make pkg-config libmicrohttpd-dev libgnutls28-dev libssl-dev libjansson-dev libyaml-dev libcurl4-openssl-dev openssl" ;;
	test)
		pkgs="$pkgs libcmocka-dev curl python3 valgrind clang libclang-rt-14-dev etcd-server"
		# The manifest tests render with kubectl kustomize. Debian's kubectl is
		# kubernetes-client; a kubectl from elsewhere conflicts with it.
		command -v kubectl >/dev/null 2>&1 || pkgs="$pkgs kubernetes-client"
		# promtool checks and unit-tests the alert rules; prometheus scrapes
		# a running guard in the monitoring end-to-end test.
		pkgs="$pkgs prometheus"
		;;
	bench) pkgs="$pkgs wrk golang-go python3 curl iproute2 gawk procps valgrind" ;;
	fuzz) pkgs="$pkgs clang libclang-rt-14-dev" ;;
	# make image: build with podman, run with buildah, a Debian base from mmdebstrap
	image) pkgs="$pkgs podman buildah mmdebstrap binutils python3 git" ;;
	*) echo "deps.sh: unknown group '$group' (build test bench fuzz image)" >&2; exit 2 ;;
	esac
done

missing=""
for p in $pkgs; do
	case " $missing " in *" $p "*) continue ;; esac
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

# `make -j` can start several groups at once; apt allows one at a time. Wait
# for the others, then install whatever is still missing.
if [ -z "${DRA_GUARD_DEPS_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
	export DRA_GUARD_DEPS_LOCKED=1
	exec flock "${TMPDIR:-/tmp}/dra-guard-deps.lock" "$0" "$@"
fi

echo "deps.sh: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root (or sudo) to install:$missing" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null

# Debian's prometheus package enables a system-wide Prometheus on :9090 (the
# port `make run` serves metrics on). The tests run their own on loopback:
# switch off the one we just installed, never one that was there before.
case " $missing " in
*" prometheus "*)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		echo "deps.sh: disabling the prometheus service the package started (the tests run their own)" >&2
		$SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	fi
	;;
esac
