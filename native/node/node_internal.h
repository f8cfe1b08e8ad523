/*
 * node_internal.h -- private to the node's sources (native/node/); the
 * interface is node.h.
 *
 * The node is split three ways: models.c knows what each GPU model is
 * (limits, clocks, which fields it has), scenario.c turns a spec into the
 * per-GPU plan (model, workloads over time, events), and node.c runs the
 * physics and answers sim_node_sample.  Nothing here is exported.
 */
#ifndef DCGM_SIM_NODE_INTERNAL_H
#define DCGM_SIM_NODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "node.h"

#define NODE_HIDDEN __attribute__((visibility("hidden")))

/* The node computes its state on a grid of 100 ms steps (node.c); readings hold over a step. */
#define SIM_STEP_US 100000LL
#define SIM_POWER_AVERAGE_STEPS 10  /* 1 s of 100 ms steps */
#define SIM_DEFAULT_SEED 42ULL
#define SIM_DRIVER_VERSION "550.54.15"
#define SIM_NVML_VERSION "12.550.54.15"
#define SIM_CUDA_DRIVER_VERSION 12040

/* ---- GPU models (models.c) ---------------------------------------------- */

/* A driver install: what fields 1, 2 and 5 read. */
typedef struct sim_driver {
    const char *version;        /* DCGM_FI_DRIVER_VERSION */
    const char *nvml_version;
    int cuda_version;           /* 1000 * major + 10 * minor */
} sim_driver;

/* The driver of a node whose GPUs name none (SIM_DRIVER_VERSION, ...). */
NODE_HIDDEN const sim_driver *sim_default_driver(void);

typedef struct sim_model {
    const char *key;            /* short name used in scenarios, e.g. "H100" */
    const char *aliases[3];     /* other accepted spellings, NULL-terminated */
    const char *name;           /* DCGM_FI_DEV_NAME, as NVML reports it */
    const char *brand;
    const char *vbios;
    const char *inforom_image;
    const char *inforom_oem;
    const char *inforom_ecc;
    unsigned int pci_device_id;
    unsigned int pci_subsys_id;
    int cc_major, cc_minor;
    int fb_total_mib, fb_reserved_mib, bar1_total_mib;
    double power_min_w, power_max_w, power_default_w;
    double idle_w;              /* board power at 0 % utilisation */
    double full_w;              /* power a 100 % load would draw uncapped */
    double context_w;           /* idle with a context open (0: 1.55 x idle_w) */
    int sm_clock_idle, sm_clock_max;
    int mem_clock_idle, mem_clock_max;
    int video_clock_idle, video_clock_max;
    int temp_slowdown, temp_shutdown, temp_gpu_max_op, temp_mem_max_op;
    double thermal_r;           /* degrees C above ambient per watt */
    /*
     * Heat fitted to a recording (all zero: the generic first-order lag
     * above).  Temperature = base + r * power + dram * DRAM activity (0-1),
     * approached through two lags: a fast share with its own time constant
     * and the rest with a slow one.  GPU and memory each have their own.
     */
    struct sim_heat {
        double base_c, r, dram_c;
        double fast_share, tau_fast_s, tau_slow_s;
    } heat_gpu, heat_mem;
    int idle_pstate;
    int pcie_gen, pcie_width;
    double pcie_bytes_per_s;    /* one direction, usable */
    int nvlinks;                /* 0 on PCIe-only parts */
    double nvlink_bytes_per_s;  /* per link, one direction */
    int nvdec, nvjpg, nvofa;
    bool has_mem_temp;
    bool mig_capable;
    bool row_remap;             /* Ampere and later remap rows ... */
    bool page_retire;           /* ... older parts retire pages instead */
    bool gpm;                   /* Hopper GPM metrics (field 94) */
    /* Power usage (field 155) is the last second's average, not the instant:
     * NVML's rule for Ampere and later except GA100 (the H200 recording's
     * power usage equals its POWER_AVERAGE field and trails the instant). */
    bool power_averaged;
    /* NvLinks when the GPU shares the node with another of its model (0: as alone): a
     * recording's card may have sat alone while the part sits on a baseboard otherwise */
    int board_nvlinks;
    double board_nvlink_bytes_per_s;
    /* the driver the model's readings were recorded on; a node of such GPUs only runs it */
    const sim_driver *recorded_driver;
} sim_model;

