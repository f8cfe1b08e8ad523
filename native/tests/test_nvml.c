/*
 * test_nvml.c -- the simulated libnvidia-ml.so.1 through dlopen, as an NVML
 * client uses it: init and handles, values against the simulated node for
 * the same scenario and time, NVML's error codes, XID events, GPM, costs.
 *
 * The node's sources are linked in (as test_node.c's are) so that the
 * expected values come from the model itself; the library under test keeps
 * its own copy behind its version script, so the two never share state.
 *
 * Usage: test_nvml BUILD_DIR   (loads BUILD_DIR/libnvidia-ml.so.1; exit 0 = pass)
 */
#include "../node/node_internal.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_SCRATCH_FILES
#include "check.h"

#include "../nvml/nvml_abi.h"

/* The entry points this test calls: return type, name, parameter list. */
#define NVML_TEST_FUNCTIONS(X)                                                                         \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                               \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                              \
    X(const char *, nvmlErrorString, (nvmlReturn_t))                                                   \
    X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *, unsigned int))                                \
    X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int *))                                        \
    X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *))                                           \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))                     \
    X(nvmlReturn_t, nvmlDeviceGetHandleByUUID, (const char *, nvmlDevice_t *))                         \
    X(nvmlReturn_t, nvmlDeviceGetHandleByPciBusId_v2, (const char *, nvmlDevice_t *))                  \
    X(nvmlReturn_t, nvmlDeviceGetIndex, (nvmlDevice_t, unsigned int *))                                \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))                           \
    X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int))                           \
    X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nvmlPciInfo_t *))                          \
    X(nvmlReturn_t, nvmlDeviceGetArchitecture, (nvmlDevice_t, nvmlDeviceArchitecture_t *))             \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))                           \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t, nvmlMemory_v2_t *))                     \
    X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))               \
    X(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *)) \
    X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int *))                           \
    X(nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t, unsigned int *))                   \
    X(nvmlReturn_t, nvmlDeviceSetPowerManagementLimit, (nvmlDevice_t, unsigned int))                   \
    X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t, unsigned long long *))         \
    X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, nvmlClockType_t, unsigned int *))           \
    X(nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t, unsigned long long *))      \
    X(nvmlReturn_t, nvmlDeviceGetFanSpeed, (nvmlDevice_t, unsigned int *))                             \
    X(nvmlReturn_t, nvmlDeviceGetRetiredPages,                                                         \
      (nvmlDevice_t, nvmlPageRetirementCause_t, unsigned int *, unsigned long long *))                 \
    X(nvmlReturn_t, nvmlDeviceGetRemappedRows,                                                         \
      (nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *))                  \
    X(nvmlReturn_t, nvmlDeviceGetPcieThroughput, (nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned int *)) \
    X(nvmlReturn_t, nvmlDeviceGetFieldValues, (nvmlDevice_t, int, nvmlFieldValue_t *))                 \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *)) \
    X(nvmlReturn_t, nvmlDeviceGetMigMode, (nvmlDevice_t, unsigned int *, unsigned int *))              \
    X(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t *))                                            \
    X(nvmlReturn_t, nvmlDeviceRegisterEvents, (nvmlDevice_t, unsigned long long, nvmlEventSet_t))      \
    X(nvmlReturn_t, nvmlEventSetWait_v2, (nvmlEventSet_t, nvmlEventData_t *, unsigned int))            \
    X(nvmlReturn_t, nvmlEventSetFree, (nvmlEventSet_t))                                                \
    X(nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t, nvmlGpmSupport_t *))                     \
    X(nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t *))                                           \
    X(nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t))                                              \
    X(nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t, nvmlGpmSample_t))                                 \
    X(nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t *))

#define DECLARE_POINTER(ret, name, args) static ret(*p_##name) args;
NVML_TEST_FUNCTIONS(DECLARE_POINTER)

static void *library;

