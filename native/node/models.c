/*
 * models.c -- the GPU models the simulator can put in a node, and which
 * fields each of them has.
 *
 * Numbers are the published ones where NVIDIA publishes them (memory size,
 * power limits, clocks, NVLink count) and typical nvidia-smi readings where
 * it does not (reserved framebuffer, idle power, thermal thresholds, VBIOS
 * strings); dcgm_collector/engine/scenarios/README.md lists the choices.  A field that a real
 * board of the model answers "not supported" for is not supported here:
 * the point is that a collector meets the same gaps it meets on a node.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "node_internal.h"

/* the driver the H200 was recorded on (reference/hardware/h200-2026-11-30/attrs.json) */
static const sim_driver h200_recorded_driver = {"580.159.04", "13.580.159.04", 13000};

static const sim_model model_table[] = {
    {
        .key = "H100",
        .aliases = {"H100-SXM", "H100 SXM 80GB", NULL},
        .name = "NVIDIA H100 80GB HBM3",
        .brand = "NVIDIA",
        .vbios = "96.00.99.00.01",
        .inforom_image = "G520.0200.00.05",
        .inforom_oem = "2.1",
        .inforom_ecc = "7.0",
        .pci_device_id = 0x2330, .pci_subsys_id = 0x16C110DE,
        .cc_major = 9, .cc_minor = 0,
        .fb_total_mib = 81559, .fb_reserved_mib = 329, .bar1_total_mib = 131072,
        .power_min_w = 200, .power_max_w = 700, .power_default_w = 700,
        .idle_w = 70, .full_w = 740,
        .sm_clock_idle = 345, .sm_clock_max = 1980,
        .mem_clock_idle = 2619, .mem_clock_max = 2619,
        .video_clock_idle = 765, .video_clock_max = 1755,
        .temp_slowdown = 89, .temp_shutdown = 92, .temp_gpu_max_op = 87, .temp_mem_max_op = 95,
        .thermal_r = 0.057,
        .idle_pstate = 0,
        .pcie_gen = 5, .pcie_width = 16, .pcie_bytes_per_s = 50e9,
        .nvlinks = 18, .nvlink_bytes_per_s = 25e9,
        .nvdec = 7, .nvjpg = 7, .nvofa = 1,
        .has_mem_temp = true, .mig_capable = true, .row_remap = true, .page_retire = false,
        .gpm = true,
        .power_averaged = true,
    },
    {
        /*
         * Every value here but inforom_oem/ecc, idle-to-load power, the
         * thermal constant and the NVDEC/NVJPG/NVOFA counts is a reading from
         * one H200 SXM through NVML (reference/hardware/h200-2026-11-30/).
         * That card sat alone in its host and NVML answered NOT_SUPPORTED
         * for every NvLink query, so the model has no links; a node with
         * more than one H200 is an HGX board and gets the variant with
         * links (sim_model_on_board).
         */
        .key = "H200",
        .aliases = {"H200-SXM", "H200 SXM 141GB", NULL},
        .name = "NVIDIA H200",
        .brand = "NVIDIA",
        .vbios = "96.00.A5.00.1A",
        .inforom_image = "G520.0282.02.02",
        .inforom_oem = "2.1",
        .inforom_ecc = "7.0",
        .pci_device_id = 0x2335, .pci_subsys_id = 0x18BF10DE,
        .cc_major = 9, .cc_minor = 0,
        .fb_total_mib = 143771, .fb_reserved_mib = 616, .bar1_total_mib = 262144,
        .power_min_w = 200, .power_max_w = 700, .power_default_w = 700,
        .idle_w = 78, .full_w = 740, .context_w = 121,
        .sm_clock_idle = 345, .sm_clock_max = 1980,
        .mem_clock_idle = 3201, .mem_clock_max = 3201,
        .video_clock_idle = 765, .video_clock_max = 1545,
        .temp_slowdown = 89, .temp_shutdown = 95, .temp_gpu_max_op = 87, .temp_mem_max_op = 95,
        .thermal_r = 0.045,
        /*
         * Fitted to the recorded phase medians: GPU 37-38 C idle, 60 tensor
         * (700 W), 47 memory-bound copies (475 W), 61 fp32 (687 W); memory
         * 40, 51, 58, 49.  The GPU reached 19 of its 22 C rise within 1 s
         * and the rest over ~5 s; the memory 5 of 12 C in 1 s, the rest
         * over ~15 s.
         */
        .heat_gpu = {.base_c = 33.0, .r = 0.0411, .dram_c = -6.3,
                     .fast_share = 0.85, .tau_fast_s = 0.35, .tau_slow_s = 2.5},
        .heat_mem = {.base_c = 38.2, .r = 0.01475, .dram_c = 14.5,
                     .fast_share = 0.45, .tau_fast_s = 0.35, .tau_slow_s = 6.0},
        .idle_pstate = 0,
        .pcie_gen = 5, .pcie_width = 16, .pcie_bytes_per_s = 50e9,
        .nvlinks = 0, .nvlink_bytes_per_s = 0,
        .board_nvlinks = 18, .board_nvlink_bytes_per_s = 25e9,   /* HGX, at the H100's per-link rate */
        .nvdec = 7, .nvjpg = 7, .nvofa = 1,
        .has_mem_temp = true, .mig_capable = true, .row_remap = true, .page_retire = false,
        .gpm = true,
        .power_averaged = true,
        .recorded_driver = &h200_recorded_driver,
    },
    {
        .key = "A100",
        .aliases = {"A100-SXM4-80GB", "A100 SXM 80GB", NULL},
        .name = "NVIDIA A100-SXM4-80GB",
        .brand = "NVIDIA",
        .vbios = "92.00.45.00.06",
        .inforom_image = "G506.0212.00.02",
        .inforom_oem = "2.1",
        .inforom_ecc = "6.16",
        .pci_device_id = 0x20B2, .pci_subsys_id = 0x147F10DE,
        .cc_major = 8, .cc_minor = 0,
        .fb_total_mib = 81920, .fb_reserved_mib = 567, .bar1_total_mib = 131072,
        .power_min_w = 100, .power_max_w = 400, .power_default_w = 400,
        .idle_w = 60, .full_w = 420,
        .sm_clock_idle = 210, .sm_clock_max = 1410,
        .mem_clock_idle = 1593, .mem_clock_max = 1593,
        .video_clock_idle = 795, .video_clock_max = 1290,
        .temp_slowdown = 89, .temp_shutdown = 92, .temp_gpu_max_op = 85, .temp_mem_max_op = 95,
        .thermal_r = 0.0875,
        .idle_pstate = 0,
        .pcie_gen = 4, .pcie_width = 16, .pcie_bytes_per_s = 25e9,
        .nvlinks = 12, .nvlink_bytes_per_s = 25e9,
        .nvdec = 5, .nvjpg = 1, .nvofa = 1,
        .has_mem_temp = true, .mig_capable = true, .row_remap = true, .page_retire = false,
        .gpm = false,
        .power_averaged = false,
    },
    {
        .key = "L4",
        .aliases = {"L4-PCIE", NULL, NULL},
        .name = "NVIDIA L4",
        .brand = "NVIDIA",
        .vbios = "95.04.29.00.06",
        .inforom_image = "G193.0200.00.01",
        .inforom_oem = "2.1",
        .inforom_ecc = "6.16",
        .pci_device_id = 0x27B8, .pci_subsys_id = 0x16CA10DE,
        .cc_major = 8, .cc_minor = 9,
        .fb_total_mib = 23034, .fb_reserved_mib = 434, .bar1_total_mib = 32768,
        .power_min_w = 40, .power_max_w = 72, .power_default_w = 72,
        .idle_w = 16, .full_w = 76,
        .sm_clock_idle = 210, .sm_clock_max = 2040,
        .mem_clock_idle = 405, .mem_clock_max = 6251,
        .video_clock_idle = 765, .video_clock_max = 1770,
        .temp_slowdown = 92, .temp_shutdown = 95, .temp_gpu_max_op = 87, .temp_mem_max_op = 0,
        .thermal_r = 0.55,
        .idle_pstate = 8,
        .pcie_gen = 4, .pcie_width = 16, .pcie_bytes_per_s = 25e9,
        .nvlinks = 0, .nvlink_bytes_per_s = 0,
        .nvdec = 4, .nvjpg = 4, .nvofa = 1,
        .has_mem_temp = false, .mig_capable = false, .row_remap = true, .page_retire = false,
        .gpm = false,
        .power_averaged = true,
    },
    {
        .key = "T4",
        .aliases = {"Tesla T4", NULL, NULL},
        .name = "Tesla T4",
        .brand = "Tesla",
        .vbios = "90.04.96.00.02",
        .inforom_image = "G183.0200.00.02",
        .inforom_oem = "1.1",
        .inforom_ecc = "5.0",
        .pci_device_id = 0x1EB8, .pci_subsys_id = 0x12A210DE,
        .cc_major = 7, .cc_minor = 5,
        .fb_total_mib = 15360, .fb_reserved_mib = 257, .bar1_total_mib = 256,
        .power_min_w = 60, .power_max_w = 70, .power_default_w = 70,
        .idle_w = 10, .full_w = 74,
        .sm_clock_idle = 300, .sm_clock_max = 1590,
        .mem_clock_idle = 405, .mem_clock_max = 5001,
        .video_clock_idle = 540, .video_clock_max = 1470,
        .temp_slowdown = 93, .temp_shutdown = 96, .temp_gpu_max_op = 85, .temp_mem_max_op = 0,
        .thermal_r = 0.57,
        .idle_pstate = 8,
        .pcie_gen = 3, .pcie_width = 16, .pcie_bytes_per_s = 12e9,
        .nvlinks = 0, .nvlink_bytes_per_s = 0,
        .nvdec = 2, .nvjpg = 0, .nvofa = 0,
        .has_mem_temp = false, .mig_capable = false, .row_remap = false, .page_retire = true,
        .gpm = false,
        .power_averaged = false,
    },
};