NODE_HIDDEN const sim_model *sim_model_find(const char *name);
/* Comma separated list of the known model keys, for error messages. */
NODE_HIDDEN const char *sim_model_known_names(void);
NODE_HIDDEN const sim_model *sim_model_default(void);
/*
 * The model as it sits in a node with gpus_of_model GPUs of it: with company,
 * a model with board_nvlinks has that many links (an H200 on an HGX board);
 * otherwise the model itself.
 */
NODE_HIDDEN const sim_model *sim_model_on_board(const sim_model *model, unsigned int gpus_of_model);
/* Whether a GPU of this model answers the field (GPU-level fields only). */
NODE_HIDDEN bool sim_model_supports(const sim_model *model, unsigned int mig_instances,
                                    const dcgm_field_meta_t *meta);
/* Lane index of a per-lane NVLink field (400-496), or -1. */
NODE_HIDDEN int sim_model_nvlink_lane(unsigned short fieldId);

/* ---- workloads ------------------------------------------------------------ */

typedef enum sim_workload_kind {
    SIM_WL_IDLE = 0,
    SIM_WL_TRAINING,
    SIM_WL_SPIKES,
    SIM_WL_MEMORY_LEAK,
    SIM_WL_THERMAL_RUNAWAY,
    SIM_WL_TENSOR,              /* dense bf16 matrix products back to back */
    SIM_WL_MEMORY_BOUND,        /* device-to-device copies back to back */
    SIM_WL_FP32,                /* fp32 matrix products, no tensor cores */
    SIM_WL_IDLE_CONTEXT,        /* a process holds a context, no kernel runs */
    SIM_WL_REPLAY,              /* a recorded trace played back (replay.c) */
    SIM_WL_COUNT
} sim_workload_kind;

/* ---- recorded traces (replay.c) ------------------------------------------- */

typedef struct sim_trace sim_trace;

/*
 * Opens a file a user or another process may have placed, for reading: without
 * blocking (a FIFO would wait for a writer for ever), and only if it is a
 * regular file.  NULL on failure, with *why saying what is wrong.
 */
NODE_HIDDEN FILE *sim_open_regular(const char *path, const char **why);

/*
 * Reads a trace CSV (see replay.c for its columns).  On failure returns a
 * DCGM_ST_* code and writes one line naming path:line and the problem.
 */
NODE_HIDDEN int sim_trace_load(const char *path, sim_trace **out, char *err, size_t errlen);
NODE_HIDDEN void sim_trace_free(sim_trace *trace);
/* Whether the trace has a column for the field. */
NODE_HIDDEN bool sim_trace_has(const sim_trace *trace, unsigned short fieldId);
/*
 * The field's value t_us after the replay started: the last row at or
 * before t (after the last row: that row's value, or from the top again
 * when looping).  False when the trace has no such column or no value yet.
 */
NODE_HIDDEN bool sim_trace_value(const sim_trace *trace, unsigned short fieldId, int64_t t_us, bool loop,
                                 double *out);

typedef struct sim_workload {
    sim_workload_kind kind;
    double utilization;         /* 0..1, steady (or between spikes) */
    double fb_used;             /* 0..1 of usable framebuffer at start */
    double spike_period_s;
    double spike_length_s;
    double spike_utilization;   /* 0..1 */
    double leak_rate_mib_s;     /* memory_leak: MiB per second */
    double heat_rate_c_s;       /* thermal_runaway: degrees per second */
    const sim_trace *trace;     /* replay: owned by the node */
    bool loop;                  /* replay: start again after the last row (else hold it) */
} sim_workload;

NODE_HIDDEN const char *sim_workload_name(sim_workload_kind kind);
NODE_HIDDEN int sim_workload_from_name(const char *name, sim_workload_kind *out);
NODE_HIDDEN const char *sim_workload_known_names(void);
NODE_HIDDEN void sim_workload_defaults(sim_workload_kind kind, sim_workload *out);

