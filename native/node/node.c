/*
 * node.c -- the simulated node: per-GPU physics and the value of every
 * field at any time.
 *
 * Purity: sim_node_sample is a function of (scenario, seed, gpu, field, t).
 * Instantaneous quantities (utilisation, power, clocks) are computed
 * directly from t.  Quantities with memory (temperature, energy, violation
 * time, error counters) come from a state advanced on a fixed 100 ms grid
 * from t = 0; the grid is a pure recurrence, so the cache (frontier,
 * checkpoints, scratch) only saves work and never changes an answer,
 * whatever order the queries come in.
 *
 * Randomness is a counter-based hash of (seed, gpu, channel, index), never
 * a stateful generator, for the same reason.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_internal.h"

#define SIM_STEP_S 0.1
#define SIM_CHECKPOINT_STEPS 3000
/* Beyond this a catch-up from zero would take long; no real run gets here. */
#define SIM_MAX_T_US (400LL * 24 * 3600 * 1000000)
#define SIM_AMBIENT_C 30.0
#define SIM_THERMAL_TAU_S 20.0
/*
 * How often readings change, as the recorded H200 showed (changes.csv there):
 * power, energy, clocks and the GPU temperature get a new value every 100 ms
 * (the grid step), the memory temperature every 200 ms, and utilisation is
 * the busy share of a 200 ms sample period, not an instant.  A faster watch
 * sees the same value repeated.
 */
#define SIM_MEM_TEMP_PERIOD_STEPS 2
#define SIM_UTIL_PERIOD_US 200000LL
#define SIM_UTIL_POINTS 8

enum node_channel {
    CH_TRAIT = 1,
    CH_UTIL_SMOOTH,
    CH_UTIL_WHITE,
    CH_POWER,
    CH_POWER_RAW,               /* no longer drawn; kept so later channels keep their numbers */
    CH_ERRORS,
    CH_PCIE_TX,
    CH_PCIE_RX,
    CH_NVLINK,
    CH_IDENTITY,
    CH_CAP_CLOCK,
    CH_OVERSHOOT,
    CH_SPIKE,
};

/* ---- counter-based randomness -------------------------------------------- */

static inline uint64_t node_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static inline uint64_t node_hash(uint64_t seed, uint64_t gpu, uint64_t channel, uint64_t index)
{
    return node_mix(seed ^ node_mix(gpu * 0x100000001B3ULL ^ node_mix(channel ^ node_mix(index))));
}

/* [0, 1) */
static inline double node_unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1p-53;
}

/* [-1, 1) */
static inline double node_signed(uint64_t h)
{
    return node_unit(h) * 2.0 - 1.0;
}

/* Smooth noise in [-1, 1]: random values every period, eased in between. */
static double node_smooth_noise(uint64_t seed, unsigned int gpu, int channel, int64_t t_us,
                                int64_t period_us)
{
    int64_t cell = t_us / period_us;
    double frac = (double)(t_us % period_us) / (double)period_us;
    double a = node_signed(node_hash(seed, gpu, (uint64_t)channel, (uint64_t)cell));
    double b = node_signed(node_hash(seed, gpu, (uint64_t)channel, (uint64_t)cell + 1));
    double ease = frac * frac * (3.0 - 2.0 * frac);
    return a + (b - a) * ease;
}

/* Noise that changes every bucket_us, unrelated between buckets. */
static double node_white(uint64_t seed, unsigned int gpu, int channel, int64_t t_us, int64_t bucket_us)
{
    return node_signed(node_hash(seed, gpu, (uint64_t)channel, (uint64_t)(t_us / bucket_us)));
}

