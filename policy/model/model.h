/* model.h - the typed Kubernetes objects the rules read.
 *
 * The decoder fills these from an AdmissionReview (or a bare object in
 * dry-run) in one pass; rules read only these structs and never JSON. Only the
 * fields some rule reads are here. Every struct str points into the request
 * body or into the request's arena, and every array lives in that arena: the
 * whole model is borrowed and dies with them. */
#ifndef DRA_GUARD_MODEL_H
#define DRA_GUARD_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "quantity.h"
#include "str.h"

enum admission_op {
	ADMISSION_OP_UNKNOWN = 0,
	ADMISSION_OP_CREATE,
	ADMISSION_OP_UPDATE,
	ADMISSION_OP_DELETE,
	ADMISSION_OP_CONNECT,
};

/* The kinds of Kubernetes object the guard knows: the one enum of them,
 * for the decoder, the rules, the view (view_holds_kind()), the cluster
 * view's watches, replay and dumps. Zero is "none", so a zeroed struct
 * holds no object. An array with an entry per kind is indexed by it and
 * sized OBJECT_KIND_COUNT. */
enum object_kind {
	OBJECT_NONE = 0,            /* absent or null */
	OBJECT_RESOURCE_SLICE,
	OBJECT_RESOURCE_CLAIM,
	OBJECT_POD,
	OBJECT_CONFIG_MAP,
	OBJECT_NODE,                /* read by the cluster view only: no rule judges Nodes */
	OBJECT_OTHER,               /* a kind no rule reads: not decoded */
};

/* Entries of an array indexed by enum object_kind (not an enumerator, so
 * a switch over the kinds need not name it). */
#define OBJECT_KIND_COUNT (OBJECT_OTHER + 1)

/* resource.k8s.io versions the guard decodes (v1beta1 nests device fields
 * under "basic"); core objects are always API_V1. */
enum api_version {
	API_VERSION_UNKNOWN = 0,
	API_V1,
	API_V1BETA2,
	API_V1BETA1,
};

/* A quantity as it appeared: a JSON string or a bare number. */
struct quantity_field {
	bool present;
	struct str text;            /* the string's content or the number literal */
	int err;                    /* 0, or quantity_parse()'s error for text */
	struct quantity value;      /* valid when err == 0 */
};

struct named_quantity {
	struct str name;            /* first member: a map's key */
	struct quantity_field value;
};

enum mapping_shape {
	MAPPING_V136 = 0,           /* nodeAllocatableResourceMappings */
	MAPPING_V137,               /* nodeAllocatableResources (Kubernetes 1.37) */
};

/* One node resource a device maps. In the 1.36 shape "multiplier" is
 * allocationMultiplier; in the 1.37 shape it is mapping.deviceMultiplier and
 * capacity_multiplier is mapping.capacityMultiplier. */
struct mapping {
	struct str resource;        /* the map key, e.g. "memory", "hugepages-2Mi"
				     * (first member: maps are sorted by it) */
	enum mapping_shape shape;
	bool is_null;               /* the entry's value was null */
	struct quantity_field multiplier;
	struct quantity_field capacity_multiplier;        /* 1.37 only */
	bool has_capacity_key;
	struct str capacity_key;
	struct quantity_field overhead_per_pod;           /* 1.37 only */
	struct quantity_field overhead_per_container;     /* 1.37 only */
	struct str unknown_field;   /* first member not in the schema, len 0 if none */
};

/* A capacity's requestPolicy (DRAConsumableCapacity): which amounts one
 * allocation may consume. Absent, a claim may consume any amount up to the
 * capacity's value, and one that asks for none consumes all of it. */
struct capacity_policy {
	bool present;
	struct quantity_field default_value;  /* consumed when a claim asks for none */
	struct quantity_field *valid_values;  /* the only amounts, ascending */
	uint32_t nvalid_values;
	bool has_range;                       /* validRange */
	struct quantity_field min, max, step; /* a request rounds up to min + k*step */
};

struct device_capacity {
	struct str name;                      /* first member: the map's key */
	struct quantity_field value;
	struct capacity_policy policy;
	struct str policy_raw;                /* requestPolicy's JSON text, len 0 when
					       * absent (read by the cluster view) */
};

