/*
 * processes.c -- the processes running on each GPU, as the driver lists
 * them (pid, framebuffer held, MIG instance) and their share of the GPU's
 * utilisation.
 *
 * A scenario's [[process]] tables name them (scenario.c); a churn table
 * stands for a stream of short-lived instances, evaluated here at the time
 * asked rather than stored.  Where a scenario names processes for a GPU,
 * they are what the GPU does: its framebuffer used is the sum of theirs and
 * it is idle while none with load is alive (node.c asks sim_processes_busy
 * and sim_processes_fb_mib).  A GPU without any runs one synthetic process
 * that holds exactly what its workload uses, so that every node, the
 * default one included, lists a process wherever a GPU has load.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "node_internal.h"

#define MIB (1024.0 * 1024.0)

/* The range of churn instances k (first <= k <= last) alive at t; false when none. */
static bool proc_churn_alive(const sim_process *p, int64_t t_us, int64_t *first, int64_t *last)
{
    int64_t since = t_us - p->start_us;
    if (since < 0)
        return false;
    int64_t end = p->stop_us >= 0 ? p->stop_us : INT64_MAX;
    double rate = p->churn_per_s;
    /* instance k starts at start + k / rate and lives lifetime_us, but not past stop */
    *last = (int64_t)floor((double)since * 1e-6 * rate);
    int64_t starts_before_end = end == INT64_MAX ? *last : (int64_t)ceil((double)(end - p->start_us) * 1e-6 * rate) - 1;
    if (starts_before_end < *last)
        *last = starts_before_end;
    *first = (int64_t)floor((double)(since - p->lifetime_us) * 1e-6 * rate) + 1;
    if (*first < 0)
        *first = 0;
    if (*last - *first + 1 > SIM_PROCESS_MAX_ALIVE)
        *first = *last - SIM_PROCESS_MAX_ALIVE + 1;
    return *last >= *first && t_us < end;
}

static int64_t proc_churn_start(const sim_process *p, int64_t k)
{
    return p->start_us + (int64_t)ceil((double)k * 1e6 / p->churn_per_s);
}

static bool proc_alive(const sim_process *p, int64_t t_us)
{
    if (p->churn_per_s > 0.0) {
        int64_t first, last;
        return proc_churn_alive(p, t_us, &first, &last);
    }
    return t_us >= p->start_us && (p->stop_us < 0 || t_us < p->stop_us);
}

static double proc_fb_bytes(const sim_process *p, int64_t started_us, int64_t t_us)
{
    return p->fb_bytes + p->fb_growth_bytes_s * (double)(t_us - started_us) * 1e-6;
}

bool sim_processes_busy(const sim_gpu *gpu, int64_t t_us)
{
    for (size_t i = 0; i < gpu->process_count; i++) {
        const sim_process *p = &gpu->processes[i];
        if (p->sm_share > 0.0 && proc_alive(p, t_us))
            return true;
    }
    return false;
}

double sim_processes_fb_mib(const sim_gpu *gpu, int64_t t_us)
{
    double bytes = 0.0;
    for (size_t i = 0; i < gpu->process_count; i++) {
        const sim_process *p = &gpu->processes[i];
        if (p->churn_per_s > 0.0) {
            int64_t first, last;
            if (!proc_churn_alive(p, t_us, &first, &last))
                continue;
            for (int64_t k = first; k <= last; k++)
                bytes += proc_fb_bytes(p, proc_churn_start(p, k), t_us);
        } else if (proc_alive(p, t_us)) {
            bytes += proc_fb_bytes(p, p->start_us, t_us);
        }
    }
    return bytes / MIB;
}

static double proc_reading(sim_node *node, unsigned int gpu, unsigned short field, int64_t t_us)
{
    sim_value v;
    memset(&v, 0, sizeof v);
    if (sim_node_sample(node, gpu, field, t_us, &v) != DCGM_ST_OK || v.kind != SIM_VALUE_OK)
        return 0.0;
    return v.dbl;
}

