/*
 * test_node.c -- the simulated node on its own: determinism, physics
 * correlations, workloads, events, lost GPUs, scenario parse errors, cost.
 *
 * The Makefile builds each test as one standalone program that does not
 * link the simulator: this one is linked with the node's sources (the list
 * in node/sources.txt, field table included) and sees the node's internals.
 *
 * Usage: test_node [build-dir]   (the argument is ignored; exit 0 = pass)
 */
#include "../node/node_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK_SCRATCH_FILES
#include "check.h"
#include "node_sample.h"

static bool same_value(const sim_value *a, const sim_value *b)
{
    return a->kind == b->kind && a->type == b->type && a->i64 == b->i64 &&
           memcmp(&a->dbl, &b->dbl, sizeof a->dbl) == 0 && strcmp(a->str, b->str) == 0;
}

/* Deterministic shuffle source for the test itself. */
static uint64_t test_rng = 0x1234567;
static uint64_t next_rand(void)
{
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 7;
    test_rng ^= test_rng << 17;
    return test_rng;
}

static int field_ids(unsigned short *ids, int max)
{
    int n = 0;
    for (unsigned int id = 1; id < DCGM_FI_MAX_FIELDS && n < max; id++) {
        if (sim_field_meta((unsigned short)id) != NULL)
            ids[n++] = (unsigned short)id;
    }
    return n;
}

static const char *mixed_text =
    "# test scenario: every model and workload\n"
    "seed = 1_234\n"
    "name = \"mixed \\\"test\\\" node\"   # escapes\n"
    "[[gpu]]\nmodel = \"h100\"\ncount = 2\nworkload = \"training\"\n"
    "[[gpu]]\nmodel = \"NVIDIA A100-SXM4-80GB\"\nworkload = \"memory_leak\"\nleak_rate = 300.0\n"
    "[[gpu]]\nmodel = \"L4\"\nworkload = \"spikes\"\nspike_period = 2\nspike_length = 0.3\n"
    "[[gpu]]\nmodel = \"T4\"\nworkload = \"idle\"\n"
    "[[gpu]]\nmodel = \"H100\"\nworkload = \"thermal_runaway\"\nheat_rate = 0.5\n"
    "[[event]]\nat = 30.0\ngpu = [0, 1]\nkind = \"workload\"\nworkload = \"idle\"\n"
    "[[event]]\nat = 12.5\ngpu = 3\nkind = \"xid\"\nxid = 31\ncount = 3\ninterval = 0.5\n";

/* ---- determinism ------------------------------------------------------- */

static void test_determinism(void)
{
    printf("determinism: same spec -> same values in any query order; other seed differs\n");
    const char *path = write_file("mixed.toml", mixed_text);
    sim_node *a = load_or_die(path);
    sim_node *b = load_or_die(path);
    static unsigned short ids[700];
    int nids = field_ids(ids, 700);
    enum { N = 20000 };
    static struct { unsigned int gpu; unsigned short field; int64_t t; sim_value v; } q[N];
    unsigned int gpus = sim_node_gpu_count(a);
    for (int i = 0; i < N; i++) {
        q[i].gpu = (unsigned int)(next_rand() % gpus);
        q[i].field = ids[next_rand() % (uint64_t)nids];
        q[i].t = (int64_t)(next_rand() % 900000000ULL); /* up to 15 minutes */
        CHECK(sim_node_sample(a, q[i].gpu, q[i].field, q[i].t, &q[i].v) == DCGM_ST_OK, "sample a");
    }
    int mismatches = 0;
    for (int k = 0; k < N; k++) {
        int i = (int)(next_rand() % N);  /* random order, with repeats */
        sim_value v;
        sim_node_sample(b, q[i].gpu, q[i].field, q[i].t, &v);
        if (!same_value(&v, &q[i].v))
            mismatches++;
    }
    for (int i = N - 1; i >= 0; i--) {   /* and backwards through time */
        sim_value v;
        sim_node_sample(b, q[i].gpu, q[i].field, q[i].t, &v);
        if (!same_value(&v, &q[i].v))
            mismatches++;
    }
    CHECK(mismatches == 0, "%d of %d repeated queries differ", mismatches, 2 * N);

    /* a fresh node asked in ascending time order agrees too */
    sim_node *c = load_or_die(path);
    int order_mismatch = 0;
    for (int64_t t = 0; t <= 900000000LL; t += 7777777) {
        for (unsigned int g = 0; g < gpus; g++) {
            sim_value x, y;
            sim_node_sample(c, g, 156, t, &x);
            sim_node_sample(a, g, 156, t, &y);
            order_mismatch += !same_value(&x, &y);
            sim_node_sample(c, g, 150, t, &x);
            sim_node_sample(a, g, 150, t, &y);
            order_mismatch += !same_value(&x, &y);
        }
    }
    CHECK(order_mismatch == 0, "ascending vs random order differ in %d values", order_mismatch);

    char *other = strdup(mixed_text);
    memcpy(strstr(other, "1_234"), "4_321", 5);
    sim_node *d = load_or_die(write_file("mixed-other-seed.toml", other));
    free(other);
    CHECK(sim_node_seed(a) == 1234 && sim_node_seed(d) == 4321, "seeds %llu %llu",
          (unsigned long long)sim_node_seed(a), (unsigned long long)sim_node_seed(d));
    CHECK(strcmp(sample(a, 0, 54, 0).str, sample(d, 0, 54, 0).str) != 0, "UUIDs equal across seeds");
    int differ = 0;
    for (int i = 0; i < 50; i++)
        differ += sample_d(a, 0, 155, i * 0.1) != sample_d(d, 0, 155, i * 0.1);
    CHECK(differ > 40, "only %d of 50 power readings differ across seeds", differ);
    sim_node_free(a);
    sim_node_free(b);
    sim_node_free(c);
    sim_node_free(d);
}

/* ---- identity, support, types --------------------------------------------- */

static void test_identity(void)
{
    printf("identity: default node is 8 H100s with distinct UUIDs, serials, bus ids\n");
    sim_node *node = load_or_die(NULL);
    CHECK(sim_node_gpu_count(node) == 8, "default gpu count %u", sim_node_gpu_count(node));
    CHECK(strcmp(sample(node, 0, 50, 0).str, "NVIDIA H100 80GB HBM3") == 0, "name %s",
          sample(node, 0, 50, 0).str);
    CHECK(strcmp(sample(node, 5, 1, 0).str, "550.54.15") == 0, "driver version");
    CHECK(sample_i(node, 0, 250, 0) == 81559, "fb total");
    CHECK(sample_d(node, 0, 162, 0) == 700.0 && sample_d(node, 0, 161, 0) == 200.0, "power limits");
    /* compute capability 9.0: major in bits 16-31, as DCGM stores it */
    CHECK(sample_i(node, 0, 63, 0) == (9 << 16), "compute capability 0x%llx",
          (long long)sample_i(node, 0, 63, 0));
    for (unsigned int i = 0; i < 8; i++) {
        sim_value u = sample(node, i, 54, 0);
        unsigned int a, b, c, d;
        unsigned long long e;
        char tail;
        CHECK(strlen(u.str) == 40 && sscanf(u.str, "GPU-%8x-%4x-%4x-%4x-%12llx%c", &a, &b, &c, &d, &e, &tail) == 5,
              "uuid format %s", u.str);
        for (unsigned int j = 0; j < i; j++) {
            CHECK(strcmp(u.str, sample(node, j, 54, 0).str) != 0, "uuid %u == %u", i, j);
            CHECK(strcmp(sample(node, i, 57, 0).str, sample(node, j, 57, 0).str) != 0, "bus id %u == %u", i, j);
            CHECK(strcmp(sample(node, i, 53, 0).str, sample(node, j, 53, 0).str) != 0, "serial %u == %u", i, j);
        }
    }
    CHECK(strcmp(sample(node, 0, 57, 0).str, "00000000:18:00.0") == 0, "bus id %s", sample(node, 0, 57, 0).str);
    sim_node_free(node);

    sim_node *four = load_or_die("4");
    CHECK(sim_node_gpu_count(four) == 4, "spec \"4\" gives %u GPUs", sim_node_gpu_count(four));
    sim_node_free(four);
}

/*
 * The H200 is built from one card's NVML readings
 * (reference/hardware/h200-2026-11-30/attrs.json and fields.json); the
 * numbers below are those readings.  It shares the GH100 die's SM clocks
 * and compute capability with the H100 and has more, faster memory.
 */