static double node_clamp(double v, double lo, double hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* ---- workloads over time --------------------------------------------------- */

static const sim_segment *node_segment_at(const sim_gpu *gpu, int64_t t_us)
{
    size_t i = gpu->segment_count;
    while (i > 1 && gpu->segments[i - 1].start_us > t_us)
        i--;
    return &gpu->segments[i - 1];
}

static double node_spike_level(const sim_node *node, unsigned int index, const sim_segment *seg,
                               int64_t t_us)
{
    const sim_workload *w = &seg->workload;
    int64_t period_us = (int64_t)(w->spike_period_s * 1e6);
    int64_t length_us = (int64_t)(w->spike_length_s * 1e6);
    if (period_us <= 0)
        return w->utilization;
    int64_t phase_us = (int64_t)(node->gpus[index].spike_phase * (double)period_us);
    int64_t since = t_us - seg->start_us + phase_us;
    if (since < 0)
        since = 0;
    /* one burst in each period, at a seeded place in it: bursts at a fixed
     * period would lock to a sampling rate that divides it, so that every
     * sample could land between them for as long as the collector runs */
    int64_t cycle = since / period_us;
    int64_t start_us = (int64_t)(node_unit(node_hash(node->seed, index, CH_SPIKE, (uint64_t)cycle)) *
                                 (double)(period_us - length_us));
    int64_t pos = since % period_us;
    if (pos >= start_us && pos < start_us + length_us)
        return w->spike_utilization;
    return w->utilization + 0.01 * node_white(node->seed, index, CH_UTIL_WHITE, t_us, SIM_STEP_US);
}

static double node_utilization(const sim_node *node, unsigned int index, const sim_segment *seg,
                               int64_t t_us)
{
    const sim_workload *w = &seg->workload;
    /* a GPU whose scenario names its processes idles while none with load runs */
    if (node->gpus[index].process_count > 0 && !sim_processes_busy(&node->gpus[index], t_us))
        return 0.0;
    switch (w->kind) {
    case SIM_WL_IDLE:
    case SIM_WL_IDLE_CONTEXT:
        return 0.0;
    case SIM_WL_SPIKES:
        return node_clamp(node_spike_level(node, index, seg, t_us), 0.0, 1.0);
    case SIM_WL_REPLAY: {
        double pct;
        if (!sim_trace_value(w->trace, 203, t_us - seg->start_us, w->loop, &pct))
            return 0.0;
        return node_clamp(pct / 100.0, 0.0, 1.0);
    }
    default:
        break;
    }
    if (w->utilization <= 0.0)
        return 0.0;
    double smooth = node_smooth_noise(node->seed, index, CH_UTIL_SMOOTH, t_us, 700000);
    double white = node_white(node->seed, index, CH_UTIL_WHITE, t_us, SIM_STEP_US);
    return node_clamp(w->utilization + 0.015 * smooth + 0.01 * white, 0.0, 1.0);
}

/*
 * The kernel workloads, each one kind of kernel back to back.  Numbers are
 * the medians a real H200 showed running each (reference/hardware/
 * h200-2026-11-30/): the activity ratios are the profiling fields at 100 %
 * utilisation, `power` is the uncapped dynamic draw as a share of the
 * model's (full_w - idle_w), so that the H200's 700 W cap pulls a tensor
 * load's SM clock to ~1455 MHz, fp32 stays just under the cap at 1980 MHz
 * and copies draw ~475 W.
 */
typedef struct node_kernel_profile {
    double power;
    double mem_util;            /* field 204: memory controller busy */
    double sm_active, occupancy, tensor, dram, fp32;
} node_kernel_profile;

static const node_kernel_profile *node_kernel_profile_of(sim_workload_kind kind)
{
    static const node_kernel_profile tensor = {1.84, 0.25, 0.96, 0.14, 0.94, 0.17, 0.0};
    static const node_kernel_profile copies = {0.60, 1.00, 0.99, 0.80, 0.0, 0.88, 0.0};
    static const node_kernel_profile fp32 = {0.905, 0.07, 0.97, 0.12, 0.0, 0.045, 0.77};
    switch (kind) {
    case SIM_WL_TENSOR: return &tensor;
    case SIM_WL_MEMORY_BOUND: return &copies;
    case SIM_WL_FP32: return &fp32;
    default: return NULL;
    }
}

/* Share of the load that is tensor-core math / memory traffic, per workload. */
static double node_tensor_share(sim_workload_kind kind)
{
    const node_kernel_profile *k = node_kernel_profile_of(kind);
    if (k != NULL)
        return k->tensor;
    switch (kind) {
    case SIM_WL_TRAINING: case SIM_WL_THERMAL_RUNAWAY: case SIM_WL_REPLAY: return 0.55;
    case SIM_WL_SPIKES: return 0.40;
    case SIM_WL_MEMORY_LEAK: return 0.30;
    default: return 0.0;
    }
}

static double node_memory_share(sim_workload_kind kind)
{
    const node_kernel_profile *k = node_kernel_profile_of(kind);
    if (k != NULL)
        return k->mem_util;
    switch (kind) {
    case SIM_WL_TRAINING: case SIM_WL_THERMAL_RUNAWAY: case SIM_WL_REPLAY: return 0.42;
    case SIM_WL_SPIKES: return 0.55;
    case SIM_WL_MEMORY_LEAK: return 0.35;
    default: return 0.0;
    }
}

/* ---- instantaneous physics ----------------------------------------------- */

/* The power limit in force at t_us: the scenario's, or the last one set by then. */
static double node_power_limit_at(const sim_gpu *gpu, int64_t t_us)
{
    for (size_t i = gpu->limit_change_count; i > 0; i--)
        if (gpu->limit_changes[i - 1].from_us <= t_us)
            return gpu->limit_changes[i - 1].watts;
    return gpu->power_limit_w;
}

/* Whether a load starts at this step: the GPU was at rest one step earlier. */
static bool node_load_starts(const sim_node *node, unsigned int index, int64_t t_us, double util)
{
    if (t_us < SIM_STEP_US || util < 0.3)
        return false;
    int64_t before = t_us - SIM_STEP_US;
    const sim_segment *seg = node_segment_at(&node->gpus[index], before);
    return node_utilization(node, index, seg, before) < 0.05;
}

typedef struct node_inst {
    double util;
    double power_w;
    double clock_factor;        /* 1 = unthrottled */
    uint64_t reasons;           /* DCGM_CLOCKS_EVENT_REASON_* */
} node_inst;

/* Throttling from heat: software first, hardware slowdown past the threshold. */
static double node_thermal_factor(const sim_model *m, double temp_c, uint64_t *reasons)
{
    double factor = 1.0;
    if (temp_c >= m->temp_gpu_max_op) {
        *reasons |= SIM_CLOCKS_EVENT_SW_THERMAL;
        factor = 1.0 - 0.08 * (temp_c - m->temp_gpu_max_op);
    }
    if (temp_c >= m->temp_slowdown) {
        *reasons |= SIM_CLOCKS_EVENT_HW_SLOWDOWN | SIM_CLOCKS_EVENT_HW_THERMAL;
        factor = fmin(factor, 0.5 - 0.05 * (temp_c - m->temp_slowdown));
    }
    return node_clamp(factor, 0.25, 1.0);
}

/*
 * A replayed GPU does what its trace says: the instant power (or, without
 * one, the averaged power), the clock-event reasons and the SM clock come
 * from it; what it lacks follows from the replayed utilisation.
 */
static node_inst node_replay_inst(const sim_gpu *gpu, const sim_segment *seg, int64_t t_us, double util)
{
    const sim_model *m = gpu->model;
    const sim_workload *w = &seg->workload;
    int64_t at = t_us - seg->start_us;
    node_inst in = {.util = util, .clock_factor = 1.0};
    double v;
    if (sim_trace_value(w->trace, 157, at, w->loop, &v) || sim_trace_value(w->trace, 155, at, w->loop, &v))
        in.power_w = fmax(v, 0.0);
    else
        in.power_w = m->idle_w + (m->full_w - m->idle_w) * util * (0.85 + 0.15 * util);
    if (sim_trace_value(w->trace, 112, at, w->loop, &v))
        in.reasons = (uint64_t)sim_int64_of(fmax(v, 0.0));
    else if (util < 0.01)
        in.reasons = SIM_CLOCKS_EVENT_GPU_IDLE;
    if (sim_trace_value(w->trace, 100, at, w->loop, &v))
        in.clock_factor = node_clamp(v / m->sm_clock_max, 0.0, 1.0);
    return in;
}

static node_inst node_inst_workload(const sim_node *node, unsigned int index, int64_t t_us, double temp_c)
{
    const sim_gpu *gpu = &node->gpus[index];
    const sim_model *m = gpu->model;
    node_inst in = {.clock_factor = 1.0};
    const sim_segment *seg = node_segment_at(gpu, t_us);
    in.util = node_utilization(node, index, seg, t_us);
    if (seg->workload.kind == SIM_WL_REPLAY)
        return node_replay_inst(gpu, seg, t_us, in.util);
    if (seg->workload.kind == SIM_WL_IDLE_CONTEXT) {
        /* An open context keeps the clocks up and draws more than idle, with
         * no clock-event reason: what the H200 showed between its phases. */
        double ctx_w = m->context_w > 0.0 ? m->context_w : 1.55 * m->idle_w;
        double noise = 0.012 * node_white(node->seed, index, CH_POWER, t_us, 50000);
        in.power_w = ctx_w * (1.0 + noise);
        return in;
    }
    /* Between bursts a spiking process keeps its context: on a model with a
     * recorded context draw the clocks stay up and the floor is that draw. */
    bool held = seg->workload.kind == SIM_WL_SPIKES && m->context_w > 0.0;
    if (in.util < 0.01 && !held)
        in.reasons |= SIM_CLOCKS_EVENT_GPU_IDLE;

    const node_kernel_profile *kernel = node_kernel_profile_of(seg->workload.kind);
    double load = kernel != NULL ? in.util * kernel->power * gpu->efficiency
                                 : in.util * (0.85 + 0.15 * in.util) * gpu->efficiency;
    double noise = 0.012 * node_white(node->seed, index, CH_POWER, t_us, 50000);
    double base_w = held ? m->context_w : m->idle_w;
    double power = (base_w + (m->full_w - m->idle_w) * load) * (1.0 + noise);
    double limit_w = node_power_limit_at(gpu, t_us);
    if (power > limit_w && node_load_starts(node, index, t_us, in.util)) {
        /* The power controller acts on what it has measured, so for the first
         * 100 ms of a load from rest the clock is still up and the board draws
         * past its limit: the recorded H200 read 770-958 W in the first tenth
         * of a second of its bf16 bursts (700 W limit), no reason set yet. */
        double over = 1.08 + 0.29 * node_unit(node_hash(node->seed, index, CH_OVERSHOOT,
                                                        (uint64_t)(t_us / SIM_STEP_US)));
        power = fmin(power, limit_w * over);
    } else if (power > limit_w) {
        in.reasons |= SIM_CLOCKS_EVENT_SW_POWER_CAP;
        in.clock_factor = sqrt(limit_w / power);
        power = limit_w * (0.99 + 0.5 * noise);
        /* The power controller hunts around the limit: the recorded H200 under bf16
         * products read 1410-1515 MHz around its 1455 MHz median and an instant draw
         * of 658-726 W (10th-90th percentile, 696 W median), the clock and the draw
         * rising and falling together, while its 1 s average stayed at 686-702 W.  So
         * the hunt is a swing that evens out over each second, plus a little noise. */
        if (kernel != NULL) {
            double phase = node_unit(node_hash(node->seed, index, CH_CAP_CLOCK, 0));
            double hunt = sin(2.0 * M_PI * ((double)(t_us % 1000000) * 1e-6 + phase));
            in.clock_factor *= 1.0 + 0.025 * hunt;
            power = limit_w * (0.992 + 0.05 * hunt + 0.5 * noise);
        }
    }
    double thermal = node_thermal_factor(m, temp_c, &in.reasons);
    if (thermal < 1.0) {
        in.clock_factor *= thermal;
        power = m->idle_w + (power - m->idle_w) * thermal * thermal;
    }
    in.power_w = fmax(power, m->idle_w * 0.9);
    return in;
}

/*
 * What the GPU does at t: its workload's draw, unless a power excursion runs.
 * Then the cap does not hold: the board draws `over` times its limit (the
 * instant, and after a second the 1 s average, read above the limit) and the
 * hardware pulls the clocks down, HW_SLOWDOWN and HW_POWER_BRAKE set for the
 * whole excursion: one hardware slowdown per excursion.
 */
static node_inst node_inst_at(const sim_node *node, unsigned int index, int64_t t_us, double temp_c)
{
    const sim_gpu *gpu = &node->gpus[index];
    node_inst in = node_inst_workload(node, index, t_us, temp_c);
    const sim_excursion *x = sim_fault_excursion_at(gpu, t_us);
    if (x == NULL)
        return in;
    double noise = 0.01 * node_white(node->seed, index, CH_POWER, t_us, 50000);
    in.power_w = node_power_limit_at(gpu, t_us) * x->over * (1.0 + noise);
    /* the software cap is not what holds the clocks now, and a drawing board is not idle */
    in.reasons = (in.reasons & ~(SIM_CLOCKS_EVENT_GPU_IDLE | SIM_CLOCKS_EVENT_SW_POWER_CAP)) |
                 SIM_CLOCKS_EVENT_HW_SLOWDOWN | SIM_CLOCKS_EVENT_HW_POWER_BRAKE;
    in.clock_factor *= 0.5;
    return in;
}

/* ---- the grid state ------------------------------------------------------ */

static double node_extra_heat(const sim_segment *seg, int64_t t_us)
{
    if (seg->workload.kind != SIM_WL_THERMAL_RUNAWAY)
        return 0.0;
    return seg->workload.heat_rate_c_s * (double)(t_us - seg->start_us) * 1e-6;
}

/* DRAM activity (0-1, profiling field 1005) of a workload at utilisation u. */
static double node_dram_activity(sim_workload_kind kind, double u)
{
    const node_kernel_profile *k = node_kernel_profile_of(kind);
    return u * (k != NULL ? k->dram : node_memory_share(kind) * 1.1);
}

static bool node_has_fitted_heat(const sim_model *m)
{
    return m->heat_gpu.tau_fast_s > 0.0 && m->heat_mem.tau_fast_s > 0.0;
}

/*
 * A fitted model's two parts of the rise above base: the fast part (the
 * fast share of the power's heat, and all of the DRAM term: HBM under copy
 * load warms at once) and the slow part (the rest, plus any extra heat).
 */
static void node_heat_parts(const struct sim_heat *h, double power_w, double dram, double extra,
                            double *fast, double *slow)
{
    *fast = h->fast_share * h->r * power_w + h->dram_c * dram;
    *slow = (1.0 - h->fast_share) * h->r * power_w + extra;
}

/* One 100 ms step of a fitted two-lag temperature: moves both parts, returns the reading. */
static double node_two_lag(const struct sim_heat *h, double *fast, double *slow, double power_w,
                           double dram, double extra)
{
    double fast_t, slow_t;
    node_heat_parts(h, power_w, dram, extra, &fast_t, &slow_t);
    *fast += (fast_t - *fast) * (1.0 - exp(-SIM_STEP_S / h->tau_fast_s));
    *slow += (slow_t - *slow) * (1.0 - exp(-SIM_STEP_S / h->tau_slow_s));
    return h->base_c + *fast + *slow;
}

static void node_state_observe(const sim_node *node, unsigned int index, sim_state *s)
{
    node_inst in = node_inst_at(node, index, s->step * SIM_STEP_US, s->temp_c);
    s->util = in.util;
    s->power_w = in.power_w;
    s->reasons = in.reasons;
    s->power_history_w[s->step % SIM_POWER_AVERAGE_STEPS] = in.power_w;
}

static void node_state_init(const sim_node *node, unsigned int index, sim_state *s)
{
    const sim_gpu *gpu = &node->gpus[index];
    const sim_model *m = gpu->model;
    memset(s, 0, sizeof *s);
    /* The node was already running its first workload: start near its steady state. */
    double idle_temp = SIM_AMBIENT_C + m->thermal_r * m->idle_w;
    node_inst first = node_inst_at(node, index, 0, idle_temp);
    double offset = 1.5 * node_signed(node_hash(node->seed, index, CH_TRAIT, 10));
    if (node_has_fitted_heat(m)) {
        double dram = node_dram_activity(gpu->segments[0].workload.kind, first.util);
        node_heat_parts(&m->heat_gpu, first.power_w, dram, offset, &s->temp_fast_c, &s->temp_slow_c);
        node_heat_parts(&m->heat_mem, first.power_w, dram, offset, &s->mem_fast_c, &s->mem_slow_c);
        s->temp_c = fmin(m->heat_gpu.base_c + s->temp_fast_c + s->temp_slow_c, m->temp_gpu_max_op - 1.0);
        s->mem_temp_c = m->heat_mem.base_c + s->mem_fast_c + s->mem_slow_c;
    } else {
        s->temp_c = fmin(SIM_AMBIENT_C + m->thermal_r * first.power_w + offset, m->temp_gpu_max_op - 1.0);
        s->mem_temp_c = s->temp_c + 3.0;
    }
    /* the node was running before it started: its last second drew what its first does */
    for (int i = SIM_POWER_AVERAGE_STEPS - 1; i >= 0; i--) {
        s->step = i;
        node_state_observe(node, index, s);
    }
}

static void node_state_count_errors(const sim_node *node, unsigned int index, sim_state *s)
{
    const sim_gpu *gpu = &node->gpus[index];
    double activity = 0.2 + s->util;
    uint64_t h1 = node_hash(node->seed, index, CH_ERRORS, (uint64_t)s->step);
    uint64_t h2 = node_mix(h1);
    uint64_t h3 = node_mix(h2);
    if (node_unit(h1) < gpu->sbe_per_step * activity)
        s->ecc_sbe++;
    if (node_unit(h2) < gpu->pcie_replay_per_step * activity)
        s->pcie_replays++;
    int links = gpu->model->nvlinks;
    if (links > 0 && node_unit(h3) < gpu->nvlink_err_per_step * activity) {
        unsigned int pick = (unsigned int)((h3 >> 3) & 0xff);
        int family = pick < 160 ? 0 : (pick < 220 ? 1 : (pick < 250 ? 2 : 3));
        int lane = (int)((h3 >> 12) % (uint64_t)links);
        s->nvlink_errors[family][lane]++;
    }
}

static void node_state_advance(const sim_node *node, unsigned int index, sim_state *s)
{
    const sim_gpu *gpu = &node->gpus[index];
    const sim_model *m = gpu->model;
    const int64_t t_us = s->step * SIM_STEP_US;
    const uint64_t step_ns = (uint64_t)SIM_STEP_US * 1000u;

    s->energy_mj += s->power_w * SIM_STEP_S * 1000.0;
    if (s->reasons & SIM_CLOCKS_EVENT_SW_POWER_CAP)
        s->power_violation_ns += step_ns;
    if (s->reasons & (SIM_CLOCKS_EVENT_SW_THERMAL | SIM_CLOCKS_EVENT_HW_THERMAL | SIM_CLOCKS_EVENT_HW_SLOWDOWN))
        s->thermal_violation_ns += step_ns;
    if (s->reasons & SIM_CLOCKS_EVENT_GPU_IDLE)
        s->low_util_violation_ns += step_ns;
    if (s->reasons & SIM_CLOCKS_EVENT_HW_THERMAL)
        s->hw_thermal_slowdown_ns += step_ns;
    if (s->reasons & SIM_CLOCKS_EVENT_HW_POWER_BRAKE)
        s->hw_power_brake_slowdown_ns += step_ns;
    node_state_count_errors(node, index, s);

    static const double alpha = 0.004987520807317687; /* 1 - exp(-0.1 s / 20 s) */
    const sim_segment *seg = node_segment_at(gpu, t_us);
    double extra = node_extra_heat(seg, t_us);
    if (node_has_fitted_heat(m)) {
        double dram = node_dram_activity(seg->workload.kind, s->util);
        s->temp_c = fmin(node_two_lag(&m->heat_gpu, &s->temp_fast_c, &s->temp_slow_c, s->power_w, dram, extra),
                         (double)m->temp_shutdown);
        s->mem_temp_c = fmin(node_two_lag(&m->heat_mem, &s->mem_fast_c, &s->mem_slow_c, s->power_w, dram, extra),
                             (double)m->temp_shutdown + 8.0);
    } else {
        double target = SIM_AMBIENT_C + m->thermal_r * s->power_w + extra;
        double mem_target = SIM_AMBIENT_C + 3.0 + m->thermal_r * 1.1 * s->power_w + extra;
        s->temp_c = fmin(s->temp_c + (target - s->temp_c) * alpha, (double)m->temp_shutdown);
        s->mem_temp_c = fmin(s->mem_temp_c + (mem_target - s->mem_temp_c) * alpha,
                             (double)m->temp_shutdown + 8.0);
    }

    s->step++;
    node_state_observe(node, index, s);
}

static void node_cache_push_checkpoint(sim_state_cache *c)
{
    if (c->checkpoints_full)
        return;
    if (c->checkpoint_count == c->checkpoint_cap) {
        size_t cap = c->checkpoint_cap ? c->checkpoint_cap * 2 : 64;
        sim_state *grown = realloc(c->checkpoints, cap * sizeof *grown);
        if (grown == NULL) {
            c->checkpoints_full = true;
            return;
        }
        c->checkpoints = grown;
        c->checkpoint_cap = cap;
    }
    c->checkpoints[c->checkpoint_count++] = c->frontier;
}

/* The state at grid step `step`; NULL only if the very first allocation failed. */
static const sim_state *node_state_at(sim_node *node, unsigned int index, int64_t step)
{
    sim_state_cache *c = &node->gpus[index].cache;
    if (c->checkpoint_count == 0) {
        node_state_init(node, index, &c->frontier);
        node_cache_push_checkpoint(c);
        if (c->checkpoint_count == 0)
            return NULL;
    }
    if (step >= c->frontier.step) {
        while (c->frontier.step < step) {
            node_state_advance(node, index, &c->frontier);
            if (c->frontier.step % SIM_CHECKPOINT_STEPS == 0)
                node_cache_push_checkpoint(c);
        }
        return &c->frontier;
    }
    if (c->scratch_valid && c->scratch.step == step)
        return &c->scratch;
    size_t ck = (size_t)(step / SIM_CHECKPOINT_STEPS);
    if (ck >= c->checkpoint_count)
        ck = c->checkpoint_count - 1;
    const sim_state *start = &c->checkpoints[ck];
    bool from_scratch = c->scratch_valid && c->scratch.step <= step && c->scratch.step > start->step;
    if (!from_scratch)
        c->scratch = *start;
    c->scratch_valid = true;
    while (c->scratch.step < step)
        node_state_advance(node, index, &c->scratch);
    return &c->scratch;
}

/* ---- loading, identity, seeded traits ----------------------------------- */

static void node_format_identity(sim_node *node, unsigned int index)
{
    sim_gpu *gpu = &node->gpus[index];
    uint64_t a = node_hash(node->seed, index, CH_IDENTITY, 0);
    uint64_t b = node_hash(node->seed, index, CH_IDENTITY, 1);
    uint64_t c = node_hash(node->seed, index, CH_IDENTITY, 2);
    /* a scenario may give a recorded GPU's own UUID and bus id (a replayed flight recording) */
    if (gpu->uuid[0] == '\0')
        snprintf(gpu->uuid, sizeof gpu->uuid, "GPU-%08x-%04x-%04x-%04x-%012llx",
                 (unsigned int)(a & 0xffffffffu), (unsigned int)((a >> 32) & 0xffff),
                 (unsigned int)((a >> 48) & 0xffff), (unsigned int)(b & 0xffff),
                 (unsigned long long)((b >> 16) & 0xffffffffffffULL));
    snprintf(gpu->serial, sizeof gpu->serial, "%013llu",
             1320000000000ULL + (unsigned long long)(c % 500000000000ULL));
    /* An HGX baseboard's bus numbers for the first eight, then a second segment. */
    static const unsigned int hgx_bus[8] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};
    if (gpu->bus_id[0] != '\0')
        return;
    if (index < 8)
        snprintf(gpu->bus_id, sizeof gpu->bus_id, "00000000:%02X:00.0", hgx_bus[index]);
    else
        snprintf(gpu->bus_id, sizeof gpu->bus_id, "00000001:%02X:00.0", 0x10 + 8 * (index - 8));
}

