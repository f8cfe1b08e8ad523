/*
 * test_nvml_processes.c -- the simulated libnvidia-ml.so.1's running-process
 * lists and per-process utilisation, through dlopen as a client uses them:
 * the two-call size protocol, the v1 and v2 records, compute against
 * graphics, processes starting and stopping, a leak, churn, MIG ids and
 * MIG device handles, and
 * utilisation samples newer than lastSeenTimeStamp (both the plain and the
 * versioned call).  Expected values come
 * from the library's own device getters (memory info, utilisation rates),
 * which the processes must add up to.
 *
 * Usage: test_nvml_processes BUILD_DIR   (exit 0 = pass)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_SCRATCH_FILES
#include "check.h"

#include "../nvml/nvml_abi.h"

#define NVML_TEST_FUNCTIONS(X)                                                                                  \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                                        \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                                       \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))                              \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t, nvmlMemory_v2_t *))                              \
    X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))                        \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *)) \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v2, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *)) \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *)) \
    X(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v3, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *)) \
    X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                                            \
      (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *, unsigned long long))                    \
    X(nvmlReturn_t, nvmlDeviceGetProcessesUtilizationInfo, (nvmlDevice_t, nvmlProcessesUtilizationInfo_t *))  \
    X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t, unsigned int, nvmlDevice_t *))         \
    X(nvmlReturn_t, nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t, nvmlDevice_t *))              \
    X(nvmlReturn_t, nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t, unsigned int *))                               \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))                                  \
    X(nvmlReturn_t, nvmlDeviceGetBAR1MemoryInfo, (nvmlDevice_t, nvmlBAR1Memory_t *))

#define DECLARE_POINTER(ret, name, args) static ret(*p_##name) args;
NVML_TEST_FUNCTIONS(DECLARE_POINTER)

static void *library;

static int load_library(const char *build_dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", build_dir);
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
#define LOAD_POINTER(ret, name, args)                                    \
    *(void **)&p_##name = dlsym(library, #name);                         \
    if (p_##name == NULL) {                                              \
        fprintf(stderr, "%s: missing export %s\n", path, #name);         \
        return -1;                                                       \
    }
    NVML_TEST_FUNCTIONS(LOAD_POINTER)
    return 0;
}

/*
 * GPU 0: a trainer from the start (1 GiB, leaking 1 MiB/s, 3/4 of the load),
 * a second compute process from 2 s to 4 s (1/4 of the load) and a graphics
 * one.  GPU 1: nothing until a process starts at 3 s.  GPU 2: a churn of
 * 10 processes a second, each living 0.5 s.  GPU 3: an H100 in two MIG
 * instances, a process in each.
 */
static const char *const SCENARIO =
    "[[gpu]]\nmodel = \"H100\"\ncount = 3\nworkload = \"training\"\n"
    "[[gpu]]\nmodel = \"H100\"\nmig_instances = 2\n"
    "[[process]]\ngpu = 0\npid = 1234\nname = \"trainer\"\nfb_bytes = 1073741824\nfb_growth = 1048576\n"
    "sm_share = 0.75\nmem_share = 0.75\n"
    "[[process]]\ngpu = 0\npid = 1300\nstart = 2\nstop = 4\nfb_bytes = 104857600\nsm_share = 0.25\nmem_share = 0.25\n"
    "[[process]]\ngpu = 0\npid = 1400\ntype = \"graphics\"\nfb_bytes = 52428800\nsm_share = 0\nmem_share = 0\n"
    "[[process]]\ngpu = 1\npid = 2000\nstart = 3\nfb_bytes = 2097152000\n"
    "[[process]]\ngpu = 2\npid = 30000\nchurn = 10\nlifetime = 0.5\nfb_bytes = 10485760\n"
    "[[process]]\ngpu = 3\npid = 4000\ngpu_instance = 0\nfb_bytes = 1048576\n"
    "[[process]]\ngpu = 3\npid = 4001\ngpu_instance = 1\ncompute_instance = 0\nfb_bytes = 1048576\n";

static nvmlDevice_t handle(unsigned int index)
{
    nvmlDevice_t d = NULL;
    CHECK_RC(p_nvmlDeviceGetHandleByIndex_v2(index, &d), NVML_SUCCESS);
    return d;
}

