/*
 * engine_topo.c -- what the engine knows of the chips and how they are
 * connected: dcgmGetGpuChipArchitecture, dcgmGetDeviceTopology,
 * dcgmGetGroupTopology, dcgmSelectGpusByTopology and dcgmGetNvLinkP2PStatus,
 * computed as DCGM 4.6's host engine computes them:
 *
 *  - The architecture follows from the CUDA compute capability
 *    (DcgmCacheManager::HelperGetLiveChipArch); a fake GPU has none (0).
 *  - The PCIe table holds every pair of live GPUs, lower id first, with the
 *    common ancestor of the two (DCGM_FI_SYSTEM_PCI_TOPOLOGY).  The node is a
 *    two-socket host, so two GPUs on the same socket meet at that CPU's host
 *    bridges (NVML_TOPOLOGY_NODE, DCGM_TOPOLOGY_CPU) and others at the system
 *    interconnect (DCGM_TOPOLOGY_SYSTEM); the socket is the GPU's CPU affinity.
 *  - The NvLink table (PopulateTopologyNvLink) holds every pair of GPUs of
 *    Pascal or newer.  The node's NvLinks all run to NvSwitches (an HGX
 *    board), so, as DCGM assumes for switched GPUs, a GPU reaches every peer
 *    over all its links that are Up: the pair's mask is those links and its
 *    path one bit for their number.
 *  - A group's topology is the PCIe table restricted to the group's GPUs,
 *    the NvLink part OR'ed in (DcgmHostEngineHandler::HelperGetTopologyIO),
 *    and the affinity of each GPU (HelperGetTopologyAffinity; a fake GPU
 *    borrows the first live GPU's, PopulateTopologyAffinity).
 *  - Device and group answers are folded as DcgmApi.cpp's FillDeviceTopology
 *    and FillGroupTopology do; GPU selection is DcgmTopology.cpp's
 *    HelperSelectGpusByTopology.
 *  - P2P status per GPU pair (DcgmCacheManager::CreateAllNvlinksP2PStatus):
 *    OK when both GPUs have NvLinks (the driver's answer for switched GPUs),
 *    NotSupported otherwise and towards the GPU itself.
 */
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "../health/health.h"
#include "../../../dcgm_field_ids.h"

#define AFFINITY_WORDS_SAMPLED 4 /* DCGM_FI_DEV_CPU_AFFINITY_0..3 */

typedef struct topo_element {
    unsigned int gpu_a, gpu_b;   /* gpu_a < gpu_b */
    dcgmGpuTopologyLevel_t path;
    uint64_t a_to_b_links, b_to_a_links;
} topo_element;

typedef struct topo_table {
    unsigned int count;
    topo_element el[DCGM_MAX_NUM_DEVICES * (DCGM_MAX_NUM_DEVICES - 1) / 2];
} topo_table;

