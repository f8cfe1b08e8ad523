/*
 * test_topo.c -- chips and how they connect: dcgmGetGpuChipArchitecture,
 * dcgmGetDeviceTopology (v2 and v1), dcgmGetGroupTopology (v2 and v1),
 * dcgmSelectGpusByTopology and dcgmGetNvLinkP2PStatus.  The same script
 * runs on an embedded engine and through a hostengine.
 *
 * usage: test_topo BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#define CHECK_SCRATCH_FILES
#include "check.h"
#include "hostengine.h"

/* GPUs 0 and 1 H100 SXM (18 links) on socket 0; 2 an A100 SXM (12 links) and
 * 3 an L4 (no NvLink) on socket 1 */
static const char SCENARIO_TEXT[] =
    "[[gpu]]\nmodel = \"H100\"\ncount = 2\n"
    "[[gpu]]\nmodel = \"A100\"\ncount = 1\n"
    "[[gpu]]\nmodel = \"L4\"\ncount = 1\n";

#define NVLINK(n) (0x100ULL << ((n) - 1))
#define TOPO_CPU 0x10ULL
#define TOPO_SYSTEM 0x20ULL
/* a two-socket host, 112 CPUs a socket: socket 0 has CPUs 0-55 and 112-167 */
#define SOCKET0_WORD0 0x00FFFFFFFFFFFFFFUL /* CPUs 0-55 */
#define SOCKET0_WORD1 0xFFFF000000000000UL /* CPUs 112-127 */
#define SOCKET1_WORD0 0xFF00000000000000UL /* CPUs 56-63 */
#define SOCKET1_WORD1 0x0000FFFFFFFFFFFFUL /* CPUs 64-111 */

static const void *find_path(const dcgmDeviceTopology_v2 *t, unsigned int peer)
{
    for (unsigned int i = 0; i < t->numGpus && i < DCGM_MAX_NUM_DEVICES - 1; i++)
        if (t->gpuPaths[i].gpuId == peer)
            return &t->gpuPaths[i];
    return NULL;
}

static void check_arch(dcgmHandle_t h, const char *where)
{
    static const dcgmChipArchitecture_t want[] = { DCGM_CHIP_ARCH_HOPPER, DCGM_CHIP_ARCH_HOPPER,
                                                   DCGM_CHIP_ARCH_AMPERE, DCGM_CHIP_ARCH_ADA };
    for (unsigned int g = 0; g < 4; g++) {
        dcgmChipArchitecture_t arch = DCGM_CHIP_ARCH_UNKNOWN;
        CHECK_RC(p_dcgmGetGpuChipArchitecture(h, g, &arch), DCGM_ST_OK);
        CHECK(arch == want[g], "%s: GPU %u arch %d, want %d", where, g, (int)arch, (int)want[g]);
    }
    dcgmChipArchitecture_t arch = DCGM_CHIP_ARCH_UNKNOWN;
    CHECK_RC(p_dcgmGetGpuChipArchitecture(h, 99, &arch), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetGpuChipArchitecture(h, 0, NULL), DCGM_ST_BADPARAM);
}