static int proc_compare_pid(const void *a, const void *b)
{
    const sim_process_info *x = a, *y = b;
    return x->pid < y->pid ? -1 : (x->pid > y->pid);
}

/* Adds one live process to the list (while there is room) and its weights to the sums. */
static void proc_put(const sim_process *p, unsigned int pid, double fb_bytes, sim_process_info *out, int max,
                     int *n, double *sm_sum, double *mem_sum)
{
    if (*n < max) {
        out[*n] = (sim_process_info){
            .pid = pid, .graphics = p->graphics,
            .fb_bytes = fb_bytes > 0.0 ? (uint64_t)fb_bytes : 0,
            .gpu_instance = p->gpu_instance, .compute_instance = p->compute_instance,
            .sm_util = p->sm_share, .mem_util = p->mem_share,   /* weights until scaled below */
        };
    }
    (*n)++;
    *sm_sum += p->sm_share;
    *mem_sum += p->mem_share;
}

int sim_node_processes(sim_node *node, unsigned int gpu, int64_t t_rel_us, sim_process_info *out, int max)
{
    if (node == NULL || gpu >= node->gpu_count || (out == NULL && max > 0))
        return 0;
    sim_gpu *g = &node->gpus[gpu];
    if (sim_node_gpu_lost_at(node, gpu) >= 0 && t_rel_us >= g->lost_at_us)
        return 0;
    double sm = proc_reading(node, gpu, 203, t_rel_us);
    double mem = proc_reading(node, gpu, 204, t_rel_us);
    if (g->process_count == 0) {
        /* the synthetic process that runs the workload; an idle GPU has none */
        size_t s = g->segment_count;
        while (s > 1 && g->segments[s - 1].start_us > t_rel_us)
            s--;
        if (g->segments[s - 1].workload.kind == SIM_WL_IDLE)
            return 0;
        if (max > 0) {
            out[0] = (sim_process_info){
                .pid = SIM_PROCESS_PID_BASE + gpu, .graphics = false,
                .fb_bytes = (uint64_t)(proc_reading(node, gpu, 252, t_rel_us) * MIB),
                .gpu_instance = g->mig_instances > 0 ? 0 : SIM_NO_MIG_ID,
                .compute_instance = g->mig_instances > 0 ? 0 : SIM_NO_MIG_ID,
                .sm_util = sm, .mem_util = mem,
            };
        }
        return 1;
    }
    /* framebuffer on the grid step the GPU's own FB used (field 252) reads, so the two agree */
    t_rel_us -= t_rel_us % SIM_STEP_US;
    int n = 0;
    double sm_sum = 0.0, mem_sum = 0.0;
    for (size_t i = 0; i < g->process_count; i++) {
        const sim_process *p = &g->processes[i];
        if (p->churn_per_s > 0.0) {
            int64_t first, last;
            if (!proc_churn_alive(p, t_rel_us, &first, &last))
                continue;
            for (int64_t k = first; k <= last; k++)
                proc_put(p, p->pid + (unsigned int)(k % SIM_PROCESS_CHURN_PIDS), proc_fb_bytes(p, proc_churn_start(p, k), t_rel_us),
                         out, max, &n, &sm_sum, &mem_sum);
        } else if (proc_alive(p, t_rel_us)) {
            proc_put(p, p->pid, proc_fb_bytes(p, p->start_us, t_rel_us), out, max, &n, &sm_sum, &mem_sum);
        }
    }
    int written = n < max ? n : max;
    /* the GPU's readings split among its live processes in proportion to their shares */
    for (int i = 0; i < written; i++) {
        out[i].sm_util = sm_sum > 0.0 ? sm * out[i].sm_util / sm_sum : 0.0;
        out[i].mem_util = mem_sum > 0.0 ? mem * out[i].mem_util / mem_sum : 0.0;
    }
    if (written > 1)
        qsort(out, (size_t)written, sizeof *out, proc_compare_pid);
    return n;
}