typedef struct topo_affinity {
    unsigned int count;
    struct {
        unsigned int gpu;
        unsigned long mask[DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    } row[DCGM_MAX_NUM_DEVICES];
} topo_affinity;

/* ---- chip architecture ------------------------------------------------------ */

static dcgmChipArchitecture_t arch_of_cc(int major, int minor)
{
    switch (major) {
    case 0: case 1: case 2: return DCGM_CHIP_ARCH_OLDER;
    case 3: return DCGM_CHIP_ARCH_KEPLER;
    case 5: return DCGM_CHIP_ARCH_MAXWELL;
    case 6: return DCGM_CHIP_ARCH_PASCAL;
    case 7: return minor < 5 ? DCGM_CHIP_ARCH_VOLTA : DCGM_CHIP_ARCH_TURING;
    case 8: return minor < 9 ? DCGM_CHIP_ARCH_AMPERE : DCGM_CHIP_ARCH_ADA;
    case 9: return DCGM_CHIP_ARCH_HOPPER;
    case 10: case 12: return DCGM_CHIP_ARCH_BLACKWELL;
    default: return DCGM_CHIP_ARCH_UNKNOWN;
    }
}

/* A GPU's architecture as DCGM records it when it attaches the GPU: 0 (no
 * architecture) for a fake GPU, UNKNOWN when the driver will not say. */
static unsigned int arch_locked(sim_engine *e, const engine_entity *ent, int64_t t_rel)
{
    if (ent->fake || ent->gpu == ENGINE_NO_GPU)
        return 0;
    sim_value v;
    memset(&v, 0, sizeof v);
    if (vs_sample(e->src, ent->gpu, DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY, t_rel, &v) != DCGM_ST_OK ||
        v.kind != SIM_VALUE_OK)
        return DCGM_CHIP_ARCH_UNKNOWN;
    return arch_of_cc((int)(v.i64 >> 16), (int)(v.i64 & 0xffff));
}

int engine_gpu_chip_arch(sim_engine *e, unsigned int gpu, unsigned int *arch)
{
    if (!e || !arch)
        return DCGM_ST_BADPARAM;
    pthread_mutex_lock(&e->lock);
    const engine_entity *ent = engine_find_entity_locked(e, DCGM_FE_GPU, gpu);
    int rc = DCGM_ST_BADPARAM; /* DcgmCacheManager::GetGpuArch: id past the GPUs */
    if (ent) {
        *arch = arch_locked(e, ent, engine_wall_us() - e->t0_us);
        rc = DCGM_ST_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* ---- the node's tables -------------------------------------------------------- */

/* GPUs in id order (the engine's entity list keeps GPUs by ascending id) */
static unsigned int gpus_locked(const sim_engine *e, const engine_entity **out)
{
    unsigned int n = 0;
    for (size_t i = 0; i < e->n_entities && n < DCGM_MAX_NUM_DEVICES; i++)
        if (e->entities[i].group == DCGM_FE_GPU && e->entities[i].id < DCGM_MAX_NUM_DEVICES)
            out[n++] = &e->entities[i];
    return n;
}

static void live_affinity_locked(sim_engine *e, const engine_entity *ent, int64_t t_rel,
                                 unsigned long *mask)
{
    memset(mask, 0, DCGM_AFFINITY_BITMASK_ARRAY_SIZE * sizeof *mask);
    for (int w = 0; w < AFFINITY_WORDS_SAMPLED; w++) {
        sim_value v;
        memset(&v, 0, sizeof v);
        /* a word the driver will not give stays empty, as DCGM leaves it */
        if (vs_sample(e->src, ent->gpu, (unsigned short)(DCGM_FI_DEV_CPU_AFFINITY_0 + w), t_rel, &v) ==
                DCGM_ST_OK &&
            v.kind == SIM_VALUE_OK)
            mask[w] = (unsigned long)v.i64;
    }
}

/* PopulateTopologyAffinity: live GPUs read, fake ones copy the latest live
 * GPU seen before them, others are left out */
static void affinity_locked(sim_engine *e, int64_t t_rel, topo_affinity *out)
{
    const engine_entity *gpus[DCGM_MAX_NUM_DEVICES];
    unsigned int n = gpus_locked(e, gpus);
    int last_live = -1;
    out->count = 0;
    for (unsigned int i = 0; i < n; i++) {
        DcgmEntityStatus_t st = engine_entity_status_locked(e, gpus[i], t_rel);
        unsigned int k = out->count;
        if (st == DcgmEntityStatusOk) {
            live_affinity_locked(e, gpus[i], t_rel, out->row[k].mask);
            last_live = (int)k;
        } else if (st == DcgmEntityStatusFake && last_live >= 0) {
            memcpy(out->row[k].mask, out->row[last_live].mask, sizeof out->row[k].mask);
        } else {
            continue;
        }
        out->row[k].gpu = gpus[i]->id;
        out->count++;
    }
}

/* DCGM_FI_SYSTEM_PCI_TOPOLOGY: every pair of live GPUs */
static int pci_table_locked(sim_engine *e, int64_t t_rel, topo_table *out)
{
    const engine_entity *all[DCGM_MAX_NUM_DEVICES], *live[DCGM_MAX_NUM_DEVICES];
    unsigned long mask[DCGM_MAX_NUM_DEVICES][DCGM_AFFINITY_BITMASK_ARRAY_SIZE];
    unsigned int n = gpus_locked(e, all), m = 0;
    for (unsigned int i = 0; i < n; i++) {
        if (engine_entity_status_locked(e, all[i], t_rel) != DcgmEntityStatusOk)
            continue;
        live_affinity_locked(e, all[i], t_rel, mask[m]);
        live[m++] = all[i];
    }
    out->count = 0;
    if (m < 2)
        return DCGM_ST_NOT_SUPPORTED; /* "two devices not detected" */
    for (unsigned int i = 0; i < m; i++) {
        for (unsigned int j = i + 1; j < m; j++) {
            topo_element *el = &out->el[out->count++];
            memset(el, 0, sizeof *el);
            el->gpu_a = live[i]->id;
            el->gpu_b = live[j]->id;
            el->path = memcmp(mask[i], mask[j], sizeof mask[i]) == 0 ? DCGM_TOPOLOGY_CPU
                                                                    : DCGM_TOPOLOGY_SYSTEM;
        }
    }
    return DCGM_ST_OK;
}

static dcgmGpuTopologyLevel_t nvlink_path_of(unsigned int links, unsigned int max_links)
{
    if (links == 0 || max_links == 0)
        return DCGM_TOPOLOGY_UNINITIALIZED;
    if (links > max_links)
        links = max_links;
    return DCGM_TOPOLOGY_NVLINK1 << (links - 1);
}

/* NvLinkScore: the number of links a path's NvLink bit stands for */
static unsigned int nvlink_score(dcgmGpuTopologyLevel_t path)
{
    uint64_t v = DCGM_TOPOLOGY_PATH_NVLINK(path) >> 8;
    unsigned int width = 0;
    while (v) {
        width++;
        v >>= 1;
    }
    return width;
}

/* PopulateTopologyNvLink with every GPU switched (see the top of the file) */
static int nvlink_table_locked(sim_engine *e, int64_t t_rel, topo_table *out)
{
    const engine_entity *gpus[DCGM_MAX_NUM_DEVICES];
    unsigned int n = gpus_locked(e, gpus);
    uint64_t up[DCGM_MAX_NUM_DEVICES];
    unsigned int up_count[DCGM_MAX_NUM_DEVICES], arch[DCGM_MAX_NUM_DEVICES];
    out->count = 0;
    if (n < 2)
        return DCGM_ST_NOT_SUPPORTED;
    for (unsigned int i = 0; i < n; i++) {
        dcgmNvLinkLinkState_t states[DCGM_NVLINK_MAX_LINKS_PER_GPU];
        up[i] = 0;
        up_count[i] = 0;
        arch[i] = arch_locked(e, gpus[i], t_rel);
        if (engine_nvlink_gpu_states_locked(e, gpus[i]->id, t_rel, states) != DCGM_ST_OK)
            continue;
        for (unsigned int l = 0; l < DCGM_NVLINK_MAX_LINKS_PER_GPU; l++) {
            if (states[l] == DcgmNvLinkLinkStateUp) {
                up[i] |= 1ULL << l;
                up_count[i]++;
            }
        }
    }
    for (unsigned int i = 0; i < n; i++) {
        if (arch[i] < DCGM_CHIP_ARCH_PASCAL)
            continue;
        for (unsigned int j = i + 1; j < n; j++) {
            if (arch[j] < DCGM_CHIP_ARCH_PASCAL)
                continue;
            topo_element *el = &out->el[out->count++];
            el->gpu_a = gpus[i]->id;
            el->gpu_b = gpus[j]->id;
            el->a_to_b_links = up[i];
            el->b_to_a_links = up[j];
            el->path = nvlink_path_of(up_count[i], DCGM_NVLINK_MAX_LINKS_PER_GPU);
        }
    }
    return DCGM_ST_OK;
}

static int has_gpu(const unsigned int *ids, unsigned int n, unsigned int gpu)
{
    for (unsigned int i = 0; i < n; i++)
        if (ids[i] == gpu)
            return 1;
    return 0;
}

/* The GPUs of a group (DCGM_ST_NO_DATA when it has none) */
static int group_gpus_locked(sim_engine *e, dcgmGpuGrp_t group, unsigned int *ids,
                             unsigned int *n)
{
    dcgmGroupEntityPair_t *entities = malloc(DCGM_GROUP_MAX_ENTITIES_V2 * sizeof *entities);
    if (!entities)
        return DCGM_ST_MEMORY;
    unsigned int count = 0;
    int rc = engine_group_entities_locked(e, group, entities, &count);
    *n = 0;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < count; i++)
        if (entities[i].entityGroupId == DCGM_FE_GPU && *n < DCGM_MAX_NUM_DEVICES &&
            !has_gpu(ids, *n, entities[i].entityId))
            ids[(*n)++] = entities[i].entityId;
    free(entities);
    if (rc == DCGM_ST_OK && *n == 0)
        rc = DCGM_ST_NO_DATA;
    return rc;
}

/* HelperGetTopologyIO: the PCIe table within the group, NvLink folded in */
static int group_io_locked(sim_engine *e, dcgmGpuGrp_t group, int64_t t_rel, topo_table *out)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES], n = 0;
    out->count = 0;
    int rc = group_gpus_locked(e, group, ids, &n);
    if (rc != DCGM_ST_OK)
        return rc;
    topo_table *pci = malloc(sizeof *pci), *nvl = malloc(sizeof *nvl);
    if (!pci || !nvl) {
        free(pci);
        free(nvl);
        return DCGM_ST_MEMORY;
    }
    rc = pci_table_locked(e, t_rel, pci);
    if (rc == DCGM_ST_OK && nvlink_table_locked(e, t_rel, nvl) != DCGM_ST_OK)
        rc = DCGM_ST_NOT_SUPPORTED;
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < pci->count; i++) {
        const topo_element *p = &pci->el[i];
        if (!has_gpu(ids, n, p->gpu_a) || !has_gpu(ids, n, p->gpu_b))
            continue;
        topo_element *el = &out->el[out->count++];
        *el = *p;
        el->a_to_b_links = el->b_to_a_links = 0;
        for (unsigned int k = 0; k < nvl->count; k++) {
            if (nvl->el[k].gpu_a == p->gpu_a && nvl->el[k].gpu_b == p->gpu_b) {
                el->path |= nvl->el[k].path;
                el->a_to_b_links = nvl->el[k].a_to_b_links;
                el->b_to_a_links = nvl->el[k].b_to_a_links;
            }
        }
    }
    free(pci);
    free(nvl);
    return rc;
}

