/*
 * test_faults.c -- rehearsed faults in the simulated node: the exact counts
 * of `errors` events, XID 63 and 64 on the remapped-row fields, power
 * excursions, their parse errors.
 *
 * Linked with the node's sources, as test_node is.  A scenario with a fault
 * is compared with the same scenario without it: the seeded background
 * noise is the same in both, so the difference is the fault's alone.
 *
 * Usage: test_faults [build-dir]   (the argument is ignored; exit 0 = pass)
 */
#include "../node/node_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_SCRATCH_FILES
#include "check.h"
#include "node_sample.h"

/* What the fault added to a counter by t: the faulted node's reading less the plain node's. */
static int64_t added(sim_node *faulted, sim_node *plain, unsigned int gpu, unsigned short field, double t_s)
{
    return sample_i(faulted, gpu, field, t_s) - sample_i(plain, gpu, field, t_s);
}

#define TWO_H100 "seed = 7\n[[gpu]]\nmodel = \"H100\"\ncount = 2\n"

static void test_error_counts(void)
{
    printf("errors: counts are the integral of the rates, exact, on the faulted GPU only\n");
    sim_node *plain = load_or_die(write_file("plain.toml", TWO_H100));
    sim_node *storm = load_or_die(write_file("storm.toml", TWO_H100
        "[[event]]\nat = 10\ngpu = 1\nkind = \"errors\"\n"
        "sbe_rate = 100\nsbe_rate_end = 17700\nramp = 60\n"
        "pcie_replay_rate = 0.5\npcie_replay_rate_end = 5\n"
        "nvlink_crc_rate = 150\nremap_rate = 8\n"));
    /* nothing before the event, on either GPU */
    CHECK(added(storm, plain, 1, 310, 10.0) == 0, "no SBE before 10 s: %lld",
          (long long)added(storm, plain, 1, 310, 10.0));
    /* SBE: 100/s rising to 17,700/s over 60 s, then held: 6,000 + 17,600 x 30 over the ramp */
    CHECK(added(storm, plain, 1, 310, 70.0) == 100 * 60 + 17600 * 30, "SBE after the ramp: %lld",
          (long long)added(storm, plain, 1, 310, 70.0));
    CHECK(added(storm, plain, 1, 310, 80.0) == 100 * 60 + 17600 * 30 + 17700 * 10, "SBE 10 s later: %lld",
          (long long)added(storm, plain, 1, 310, 80.0));
    int64_t last_second = added(storm, plain, 1, 310, 80.0) - added(storm, plain, 1, 310, 79.0);
    CHECK(last_second == 17700, "17,700 SBEs a second once ramped, not one a step: %lld", (long long)last_second);
    CHECK(added(storm, plain, 1, 312, 80.0) == added(storm, plain, 1, 310, 80.0), "aggregate counts them too");
    /* halfway up the ramp: 100 x 30 + 17,600 x 30 x 30 / 120 */
    CHECK(added(storm, plain, 1, 310, 40.0) == 3000 + 132000, "SBE mid-ramp: %lld",
          (long long)added(storm, plain, 1, 310, 40.0));
    /* the storm alone remaps no row; remap_rate's 8 a minute do */
    CHECK(added(storm, plain, 1, 394, 70.0) == 8, "8 correctable rows in a minute: %lld",
          (long long)added(storm, plain, 1, 394, 70.0));
    CHECK(added(storm, plain, 1, 393, 80.0) == 0 && added(storm, plain, 1, 311, 80.0) == 0,
          "no uncorrectable row, no DBE");
    /* PCIe: 0.5/s rising to 5/s: 0.5 x 60 + 4.5 x 30 = 165 over the ramp, then 5 a second */
    CHECK(added(storm, plain, 1, 202, 70.0) == 165, "PCIe replays over the ramp: %lld",
          (long long)added(storm, plain, 1, 202, 70.0));
    CHECK(added(storm, plain, 1, 202, 82.0) == 165 + 60, "then 5 a second");
    /* NvLink: 150 flit CRC errors a second over the 18 links */
    CHECK(added(storm, plain, 1, 409, 20.0) == 1500, "flit CRC total: %lld",
          (long long)added(storm, plain, 1, 409, 20.0));
    CHECK(added(storm, plain, 1, 497, 20.0) == 1500, "CRC total (flit + data) too");
    int64_t lane0 = added(storm, plain, 1, 400, 20.0);
    CHECK(lane0 == 83 || lane0 == 84, "lane 0 carries its share of 1500/18: %lld", (long long)lane0);
    CHECK(added(storm, plain, 1, 419, 20.0) == 0, "no data CRC errors");
    /* the neighbour and everything before stay as they were */
    static const unsigned short counters[] = {202, 310, 312, 393, 394, 395, 396, 400, 409};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        CHECK(added(storm, plain, 0, counters[i], 80.0) == 0, "GPU 0 field %u moved", counters[i]);
        CHECK(added(storm, plain, 1, counters[i], 9.9) == 0, "GPU 1 field %u moved before the event", counters[i]);
    }
    /* a pure function of t: reading backwards gives the same */
    int64_t forward = sample_i(storm, 1, 310, 75.0);
    sample_i(storm, 1, 310, 200.0);
    CHECK(sample_i(storm, 1, 310, 75.0) == forward, "read again later, same count");
    sim_node_free(storm);
    sim_node_free(plain);
}

