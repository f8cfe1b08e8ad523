/*
 * sim.h -- the seams inside the simulated libdcgm.so.4.
 *
 *   field_table.c  field metadata (generated from reference/dcgm/fields.tsv)
 *   node.c etc.    the simulated node: scenario, GPU models, physics
 *   source.h       the engine's value source: this node (source_models.c) or NVML
 *                  (source_nvml.c, the driver's libnvidia-ml.so.1)
 *   engine.c etc.  the simulated hostengine: groups, watches, cache, reads
 *   api.c          the exported DCGM C ABI, dispatching handles to a backend
 *   backend_*.c    the two backends: the embedded engine, a remote hostengine
 *
 * Data flows one way: api -> engine -> node -> field_table.  The node knows
 * nothing of watches or handles; the engine knows nothing of physics.  A
 * separate hostengine process (a later issue) owns an engine and a node and
 * serves remote handles, so nothing below api.c may assume it runs inside
 * the client's process.
 */
#ifndef DCGM_SIM_SIM_H
#define DCGM_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "../dcgm_abi.h"

/* ---- field metadata (field_table.c) ------------------------------------ */

/* Metadata of a field id, or NULL when DCGM 4.6 has none for it. */
const dcgm_field_meta_t *sim_field_meta(unsigned short fieldId);

/* Metadata by tag (e.g. "gpu_temp"), or NULL. */
const dcgm_field_meta_t *sim_field_meta_by_tag(const char *tag);

/* ---- the simulated node (node.c, models.c, scenario.c) ------------------ */

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
 * scenarios/README.md).  On failure returns a DCGM_ST_* code and writes one
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

/* NvLink links the GPU's model has (0 on PCIe parts). */
unsigned int sim_node_gpu_nvlinks(const sim_node *node, unsigned int gpu);

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

#endif /* DCGM_SIM_SIM_H */