/* Per-GPU character: a few GPUs are error-prone, boards differ a little. */
static void node_seed_traits(sim_node *node, unsigned int index)
{
    sim_gpu *gpu = &node->gpus[index];
    uint64_t s = node->seed;
    double steps_per_minute = 60.0 / SIM_STEP_S;
    gpu->efficiency = 1.0 + 0.03 * node_signed(node_hash(s, index, CH_TRAIT, 1));
    gpu->energy_base_mj = 1e8 + 5e9 * node_unit(node_hash(s, index, CH_TRAIT, 2));
    gpu->spike_phase = node_unit(node_hash(s, index, CH_TRAIT, 3));
    gpu->fb_jitter = node_signed(node_hash(s, index, CH_TRAIT, 4));
    bool sbe_prone = node_unit(node_hash(s, index, CH_TRAIT, 5)) < 0.3;
    bool pcie_prone = node_unit(node_hash(s, index, CH_TRAIT, 6)) < 0.25;
    bool nvlink_prone = node_unit(node_hash(s, index, CH_TRAIT, 7)) < 0.3;
    gpu->sbe_per_step = sbe_prone ? 0.5 / steps_per_minute : 0.0;
    gpu->pcie_replay_per_step = pcie_prone ? 0.3 / steps_per_minute : 0.0;
    gpu->nvlink_err_per_step = nvlink_prone ? 1.0 / steps_per_minute : 0.0;
    gpu->ecc_sbe_base = sbe_prone ? (uint32_t)(node_hash(s, index, CH_TRAIT, 8) % 40) : 0;
}