/* HelperGetTopologyAffinity: the affinity rows of the group's GPUs */
static int group_affinity_locked(sim_engine *e, dcgmGpuGrp_t group, int64_t t_rel,
                                 topo_affinity *out)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES], n = 0;
    out->count = 0;
    int rc = group_gpus_locked(e, group, ids, &n);
    if (rc != DCGM_ST_OK)
        return rc;
    topo_affinity all;
    affinity_locked(e, t_rel, &all);
    for (unsigned int i = 0; i < all.count; i++)
        if (has_gpu(ids, n, all.row[i].gpu))
            out->row[out->count++] = all.row[i];
    return DCGM_ST_OK;
}

/* ---- dcgmGetDeviceTopology, dcgmGetGroupTopology ------------------------------ */

int engine_device_topology(sim_engine *e, unsigned int gpu, dcgmDeviceTopology_v2 *out)
{
    if (!e || !out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    out->version = dcgmDeviceTopology_version2;
    topo_table *t = malloc(sizeof *t);
    if (!t)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    int rc = group_io_locked(e, DCGM_GROUP_ALL_GPUS, t_rel, t);
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < t->count; i++) {
        const topo_element *el = &t->el[i];
        if (el->gpu_a != gpu && el->gpu_b != gpu)
            continue;
        if (out->numGpus >= DCGM_MAX_NUM_DEVICES - 1)
            break;
        int a_side = el->gpu_a == gpu;
        out->gpuPaths[out->numGpus].gpuId = a_side ? el->gpu_b : el->gpu_a;
        out->gpuPaths[out->numGpus].path = el->path;
        out->gpuPaths[out->numGpus].localNvLinkIds = a_side ? el->a_to_b_links : el->b_to_a_links;
        out->numGpus++;
    }
    if (rc == DCGM_ST_OK) {
        topo_affinity aff;
        rc = group_affinity_locked(e, DCGM_GROUP_ALL_GPUS, t_rel, &aff);
        int found = 0;
        for (unsigned int i = 0; rc == DCGM_ST_OK && i < aff.count && !found; i++) {
            if (aff.row[i].gpu == gpu) {
                memcpy(out->cpuAffinityMask, aff.row[i].mask, sizeof out->cpuAffinityMask);
                found = 1;
            }
        }
        /* no affinity: an id DCGM does not know, or a GPU it cannot reach */
        if (rc == DCGM_ST_OK && !found)
            rc = engine_find_entity_locked(e, DCGM_FE_GPU, gpu) ? DCGM_ST_GPU_IS_LOST
                                                                 : DCGM_ST_BADPARAM;
    }
    pthread_mutex_unlock(&e->lock);
    free(t);
    return rc;
}