/* A workload that starts at start_us and runs until the next one. */
typedef struct sim_segment {
    int64_t start_us;
    sim_workload workload;
} sim_segment;

/* ---- per-GPU physics state on the fixed time grid (node.c) --------------- */

typedef struct sim_state {
    int64_t step;               /* state at t = step * SIM_STEP_US */
    double temp_c, mem_temp_c;
    double temp_fast_c, temp_slow_c, mem_fast_c, mem_slow_c; /* a fitted model's parts above base */
    double energy_mj;
    uint64_t power_violation_ns, thermal_violation_ns, low_util_violation_ns;
    /* NVML's per-reason slowdown times, which no DCGM field carries */
    uint64_t hw_thermal_slowdown_ns, hw_power_brake_slowdown_ns;
    uint32_t ecc_sbe;
    uint32_t pcie_replays;
    uint32_t nvlink_errors[4][SIM_MAX_NVLINKS]; /* flit crc, data crc, replay, recovery */
    /* what the GPU did at this step's time, kept so the next step need not redo it */
    double util, power_w;
    uint64_t reasons;
    /* instant power of the last SIM_POWER_AVERAGE_STEPS steps, slot step % N */
    double power_history_w[SIM_POWER_AVERAGE_STEPS];
} sim_state;

typedef struct sim_state_cache {
    sim_state frontier;         /* the furthest state computed so far */
    sim_state scratch;          /* last state recomputed behind the frontier */
    bool scratch_valid;
    bool checkpoints_full;      /* an allocation failed: stop adding, stay correct */
    sim_state *checkpoints;     /* checkpoints[i] = state at i * SIM_CHECKPOINT_STEPS */
    size_t checkpoint_count, checkpoint_cap;
} sim_state_cache;

/* ---- processes on a GPU (processes.c) -------------------------------------- */

/*
 * The synthetic process that runs a GPU's workload where the scenario names
 * none for it: it holds whatever the workload uses and all of its load.  Its
 * pid is above Linux's largest possible pid (PID_MAX_LIMIT, 4194304 on 64-bit
 * kernels), so a collector that looks it up in /proc never mistakes a real
 * process on the machine for it; GPU g's is SIM_PROCESS_PID_BASE + g.
 */
#define SIM_PROCESS_PID_BASE 4200000u
#define SIM_PROCESS_MAX_ALIVE 1024
#define SIM_PROCESS_CHURN_PIDS 100000u /* a churn table's pids: its pid + k modulo this */  /* live instances of one churn table, and of a GPU's list */

typedef struct sim_process {
    unsigned int pid;           /* churn: the first instance's; instance k has pid + k % SIM_PROCESS_CHURN_PIDS */
    bool graphics;
    int64_t start_us, stop_us;  /* stop_us -1: runs on */
    double fb_bytes;            /* at start */
    double fb_growth_bytes_s;   /* a leak */
    double sm_share, mem_share; /* weights of the GPU's utilisation among its live processes */
    unsigned int gpu_instance, compute_instance; /* SIM_NO_MIG_ID where MIG is off */
    double churn_per_s;         /* 0: one process; else new instances at this rate ... */
    int64_t lifetime_us;        /* ... each living this long */
} sim_process;

#define SIM_NO_MIG_ID 0xFFFFFFFFu

struct sim_gpu;

/* Whether a GPU whose scenario names processes has any live one with load at t (its utilisation is 0 if not). */
NODE_HIDDEN bool sim_processes_busy(const struct sim_gpu *gpu, int64_t t_us);
/* The framebuffer (MiB) a GPU's named processes hold at t. */
NODE_HIDDEN double sim_processes_fb_mib(const struct sim_gpu *gpu, int64_t t_us);

/* ---- the node ------------------------------------------------------------- */

/* ---- rehearsed faults (faults.c) ------------------------------------------ */

/* The error kinds an `errors` event sets a rate for. */
typedef enum sim_error_kind {
    SIM_ERR_SBE = 0,            /* correctable ECC errors (310, 312) */
    SIM_ERR_PCIE_REPLAY,        /* PCIe replays (202) */
    SIM_ERR_NVLINK_CRC,         /* NvLink flit CRC errors, spread over the links (409, per lane) */
    SIM_ERR_REMAP,              /* correctable rows remapped (394) */
    SIM_ERR_KIND_COUNT
} sim_error_kind;