/* What sim_node_gpu_info answers for a GPU of the plan. */
static void node_describe_gpu(sim_gpu *g)
{
    const sim_model *m = g->model;
    g->info = (sim_gpu_info){
        .brand = m->brand,
        .cc_major = m->cc_major,
        .cc_minor = m->cc_minor,
        .nvlinks = m->nvlinks,
        .mig_capable = m->mig_capable,
        .gpm = m->gpm,
        .mig_instances = g->mig_instances,
        .xids = g->xids,
        .xid_count = g->xid_count,
    };
}

int sim_node_load(const char *spec, sim_node **out, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL)
        return DCGM_ST_BADPARAM;
    *out = NULL;
    sim_node *node = calloc(1, sizeof *node);
    if (node == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "out of memory loading the simulated node");
        return DCGM_ST_MEMORY;
    }
    int rc = sim_scenario_load(spec, node, err, errlen);
    if (rc != DCGM_ST_OK) {
        sim_node_free(node);
        return rc;
    }
    /* a node whose GPUs were all recorded on one driver runs it */
    const sim_driver *recorded = node->gpu_count > 0 ? node->gpus[0].model->recorded_driver : NULL;
    for (unsigned int i = 0; i < node->gpu_count; i++) {
        node_format_identity(node, i);
        node_seed_traits(node, i);
        node_describe_gpu(&node->gpus[i]);
        if (node->gpus[i].model->recorded_driver != recorded)
            recorded = NULL;
    }
    node->driver = recorded != NULL ? recorded : sim_default_driver();
    *out = node;
    return DCGM_ST_OK;
}

void sim_node_free(sim_node *node)
{
    if (node == NULL)
        return;
    for (unsigned int i = 0; i < DCGM_MAX_NUM_DEVICES; i++) {
        free(node->gpus[i].segments);
        free(node->gpus[i].xids);
        free(node->gpus[i].cache.checkpoints);
        free(node->gpus[i].limit_changes);
        free(node->gpus[i].processes);
        free(node->gpus[i].error_rates);
        free(node->gpus[i].excursions);
    }
    for (size_t i = 0; i < node->trace_count; i++)
        sim_trace_free(node->traces[i]);
    free(node->traces);
    free(node);
}

unsigned int sim_node_gpu_count(const sim_node *node)
{
    return node == NULL ? 0 : node->gpu_count;
}

uint64_t sim_node_seed(const sim_node *node)
{
    return node == NULL ? 0 : node->seed;
}

int64_t sim_node_gpu_lost_at(const sim_node *node, unsigned int gpu)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return -1;
    return node->gpus[gpu].lost_at_us;
}

unsigned int sim_node_gpu_mig_instances(const sim_node *node, unsigned int gpu)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return 0;
    return node->gpus[gpu].mig_instances;
}