static void check_device_topology(dcgmHandle_t h, const char *where)
{
    dcgmDeviceTopology_v2 *t = calloc(1, sizeof *t);
    t->version = dcgmDeviceTopology_version2;
    CHECK_RC(p_dcgmGetDeviceTopology(h, 0, t), DCGM_ST_OK);
    CHECK(t->version == dcgmDeviceTopology_version2, "%s: version kept", where);
    CHECK(t->numGpus == 3, "%s: GPU 0 has %u peers", where, t->numGpus);
    CHECK(t->cpuAffinityMask[0] == SOCKET0_WORD0 && t->cpuAffinityMask[1] == SOCKET0_WORD1 &&
              t->cpuAffinityMask[4] == 0,
          "%s: GPU 0 affinity %lx %lx", where, t->cpuAffinityMask[0], t->cpuAffinityMask[1]);
    const struct { unsigned int peer; uint64_t path; uint64_t links; } want0[] = {
        { 1, TOPO_CPU | NVLINK(18), 0x3ffff },
        { 2, TOPO_SYSTEM | NVLINK(18), 0x3ffff },
        { 3, TOPO_SYSTEM | NVLINK(18), 0x3ffff },
    };
    for (unsigned int i = 0; i < 3; i++) {
        const __typeof__(t->gpuPaths[0]) *p = find_path(t, want0[i].peer);
        CHECK(p != NULL, "%s: GPU 0 -> %u missing", where, want0[i].peer);
        if (p)
            CHECK(p->path == want0[i].path && p->localNvLinkIds == want0[i].links,
                  "%s: GPU 0 -> %u path %llx links %llx", where, want0[i].peer,
                  (unsigned long long)p->path, (unsigned long long)p->localNvLinkIds);
    }
    /* the L4 (B side of every pair) has no link of its own to any peer; the
     * A100 reaches it over its 12 switched links */
    memset(t, 0, sizeof *t);
    t->version = dcgmDeviceTopology_version2;
    CHECK_RC(p_dcgmGetDeviceTopology(h, 3, t), DCGM_ST_OK);
    const __typeof__(t->gpuPaths[0]) *p = find_path(t, 2);
    CHECK(t->numGpus == 3 && p && p->path == (TOPO_CPU | NVLINK(12)) && p->localNvLinkIds == 0,
          "%s: GPU 3 -> 2 path %llx links %llx", where, p ? (unsigned long long)p->path : 0ULL,
          p ? (unsigned long long)p->localNvLinkIds : 0ULL);
    CHECK(t->cpuAffinityMask[0] == SOCKET1_WORD0 && t->cpuAffinityMask[1] == SOCKET1_WORD1,
          "%s: GPU 3 on the other socket: %lx %lx", where, t->cpuAffinityMask[0],
          t->cpuAffinityMask[1]);

    /* v1: 32-bit path and mask */
    dcgmDeviceTopology_v1 *t1 = calloc(1, sizeof *t1);
    t1->version = dcgmDeviceTopology_version1;
    CHECK_RC(p_dcgmGetDeviceTopology(h, 1, (dcgmDeviceTopology_t *)t1), DCGM_ST_OK);
    CHECK(t1->version == dcgmDeviceTopology_version1 && t1->numGpus == 3, "%s: v1 %u peers",
          where, t1->numGpus);
    int found = 0;
    for (unsigned int i = 0; i < t1->numGpus; i++)
        if (t1->gpuPaths[i].gpuId == 0)
            found = t1->gpuPaths[i].path == (TOPO_CPU | NVLINK(18)) &&
                    t1->gpuPaths[i].localNvLinkIds == 0x3ffff;
    CHECK(found, "%s: v1 GPU 1 -> 0", where);

    /* errors */
    t->version = dcgmDeviceTopology_version2 + 1;
    CHECK_RC(p_dcgmGetDeviceTopology(h, 0, t), DCGM_ST_VER_MISMATCH);
    t->version = dcgmDeviceTopology_version2;
    CHECK_RC(p_dcgmGetDeviceTopology(h, 99, t), DCGM_ST_BADPARAM);
    CHECK_RC(p_dcgmGetDeviceTopology(h, 0, NULL), DCGM_ST_BADPARAM);
    free(t1);
    free(t);
}

static dcgmGpuGrp_t group_of(dcgmHandle_t h, const unsigned int *gpus, unsigned int n)
{
    dcgmGpuGrp_t g = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "topo", &g), DCGM_ST_OK);
    for (unsigned int i = 0; i < n; i++)
        CHECK_RC(p_dcgmGroupAddDevice(h, g, gpus[i]), DCGM_ST_OK);
    return g;
}