static void test_h200_model(void)
{
    printf("models: the H200 answers what the recorded card answered\n");
    const char *path = write_file("h200.toml", "[[gpu]]\nmodel = \"H200\"\ncount = 2\nworkload = \"idle\"\n");
    sim_node *node = load_or_die(path);
    CHECK(sim_model_find("nvidia h200") == sim_model_find("H200"), "the NVML name finds the model");
    CHECK(strcmp(sample(node, 0, 50, 0).str, "NVIDIA H200") == 0, "name %s", sample(node, 0, 50, 0).str);
    CHECK(strcmp(sample(node, 0, 51, 0).str, "NVIDIA") == 0, "brand %s", sample(node, 0, 51, 0).str);
    CHECK(strcmp(sample(node, 0, 85, 0).str, "96.00.A5.00.1A") == 0, "vbios %s", sample(node, 0, 85, 0).str);
    CHECK(sample_i(node, 0, 58, 0) == 0x233510DE, "pci id 0x%llx", (long long)sample_i(node, 0, 58, 0));
    CHECK(sample_i(node, 0, 59, 0) == 0x18BF10DE, "pci subsystem 0x%llx", (long long)sample_i(node, 0, 59, 0));
    CHECK(sample_i(node, 0, 63, 0) == (9 << 16), "compute capability 9.0");
    /* 150,754,820,096 bytes total; 143771 - 616 = 143155 MiB free at idle */
    CHECK(sample_i(node, 0, 250, 0) == 143771, "fb total %lld", (long long)sample_i(node, 0, 250, 0));
    CHECK(sample_i(node, 0, 251, 0) == 143155, "fb free at idle %lld", (long long)sample_i(node, 0, 251, 0));
    CHECK(sample_i(node, 0, 90, 0) == 262144, "bar1 total");
    CHECK(sample_d(node, 0, 161, 0) == 200.0 && sample_d(node, 0, 162, 0) == 700.0 &&
          sample_d(node, 0, 163, 0) == 700.0 && sample_d(node, 0, 164, 0) == 700.0 &&
          sample_d(node, 0, 160, 0) == 700.0, "power limits 200-700 W, default and enforced 700 W");
    CHECK(sample_i(node, 0, 113, 0) == 1980 && sample_i(node, 0, 114, 0) == 3201 && sample_i(node, 0, 115, 0) == 1545,
          "max clocks SM %lld mem %lld video %lld", (long long)sample_i(node, 0, 113, 0),
          (long long)sample_i(node, 0, 114, 0), (long long)sample_i(node, 0, 115, 0));
    CHECK(sample_i(node, 0, 110, 0) == 1980 && sample_i(node, 0, 111, 0) == 3201, "application clocks");
    CHECK(sample_i(node, 0, 100, 0) == 345 && sample_i(node, 0, 101, 0) == 3201, "idle clocks");
    CHECK(sample_i(node, 0, 158, 0) == 89 && sample_i(node, 0, 159, 0) == 95 && sample_i(node, 0, 152, 0) == 87 &&
          sample_i(node, 0, 151, 0) == 95, "temperature thresholds");
    CHECK(sample_i(node, 0, 235, 0) == 5 && sample_i(node, 0, 236, 0) == 16 && sample_i(node, 0, 238, 0) == 16,
          "PCIe Gen5 x16");
    CHECK(sample_i(node, 0, 300, 0) == 1 && sample_i(node, 0, 301, 0) == 1, "ECC on, pending on");
    CHECK(sample_i(node, 0, 67, 0) == 0, "MIG off");
    CHECK(sample_i(node, 0, 94, 0) == 1, "GPM");
    CHECK(sample_i(node, 0, 190, 0) == 0, "P0 at idle");
    double idle_w = sample_d(node, 0, 155, 10.0);
    CHECK(idle_w > 70.0 && idle_w < 90.0, "idle power %.1f W (78 W recorded)", idle_w);
    double idle_c = sample_d(node, 0, 150, 10.0);
    CHECK(idle_c > 30.0 && idle_c < 40.0, "idle temperature %.1f C (37 C recorded)", idle_c);

    static const unsigned short has[] = {140, 67, 69, 393, 394, 395, 396, 385, 202, 156, 157, 94};
    for (size_t i = 0; i < sizeof has / sizeof has[0]; i++)
        CHECK(sim_node_field_supported(node, 0, has[i]), "H200 lacks field %u", has[i]);
    /* fan (no fans), retired pages: NOT_SUPPORTED on the card */
    static const unsigned short lacks[] = {191, 390, 391, 392};
    for (size_t i = 0; i < sizeof lacks / sizeof lacks[0]; i++)
        CHECK(!sim_node_field_supported(node, 0, lacks[i]), "H200 claims field %u", lacks[i]);
    /* NvLink: the recorded card sat alone and answered NOT_SUPPORTED for every link
     * query; H200s sharing a node sit on an HGX board with 18 links each */
    static const unsigned short link_fields[] = {64, 409, 419, 429, 439, 449, 400, 1011, 1012, 1040};
    sim_node *alone = load_or_die(write_file("h200-alone.toml", "[[gpu]]\nmodel = \"H200\"\n"));
    for (size_t i = 0; i < sizeof link_fields / sizeof link_fields[0]; i++) {
        CHECK(!sim_node_field_supported(alone, 0, link_fields[i]), "a lone H200 claims field %u", link_fields[i]);
        CHECK(sim_node_field_supported(node, 1, link_fields[i]), "an HGX H200 lacks field %u", link_fields[i]);
    }
    CHECK(sim_node_gpu_nvlinks(alone, 0) == 0 && sim_node_gpu_nvlinks(node, 0) == 18 &&
          sim_node_gpu_nvlinks(node, 1) == 18, "links: alone %u, on a board %u", sim_node_gpu_nvlinks(alone, 0),
          sim_node_gpu_nvlinks(node, 0));
    CHECK(sample_i(node, 0, 64, 0) == 0x2, "NvLink P2P mask 0x%llx", (long long)sample_i(node, 0, 64, 0));
    CHECK(strcmp(sample(node, 1, 50, 0).str, "NVIDIA H200") == 0 && sample_i(node, 1, 250, 0) == 143771,
          "the board's H200 is the same card");
    sim_node_free(alone);
    /* a node of H200s runs the driver the card was recorded on; any other node the default */
    CHECK(strcmp(sample(node, 0, 1, 0).str, "580.159.04") == 0 && strcmp(sample(node, 0, 2, 0).str, "13.580.159.04") == 0 &&
          sample_i(node, 0, 5, 0) == 13000, "H200 node driver %s", sample(node, 0, 1, 0).str);
    sim_node *mixed = load_or_die(write_file("h200-h100.toml", "[[gpu]]\nmodel = \"H200\"\n[[gpu]]\nmodel = \"H100\"\n"));
    CHECK(strcmp(sample(mixed, 0, 1, 0).str, SIM_DRIVER_VERSION) == 0 && sample_i(mixed, 0, 5, 0) == SIM_CUDA_DRIVER_VERSION,
          "mixed node driver %s", sample(mixed, 0, 1, 0).str);
    sim_node_free(mixed);

    /* the H100 is the same die: same SM clock range and compute capability */
    const sim_model *h100 = sim_model_find("H100"), *h200 = sim_model_find("H200");
    CHECK(h100->sm_clock_max == h200->sm_clock_max && h100->sm_clock_idle == h200->sm_clock_idle &&
          h100->cc_major == h200->cc_major && h100->cc_minor == h200->cc_minor, "H100 and H200 share the die");
    CHECK(h200->fb_total_mib > h100->fb_total_mib && h200->mem_clock_max > h100->mem_clock_max,
          "the H200 has more, faster memory");
    CHECK(sim_model_default() == h100, "the default model stays the H100");
    sim_node_free(node);
}

/* Every field with metadata: supported <=> a real value of the right type. */
/* Median of a field over [from_s, to_s) sampled at 10 Hz, as the recording was. */
static double median_over(sim_node *node, unsigned short field, double from_s, double to_s)
{
    double v[512];
    int n = 0;
    for (double t = from_s; t < to_s - 1e-9 && n < 512; t += 0.1)
        v[n++] = sample_d(node, 0, field, t);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j]; v[j] = v[j - 1]; v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static bool within(double got, double want, double share)
{
    return fabs(got - want) <= share * fabs(want) + 1e-9;
}

/*
 * The kernel workloads on the H200 against the recorded card's phase
 * medians (its load trace, dcgm_collector/engine/scenarios/traces/h200-2026-11-30.csv,
 * and reference/hardware/h200-2026-11-30/phases.json): the same schedule,
 * each phase's median within 10 %.
 */