/* dcgmGpuTopologyLevelCmpCB: < 0 when a is the faster path.  Any NvLink beats
 * PCIe; more links are faster; a nearer PCIe ancestor is faster. */
static int path_cmp(dcgmGpuTopologyLevel_t a, dcgmGpuTopologyLevel_t b)
{
    dcgmGpuTopologyLevel_t na = DCGM_TOPOLOGY_PATH_NVLINK(a), nb = DCGM_TOPOLOGY_PATH_NVLINK(b);
    dcgmGpuTopologyLevel_t pa = DCGM_TOPOLOGY_PATH_PCI(a), pb = DCGM_TOPOLOGY_PATH_PCI(b);
    if (na && nb)
        return na > nb ? -1 : na < nb ? 1 : 0;
    if (na || nb)
        return na ? -1 : 1;
    return pa < pb ? -1 : pa > pb ? 1 : 0;
}

int engine_group_topology(sim_engine *e, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out)
{
    if (!e || !out)
        return DCGM_ST_BADPARAM;
    memset(out, 0, sizeof *out);
    out->version = dcgmGroupTopology_version2;
    topo_table *t = malloc(sizeof *t);
    if (!t)
        return DCGM_ST_MEMORY;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    int rc = group_io_locked(e, group, t_rel, t);
    if (rc == DCGM_ST_OK || rc == DCGM_ST_NO_DATA) {
        dcgmGpuTopologyLevel_t slowest = DCGM_TOPOLOGY_UNINITIALIZED;
        for (unsigned int i = 0; rc == DCGM_ST_OK && i < t->count; i++)
            if (slowest == DCGM_TOPOLOGY_UNINITIALIZED || path_cmp(slowest, t->el[i].path) < 0)
                slowest = t->el[i].path;
        out->slowestPath = slowest;
        topo_affinity aff;
        rc = group_affinity_locked(e, group, t_rel, &aff);
        int differ = 0;
        for (unsigned int w = 0; rc == DCGM_ST_OK && w < DCGM_AFFINITY_BITMASK_ARRAY_SIZE; w++) {
            unsigned long all = 0;
            for (unsigned int i = 0; i < aff.count; i++) {
                all |= aff.row[i].mask[w];
                if (all != aff.row[i].mask[w])
                    differ = 1;
            }
            out->groupCpuAffinityMask[w] = all;
        }
        out->numaOptimalFlag = differ ? 0 : 1;
    }
    pthread_mutex_unlock(&e->lock);
    free(t);
    return rc;
}

