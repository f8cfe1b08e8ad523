/*
 * engine_nvlink.c -- NvLink link states: dcgmGetNvLinkLinkStatus and the
 * test API dcgmSetEntityNvLinkLinkState, as DCGM 4.6's cache manager keeps
 * them (DcgmCacheManager::PopulateNvLinkLinkStatusImpl, UpdateNvLinkLinkState,
 * SetGpuNvLinkLinkState; DcgmModuleCore::ProcessSetEntityNvLinkLinkState).
 * The states themselves, and how a live GPU's are read, are the core's
 * (core/engine_link.c).
 *
 *  - Every GPU has 36 link slots.  A fake GPU starts with all of them
 *    NotSupported and keeps whatever is set (DCGM never reads the driver for
 *    a fake GPU).
 *  - A state set on a live GPU lasts only until the next read, as in DCGM.
 *  - NvSwitches are the fake ones a client created and the scenario's.  As
 *    DCGM's NvSwitch module keeps them (DcgmNvSwitchManagerBase::AddFakeNvSwitch,
 *    GetAllLinkStates, SetEntityNvLinkLinkState), a set state is kept, and a
 *    switch or port that does not exist is DCGM_ST_BADPARAM.
 */
#include <string.h>

#include "nvlink.h"

int engine_nvlink_status(sim_engine *e, dcgmNvLinkStatus_v5 *status)
{
    if (!e || !status)
        return DCGM_ST_BADPARAM;
    if (status->version != dcgmNvLinkStatus_version5)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities && n < DCGM_MAX_NUM_DEVICES; i++) {
        const engine_entity *ent = &e->entities[i];
        if (ent->group != DCGM_FE_GPU || ent->id >= DCGM_MAX_NUM_DEVICES)
            continue;
        /* DCGM leaves out detached GPUs only; the engine detaches none */
        dcgmNvLinkGpuLinkStatus_v4 *row = &status->gpus[n++];
        row->entityId = ent->id;
        engine_nvlink_gpu_states_locked(e, ent->id, t_rel, row->linkState);
    }
    status->numGpus = n;
    for (unsigned int i = n; i < DCGM_MAX_NUM_DEVICES; i++)
        memset(&status->gpus[i], 0, sizeof status->gpus[i]);
    memset(status->nvSwitches, 0, sizeof status->nvSwitches);
    unsigned int ns = 0;
    for (size_t i = 0; i < e->n_entities && ns < DCGM_MAX_NUM_SWITCHES; i++) {
        const dcgmNvLinkLinkState_t *ports = engine_nvlink_switch_states_locked(e, &e->entities[i]);
        if (!ports)
            continue;
        status->nvSwitches[ns].entityId = e->entities[i].id;
        memcpy(status->nvSwitches[ns].linkState, ports, sizeof status->nvSwitches[ns].linkState);
        ns++;
    }
    status->numNvSwitches = ns;
    pthread_mutex_unlock(&e->lock);
    return DCGM_ST_OK;
}

int engine_nvlink_set_state(sim_engine *e, const dcgmSetNvLinkLinkState_v1 *request)
{
    if (!e || !request)
        return DCGM_ST_BADPARAM;
    if (request->version != dcgmSetNvLinkLinkState_version1)
        return DCGM_ST_VER_MISMATCH;
    if (request->entityGroupId == DCGM_FE_SWITCH) {
        if (request->linkId >= DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH)
            return DCGM_ST_BADPARAM;
        pthread_mutex_lock(&e->lock);
        dcgmNvLinkLinkState_t *ports = engine_nvlink_switch_states_locked(
            e, engine_find_entity_locked(e, DCGM_FE_SWITCH, request->entityId));
        if (ports)
            ports[request->linkId] = request->linkState;
        pthread_mutex_unlock(&e->lock);
        return ports ? DCGM_ST_OK : DCGM_ST_BADPARAM;
    }
    if (request->entityGroupId != DCGM_FE_GPU)
        return DCGM_ST_NOT_SUPPORTED;
    if (request->linkId >= DCGM_NVLINK_MAX_LINKS_PER_GPU)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, request->entityId);
    int rc = DCGM_ST_BADPARAM;
    if (ent && ent->id < DCGM_MAX_NUM_DEVICES) {
        /* stored as given: DCGM does not check the value either */
        e->nvlink_state[ent->id][request->linkId] = request->linkState;
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}