static void test_h200_workloads(void)
{
    printf("workloads: tensor, memory_bound, fp32 and idle_context on the H200 match the recording\n");
    const char *path = write_file("h200-phases.toml",
        "[[gpu]]\nmodel = \"H200\"\nworkload = \"idle\"\n"
        "[[event]]\nat = 4\ngpu = 0\nkind = \"workload\"\nworkload = \"idle_context\"\n"
        "[[event]]\nat = 12\ngpu = 0\nkind = \"workload\"\nworkload = \"tensor\"\n"
        "[[event]]\nat = 32\ngpu = 0\nkind = \"workload\"\nworkload = \"idle_context\"\n"
        "[[event]]\nat = 42\ngpu = 0\nkind = \"workload\"\nworkload = \"memory_bound\"\n"
        "[[event]]\nat = 54\ngpu = 0\nkind = \"workload\"\nworkload = \"fp32\"\n"
        "[[event]]\nat = 64\ngpu = 0\nkind = \"workload\"\nworkload = \"idle_context\"\n");
    sim_node *node = load_or_die(path);
    static const struct {
        const char *phase;
        double from, to;
        double power, temp, mem_temp, sm_clock, util, mem_util, sm_active, occupancy, tensor, dram, fp32;
        uint64_t reasons;
    } want[] = {
        {"no context", 0, 4, 78, 37, 40, 345, 0, 0, 0, 0, 0, 0, 0, 0x1},
        {"idle, context", 4, 12, 121, 38, 40, 1980, 0, 0, 0, 0, 0, 0, 0, 0x0},
        {"tensor", 12, 32, 692, 60, 51, 1455, 100, 25, 0.96, 0.14, 0.94, 0.17, 0, 0x4},
        {"memory_bound", 42, 54, 475, 47, 58, 1980, 100, 100, 0.99, 0.80, 0, 0.88, 0, 0x0},
        {"fp32", 54, 64, 687, 61, 49, 1980, 100, 7, 0.97, 0.12, 0, 0.045, 0.77, 0x0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double a = want[i].from, b = want[i].to;
        double got[11] = {
            median_over(node, 155, a, b), median_over(node, 150, a, b), median_over(node, 140, a, b),
            median_over(node, 100, a, b), median_over(node, 203, a, b), median_over(node, 204, a, b),
            median_over(node, 1002, a, b), median_over(node, 1003, a, b), median_over(node, 1004, a, b),
            median_over(node, 1005, a, b), median_over(node, 1007, a, b),
        };
        const double exp[11] = {
            want[i].power, want[i].temp, want[i].mem_temp, want[i].sm_clock, want[i].util, want[i].mem_util,
            want[i].sm_active, want[i].occupancy, want[i].tensor, want[i].dram, want[i].fp32,
        };
        static const char *const names[11] = {"power", "GPU temp", "memory temp", "SM clock", "util",
                                              "mem util", "SM active", "occupancy", "tensor", "DRAM", "FP32"};
        for (int k = 0; k < 11; k++)
            CHECK(exp[k] == 0 ? fabs(got[k]) < 0.01 : within(got[k], exp[k], 0.10),
                  "%s: %s median %.3f, recorded %.3f", want[i].phase, names[k], got[k], exp[k]);
        int64_t r = sample_i(node, 0, 112, (a + b) / 2);
        CHECK((uint64_t)r == want[i].reasons, "%s: clock-event reasons 0x%llx, recorded 0x%llx",
              want[i].phase, (long long)r, (unsigned long long)want[i].reasons);
    }

    /* Dynamics.  The cap pulls the SM clock into the recorded 1215-1980 MHz band under tensor
     * load, never to the maximum; fp32 stays under the cap at full clock. */
    for (double t = 12.5; t < 32.0; t += 0.5) {
        int64_t mhz = sample_i(node, 0, 100, t);
        double w = sample_d(node, 0, 155, t);
        CHECK(mhz >= 1215 && mhz < 1600 && w <= 700.0 * 1.01,
              "tensor at %.1f s: %lld MHz at %.0f W", t, (long long)mhz, w);
        CHECK(sample_i(node, 0, 112, t) & 0x4, "tensor at %.1f s: SW power cap set", t);
    }
    for (double t = 54.5; t < 64.0; t += 0.5)
        CHECK(sample_i(node, 0, 100, t) == 1980 && !(sample_i(node, 0, 112, t) & 0x4),
              "fp32 at %.1f s keeps 1980 MHz with no cap", t);
    /* Heat: the GPU makes most of its rise within 1 s of the load, the rest over seconds; the
     * memory follows more slowly.  Recorded: 38 -> 57 C in 1 s, 60-61 after 5 s; memory 40 ->
     * 45 in 1 s, 52 after 15 s; 1 s after the load stops the GPU is back to 42 C. */
    double g0 = sample_d(node, 0, 150, 11.9), g1 = sample_d(node, 0, 150, 13.0);
    double g5 = sample_d(node, 0, 150, 17.0), g15 = sample_d(node, 0, 150, 31.9);
    CHECK(g1 - g0 >= 14.0 && g1 < g5 && g5 >= 58.0 && g15 - g5 <= 3.0,
          "GPU temperature %.0f -> %.0f (1 s) -> %.0f (5 s) -> %.0f (20 s)", g0, g1, g5, g15);
    double m0 = sample_d(node, 0, 140, 11.9), m1 = sample_d(node, 0, 140, 13.0);
    double m15 = sample_d(node, 0, 140, 27.0);
    CHECK(m1 - m0 >= 2.0 && m1 - m0 < g1 - g0 && m15 - m1 >= 3.0,
          "memory temperature %.0f -> %.0f (1 s) -> %.0f (15 s)", m0, m1, m15);
    double after = sample_d(node, 0, 150, 33.0);
    CHECK(after < 47.0, "GPU temperature 1 s after the load %.0f C (42 recorded)", after);
    sim_node_free(node);

    /* The H100 keeps its single slow lag: the new heat model is the H200's alone. */
    sim_node *h100 = load_or_die(write_file("h100-tensor.toml",
        "[[gpu]]\nmodel = \"H100\"\nworkload = \"idle\"\n"
        "[[event]]\nat = 10\ngpu = 0\nkind = \"workload\"\nworkload = \"tensor\"\n"));
    double h0 = sample_d(h100, 0, 150, 9.9), h1 = sample_d(h100, 0, 150, 11.0);
    CHECK(h1 - h0 < 3.0, "H100 temperature %.1f -> %.1f in 1 s (20 s lag)", h0, h1);
    CHECK(sample_i(h100, 0, 112, 20.0) & 0x4, "tensor caps the H100 too");
    sim_node_free(h100);
}

static void test_support_and_types(void)
{
    printf("support: field_supported agrees with samples; types match metadata; sentinels\n");
    sim_node *node = load_or_die(write_file("types.toml", mixed_text));
    static unsigned short ids[700];
    int nids = field_ids(ids, 700);
    int supported_count[8] = {0};
    for (unsigned int g = 0; g < sim_node_gpu_count(node); g++) {
        for (int i = 0; i < nids; i++) {
            const dcgm_field_meta_t *meta = sim_field_meta(ids[i]);
            sim_value v = sample(node, g, ids[i], 61.0);
            int sup = sim_node_field_supported(node, g, ids[i]);
            CHECK(v.type == meta->fieldType, "field %u type %c vs %c", ids[i], v.type, meta->fieldType);
            if (sim_node_is_event_field(ids[i]))
                continue;
            if (!sup) {
                CHECK(v.kind == SIM_VALUE_NOT_SUPPORTED, "gpu %u field %u unsupported but kind %d", g, ids[i], v.kind);
                CHECK(v.i64 == (int64_t)DCGM_INT64_NOT_SUPPORTED && v.dbl == DCGM_FP64_NOT_SUPPORTED &&
                      strcmp(v.str, DCGM_STR_NOT_SUPPORTED) == 0, "field %u sentinel", ids[i]);
                continue;
            }
            supported_count[g]++;
            CHECK(v.kind == SIM_VALUE_OK, "gpu %u field %u supported but kind %d", g, ids[i], v.kind);
            if (meta->fieldType == DCGM_FT_STRING)
                CHECK(v.str[0] != '\0' && strncmp(v.str, "<<<", 3) != 0, "field %u empty string", ids[i]);
            if (meta->fieldType == DCGM_FT_INT64)
                CHECK(v.i64 < (int64_t)DCGM_INT64_BLANK, "field %u int %lld is a sentinel", ids[i], (long long)v.i64);
            if (meta->fieldType == DCGM_FT_DOUBLE)
                CHECK(v.dbl < DCGM_FP64_BLANK && v.dbl == v.dbl, "field %u double %g", ids[i], v.dbl);
            CHECK(meta->fieldType != DCGM_FT_BINARY, "binary field %u claims support", ids[i]);
        }
    }
    printf("  supported fields per GPU: H100 %d, A100 %d, L4 %d, T4 %d\n",
           supported_count[0], supported_count[2], supported_count[3], supported_count[4]);

    /* dcgm-exporter's default and DCP lists; the documented exceptions are not supported */
    static const unsigned short exporter[] = {
        1, 51, 53, 56, 80, 82, 85, 100, 101, 140, 150, 155, 156, 202, 203, 204, 206, 207, 230,
        240, 241, 242, 243, 244, 245, 251, 252, 253, 310, 311, 312, 313, 393, 394, 395,
        409, 419, 429, 439, 440, 449, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
        2,
    };
    for (size_t i = 0; i < sizeof exporter / sizeof exporter[0]; i++)
        CHECK(sim_node_field_supported(node, 0, exporter[i]), "H100 lacks exporter field %u", exporter[i]);
    static const unsigned short attributes[] = {
        158, 159, 160, 161, 162, 163, 164, 54, 85, 82, 51, 50, 53, 57, 1, 58, 59, 500, 90, 250, 252, 251, 66, 67, 74,
    };
    for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++)
        CHECK(sim_node_field_supported(node, 0, attributes[i]), "H100 lacks attribute field %u", attributes[i]);
    CHECK(!sim_node_field_supported(node, 0, 130), "130 is documented as not supported");
    CHECK(sim_node_field_supported(node, 0, 526) && sample_i(node, 0, 526, 1.0) == 0,
          "vGPU license status on bare metal: 0, no licence");
    CHECK(!sim_node_field_supported(node, 0, 390), "H100 retires no pages (row remapping)");
    CHECK(sim_node_field_supported(node, 4, 390) && !sim_node_field_supported(node, 4, 393), "T4 retires pages");
    CHECK(!sim_node_field_supported(node, 4, 140), "T4 has no memory temperature");
    CHECK(!sim_node_field_supported(node, 3, 449) && !sim_node_field_supported(node, 4, 1011), "PCIe parts lack NVLink");
    CHECK(sim_node_field_supported(node, 0, 496) && !sim_node_field_supported(node, 2, 496), "H100 18 links, A100 12");
    CHECK(!sim_node_field_supported(node, 3, 67), "L4 has no MIG");

    sim_value v;
    CHECK(sim_node_sample(node, 0, 9999, 0, &v) == DCGM_ST_UNKNOWN_FIELD, "unknown field id");
    CHECK(sim_node_sample(node, 0, 0, 0, &v) == DCGM_ST_UNKNOWN_FIELD, "field 0");
    CHECK(sim_node_sample(node, 99, 150, 0, &v) == DCGM_ST_BADPARAM, "gpu out of range");
    CHECK(sim_node_sample(node, 99, 1, 0, &v) == DCGM_ST_OK, "global field ignores gpu");
    CHECK(sim_node_sample(NULL, 0, 150, 0, &v) == DCGM_ST_BADPARAM, "NULL node");
    CHECK(sim_node_sample(node, 0, 150, 0, NULL) == DCGM_ST_BADPARAM, "NULL out");
    CHECK(sim_node_sample(node, 0, 150, -5, &v) == DCGM_ST_OK, "t < 0 clamps to start");
    sim_node_free(node);
}