struct device {
	uint32_t index;             /* position in spec.devices */
	struct str name;
	bool allow_multiple_allocations;
	struct device_capacity *capacity; /* sorted by name */
	uint32_t ncapacity;
	struct str capacity_raw;    /* the capacity map's JSON text, len 0 when absent */
	struct mapping *mappings;   /* both shapes, sorted by shape then resource */
	uint32_t nmappings;
	bool has_v136;              /* nodeAllocatableResourceMappings present */
	bool has_v137;              /* nodeAllocatableResources present */
	struct str node_name;       /* per-device node (perDeviceNodeSelection) */
	bool all_nodes;
	bool has_node_selector;
	struct str attributes_raw;  /* the attributes map's JSON text, len 0 when
				     * absent (read by the cluster view) */
	struct str raw;             /* the device's JSON text, for cheap comparison */
	bool same_as_object;        /* an oldObject device whose text the decoder found
				     * byte-identical to object's device at this index */
};

struct resource_slice {
	struct str driver;
	struct str node_name;       /* len 0 when absent */
	bool all_nodes;
	bool has_node_selector;
	bool per_device_node_selection;
	struct str pool_name;
	bool has_pool_generation;
	int64_t pool_generation;
	int64_t resource_slice_count;
	struct device *devices;
	uint32_t ndevices;
};

struct claim_request {
	struct str name;
	struct str *device_classes; /* exactly.deviceClassName, or every firstAvailable[] one */
	uint32_t ndevice_classes;
};

/* Some fields are read by no admission rule but by the cluster view
 * (view_record.c) and the ledger built on it: an allocation result's
 * consumed_capacity (what a capacity-mode mapping charges), a claim's
 * reserved_for (which Pods hold it, so it is charged once per node),
 * meta.uid and meta.resource_version (identity and the mapping version
 * a claim was charged at). */
struct allocation_result {
	struct str request;
	struct str driver;
	struct str pool;
	struct str device;
	struct str share_id;
	struct named_quantity *consumed_capacity;
	uint32_t nconsumed_capacity;
};

struct device_status {
	struct str driver;
	struct str pool;
	struct str device;
	struct str share_id;
	struct str raw;             /* the entry's JSON text: "changed" means different text */
};

struct consumer_ref {
	struct str api_group;
	struct str resource;
	struct str name;
	struct str uid;
};

struct resource_claim {
	struct claim_request *requests;
	uint32_t nrequests;
	bool allocated;             /* status.allocation present and not null */
	struct allocation_result *results;
	uint32_t nresults;
	bool node_local;            /* nodeSelector is one term: metadata.name In [one node] */
	struct str allocated_node;
	struct str allocation_raw;  /* status.allocation's JSON text */
	struct consumer_ref *reserved_for;
	uint32_t nreserved_for;
	struct str reserved_for_raw;  /* status.reservedFor's JSON text, len 0 when absent */
	struct device_status *devices;
	uint32_t ndevices;
};

/* One status.nodeAllocatableResourceClaimStatuses entry. */
struct claim_resource_status {
	struct str claim_name;
	struct str *containers;
	uint32_t ncontainers;
	struct named_quantity *resources;
	uint32_t nresources;
	struct str raw;
};

/* One spec.resourceClaims entry. */
struct pod_claim_ref {
	struct str name;
	struct str claim_name;      /* resourceClaimName, len 0 when absent */
	struct str template_name;   /* resourceClaimTemplateName, len 0 when absent */
};

/* One status.resourceClaimStatuses entry: the claim made from a template. */
struct pod_claim_name {
	struct str name;
	struct str claim_name;      /* len 0: no claim was needed */
};

/* The scheduling gate the guard puts on new Pods during a rollback freeze
 * (freeze.gatePods), and the annotation that says why. */
#define MODEL_FREEZE_GATE "dra-guard.io/freeze"
#define MODEL_FREEZE_ANNOTATION "dra-guard.io/freeze-reason"
/* The annotation the resource-claim controller puts on claims it makes
 * from a Pod's template: the name of the Pod's resourceClaims entry. */
#define MODEL_POD_CLAIM_ANNOTATION "resource.kubernetes.io/pod-claim-name"
/* What the API server puts on the bookmark that ends the initial events of
 * a WATCH with sendInitialEvents=true (a streaming list). */
