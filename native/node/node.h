/*
 * node.h -- the simulated node: its GPUs (models, workloads, physics), the
 * scenario that plans them, its NvSwitches and Grace CPUs, and DCGM's field
 * metadata.  The one header of native/node/ that code outside it includes:
 * both simulated libraries compile the node in (the engine of libdcgm.so.4
 * reads it through its value source, libnvidia-ml.so.1 through its getters),
 * so one scenario gives the same numbers through either.
 *
 *   field_table.c  field metadata (generated from reference/dcgm/fields.tsv)
 *   fields_api.c   its lookups, and DCGM's exported DcgmField* functions
 *   models.c       what each GPU model is (limits, clocks, which fields it has)
 *   scenario.c     a spec or scenario file turned into the per-GPU plan
 *   replay.c       recorded traces played back as a workload
 *   node.c         the physics: every reading of a GPU at a time
 *   node_levels.c  the NvSwitches and Grace CPUs beyond the GPUs
 *   processes.c    the processes running on each GPU
 *
 * The node knows nothing of watches, handles or NVML: it answers pure
 * functions of (scenario, seed, entity, field, time) and the settings made
 * so far.  node_internal.h (the plan's types) stays inside this folder.
 */
#ifndef DCGM_SIM_NODE_H
#define DCGM_SIM_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../dcgm_abi.h"
#include "mig_profiles.h"

/* DCGM_CLOCKS_EVENT_REASON_* bits of field 112, as in dcgm_structs.h. */
#define SIM_CLOCKS_EVENT_GPU_IDLE 0x1ULL
#define SIM_CLOCKS_EVENT_CLOCKS_SETTING 0x2ULL
#define SIM_CLOCKS_EVENT_SW_POWER_CAP 0x4ULL
#define SIM_CLOCKS_EVENT_HW_SLOWDOWN 0x8ULL
#define SIM_CLOCKS_EVENT_SYNC_BOOST 0x10ULL
#define SIM_CLOCKS_EVENT_SW_THERMAL 0x20ULL
#define SIM_CLOCKS_EVENT_HW_THERMAL 0x40ULL
#define SIM_CLOCKS_EVENT_HW_POWER_BRAKE 0x80ULL

#define SIM_MAX_NVLINKS 18          /* NvLink links of a GPU the node models */
#define SIM_MAX_MIG_INSTANCES 7     /* MIG GPU instances of one GPU */

/* ---- field metadata (field_table.c) ------------------------------------ */

/* Metadata of a field id, or NULL when DCGM 4.6 has none for it. */
const dcgm_field_meta_t *sim_field_meta(unsigned short fieldId);

/* Metadata by tag (e.g. "gpu_temp"), or NULL. */
const dcgm_field_meta_t *sim_field_meta_by_tag(const char *tag);

/* ---- the simulated node (node.c, models.c, scenario.c, replay.c) -------- */

typedef struct sim_node sim_node;

typedef enum sim_value_kind {
    SIM_VALUE_OK = 0,            /* a real reading */
    SIM_VALUE_NOT_SUPPORTED = 1, /* this GPU model lacks the field */
    SIM_VALUE_BLANK = 2,         /* no reading (e.g. GPU lost) */
    SIM_VALUE_NOT_FOUND = 3,     /* the driver knows no such thing (NVML source) */
    SIM_VALUE_NOT_PERMISSIONED = 4 /* the driver refused the caller (NVML source) */
} sim_value_kind;

typedef struct sim_value {
    sim_value_kind kind;
    char type;                   /* DCGM_FT_* letter of the field */
    int64_t i64;
    double dbl;
    char str[256];               /* NUL terminated, strings only */
} sim_value;

/* A reading into *v (kind OK): an integer (also as double), a double (also rounded to an integer), a string.
 * Every value source fills its values through these (node.c). */
void sim_put_int(sim_value *v, int64_t x);
void sim_put_double(sim_value *v, double x);
int64_t sim_int64_of(double x);
void sim_put_str(sim_value *v, const char *s);

typedef struct sim_event {
    int64_t t_rel_us;            /* when it happened, after node start */
    int64_t value;               /* e.g. the XID number */
} sim_event;

/*
 * Build a node from a spec: NULL or "" is the default node (8 H100s on a
 * steady training load); a string of digits is that many H100s training;
 * anything else is the path of a scenario file (a TOML subset, see
 * dcgm_collector/engine/scenarios/README.md).  On failure returns a DCGM_ST_* code and writes one
 * line naming file:line and the problem into err.
 */
int sim_node_load(const char *spec, sim_node **out, char *err, size_t errlen);
void sim_node_free(sim_node *node);

unsigned int sim_node_gpu_count(const sim_node *node);
uint64_t sim_node_seed(const sim_node *node);

/*
 * The value of fieldId on GPU gpu at t_rel_us microseconds after the node
 * started.  A pure function of (scenario, seed, gpu, field, t_rel_us): the
 * same arguments give the same answer whatever was asked before, so two
 * processes with one seed agree.  Global fields ignore gpu.  Event fields
 * (sim_node_is_event_field) answer with their last event at or before t.
 * Returns DCGM_ST_OK, or DCGM_ST_UNKNOWN_FIELD / DCGM_ST_BADPARAM.
 * Not thread safe: the engine calls it under its own lock.
 */