/* ---- physics ---------------------------------------------------------------- */

static void test_power_follows_load(void)
{
    printf("physics: power follows utilisation; temperature lags power\n");
    sim_node *node = load_or_die(write_file("corr.toml", mixed_text));
    /* L4 spikes (gpu 3): the instant power jumps with the bursts; power usage
     * is a 1 s average on the L4 (Ada), so it swings much less */
    double inst_max = 0, inst_min = 1e9, avg_max = 0, avg_min = 1e9;
    int nhi = 0, nlo = 0;
    for (int i = 0; i < 200; i++) {
        double t = 5.0 + i * 0.1;
        int64_t u = sample_i(node, 3, 203, t);
        nhi += u >= 50;
        nlo += u <= 10;
        inst_max = fmax(inst_max, sample_d(node, 3, 157, t));
        inst_min = fmin(inst_min, sample_d(node, 3, 157, t));
        avg_max = fmax(avg_max, sample_d(node, 3, 155, t));
        avg_min = fmin(avg_min, sample_d(node, 3, 155, t));
    }
    CHECK(nhi > 5 && nlo > 100, "spike sampling: %d high, %d low", nhi, nlo);
    CHECK(inst_max > inst_min + 40.0, "L4 instant power %.1f to %.1f W", inst_min, inst_max);
    CHECK(avg_max - avg_min < 0.6 * (inst_max - inst_min), "L4 averaged power %.1f to %.1f W, instant %.1f to %.1f W",
          avg_min, avg_max, inst_min, inst_max);

    double train = sample_d(node, 0, 155, 10.0), idle = sample_d(node, 4, 155, 10.0);
    CHECK(train > 550.0 && train <= 700.0 * 1.01, "H100 training power %.1f", train);
    CHECK(idle < 15.0, "T4 idle power %.1f", idle);

    /* GPU 0 goes idle at 30 s: power drops at once, temperature follows slowly */
    double p_before = sample_d(node, 0, 157, 29.9), p_after = sample_d(node, 0, 157, 30.1);
    CHECK(sample_d(node, 0, 155, 30.1) > 400 && sample_d(node, 0, 155, 31.0) < 100,
          "1 s average %.1f W at 30.1 s, %.1f W at 31 s", sample_d(node, 0, 155, 30.1), sample_d(node, 0, 155, 31.0));
    int64_t t_before = sample_i(node, 0, 150, 29.9), t_after = sample_i(node, 0, 150, 30.1);
    int64_t t_later = sample_i(node, 0, 150, 90.0), t_much_later = sample_i(node, 0, 150, 200.0);
    CHECK(p_before > 500 && p_after < 100, "power %.1f -> %.1f at the idle switch", p_before, p_after);
    CHECK(t_after >= t_before - 1, "temperature jumped %lld -> %lld", (long long)t_before, (long long)t_after);
    CHECK(t_later < t_before - 15 && t_much_later < t_later, "temperature %lld -> %lld -> %lld",
          (long long)t_before, (long long)t_later, (long long)t_much_later);
    printf("  H100 idle switch at 30 s: power %.0f -> %.0f W, temp %lld -> %lld (30.1 s) -> %lld (90 s) -> %lld C (200 s)\n",
           p_before, p_after, (long long)t_before, (long long)t_after, (long long)t_later, (long long)t_much_later);
    int64_t prev = t_after;
    bool falling = true;
    for (double t = 30.1; t < 200.0; t += 1.0) {
        int64_t now = sample_i(node, 0, 150, t);
        falling = falling && now <= prev;
        prev = now;
    }
    CHECK(falling, "temperature rose while idle");

    /* DCP ratios stay in [0,1] and track utilisation (the reading averages a
     * 200 ms period, the ratio is the step's, so compare them over time) */
    for (unsigned int g = 0; g < 4; g++) {
        double util_sum = 0, gr_sum = 0;
        int n = 0;
        for (double t = 0; t < 40; t += 0.1, n++) {
            util_sum += sample_i(node, g, 203, t) / 100.0;
            gr_sum += sample_d(node, g, 1001, t);
            for (unsigned short f = 1001; f <= 1008; f++) {
                double r = sample_d(node, g, f, t);
                CHECK(r >= 0.0 && r <= 1.0, "gpu %u field %u ratio %g", g, f, r);
            }
        }
        CHECK(fabs(gr_sum / n - util_sum / n) < 0.03, "gpu %u: gr engine %.3f vs util %.3f", g, gr_sum / n,
              util_sum / n);
    }
    sim_node_free(node);
}

static void test_power_limit_set(void)
{
    printf("settings: a power limit set while the node runs\n");
    sim_node *a = load_or_die("2");
    /* fill the cache past two checkpoints (300 s, 600 s) first */
    double p100 = sample_d(a, 0, 155, 100.0), p400 = sample_d(a, 0, 155, 400.0);
    double e610 = sample_d(a, 0, 156, 610.0), e700 = sample_d(a, 0, 156, 700.0);
    int64_t temp700 = sample_i(a, 0, 150, 700.0);
    double other700 = sample_d(a, 1, 156, 700.0);
    CHECK(sample_d(a, 0, 155, 650.0) > 500.0, "training H100 draws %.1f W", sample_d(a, 0, 155, 650.0));
    CHECK(sim_node_set_power_limit(a, 0, 620000000, 300.0) == DCGM_ST_OK, "set");
    CHECK(sim_node_set_power_limit(a, 7, 620000000, 300.0) == DCGM_ST_BADPARAM, "no GPU 7");
    CHECK(sim_node_set_power_limit(a, 0, 620000000, 0.0) == DCGM_ST_BADPARAM, "0 W");
    /* before the change: as it was */
    CHECK(sample_d(a, 0, 155, 100.0) == p100 && sample_d(a, 0, 155, 400.0) == p400, "history changed");
    CHECK(sample_d(a, 0, 156, 610.0) == e610, "energy before the change");
    CHECK(sample_d(a, 0, 160, 619.9) == 700.0 && sample_d(a, 0, 164, 619.9) == 700.0, "old limit");
    /* after: the new limit, a capped draw, less energy, a cooler GPU */
    CHECK(sample_d(a, 0, 160, 620.0) == 300.0 && sample_d(a, 0, 164, 700.0) == 300.0, "new limit");
    for (double t = 620.0; t < 700.0; t += 3.3)
        CHECK(sample_d(a, 0, 157, t) <= 300.0 * 1.01, "draw %.1f W at %.1f s", sample_d(a, 0, 157, t), t);
    for (double t = 621.0; t < 700.0; t += 3.3)
        CHECK(sample_d(a, 0, 155, t) <= 300.0 * 1.01, "1 s average %.1f W at %.1f s", sample_d(a, 0, 155, t), t);
    CHECK(sample_i(a, 0, 112, 650.0) & SIM_CLOCKS_EVENT_SW_POWER_CAP, "no power-cap reason");
    double e700_after = sample_d(a, 0, 156, 700.0);
    CHECK(e700_after < e700 - 80.0 * 150.0 * 1000.0, "energy %.0f -> %.0f mJ", e700, e700_after);
    CHECK(sample_i(a, 0, 150, 700.0) < temp700 - 5, "temperature %lld -> %lld",
          (long long)temp700, (long long)sample_i(a, 0, 150, 700.0));
    CHECK(sample_d(a, 1, 156, 700.0) == other700, "GPU 1 changed");
    /* the answers depend on the limits set, not on the order of the queries */
    sim_node *b = load_or_die("2");
    CHECK(sim_node_set_power_limit(b, 0, 620000000, 300.0) == DCGM_ST_OK, "set b");
    for (double t = 700.0; t > 0.0; t -= 77.7) {
        sim_value va = sample(a, 0, 156, t), vb = sample(b, 0, 156, t);
        CHECK(same_value(&va, &vb), "energy at %.1f s: %g vs %g", t, va.dbl, vb.dbl);
        va = sample(a, 0, 150, t), vb = sample(b, 0, 150, t);
        CHECK(same_value(&va, &vb), "temperature at %.1f s", t);
    }
    /* a change at the start replays the whole run */
    CHECK(sim_node_set_power_limit(b, 1, 0, 250.0) == DCGM_ST_OK, "set at 0");
    CHECK(sample_d(b, 1, 155, 0.0) <= 250.0 * 1.01 && sample_d(b, 1, 155, 500.0) <= 250.0 * 1.01,
          "capped from the start");
    sim_node_free(a);
    sim_node_free(b);
}

