/*
 * nvml_processes.c -- the running-process lists and per-process utilisation
 * samples, from the node's processes (sim_node_processes).
 *
 * The lists follow the driver's two-call protocol: a count too small for
 * the processes there are (NULL buffer and 0 included) answers
 * NVML_ERROR_INSUFFICIENT_SIZE with the count needed; no processes is
 * SUCCESS with count 0.  The unversioned calls write the 16-byte v1 record,
 * _v2 and _v3 the 24-byte one with the MIG instance ids (0xFFFFFFFF without
 * MIG).  On a MIG GPU the whole GPU's handle lists every instance's
 * processes, each with its ids, and a MIG device handle only its instance's.
 *
 * Utilisation samples (nvmlDeviceGetProcessUtilization, and the versioned
 * nvmlDeviceGetProcessesUtilizationInfo): the driver samples each process
 * once per 200 ms utilisation period and keeps about a second of them; a
 * call returns those stamped after lastSeenTimeStamp (CPU time in us; 0: all
 * it keeps), NOT_FOUND when there are none, INSUFFICIENT_SIZE with the count
 * for a NULL or short array, and NOT_SUPPORTED on a MIG-enabled GPU (either
 * handle: the MIG device handle's call runs on its GPU).
 */
#include <stdlib.h>
#include <string.h>

#include "nvml_internal.h"

#define PROC_UTIL_PERIOD_US 200000LL    /* the node's utilisation sample period */
#define PROC_UTIL_KEPT 5                /* samples kept per process: one second */

/* The node's processes at t, in a buffer the caller frees; NULL with *n = 0 when there are none. */
static sim_process_info *processes_at(unsigned int gpu, int64_t t_us, int *n)
{
    *n = nvml_processes_at(gpu, t_us, NULL, 0);
    if (*n <= 0) {
        *n = 0;
        return NULL;
    }
    sim_process_info *list = calloc((size_t)*n, sizeof *list);
    if (list == NULL) {
        *n = -1;
        return NULL;
    }
    int again = nvml_processes_at(gpu, t_us, list, *n);
    if (again < *n)
        *n = again;
    return list;
}

/* Whether a process is in a list: of its type, and on a MIG device handle in its instance. */
static bool listed(const sim_process_info *p, bool graphics, unsigned int instance)
{
    return p->graphics == graphics && (instance == NVML_SIM_WHOLE_GPU || p->gpu_instance == instance);
}

static nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int *infoCount, void *infos, bool graphics,
                                      bool with_instances)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t begin_rc = nvml_begin_device_or_mig(NVML_FN_RUNNING_PROCESSES, device, &call, &instance);
    if (begin_rc != NVML_SUCCESS)
        return begin_rc;
    if (infoCount == NULL || (*infoCount > 0 && infos == NULL))
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    int n = 0;
    sim_process_info *list = processes_at(call.gpu, call.t_us, &n);
    if (n < 0)
        return nvml_end(NVML_ERROR_MEMORY);
    unsigned int wanted = 0;
    for (int i = 0; i < n; i++)
        wanted += listed(&list[i], graphics, instance);
    if (*infoCount < wanted) {
        *infoCount = wanted;
        free(list);
        return nvml_end(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned int k = 0;
    for (int i = 0; i < n; i++) {
        if (!listed(&list[i], graphics, instance))
            continue;
        if (with_instances) {
            ((nvmlProcessInfo_t *)infos)[k] = (nvmlProcessInfo_t){
                .pid = list[i].pid, .usedGpuMemory = list[i].fb_bytes,
                .gpuInstanceId = list[i].gpu_instance, .computeInstanceId = list[i].compute_instance,
            };
        } else {
            ((nvmlProcessInfo_v1_t *)infos)[k] = (nvmlProcessInfo_v1_t){
                .pid = list[i].pid, .usedGpuMemory = list[i].fb_bytes,
            };
        }
        k++;
    }
    *infoCount = k;
    free(list);
    return nvml_end(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    return running_processes(device, infoCount, infos, false, true);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    return running_processes(device, infoCount, infos, false, true);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos)
{
    return running_processes(device, infoCount, infos, false, false);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos)
{
    return running_processes(device, infoCount, infos, true, true);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos)
{
    return running_processes(device, infoCount, infos, true, true);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                               nvmlProcessInfo_v1_t *infos)
{
    return running_processes(device, infoCount, infos, true, false);
}

/* Appends the samples of one sample time (simulated us) to *out (grown as needed). */
static bool add_samples(unsigned int gpu, int64_t sample_us, nvmlProcessUtilizationSample_t **out, unsigned int *n,
                        unsigned int *cap)
{
    int count = 0;
    sim_process_info *list = processes_at(gpu, sample_us, &count);
    if (count < 0)
        return false;
    if (*n + (unsigned int)count > *cap) {
        unsigned int grown_cap = (*n + (unsigned int)count) * 2;
        nvmlProcessUtilizationSample_t *grown = realloc(*out, grown_cap * sizeof *grown);
        if (grown == NULL) {
            free(list);
            return false;
        }
        *out = grown;
        *cap = grown_cap;
    }
    for (int i = 0; i < count; i++) {
        (*out)[(*n)++] = (nvmlProcessUtilizationSample_t){
            .pid = list[i].pid, .timeStamp = (unsigned long long)nvml_wall_of(sample_us),
            .smUtil = (unsigned int)(list[i].sm_util + 0.5), .memUtil = (unsigned int)(list[i].mem_util + 0.5),
        };
    }
    free(list);
    return true;
}

/* The samples kept on the call's GPU stamped after last_seen (oldest first), in *out for the caller to free. */
static nvmlReturn_t samples_after(const nvml_call *call, unsigned long long last_seen,
                                  nvmlProcessUtilizationSample_t **out, unsigned int *n)
{
    *out = NULL;
    *n = 0;
    if (call->sim->mig_instances > 0)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned int cap = 0;
    int64_t newest = call->t_us / PROC_UTIL_PERIOD_US * PROC_UTIL_PERIOD_US;
    for (int k = PROC_UTIL_KEPT - 1; k >= 0; k--) {
        int64_t at = newest - k * PROC_UTIL_PERIOD_US;
        if (at <= 0 || (unsigned long long)nvml_wall_of(at) <= last_seen)
            continue;
        if (!add_samples(call->gpu, at, out, n, &cap)) {
            free(*out);
            *out = NULL;
            *n = 0;
            return NVML_ERROR_MEMORY;
        }
    }
    return *n == 0 ? NVML_ERROR_NOT_FOUND : NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                         nvmlProcessUtilizationSample_t *utilization,
                                                         unsigned int *processSamplesCount,
                                                         unsigned long long lastSeenTimeStamp)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t begin_rc = nvml_begin_device_or_mig(NVML_FN_PROCESS_UTILIZATION, device, &call, &instance);
    if (begin_rc != NVML_SUCCESS)
        return begin_rc;
    if (processSamplesCount == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    nvmlProcessUtilizationSample_t *samples = NULL;
    unsigned int n = 0;
    nvmlReturn_t rc = samples_after(&call, lastSeenTimeStamp, &samples, &n);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_MEMORY)
        return nvml_end(rc);
    if (rc == NVML_SUCCESS && (utilization == NULL || *processSamplesCount < n))
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    else if (rc == NVML_SUCCESS)
        memcpy(utilization, samples, n * sizeof *samples);
    *processSamplesCount = n;
    free(samples);
    return nvml_end(rc);
}

/* The same samples in the versioned struct, with JPEG and OFA utilisation (0: the node models neither). */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                               nvmlProcessesUtilizationInfo_t *info)
{
    unsigned int instance;
    nvml_call call;
    nvmlReturn_t begin_rc = nvml_begin_device_or_mig(NVML_FN_PROCESS_UTILIZATION, device, &call, &instance);
    if (begin_rc != NVML_SUCCESS)
        return begin_rc;
    if (info == NULL)
        return nvml_end(NVML_ERROR_INVALID_ARGUMENT);
    if (info->version != nvmlProcessesUtilizationInfo_v1)
        return nvml_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlProcessUtilizationSample_t *samples = NULL;
    unsigned int n = 0;
    nvmlReturn_t rc = samples_after(&call, info->lastSeenTimeStamp, &samples, &n);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_MEMORY)
        return nvml_end(rc);
    if (rc == NVML_SUCCESS && (info->procUtilArray == NULL || info->processSamplesCount < n))
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    else if (rc == NVML_SUCCESS) {
        for (unsigned int i = 0; i < n; i++) {
            info->procUtilArray[i] = (nvmlProcessUtilizationInfo_v1_t){
                .timeStamp = samples[i].timeStamp, .pid = samples[i].pid,
                .smUtil = samples[i].smUtil, .memUtil = samples[i].memUtil,
            };
        }
    }
    info->processSamplesCount = n;
    free(samples);
    return nvml_end(rc);
}
