/*
 * engine_link.c -- NvLink entities (DCGM_FE_LINK).  A link has no entry in
 * the engine's entity list: its id is a dcgm_link_t packed into 32 bits (the
 * owner's entity group in bits 0-7, the port index in bits 8-23, the GPU or
 * switch id in bits 24-31), and it exists when its owner does and the index
 * is in range (DcgmCacheManager::GetIsValidEntityId: below twice the links of
 * a GPU or of a switch).  A link once named is kept, so the engine hands out
 * stable entity records for groups, watches, injected values and reads.
 *
 * A GPU link's DCGM_FI_DEV_NVLINK_GET_STATE reads the link state (1 active,
 * 0 not) as DCGM asks the driver for it; other link fields have no reading
 * in the simulated node.
 *
 * The link states, as DCGM 4.6's cache manager keeps them
 * (DcgmCacheManager::PopulateNvLinkLinkStatusImpl, UpdateNvLinkLinkState):
 *
 *  - A live GPU's states are read from its source each time they are asked
 *    for (the model's links are Up, the rest NotSupported; NVML mode asks
 *    nvmlDeviceGetNvLinkState).  A GPU in MIG mode has no links; while any
 *    GPU is in MIG mode a Down link reads as Disabled (DCGM's workaround for
 *    the driver reporting MIG GPUs' links down).  A fake GPU's are what was
 *    set (modules/nvlink/).
 *  - A switch's ports start Disabled the first time the engine looks at it
 *    (the scenario's switches bring some Up, engine_levels.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "../../dcgm_field_ids.h"


struct engine_link_node {
    struct engine_link_node *next;
    engine_entity ent;
};

static int parse_link(const sim_engine *e, dcgm_field_eid_t raw, engine_entity *out)
{
    unsigned int type = raw & 0xffu, index = (raw >> 8) & 0xffffu, owner_id = (raw >> 24) & 0xffu;
    unsigned int limit;
    if (type == DCGM_FE_GPU)
        limit = 2 * DCGM_NVLINK_MAX_LINKS_PER_GPU;
    else if (type == DCGM_FE_SWITCH)
        limit = 2 * DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH;
    else
        return 0;
    if (index >= limit)
        return 0;
    const engine_entity *owner = NULL;
    for (size_t i = 0; i < e->n_entities && !owner; i++)
        if (e->entities[i].group == (dcgm_field_entity_group_t)type &&
            e->entities[i].id == owner_id)
            owner = &e->entities[i];
    /* DCGM takes a switch link on trust (it is how NvLink values are injected) */
    if (!owner && type == DCGM_FE_GPU)
        return 0;
    memset(out, 0, sizeof *out);
    out->group = DCGM_FE_LINK;
    out->id = raw;
    out->parent_group = (dcgm_field_entity_group_t)type;
    out->parent_id = owner_id;
    out->fake = owner ? owner->fake : 1;
    out->gpu = owner && type == DCGM_FE_GPU ? owner->gpu : ENGINE_NO_GPU;
    out->index = index;
    return 1;
}

const engine_entity *engine_link_entity_locked(const sim_engine *ce, dcgm_field_eid_t raw)
{
    /* the engine itself is never const: the lookup only adds to its link list */
    sim_engine *e = (sim_engine *)ce;
    for (struct engine_link_node *n = e->links; n; n = n->next)
        if (n->ent.id == raw)
            return &n->ent;
    engine_entity ent;
    if (!parse_link(e, raw, &ent))
        return NULL;
    struct engine_link_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->ent = ent;
    n->next = e->links;
    e->links = n;
    return &n->ent;
}

void engine_links_free(sim_engine *e)
{
    while (e->links) {
        struct engine_link_node *n = e->links;
        e->links = n->next;
        free(n);
    }
}

/* ---- link states ------------------------------------------------------------ */

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

/* ---- link entities' readings ------------------------------------------------- */

int engine_link_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                              int64_t t_rel, sim_value *out)
{
    if (ent->group != DCGM_FE_LINK)
        return 0;
    if (field_id == DCGM_FI_DEV_NVLINK_GET_STATE && ent->parent_group == DCGM_FE_GPU &&
        ent->index < DCGM_NVLINK_MAX_LINKS_PER_GPU) {
        dcgmNvLinkLinkState_t states[DCGM_NVLINK_MAX_LINKS_PER_GPU];
        if (engine_nvlink_gpu_states_locked(e, ent->parent_id, t_rel, states) == DCGM_ST_OK &&
            states[ent->index] != DcgmNvLinkLinkStateNotSupported) {
            sim_put_int(out, states[ent->index] == DcgmNvLinkLinkStateUp ? 1 : 0);
            return 1;
        }
    }
    out->kind = SIM_VALUE_NOT_SUPPORTED;
    return 1;
}