static void test_error_events_replace(void)
{
    printf("errors: a later errors event replaces the rates from its time on\n");
    sim_node *plain = load_or_die(write_file("plain2.toml", TWO_H100));
    sim_node *node = load_or_die(write_file("replace.toml", TWO_H100
        "[[event]]\nat = 5\ngpu = 0\nkind = \"errors\"\nsbe_rate = 1000\n"
        "[[event]]\nat = 15\ngpu = 0\nkind = \"errors\"\npcie_replay_rate = 1\n"));
    CHECK(added(node, plain, 0, 310, 30.0) == 10000, "SBE stopped at 15 s: %lld",
          (long long)added(node, plain, 0, 310, 30.0));
    CHECK(added(node, plain, 0, 202, 30.0) == 15, "PCIe replays from 15 s: %lld",
          (long long)added(node, plain, 0, 202, 30.0));
    sim_node_free(node);
    sim_node_free(plain);
}

static void test_remap_xids(void)
{
    printf("XIDs: 63 adds an uncorrectable remapped row and sets pending, 64 sets failed\n");
    sim_node *node = load_or_die(write_file("remap.toml", TWO_H100
        "[[event]]\nat = 10\ngpu = 1\nkind = \"xid\"\nxid = 63\n"
        "[[event]]\nat = 20\ngpu = 1\nkind = \"xid\"\nxid = 64\n"));
    CHECK(sample_i(node, 1, 393, 9.9) == 0 && sample_i(node, 1, 396, 9.9) == 0, "nothing before XID 63");
    CHECK(sample_i(node, 1, 393, 10.0) == 1 && sample_i(node, 1, 396, 10.0) == 1, "XID 63: a row, pending");
    CHECK(sample_i(node, 1, 395, 19.9) == 0, "not failed before XID 64");
    CHECK(sample_i(node, 1, 395, 20.0) == 1 && sample_i(node, 1, 396, 25.0) == 1, "XID 64: failed, still pending");
    CHECK(sample_i(node, 1, 311, 25.0) == 0, "XID 63 is no DBE");
    CHECK(sample_i(node, 1, 230, 20.0) == 64, "the XID field reads the latest");
    CHECK(sample_i(node, 0, 393, 25.0) == 0 && sample_i(node, 0, 395, 25.0) == 0, "GPU 0 healthy");
    sim_node_free(node);
}

static void test_power_excursions(void)
{
    printf("power_excursion: the cap does not hold; HW slowdown and power brake set for each\n");
    sim_node *node = load_or_die(write_file("excursion.toml", TWO_H100
        "[[event]]\nat = 10\ngpu = 1\nkind = \"power_excursion\"\nover = 1.2\nlength = 5\ncount = 3\n"
        "interval = 20\n"));
    const double limit = sample(node, 1, 160, 0.0).dbl;
    const int64_t brake = (int64_t)(SIM_CLOCKS_EVENT_HW_SLOWDOWN | SIM_CLOCKS_EVENT_HW_POWER_BRAKE);
    for (int k = 0; k < 3; k++) {
        double start = 10.0 + 20.0 * k;
        CHECK((sample_i(node, 1, 112, start - 0.1) & brake) == 0, "excursion %d: no brake before", k);
        CHECK((sample_i(node, 1, 112, start + 0.5) & brake) == brake, "excursion %d: brake bits", k);
        double instant = sample(node, 1, 157, start + 2.0).dbl;
        CHECK(instant > limit * 1.15 && instant < limit * 1.25, "excursion %d: instant %.1f W, limit %.0f W", k,
              instant, limit);
        double average = sample(node, 1, 155, start + 3.0).dbl;
        CHECK(average > limit * 1.15, "excursion %d: 1 s average %.1f W over the limit", k, average);
        CHECK((sample_i(node, 1, 112, start + 5.0) & brake) == 0, "excursion %d: over after 5 s", k);
        CHECK(sample(node, 1, 157, start + 6.0).dbl <= limit * 1.02, "excursion %d: capped again", k);
    }
    CHECK((sample_i(node, 0, 112, 12.0) & brake) == 0 && sample(node, 0, 157, 12.0).dbl <= limit * 1.02,
          "GPU 0 holds its cap");
    int64_t ns = 0;
    CHECK_RC(sim_node_slowdown_ns(node, 1, 100000000, SIM_CLOCKS_EVENT_HW_POWER_BRAKE, &ns), DCGM_ST_OK);
    CHECK(ns == 15000000000LL, "15 s of power brake slowdown: %lld ns", (long long)ns);
    CHECK(sample_i(node, 1, 100, 12.0) < sample_i(node, 1, 100, 8.0), "clocks pulled down");
    sim_node_free(node);
}

