/*
 * node_levels.c -- the simulated node's entities beyond its GPUs, when the
 * scenario asks for them: NvSwitches (`nvswitches = N`, with their ports as
 * NvLink entities) and Grace CPUs (`grace_cpus = N`, `cpu_cores = M` each).
 *
 * Their readings are, like the GPUs', a pure function of (seed, entity,
 * field, time): a switch runs warm and moves the all-reduce traffic of the
 * GPUs' links through its ports; a Grace core is busy at a steady share with
 * seeded noise per second, a CPU reports the mean of its cores, its package
 * temperature and power.  Error counters stay at 0.  Fields the simulated
 * hardware has no reading for answer NOT_SUPPORTED.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "node_internal.h"
#include "../dcgm_field_ids.h"

#define GROUP_SWITCH 3
#define GROUP_LINK 6
#define GROUP_CPU 7
#define GROUP_CPU_CORE 8

/* a switch port moves ~20 GB/s each way under all-reduce; counters in KiB */
#define PORT_KIB_PER_S (20.0 * 1e9 / 1024.0)
#define GRACE_CORE_KHZ 3100000
#define GRACE_BUSY 0.35          /* mean share of a core's time spent active */

unsigned int sim_node_nvswitch_count(const sim_node *node) { return node ? node->nvswitches : 0; }
unsigned int sim_node_cpu_count(const sim_node *node) { return node ? node->cpus : 0; }
unsigned int sim_node_cpu_core_count(const sim_node *node) { return node ? node->cpu_cores : 0; }

