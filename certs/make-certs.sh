#!/bin/sh
# make-certs.sh - certificates for dra-guard, made with the openssl CLI.
#
#   certs/make-certs.sh dev DIR
#
# dev: a development CA and a serving certificate signed by it, in DIR:
#   ca.crt, ca.key     the CA (ECDSA P-256), made when missing or expiring
#   tls.crt, tls.key   the serving pair (ECDSA P-256) for localhost, 127.0.0.1,
#                      ::1 and the in-cluster service names of SERVICE in NAMESPACE
# Existing files are kept while they are valid for more than RENEW_DAYS and the
# serving certificate still verifies against ca.crt, so running it again is cheap.
# Files are written to temporary names and renamed into place: a server watching
# DIR never reads half a file.
#
#   certs/make-certs.sh cluster DIR [--print-ca-bundle]
#
# cluster: a CA and a serving certificate for the guard in a cluster, in DIR:
#   ca.crt, ca.key     the CA (ECDSA P-256), renewed within RENEW_DAYS of expiry
#   ca-previous.crt    the CA before the last renewal, kept while it is valid
#   ca-bundle.crt      ca.crt and ca-previous.crt: the webhooks' caBundle. Across
#                      a CA renewal it trusts the old and the new serving pair, so
#                      the API server accepts whichever one a replica serves while
#                      the kubelet updates the Secret volume
#   tls.crt, tls.key   the serving pair (ECDSA P-256) for SERVICE.NAMESPACE.svc and
#                      SERVICE.NAMESPACE.svc.cluster.local, renewed within
#                      RENEW_DAYS of expiry, when its names differ from these, when
#                      it does not verify against ca.crt or its key does not match
# --print-ca-bundle prints ca-bundle.crt base64-encoded, on one line, on standard
# output (the caBundle field's value); messages go to standard error. DIR is
# made readable by its owner only: it holds the CA's key.
#
# Environment: SERVICE (dra-guard), NAMESPACE (dra-guard), CA_DAYS (3650),
# CERT_DAYS (365), RENEW_DAYS (30).
#
# Each mode is one function (mode_<name>); add a mode by adding a function and a
# line in the dispatch at the bottom.
set -eu

SERVICE=${SERVICE:-dra-guard}
NAMESPACE=${NAMESPACE:-dra-guard}
CA_DAYS=${CA_DAYS:-3650}
CERT_DAYS=${CERT_DAYS:-365}
RENEW_DAYS=${RENEW_DAYS:-30}

prog=$(basename "$0")