int sim_node_sample(sim_node *node, unsigned int gpu, unsigned short fieldId,
                    int64_t t_rel_us, sim_value *out);

/* Whether this GPU's model has the field at all (NOT_SUPPORTED otherwise). */
int sim_node_field_supported(const sim_node *node, unsigned int gpu, unsigned short fieldId);

/* Fields that get a sample only when an event happens (XID 230, ...). */
int sim_node_is_event_field(unsigned short fieldId);

/*
 * Events of an event field on one GPU with from_rel_us < t <= to_rel_us,
 * ascending; writes at most max, returns how many there were in all.
 */
int sim_node_events(sim_node *node, unsigned int gpu, unsigned short fieldId,
                    int64_t from_rel_us, int64_t to_rel_us, sim_event *out, int max);

/* When the GPU falls off the bus, in us after start; -1 if it never does. */
int64_t sim_node_gpu_lost_at(const sim_node *node, unsigned int gpu);

/* Number of MIG GPU instances (each with one compute instance); 0 = MIG off. */
unsigned int sim_node_gpu_mig_instances(const sim_node *node, unsigned int gpu);

/* The profile of GPU instance `index` of a GPU (mig_profiles.h); NULL when there is none. */
struct sim_mig_profile;
const struct sim_mig_profile *sim_node_gpu_mig_profile(const sim_node *node, unsigned int gpu,
                                                       unsigned int index);

/*
 * A power limit set on a GPU from from_us on (earlier times keep what they
 * had): the physics caps the GPU's draw at it and fields 160 and 164 read it.
 * The node's answers stay a pure function of the scenario, the seed and the
 * limits set so far.  DCGM_ST_BADPARAM for no such GPU or a limit <= 0.
 */
int sim_node_set_power_limit(sim_node *node, unsigned int gpu, int64_t from_us, double watts);

/*
 * Time in ns up to t that the GPU's clocks were held down for one hardware
 * reason, SIM_CLOCKS_EVENT_HW_THERMAL or SIM_CLOCKS_EVENT_HW_POWER_BRAKE (the
 * bits of field 112): NVML counts these per reason, DCGM has no field for
 * them.  DCGM_ST_BADPARAM for any other reason or no such GPU.
 */
int sim_node_slowdown_ns(sim_node *node, unsigned int gpu, int64_t t_rel_us, uint64_t reason, int64_t *ns);

/*
 * A process on a GPU at one instant, as the driver lists it: the scenario's
 * [[process]] tables, or where a GPU has none, one synthetic process that
 * runs its workload (none while the workload is idle).
 */
typedef struct sim_process_info {
    unsigned int pid;
    bool graphics;              /* else compute */
    uint64_t fb_bytes;          /* framebuffer it holds */
    unsigned int gpu_instance, compute_instance; /* 0xFFFFFFFF where MIG is off */
    double sm_util, mem_util;   /* percent: its part of the GPU's utilisation readings */
} sim_process_info;

/*
 * The processes alive on GPU gpu at t_rel_us, ascending by pid: writes at
 * most max into out and returns how many there are in all (0 for no such
 * GPU).  Who is alive and what they hold are taken on the node's 100 ms grid,
 * so that their framebuffer adds up to the GPU's FB used (field 252, MiB);
 * their utilisation adds up to its fields 203 and 204 at t.  Not thread safe, as
 * sim_node_sample.
 */
int sim_node_processes(sim_node *node, unsigned int gpu, int64_t t_rel_us, sim_process_info *out, int max);

/* NvLink links the GPU's model has (0 on PCIe parts). */
unsigned int sim_node_gpu_nvlinks(const sim_node *node, unsigned int gpu);

/*
 * What a GPU is, as its driver describes it (the simulated NVML's getters):
 * its model's facts as it sits in the node, its MIG instances and the
 * scenario's XIDs on it.  Fixed at load; valid while the node lives.
 */
typedef struct sim_gpu_info {
    const char *brand;          /* the model's brand, e.g. "NVIDIA" or "Tesla" */
    int cc_major, cc_minor;     /* CUDA compute capability */
    int nvlinks;                /* NvLink links (0 on PCIe-only parts) */
    bool mig_capable;
    bool gpm;                   /* Hopper GPM metrics (field 94) */
    unsigned int mig_instances; /* 0: MIG off */
    const sim_event *xids;      /* ascending t */
    size_t xid_count;
} sim_gpu_info;

/* The description of GPU gpu; NULL for no such GPU. */
const sim_gpu_info *sim_node_gpu_info(const sim_node *node, unsigned int gpu);

/*
 * The node's other entities (node_levels.c): NvSwitches and Grace CPUs, as
 * many as the scenario asks for (none by default), and their readings.
 * group is a DCGM_FE_* value: SWITCH (id), LINK (a switch port: id = the
 * switch, index = the port), CPU (id) or CPU_CORE (id, parent = its CPU).
 * Returns DCGM_ST_OK with out->kind OK or NOT_SUPPORTED.
 */
unsigned int sim_node_nvswitch_count(const sim_node *node);
unsigned int sim_node_cpu_count(const sim_node *node);
unsigned int sim_node_cpu_core_count(const sim_node *node);   /* per CPU */
int sim_node_level_sample(const sim_node *node, int group, unsigned int id, unsigned int parent,
                          unsigned int index, unsigned short fieldId, int64_t t_rel_us, sim_value *out);

#endif /* DCGM_SIM_NODE_H */
