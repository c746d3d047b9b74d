/*
 * limits.h - the executor's concurrency limits as the node config gives
 * them (executor.groups, executor.tenants; src/config/nodeconf.c parses
 * them, src/executor/ applies them), in a header of their own so that the
 * executor does not depend on the config parser.
 */
#ifndef PALISADE_LIMITS_H
#define PALISADE_LIMITS_H

#include <stdint.h>

/* executor.groups.<name>: limits of one resource group. */
typedef struct pal_group_conf {
	char *name;		     /* [a-z0-9._-], as in a job's group key */
	int32_t concurrency;	     /* calls in flight per node, 0 = only max_inflight */
	int32_t cluster_concurrency; /* calls in flight cluster-wide, 0 = unlimited */
} pal_group_conf;

/* executor.tenants.<name>: the quota of one tenant (same on every node). */
typedef struct pal_tenant_conf {
	char *name;  /* as in a job's tenant key */
	int32_t cap; /* calls in flight cluster-wide, 0 = unlimited */
	double weight; /* share beside other tenants when both wait, default 1 */
} pal_tenant_conf;

#endif