static void check_group_topology(dcgmHandle_t h, const char *where)
{
    const struct { unsigned int gpus[3]; unsigned int n; uint64_t slowest; unsigned int numa; } cases[] = {
        { { 0 }, 1, 0, 1 },
        { { 0, 1 }, 2, TOPO_CPU | NVLINK(18), 1 },
        { { 0, 2 }, 2, TOPO_SYSTEM | NVLINK(18), 0 },
        { { 0, 2, 3 }, 3, TOPO_CPU | NVLINK(12), 0 },
    };
    for (unsigned int c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dcgmGpuGrp_t g = group_of(h, cases[c].gpus, cases[c].n);
        dcgmGroupTopology_v2 t;
        memset(&t, 0, sizeof t);
        t.version = dcgmGroupTopology_version2;
        CHECK_RC(p_dcgmGetGroupTopology(h, g, &t), DCGM_ST_OK);
        CHECK(t.slowestPath == cases[c].slowest && t.numaOptimalFlag == cases[c].numa,
              "%s: case %u slowest %llx numa %u", where, c, (unsigned long long)t.slowestPath,
              t.numaOptimalFlag);
        CHECK(t.groupCpuAffinityMask[0] != 0, "%s: case %u affinity", where, c);
        dcgmGroupTopology_v1 t1;
        memset(&t1, 0, sizeof t1);
        t1.version = dcgmGroupTopology_version1;
        CHECK_RC(p_dcgmGetGroupTopology(h, g, (dcgmGroupTopology_t *)&t1), DCGM_ST_OK);
        CHECK(t1.slowestPath == (unsigned int)cases[c].slowest && t1.numaOptimalFlag == cases[c].numa,
              "%s: case %u v1 slowest %x", where, c, t1.slowestPath);
        CHECK_RC(p_dcgmGroupDestroy(h, g), DCGM_ST_OK);
    }
    dcgmGroupTopology_v2 t;
    memset(&t, 0, sizeof t);
    t.version = dcgmGroupTopology_version2;
    dcgmGpuGrp_t empty = group_of(h, NULL, 0);
    CHECK_RC(p_dcgmGetGroupTopology(h, empty, &t), DCGM_ST_NO_DATA);
    CHECK_RC(p_dcgmGroupDestroy(h, empty), DCGM_ST_OK);
    CHECK_RC(p_dcgmGetGroupTopology(h, (dcgmGpuGrp_t)999, &t), DCGM_ST_NOT_CONFIGURED);
    t.version = 7;
    CHECK_RC(p_dcgmGetGroupTopology(h, (dcgmGpuGrp_t)DCGM_GROUP_ALL_GPUS, &t),
             DCGM_ST_VER_MISMATCH);
}

static uint64_t select_gpus(dcgmHandle_t h, uint64_t in, uint32_t n, uint64_t hints, int want_rc,
                            const char *where)
{
    uint64_t out = 0xdead;
    CHECK_RC(p_dcgmSelectGpusByTopology(h, in, n, &out, hints), want_rc);
    (void)where;
    return out;
}

static void check_select(dcgmHandle_t h, unsigned int fake, const char *where)
{
    const uint64_t ign = DCGM_TOPO_HINT_F_IGNOREHEALTH;
    uint64_t out = select_gpus(h, 0xf, 4, ign, DCGM_ST_OK, where);
    CHECK(out == 0xf, "%s: all four: %llx", where, (unsigned long long)out);
    /* two: one socket each has a pair; the H100 pair has more links */
    out = select_gpus(h, 0xf, 2, ign, DCGM_ST_OK, where);
    CHECK(out == 0x3, "%s: best pair %llx", where, (unsigned long long)out);
    out = select_gpus(h, 0xc, 2, ign, DCGM_ST_OK, where);
    CHECK(out == 0xc, "%s: the only pair %llx", where, (unsigned long long)out);
    /* three: no socket has three, the larger groups come first */
    out = select_gpus(h, 0xf, 3, ign, DCGM_ST_OK, where);
    CHECK(out == 0x7, "%s: three %llx", where, (unsigned long long)out);
    out = select_gpus(h, 0xf, 5, ign, DCGM_ST_INSUFFICIENT_SIZE, where);
    CHECK(out == 0xf, "%s: too many %llx", where, (unsigned long long)out);
    CHECK_RC(p_dcgmSelectGpusByTopology(h, 0xf, 2, NULL, ign), DCGM_ST_BADPARAM);

    /* an unhealthy GPU (a link down) is left out unless health is ignored */
    dcgmSetNvLinkLinkState_v1 down = { dcgmSetNvLinkLinkState_version1, DCGM_FE_GPU, fake, 0,
                                       DcgmNvLinkLinkStateDown, 0 };
    CHECK_RC(p_dcgmSetEntityNvLinkLinkState(h, &down), DCGM_ST_OK);
    uint64_t with_fake = 0xfULL | (1ULL << fake);
    out = select_gpus(h, with_fake, 4, DCGM_TOPO_HINT_F_NONE, DCGM_ST_OK, where);
    CHECK(out == 0xf, "%s: unhealthy fake left out: %llx", where, (unsigned long long)out);
    out = select_gpus(h, with_fake, 4, ign, DCGM_ST_OK, where);
    /* the fake GPU shares GPU 3's socket: that group of three, then GPU 0 */
    CHECK(out == (0xdULL | (1ULL << fake)), "%s: fake kept when health is ignored: %llx", where,
          (unsigned long long)out);
}