#define MODEL_COUNT (sizeof model_table / sizeof model_table[0])

static bool model_name_matches(const sim_model *model, const char *name)
{
    if (strcasecmp(model->key, name) == 0 || strcasecmp(model->name, name) == 0)
        return true;
    for (size_t i = 0; i < sizeof model->aliases / sizeof model->aliases[0]; i++) {
        if (model->aliases[i] != NULL && strcasecmp(model->aliases[i], name) == 0)
            return true;
    }
    return false;
}

const sim_model *sim_model_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < MODEL_COUNT; i++) {
        if (model_name_matches(&model_table[i], name))
            return &model_table[i];
    }
    return NULL;
}

/*
 * Each model as it sits on a baseboard with others of its kind: the table
 * entry with its board_nvlinks.  Built once from the table, so the two never drift.
 */
static sim_model on_board[MODEL_COUNT];
static pthread_once_t on_board_once = PTHREAD_ONCE_INIT;

static void make_on_board(void)
{
    for (size_t i = 0; i < MODEL_COUNT; i++) {
        on_board[i] = model_table[i];
        on_board[i].nvlinks = model_table[i].board_nvlinks;
        on_board[i].nvlink_bytes_per_s = model_table[i].board_nvlink_bytes_per_s;
    }
}

const sim_model *sim_model_on_board(const sim_model *model, unsigned int gpus_of_model)
{
    bool in_table = model >= model_table && model < model_table + MODEL_COUNT;
    if (!in_table || gpus_of_model < 2 || model->board_nvlinks == 0)
        return model;
    pthread_once(&on_board_once, make_on_board);
    return &on_board[model - model_table];
}

