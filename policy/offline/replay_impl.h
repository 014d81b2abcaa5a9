/* replay_impl.h - what the files of the replay share. Private to
 * policy/replay*.c. replay.c runs the events, replay_store.c keeps the
 * object texts and reads their metadata, replay_report.c writes the
 * report. */
#ifndef DRA_GUARD_REPLAY_IMPL_H
#define DRA_GUARD_REPLAY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "audit.h"
#include "buf.h"
#include "hmap.h"
#include "model.h"
#include "ledger.h"
#include "pending.h"
#include "replay.h"
#include "rules.h"
#include "view.h"

/* --- the stored object texts (replay_store.c) ------------------------------ */

struct replay_store_entry {
	uint32_t key_len;
	size_t text_len;
	char *text;
	char key[];
};

/* A store's address is its index's context: it is not moved once made. */
struct replay_store {
	struct replay_store_entry **e;  /* [0..used), NULL where one was deleted */
	size_t used, alloc;
	uint32_t *holes;              /* positions of e that are NULL, reused first */
	size_t nholes;
	size_t count;
	struct hmap index;            /* key -> position in e */
	size_t bytes;
	size_t cap;
};

int replay_store_init(struct replay_store *s, size_t cap);
void replay_store_fini(struct replay_store *s);
/* The text stored under (kind, ns, name), or NULL. */
const struct replay_store_entry *replay_store_get(const struct replay_store *s, enum object_kind kind,
						  struct str ns, struct str name);
/* Store a copy of text under the key, replacing what was there. 0, -E2BIG
 * past the cap, -ENOMEM. */
int replay_store_put(struct replay_store *s, enum object_kind kind, struct str ns, struct str name,
		     struct str text);
void replay_store_del(struct replay_store *s, enum object_kind kind, struct str ns, struct str name);

/* What the replay reads of an object's top level. */
struct replay_meta {
	struct str kind;            /* raw */
	struct str name, namespace; /* raw */
	bool deleting;              /* metadata.deletionTimestamp set */
	bool lingers;               /* ...and finalizers or a grace period keep it */
	bool has_freeze;
	bool frozen;                /* data.freeze is "true" */
	/* spec, for slices and Pods */
	struct str driver, pool, node_name;   /* raw */
	int64_t generation;         /* spec.pool.generation */
	bool has_mappings;          /* a device maps node resources (either shape) */
	bool has_claims;            /* spec.resourceClaims is not empty */
};

/* Scan an object's text. 0 or -EBADMSG. */
int replay_meta_read(struct str text, struct replay_meta *out);

/* Pod text with spec.nodeName set to node (which it must not have) into
 * out. 0, -EBADMSG (no spec object), or out's error. */
int replay_pod_bind(struct str pod, struct str node, struct buf *out);

/* spec.target.name (or target.name) of a Binding's text, raw. */
int replay_binding_target(struct str binding, struct str *node);


struct replay;

/* Settled divergent intervals and admitted duplicates, stale-pool
 * allocations and NUMA splits so far. */
uint64_t replay_divergences(const struct replay *r);

/* --- the replay (replay.c) ----------------------------------------------- */

#define REPLAY_CORRUPT_KEPT 20
#define REPLAY_TIMELINE_MAX 256
#define REPLAY_FREEZE_MAX 64
#define REPLAY_DRIVERS_MAX 256
#define REPLAY_DRILLS_MAX 16
/* Pending-time histogram: 10 ms steps to 1 s, 100 ms to 1 min, 1 s to
 * 1 h, 1 min to 24 h, and one bucket above. */
#define REPLAY_PENDING_BUCKETS (100 + 590 + 3540 + 1380 + 1)

struct replay_pending {
	int64_t t;
	uint64_t seq;
	uint64_t line_no;
	char *line;                 /* owned copy; ev points into it */
	size_t len;
	struct audit_event ev;
};

struct replay {
	struct replay_options o;
	struct view_builder *builder;
	const struct view *view;    /* published, NULL before the first */
	/* The ledger kept up to date sample by sample, and the snapshot it was
	 * last brought to: held (it may be older than view) until the next
	 * sample's update has read what changed since. */
	struct ledger_inc *inc;
	const struct view *ledger_view;
	struct arena *arena;        /* one event's decision */
	struct arena *scratch;      /* view_builder_apply_json */
	struct replay_store store;
	struct buf review;          /* the AdmissionReview being made */
	struct buf text;            /* a Pod being bound */

	/* the reorder window: a binary heap on (t, seq) */
	struct replay_pending *heap;
	size_t nheap, heap_cap, heap_bytes;
	uint64_t seq;
	int64_t max_t, last_t;
	int64_t touched_ns;         /* when the view was last told every resource is live */

	/* counters */
	uint64_t lines, bytes, corrupt, skipped, events, out_of_order;
	uint64_t writes, succeeded, failed, applied, apply_refused;
	uint64_t judged, not_judged_old, not_judged_patch, undecidable;
	uint64_t would_deny, would_warn, would_refuse, refused_recorded;
	int64_t first_ns, end_ns;
	uint32_t ncorrupt;
	struct replay_corrupt corrupt_kept[REPLAY_CORRUPT_KEPT];
	char first_apply_error[AUDIT_ERROR_MAX];