/* ---- dcgmSelectGpusByTopology ---------------------------------------------------- */

typedef struct gpu_list {
    unsigned int n;
    unsigned int id[DCGM_MAX_NUM_DEVICES];
} gpu_list;

static int list_has(const gpu_list *l, unsigned int gpu) { return has_gpu(l->id, l->n, gpu); }

static uint64_t bitmask_of(const gpu_list *l, unsigned int limit)
{
    uint64_t out = 0;
    for (unsigned int i = 0; i < l->n && i < limit; i++)
        out |= 1ULL << l->id[i];
    return out;
}

/* CreateGroupsFromCpuAffinities: input GPUs grouped by identical CPU sets */
static unsigned int affinity_groups(const topo_affinity *aff, const gpu_list *input,
                                    gpu_list *groups)
{
    unsigned int ng = 0;
    gpu_list matched = { 0 };
    for (unsigned int i = 0; i < aff->count; i++) {
        unsigned int gpu = aff->row[i].gpu;
        if (list_has(&matched, gpu))
            continue;
        matched.id[matched.n++] = gpu;
        if (!list_has(input, gpu))
            continue;
        gpu_list *g = &groups[ng++];
        g->n = 0;
        g->id[g->n++] = gpu;
        for (unsigned int j = i + 1; j < aff->count; j++) {
            if (!list_has(input, aff->row[j].gpu))
                continue;
            if (memcmp(aff->row[i].mask, aff->row[j].mask, sizeof aff->row[i].mask) == 0) {
                g->id[g->n++] = aff->row[j].gpu;
                if (!list_has(&matched, aff->row[j].gpu))
                    matched.id[matched.n++] = aff->row[j].gpu;
            }
        }
    }
    return ng;
}