static void test_thermal_runaway(void)
{
    printf("physics: thermal runaway throttles clocks and sets clock event reasons\n");
    sim_node *node = load_or_die(write_file("runaway.toml", mixed_text));
    const unsigned int g = 5;   /* the runaway H100 */
    int64_t max_temp = 0;
    uint64_t seen = 0;
    double first_hw = -1;
    for (double t = 0; t <= 400.0; t += 0.5) {
        int64_t temp = sample_i(node, g, 150, t);
        uint64_t reasons = (uint64_t)sample_i(node, g, 112, t);
        if (temp > max_temp)
            max_temp = temp;
        seen |= reasons;
        if (first_hw < 0 && (reasons & SIM_CLOCKS_EVENT_HW_SLOWDOWN))
            first_hw = t;
    }
    int64_t slowdown = sample_i(node, g, 158, 0), shutdown = sample_i(node, g, 159, 0);
    CHECK(max_temp >= slowdown && max_temp <= shutdown, "max temp %lld (slowdown %lld, shutdown %lld)",
          (long long)max_temp, (long long)slowdown, (long long)shutdown);
    CHECK((seen & 0x20) && (seen & 0x40) && (seen & 0x8), "reasons seen 0x%llx", (unsigned long long)seen);
    int64_t clock_start = sample_i(node, g, 100, 1.0), clock_end = sample_i(node, g, 100, 400.0);
    CHECK(clock_end < clock_start * 6 / 10, "SM clock %lld -> %lld", (long long)clock_start, (long long)clock_end);
    CHECK(sample_i(node, g, 241, 400.0) > 0, "thermal violation time did not grow");
    /* the hardware share of it, counted apart for NVML: it starts later, at the slowdown threshold */
    int64_t hw_ns = -1, brake_ns = -1, none = 0;
    CHECK(sim_node_slowdown_ns(node, g, 400000000, SIM_CLOCKS_EVENT_HW_THERMAL, &hw_ns) == DCGM_ST_OK, "HW thermal");
    CHECK(hw_ns > 0 && hw_ns < sample_i(node, g, 241, 400.0), "HW thermal %lld ns of %lld", (long long)hw_ns,
          (long long)sample_i(node, g, 241, 400.0));
    CHECK(hw_ns <= (int64_t)((400.0 - first_hw) * 1e9) + 100000000, "HW thermal only after %.1f s", first_hw);
    CHECK(sim_node_slowdown_ns(node, g, 400000000, SIM_CLOCKS_EVENT_HW_POWER_BRAKE, &brake_ns) == DCGM_ST_OK &&
          brake_ns == 0, "no power brake asserted: %lld ns", (long long)brake_ns);
    CHECK(sim_node_slowdown_ns(node, g, 400000000, SIM_CLOCKS_EVENT_SW_THERMAL, &none) == DCGM_ST_BADPARAM,
          "SW thermal is field 241, not a slowdown counter of its own");
    CHECK(sim_node_slowdown_ns(node, 99, 0, SIM_CLOCKS_EVENT_HW_THERMAL, &none) == DCGM_ST_BADPARAM, "no GPU 99");
    printf("  runaway H100: max %lld C (slowdown %lld), HW slowdown from %.1f s, SM clock %lld -> %lld MHz, reasons 0x%llx\n",
          (long long)max_temp, (long long)slowdown, first_hw, (long long)clock_start, (long long)clock_end,
          (unsigned long long)seen);
    /* the healthy training H100 next door never thermally throttles */
    uint64_t healthy = 0;
    for (double t = 0; t <= 30.0; t += 0.5)
        healthy |= (uint64_t)sample_i(node, 1, 112, t);
    CHECK(!(healthy & 0x68), "healthy GPU has thermal reasons 0x%llx", (unsigned long long)healthy);
    CHECK(sim_node_slowdown_ns(node, 1, 30000000, SIM_CLOCKS_EVENT_HW_THERMAL, &hw_ns) == DCGM_ST_OK && hw_ns == 0,
          "healthy GPU HW thermal %lld ns", (long long)hw_ns);
    CHECK(sample_i(node, 1, 100, 10.0) > 1500, "healthy SM clock %lld", (long long)sample_i(node, 1, 100, 10.0));
    sim_node_free(node);
}

static void test_memory_and_counters(void)
{
    printf("physics: fb used+free+reserved == total; leak fills; counters never decrease\n");
    sim_node *node = load_or_die(write_file("counters.toml", mixed_text));
    unsigned int gpus = sim_node_gpu_count(node);
    static const unsigned short monotonic[] = {
        156, 202, 240, 241, 244, 246, 247, 310, 311, 312, 313, 409, 419, 429, 439, 497, 498, 499, 400, 1040,
    };
    enum { NM = sizeof monotonic / sizeof monotonic[0] };
    int64_t last[8][NM];
    int64_t first[8][NM];
    for (unsigned int g = 0; g < gpus; g++)
        for (int k = 0; k < NM; k++)
            last[g][k] = INT64_MIN;
    int fb_bad = 0, decreases = 0;
    for (int64_t t = 0; t <= 600000000LL; t += 10000) {  /* 10 minutes at 10 ms */
        for (unsigned int g = 0; g < gpus; g++) {
            if (t % 1000000 == 0) {
                sim_value tot, fr, us, rs;
                sim_node_sample(node, g, 250, t, &tot);
                sim_node_sample(node, g, 251, t, &fr);
                sim_node_sample(node, g, 252, t, &us);
                sim_node_sample(node, g, 253, t, &rs);
                fb_bad += (us.i64 + fr.i64 + rs.i64 != tot.i64) || us.i64 < 0 || fr.i64 < 0;
            }
            for (int k = 0; k < NM; k++) {
                if (monotonic[k] == 1040)
                    continue;   /* a rate, listed only to exercise per-link code */
                sim_value v;
                sim_node_sample(node, g, monotonic[k], t, &v);
                if (v.kind != SIM_VALUE_OK)
                    continue;
                if (v.i64 < last[g][k]) {
                    if (decreases++ < 5)
                        fprintf(stderr, "  gpu %u field %u fell %lld -> %lld at %lld us\n", g, monotonic[k],
                                (long long)last[g][k], (long long)v.i64, (long long)t);
                }
                if (last[g][k] == INT64_MIN)
                    first[g][k] = v.i64;
                last[g][k] = v.i64;
            }
        }
    }
    CHECK(fb_bad == 0, "%d framebuffer samples do not add up", fb_bad);
    CHECK(decreases == 0, "%d counter decreases", decreases);
    int grew = 0;
    for (unsigned int g = 0; g < gpus; g++)
        for (int k = 1; k < NM; k++)
            grew += last[g][k] != INT64_MIN && last[g][k] > first[g][k];
    CHECK(grew >= 5, "only %d error/violation counters grew in 10 minutes", grew);
    CHECK(last[0][0] > first[0][0] + 600LL * 100 * 1000, "H100 energy grew by %lld mJ in 10 min",
          (long long)(last[0][0] - first[0][0]));
    printf("  energy H100 gpu0: +%lld J in 10 min; %d counters grew\n",
           (long long)((last[0][0] - first[0][0]) / 1000), grew);

    /* the leaking A100 (gpu 2): used grows, then stops near full */
    int64_t used0 = sample_i(node, 2, 252, 0), used60 = sample_i(node, 2, 252, 60);
    int64_t usable = sample_i(node, 2, 250, 0) - sample_i(node, 2, 253, 0);
    int64_t used_end = sample_i(node, 2, 252, 600);
    CHECK(used60 > used0 + 60 * 250, "leak %lld -> %lld MiB", (long long)used0, (long long)used60);
    CHECK(used_end >= usable * 98 / 100 && used_end < usable, "leak ends at %lld of %lld", (long long)used_end,
          (long long)usable);
    double ratio = sample_d(node, 2, 254, 600);
    CHECK(ratio > 0.98 && ratio <= 1.0, "fb used ratio %g", ratio);
    sim_node_free(node);
}

static void test_spikes(void)
{
    printf("workloads: 300 ms spikes every 2 s are visible at 100 ms sampling\n");
    /* utilisation reads the busy share of 200 ms periods, so a 300 ms burst
     * reads at least 50 % in one of them; the instant power jumps with it */
    const char *path = write_file("spikes.toml",
        "seed = 9\n[[gpu]]\nmodel = \"H100\"\ncount = 3\nworkload = \"spikes\"\n"
        "spike_period = 2.0\nspike_length = 0.3\nutilization = 0.05\n");
    sim_node *node = load_or_die(path);
    for (unsigned int g = 0; g < 3; g++) {
        /* one burst in each 2 s at a seeded place in it: over 20 s some ten
         * bursts (two in adjacent periods can run together), 2 to 4 samples
         * each, and never more than two periods without one */
        int high = 0, bursts = 0, gap = 0, longest_gap = 0;
        bool was_high = false;
        double peak_power = 0, floor_power = 1e9;
        for (int k = 0; k < 200; k++) {
            double t = k * 0.1;
            int64_t u = sample_i(node, g, 203, t);
            double p = sample_d(node, g, 157, t);
            bool is_high = u >= 50;
            if (is_high) {
                high++;
                bursts += !was_high;
                peak_power = fmax(peak_power, p);
                gap = 0;
            } else {
                floor_power = fmin(floor_power, p);
                longest_gap = gap > longest_gap ? gap : longest_gap;
                gap++;
            }
            was_high = is_high;
        }
        CHECK(bursts >= 6 && bursts <= 11 && high >= 20 && high <= 60 && longest_gap <= 40,
              "gpu %u: %d high samples in %d bursts, longest gap %d samples", g, high, bursts, longest_gap);
        CHECK(peak_power > floor_power + 400, "gpu %u: spike power %.0f vs floor %.0f", g, peak_power, floor_power);
        if (g == 0)
            printf("  gpu 0: %d of 200 samples at >=50%% util, spike power %.0f W, floor %.0f W\n", high,
                   peak_power, floor_power);
    }
    sim_node_free(node);
}

/* ---- events, lost GPUs ------------------------------------------------------ */