#define MODEL_INITIAL_EVENTS_END_ANNOTATION "k8s.io/initial-events-end"

struct pod {
	struct str node_name;
	struct str phase;           /* status.phase */
	uint32_t nresource_claims;  /* entries in spec.resourceClaims */
	struct pod_claim_ref *resource_claims;
	struct pod_claim_name *claim_names;   /* status.resourceClaimStatuses */
	uint32_t nclaim_names;
	bool has_claim_statuses;    /* the field is present (even if empty) */
	struct claim_resource_status *claim_statuses;
	uint32_t nclaim_statuses;
	struct str claim_statuses_raw;
	bool has_scheduling_gates;  /* spec.schedulingGates is present (even if empty) */
	uint32_t nscheduling_gates;
	bool has_freeze_gate;       /* one of them is dra-guard.io/freeze (MODEL_FREEZE_GATE) */
	/* JSON text (len 0 when absent) of what only the cluster view reads:
	 * the Pod's requests as the scheduler computes them come from these. */
	struct str containers_raw;          /* spec.containers */
	struct str init_containers_raw;     /* spec.initContainers */
	struct str overhead_raw;            /* spec.overhead */
	struct str pod_resources_raw;       /* spec.resources */
	struct str container_statuses_raw;  /* status.containerStatuses */
	struct str init_statuses_raw;       /* status.initContainerStatuses */
	struct str conditions_raw;          /* status.conditions */
};

/* A Node: status.allocatable (for the cluster view). */
struct node {
	struct named_quantity *allocatable;
	uint32_t nallocatable;
};

/* The keys of the guard's own policy ConfigMap, unescaped. */
struct config_map {
	bool has_policy;
	struct str policy;          /* data["policy.yaml"] */
	bool has_freeze;
	struct str freeze;
	bool has_freeze_reason;
	struct str freeze_reason;
};

struct object_meta {
	struct str name;
	struct str generate_name;
	struct str namespace;
	struct str uid;
	struct str resource_version;
	bool has_labels;
	bool has_mapping_label;     /* labels["dra-guard.io/mappings"] */
	struct str mapping_label;
	bool deleting;              /* deletionTimestamp set */
	bool has_annotations;
	bool has_initial_events_end;   /* the annotation is there (once: a second is refused) */
	bool initial_events_end;    /* annotations["k8s.io/initial-events-end"] == "true": the
				     * bookmark that ends a streaming list's initial events */
	bool has_pod_claim_name;    /* annotations["resource.kubernetes.io/pod-claim-name"]:
				     * the resource-claim controller made it from a template */
	struct str pod_claim_name;
	/* The ownerReference with controller: true (the first, when a hostile
	 * object names several), len 0 fields when there is none. */
	bool has_controller;
	struct str controller_api_version;
	struct str controller_kind;
	struct str controller_name;
	struct str controller_uid;
};

/* A top-level member of an object other than metadata, as text. */
struct object_member {
	struct str key;             /* the key's raw bytes */
	struct str value;           /* the value's JSON text */
};

/* Most top-level members an object's content is kept for; a Kubernetes
 * object has about six. */
#define MODEL_OBJECT_MEMBERS_MAX 32

struct k8s_object {
	enum object_kind kind;
	enum api_version version;
	struct str api_version;     /* as written, e.g. "resource.k8s.io/v1" */
	struct str kind_name;       /* as written, e.g. "ResourceSlice" */
	struct object_meta meta;
	/* Every member but metadata, in document order, when the object has at
	 * most MODEL_OBJECT_MEMBERS_MAX of them (members_complete): what tells
	 * an UPDATE that changed only metadata. */
	struct object_member *members;
	uint32_t nmembers;
	bool members_complete;
	union {
		struct resource_slice slice;
		struct resource_claim claim;
		struct pod pod;
		struct config_map config_map;
		struct node node;
	} u;
};

struct user_extra {
	struct str key;
	struct str *values;
	uint32_t nvalues;
};

struct user_info {
	struct str username;
	struct str uid;
	struct str *groups;
	uint32_t ngroups;
	struct user_extra *extra;
	uint32_t nextra;
};

struct group_version_kind {
	struct str group;
	struct str version;
	struct str kind;
};