static void at(const char *t_us)
{
    setenv("DCGM_SIM_NVML_TIME_US", t_us, 1);
    CHECK_RC(p_nvmlInit_v2(), NVML_SUCCESS);
}

/* Lists a device's compute processes with the two-call protocol; returns how many. */
static unsigned int compute_list(nvmlDevice_t d, nvmlProcessInfo_t *out, unsigned int room)
{
    unsigned int count = 0;
    nvmlReturn_t rc = p_nvmlDeviceGetComputeRunningProcesses_v3(d, &count, NULL);
    if (rc == NVML_SUCCESS) {
        CHECK(count == 0, "SUCCESS for a NULL buffer only with no processes, not %u", count);
        return 0;
    }
    CHECK_RC(rc, NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(count <= room, "%u processes", count);
    if (count > room)
        return 0;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &count, out), NVML_SUCCESS);
    return count;
}

static unsigned long long used_bytes(nvmlDevice_t d)
{
    nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
    CHECK_RC(p_nvmlDeviceGetMemoryInfo_v2(d, &mem), NVML_SUCCESS);
    return mem.used;
}

static void test_lists_and_protocol(void)
{
    at("3000000");
    nvmlDevice_t d = handle(0);
    nvmlProcessInfo_t list[8];
    unsigned int n = compute_list(d, list, 8);
    CHECK(n == 2, "two compute processes at 3 s, not %u", n);
    CHECK(list[0].pid == 1234 && list[1].pid == 1300, "pids %u %u", list[0].pid, list[1].pid);
    /* 1 GiB and 3 MiB leaked by 3 s */
    CHECK(list[0].usedGpuMemory == 1073741824ULL + 3 * 1048576ULL, "trainer holds %llu", list[0].usedGpuMemory);
    CHECK(list[1].usedGpuMemory == 104857600ULL, "second holds %llu", list[1].usedGpuMemory);
    CHECK(list[0].gpuInstanceId == 0xFFFFFFFFu && list[0].computeInstanceId == 0xFFFFFFFFu, "no MIG ids");
    /* the GPU's framebuffer used is its processes', graphics included, to the MiB */
    unsigned long long sum = list[0].usedGpuMemory + list[1].usedGpuMemory + 52428800ULL;
    CHECK(used_bytes(d) == sum / 1048576 * 1048576, "GPU uses %llu, processes %llu", used_bytes(d), sum);

    /* a count one short: INSUFFICIENT_SIZE with the count needed, nothing written past it */
    nvmlProcessInfo_t one[2] = {{.pid = 77}, {.pid = 77}};
    unsigned int count = 1;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &count, one), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(count == 2 && one[1].pid == 77, "count %u", count);
    count = 1;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, &count, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(d, NULL, NULL), NVML_ERROR_INVALID_ARGUMENT);

    /* v1 writes the 16-byte record, _v2 the 24-byte one */
    nvmlProcessInfo_v1_t v1[3];
    memset(v1, 0xAB, sizeof v1);
    count = 3;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses(d, &count, v1), NVML_SUCCESS);
    CHECK(count == 2 && v1[1].pid == 1300 && v1[1].usedGpuMemory == 104857600ULL, "v1 second %u", v1[1].pid);
    CHECK(v1[2].pid == 0xABABABABu, "v1 wrote past its records");
    count = 8;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v2(d, &count, list), NVML_SUCCESS);
    CHECK(count == 2 && list[1].pid == 1300, "v2 %u", count);

    /* graphics is its own list */
    count = 8;
    CHECK_RC(p_nvmlDeviceGetGraphicsRunningProcesses_v3(d, &count, list), NVML_SUCCESS);
    CHECK(count == 1 && list[0].pid == 1400 && list[0].usedGpuMemory == 52428800ULL, "graphics %u", count);

    /* no processes yet: SUCCESS with count 0, and the GPU idles with nothing in use */
    p_nvmlShutdown();
    at("2000000");
    nvmlDevice_t idle = handle(1);
    count = 0;
    CHECK_RC(p_nvmlDeviceGetComputeRunningProcesses_v3(idle, &count, NULL), NVML_SUCCESS);
    CHECK(count == 0, "count %u", count);
    nvmlUtilization_t u = {0};
    CHECK_RC(p_nvmlDeviceGetUtilizationRates(idle, &u), NVML_SUCCESS);
    CHECK(u.gpu == 0 && used_bytes(idle) == 0, "idle GPU reads %u %% and %llu bytes", u.gpu, used_bytes(idle));
    p_nvmlShutdown();
    at("5000000");
    CHECK(compute_list(idle, list, 8) == 1 && list[0].pid == 2000, "process from 3 s");
    CHECK(used_bytes(idle) == 2097152000ULL / 1048576 * 1048576, "GPU 1 uses %llu", used_bytes(idle));
    CHECK(compute_list(d, list, 8) == 1 && list[0].pid == 1234, "the second process stopped at 4 s");
    p_nvmlShutdown();
}