static void test_xid_events(void)
{
    printf("events: XIDs returned by sim_node_events in (from, to]; DBE counters follow XID 48\n");
    const char *path = write_file("xid.toml",
        "[[gpu]]\nmodel = \"A100\"\ncount = 2\n"
        "[[event]]\nat = 10.0\ngpu = 0\nkind = \"xid\"\nxid = 13\ncount = 5\ninterval = 0.1\n"
        "[[event]]\nat = 20\ngpu = 1\nkind = \"xid\"\nxid = 48\n");
    sim_node *node = load_or_die(path);
    sim_event ev[8];
    CHECK(sim_node_is_event_field(230) && !sim_node_is_event_field(150), "event field ids");
    CHECK(sim_node_events(node, 0, 230, 0, 10000000, ev, 8) == 1 && ev[0].t_rel_us == 10000000 && ev[0].value == 13,
          "first XID at exactly 10 s is in (0, 10 s]");
    CHECK(sim_node_events(node, 0, 230, 10000000, 11000000, ev, 8) == 4, "next four in (10 s, 11 s]");
    int n = sim_node_events(node, 0, 230, -1, 100000000, ev, 2);
    CHECK(n == 5 && ev[0].t_rel_us == 10000000 && ev[1].t_rel_us == 10100000, "truncated listing %d", n);
    CHECK(sim_node_events(node, 0, 230, 10400000, 100000000, ev, 8) == 0, "nothing after the burst");
    CHECK(sim_node_events(node, 0, 150, 0, 100000000, ev, 8) == 0, "non-event field");
    CHECK(sim_node_events(node, 1, 230, 0, 100000000, ev, 8) == 1 && ev[0].value == 48, "XID 48 on gpu 1");
    CHECK(sample(node, 0, 230, 9.9).kind == SIM_VALUE_BLANK, "no XID yet");
    CHECK(sample_i(node, 0, 230, 10.25) == 13, "latest XID");
    CHECK(sample_i(node, 1, 311, 19.9) == 0 && sample_i(node, 1, 311, 20.0) == 1, "DBE volatile follows XID 48");
    CHECK(sample_i(node, 1, 393, 25) == 1 && sample_i(node, 1, 396, 25) == 1, "row remap after DBE");
    sim_node_free(node);
}

static void test_lost_gpu(void)
{
    printf("events: a lost GPU blanks every field from lost_at on, with XID 79\n");
    sim_node *node = load_or_die(write_file("lost.toml",
        "[[gpu]]\nmodel = \"H100\"\ncount = 4\n[[event]]\nat = 15.0\ngpu = 2\nkind = \"lost\"\n"
        "[[event]]\nat = 16.0\ngpu = 2\nkind = \"xid\"\nxid = 13\n"));
    CHECK(sim_node_gpu_lost_at(node, 2) == 15000000, "lost_at %lld", (long long)sim_node_gpu_lost_at(node, 2));
    CHECK(sim_node_gpu_lost_at(node, 1) == -1 && sim_node_gpu_lost_at(node, 99) == -1, "others never lost");
    CHECK(sample(node, 2, 150, 14.9).kind == SIM_VALUE_OK, "alive before");
    static const unsigned short fields[] = {50, 54, 100, 150, 155, 156, 203, 252, 1001, 230};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        sim_value v = sample(node, 2, fields[i], 15.0);
        CHECK(v.kind == SIM_VALUE_BLANK, "field %u not blank after loss", fields[i]);
        v = sample(node, 2, fields[i], 500.0);
        CHECK(v.kind == SIM_VALUE_BLANK, "field %u not blank later", fields[i]);
        CHECK(sample(node, 1, fields[i], 15.0).kind != SIM_VALUE_NOT_SUPPORTED, "gpu 1 field %u", fields[i]);
    }
    CHECK(sample(node, 2, 1, 20.0).kind == SIM_VALUE_OK, "global fields still answer");
    sim_event ev[4];
    int n = sim_node_events(node, 2, 230, 0, 100000000, ev, 4);
    CHECK(n == 1 && ev[0].value == 79 && ev[0].t_rel_us == 15000000, "XID 79 at loss, none after (%d)", n);
    sim_node_free(node);
}

/* ---- scenario errors ---------------------------------------------------------- */

static void expect_error(const char *name, const char *text, int line, const char *needle, int want_rc)
{
    const char *path = write_file(name, text);
    char expect_prefix[600];
    snprintf(expect_prefix, sizeof expect_prefix, "%s:%d: ", path, line);
    sim_node *node = (sim_node *)0x1;
    char err[512] = "";
    int rc = sim_node_load(path, &node, err, sizeof err);
    CHECK(rc == want_rc && node == NULL, "%s: rc %d", name, rc);
    CHECK(strncmp(err, expect_prefix, strlen(expect_prefix)) == 0 && strstr(err, needle) != NULL &&
              strchr(err, '\n') == NULL,
          "%s: got \"%s\", want \"%s...%s...\"", name, err, expect_prefix, needle);
    printf("  %-22s -> %s\n", name, err + strlen(tmpdir) + 1);
}

/* MIG layouts: profile names per instance as listed, or an even split from mig_instances */
static void test_mig_profiles(void)
{
    printf("MIG: profiles as the scenario lists them, per model\n");
    sim_node *node = load_or_die(write_file("mig-layouts.toml",
        "[[gpu]]\nmodel = \"H200\"\nmig_profiles = [\"1g.18gb\", \"1g.35gb\", \"2g.35gb\", \"1g.18gb\"]\n"
        "[[gpu]]\nmodel = \"H100\"\nmig_profiles = [\"7g.80gb\"]\n"
        "[[gpu]]\nmodel = \"H100\"\nmig_instances = 2\n"
        "[[gpu]]\nmodel = \"A100\"\nmig_instances = 7\n"
        "[[gpu]]\nmodel = \"H200\"\n"));
    static const struct {
        unsigned int gpu, instances;
        const char *names[7];
    } want[] = {
        { 0, 4, { "1g.18gb", "1g.35gb", "2g.35gb", "1g.18gb" } },
        { 1, 1, { "7g.80gb" } },
        { 2, 2, { "3g.40gb", "3g.40gb" } },
        { 3, 7, { "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb" } },
        { 4, 0, { NULL } },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        unsigned int n = sim_node_gpu_mig_instances(node, want[i].gpu);
        CHECK(n == want[i].instances, "GPU %u: %u instances, want %u", want[i].gpu, n, want[i].instances);
        for (unsigned int k = 0; k < n && k < 7; k++) {
            const sim_mig_profile *p = sim_node_gpu_mig_profile(node, want[i].gpu, k);
            CHECK(p && strcmp(p->name, want[i].names[k]) == 0, "GPU %u instance %u: %s, want %s", want[i].gpu, k,
                  p ? p->name : "(none)", want[i].names[k]);
        }
        CHECK(sim_node_gpu_mig_profile(node, want[i].gpu, n) == NULL, "GPU %u: no instance %u", want[i].gpu, n);
    }
    sim_node_free(node);
}

static void test_parse_errors(void)
{
    printf("scenarios: errors name file:line and the problem\n");
    expect_error("unknown-key.toml", "seed = 1\n[[gpu]]\nmodle = \"H100\"\n", 3, "'modle'", DCGM_ST_BADPARAM);
    expect_error("unknown-model.toml", "[[gpu]]\n# comment\nmodel = \"V100\"\n", 3, "H100, H200, A100, L4, T4",
                 DCGM_ST_BADPARAM);
    expect_error("unknown-workload.toml", "[[gpu]]\nworkload = \"mining\"\n", 2, "thermal_runaway", DCGM_ST_BADPARAM);
    expect_error("unterminated.toml", "[[gpu]]\nmodel = \"H100\n", 2, "unterminated", DCGM_ST_BADPARAM);
    expect_error("bad-gpu-index.toml", "[[gpu]]\ncount = 2\n\n[[event]]\nat = 1\ngpu = 2\nkind = \"lost\"\n", 4,
                 "gpu 2 does not exist", DCGM_ST_BADPARAM);
    expect_error("plain-table.toml", "[gpu]\nmodel = \"H100\"\n", 1, "[[gpu]]", DCGM_ST_BADPARAM);
    expect_error("duplicate.toml", "[[gpu]]\nmodel = \"H100\"\nmodel = \"A100\"\n", 3, "twice", DCGM_ST_BADPARAM);
    expect_error("too-many.toml", "[[gpu]]\ncount = 20\n[[gpu]]\ncount = 20\n", 3, "too many GPUs", DCGM_ST_BADPARAM);
    expect_error("count-range.toml", "[[gpu]]\ncount = 40\n", 2, "out of range", DCGM_ST_BADPARAM);
    expect_error("mig-l4.toml", "[[gpu]]\nmodel = \"L4\"\nmig_instances = 2\n", 3, "MIG", DCGM_ST_BADPARAM);
    expect_error("trailing.toml", "seed = 42 x\n[[gpu]]\n", 1, "unexpected text", DCGM_ST_BADPARAM);
    expect_error("top-key.toml", "seeds = 42\n", 1, "'seeds'", DCGM_ST_BADPARAM);
    expect_error("no-gpu.toml", "seed = 42\n", 1, "no [[gpu]]", DCGM_ST_BADPARAM);
    expect_error("bad-number.toml", "[[gpu]]\nutilization = 0.5.1\n", 2, "not a number", DCGM_ST_BADPARAM);
    expect_error("wrong-type.toml", "[[gpu]]\ncount = \"two\"\n", 2, "must be an integer", DCGM_ST_BADPARAM);
    expect_error("xid-needs-xid.toml", "[[gpu]]\n[[event]]\nat = 1\ngpu = 0\nkind = \"xid\"\n", 2, "needs 'xid'",
                 DCGM_ST_BADPARAM);
    expect_error("event-kind.toml", "[[gpu]]\n[[event]]\nat = 1\ngpu = 0\nkind = \"boom\"\n", 5, "xid, lost, workload",
                 DCGM_ST_BADPARAM);
    expect_error("power-limit.toml", "[[gpu]]\nmodel = \"T4\"\npower_limit = 300\n", 3, "60 to 70 W", DCGM_ST_BADPARAM);
    expect_error("bad-escape.toml", "name = \"a\\qb\"\n", 1, "escape", DCGM_ST_BADPARAM);
    expect_error("mig-profile.toml", "[[gpu]]\nmodel = \"H100\"\nmig_profiles = [\"3g.71gb\"]\n", 3,
                 "H100 has no MIG profile \"3g.71gb\" (known: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)",
                 DCGM_ST_BADPARAM);
    expect_error("mig-overfull.toml", "[[gpu]]\nmodel = \"H200\"\n\nmig_profiles = [\"4g.71gb\", \"4g.71gb\"]\n", 4,
                 "do not fit one GPU: 8 of 7 compute slices", DCGM_ST_BADPARAM);
    expect_error("mig-profiles-l4.toml", "[[gpu]]\nmodel = \"L4\"\nmig_profiles = [\"1g.10gb\"]\n", 3, "MIG",
                 DCGM_ST_BADPARAM);
    expect_error("mig-count.toml",
                 "[[gpu]]\nmodel = \"H100\"\nmig_instances = 3\nmig_profiles = [\"3g.40gb\", \"1g.10gb\"]\n", 4,
                 "lists 2 GPU instances but mig_instances = 3", DCGM_ST_BADPARAM);
    expect_error("mig-numbers.toml", "[[gpu]]\nmodel = \"H100\"\nmig_profiles = [3, 1]\n", 3,
                 "array of profile names", DCGM_ST_BADPARAM);
    expect_error("mixed-array.toml", "[[gpu]]\nmig_profiles = [\"1g.10gb\", 2]\n", 2, "not both", DCGM_ST_BADPARAM);
    expect_error("switches.toml", "nvswitches = 13\n[[gpu]]\n", 1, "out of range (0 to 12)", DCGM_ST_BADPARAM);
    expect_error("cpus-type.toml", "grace_cpus = \"one\"\n[[gpu]]\n", 1, "must be an integer", DCGM_ST_BADPARAM);
    expect_error("cores.toml", "seed = 1\ngrace_cpus = 8\ncpu_cores = 200\n[[gpu]]\n", 3, "1600 cores (at most 1024)",
                 DCGM_ST_BADPARAM);

    sim_node *node = (sim_node *)0x1;
    char err[512];
    char missing[512];
    snprintf(missing, sizeof missing, "%s/does-not-exist.toml", tmpdir);
    CHECK(sim_node_load(missing, &node, err, sizeof err) == DCGM_ST_FILE_IO_ERROR && node == NULL &&
              strstr(err, "does-not-exist.toml") != NULL,
          "missing file: %s", err);
    CHECK(sim_node_load("0", &node, err, sizeof err) == DCGM_ST_BADPARAM && node == NULL, "spec 0");
    CHECK(sim_node_load("33", &node, err, sizeof err) == DCGM_ST_BADPARAM && strstr(err, "1 to 32"), "spec 33: %s", err);
    CHECK(sim_node_load(NULL, NULL, err, sizeof err) == DCGM_ST_BADPARAM, "NULL out");
    node = load_or_die("32");
    CHECK(sim_node_gpu_count(node) == 32, "32 GPUs");
    sim_node_free(node);
}