/* a uniform number in [0, 1) from the seed and three coordinates (splitmix64) */
static double unit_noise(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^
                 (c * 0x94d049bb133111ebull);
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* a core's active share over the second holding t */
static double core_busy(const sim_node *node, unsigned int core, int64_t t_rel_us)
{
    uint64_t second = t_rel_us > 0 ? (uint64_t)(t_rel_us / 1000000) : 0;
    double steady = GRACE_BUSY + 0.2 * (unit_noise(node->seed, 7, core, 0) - 0.5);
    double busy = steady + 0.1 * (unit_noise(node->seed, 8, core, second) - 0.5);
    return busy < 0 ? 0 : busy > 1 ? 1 : busy;
}

/* the share of a core's time one utilization field counts */
static double util_share(unsigned short field_id, double busy)
{
    switch (field_id) {
    case DCGM_FI_DEV_CPU_UTIL_TOTAL: return busy;
    case DCGM_FI_DEV_CPU_UTIL_USER: return 0.80 * busy;
    case DCGM_FI_DEV_CPU_UTIL_SYS: return 0.15 * busy;
    case DCGM_FI_DEV_CPU_UTIL_IRQ: return 0.05 * busy;
    default: return 0.0; /* nice */
    }
}

static int sample_switch(const sim_node *node, unsigned int id, unsigned short field_id,
                         int64_t t_rel_us, sim_value *out)
{
    double t = (double)(t_rel_us > 0 ? t_rel_us : 0) / 1e6;
    switch (field_id) {
    case DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS:
        sim_put_int(out, 42 + (int64_t)(6 * unit_noise(node->seed, 3, id, (uint64_t)t / 5)));
        return 1;
    case DCGM_FI_DEV_NVSWITCH_TEMP_SLOWDOWN_CELSIUS: sim_put_int(out, 95); return 1;
    case DCGM_FI_DEV_NVSWITCH_TEMP_SHUTDOWN_CELSIUS: sim_put_int(out, 105); return 1;
    case DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT: sim_put_int(out, 850); return 1;
    case DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID: sim_put_int(out, (int64_t)id); return 1;
    case DCGM_FI_DEV_NVSWITCH_RESET_REQUIRED: case DCGM_FI_DEV_SXID_FATAL_ERROR: case DCGM_FI_DEV_SXID_NON_FATAL_ERROR: sim_put_int(out, 0); return 1;
    case DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX: case DCGM_FI_DEV_NVSWITCH_THROUGHPUT_RX:
        /* the ports the GPUs' links reach on this switch, all carrying traffic */
        sim_put_int(out, (int64_t)(t * PORT_KIB_PER_S * 32));
        return 1;
    default: return 0;
    }
}

static int sample_port(unsigned short field_id, int64_t t_rel_us, sim_value *out)
{
    double t = (double)(t_rel_us > 0 ? t_rel_us : 0) / 1e6;
    switch (field_id) {
    case DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX: case DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX: sim_put_int(out, (int64_t)(t * PORT_KIB_PER_S)); return 1;
    case DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS: case DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS: case DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL: case DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERROR_TOTAL:
        sim_put_int(out, 0);
        return 1;
    default: return 0;
    }
}

static int sample_cpu(const sim_node *node, int group, unsigned int id, unsigned short field_id,
                      int64_t t_rel_us, sim_value *out)
{
    if (field_id == DCGM_FI_DEV_CPU_VENDOR || field_id == DCGM_FI_DEV_CPU_MODEL) {
        sim_put_str(out, field_id == DCGM_FI_DEV_CPU_VENDOR ? "Nvidia" : "Grace");
        return 1;
    }
    if (field_id >= DCGM_FI_DEV_CPU_UTIL_TOTAL && field_id <= DCGM_FI_DEV_CPU_UTIL_IRQ) {
        if (group == GROUP_CPU_CORE) {
            sim_put_double(out, util_share(field_id, core_busy(node, id, t_rel_us)));
            return 1;
        }
        double sum = 0; /* a CPU: the mean over its cores, as DCGM computes it */
        unsigned int n = node->cpu_cores;
        for (unsigned int c = 0; c < n; c++)
            sum += util_share(field_id, core_busy(node, id * n + c, t_rel_us));
        sim_put_double(out, n ? sum / n : 0.0);
        return 1;
    }
    if (group == GROUP_CPU_CORE) {
        if (field_id != DCGM_FI_DEV_CPU_CLOCK_CURRENT)
            return 0;
        sim_put_int(out, GRACE_CORE_KHZ);
        return 1;
    }
    switch (field_id) {
    case DCGM_FI_DEV_CPU_TEMP_CELSIUS:
        sim_put_double(out, 48.0 + 4.0 * unit_noise(node->seed, 5, id, (uint64_t)(t_rel_us / 5000000)));
        return 1;
    case DCGM_FI_DEV_CPU_TEMP_WARNING_CELSIUS: sim_put_double(out, 95.0); return 1;
    case DCGM_FI_DEV_CPU_TEMP_CRITICAL_CELSIUS: sim_put_double(out, 105.0); return 1;
    case DCGM_FI_DEV_CPU_POWER_WATTS:
        sim_put_double(out, 120.0 + 100.0 * GRACE_BUSY + 10.0 * unit_noise(node->seed, 6, id,
                                                                            (uint64_t)(t_rel_us / 1000000)));
        return 1;
    default: return 0;
    }
}

int sim_node_level_sample(const sim_node *node, int group, unsigned int id, unsigned int parent,
                          unsigned int index, unsigned short fieldId, int64_t t_rel_us, sim_value *out)
{
    (void)parent;
    char type = out->type;
    memset(out, 0, sizeof *out);
    out->type = type;
    if (!node)
        return DCGM_ST_BADPARAM;
    int served = 0;
    if (group == GROUP_SWITCH && id < node->nvswitches)
        served = sample_switch(node, id, fieldId, t_rel_us, out);
    else if (group == GROUP_LINK && id < node->nvswitches)
        served = sample_port(fieldId, t_rel_us, out);
    else if (group == GROUP_CPU && id < node->cpus)
        served = sample_cpu(node, group, id, fieldId, t_rel_us, out);
    else if (group == GROUP_CPU_CORE && id < node->cpus * node->cpu_cores)
        served = sample_cpu(node, group, id, fieldId, t_rel_us, out);
    (void)index;
    if (!served) {
        out->kind = SIM_VALUE_NOT_SUPPORTED;
        out->type = type;
    }
    return DCGM_ST_OK;
}
