#!/bin/sh
# gen-certs.sh - certificates and the caBundle patch for the self-signed overlay.
#
#   manifests/overlays/self-signed/gen-certs.sh
#
# 1. certs/make-certs.sh cluster manifests/overlays/self-signed/certs
#    makes a CA and a serving pair for SERVICE.NAMESPACE.svc (and
#    .svc.cluster.local), keeps them while they are valid, renews the pair
#    within RENEW_DAYS of expiry or when the names change, and keeps the
#    previous CA in ca-bundle.crt across a CA renewal.
# 2. Writes webhook-ca-bundle.yaml next to this script: a strategic-merge patch
#    that sets clientConfig.caBundle of every webhook in the base's two
#    configurations to that bundle. The webhook names are read from the base,
#    so a webhook added there is covered without editing this script.
# 3. Writes run-gen-certs.sh-first.yaml, an empty resource the overlay lists
#    first: while it is missing, kustomize's error names it.
#
# Then the two-step install it prints (docs/operations.md, Install): all but
# the webhook configurations, wait for the replicas, then the configurations.
#
# Environment: SERVICE (dra-guard), NAMESPACE (dra-guard) - change them only
# together with the base's Service, namespace and --service-name - and
# CA_DAYS, CERT_DAYS, RENEW_DAYS, passed to make-certs.sh.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
base=$root/manifests/base
prog=$(basename "$0")

die() {
	echo "$prog: $*" >&2
	exit 1
}

bundle=$("$root/certs/make-certs.sh" cluster "$here/certs" --print-ca-bundle) ||
	die "certs/make-certs.sh cluster failed"
[ -n "$bundle" ] || die "certs/make-certs.sh printed no CA bundle"

# patch KIND FILE: one document of the patch, for the configuration in FILE.
patch() {
	# Webhook entries start at column 0 ("- name: ...") in the base files.
	names=$(sed -n 's/^- name: \([^ #]*\).*$/\1/p' "$base/$2")
	[ -n "$names" ] || die "no webhook entries found in $base/$2"
	printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata:\n  name: dra-guard\nwebhooks:\n' "$1"
	for n in $names; do
		printf -- '- name: %s\n  clientConfig:\n    caBundle: %s\n' "$n" "$bundle"
	done
}

out=$here/webhook-ca-bundle.yaml
{
	echo "# Made by gen-certs.sh from certs/ca-bundle.crt; do not edit, run it again."
	patch ValidatingWebhookConfiguration validating-webhook.yaml
	echo "---"
	patch MutatingWebhookConfiguration mutating-webhook.yaml
} >"$out.tmp"
mv -f "$out.tmp" "$out"
printf '%s\n' "# Made by gen-certs.sh. Empty: the overlay lists it first so that, while it is" \
	"# missing, kustomize's error says what to do (run-gen-certs.sh-first)." >"$here/run-gen-certs.sh-first.yaml"
rel=${here#"$PWD"/}
cat >&2 <<EOF
$prog: wrote $out
Install or update in two steps, the webhook configurations last (docs/operations.md, Install):
  kubectl apply -k $rel -l 'app.kubernetes.io/component!=admission-webhook'
  kubectl -n dra-guard rollout status deployment/dra-guard --timeout=5m
  kubectl apply -k $rel
EOF