static int load_library(const char *build_dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", build_dir);
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
#define LOAD_POINTER(ret, name, args)                                    \
    *(void **)&p_##name = dlsym(library, #name);                         \
    if (p_##name == NULL) {                                              \
        fprintf(stderr, "%s: missing export %s\n", path, #name);         \
        return -1;                                                       \
    }
    NVML_TEST_FUNCTIONS(LOAD_POINTER)
    /* only NVML names leave the library: the node's own symbols stay inside */
    CHECK(dlsym(library, "sim_node_sample") == NULL, "the node leaks out of the library");
    CHECK(dlsym(library, "DcgmFieldsInit") == NULL, "a DCGM symbol leaks out of the library");
    return 0;
}

/* Two H100s training, a T4 (no GPM, no row remapping, page retirement), GPU 1 lost at 0.5 s. */
static const char *const SCENARIO =
    "seed = 7\n"
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\nworkload = \"training\"\n"
    "[[gpu]]\nmodel = \"T4\"\ncount = 1\nworkload = \"training\"\n"
    "[[event]]\nat = 0.3\ngpu = 0\nkind = \"xid\"\nxid = 13\ncount = 2\ninterval = 0.1\n"
    "[[event]]\nat = 0.5\ngpu = 1\nkind = \"lost\"\nxid = 79\n";

static double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static nvmlDevice_t handle(unsigned int index)
{
    nvmlDevice_t d = NULL;
    CHECK_RC(p_nvmlDeviceGetHandleByIndex_v2(index, &d), NVML_SUCCESS);
    return d;
}

/* ---- before init ----------------------------------------------------------------- */

static void test_uninitialized(void)
{
    unsigned int count = 0;
    nvmlDevice_t d = NULL;
    CHECK_RC(p_nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(p_nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(p_nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    CHECK(strcmp(p_nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost") == 0, "error string");
}

/* ---- values against the node at a frozen time ------------------------------------------ */

static void test_values_match_the_node(const char *scenario)
{
    const int64_t t_us = 5000000;
    setenv("DCGM_SIM_NVML_TIME_US", "5000000", 1);
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS);
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS); /* reference counted */
    sim_node *node = NULL;
    char err[256];
    CHECK_RC(sim_node_load(scenario, &node, err, sizeof err), DCGM_ST_OK);
    if (node == NULL)
        return;
    unsigned int count = 0;
    CHECK_RC(p_nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    CHECK(count == 3, "count %u", count);
    char text[128];
    CHECK_RC(p_nvmlSystemGetDriverVersion(text, sizeof text), NVML_SUCCESS);
    CHECK(strcmp(text, SIM_DRIVER_VERSION) == 0, "driver %s", text);
    CHECK_RC(p_nvmlSystemGetDriverVersion(text, 4), NVML_ERROR_INSUFFICIENT_SIZE);
    int cuda = 0;
    CHECK_RC(p_nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
    CHECK(cuda == SIM_CUDA_DRIVER_VERSION, "cuda %d", cuda);

    for (unsigned int i = 0; i < count; i++) {
        if (i == 1)
            continue; /* lost at 0.5 s */
        nvmlDevice_t d = handle(i);
        sim_value v;
        unsigned int index = 99, u = 0;
        CHECK_RC(p_nvmlDeviceGetIndex(d, &index), NVML_SUCCESS);
        CHECK(index == i, "index %u", index);

        CHECK_RC(p_nvmlDeviceGetName(d, text, sizeof text), NVML_SUCCESS);
        sim_node_sample(node, i, 50, t_us, &v);
        CHECK(strcmp(text, v.str) == 0, "name %s vs %s", text, v.str);
        CHECK_RC(p_nvmlDeviceGetUUID(d, text, sizeof text), NVML_SUCCESS);
        nvmlDevice_t by = NULL;
        CHECK_RC(p_nvmlDeviceGetHandleByUUID(text, &by), NVML_SUCCESS);
        CHECK(by == d, "by UUID");
        CHECK_RC(p_nvmlDeviceGetUUID(d, text, 10), NVML_ERROR_INSUFFICIENT_SIZE);
        nvmlPciInfo_t pci;
        CHECK_RC(p_nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
        sim_node_sample(node, i, 57, t_us, &v);
        CHECK(strcmp(pci.busId, v.str) == 0, "bus id %s vs %s", pci.busId, v.str);
        CHECK_RC(p_nvmlDeviceGetHandleByPciBusId_v2(pci.busIdLegacy, &by), NVML_SUCCESS);
        CHECK(by == d, "by legacy bus id %s", pci.busIdLegacy);

        CHECK_RC(p_nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u), NVML_SUCCESS);
        sim_node_sample(node, i, 150, t_us, &v);
        CHECK(u == (unsigned int)v.i64, "temp %u vs %lld", u, (long long)v.i64);
        CHECK_RC(p_nvmlDeviceGetPowerUsage(d, &u), NVML_SUCCESS);
        sim_node_sample(node, i, 155, t_us, &v);
        CHECK(u == (unsigned int)llround(v.dbl * 1000.0), "power %u mW vs %.3f W", u, v.dbl);
        CHECK_RC(p_nvmlDeviceGetEnforcedPowerLimit(d, &u), NVML_SUCCESS);
        sim_node_sample(node, i, 164, t_us, &v);
        CHECK(u == (unsigned int)llround(v.dbl * 1000.0), "limit %u mW vs %.3f W", u, v.dbl);
        CHECK_RC(p_nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &u), NVML_SUCCESS);
        sim_node_sample(node, i, 100, t_us, &v);
        CHECK(u == (unsigned int)v.i64, "sm clock %u vs %lld", u, (long long)v.i64);
        nvmlUtilization_t util;
        CHECK_RC(p_nvmlDeviceGetUtilizationRates(d, &util), NVML_SUCCESS);
        sim_node_sample(node, i, 203, t_us, &v);
        CHECK(util.gpu == (unsigned int)v.i64, "util %u vs %lld", util.gpu, (long long)v.i64);
        unsigned long long energy = 0;
        CHECK_RC(p_nvmlDeviceGetTotalEnergyConsumption(d, &energy), NVML_SUCCESS);
        sim_node_sample(node, i, 156, t_us, &v);
        CHECK(energy == (unsigned long long)v.i64, "energy %llu vs %lld", energy, (long long)v.i64);
        unsigned long long reasons = 0;
        CHECK_RC(p_nvmlDeviceGetCurrentClocksEventReasons(d, &reasons), NVML_SUCCESS);
        sim_node_sample(node, i, 112, t_us, &v);
        CHECK(reasons == (unsigned long long)v.i64, "reasons %llx vs %llx", reasons, (unsigned long long)v.i64);

        nvmlMemory_v2_t mem2 = {.version = nvmlMemory_v2};
        CHECK_RC(p_nvmlDeviceGetMemoryInfo_v2(d, &mem2), NVML_SUCCESS);
        sim_node_sample(node, i, 252, t_us, &v);
        CHECK(mem2.used / 1048576 == (unsigned long long)v.i64, "fb used %llu vs %lld MiB", mem2.used, (long long)v.i64);
        CHECK(mem2.total == mem2.reserved + mem2.used + mem2.free, "v2 memory adds up");
        nvmlMemory_t mem1;
        CHECK_RC(p_nvmlDeviceGetMemoryInfo(d, &mem1), NVML_SUCCESS);
        CHECK(mem1.used == mem2.used + mem2.reserved, "v1 used includes reserved");
        mem2.version = 1;
        CHECK_RC(p_nvmlDeviceGetMemoryInfo_v2(d, &mem2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

        nvmlFieldValue_t fv[4] = {{.fieldId = NVML_FI_DEV_MEMORY_TEMP}, {.fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
                                  {.fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES}, {.fieldId = 0}};
        CHECK_RC(p_nvmlDeviceGetFieldValues(d, 4, fv), NVML_SUCCESS);
        sim_node_sample(node, i, 140, t_us, &v);
        if (v.kind == SIM_VALUE_OK)
            CHECK(fv[0].nvmlReturn == NVML_SUCCESS && fv[0].value.uiVal == (unsigned int)v.i64, "mem temp");
        else
            CHECK(fv[0].nvmlReturn == NVML_ERROR_NOT_SUPPORTED, "mem temp on a board without: %d", fv[0].nvmlReturn);
        CHECK(fv[1].nvmlReturn == NVML_SUCCESS && fv[1].value.ullVal == energy, "energy field");
        CHECK(fv[2].nvmlReturn == NVML_SUCCESS && fv[2].valueType == NVML_VALUE_TYPE_UNSIGNED_INT &&
              fv[2].value.uiVal > 0, "PCIe bytes counted, 32 bits wide");
        CHECK(fv[3].nvmlReturn == NVML_ERROR_INVALID_ARGUMENT, "field id 0: %d", fv[3].nvmlReturn);
        CHECK(fv[1].timestamp > 1600000000000000LL, "timestamps are us since 1970");

        /* a GPU the scenario names no process for runs one that holds what its workload uses */
        unsigned int procs = 0;
        CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &procs, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
        CHECK(procs == 1, "one process, not %u", procs);
        nvmlProcessInfo_t proc = {0};
        CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &procs, &proc), NVML_SUCCESS);
        CHECK(proc.pid == SIM_PROCESS_PID_BASE + i, "pid %u", proc.pid);
        sim_value used;
        CHECK_RC(sim_node_sample(node, i, 252 /* FB used, MiB */, t_us, &used), DCGM_ST_OK);
        CHECK(proc.usedGpuMemory == (unsigned long long)used.i64 * 1024 * 1024, "process holds %llu, GPU uses %lld MiB",
              proc.usedGpuMemory, (long long)used.i64);
        CHECK(proc.gpuInstanceId == 0xFFFFFFFFu && proc.computeInstanceId == 0xFFFFFFFFu, "no MIG ids");
        CHECK_RC(p_nvmlDeviceGetFanSpeed(d, &u), NVML_ERROR_NOT_SUPPORTED);
    }

    /* features by model: H100 remaps rows, the T4 retires pages */
    unsigned int a, b, c, e, pages = 0;
    nvmlDevice_t h100 = handle(0), t4 = handle(2);
    nvmlDeviceArchitecture_t arch = 0;
    CHECK_RC(p_nvmlDeviceGetArchitecture(h100, &arch), NVML_SUCCESS);
    CHECK(arch == NVML_DEVICE_ARCH_HOPPER, "arch %u", arch);
    CHECK_RC(p_nvmlDeviceGetRemappedRows(h100, &a, &b, &c, &e), NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceGetRemappedRows(t4, &a, &b, &c, &e), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(p_nvmlDeviceGetRetiredPages(h100, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, NULL),
             NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(p_nvmlDeviceGetRetiredPages(t4, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, NULL),
             NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceGetMigMode(t4, &a, &b), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(p_nvmlDeviceGetMigMode(h100, &a, &b), NVML_SUCCESS);

    /* the lost GPU, and arguments */
    nvmlDevice_t lost = handle(1);
    unsigned int u = 0;
    CHECK_RC(p_nvmlDeviceGetTemperature(lost, NVML_TEMPERATURE_GPU, &u), NVML_ERROR_GPU_IS_LOST);
    CHECK_RC(p_nvmlDeviceGetFieldValues(lost, 0, NULL), NVML_ERROR_GPU_IS_LOST);
    nvmlDevice_t d = NULL;
    CHECK_RC(p_nvmlDeviceGetHandleByIndex_v2(3, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceGetTemperature(h100, NVML_TEMPERATURE_GPU, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceGetTemperature((nvmlDevice_t)&u, NVML_TEMPERATURE_GPU, &u), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceGetHandleByUUID("GPU-nope", &d), NVML_ERROR_NOT_FOUND);

    /* GPM with a frozen clock: both samples at t, so the metric is the node's value at t */
    nvmlGpmSupport_t support = {.version = NVML_GPM_SUPPORT_VERSION};
    CHECK_RC(p_nvmlGpmQueryDeviceSupport(h100, &support), NVML_SUCCESS);
    CHECK(support.isSupportedDevice == 1, "H100 has GPM");
    CHECK_RC(p_nvmlGpmQueryDeviceSupport(t4, &support), NVML_SUCCESS);
    CHECK(support.isSupportedDevice == 0, "T4 has no GPM");
    nvmlGpmSample_t s1 = NULL, s2 = NULL;
    CHECK_RC(p_nvmlGpmSampleAlloc(&s1), NVML_SUCCESS);
    CHECK_RC(p_nvmlGpmSampleAlloc(&s2), NVML_SUCCESS);
    CHECK_RC(p_nvmlGpmSampleGet(t4, s1), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(p_nvmlGpmSampleGet(h100, s1), NVML_SUCCESS);
    CHECK_RC(p_nvmlGpmSampleGet(h100, s2), NVML_SUCCESS);
    nvmlGpmMetricsGet_t *mg = calloc(1, sizeof *mg);
    if (mg != NULL) {
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = 3;
        mg->sample1 = s1;
        mg->sample2 = s2;
        mg->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        mg->metrics[1].metricId = NVML_GPM_METRIC_PCIE_TX_PER_SEC;
        mg->metrics[2].metricId = 8; /* a DMMA id the simulator does not compute */
        CHECK_RC(p_nvmlGpmMetricsGet(mg), NVML_SUCCESS);
        sim_value v;
        sim_node_sample(node, 0, 1002, t_us, &v);
        CHECK(mg->metrics[0].nvmlReturn == NVML_SUCCESS && fabs(mg->metrics[0].value - v.dbl * 100.0) < 1e-9,
              "SM util %f vs ratio %f", mg->metrics[0].value, v.dbl);
        CHECK(mg->metrics[0].metricInfo.unit != NULL && strcmp(mg->metrics[0].metricInfo.unit, "%") == 0, "unit");
        sim_node_sample(node, 0, 1009, t_us, &v);
        CHECK(fabs(mg->metrics[1].value - v.dbl / 1048576.0) < 1e-6, "PCIe TX %f MiB/s", mg->metrics[1].value);
        CHECK(mg->metrics[2].nvmlReturn == NVML_ERROR_NOT_SUPPORTED, "unknown metric");
        mg->version = 2;
        CHECK_RC(p_nvmlGpmMetricsGet(mg), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
        free(mg);
    }
    CHECK_RC(p_nvmlGpmSampleFree(s1), NVML_SUCCESS);
    CHECK_RC(p_nvmlGpmSampleFree(s2), NVML_SUCCESS);
    CHECK_RC(p_nvmlGpmSampleFree(s2), NVML_ERROR_INVALID_ARGUMENT);

    sim_node_free(node);
    CHECK_RC(p_nvmlShutdown(), NVML_SUCCESS);
    CHECK_RC(p_nvmlShutdown(), NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    unsetenv("DCGM_SIM_NVML_TIME_US");
}

/* ---- limits, slowdowns and PCIe link counters among the field values ---------------------- */

/* One H200 at rest for a second, then bf16 products: it heats from about 38 C towards 60 C. */
static const char *const HEATING_H200 =
    "seed = 3\n[[gpu]]\nmodel = \"H200\"\nworkload = \"idle\"\n"
    "[[event]]\nat = 1.0\ngpu = 0\nkind = \"workload\"\nworkload = \"tensor\"\n";

/* Eight H100s training for hours: enough for some boards' PCIe replays to pile up. */
static const char *const LONG_TRAINING = "seed = 11\n[[gpu]]\nmodel = \"H100\"\ncount = 8\nworkload = \"training\"\n";

static nvmlFieldValue_t read_field(nvmlDevice_t d, unsigned int id)
{
    nvmlFieldValue_t fv = {.fieldId = id};
    CHECK_RC(p_nvmlDeviceGetFieldValues(d, 1, &fv), NVML_SUCCESS);
    CHECK(fv.nvmlReturn == NVML_SUCCESS, "field %u: %d", id, fv.nvmlReturn);
    return fv;
}

/* Starts the library on a scenario with its clock frozen at t_us. */
static void init_frozen(const char *scenario, const char *t_us)
{
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    setenv("DCGM_SIM_NVML_TIME_US", t_us, 1);
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS);
}

static void end_frozen(const char *scenario)
{
    CHECK_RC(p_nvmlShutdown(), NVML_SUCCESS);
    unsetenv("DCGM_SIM_NVML_TIME_US");
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
}

/* 193-196 are thresholds on the T.Limit scale, so they do not move as the GPU heats. */
static void test_temperature_limits_hold_as_the_gpu_heats(const char *heating, const char *restore)
{
    static const char *const times[2] = {"500000", "30000000"};
    /* the recorded H200: shutdown 95, slowdown 89 C, counted from its 87 C max operating */
    static const int recorded[4] = {-8, -2, 0, 0};
    unsigned int temp[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        init_frozen(heating, times[k]);
        nvmlDevice_t d = handle(0);
        CHECK_RC(p_nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &temp[k]), NVML_SUCCESS);
        for (unsigned int j = 0; j < 4; j++) {
            nvmlFieldValue_t fv = read_field(d, NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT + j);
            CHECK(fv.valueType == NVML_VALUE_TYPE_SIGNED_INT, "T.Limit %u type %d", j, fv.valueType);
            CHECK(fv.value.siVal == recorded[j], "T.Limit %u at %u C: %d, want %d", j, temp[k], fv.value.siVal,
                  recorded[j]);
        }
        end_frozen(restore);
    }
    CHECK(temp[1] >= temp[0] + 10, "the load heats the GPU: %u -> %u C", temp[0], temp[1]);
}

/* 187-192 read the node's limits in mW; a limit set while it runs moves the enforced and requested ones. */
static void test_power_limit_fields_follow_a_limit_set_at_run_time(const char *heating, const char *restore)
{
    static const unsigned int ids[5] = {NVML_FI_DEV_POWER_MIN_LIMIT, NVML_FI_DEV_POWER_MAX_LIMIT,
                                        NVML_FI_DEV_POWER_DEFAULT_LIMIT, NVML_FI_DEV_POWER_CURRENT_LIMIT,
                                        NVML_FI_DEV_POWER_REQUESTED_LIMIT};
    static const unsigned int before[5] = {200000, 700000, 700000, 700000, 700000};
    static const unsigned int after[5] = {200000, 700000, 700000, 450000, 450000};
    init_frozen(heating, "30000000");
    nvmlDevice_t d = handle(0);
    for (int j = 0; j < 5; j++) {
        nvmlFieldValue_t fv = read_field(d, ids[j]);
        CHECK(fv.valueType == NVML_VALUE_TYPE_UNSIGNED_INT && fv.value.uiVal == before[j],
              "limit field %u: %u mW, want %u", ids[j], fv.value.uiVal, before[j]);
    }
    CHECK_RC(p_nvmlDeviceSetPowerManagementLimit(d, 100000), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceSetPowerManagementLimit(d, 450000), NVML_SUCCESS);
    for (int j = 0; j < 5; j++) {
        nvmlFieldValue_t fv = read_field(d, ids[j]);
        CHECK(fv.value.uiVal == after[j], "limit field %u after the set: %u mW, want %u", ids[j], fv.value.uiVal,
              after[j]);
    }
    unsigned int enforced = 0;
    CHECK_RC(p_nvmlDeviceGetEnforcedPowerLimit(d, &enforced), NVML_SUCCESS);
    CHECK(enforced == 450000, "enforced limit %u mW", enforced);

    /* the capped load: power-cap time is app-clock time, the thermal policy is the SW thermal slowdown */
    unsigned long long power = read_field(d, NVML_FI_DEV_PERF_POLICY_POWER).value.ullVal;
    unsigned long long thermal = read_field(d, NVML_FI_DEV_PERF_POLICY_THERMAL).value.ullVal;
    nvmlFieldValue_t app = read_field(d, NVML_FI_DEV_PERF_POLICY_TOTAL_APP_CLOCKS);
    CHECK(power > 0 && app.valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG && app.value.ullVal == power + thermal,
          "app clocks %llu ns vs power %llu + thermal %llu", app.value.ullVal, power, thermal);
    CHECK(read_field(d, NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN).value.ullVal == thermal, "SW thermal");
    CHECK(read_field(d, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN).value.ullVal == 0, "below slowdown");
    end_frozen(restore);
}

/* An H100 heating past its slowdown threshold: the slowdown times are the node's counters. */
static const char *const RUNAWAY_H100 =
    "seed = 3\n[[gpu]]\nmodel = \"H100\"\nworkload = \"thermal_runaway\"\nheat_rate = 0.5\n";

static void test_slowdown_times_are_the_nodes(const char *runaway, const char *restore)
{
    const int64_t t_us = 400000000;
    sim_node *node = NULL;
    char err[256];
    CHECK_RC(sim_node_load(runaway, &node, err, sizeof err), DCGM_ST_OK);
    if (node == NULL)
        return;
    init_frozen(runaway, "400000000");
    nvmlDevice_t d = handle(0);
    sim_value v;
    static const struct { unsigned int nvml; unsigned short dcgm; } same[] = {
        {NVML_FI_DEV_PERF_POLICY_TOTAL_APP_CLOCKS, 246}, {NVML_FI_DEV_PERF_POLICY_TOTAL_BASE_CLOCKS, 247},
        {NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, 241},
    };
    for (size_t j = 0; j < sizeof same / sizeof same[0]; j++) {
        sim_node_sample(node, 0, same[j].dcgm, t_us, &v);
        unsigned long long got = read_field(d, same[j].nvml).value.ullVal;
        CHECK(got == (unsigned long long)v.i64 && got > 0, "field %u: %llu ns vs DCGM %u: %lld", same[j].nvml, got,
              same[j].dcgm, (long long)v.i64);
    }
    int64_t hw_ns = 0;
    sim_node_slowdown_ns(node, 0, t_us, SIM_CLOCKS_EVENT_HW_THERMAL, &hw_ns);
    unsigned long long hw = read_field(d, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN).value.ullVal;
    CHECK(hw == (unsigned long long)hw_ns && hw > 0, "HW thermal slowdown %llu ns vs node %lld", hw, (long long)hw_ns);
    CHECK(read_field(d, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN).value.ullVal == 0, "no power brake");
    end_frozen(restore);
    sim_node_free(node);
}

/* An H100 with a double-bit ECC error (XID 48) at 1 s: the row remap it causes waits for a reset. */
static const char *const DBE_H100 =
    "seed = 5\n[[gpu]]\nmodel = \"H100\"\nworkload = \"training\"\n"
    "[[event]]\nat = 1.0\ngpu = 0\nkind = \"xid\"\nxid = 48\n";

static void test_recovery_action_follows_a_pending_remap(const char *dbe, const char *restore)
{
    static const char *const times[2] = {"500000", "2000000"};
    for (unsigned int k = 0; k < 2; k++) {
        init_frozen(dbe, times[k]);
        nvmlDevice_t d = handle(0);
        unsigned long long pending = read_field(d, NVML_FI_DEV_REMAPPED_PENDING).value.ullVal;
        CHECK(pending == k, "remap pending %llu at %s us", pending, times[k]);
        CHECK(read_field(d, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION).value.uiVal == k, "recovery action (1 = reset)");
        CHECK(read_field(d, NVML_FI_DEV_RESET_STATUS).value.uiVal == k, "reset status");
        CHECK(read_field(d, NVML_FI_DEV_DRAIN_AND_RESET_STATUS).value.uiVal == 0, "no drain");
        end_frozen(restore);
    }
}

/* The link-layer counters follow the replays: a NAK per replay, a rollover (and retrain) per 16. */
static void test_pcie_link_counters_follow_the_replays(const char *training, const char *restore)
{
    init_frozen(training, "14400000000");
    unsigned int most = 0;
    for (unsigned int i = 0; i < 8; i++) {
        nvmlDevice_t d = handle(i);
        unsigned int replays = read_field(d, NVML_FI_DEV_PCIE_REPLAY_COUNTER).value.uiVal;
        unsigned int rollovers = read_field(d, NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER).value.uiVal;
        CHECK(rollovers == replays / 16, "GPU %u: %u rollovers for %u replays", i, rollovers, replays);
        CHECK(read_field(d, NVML_FI_DEV_PCIE_COUNT_NAKS_RECEIVED).value.uiVal == replays, "GPU %u NAKs", i);
        CHECK(read_field(d, NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS).value.uiVal == rollovers, "GPU %u AER", i);
        CHECK(read_field(d, NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER).value.uiVal == 957 + rollovers,
              "GPU %u retrains", i);
        if (replays > most)
            most = replays;
    }
    CHECK(most >= 16, "some board rolls its replay number over in 4 h (most replays %u)", most);
    end_frozen(restore);
}

/* ---- XID events on a running clock ----------------------------------------------------- */

static void test_xid_events(void)
{
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS);
    nvmlEventSet_t set = NULL;
    CHECK_RC(p_nvmlEventSetCreate(&set), NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceRegisterEvents(handle(0), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceRegisterEvents(handle(1), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    CHECK_RC(p_nvmlDeviceRegisterEvents(handle(2), nvmlEventMigConfigChange, set), NVML_ERROR_NOT_SUPPORTED);
    nvmlEventData_t data;
    CHECK_RC(p_nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);
    static const unsigned long long want_xid[] = {13, 13, 79};
    static const unsigned int want_gpu[] = {0, 0, 1};
    for (int k = 0; k < 3; k++) {
        memset(&data, 0, sizeof data);
        CHECK_RC(p_nvmlEventSetWait_v2(set, &data, 5000), NVML_SUCCESS);
        CHECK(data.eventType == nvmlEventTypeXidCriticalError && data.eventData == want_xid[k],
              "event %d: type %llx xid %llu", k, data.eventType, data.eventData);
        CHECK(data.device == handle(want_gpu[k]) && data.gpuInstanceId == 0xFFFFFFFFu, "event %d device", k);
    }
    double before = monotonic_ms();
    CHECK_RC(p_nvmlEventSetWait_v2(set, &data, 100), NVML_ERROR_TIMEOUT);
    CHECK(monotonic_ms() - before >= 95.0, "waited out the timeout");
    CHECK_RC(p_nvmlEventSetFree(set), NVML_SUCCESS);
    CHECK_RC(p_nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlShutdown(), NVML_SUCCESS);
}

/* ---- NO_PERMISSION and costs ------------------------------------------------------------ */

static void test_permission_and_costs(void)
{
    setenv("DCGM_SIM_NVML_NO_PERMISSION", "nvmlDeviceGetUUID,nvmlDeviceGetPowerUsage", 1);
    setenv("DCGM_SIM_NVML_COSTS", "off,nvmlDeviceGetTotalEnergyConsumption=20000,"
                                  "nvmlDeviceGetPcieThroughput=0:30000", 1);
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t d = handle(0);
    char text[96];
    unsigned int u = 0;
    CHECK_RC(p_nvmlDeviceGetUUID(d, text, sizeof text), NVML_ERROR_NO_PERMISSION);
    CHECK_RC(p_nvmlDeviceGetPowerUsage(d, &u), NVML_ERROR_NO_PERMISSION);
    CHECK_RC(p_nvmlDeviceGetName(d, text, sizeof text), NVML_SUCCESS);

    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    unsigned long long energy = 0;
    CHECK_RC(p_nvmlDeviceGetTotalEnergyConsumption(d, &energy), NVML_SUCCESS);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu_ms = (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
    CHECK(cpu_ms >= 19.0, "energy spun %.2f ms of CPU, configured 20", cpu_ms);

    double before = monotonic_ms();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    CHECK_RC(p_nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &u), NVML_SUCCESS);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    cpu_ms = (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
    CHECK(monotonic_ms() - before >= 29.0, "PCIe throughput slept");
    CHECK(cpu_ms < 15.0, "sleeping is not spinning: %.2f ms CPU", cpu_ms);
    CHECK_RC(p_nvmlShutdown(), NVML_SUCCESS);
    unsetenv("DCGM_SIM_NVML_NO_PERMISSION");
    setenv("DCGM_SIM_NVML_COSTS", "off", 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
        return 2;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_nvml.XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    if (load_library(argv[1]) != 0)
        return 1;
    const char *scenario = write_file("nvml.toml", SCENARIO);
    char scenario_path[512];
    snprintf(scenario_path, sizeof scenario_path, "%s", scenario);
    setenv("DCGM_SIM_SCENARIO", scenario_path, 1);
    setenv("DCGM_SIM_NVML_COSTS", "off", 1);

    test_uninitialized();
    test_values_match_the_node(scenario_path);
    char heating[512], training[512], runaway[512], dbe[512];
    snprintf(heating, sizeof heating, "%s", write_file("heating.toml", HEATING_H200));
    snprintf(training, sizeof training, "%s", write_file("training.toml", LONG_TRAINING));
    snprintf(runaway, sizeof runaway, "%s", write_file("runaway.toml", RUNAWAY_H100));
    snprintf(dbe, sizeof dbe, "%s", write_file("dbe.toml", DBE_H100));
    test_temperature_limits_hold_as_the_gpu_heats(heating, scenario_path);
    test_power_limit_fields_follow_a_limit_set_at_run_time(heating, scenario_path);
    test_pcie_link_counters_follow_the_replays(training, scenario_path);
    test_slowdown_times_are_the_nodes(runaway, scenario_path);
    test_recovery_action_follows_a_pending_remap(dbe, scenario_path);
    test_xid_events();
    test_permission_and_costs();

    dlclose(library);
    unlink(heating);
    unlink(training);
    unlink(runaway);
    unlink(dbe);
    unlink(scenario_path);
    rmdir(tmpdir);
    printf("test_nvml: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