const sim_driver *sim_default_driver(void)
{
    static const sim_driver fallback = {SIM_DRIVER_VERSION, SIM_NVML_VERSION, SIM_CUDA_DRIVER_VERSION};
    return &fallback;
}

const sim_model *sim_model_default(void)
{
    return &model_table[0];
}

const char *sim_model_known_names(void)
{
    return "H100, H200, A100, L4, T4";
}

/* ---- per-lane NVLink fields ---------------------------------------------- */

/*
 * DCGM numbers the per-lane NVLink counters in three blocks (lanes 0-5,
 * 6-11 and 12-17, the last split again); the table maps each id to its lane.
 */
static int nvlink_lane_in_block(unsigned short id, unsigned short first, int first_lane, int lanes)
{
    if (id >= first && id < first + lanes)
        return first_lane + (id - first);
    return -1;
}

int sim_model_nvlink_lane(unsigned short id)
{
    static const struct { unsigned short first; int lane, count; } blocks[] = {
        {400, 0, 6}, {410, 0, 6}, {420, 0, 6}, {430, 0, 6}, {440, 0, 6},
        {451, 6, 6}, {457, 6, 6}, {463, 6, 6}, {469, 6, 6}, {475, 6, 6},
        {406, 12, 3}, {416, 12, 3}, {426, 12, 3}, {436, 12, 3}, {446, 12, 3},
        {481, 15, 3}, {484, 15, 3}, {487, 15, 3}, {491, 15, 3}, {494, 15, 3},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        int lane = nvlink_lane_in_block(id, blocks[i].first, blocks[i].lane, blocks[i].count);
        if (lane >= 0)
            return lane;
    }
    return -1;
}