static void check_p2p(dcgmHandle_t h, unsigned int fake, const char *where)
{
    dcgmNvLinkP2PStatus_v1 *st = calloc(1, sizeof *st);
    st->version = dcgmNvLinkP2PStatus_version1;
    CHECK_RC(p_dcgmGetNvLinkP2PStatus(h, st), DCGM_ST_OK);
    CHECK(st->numGpus == fake + 1, "%s: %u GPUs", where, st->numGpus);
    const int ok = DcgmNvLinkP2pStatusOK, no = DcgmNvLinkP2pStatusNotSupported;
    const int want[4][4] = { { no, ok, ok, no }, { ok, no, ok, no }, { ok, ok, no, no },
                             { no, no, no, no } };
    for (unsigned int i = 0; i < 4; i++) {
        CHECK(st->gpus[i].entityId == i, "%s: row %u is GPU %u", where, i, st->gpus[i].entityId);
        for (unsigned int j = 0; j < 4; j++)
            CHECK((int)st->gpus[i].linkStatus[j] == want[i][j], "%s: %u -> %u: %d", where, i, j,
                  (int)st->gpus[i].linkStatus[j]);
        CHECK(st->gpus[i].linkStatus[fake] == DcgmNvLinkP2pStatusNotSupported,
              "%s: %u -> fake", where, i);
    }
    for (unsigned int j = 0; j <= fake; j++)
        CHECK(st->gpus[fake].linkStatus[j] == DcgmNvLinkP2pStatusNotSupported,
              "%s: fake -> %u", where, j);

    /* some GPUs, named */
    memset(st, 0, sizeof *st);
    st->version = dcgmNvLinkP2PStatus_version1;
    st->numGpus = 1;
    st->gpus[0].entityId = 2;
    CHECK_RC(p_dcgmGetNvLinkP2PStatus(h, st), DCGM_ST_OK);
    CHECK(st->numGpus == 1 && st->gpus[0].entityId == 2 &&
              st->gpus[0].linkStatus[0] == DcgmNvLinkP2pStatusOK &&
              st->gpus[0].linkStatus[2] == DcgmNvLinkP2pStatusNotSupported &&
              st->gpus[0].linkStatus[3] == DcgmNvLinkP2pStatusNotSupported,
          "%s: GPU 2 alone", where);

    st->gpus[0].entityId = 99;
    CHECK_RC(p_dcgmGetNvLinkP2PStatus(h, st), DCGM_ST_BADPARAM);
    st->version = dcgmNvLinkP2PStatus_version1 + 1;
    CHECK_RC(p_dcgmGetNvLinkP2PStatus(h, st), DCGM_ST_VER_MISMATCH);
    CHECK_RC(p_dcgmGetNvLinkP2PStatus(h, NULL), DCGM_ST_BADPARAM);
    free(st);
}

static void run_script(dcgmHandle_t h, const char *where)
{
    check_arch(h, where);
    check_device_topology(h, where);
    check_group_topology(h, where);

    /* a fake GPU: no architecture, no PCIe peers, the affinity of the last live GPU */
    unsigned int fake = new_fake_gpu(h);
    dcgmChipArchitecture_t arch = DCGM_CHIP_ARCH_UNKNOWN;
    CHECK_RC(p_dcgmGetGpuChipArchitecture(h, fake, &arch), DCGM_ST_OK);
    CHECK(arch == 0, "%s: fake GPU arch %d", where, (int)arch);
    dcgmDeviceTopology_v2 *t = calloc(1, sizeof *t);
    t->version = dcgmDeviceTopology_version2;
    CHECK_RC(p_dcgmGetDeviceTopology(h, fake, t), DCGM_ST_OK);
    CHECK(t->numGpus == 0 && t->cpuAffinityMask[0] == SOCKET1_WORD0,
          "%s: fake GPU %u peers, affinity %lx", where, t->numGpus, t->cpuAffinityMask[0]);
    free(t);

    check_p2p(h, fake, where);
    check_select(h, fake, where);
}

static void test_embedded(void) { run_embedded(scenario, DCGM_OPERATION_MODE_AUTO, run_script); }

static void test_hostengine(void) { run_through_hostengine(scenario, run_script); }

int main(int argc, char **argv)
{
    const check_test tests[] = {
        { "embedded", test_embedded },
        { "hostengine", test_hostengine },
    };
    const check_program program = { .only_env = "TEST_TOPO_ONLY", .scenario_text = SCENARIO_TEXT };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
