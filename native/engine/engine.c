/*
 * engine.c -- an engine is the cache core with DCGM's modules plugged in:
 * the table of the modules that hook into the core's work (core.h's
 * engine_module), in the order the core runs their hooks.  The modules with
 * requests only (admin, NvLink, topology) need no entry.
 */
#include "engine.h"

static const engine_module *const engine_modules[] = {
    &engine_imex_module,    /* the IMEX fields; a new engine asks the tool afresh */
    &engine_cpu_module,     /* the host's CPUs as entities, and their readings */
    &engine_health_module,  /* the XIDs it remembers */
    &engine_policy_module,  /* violations of the values stored */
    &engine_config_module,  /* the settings it applied, over the node's readings */
    NULL,
};

int engine_create(const char *spec, dcgmOperationMode_t mode, sim_engine **out,
                  char *err, size_t errlen)
{
    return engine_create_source(NULL, spec, mode, out, err, errlen);
}

int engine_create_source(const char *source, const char *spec, dcgmOperationMode_t mode,
                         sim_engine **out, char *err, size_t errlen)
{
    return engine_core_create(source, spec, mode, engine_modules, out, err, errlen);
}
