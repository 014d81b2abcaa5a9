/* cli.h - the dra-guard subcommands.
 *
 * Each takes the arguments after its name (argv[0] is the subcommand) and
 * returns the process exit code. */
#ifndef DRA_GUARD_CLI_H
#define DRA_GUARD_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* dra-guard serve: the TLS webhook (webhook/cmd/serve.c). */
int serve_main(int argc, char **argv);

/* dra-guard dry-run: the engine offline, for CI (webhook/cmd/dryrun.c). */
int dryrun_main(int argc, char **argv);

/* dra-guard policy lint FILE (webhook/cmd/dryrun_lint.c). */
int lint_main(int argc, char **argv);

/* dra-guard rules: the rule catalogue (webhook/cmd/dryrun_lint.c). */
int rules_main(int argc, char **argv);

/* dra-guard ledger --view DUMP: the ledger of a recorded cluster
 * (webhook/cmd/ledger_cmd.c). */
int ledger_main(int argc, char **argv);

/* dra-guard replay LOG...: what a policy would have said of a recorded
 * audit log, and the ledger through it (webhook/cmd/replay_cmd.c). */
int replay_main(int argc, char **argv);

/* dra-guard readiness LOG...: the go/no-go promotion report over a
 * replayed window (webhook/cmd/replay_cmd.c). */
int readiness_main(int argc, char **argv);

/* dra-guard pending [--url URL]: the claims a running replica refuses now
 * (webhook/cmd/pending_cmd.c). */
int pending_main(int argc, char **argv);

/* The claims of a GET /debug/pending answer (its "claims" JSON array in
 * json[0..len)) as dra-guard pending prints them: a header and one line a
 * claim, to f; nothing for none. 0, or -EBADMSG with err saying what is
 * wrong. The replay's report prints the claims held at the end with it. */
int pending_print_claims(FILE *f, const char *json, size_t len, char *err, size_t errn);

/* A usage error of dra-guard COMMAND, after its one-line message: where
 * the usage is, on stderr (the usage itself would bury the message).
 * Returns 2, the exit status of usage errors. */
int cli_usage_error(const char *command);

/* dra-guard vap: the stateless rules as ValidatingAdmissionPolicies
 * (webhook/cmd/vap_cli.c). */
int vap_main(int argc, char **argv);

/* dra-guard convert [FILE|-]: each YAML/JSON document as one line of JSON
 * (webhook/cmd/convert.c). */
int convert_main(int argc, char **argv);

#endif
