/*
 * engine_nvlink.c -- NvLink link states: dcgmGetNvLinkLinkStatus and the
 * test API dcgmSetEntityNvLinkLinkState, as DCGM 4.6's cache manager keeps
 * them (DcgmCacheManager::PopulateNvLinkLinkStatusImpl, UpdateNvLinkLinkState,
 * SetGpuNvLinkLinkState; DcgmModuleCore::ProcessSetEntityNvLinkLinkState).
 *
 *  - Every GPU has 36 link slots.  A fake GPU starts with all of them
 *    NotSupported and keeps whatever is set (DCGM never reads the driver for
 *    a fake GPU).
 *  - A live GPU's states are read from its source each time they are asked
 *    for (the model's links are Up, the rest NotSupported; NVML mode asks
 *    nvmlDeviceGetNvLinkState), so a state set on a live GPU lasts only until
 *    the next read, as in DCGM.  A GPU in MIG mode has no links; while any
 *    GPU is in MIG mode a Down link reads as Disabled (DCGM's workaround for
 *    the driver reporting MIG GPUs' links down).
 *  - NvSwitches are the fake ones a client created (the node has none the
 *    engine could read).  As DCGM's NvSwitch module keeps them
 *    (DcgmNvSwitchManagerBase::AddFakeNvSwitch, GetAllLinkStates,
 *    SetEntityNvLinkLinkState), every port starts Disabled, a set state is
 *    kept, and a switch or port that does not exist is DCGM_ST_BADPARAM.
 */
#include <string.h>

#include "engine_internal.h"

static int any_gpu_in_mig_locked(const sim_engine *e)
{
    for (size_t i = 0; i < e->n_entities; i++) {
        const engine_entity *ent = &e->entities[i];
        if (ent->group == DCGM_FE_GPU && !ent->fake && vs_mig_instances(e->src, ent->gpu) > 0)
            return 1;
    }
    return 0;
}

/* UpdateNvLinkLinkState for one live GPU: refreshes e->nvlink_state[id] */
static void refresh_live_locked(sim_engine *e, const engine_entity *ent, int64_t t_rel)
{
    dcgmNvLinkLinkState_t *slots = e->nvlink_state[ent->id];
    int lost = engine_gpu_lost_locked(e, ent->gpu, t_rel);
    int mig_here = vs_mig_instances(e->src, ent->gpu) > 0;
    int mig_any = any_gpu_in_mig_locked(e);
    for (unsigned int link = 0; link < DCGM_NVLINK_MAX_LINKS_PER_GPU; link++) {
        int st = lost || mig_here ? VS_LINK_NONE : vs_nvlink_state(e->src, ent->gpu, link);
        if (st == VS_LINK_UP)
            slots[link] = DcgmNvLinkLinkStateUp;
        else if (st == VS_LINK_DOWN)
            slots[link] = mig_any ? DcgmNvLinkLinkStateDisabled : DcgmNvLinkLinkStateDown;
        else
            slots[link] = DcgmNvLinkLinkStateNotSupported;
    }
}

/* The port states of a switch entity, Disabled until first set; NULL when
 * the engine keeps none for that id */
dcgmNvLinkLinkState_t *engine_nvlink_switch_states_locked(sim_engine *e, const engine_entity *ent)
{
    if (!ent || ent->group != DCGM_FE_SWITCH || ent->id >= DCGM_MAX_NUM_SWITCHES)
        return NULL;
    if (!e->switch_link_ready[ent->id]) {
        for (unsigned int p = 0; p < DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH; p++)
            e->switch_link_state[ent->id][p] = DcgmNvLinkLinkStateDisabled;
        e->switch_link_ready[ent->id] = 1;
    }
    return e->switch_link_state[ent->id];
}

int engine_nvlink_gpu_states_locked(sim_engine *e, unsigned int gpu, int64_t t_rel,
                                    dcgmNvLinkLinkState_t *states)
{
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    if (!ent || ent->id >= DCGM_MAX_NUM_DEVICES)
        return DCGM_ST_BADPARAM;
    if (!ent->fake)
        refresh_live_locked(e, ent, t_rel);
    for (unsigned int link = 0; link < DCGM_NVLINK_MAX_LINKS_PER_GPU; link++)
        states[link] = e->nvlink_state[ent->id][link];
    return DCGM_ST_OK;
}

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