const sim_mig_profile *sim_node_gpu_mig_profile(const sim_node *node, unsigned int gpu,
                                                unsigned int index)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return NULL;
    const sim_gpu *g = &node->gpus[gpu];
    if (index >= g->mig_instances || index >= SIM_MAX_MIG_INSTANCES)
        return NULL;
    return g->mig_profiles[index] ? g->mig_profiles[index]
                                  : sim_mig_profile_even(g->model->key, g->mig_instances);
}

const sim_gpu_info *sim_node_gpu_info(const sim_node *node, unsigned int gpu)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return NULL;
    return &node->gpus[gpu].info;
}

unsigned int sim_node_gpu_nvlinks(const sim_node *node, unsigned int gpu)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return 0;
    return node->gpus[gpu].model->nvlinks > 0 ? (unsigned int)node->gpus[gpu].model->nvlinks : 0;
}

/* ---- events -------------------------------------------------------------- */

int sim_node_is_event_field(unsigned short fieldId)
{
    return fieldId == 230 || fieldId == 450;
}

int sim_node_events(sim_node *node, unsigned int gpu, unsigned short fieldId,
                    int64_t from_rel_us, int64_t to_rel_us, sim_event *out, int max)
{
    if (node == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count || fieldId != 230)
        return 0;
    const sim_gpu *g = &node->gpus[gpu];
    int total = 0;
    for (size_t i = 0; i < g->xid_count; i++) {
        const sim_event *ev = &g->xids[i];
        if (ev->t_rel_us <= from_rel_us || ev->t_rel_us > to_rel_us)
            continue;
        if (out != NULL && total < max)
            out[total] = *ev;
        total++;
    }
    return total;
}

static int64_t node_xid_count(const sim_gpu *g, int64_t xid, int64_t t_us)
{
    int64_t n = 0;
    for (size_t i = 0; i < g->xid_count && g->xids[i].t_rel_us <= t_us; i++) {
        if (g->xids[i].value == xid)
            n++;
    }
    return n;
}

/* ---- values ------------------------------------------------------------- */

void sim_put_int(sim_value *v, int64_t x)
{
    v->kind = SIM_VALUE_OK;
    v->i64 = x;
    v->dbl = (double)x;
}

void sim_put_double(sim_value *v, double x)
{
    v->kind = SIM_VALUE_OK;
    v->dbl = x;
    v->i64 = sim_int64_of(x);
}

/*
 * A double as a DCGM int64 reading, never undefined (a cast of a double beyond int64 is) nor
 * unspecified (llround's answer there is): NaN is DCGM's blank; beyond the readings it saturates,
 * at INT64_MIN below and under the blank sentinels above.  The largest double under 2^63 is
 * 2^63 - 1024, below the sentinels, so whatever is under 2^63 converts as it is.
 */
int64_t sim_int64_of(double x)
{
    if (isnan(x))
        return (int64_t)DCGM_INT64_BLANK;
    double r = round(x);
    if (r >= 0x1p63)
        return (int64_t)DCGM_INT64_BLANK - 1;
    if (r < -0x1p63)
        return INT64_MIN;
    return (int64_t)r;
}

void sim_put_str(sim_value *v, const char *s)
{
    v->kind = SIM_VALUE_OK;
    snprintf(v->str, sizeof v->str, "%s", s);
}

static void node_put_sentinel(sim_value *v, sim_value_kind kind)
{
    bool ns = kind == SIM_VALUE_NOT_SUPPORTED;
    v->kind = kind;
    v->i64 = ns ? (int64_t)DCGM_INT64_NOT_SUPPORTED : (int64_t)DCGM_INT64_BLANK;
    v->dbl = ns ? DCGM_FP64_NOT_SUPPORTED : DCGM_FP64_BLANK;
    snprintf(v->str, sizeof v->str, "%s", ns ? DCGM_STR_NOT_SUPPORTED : DCGM_STR_BLANK);
}

static int node_sample_global(const sim_node *node, unsigned short id, sim_value *out)
{
    switch (id) {
    case 1: sim_put_str(out, node->driver->version); break;
    case 2: sim_put_str(out, node->driver->nvml_version); break;
    case 4: sim_put_int(out, node->gpu_count); break;
    case 5: sim_put_int(out, node->driver->cuda_version); break;
    default: node_put_sentinel(out, SIM_VALUE_NOT_SUPPORTED); break;
    }
    return DCGM_ST_OK;
}

/*
 * CPU/NUMA affinity of a two-socket host with 112 logical CPUs per socket
 * (cores 0-55 and their hyperthreads 112-167 on socket 0): the first half
 * of the GPUs hang off socket 0.
 */
static int64_t node_cpu_affinity_word(const sim_node *node, unsigned int index, int word)
{
    int socket = (node->gpu_count > 1 && index >= node->gpu_count / 2) ? 1 : 0;
    uint64_t mask = 0;
    for (int bit = 0; bit < 64; bit++) {
        int cpu = word * 64 + bit;
        if (cpu < 224 && (cpu % 112) / 56 == socket)
            mask |= 1ULL << bit;
    }
    return (int64_t)mask;
}

static int64_t node_nvlink_p2p_mask(const sim_node *node, unsigned int index)
{
    int64_t mask = 0;
    for (unsigned int j = 0; j < node->gpu_count; j++) {
        if (j != index && node->gpus[j].model->nvlinks > 0)
            mask |= (int64_t)1 << j;
    }
    return mask;
}

static bool node_sample_identity(const sim_node *node, unsigned int index, unsigned short id,
                                 sim_value *out)
{
    const sim_gpu *g = &node->gpus[index];
    const sim_model *m = g->model;
    switch (id) {
    case 50: sim_put_str(out, m->name); return true;
    case 51: sim_put_str(out, m->brand); return true;
    case 52: case 55: sim_put_int(out, index); return true;
    case 53: sim_put_str(out, g->serial); return true;
    case 54: case 68: sim_put_str(out, g->uuid); return true;
    case 56: sim_put_str(out, m->inforom_oem); return true;
    case 57: sim_put_str(out, g->bus_id); return true;
    case 58: sim_put_int(out, ((int64_t)m->pci_device_id << 16) | 0x10DE); return true;
    case 59: sim_put_int(out, m->pci_subsys_id); return true;
    /* major in the upper 16 bits, minor in the lower 16, as DCGM's cache manager stores it
     * (DcgmCacheManager.cpp, DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY; the header's comment
     * says 32, the code and DcgmCoreProxy::GetCudaComputeCapabilityMajorVersion use 16) */
    case 63: sim_put_int(out, ((int64_t)m->cc_major << 16) | m->cc_minor); return true;
    case 64: sim_put_int(out, node_nvlink_p2p_mask(node, index)); return true;
    case 65: case 74: case 500: case 526: sim_put_int(out, 0); return true;
    case 66: case 84: case 300: case 301: sim_put_int(out, 1); return true;
    case 67: sim_put_int(out, g->mig_instances > 0); return true;
    case 69: sim_put_int(out, 7); return true;
    case 70: case 71: case 72: case 73:
        sim_put_int(out, node_cpu_affinity_word(node, index, id - 70)); return true;
    case 80: sim_put_str(out, m->inforom_ecc); return true;
    case 82: sim_put_str(out, m->inforom_image); return true;
    case 83: sim_put_int(out, (int64_t)(node_hash(node->seed, index, CH_IDENTITY, 3) & 0xffffffffu)); return true;
    case 85: sim_put_str(out, m->vbios); return true;
    case 86: sim_put_int(out, (node->gpu_count > 1 && index >= node->gpu_count / 2) ? 2 : 1); return true;
    case 87: case 88: case 89: sim_put_int(out, 0); return true;
    case 90: sim_put_int(out, m->bar1_total_mib); return true;
    case 94: sim_put_int(out, m->gpm); return true;
    case 110: case 113: sim_put_int(out, m->sm_clock_max); return true;
    case 111: case 114: sim_put_int(out, m->mem_clock_max); return true;
    case 115: sim_put_int(out, m->video_clock_max); return true;
    case 152: sim_put_int(out, m->temp_gpu_max_op); return true;
    case 151: sim_put_int(out, m->temp_mem_max_op); return true;
    case 158: sim_put_int(out, m->temp_slowdown); return true;
    case 159: sim_put_int(out, m->temp_shutdown); return true;
    case 161: sim_put_double(out, m->power_min_w); return true;
    case 162: sim_put_double(out, m->power_max_w); return true;
    case 163: sim_put_double(out, m->power_default_w); return true;
    case 235: sim_put_int(out, m->pcie_gen); return true;
    case 236: case 238: sim_put_int(out, m->pcie_width); return true;
    case 250: sim_put_int(out, m->fb_total_mib); return true;
    case 253: sim_put_int(out, m->fb_reserved_mib); return true;
    case 242: case 243: case 245: sim_put_int(out, 0); return true;
    default: return false;
    }
}