	struct replay_rule_stats rules[RULE_COUNT];
	struct replay_example undecidable_ex[8];
	uint32_t nundecidable_ex;
	struct replay_example *refused;   /* recorded successes the policy denies */
	uint32_t nrefused;

	/* the recorded freeze */
	bool frozen;
	uint32_t nfreeze;
	struct replay_freeze_change freeze[REPLAY_FREEZE_MAX];
	uint64_t freeze_changes;

	/* ledger samples */
	int64_t next_sample_ns;
	uint64_t samples;
	struct replay_interval cur;       /* the state since cur.from_ns */
	bool have_cur;
	struct replay_interval timeline[REPLAY_TIMELINE_MAX];
	uint32_t ntimeline;
	uint64_t timeline_dropped, divergent_intervals;
	uint32_t max_overcommitted, max_diverging;
	int64_t clean_from_ns;            /* start of the current clean window */
	int64_t best_clean_from, best_clean_to;
	uint64_t admitted[3];             /* duplicates, stale-pool allocations, NUMA splits */
	uint64_t restarts_pool;           /* pools seen to come back or change generation */
	uint64_t slice_deletes, slice_deletes_by_node;
	uint64_t generation_bumps, pools_republished;
	struct replay_store pools;        /* driver/pool -> struct replay_pool_state */

	/* readiness evidence */
	struct replay_driver drivers[REPLAY_DRIVERS_MAX];
	uint32_t ndrivers;
	uint64_t drivers_dropped;
	struct replay_drill drills[REPLAY_DRILLS_MAX];
	uint32_t ndrills;
	uint64_t divergences_at_freeze;
	struct replay_store pending;      /* ns/name -> creation time of Pods with claims */
	uint64_t pending_hist[REPLAY_PENDING_BUCKETS];
	uint64_t pending_count;
	int64_t pending_max_ns;
	/* why pending: the live guard's Events and pending time */
	uint64_t refusals[EVENTS_RULES];  /* Events a refusal asks for, by reason */
	uint64_t held_written;            /* ...of writes that succeeded in the log */
	struct pending_table *held;       /* claims held back now */
	struct pending_hist held_hist;
	int64_t next_sweep_ns;
	bool held_full;
	uint32_t max_near_capacity;
	char near_capacity_node[256];
	struct ledger *ledger;            /* the end's, made by replay_finish() */
	const struct ledger_node **flagged;   /* a sample's flagged nodes: as many as nodes at most */
	uint32_t nflagged, flagged_cap;
	/* The event being processed, as the judge decoded it (in arena): its
	 * object, and the text it was decoded from. Applying that same text
	 * to the view takes the decoded object instead of decoding it again.
	 * have_decoded false when the judge decoded none, or not as the text
	 * alone decodes. */
	bool have_decoded;
	struct k8s_object decoded;        /* its pointers are into arena */
	struct str decoded_text;
};

/* --- shared by replay.c, replay_judge.c, replay_apply.c ----------------- */

/* Whether the guard's webhook configuration sends a write, and as what. */
struct judged {
	enum admission_op op;
	const char *kind;
};

/* The working view published for engine_decide() and the ledger. */
int replay_publish(struct replay *r);
/* The kinds whose last text is kept for the next write's oldObject. */
bool replay_stored_kind(enum object_kind k);
/* ns/name is the guard's policy ConfigMap. */
bool replay_is_self(const struct replay *r, struct str ns, struct str name);
/* The recorded freeze turned on or off at `at` (drills are noted). */
void replay_note_freeze(struct replay *r, bool on, int64_t at);
/* Apply text as ev to the view; a refusal is counted, not fatal. */
int replay_view_apply(struct replay *r, enum view_event ev, struct str text, int64_t t);
/* A duplicate (0), stale-pool allocation (1) or NUMA split (2) got through at t. */
void replay_note_admitted(struct replay *r, int which, int64_t t);
/* Divergences so far, with the current interval if it has outlasted the
 * settle window at `at`. */
uint64_t replay_divergences_now(const struct replay *r, int64_t at);
/* The write succeeded (2xx). */
bool replay_success(const struct audit_event *ev);
/* The username in a user object's text, raw; "" when none. */
struct str replay_user_name(struct str user);
/* replay_judge.c: a write the webhook is sent, and judging it. */
bool replay_judged_write(const struct replay *r, const struct audit_event *ev, struct judged *j);
int replay_judge(struct replay *r, const struct audit_event *ev, const struct judged *j, uint64_t line_no);
/* replay_apply.c: a write that succeeded, applied. */
int replay_apply(struct replay *r, const struct audit_event *ev);
/* The Events a decided review asks for counted, and its held claims kept. 0 or -E2BIG. */
int replay_note_events(struct replay *r, const struct audit_event *ev, const struct admission_request *rq,
		       const struct verdict *v);
/* Claims the view shows allocated (or gone) leave the pending table, at t. 0 or the view's error. */
int replay_sweep_held(struct replay *r, int64_t t);

#endif
