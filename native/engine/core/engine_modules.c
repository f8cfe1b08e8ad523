/*
 * engine_modules.c -- DCGM's modules as the cache core sees them.
 *
 * The module table: each module's status, loaded lazily as DCGM's host
 * engine loads a module the first time a request needs it
 * (DcgmHostEngineHandler::ProcessModuleCommand / LoadModule).  This engine
 * has every module built in, so "loading" is the status change alone; the
 * requests that change statuses (denylist, pause, detach) are the admin
 * module's (modules/admin/).  What a paused core or a detached driver means
 * for the entities and for sampling is decided here.
 *
 * The hooks: the modules' code (native/engine/modules/) that takes part in
 * the core's work -- values stored, sampling, connections going, the
 * engine's creation and end -- through the engine_module table the engine
 * was created with (core.h), in the table's order.
 */
#include <stdlib.h>

#include "core_internal.h"

/* ---- the module table ------------------------------------------------------ */

void engine_admin_init_locked(sim_engine *e)
{
    for (int i = 0; i < ENGINE_MODULE_COUNT; i++)
        e->admin.module_status[i] = ENGINE_MODULE_NOT_LOADED;
    e->admin.module_status[ENGINE_MODULE_CORE] = ENGINE_MODULE_LOADED;
    /* DCGM's host engine reaches its NvSwitch module while it creates the
     * default groups at start, so that module is loaded from the start. */
    e->admin.module_status[ENGINE_MODULE_NVSWITCH] = ENGINE_MODULE_LOADED;
    ENGINE_LOG_DEBUG("module %d (NvSwitch) loaded, logging to this file", ENGINE_MODULE_NVSWITCH);
}

int engine_admin_hidden_locked(const sim_engine *e, dcgm_field_entity_group_t group)
{
    return e->admin.gpus_detached &&
           (group == DCGM_FE_GPU || group == DCGM_FE_GPU_I || group == DCGM_FE_GPU_CI);
}

int engine_admin_paused_locked(const sim_engine *e)
{
    return e->admin.module_status[ENGINE_MODULE_CORE] == ENGINE_MODULE_PAUSED;
}

int engine_admin_idle_locked(const sim_engine *e, dcgm_field_entity_group_t group)
{
    return (e->admin.gpus_detached || engine_admin_paused_locked(e)) &&
           (group == DCGM_FE_GPU || group == DCGM_FE_GPU_I || group == DCGM_FE_GPU_CI);
}

/* DCGM: DcgmHostEngineHandler::ProcessModuleCommand and LoadModule. */
int engine_module_use_locked(sim_engine *e, int module)
{
    if (module <= ENGINE_MODULE_CORE || module >= ENGINE_MODULE_COUNT)
        return DCGM_ST_BADPARAM;
    int *status = &e->admin.module_status[module];
    switch (*status) {
    case ENGINE_MODULE_LOADED:
    case ENGINE_MODULE_PAUSED:
        return DCGM_ST_OK;
    case ENGINE_MODULE_RELOADABLE:
        *status = ENGINE_MODULE_LOADED;
        return DCGM_ST_OK;
    case ENGINE_MODULE_DENYLISTED:
    case ENGINE_MODULE_FAILED:
    case ENGINE_MODULE_UNLOADED:
        ENGINE_LOG_WARNING("Module %d is not loaded (status %d)", module, *status);
        return DCGM_ST_MODULE_NOT_LOADED;
    default:
        break;
    }
    /* a module is not loaded while the driver is detached */
    if (e->admin.gpus_detached) {
        ENGINE_LOG_WARNING("The driver is detached: module %d cannot load", module);
        return DCGM_ST_GPUS_DETACHED;
    }
    /* a module loaded while DCGM is paused starts paused */
    *status = e->admin.module_status[ENGINE_MODULE_CORE] == ENGINE_MODULE_PAUSED
                  ? ENGINE_MODULE_PAUSED : ENGINE_MODULE_LOADED;
    ENGINE_LOG_INFO("Loaded module %d", module);
    return DCGM_ST_OK;
}

/* ---- the modules' hooks ---------------------------------------------------- */

/* The engine's table, never NULL once it exists (engine_core_create). */
static const engine_module *const *modules_of(const sim_engine *e)
{
    static const engine_module *const none[] = { NULL };
    return e->modules ? e->modules : none;
}

int engine_modules_init(sim_engine *e)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->init) {
            int rc = m->init(e);
            if (rc != DCGM_ST_OK)
                return rc;
        }
    return DCGM_ST_OK;
}

int engine_modules_add_entities(sim_engine *e)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->add_entities) {
            int rc = m->add_entities(e);
            if (rc != DCGM_ST_OK)
                return rc;
        }
    return DCGM_ST_OK;
}

void engine_modules_free(sim_engine *e)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->free)
            m->free(e);
}

void engine_modules_release_owner_locked(sim_engine *e, engine_owner owner)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->release_owner_locked)
            m->release_owner_locked(e, owner);
}

int engine_modules_sample_series_locked(sim_engine *e, const engine_entity *ent,
                                        unsigned short field_id, int64_t now_us, sim_value *out)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->sample_series_locked) {
            int rc = m->sample_series_locked(e, ent, field_id, now_us, out);
            if (rc >= 0)
                return rc;
        }
    return -1;
}

int engine_modules_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                 int64_t t_rel, sim_value *out)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->sample_locked && m->sample_locked(e, ent, field_id, t_rel, out))
            return 1;
    return 0;
}

void engine_modules_overlay_locked(const sim_engine *e, unsigned int gpu, unsigned short field_id,
                                   sim_value *out)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->overlay_locked)
            m->overlay_locked(e, gpu, field_id, out);
}

void engine_modules_storing_locked(sim_engine *e, const engine_series *s, const engine_sample *value)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->storing_locked)
            m->storing_locked(e, s, value);
}

void engine_modules_stored_locked(sim_engine *e, const engine_series *s, int64_t ts)
{
    for (const engine_module *const *each = modules_of(e), *m; (m = *each) != NULL; each++)
        if (m->stored_locked)
            m->stored_locked(e, s, ts);
}