/* ---- which fields a model has --------------------------------------------- */

static bool model_supports_nvlink_field(const sim_model *model, unsigned short id)
{
    if (model->nvlinks == 0)
        return false;
    int lane = sim_model_nvlink_lane(id);
    if (lane >= 0)
        return lane < model->nvlinks;
    switch (id) {
    case 64:  /* P2P status */
    case 409: case 419: case 429: case 439: case 449: case 450:
    case 497: case 498: case 499:
    case 1011: case 1012:
        return true;
    default:
        break;
    }
    if (id >= 1040 && id <= 1075)
        return (id - 1040) / 2 < model->nvlinks;
    return false;
}

static bool model_supports_profiling_field(const sim_model *model, unsigned short id)
{
    if (id >= 1001 && id <= 1010)
        return true;
    if (id >= 1013 && id <= 1016)
        return true;
    if (id >= 1017 && id <= 1024)
        return id - 1017 < model->nvdec;
    if (id >= 1025 && id <= 1032)
        return id - 1025 < model->nvjpg;
    if (id >= 1033 && id <= 1034)
        return id - 1033 < model->nvofa;
    return false;
}

/*
 * Fields every simulated model answers: identity, clocks, power, thermals,
 * utilisation, framebuffer, ECC totals, PCIe, violation counters.
 * Deliberately absent on all models (they answer NOT_SUPPORTED):
 *   120 autoboost, 191 fan speed (all five boards are passively cooled),
 *   81 power inforom version, 130 supported clocks (a binary blob that
 *   sim_value cannot carry), 170-175 fabric manager, 285-287 C2C,
 *   334-346 SHM/CBU/SRAM ECC, 571-577 platform info, vGPU fields (bare metal),
 *   except 526 vGPU licence status: DCGM asks NVML for the GPU's licensable
 *   features, and a bare-metal GPU answers that it has no GRID licence, which
 *   DCGM stores as 0 (DcgmCacheManager.cpp, DCGM_FI_DEV_VGPU_LICENSE_STATUS).
 */
static bool model_supports_common_field(unsigned short id)
{
    switch (id) {
    case 50: case 51: case 52: case 53: case 54: case 55: case 56: case 57: case 58: case 59:
    case 63: case 65: case 66: case 68: case 70: case 71: case 72: case 73: case 74:
    case 80: case 82: case 83: case 84: case 85: case 86: case 87: case 88: case 89:
    case 90: case 92: case 93: case 94:
    case 100: case 101: case 102: case 110: case 111: case 112: case 113: case 114: case 115:
    case 150: case 152: case 153: case 155: case 156: case 157:
    case 158: case 159: case 160: case 161: case 162: case 163: case 164:
    case 190: case 200: case 201: case 202: case 203: case 204: case 206: case 207: case 230:
    case 235: case 236: case 237: case 238:
    case 240: case 241: case 242: case 243: case 244: case 245: case 246: case 247:
    case 250: case 251: case 252: case 253: case 254:
    case 300: case 301:
    case 310: case 311: case 312: case 313:
    case 314: case 315: case 316: case 317: case 318: case 319: case 320: case 321:
    case 324: case 325: case 326: case 327: case 328: case 329: case 330: case 331:
    case 500: case 526:
        return true;
    default:
        return false;
    }
}