/* ---- replay ----------------------------------------------------------------------- */

/* A replayed recording keeps each GPU's own UUID and PCI bus id; the others stay seeded. */
static void test_recorded_identity(void)
{
    printf("scenarios: a GPU may carry a recorded UUID and PCI bus id\n");
    sim_node *node = load_or_die(write_file("identity.toml",
        "[[gpu]]\nmodel = \"H200\"\nuuid = \"GPU-0d1c2b3a-aaaa-bbbb-cccc-0123456789ab\"\n"
        "pci_bus_id = \"00000000:C1:00.0\"\n[[gpu]]\nmodel = \"H200\"\n"));
    CHECK(strcmp(sample(node, 0, 54, 0).str, "GPU-0d1c2b3a-aaaa-bbbb-cccc-0123456789ab") == 0, "uuid %s",
          sample(node, 0, 54, 0).str);
    CHECK(strcmp(sample(node, 0, 57, 0).str, "00000000:C1:00.0") == 0, "bus id %s", sample(node, 0, 57, 0).str);
    CHECK(strncmp(sample(node, 1, 54, 0).str, "GPU-", 4) == 0 &&
          strcmp(sample(node, 1, 54, 0).str, sample(node, 0, 54, 0).str) != 0, "seeded uuid %s",
          sample(node, 1, 54, 0).str);
    CHECK(strcmp(sample(node, 1, 57, 0).str, "00000000:2A:00.0") == 0, "seeded bus id %s", sample(node, 1, 57, 0).str);
    sim_node_free(node);
    expect_error("identity-count.toml", "[[gpu]]\ncount = 2\nuuid = \"GPU-1\"\n", 3,
                 "'uuid' and 'pci_bus_id' name one GPU: they need count = 1, not 2", DCGM_ST_BADPARAM);
    expect_error("identity-long.toml",
                 "[[gpu]]\npci_bus_id = \"0000000000000000:C1:00.0000000000000\"\n", 2,
                 "'pci_bus_id' must be 1 to 31 characters", DCGM_ST_BADPARAM);
    expect_error("identity-blank.toml", "[[gpu]]\nuuid = \"GPU 1\"\n", 2,
                 "'uuid' has a blank or control character", DCGM_ST_BADPARAM);
}

/* A FIFO as a trace or as the scenario is refused at once, not waited on for a writer. */
static void test_fifo_files(void)
{
    printf("scenarios: a FIFO as a trace or a scenario is refused without blocking\n");
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/pipe.csv", tmpdir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    expect_error("replay-fifo.toml", "[[gpu]]\nworkload = \"replay\"\ntrace = \"pipe.csv\"\n", 3,
                 "pipe.csv: cannot open trace: not a regular file (a FIFO)", DCGM_ST_BADPARAM);
    snprintf(fifo, sizeof fifo, "%s/pipe.toml", tmpdir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    sim_node *node = NULL;
    char err[700] = "";
    CHECK(sim_node_load(fifo, &node, err, sizeof err) == DCGM_ST_FILE_IO_ERROR && node == NULL &&
          strstr(err, "pipe.toml: cannot open scenario: not a regular file (a FIFO)") != NULL, "%s", err);
}