static void test_churn_and_mig(void)
{
    at("10050000");
    nvmlProcessInfo_t list[16];
    unsigned int n = compute_list(handle(2), list, 16);
    /* instances start every 100 ms and live 500 ms: those from 9.6 s to 10.0 s are alive */
    CHECK(n == 5, "%u churn processes alive", n);
    CHECK(n == 5 && list[0].pid == 30096 && list[4].pid == 30100, "churn pids %u..%u", list[0].pid, list[n - 1].pid);
    CHECK(used_bytes(handle(2)) == 5 * 10485760ULL, "churn GPU uses %llu", used_bytes(handle(2)));

    n = compute_list(handle(3), list, 16);
    CHECK(n == 2, "the MIG GPU's parent lists both instances, not %u", n);
    CHECK(n == 2 && list[0].gpuInstanceId == 0 && list[1].gpuInstanceId == 1 && list[1].computeInstanceId == 0,
          "instance ids %u %u", list[0].gpuInstanceId, list[1].gpuInstanceId);
    nvmlProcessUtilizationSample_t s[4];
    unsigned int count = 4;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(handle(3), s, &count, 0), NVML_ERROR_NOT_SUPPORTED);

    /* a MIG device handle lists only its own instance's processes */
    for (unsigned int k = 0; k < 2; k++) {
        nvmlDevice_t mig = NULL, parent = NULL;
        CHECK_RC(p_nvmlDeviceGetMigDeviceHandleByIndex(handle(3), k, &mig), NVML_SUCCESS);
        unsigned int is_mig = 0;
        CHECK_RC(p_nvmlDeviceIsMigDeviceHandle(mig, &is_mig), NVML_SUCCESS);
        CHECK(is_mig == 1, "MIG device handle %u", k);
        CHECK_RC(p_nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), NVML_SUCCESS);
        CHECK(parent == handle(3), "parent of instance %u", k);
        n = compute_list(mig, list, 16);
        CHECK(n == 1 && list[0].pid == 4000 + k && list[0].gpuInstanceId == k, "instance %u lists %u", k, n);
        count = 4;
        CHECK_RC(p_nvmlDeviceGetProcessUtilization(mig, s, &count, 0), NVML_ERROR_NOT_SUPPORTED);
        char name[96];
        CHECK_RC(p_nvmlDeviceGetName(mig, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
        /* BAR1 is the GPU's, through either handle */
        nvmlBAR1Memory_t whole = {0}, part = {0};
        CHECK_RC(p_nvmlDeviceGetBAR1MemoryInfo(handle(3), &whole), NVML_SUCCESS);
        CHECK_RC(p_nvmlDeviceGetBAR1MemoryInfo(mig, &part), NVML_SUCCESS);
        CHECK(whole.bar1Total > 0 && whole.bar1Total == whole.bar1Used + whole.bar1Free &&
              memcmp(&whole, &part, sizeof whole) == 0, "BAR1 %llu = %llu + %llu", whole.bar1Total,
              whole.bar1Used, whole.bar1Free);
    }
    nvmlDevice_t mig = NULL, parent = NULL;
    unsigned int is_mig = 1;
    CHECK_RC(p_nvmlDeviceGetMigDeviceHandleByIndex(handle(3), 2, &mig), NVML_ERROR_NOT_FOUND);
    CHECK_RC(p_nvmlDeviceGetMigDeviceHandleByIndex(handle(0), 0, &mig), NVML_ERROR_NOT_FOUND);
    CHECK_RC(p_nvmlDeviceIsMigDeviceHandle(handle(3), &is_mig), NVML_SUCCESS);
    CHECK(is_mig == 0, "a whole GPU's handle is no MIG device handle");
    CHECK_RC(p_nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle(3), &parent), NVML_ERROR_INVALID_ARGUMENT);
    p_nvmlShutdown();
}