static void expect_error(const char *name, const char *text, int line, const char *needle)
{
    const char *path = write_file(name, text);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    sim_node *node = (sim_node *)0x1;
    char err[512] = "";
    int rc = sim_node_load(path, &node, err, sizeof err);
    CHECK(rc != DCGM_ST_OK && node == NULL, "%s: rc %d", name, rc);
    CHECK(strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, needle) != NULL && strchr(err, '\n') == NULL,
          "%s: got \"%s\", want \"%s...%s...\"", name, err, prefix, needle);
    printf("  %-22s -> %s\n", name, err + strlen(tmpdir) + 1);
}

#define ONE_GPU "[[gpu]]\nmodel = \"H100\"\n[[event]]\nat = 1\ngpu = 0\n"

static void test_parse_errors(void)
{
    printf("scenario errors: fault events name file:line and the problem\n");
    expect_error("no-rate.toml", ONE_GPU "kind = \"errors\"\n", 3, "needs a rate");
    expect_error("end-no-ramp.toml", ONE_GPU "kind = \"errors\"\nsbe_rate_end = 5\n", 3, "needs 'ramp'");
    expect_error("ramp-no-end.toml", ONE_GPU "kind = \"errors\"\nsbe_rate = 5\nramp = 3\n", 3, "needs a *_rate_end");
    expect_error("neg-rate.toml", ONE_GPU "kind = \"errors\"\nsbe_rate = -1\n", 7, "'sbe_rate' = -1 is out of range");
    expect_error("rate-on-xid.toml", ONE_GPU "kind = \"xid\"\nxid = 13\nsbe_rate = 5\n", 3,
                 "'sbe_rate' only applies to kind = \"errors\"");
    expect_error("no-over.toml", ONE_GPU "kind = \"power_excursion\"\nlength = 3\n", 3, "needs 'over' above 1");
    expect_error("over-1.toml", ONE_GPU "kind = \"power_excursion\"\nover = 1\nlength = 3\n", 3,
                 "needs 'over' above 1");
    expect_error("no-length.toml", ONE_GPU "kind = \"power_excursion\"\nover = 1.2\n", 3, "needs 'length'");
    expect_error("overlap.toml", ONE_GPU "kind = \"power_excursion\"\nover = 1.2\nlength = 3\ncount = 2\n", 3,
                 "needs 'interval' longer than its length (3 s)");
    expect_error("over-on-lost.toml", ONE_GPU "kind = \"lost\"\nover = 1.2\n", 3,
                 "'over' only applies to kind = \"power_excursion\"");
    expect_error("bad-kind.toml", ONE_GPU "kind = \"storm\"\n", 6,
                 "known: xid, lost, workload, errors, power_excursion");
}

/* The shipped thermal case reaches slowdown when its header and the scenarios' README say. */
static void test_thermal_runaway_timeline(void)
{
    static const char *roots[] = {"../dcgm_collector/engine/scenarios", "dcgm_collector/engine/scenarios",
                                  "../../dcgm_collector/engine/scenarios"};
    char path[600] = "";
    for (size_t i = 0; i < sizeof roots / sizeof roots[0] && path[0] == '\0'; i++) {
        snprintf(path, sizeof path, "%s/thermal-runaway.toml", roots[i]);
        if (access(path, R_OK) != 0)
            path[0] = '\0';
    }
    if (path[0] == '\0') {
        printf("thermal-runaway: the shipped scenario is not found from here, skipped\n");
        return;
    }
    printf("thermal-runaway: SW thermal about 54 s in, HW slowdown at 64 s (%s)\n", path);
    sim_node *node = load_or_die(path);
    const int64_t hw = (int64_t)(SIM_CLOCKS_EVENT_HW_SLOWDOWN | SIM_CLOCKS_EVENT_HW_THERMAL);
    CHECK((sample_i(node, 1, 112, 53.0) & (int64_t)SIM_CLOCKS_EVENT_SW_THERMAL) == 0 &&
              (sample_i(node, 1, 112, 55.0) & (int64_t)SIM_CLOCKS_EVENT_SW_THERMAL) != 0,
          "SW thermal between 53 and 55 s");
    CHECK((sample_i(node, 1, 112, 63.9) & hw) == 0 && (sample_i(node, 1, 112, 64.0) & hw) == hw,
          "HW slowdown from 64.0 s");
    CHECK(sample_i(node, 1, 150, 120.0) == sample_i(node, 1, 159, 0.0), "at its shutdown temperature by 120 s");
    CHECK((sample_i(node, 0, 112, 120.0) & hw) == 0, "GPU 0 stays cool");
    sim_node_free(node);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (!make_scratch("test_faults"))
        return 2;
    test_error_counts();
    test_error_events_replace();
    test_remap_xids();
    test_power_excursions();
    test_parse_errors();
    test_thermal_runaway_timeline();

    remove_scratch();
    printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "OK", checks, failures);
    return failures ? 1 : 0;
}