/* A double becomes an int64 reading without undefined behaviour, whatever it is (run under UBSan). */
static void test_int64_of(void)
{
    printf("values: a double as an int64 reading saturates, NaN is blank\n");
    struct { double in; int64_t out; } cases[] = {
        {42.4, 42}, {-42.5, -43}, {0x1p63 - 1024, INT64_MAX - 1023}, {-0x1p63, INT64_MIN},
        {1e300, (int64_t)DCGM_INT64_BLANK - 1}, {0x1p63, (int64_t)DCGM_INT64_BLANK - 1}, {INFINITY, (int64_t)DCGM_INT64_BLANK - 1},
        {-1e300, INT64_MIN}, {-INFINITY, INT64_MIN}, {NAN, (int64_t)DCGM_INT64_BLANK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(sim_int64_of(cases[i].in) == cases[i].out, "%g -> %lld, not %lld", cases[i].in,
              (long long)sim_int64_of(cases[i].in), (long long)cases[i].out);
    /* a replayed double field keeps its int64 form in range too */
    sim_value v;
    sim_put_double(&v, -1e300);
    CHECK(v.i64 == INT64_MIN && v.dbl == -1e300, "put_double(-1e300): %lld", (long long)v.i64);
}

/* A flight recording of every GPU field: 1024 columns load, the last one replays; one more is an error. */
static void test_replay_wide(void)
{
    for (int columns = 1024; columns <= 1025; columns++) {
        size_t len = 16 * (size_t)columns + 64, used = 0;
        char *csv = malloc(len);
        if (csv == NULL)
            exit(2);
        used += (size_t)snprintf(csv + used, len - used, "t");
        for (int i = 1; i < columns - 1; i++)
            used += (size_t)snprintf(csv + used, len - used, ",x%d", i);   /* no field: skipped */
        used += (size_t)snprintf(csv + used, len - used, ",150\n0");
        for (int i = 1; i < columns - 1; i++)
            used += (size_t)snprintf(csv + used, len - used, ",1");
        snprintf(csv + used, len - used, ",66\n");
        write_file("wide.csv", csv);
        free(csv);
        const char *toml = "[[gpu]]\nmodel = \"H200\"\nworkload = \"replay\"\ntrace = \"wide.csv\"\n";
        if (columns == 1024) {
            sim_node *node = load_or_die(write_file("wide.toml", toml));
            CHECK(sample_i(node, 0, 150, 1.0) == 66, "column 1024 replays: %lld", (long long)sample_i(node, 0, 150, 1.0));
            sim_node_free(node);
        } else {
            expect_error("wide-too.toml", toml, 4, "wide.csv:1: more than 1024 columns", DCGM_ST_BADPARAM);
        }
    }
}

static void test_replay(void)
{
    printf("workloads: a recorded trace replays on its timestamps\n");
    /* the recorder's names and units, a DCGM tag, an id, skipped columns, empty and nan cells */
    write_file("card.csv",
               "t,util_gpu,power_mw,NVML_FI_DEV_POWER_INSTANT,temp,energy_mj,gpm_sm_util,procs,sm_clock_x,150\n"
               "100.0,0,82000,81000,37,5,0.0,0,1,99\n"
               "100.1,100,300000,900000,52,6,96.0,1,2,\n"
               "100.25,100,,700000,55,7,nan,1,3,\n"
               "101.0,0,121000,121000,,8,0.0,1,4,\n");
    const char *path = write_file("replay.toml",
        "[[gpu]]\nmodel = \"H200\"\nworkload = \"idle\"\n"
        "[[event]]\nat = 2.0\ngpu = 0\nkind = \"workload\"\nworkload = \"replay\"\ntrace = \"card.csv\"\n"
        "[[gpu]]\nmodel = \"H200\"\nworkload = \"replay\"\ntrace = \"card.csv\"\nloop = true\n");
    sim_node *node = load_or_die(path);
    /* GPU 0 replays from 2 s, holding the last row; before that it idles */
    CHECK(sample_d(node, 0, 157, 1.95) < 100.0, "idle before the replay: %.1f W", sample_d(node, 0, 157, 1.95));
    CHECK(sample_d(node, 0, 155, 2.0) == 82.0 && sample_d(node, 0, 157, 2.05) == 81.0, "first row");
    CHECK(sample_d(node, 0, 157, 2.1) == 900.0 && sample_i(node, 0, 203, 2.2) == 100, "second row");
    CHECK(sample_d(node, 0, 155, 2.3) == 300.0, "an empty cell keeps %.1f", sample_d(node, 0, 155, 2.3));
    CHECK(fabs(sample_d(node, 0, 1002, 2.3) - 0.96) < 1e-9, "nan keeps the GPM ratio %g", sample_d(node, 0, 1002, 2.3));
    /* column "150" is the DCGM id of the GPU temperature: the recorder's temp comes first and wins */
    CHECK(sample_i(node, 0, 150, 2.26) == 55 && sample_i(node, 0, 150, 3.5) == 55, "temperature %lld",
          (long long)sample_i(node, 0, 150, 3.5));
    CHECK(sample_d(node, 0, 155, 60.0) == 121.0 && sample_i(node, 0, 203, 60.0) == 0, "the last row holds");
    /* not in the trace: derived from the replayed power (energy integrates it) and utilisation */
    double e0 = sample_d(node, 0, 156, 2.0), e1 = sample_d(node, 0, 156, 3.0);
    CHECK(fabs((e1 - e0) - (900.0 * 0.2 + 700.0 * 0.7 + 81.0 * 0.1) * 1000.0) < 1.0,
          "energy over the replay %.0f mJ", e1 - e0);
    CHECK(sample_i(node, 0, 112, 2.5) == 0 && sample_i(node, 0, 112, 3.5) == SIM_CLOCKS_EVENT_GPU_IDLE,
          "reasons from the replayed utilisation");
    /* GPU 1 loops: the trace is 1.0 s long plus its last 0.75 s interval */
    CHECK(sample_d(node, 1, 157, 1.80) == 81.0 && sample_d(node, 1, 157, 1.90) == 900.0, "looped %.1f %.1f",
          sample_d(node, 1, 157, 1.80), sample_d(node, 1, 157, 1.90));
    sim_node_free(node);

    expect_error("replay-no-trace.toml", "[[gpu]]\nworkload = \"replay\"\n", 1, "needs 'trace'", DCGM_ST_BADPARAM);
    expect_error("replay-trace-alone.toml", "[[gpu]]\nworkload = \"idle\"\nloop = true\n", 1,
                 "only applies to workload = \"replay\"", DCGM_ST_BADPARAM);
    expect_error("replay-loop-type.toml", "[[gpu]]\nloop = 1\n", 2, "true or false", DCGM_ST_BADPARAM);
    struct { const char *file, *text, *needle; } bad[] = {
        {"bad-number.csv", "t,temp\n0,37\n0.1,hot\n", "bad-number.csv:3: column 2 (temp): 'hot' is not a number"},
        {"backwards.csv", "t,temp\n1,37\n0.5,38\n", "backwards.csv:3: t = 0.5 goes back in time"},
        {"no-t.csv", "time,temp\n0,37\n", "no-t.csv:1: no column 't'"},
        {"nothing-known.csv", "t,colour\n0,blue\n", "nothing-known.csv:1: no column this replay can use"},
        {"header-only.csv", "t,temp\n", "header-only.csv:1: no rows after the header"},
        {"wide-row.csv", "t,temp\n0,37,1\n", "wide-row.csv:2: more cells than the header's 2 columns"},
        {"no-time.csv", "t,temp\n,37\n", "no-time.csv:2: no time in column 't'"},
        /* an int64 field's value beyond int64: refused, never converted */
        {"int-high.csv", "t,150\n0,37\n0.1,1e300\n", "int-high.csv:3: column 2 (150): 1e+300 does not fit an int64 field"},
        {"int-low.csv", "t,temp\n0,-1e300\n", "int-low.csv:2: column 2 (temp): -1e+300 does not fit an int64 field"},
        {"int-2p63.csv", "t,112\n0,9223372036854775808\n", "int-2p63.csv:2: column 2 (112): 9.22337e+18 does not fit"},
        /* times whose distance is beyond int64 microseconds (or beyond double) */
        {"far.csv", "t,temp\n-1e308,37\n1e308,38\n", "far.csv:3: t = 1e+308 is more than 400 days after the first row"},
        {"far-back.csv", "t,temp\n1e308,37\n-1e308,38\n", "far-back.csv:3: t = -1e+308 goes back in time"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(bad[i].file, bad[i].text);
        char toml[256], name[64];
        snprintf(toml, sizeof toml, "[[gpu]]\nmodel = \"H200\"\nworkload = \"replay\"\ntrace = \"%s\"\n", bad[i].file);
        snprintf(name, sizeof name, "replay-%zu.toml", i);
        expect_error(name, toml, 4, bad[i].needle, DCGM_ST_BADPARAM);
    }
    expect_error("replay-missing.toml", "[[gpu]]\nworkload = \"replay\"\ntrace = \"nowhere.csv\"\n", 3,
                 "nowhere.csv: cannot open trace", DCGM_ST_BADPARAM);
    test_fifo_files();
    test_replay_wide();
    test_recorded_identity();
    test_int64_of();
}

/* The examples shipped with the package must load. */
static void test_shipped_scenarios(const char *argv0)
{
    static const char *names[] = {
        "default.toml", "mixed.toml", "spikes.toml", "thermal-runaway.toml",
        "memory-leak.toml", "xid-burst.toml", "gpu-lost.toml", "h200-recorded-load.toml",
        "h200-recorded-replay.toml", "mig.toml", "nvswitch-grace.toml", "ecc-storm.toml",
        "row-remap-failure.toml", "pcie-replays.toml", "nvlink-errors.toml", "power-excursions.toml",
    };
    static const char *roots[] = {"../dcgm_collector/engine/scenarios", "dcgm_collector/engine/scenarios",
                                  "../../dcgm_collector/engine/scenarios"};
    const char *root = NULL;
    char probe[512];
    for (size_t i = 0; i < sizeof roots / sizeof roots[0] && root == NULL; i++) {
        snprintf(probe, sizeof probe, "%s/default.toml", roots[i]);
        if (access(probe, R_OK) == 0)
            root = roots[i];
    }
    if (root == NULL) {
        printf("scenarios: shipped examples not found from %s's working directory, skipped\n", argv0);
        return;
    }
    printf("scenarios: the shipped examples in %s load\n", root);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", root, names[i]);
        sim_node *node = NULL;
        char err[512] = "";
        int rc = sim_node_load(path, &node, err, sizeof err);
        CHECK(rc == DCGM_ST_OK, "%s: %s", names[i], err);
        if (node != NULL)
            printf("  %-22s %u GPUs, seed %llu\n", names[i], sim_node_gpu_count(node),
                   (unsigned long long)sim_node_seed(node));
        sim_node_free(node);
    }
}

/* ---- cost ----------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_timing(void)
{
    printf("cost: 8 GPUs x 60 fields x 10 Hz\n");
    sim_node *node = load_or_die(NULL);
    static const unsigned short fields[60] = {
        1, 51, 53, 54, 57, 85, 100, 101, 112, 140, 150, 155, 156, 157, 158, 159, 160, 164, 190, 200,
        201, 202, 203, 204, 206, 207, 230, 240, 241, 244, 250, 251, 252, 253, 254, 310, 311, 312, 313, 393,
        394, 395, 409, 419, 429, 439, 440, 449, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012,
    };
    const int seconds = 60;
    long calls = 0;
    sim_value v;
    double start = now_s();
    for (int step = 0; step < seconds * 10; step++) {
        int64_t t = (int64_t)step * 100000;
        for (unsigned int g = 0; g < 8; g++)
            for (int f = 0; f < 60; f++, calls++)
                sim_node_sample(node, g, fields[f], t, &v);
    }
    double elapsed = now_s() - start;
    printf("  %ld calls over %d simulated s: %.3f us per call (%.3f%% of one core at 10 Hz)\n", calls, seconds,
           elapsed / (double)calls * 1e6, elapsed / seconds * 100.0);

    /* a query far behind the frontier recomputes from a checkpoint */
    start = now_s();
    int backs = 0;
    for (int64_t t = 59000000; t > 0; t -= 3700000, backs++)
        sim_node_sample(node, 3, 150, t, &v);
    elapsed = now_s() - start;
    printf("  %d backward queries: %.1f us each\n", backs, elapsed / backs * 1e6);

    /* catching up an hour from a cold start */
    sim_node *cold = load_or_die(NULL);
    start = now_s();
    sim_node_sample(cold, 0, 156, 3600LL * 1000000, &v);
    printf("  first query at t = 1 h on a fresh node: %.1f ms\n", (now_s() - start) * 1e3);
    sim_node_free(cold);
    sim_node_free(node);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (!make_scratch("test_node"))
        return 2;
    test_identity();
    test_h200_model();
    test_h200_workloads();
    test_determinism();
    test_support_and_types();
    test_power_follows_load();
    test_power_limit_set();
    test_thermal_runaway();
    test_memory_and_counters();
    test_spikes();
    test_xid_events();
    test_lost_gpu();
    test_mig_profiles();
    test_parse_errors();
    test_replay();
    test_shipped_scenarios(argv[0]);
    test_timing();

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir);
    printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "OK", checks, failures);
    return failures ? 1 : 0;
}