/* Everything a sample at t needs, computed once per call. */
typedef struct node_now {
    const sim_node *node;
    unsigned int index;
    const sim_gpu *gpu;
    const sim_model *model;
    const sim_segment *seg;
    const sim_state *state;
    int64_t t_us;               /* the start of the 100 ms step the read falls in */
    int64_t read_us;            /* the read's own time: settings change between steps */
    node_inst inst;
} node_now;

static int64_t node_fb_used_mib(const node_now *n)
{
    const sim_model *m = n->model;
    const sim_workload *w = &n->seg->workload;
    double usable = m->fb_total_mib - m->fb_reserved_mib;
    if (n->gpu->process_count > 0) /* what its named processes hold, nothing besides */
        return (int64_t)node_clamp(floor(sim_processes_fb_mib(n->gpu, n->t_us)), 0.0, floor(usable * 0.995));
    double used = usable * w->fb_used;
    if (used > 0)
        used *= 1.0 + 0.01 * n->gpu->fb_jitter;
    if (w->kind == SIM_WL_MEMORY_LEAK)
        used += w->leak_rate_mib_s * (double)(n->t_us - n->seg->start_us) * 1e-6;
    return (int64_t)node_clamp(floor(used), 0.0, floor(usable * 0.995));
}

static int node_sm_clock(const node_now *n)
{
    const sim_model *m = n->model;
    if (n->inst.reasons & SIM_CLOCKS_EVENT_GPU_IDLE)
        return m->sm_clock_idle;
    double mhz = fmax(m->sm_clock_max * n->inst.clock_factor, m->sm_clock_idle);
    return (int)(mhz / 15.0 + 0.5) * 15;
}

/*
 * Utilisation as NVML reports it: the share of the last whole sample period
 * the GPU was busy (with memory: the memory controller), so a 300 ms burst
 * may read 100 % once, or 40 % and 60 %, or be half missed, as on the card.
 */
static double node_util_reading(const node_now *n, bool memory)
{
    int64_t end = n->t_us / SIM_UTIL_PERIOD_US * SIM_UTIL_PERIOD_US;
    if (end < SIM_UTIL_PERIOD_US)
        end = SIM_UTIL_PERIOD_US; /* the period before the node started looked like its start */
    double sum = 0.0;
    for (int i = 0; i < SIM_UTIL_POINTS; i++) {
        int64_t t = end - SIM_UTIL_PERIOD_US + (2 * i + 1) * SIM_UTIL_PERIOD_US / (2 * SIM_UTIL_POINTS);
        const sim_segment *seg = node_segment_at(n->gpu, t);
        double u = node_utilization(n->node, n->index, seg, t);
        sum += memory ? u * node_memory_share(seg->workload.kind) : u;
    }
    return sum / SIM_UTIL_POINTS;
}

/* Power usage (field 155): the last second's average where the model reports one, else the instant. */
static double node_reported_power(const node_now *n)
{
    if (!n->model->power_averaged)
        return n->inst.power_w;
    double sum = 0.0;
    for (int i = 0; i < SIM_POWER_AVERAGE_STEPS; i++)
        sum += n->state->power_history_w[i];
    return sum / SIM_POWER_AVERAGE_STEPS;
}

static bool node_active(const node_now *n)
{
    return !(n->inst.reasons & SIM_CLOCKS_EVENT_GPU_IDLE);
}

/* Bytes per second over PCIe: data loading in, results and logs out. */
static double node_pcie_rate(const node_now *n, bool tx)
{
    double share = tx ? 0.015 : 0.05;
    double noise = node_white(n->node->seed, n->index, tx ? CH_PCIE_TX : CH_PCIE_RX, n->t_us, SIM_STEP_US);
    double base = n->model->pcie_bytes_per_s;
    return base * (0.0004 + share * n->inst.util * (1.0 + 0.3 * noise));
}

/* Bytes per second on one NVLink lane (gradient all-reduce), one direction. */
static double node_nvlink_lane_rate(const node_now *n, int lane, bool tx)
{
    if (lane >= n->model->nvlinks)
        return 0.0;
    double noise = node_smooth_noise(n->node->seed, n->index, CH_NVLINK + 16 * (lane * 2 + tx), n->t_us, 400000);
    double u = n->inst.util;
    double share = n->seg->workload.kind == SIM_WL_SPIKES ? 0.1 : 0.35;
    return n->model->nvlink_bytes_per_s * share * u * (1.0 + 0.15 * noise);
}

/* Flit CRC errors an `errors` event added on one lane: the storm's count spread evenly over the links. */
static uint64_t node_nvlink_storm_lane(const node_now *n, int lane)
{
    int links = n->model->nvlinks;
    if (links <= 0 || lane >= links)
        return 0;
    uint64_t total = sim_fault_count(n->gpu, SIM_ERR_NVLINK_CRC, n->t_us);
    return total * (uint64_t)(lane + 1) / (uint64_t)links - total * (uint64_t)lane / (uint64_t)links;
}

static uint64_t node_nvlink_error_total(const node_now *n, int family)
{
    uint64_t sum = 0;
    for (int lane = 0; lane < SIM_MAX_NVLINKS; lane++)
        sum += n->state->nvlink_errors[family][lane];
    if (family == 0 && n->model->nvlinks > 0)
        sum += sim_fault_count(n->gpu, SIM_ERR_NVLINK_CRC, n->t_us);
    return sum;
}

static double node_nvlink_lane_mb(const node_now *n, int lane)
{
    return (node_nvlink_lane_rate(n, lane, true) + node_nvlink_lane_rate(n, lane, false)) / 1e6;
}

/* Error family of a per-lane NVLink field: flit CRC, data CRC, replay, recovery; -1 otherwise. */
static int node_nvlink_family(unsigned short id)
{
    if ((id >= 400 && id <= 408) || (id >= 451 && id <= 456) || (id >= 481 && id <= 483))
        return 0;
    if ((id >= 410 && id <= 418) || (id >= 457 && id <= 462) || (id >= 484 && id <= 486))
        return 1;
    if ((id >= 420 && id <= 428) || (id >= 463 && id <= 468) || (id >= 487 && id <= 489))
        return 2;
    if ((id >= 430 && id <= 438) || (id >= 469 && id <= 474) || (id >= 491 && id <= 493))
        return 3;
    return -1;
}

static bool node_sample_nvlink_fields(const node_now *n, unsigned short id, sim_value *out)
{
    const sim_state *s = n->state;
    int family = node_nvlink_family(id);
    int lane = sim_model_nvlink_lane(id);
    if (family >= 0 && lane >= 0) {
        uint64_t storm = family == 0 ? node_nvlink_storm_lane(n, lane) : 0;
        sim_put_int(out, (int64_t)(s->nvlink_errors[family][lane] + storm));
        return true;
    }
    if (lane >= 0) {
        /* the only per-lane fields left are throughputs, in MB/s */
        sim_put_int(out, (int64_t)node_nvlink_lane_mb(n, lane));
        return true;
    }
    double total_mb = 0;
    switch (id) {
    case 409: sim_put_int(out, (int64_t)node_nvlink_error_total(n, 0)); return true;
    case 419: sim_put_int(out, (int64_t)node_nvlink_error_total(n, 1)); return true;
    case 429: case 499: sim_put_int(out, (int64_t)node_nvlink_error_total(n, 2)); return true;
    case 439: case 498: sim_put_int(out, (int64_t)node_nvlink_error_total(n, 3)); return true;
    case 497:
        sim_put_int(out, (int64_t)(node_nvlink_error_total(n, 0) + node_nvlink_error_total(n, 1)));
        return true;
    case 449:
        for (int l = 0; l < n->model->nvlinks; l++)
            total_mb += (double)(int64_t)node_nvlink_lane_mb(n, l);
        sim_put_int(out, (int64_t)total_mb);
        return true;
    default:
        break;
    }
    if (id == 1011 || id == 1012) {
        double sum = 0;
        for (int l = 0; l < n->model->nvlinks; l++)
            sum += node_nvlink_lane_rate(n, l, id == 1011);
        sim_put_int(out, (int64_t)sum);
        return true;
    }
    if (id >= 1040 && id <= 1075) {
        sim_put_int(out, (int64_t)node_nvlink_lane_rate(n, (id - 1040) / 2, (id - 1040) % 2 == 0));
        return true;
    }
    return false;
}

