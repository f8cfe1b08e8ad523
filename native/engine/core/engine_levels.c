/*
 * engine_levels.c -- the scenario's entities beyond its GPUs: NvSwitches
 * (with their ports as DCGM_FE_LINK entities) and Grace CPUs with their
 * cores, created with the GPUs and read from the value source
 * (node_levels.c).
 *
 * A switch's ports come up as the GPUs' links reach it: the node's up GPU
 * links are spread evenly over its switches, each switch's first ports Up,
 * the rest Disabled (as DCGM reports an unused port).  A scenario with Grace
 * CPUs replaces the host's CPUs (modules/cpu/): the node is the scenario's,
 * not the machine the engine runs on.
 */
#include <string.h>

#include "core_internal.h"

static void bring_up_ports(sim_engine *e, unsigned int switches, unsigned int gpus)
{
    unsigned int gpu_links = 0;
    for (unsigned int g = 0; g < gpus; g++)
        for (unsigned int link = 0; link < DCGM_NVLINK_MAX_LINKS_PER_GPU; link++)
            gpu_links += vs_nvlink_state(e->src, g, link) == VS_LINK_UP;
    unsigned int per_switch = (gpu_links + switches - 1) / switches;
    if (per_switch > DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH)
        per_switch = DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH;
    for (unsigned int s = 0; s < switches; s++) {
        dcgmNvLinkLinkState_t *ports =
            engine_nvlink_switch_states_locked(e, engine_find_entity_locked(e, DCGM_FE_SWITCH, s));
        for (unsigned int p = 0; ports && p < per_switch; p++)
            ports[p] = DcgmNvLinkLinkStateUp;
    }
}

int engine_levels_init(sim_engine *e, unsigned int gpus)
{
    unsigned int switches = vs_nvswitch_count(e->src);
    if (switches > DCGM_MAX_NUM_SWITCHES)
        switches = DCGM_MAX_NUM_SWITCHES;
    for (unsigned int s = 0; s < switches; s++) {
        engine_entity sw = { DCGM_FE_SWITCH, s, DCGM_FE_NONE, 0, 0, ENGINE_NO_GPU, 0 };
        if (engine_add_entity_locked(e, &sw) != DCGM_ST_OK)
            return DCGM_ST_MEMORY;
    }
    if (switches)
        bring_up_ports(e, switches, gpus);
    unsigned int cpus = vs_cpu_count(e->src), cores = vs_cpu_core_count(e->src);
    for (unsigned int c = 0; c < cpus && c < DCGM_MAX_NUM_CPUS; c++) {
        engine_entity cpu = { DCGM_FE_CPU, c, DCGM_FE_NONE, 0, 0, ENGINE_NO_GPU, 0 };
        if (engine_add_entity_locked(e, &cpu) != DCGM_ST_OK)
            return DCGM_ST_MEMORY;
        for (unsigned int k = 0; k < cores && c * cores + k < DCGM_MAX_NUM_CPU_CORES; k++) {
            engine_entity core = { DCGM_FE_CPU_CORE, c * cores + k, DCGM_FE_CPU, c, 0, ENGINE_NO_GPU, k };
            if (engine_add_entity_locked(e, &core) != DCGM_ST_OK)
                return DCGM_ST_MEMORY;
        }
    }
    return DCGM_ST_OK;
}

int engine_levels_has_cpus(sim_engine *e) { return vs_cpu_count(e->src) > 0; }

int engine_levels_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                int64_t t_rel, sim_value *out)
{
    if (ent->fake)
        return 0;
    unsigned int id = ent->id, parent = ent->parent_id;
    switch (ent->group) {
    case DCGM_FE_SWITCH:
        if (ent->id >= vs_nvswitch_count(e->src))
            return 0;
        break;
    case DCGM_FE_LINK:
        /* a switch port: the node models it by its switch */
        if (ent->parent_group != DCGM_FE_SWITCH || ent->parent_id >= vs_nvswitch_count(e->src))
            return 0;
        id = ent->parent_id;
        break;
    case DCGM_FE_CPU:
    case DCGM_FE_CPU_CORE:
        if (!engine_levels_has_cpus(e))
            return 0;
        break;
    default:
        return 0;
    }
    const dcgm_field_meta_t *meta = sim_field_meta(field_id);
    memset(out, 0, sizeof *out);
    out->type = meta ? meta->fieldType : DCGM_FT_INT64;
    if (vs_level_sample(e->src, (int)ent->group, id, parent, ent->index, field_id, t_rel, out) != DCGM_ST_OK)
        out->kind = SIM_VALUE_BLANK;
    out->type = meta ? meta->fieldType : out->type;
    return 1;
}