struct group_version_resource {
	struct str group;
	struct str version;
	struct str resource;
};

struct admission_request {
	struct str uid;
	struct group_version_kind kind;
	enum object_kind target;      /* kind, classified once by whoever made the
				       * request (the decoder, synth): what the
				       * engine dispatches on */
	struct group_version_resource resource;
	struct str sub_resource;
	struct str name;
	struct str namespace;
	enum admission_op operation;
	struct str operation_text;
	struct user_info user;
	bool dry_run;
	struct k8s_object object;
	struct k8s_object old_object;
};

/* The extra keys a ServiceAccount token bound to a Pod carries
 * (k8s.io/apiserver/pkg/authentication/serviceaccount, ServiceAccountInfo.
 * UserInfo): the Pod's node, and the Pod's name (with pod-uid; the two are
 * set together). The only extras the guard reads. */
#define MODEL_EXTRA_NODE_NAME "authentication.kubernetes.io/node-name"
#define MODEL_EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"

/* The values of extra[key], or NULL (with *n = 0) when absent. Borrowed. */
const struct str *model_user_extra(const struct user_info *u, const char *key, uint32_t *n);

/* "CREATE" etc.; "" for unknown. Static storage. */
const char *model_op_name(enum admission_op op);

/* Parse "CREATE", "UPDATE", "DELETE", "CONNECT"; ADMISSION_OP_UNKNOWN otherwise. */
enum admission_op model_op_parse(struct str s);

/* True when a and b were both decoded with all their members kept and
 * every member but metadata has the same text in both, in the same order:
 * an UPDATE from b to a then changed labels, annotations, ownerReferences,
 * finalizers or managedFields and nothing a rule reads. Equal text is the
 * same value; different text may still be (then this says false, and the
 * rules run). */
bool model_only_metadata_changed(const struct k8s_object *a, const struct k8s_object *b);

/* True when a and b differ in what makes a claim a Pod's (the resource-claim
 * controller's pod-claim-name annotation, the controller ownerReference). */
bool model_pod_owner_changed(const struct object_meta *a, const struct object_meta *b);

/* Order d's mappings by shape, then resource (the decoder does it). */
void model_sort_mappings(struct device *d);

/* d's mapping of resource in shape, or NULL: a binary search. */
const struct mapping *model_find_mapping(const struct device *d, enum mapping_shape shape, struct str resource);

/* d's capacity named name, or NULL: a binary search. */
const struct device_capacity *model_device_capacity(const struct device *d, struct str name);

/* True when any device of s maps a node resource (either shape). */
bool model_slice_has_mappings(const struct resource_slice *s);

/* True when devices a and b map the same node resources the same way
 * (quantities by value; a missing multiplier is the API default 1). */
bool model_device_mappings_equal(const struct device *a, const struct device *b);

/* "ResourceSlice" etc.; "" for none/other. Static storage. */
const char *model_kind_name(enum object_kind k);

/* The kind model_kind_name() names kind (e.g. "ResourceSlice");
 * OBJECT_OTHER for any other name. */
enum object_kind model_kind_of_name(struct str kind);

/* The API resource of kind k: its group ("resource.k8s.io", or "" for
 * core) and plural ("resourceslices"); "" and "" for none/other. Static
 * storage. */
const char *model_kind_group(enum object_kind k);
const char *model_kind_resource(enum object_kind k);

/* The kind whose resource is (group, resource); OBJECT_OTHER for any
 * other. */
enum object_kind model_kind_of_resource(struct str group, struct str resource);

/* The object a request is about: the new one, or on DELETE the old one
 * (DELETE reviews carry object: null). Borrowed from req. */
const struct k8s_object *model_request_subject(const struct admission_request *req);

/* The request's name and namespace, or the subject's metadata where the
 * request leaves them out (a review made up offline, a kind the API server
 * fills in late). Borrowed from req. */
struct str model_request_name(const struct admission_request *req);
struct str model_request_namespace(const struct admission_request *req);

/* The name of the claim a Pod's spec.resourceClaims entry ref uses: its
 * resourceClaimName, or the generated name status.resourceClaimStatuses
 * gives a template's; len 0 when there is none (yet). Borrows from p. */
struct str model_pod_claim_name(const struct pod *p, const struct pod_claim_ref *ref);

#endif