static bool node_sample_profiling(const node_now *n, unsigned short id, sim_value *out)
{
    double u = n->inst.util;
    sim_workload_kind kind = n->seg->workload.kind;
    double tensor = u * node_tensor_share(kind);
    double sm_active = u * 0.93;
    const node_kernel_profile *k = node_kernel_profile_of(kind);
    double occupancy = k != NULL ? u * k->occupancy : sm_active * 0.48;
    if (k != NULL)
        sm_active = u * k->sm_active;
    switch (id) {
    case 1001: sim_put_double(out, u * 0.99); return true;
    case 1002: sim_put_double(out, sm_active); return true;
    case 1003: sim_put_double(out, occupancy); return true;
    case 1004: sim_put_double(out, tensor); return true;
    case 1005: sim_put_double(out, node_dram_activity(kind, u)); return true;
    case 1006: sim_put_double(out, k != NULL ? 0.0 : u * 0.004); return true;
    case 1007: sim_put_double(out, k != NULL ? u * k->fp32 : u * 0.22); return true;
    case 1008: sim_put_double(out, k != NULL ? 0.0 : u * 0.08); return true;
    case 1009: sim_put_int(out, (int64_t)node_pcie_rate(n, true)); return true;
    case 1010: sim_put_int(out, (int64_t)node_pcie_rate(n, false)); return true;
    case 1013: case 1015: sim_put_double(out, 0.0); return true;
    case 1014: sim_put_double(out, tensor * 0.98); return true;
    case 1016: sim_put_double(out, u * 0.12); return true;
    default:
        break;
    }
    if (id >= 1017 && id <= 1034) {
        sim_put_double(out, 0.0);
        return true;
    }
    return false;
}

static bool node_sample_memory(const node_now *n, unsigned short id, sim_value *out)
{
    const sim_model *m = n->model;
    int64_t usable = m->fb_total_mib - m->fb_reserved_mib;
    int64_t used = node_fb_used_mib(n);
    int64_t dbe = node_xid_count(n->gpu, 48, n->t_us);
    /* XID 63 (a row remapping recorded) adds an uncorrectable remapped row, as a DBE's remap does;
     * XID 64 (a remapping failed) sets the failure flag */
    int64_t unc_rows = dbe + node_xid_count(n->gpu, 63, n->t_us);
    int64_t remap_failed = node_xid_count(n->gpu, 64, n->t_us) > 0;
    uint64_t sbe_noise = (uint64_t)n->gpu->ecc_sbe_base + n->state->ecc_sbe;
    /* an SBE storm counts in the ECC counters but remaps no row by itself (billions of SBEs, 8 rows,
     * on a real H100): only remap_rate adds correctable remapped rows */
    uint64_t sbe_storm = sim_fault_count(n->gpu, SIM_ERR_SBE, n->t_us);
    uint64_t sbe_agg = sbe_noise + sbe_storm;
    int64_t cor_rows = (int64_t)(sbe_noise / 25 + sim_fault_count(n->gpu, SIM_ERR_REMAP, n->t_us));
    int64_t bar1_used = node_active(n) ? 37 : 2;
    switch (id) {
    case 251: sim_put_int(out, usable - used); return true;
    case 252: sim_put_int(out, used); return true;
    case 254: sim_put_double(out, (double)used / (double)usable); return true;
    case 92: sim_put_int(out, bar1_used); return true;
    case 93: sim_put_int(out, m->bar1_total_mib - bar1_used); return true;
    case 310: case 318: sim_put_int(out, (int64_t)(n->state->ecc_sbe + sbe_storm)); return true;
    case 311: case 319: sim_put_int(out, dbe); return true;
    case 312: case 328: sim_put_int(out, (int64_t)sbe_agg); return true;
    case 313: case 329: sim_put_int(out, dbe); return true;
    case 314: case 315: case 316: case 317: case 320: case 321: case 322: case 323:
    case 324: case 325: case 326: case 327: case 330: case 331: case 332: case 333:
        sim_put_int(out, 0); return true;
    case 385: sim_put_int(out, 640 - unc_rows); return true;
    case 386: sim_put_int(out, unc_rows); return true;
    case 387: case 388: case 389: sim_put_int(out, 0); return true;
    case 395: sim_put_int(out, remap_failed); return true;
    case 390: case 394: sim_put_int(out, cor_rows); return true;
    case 391: case 393: sim_put_int(out, unc_rows); return true;
    case 392: case 396: sim_put_int(out, unc_rows > 0); return true;
    default: return false;
    }
}

static bool node_sample_dynamic(const node_now *n, unsigned short id, sim_value *out)
{
    const sim_model *m = n->model;
    const sim_state *s = n->state;
    bool active = node_active(n);
    switch (id) {
    case 160: case 164: sim_put_double(out, node_power_limit_at(n->gpu, n->read_us)); return true;
    case 100: sim_put_int(out, node_sm_clock(n)); return true;
    case 101: sim_put_int(out, active ? m->mem_clock_max : m->mem_clock_idle); return true;
    case 102:
        sim_put_int(out, active ? (int)(m->video_clock_max * n->inst.clock_factor) : m->video_clock_idle);
        return true;
    case 112: sim_put_int(out, (int64_t)n->inst.reasons); return true;
    case 150: sim_put_int(out, (int64_t)llround(s->temp_c)); return true;
    case 153: sim_put_int(out, m->temp_slowdown - (int64_t)llround(s->temp_c)); return true;
    case 155: sim_put_double(out, round(node_reported_power(n) * 1000.0) / 1000.0); return true;
    case 157: sim_put_double(out, round(n->inst.power_w * 1000.0) / 1000.0); return true;
    /* the energy drawn up to this step: the integral of the instant power */
    case 156: sim_put_int(out, (int64_t)(n->gpu->energy_base_mj + s->energy_mj)); return true;
    case 190: sim_put_int(out, active ? 0 : m->idle_pstate); return true;
    case 200: sim_put_int(out, (int64_t)(node_pcie_rate(n, true) / 1024.0)); return true;
    case 201: sim_put_int(out, (int64_t)(node_pcie_rate(n, false) / 1024.0)); return true;
    case 202: sim_put_int(out, (int64_t)(s->pcie_replays + sim_fault_count(n->gpu, SIM_ERR_PCIE_REPLAY, n->t_us)));
        return true;
    case 203: sim_put_int(out, (int64_t)llround(node_util_reading(n, false) * 100.0)); return true;
    case 204: sim_put_int(out, (int64_t)llround(node_util_reading(n, true) * 100.0)); return true;
    case 206: case 207: sim_put_int(out, 0); return true;
    case 237: sim_put_int(out, (!active && m->idle_pstate > 0) ? 1 : m->pcie_gen); return true;
    case 240: sim_put_int(out, (int64_t)s->power_violation_ns); return true;
    case 241: case 247: sim_put_int(out, (int64_t)s->thermal_violation_ns); return true;
    case 244: sim_put_int(out, (int64_t)s->low_util_violation_ns); return true;
    case 246: sim_put_int(out, (int64_t)(s->power_violation_ns + s->thermal_violation_ns)); return true;
    default: return false;
    }
}

static void node_sample_event(const sim_gpu *g, int64_t t_us, sim_value *out)
{
    const sim_event *last = NULL;
    for (size_t i = 0; i < g->xid_count && g->xids[i].t_rel_us <= t_us; i++)
        last = &g->xids[i];
    if (last == NULL)
        node_put_sentinel(out, SIM_VALUE_BLANK);
    else
        sim_put_int(out, last->value);
}