usage() {
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

die() {
	echo "$prog: $*" >&2
	exit 1
}

command -v openssl >/dev/null 2>&1 || die "needs the openssl command (apt-get install -y openssl)"

# valid FILE: the certificate exists and is valid for more than RENEW_DAYS
valid() {
	[ -s "$1" ] && openssl x509 -in "$1" -noout -checkend $((RENEW_DAYS * 86400)) >/dev/null 2>&1
}

# keep_umask: keys are readable by the owner only
new_key() { # OUT
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1") 2>/dev/null ||
		die "openssl could not make an EC P-256 key"
}

# make_ca DIR NAME
make_ca() {
	dir=$1
	new_key "$dir/.ca.key.tmp"
	openssl req -new -x509 -key "$dir/.ca.key.tmp" -days "$CA_DAYS" -subj "/CN=$2" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" \
		-out "$dir/.ca.crt.tmp" 2>"$dir/.openssl.log" || die "openssl: $(cat "$dir/.openssl.log")"
	mv -f "$dir/.ca.key.tmp" "$dir/ca.key"
	mv -f "$dir/.ca.crt.tmp" "$dir/ca.crt"
	rm -f "$dir/.openssl.log"
}

# make_serving DIR CN SAN_LIST: a serving pair signed by DIR/ca.{crt,key}
make_serving() {
	dir=$1
	new_key "$dir/.tls.key.tmp"
	openssl req -new -key "$dir/.tls.key.tmp" -subj "/CN=$2" -out "$dir/.tls.csr.tmp" \
		2>"$dir/.openssl.log" || die "openssl: $(cat "$dir/.openssl.log")"
	printf '%s\n' "subjectAltName=$3" "basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" \
		"authorityKeyIdentifier=keyid" >"$dir/.tls.ext.tmp"
	openssl x509 -req -in "$dir/.tls.csr.tmp" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days "$CERT_DAYS" -extfile "$dir/.tls.ext.tmp" \
		-out "$dir/.tls.crt.tmp" 2>"$dir/.openssl.log" || die "openssl: $(cat "$dir/.openssl.log")"
	rm -f "$dir/.tls.csr.tmp" "$dir/.tls.ext.tmp" "$dir/.openssl.log"
	# Key first: until the certificate lands, the old pair stays whole.
	mv -f "$dir/.tls.key.tmp" "$dir/tls.key"
	mv -f "$dir/.tls.crt.tmp" "$dir/tls.crt"
}

mode_dev() {
	[ $# -eq 1 ] || die "usage: $prog dev DIR"
	dir=$1
	mkdir -p "$dir"
	svc="$SERVICE.$NAMESPACE.svc"
	sans="DNS:localhost,IP:127.0.0.1,IP:::1,DNS:$svc,DNS:$svc.cluster.local"
	made_ca=0
	if ! valid "$dir/ca.crt" || [ ! -s "$dir/ca.key" ]; then
		make_ca "$dir" "dra-guard development CA"
		made_ca=1
		echo "$prog: made a development CA in $dir/ca.crt"
	fi
	if [ "$made_ca" = 1 ] || ! valid "$dir/tls.crt" || [ ! -s "$dir/tls.key" ] ||
		! openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1; then
		make_serving "$dir" "$svc" "$sans"
		echo "$prog: made a serving certificate in $dir/tls.crt ($sans)"
	fi
}

# san_list CERT: its subjectAltName entries as "DNS:a,DNS:b"
san_list() {
	openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | sed 1d | tr -d ' \n'
}

# key_matches CERT KEY: the key is the certificate's
key_matches() {
	[ "$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null)" = "$(openssl pkey -in "$2" -pubout 2>/dev/null)" ]
}

mode_cluster() {
	dir=""
	print=0
	for arg in "$@"; do
		case "$arg" in
		--print-ca-bundle) print=1 ;;
		-*) die "cluster: unknown option $arg" ;;
		*)
			[ -z "$dir" ] || die "usage: $prog cluster DIR [--print-ca-bundle]"
			dir=$arg
			;;
		esac
	done
	[ -n "$dir" ] || die "usage: $prog cluster DIR [--print-ca-bundle]"
	(umask 077 && mkdir -p "$dir")
	svc="$SERVICE.$NAMESPACE.svc"
	sans="DNS:$svc,DNS:$svc.cluster.local"

	made_ca=0
	if ! valid "$dir/ca.crt" || [ ! -s "$dir/ca.key" ]; then
		# The outgoing CA stays trusted (in the bundle) until it expires:
		# Secret volumes reach the replicas a minute or more after the
		# webhook configurations change.
		if [ -s "$dir/ca.crt" ] && openssl x509 -in "$dir/ca.crt" -noout -checkend 0 >/dev/null 2>&1; then
			cp "$dir/ca.crt" "$dir/.ca-previous.crt.tmp"
			mv -f "$dir/.ca-previous.crt.tmp" "$dir/ca-previous.crt"
		fi
		make_ca "$dir" "dra-guard CA"
		made_ca=1
		echo "$prog: made a CA in $dir/ca.crt" >&2
	fi
	if [ -e "$dir/ca-previous.crt" ] &&
		! openssl x509 -in "$dir/ca-previous.crt" -noout -checkend 0 >/dev/null 2>&1; then
		rm -f "$dir/ca-previous.crt"
		echo "$prog: dropped the expired previous CA from the bundle" >&2
	fi
	if [ -e "$dir/ca-previous.crt" ] && cmp -s "$dir/ca.crt" "$dir/ca-previous.crt"; then
		rm -f "$dir/ca-previous.crt"
	fi
	if [ -e "$dir/ca-previous.crt" ]; then
		cat "$dir/ca.crt" "$dir/ca-previous.crt" >"$dir/.ca-bundle.crt.tmp"
	else
		cat "$dir/ca.crt" >"$dir/.ca-bundle.crt.tmp"
	fi
	if cmp -s "$dir/.ca-bundle.crt.tmp" "$dir/ca-bundle.crt"; then
		rm -f "$dir/.ca-bundle.crt.tmp"
	else
		mv -f "$dir/.ca-bundle.crt.tmp" "$dir/ca-bundle.crt"
	fi

	reason=""
	if [ "$made_ca" = 1 ]; then
		reason="new CA"
	elif ! valid "$dir/tls.crt" || [ ! -s "$dir/tls.key" ]; then
		reason="missing or within $RENEW_DAYS days of expiry"
	elif [ "$(san_list "$dir/tls.crt")" != "$sans" ]; then
		reason="names changed"
	elif ! openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1; then
		reason="not signed by ca.crt"
	elif ! key_matches "$dir/tls.crt" "$dir/tls.key"; then
		reason="key does not match"
	fi
	if [ -n "$reason" ]; then
		make_serving "$dir" "$svc" "$sans"
		echo "$prog: made a serving certificate in $dir/tls.crt ($sans; $reason)" >&2
	fi
	if [ "$print" = 1 ]; then
		openssl base64 -A -in "$dir/ca-bundle.crt" || die "openssl base64 failed"
		echo
	fi
}

case "${1:-}" in
dev)
	shift
	mode_dev "$@"
	;;
cluster)
	shift
	mode_cluster "$@"
	;;
-h | --help | help)
	usage
	;;
*)
	usage >&2
	exit 2
	;;
esac