/* CombineAffinityGroups: largest groups first until enough GPUs */
static int combine_groups(const gpu_list *groups, unsigned int ng, unsigned int want,
                          gpu_list *out)
{
    int used[DCGM_MAX_NUM_DEVICES] = { 0 };
    int remaining = (int)want;
    out->n = 0;
    while (remaining > 0) {
        unsigned int before = out->n, largest_size = 0, largest = 0;
        for (unsigned int i = 0; i < ng; i++) {
            if (used[i])
                continue;
            if (groups[i].n > largest_size) {
                largest_size = groups[i].n;
                largest = i;
                if ((int)largest_size >= remaining)
                    break;
            }
        }
        used[largest] = 1;
        for (unsigned int i = 0; remaining > 0 && i < largest_size; i++) {
            if (out->n < DCGM_MAX_NUM_DEVICES)
                out->id[out->n++] = groups[largest].id[i];
            remaining--;
        }
        if (out->n == before)
            return DCGM_ST_INSUFFICIENT_SIZE;
    }
    return DCGM_ST_OK;
}

/* SetIOConnectionLevels + RecordBestPath: pairs within one CPU group by
 * NvLink score, best level first, GPUs taken in pair order */
static unsigned int best_path(const gpu_list *group, const topo_table *t, unsigned int want,
                              gpu_list *best)
{
    unsigned int highest = 0;
    for (unsigned int i = 0; i < t->count; i++)
        if (list_has(group, t->el[i].gpu_a) && list_has(group, t->el[i].gpu_b)) {
            unsigned int s = nvlink_score(t->el[i].path);
            if (s > highest)
                highest = s;
        }
    unsigned int score = 0;
    best->n = 0;
    for (unsigned int level = highest; best->n < want && level > 0; level--) {
        for (unsigned int i = 0; i < t->count && best->n < want; i++) {
            const topo_element *el = &t->el[i];
            if (!list_has(group, el->gpu_a) || !list_has(group, el->gpu_b) ||
                nvlink_score(el->path) != level)
                continue;
            if (!list_has(best, el->gpu_a)) {
                best->id[best->n++] = el->gpu_a;
                score += level;
            }
            if (best->n >= want)
                break;
            if (!list_has(best, el->gpu_b)) {
                best->id[best->n++] = el->gpu_b;
                score += level;
            }
        }
    }
    return score;
}