static int node_sample_gpu(sim_node *node, unsigned int index, unsigned short id, int64_t t_us,
                           sim_value *out)
{
    const sim_gpu *g = &node->gpus[index];
    if (node_sample_identity(node, index, id, out))
        return DCGM_ST_OK;
    if (id == 230 || id == 450) {
        if (id == 230)
            node_sample_event(g, t_us, out);
        else
            node_put_sentinel(out, SIM_VALUE_BLANK);
        return DCGM_ST_OK;
    }
    /* a replayed field is the trace's, on the trace's own timestamps */
    const sim_segment *seg = node_segment_at(g, t_us);
    double replayed;
    if (seg->workload.kind == SIM_WL_REPLAY &&
        sim_trace_value(seg->workload.trace, id, t_us - seg->start_us, seg->workload.loop, &replayed)) {
        if (out->type == DCGM_FT_DOUBLE)
            sim_put_double(out, replayed);
        else
            sim_put_int(out, sim_int64_of(replayed));
        return DCGM_ST_OK;
    }
    int64_t step = t_us / SIM_STEP_US;
    if (id == 140) {
        const sim_state *at = node_state_at(node, index, step - step % SIM_MEM_TEMP_PERIOD_STEPS);
        if (at == NULL)
            return DCGM_ST_MEMORY;
        sim_put_int(out, (int64_t)llround(at->mem_temp_c));
        return DCGM_ST_OK;
    }
    /* every other dynamic reading is what the GPU did at the start of its 100 ms step */
    int64_t read_us = t_us;
    t_us = step * SIM_STEP_US;
    const sim_state *state = node_state_at(node, index, step);
    if (state == NULL)
        return DCGM_ST_MEMORY;
    node_now n = {
        .node = node, .index = index, .gpu = g, .model = g->model,
        .seg = node_segment_at(g, t_us), .state = state, .t_us = t_us, .read_us = read_us,
    };
    n.inst = node_inst_at(node, index, t_us, state->temp_c);
    if (node_sample_dynamic(&n, id, out) || node_sample_memory(&n, id, out) ||
        node_sample_profiling(&n, id, out) || node_sample_nvlink_fields(&n, id, out))
        return DCGM_ST_OK;
    /* supported by the model table but not computed here: a bug, but never garbage */
    node_put_sentinel(out, SIM_VALUE_NOT_SUPPORTED);
    return DCGM_ST_OK;
}

static bool node_field_is_global(const dcgm_field_meta_t *meta)
{
    return meta->scope == DCGM_FS_GLOBAL || meta->entityLevel == DCGM_FE_NONE;
}

/* DCGM files the vGPU licence status (526) under vGPU entities, but its cache manager reads it
 * from the GPU's own NVML device (the GPU's licensable features), so a GPU answers it too */
#define NODE_VGPU_LICENSE_STATUS 526

static bool node_level_is_gpu(const dcgm_field_meta_t *meta)
{
    return meta->entityLevel == DCGM_FE_GPU || meta->entityLevel == DCGM_FE_GPU_I ||
           meta->entityLevel == DCGM_FE_GPU_CI || meta->fieldId == NODE_VGPU_LICENSE_STATUS;
}

int sim_node_field_supported(const sim_node *node, unsigned int gpu, unsigned short fieldId)
{
    const dcgm_field_meta_t *meta = sim_field_meta(fieldId);
    if (node == NULL || meta == NULL)
        return 0;
    if (node_field_is_global(meta))
        return fieldId == 1 || fieldId == 2 || fieldId == 4 || fieldId == 5;
    if (gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count || !node_level_is_gpu(meta))
        return 0;
    const sim_gpu *g = &node->gpus[gpu];
    return sim_model_supports(g->model, g->mig_instances, meta) ? 1 : 0;
}

int sim_node_sample(sim_node *node, unsigned int gpu, unsigned short fieldId,
                    int64_t t_rel_us, sim_value *out)
{
    if (node == NULL || out == NULL)
        return DCGM_ST_BADPARAM;
    const dcgm_field_meta_t *meta = sim_field_meta(fieldId);
    if (meta == NULL)
        return DCGM_ST_UNKNOWN_FIELD;
    if (t_rel_us > SIM_MAX_T_US)
        return DCGM_ST_BADPARAM;
    /* a clock read a hair before the node's start is the start */
    if (t_rel_us < 0)
        t_rel_us = 0;
    memset(out, 0, sizeof *out);
    out->type = meta->fieldType;
    if (node_field_is_global(meta))
        return node_sample_global(node, fieldId, out);
    if (gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count)
        return DCGM_ST_BADPARAM;
    if (!sim_node_field_supported(node, gpu, fieldId)) {
        node_put_sentinel(out, SIM_VALUE_NOT_SUPPORTED);
        return DCGM_ST_OK;
    }
    int64_t lost = node->gpus[gpu].lost_at_us;
    if (lost >= 0 && t_rel_us >= lost) {
        node_put_sentinel(out, SIM_VALUE_BLANK);
        return DCGM_ST_OK;
    }
    return node_sample_gpu(node, gpu, fieldId, t_rel_us, out);
}

int sim_node_slowdown_ns(sim_node *node, unsigned int gpu, int64_t t_rel_us, uint64_t reason, int64_t *ns)
{
    if (node == NULL || ns == NULL || gpu >= DCGM_MAX_NUM_DEVICES || gpu >= node->gpu_count ||
        t_rel_us > SIM_MAX_T_US)
        return DCGM_ST_BADPARAM;
    if (reason != SIM_CLOCKS_EVENT_HW_THERMAL && reason != SIM_CLOCKS_EVENT_HW_POWER_BRAKE)
        return DCGM_ST_BADPARAM;
    /* counted up to the start of the read's step, as the violation fields are */
    const sim_state *state = node_state_at(node, gpu, (t_rel_us < 0 ? 0 : t_rel_us) / SIM_STEP_US);
    if (state == NULL)
        return DCGM_ST_MEMORY;
    uint64_t counted = reason == SIM_CLOCKS_EVENT_HW_THERMAL ? state->hw_thermal_slowdown_ns
                                                             : state->hw_power_brake_slowdown_ns;
    *ns = (int64_t)counted;
    return DCGM_ST_OK;
}

/* ---- settings made while the node runs ------------------------------------ */

int sim_node_set_power_limit(sim_node *node, unsigned int gpu, int64_t from_us, double watts)
{
    if (node == NULL || gpu >= node->gpu_count || !(watts > 0.0))
        return DCGM_ST_BADPARAM;
    sim_gpu *g = &node->gpus[gpu];
    if (from_us < 0)
        from_us = 0;
    /* history before the last change stays as it was */
    if (g->limit_change_count > 0 && from_us < g->limit_changes[g->limit_change_count - 1].from_us)
        from_us = g->limit_changes[g->limit_change_count - 1].from_us;
    if (g->limit_change_count > 0 && from_us == g->limit_changes[g->limit_change_count - 1].from_us) {
        g->limit_changes[g->limit_change_count - 1].watts = watts;
    } else {
        if (g->limit_change_count == g->limit_change_cap) {
            size_t cap = g->limit_change_cap ? g->limit_change_cap * 2 : 8;
            sim_limit_change *grown = realloc(g->limit_changes, cap * sizeof *grown);
            if (grown == NULL)
                return DCGM_ST_MEMORY;
            g->limit_changes = grown;
            g->limit_change_cap = cap;
        }
        g->limit_changes[g->limit_change_count++] = (sim_limit_change){ from_us, watts };
    }
    /* Grid states at or after from_us were computed with the old limit: drop
     * them, so the recurrence is redone from the last state before it. */
    sim_state_cache *c = &g->cache;
    const int64_t span_us = SIM_CHECKPOINT_STEPS * SIM_STEP_US;
    size_t keep = (size_t)((from_us + span_us - 1) / span_us);
    if (keep < c->checkpoint_count)
        c->checkpoint_count = keep;
    if (c->frontier.step * SIM_STEP_US >= from_us) {
        if (c->checkpoint_count > 0)
            c->frontier = c->checkpoints[c->checkpoint_count - 1];
        else
            c->checkpoint_count = 0; /* the next read starts again from t = 0 */
    }
    c->scratch_valid = false;
    return DCGM_ST_OK;
}