bool sim_model_supports(const sim_model *model, unsigned int mig_instances,
                        const dcgm_field_meta_t *meta)
{
    if (model == NULL || meta == NULL)
        return false;
    unsigned short id = meta->fieldId;
    switch (id) {
    case 140: case 151:
        return model->has_mem_temp;
    case 67: case 69:
        return model->mig_capable;
    case 322: case 323: case 332: case 333: /* texture ECC: Volta/Turing only */
        return model->page_retire;
    case 390: case 391: case 392:
        return model->page_retire;
    case 385: case 386: case 387: case 388: case 389:
    case 393: case 394: case 395: case 396:
        return model->row_remap;
    default:
        break;
    }
    (void)mig_instances;
    if (model_supports_common_field(id))
        return true;
    if (id >= 1000 && id < 1100) {
        if (id == 1011 || id == 1012 || (id >= 1040 && id <= 1075))
            return model_supports_nvlink_field(model, id);
        return model_supports_profiling_field(model, id);
    }
    if (id == 64 || (id >= 400 && id <= 499))
        return model_supports_nvlink_field(model, id);
    return false;
}

/* ---- workloads ---------------------------------------------------------- */

static const char *const workload_names[SIM_WL_COUNT] = {
    [SIM_WL_IDLE] = "idle",
    [SIM_WL_TRAINING] = "training",
    [SIM_WL_SPIKES] = "spikes",
    [SIM_WL_MEMORY_LEAK] = "memory_leak",
    [SIM_WL_THERMAL_RUNAWAY] = "thermal_runaway",
    [SIM_WL_TENSOR] = "tensor",
    [SIM_WL_MEMORY_BOUND] = "memory_bound",
    [SIM_WL_FP32] = "fp32",
    [SIM_WL_IDLE_CONTEXT] = "idle_context",
    [SIM_WL_REPLAY] = "replay",
};

const char *sim_workload_name(sim_workload_kind kind)
{
    return (unsigned)kind < SIM_WL_COUNT ? workload_names[kind] : "?";
}

int sim_workload_from_name(const char *name, sim_workload_kind *out)
{
    if (name == NULL || out == NULL)
        return -1;
    for (int i = 0; i < SIM_WL_COUNT; i++) {
        if (strcasecmp(name, workload_names[i]) == 0) {
            *out = (sim_workload_kind)i;
            return 0;
        }
    }
    return -1;
}

const char *sim_workload_known_names(void)
{
    return "idle, training, spikes, memory_leak, thermal_runaway, tensor, memory_bound, fp32, idle_context, replay";
}

void sim_workload_defaults(sim_workload_kind kind, sim_workload *out)
{
    if (out == NULL)
        return;
    *out = (sim_workload){
        .kind = kind,
        .utilization = 0.96,
        .fb_used = 0.72,
        .spike_period_s = 5.0,
        .spike_length_s = 0.3,
        .spike_utilization = 1.0,
        .leak_rate_mib_s = 200.0,
        .heat_rate_c_s = 0.4,
    };
    switch (kind) {
    case SIM_WL_IDLE:
        out->utilization = 0.0;
        out->fb_used = 0.0;
        break;
    case SIM_WL_IDLE_CONTEXT:
        /* the context's own allocations, ~0.5 GiB */
        out->utilization = 0.0;
        out->fb_used = 0.004;
        break;
    case SIM_WL_SPIKES:
        out->utilization = 0.05;
        out->fb_used = 0.30;
        break;
    case SIM_WL_MEMORY_LEAK:
        out->utilization = 0.60;
        out->fb_used = 0.20;
        break;
    case SIM_WL_REPLAY:
        /* what the trace does not say: a lightly used card (the trace's utilisation drives the rest) */
        out->utilization = 0.0;
        out->fb_used = 0.03;
        break;
    case SIM_WL_TENSOR:
    case SIM_WL_MEMORY_BOUND:
    case SIM_WL_FP32:
        /* one process with a few GiB of operands: the recording's ~1 GiB and up */
        out->utilization = 1.0;
        out->fb_used = 0.03;
        break;
    default:
        break;
    }
}