static int select_locked(sim_engine *e, const gpu_list *input, unsigned int want, int64_t t_rel,
                         uint64_t *output)
{
    if (input->n <= want) {
        /* not enough to be picky (SelectGpusByTopologyImpl) */
        *output = bitmask_of(input, want);
        if (input->n < want)
            return DCGM_ST_INSUFFICIENT_SIZE;
    }
    topo_affinity aff;
    affinity_locked(e, t_rel, &aff);
    gpu_list *groups = calloc(DCGM_MAX_NUM_DEVICES, sizeof *groups);
    topo_table *t = malloc(sizeof *t);
    if (!groups || !t) {
        free(groups);
        free(t);
        return DCGM_ST_MEMORY;
    }
    unsigned int ng = affinity_groups(&aff, input, groups);
    unsigned int candidates[DCGM_MAX_NUM_DEVICES], nc = 0;
    for (unsigned int i = 0; i < ng; i++)
        if (groups[i].n >= want)
            candidates[nc++] = i;
    int rc = DCGM_ST_OK;
    if (nc == 1 && groups[candidates[0]].n == want) {
        *output = bitmask_of(&groups[candidates[0]], want);
    } else if (nc == 0) {
        gpu_list combined;
        rc = combine_groups(groups, ng, want, &combined);
        if (rc == DCGM_ST_OK)
            *output = bitmask_of(&combined, want);
    } else if (nvlink_table_locked(e, t_rel, t) == DCGM_ST_OK) {
        /* MatchByIO: the candidate group with the best NvLink score, the
         * first of equals */
        unsigned int best_score = 0, best_index = 0;
        gpu_list best[DCGM_MAX_NUM_DEVICES];
        for (unsigned int c = 0; c < nc; c++) {
            unsigned int s = best_path(&groups[candidates[c]], t, want, &best[c]);
            if (s > best_score) {
                best_score = s;
                best_index = c;
            }
        }
        *output = bitmask_of(&best[best_index], want);
    } else {
        *output = bitmask_of(&groups[candidates[0]], want);
    }
    free(groups);
    free(t);
    return rc;
}