static void test_utilization_samples(void)
{
    at("3050000");
    nvmlDevice_t d = handle(0);
    unsigned int count = 0;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, NULL, &count, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    /* a second of samples, every 200 ms: 5 sample times, each with all three processes */
    CHECK(count == 15, "%u samples", count);
    nvmlProcessUtilizationSample_t s[32];
    unsigned int short_count = 3;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, s, &short_count, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(short_count == 15, "needed %u", short_count);
    count = 32;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, s, &count, 0), NVML_SUCCESS);
    unsigned long long newest = 0;
    unsigned int sm_newest = 0, mem_newest = 0;
    for (unsigned int i = 0; i < count; i++)
        newest = s[i].timeStamp > newest ? s[i].timeStamp : newest;
    for (unsigned int i = 0; i < count; i++) {
        if (s[i].timeStamp == newest) {
            sm_newest += s[i].smUtil;
            mem_newest += s[i].memUtil;
        }
        if (s[i].pid == 1400)
            CHECK(s[i].smUtil == 0, "graphics process with no share has %u %%", s[i].smUtil);
    }
    /* the newest samples split the GPU's current reading (rounding may lose a percent) */
    nvmlUtilization_t u = {0};
    CHECK_RC(p_nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
    CHECK(u.gpu > 50, "the GPU is busy: %u %%", u.gpu);
    CHECK(sm_newest + 1 >= u.gpu && sm_newest <= u.gpu + 1, "SM %u against the GPU's %u", sm_newest, u.gpu);
    CHECK(mem_newest + 1 >= u.memory && mem_newest <= u.memory + 1, "memory %u against %u", mem_newest, u.memory);

    /* only samples after lastSeen: the newest sample time's three */
    count = 32;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, s, &count, newest - 1), NVML_SUCCESS);
    CHECK(count == 3 && s[0].timeStamp == newest, "%u samples after lastSeen", count);
    count = 32;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, s, &count, newest), NVML_ERROR_NOT_FOUND);
    CHECK(count == 0, "count %u with nothing newer", count);
    count = 32;
    CHECK_RC(p_nvmlDeviceGetProcessUtilization(d, s, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);

    /* the versioned call: the same samples, the same protocol */
    nvmlProcessUtilizationInfo_v1_t info[32];
    nvmlProcessesUtilizationInfo_t all = {.version = nvmlProcessesUtilizationInfo_v1};
    CHECK_RC(p_nvmlDeviceGetProcessesUtilizationInfo(d, &all), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(all.processSamplesCount == 15, "%u samples", all.processSamplesCount);
    all.procUtilArray = info;
    all.processSamplesCount = 32;
    all.lastSeenTimeStamp = newest - 1;
    CHECK_RC(p_nvmlDeviceGetProcessesUtilizationInfo(d, &all), NVML_SUCCESS);
    unsigned int sm_info = 0;
    for (unsigned int i = 0; i < all.processSamplesCount; i++)
        sm_info += info[i].smUtil;
    CHECK(all.processSamplesCount == 3 && info[0].timeStamp == newest && sm_info == sm_newest,
          "%u samples, SM %u against %u", all.processSamplesCount, sm_info, sm_newest);
    all.version = 2;
    CHECK_RC(p_nvmlDeviceGetProcessesUtilizationInfo(d, &all), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    CHECK_RC(p_nvmlDeviceGetProcessesUtilizationInfo(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
    p_nvmlShutdown();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
        return 2;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_nvml_processes.XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    if (load_library(argv[1]) != 0)
        return 1;
    char scenario[512];
    snprintf(scenario, sizeof scenario, "%s", write_file("processes.toml", SCENARIO));
    setenv("DCGM_SIM_SCENARIO", scenario, 1);
    setenv("DCGM_SIM_NVML_COSTS", "off", 1);
    test_lists_and_protocol();
    test_churn_and_mig();
    test_utilization_samples();
    dlclose(library);
    unlink(scenario);
    rmdir(tmpdir);
    printf("test_nvml_processes: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