/*
 * Error rates (per second) from start_us until the GPU's next `errors`
 * event: each rises linearly from `from` to `to` over ramp_us (0: `from`
 * throughout), then holds.
 */
typedef struct sim_error_rates {
    int64_t start_us;
    int64_t ramp_us;
    double from[SIM_ERR_KIND_COUNT];
    double to[SIM_ERR_KIND_COUNT];
} sim_error_rates;

/* A power excursion: from start_us to end_us the board draws `over` times its limit. */
typedef struct sim_excursion {
    int64_t start_us, end_us;
    double over;
} sim_excursion;

struct sim_gpu;

/*
 * How many errors of a kind the GPU's `errors` events have added up to t:
 * the integral of its rates, floored, so a rate of 17,700/s adds 17,700 a
 * second whatever the step.  0 without such events.
 */
NODE_HIDDEN uint64_t sim_fault_count(const struct sim_gpu *gpu, sim_error_kind kind, int64_t t_us);
/* The power excursion the GPU is in at t, or NULL. */
NODE_HIDDEN const sim_excursion *sim_fault_excursion_at(const struct sim_gpu *gpu, int64_t t_us);

/* A power limit set while the node runs (sim_node_set_power_limit). */
typedef struct sim_limit_change {
    int64_t from_us;
    double watts;
} sim_limit_change;

typedef struct sim_gpu {
    const sim_model *model;
    unsigned int mig_instances;
    const sim_mig_profile *mig_profiles[SIM_MAX_MIG_INSTANCES]; /* NULL: an even split */
    double power_limit_w;       /* from the start */
    sim_limit_change *limit_changes; /* ascending from_us; later ones win */
    size_t limit_change_count, limit_change_cap;
    sim_segment *segments;      /* ascending start, segments[0].start_us == 0 */
    size_t segment_count;
    sim_event *xids;            /* ascending t */
    size_t xid_count;
    int64_t lost_at_us;         /* -1: never */
    sim_error_rates *error_rates; /* `errors` events, ascending start (faults.c) */
    size_t error_rate_count;
    sim_excursion *excursions;  /* ascending start, not overlapping */
    size_t excursion_count;

    /* seeded traits, fixed at load */
    double efficiency;          /* scales power draw a few percent */
    double energy_base_mj;      /* energy counted before the node started */
    uint32_t ecc_sbe_base;      /* aggregate SBE from before the node started */
    double sbe_per_step, pcie_replay_per_step, nvlink_err_per_step;
    double spike_phase;         /* 0..1 of a spike period */
    double fb_jitter;           /* -1..1, nudges framebuffer use per GPU */
    char uuid[64], serial[32], bus_id[32];
    sim_gpu_info info;          /* what sim_node_gpu_info answers, filled at load */
    sim_process *processes;     /* the scenario's; none: one synthetic process runs the workload */
    size_t process_count;

    sim_state_cache cache;
} sim_gpu;

struct sim_node {
    uint64_t seed;
    unsigned int gpu_count;
    sim_gpu gpus[DCGM_MAX_NUM_DEVICES];
    /* sim_default_driver(), or the recorded one when every GPU's model names the same */
    const sim_driver *driver;
    sim_trace **traces;         /* every trace a replay workload plays */
    size_t trace_count;
    /* entities beyond the GPUs, when the scenario asks (node_levels.c) */
    unsigned int nvswitches;    /* NvSwitches, ids 0.. */
    unsigned int cpus;          /* Grace CPUs, ids 0.. */
    unsigned int cpu_cores;     /* cores of each CPU, numbered on from CPU 0's */
};

/*
 * Fills node (zeroed by the caller) from spec; see sim_node_load.  Leaves
 * whatever it allocated in node for sim_node_free, on failure too.
 */
NODE_HIDDEN int sim_scenario_load(const char *spec, sim_node *node, char *err, size_t errlen);

#endif /* DCGM_SIM_NODE_INTERNAL_H */