int engine_select_gpus_by_topology(sim_engine *e, uint64_t input, unsigned int want,
                                   uint64_t hints, uint64_t *output)
{
    if (!e || !output)
        return DCGM_ST_BADPARAM;
    *output = 0;
    gpu_list list = { 0 };
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    if (input == 0) {
        /* every GPU that is active (TranslateBitmapToGpuVector) */
        const engine_entity *gpus[DCGM_MAX_NUM_DEVICES];
        unsigned int n = gpus_locked(e, gpus);
        for (unsigned int i = 0; i < n; i++) {
            DcgmEntityStatus_t st = engine_entity_status_locked(e, gpus[i], t_rel);
            if (st == DcgmEntityStatusOk || st == DcgmEntityStatusFake)
                list.id[list.n++] = gpus[i]->id;
        }
    } else {
        for (unsigned int gpu = 0; gpu < 64; gpu++)
            if ((input >> gpu) & 1ULL) {
                if (list.n >= DCGM_MAX_NUM_DEVICES) {
                    pthread_mutex_unlock(&e->lock);
                    return DCGM_ST_BADPARAM;
                }
                list.id[list.n++] = gpu;
            }
    }
    pthread_mutex_unlock(&e->lock);
    if (!(hints & DCGM_TOPO_HINT_F_IGNOREHEALTH)) {
        /* RemoveUnhealthyGpus: a GPU with a failing incident in any system */
        uint64_t unhealthy = 0;
        int hrc = engine_health_unhealthy_gpus(e, list.id, list.n, &unhealthy);
        if (hrc == DCGM_ST_OK && unhealthy) {
            gpu_list kept = { 0 };
            for (unsigned int i = 0; i < list.n; i++)
                if (list.id[i] >= 64 || !((unhealthy >> list.id[i]) & 1ULL))
                    kept.id[kept.n++] = list.id[i];
            list = kept;
        }
    }
    pthread_mutex_lock(&e->lock);
    int rc = select_locked(e, &list, want, engine_wall_us() - e->t0_us, output);
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* ---- dcgmGetNvLinkP2PStatus -------------------------------------------------------- */

/* whether the GPU has NvLinks at all (whatever their state) */
static int has_nvlinks_locked(sim_engine *e, const engine_entity *ent)
{
    if (ent->fake || ent->gpu == ENGINE_NO_GPU)
        return 0;
    for (unsigned int l = 0; l < DCGM_NVLINK_MAX_LINKS_PER_GPU; l++)
        if (vs_nvlink_state(e->src, ent->gpu, l) != VS_LINK_NONE)
            return 1;
    return 0;
}

int engine_nvlink_p2p_status(sim_engine *e, dcgmNvLinkP2PStatus_v1 *status)
{
    if (!e || !status)
        return DCGM_ST_BADPARAM;
    if (status->version != dcgmNvLinkP2PStatus_version1)
        return DCGM_ST_VER_MISMATCH;
    pthread_mutex_lock(&e->lock);
    int64_t t_rel = engine_wall_us() - e->t0_us;
    const engine_entity *gpus[DCGM_MAX_NUM_DEVICES];
    unsigned int n_gpus = gpus_locked(e, gpus);
    int all = status->numGpus == 0;
    unsigned int n = all || status->numGpus > n_gpus ? n_gpus : status->numGpus;
    int rc = DCGM_ST_OK;
    for (unsigned int i = 0; i < n; i++) {
        dcgmNvLinkGpuLinkP2PStatus_v1 *row = &status->gpus[i];
        if (all)
            row->entityId = gpus[i]->id;
        const engine_entity *src = engine_find_entity_locked(e, DCGM_FE_GPU, row->entityId);
        if (!src) {
            status->numGpus = i;
            rc = DCGM_ST_BADPARAM;
            break;
        }
        for (unsigned int j = 0; j < DCGM_MAX_NUM_DEVICES; j++)
            if (j < n_gpus)
                row->linkStatus[j] = DcgmNvLinkP2pStatusNotSupported;
        /* only GPUs the driver has are asked about (GetActiveGpuHandles) */
        if (engine_entity_status_locked(e, src, t_rel) != DcgmEntityStatusOk)
            continue;
        for (unsigned int j = 0; j < n_gpus; j++) {
            const engine_entity *dst = gpus[j];
            if (dst == src || engine_entity_status_locked(e, dst, t_rel) != DcgmEntityStatusOk)
                continue;
            row->linkStatus[dst->id] = has_nvlinks_locked(e, src) && has_nvlinks_locked(e, dst)
                                           ? DcgmNvLinkP2pStatusOK
                                           : DcgmNvLinkP2pStatusNotSupported;
        }
    }
    if (rc == DCGM_ST_OK && all)
        status->numGpus = n;
    pthread_mutex_unlock(&e->lock);
    return rc;
}
