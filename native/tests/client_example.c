/*
 * client_example.c -- a third-party style DCGM client, run against a
 * libdcgm.so.4 found in the directory given as argv[1].
 *
 * It deliberately knows nothing of the simulator: it loads the library the
 * way go-dcgm and NVIDIA's stub do (dlopen by file name, dlsym by symbol
 * name), uses only documented DCGM entry points, and checks every answer
 * against what DCGM documents.  If it passes, a client written for real
 * DCGM runs unchanged against the simulator.
 *
 *   client_example LIBDIR [EXPECTED_GPUS]
 *
 * EXPECTED_GPUS defaults to what DCGM_SIM_SCENARIO implies: unset or empty
 * is the default node (8 GPUs), a number is that many GPUs, a scenario file
 * is "at least one".  Exit status 0 when everything checked out, 1 on the
 * first wrong answer (named on stderr), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dcgm_abi.h"

/* The entry points a typical monitoring client resolves. */
#define CLIENT_FUNCTIONS(X) \
    X(dcgmInit) \
    X(dcgmShutdown) \
    X(dcgmStartEmbedded) \
    X(dcgmStopEmbedded) \
    X(dcgmGetAllSupportedDevices) \
    X(dcgmGetDeviceAttributes) \
    X(dcgmGroupCreate) \
    X(dcgmGroupGetInfo) \
    X(dcgmGroupDestroy) \
    X(dcgmFieldGroupCreate) \
    X(dcgmFieldGroupDestroy) \
    X(dcgmWatchFields) \
    X(dcgmUnwatchFields) \
    X(dcgmUpdateAllFields) \
    X(dcgmGetLatestValues_v2) \
    X(dcgmGetValuesSince_v2) \
    X(errorString)

struct dcgm_api {
#define DECLARE_POINTER(name) __typeof__(&name) name;
    CLIENT_FUNCTIONS(DECLARE_POINTER)
#undef DECLARE_POINTER
};

enum { FIELD_TEMP, FIELD_POWER, FIELD_UTIL, FIELD_FB_USED, FIELD_COUNT };

static const unsigned short watched_field_ids[FIELD_COUNT] = {150, 155, 203, 252};
static const char *const watched_field_names[FIELD_COUNT] = {
    "gpu_temp", "power_usage", "gpu_utilization", "fb_used"};

#define WATCH_INTERVAL_US 100000LL
#define WATCH_KEEP_AGE_S 60.0
#define USEC_PER_SEC 1000000LL

struct series {
    int latest_seen;          /* records for this series in the latest-values read */
    double latest_value;
    int64_t last_ts;          /* newest ts seen by the values-since reads, 0 = none */
    int samples_in_read;      /* real samples delivered by the current since-read */
};

struct client {
    void *library;
    struct dcgm_api api;
    dcgmHandle_t handle;
    int initialized;
    int embedded_started;
    dcgmGpuGrp_t group;
    int group_created;
    dcgmFieldGrp_t field_group;
    int field_group_created;
    int watching;

    unsigned int gpu_ids[DCGM_MAX_NUM_DEVICES];
    int gpu_count;
    int gpu_index_of_id[DCGM_MAX_NUM_DEVICES];   /* -1 when the id is not ours */
    unsigned int fb_total_mib[DCGM_MAX_NUM_DEVICES];
    struct series series[DCGM_MAX_NUM_DEVICES][FIELD_COUNT];

    int64_t watch_started_us;
    int callback_errors;      /* wrong records seen inside a callback */
};

/* A broken series can deliver thousands of bad records; show the first few. */
#define CALLBACK_ERRORS_SHOWN 5

static int report_callback_error(struct client *client)
{
    return ++client->callback_errors <= CALLBACK_ERRORS_SHOWN;
}

static int64_t wall_clock_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * USEC_PER_SEC + now.tv_nsec / 1000;
}

static void sleep_us(int64_t duration_us)
{
    struct timespec left = {
        .tv_sec = (time_t)(duration_us / USEC_PER_SEC),
        .tv_nsec = (long)(duration_us % USEC_PER_SEC) * 1000L,
    };
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

static const char *describe_status(const struct client *client, dcgmReturn_t status)
{
    const char *text = client->api.errorString ? client->api.errorString(status) : NULL;
    return text ? text : "(no text)";
}

/* Names the call and both codes, so a failure report needs no debugger. */
static int expect_status(const struct client *client, const char *call, dcgmReturn_t got,
                         dcgmReturn_t want)
{
    if (got == want)
        return 1;
    fprintf(stderr, "FAIL %s returned %d (%s), expected %d (%s)\n", call, (int)got,
            describe_status(client, got), (int)want, describe_status(client, want));
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "FAIL %s\n", what);
    return 0;
}

static int field_index_of(unsigned short field_id)
{
    for (int i = 0; i < FIELD_COUNT; i++)
        if (watched_field_ids[i] == field_id)
            return i;
    return -1;
}

static struct series *series_of(struct client *client, dcgm_field_entity_group_t entity_group,
                                dcgm_field_eid_t entity_id, unsigned short field_id)
{
    int field = field_index_of(field_id);
    if (entity_group != DCGM_FE_GPU || entity_id >= DCGM_MAX_NUM_DEVICES || field < 0)
        return NULL;
    int gpu = client->gpu_index_of_id[entity_id];
    return gpu < 0 ? NULL : &client->series[gpu][field];
}

/* ---- loading ------------------------------------------------------------ */

static int load_library(struct client *client, const char *directory)
{
    char path[4096];
    int written = snprintf(path, sizeof path, "%s/libdcgm.so.4", directory);
    if (written < 0 || (size_t)written >= sizeof path)
        return fail("library directory path too long");

    client->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!client->library) {
        fprintf(stderr, "FAIL dlopen(%s): %s\n", path, dlerror());
        return 0;
    }
    printf("loaded %s\n", path);

#define RESOLVE(name) \
    client->api.name = (__typeof__(client->api.name))dlsym(client->library, #name); \
    if (!client->api.name) { \
        fprintf(stderr, "FAIL dlsym(%s): symbol missing\n", #name); \
        return 0; \
    }
    CLIENT_FUNCTIONS(RESOLVE)
#undef RESOLVE
    return 1;
}

/* ---- start-up and discovery -------------------------------------------- */

static int start_engine(struct client *client)
{
    if (!expect_status(client, "dcgmInit()", client->api.dcgmInit(), DCGM_ST_OK))
        return 0;
    client->initialized = 1;

    dcgmReturn_t status = client->api.dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &client->handle);
    if (!expect_status(client, "dcgmStartEmbedded(AUTO)", status, DCGM_ST_OK))
        return 0;
    client->embedded_started = 1;
    if (client->handle == 0)
        return fail("dcgmStartEmbedded(AUTO) returned OK but handle 0");
    printf("embedded host engine started, handle 0x%lx\n", (unsigned long)client->handle);
    return 1;
}

static int discover_gpus(struct client *client, int expected_gpus)
{
    int count = DCGM_MAX_NUM_DEVICES;
    dcgmReturn_t status =
        client->api.dcgmGetAllSupportedDevices(client->handle, client->gpu_ids, &count);
    if (!expect_status(client, "dcgmGetAllSupportedDevices", status, DCGM_ST_OK))
        return 0;
    if (count < 1 || count > DCGM_MAX_NUM_DEVICES) {
        fprintf(stderr, "FAIL dcgmGetAllSupportedDevices count %d out of range\n", count);
        return 0;
    }
    if (expected_gpus > 0 && count != expected_gpus) {
        fprintf(stderr, "FAIL dcgmGetAllSupportedDevices found %d GPUs, expected %d\n", count,
                expected_gpus);
        return 0;
    }
    client->gpu_count = count;
    for (int i = 0; i < DCGM_MAX_NUM_DEVICES; i++)
        client->gpu_index_of_id[i] = -1;
    for (int i = 0; i < count; i++) {
        /* dcgm-exporter loops 0..count-1, so ids must be dense */
        if (client->gpu_ids[i] != (unsigned int)i) {
            fprintf(stderr, "FAIL dcgmGetAllSupportedDevices id[%d] = %u, expected %d\n", i,
                    client->gpu_ids[i], i);
            return 0;
        }
        client->gpu_index_of_id[i] = i;
    }
    printf("found %d GPUs\n", count);
    return 1;
}

static int terminated_and_filled(const char *text, size_t capacity)
{
    return memchr(text, '\0', capacity) != NULL && text[0] != '\0';
}

static int describe_gpu(struct client *client, int index)
{
    unsigned int gpu_id = client->gpu_ids[index];
    dcgmDeviceAttributes_v3 attributes;
    memset(&attributes, 0, sizeof attributes);
    attributes.version = dcgmDeviceAttributes_version3;

    dcgmReturn_t status = client->api.dcgmGetDeviceAttributes(client->handle, gpu_id, &attributes);
    if (!expect_status(client, "dcgmGetDeviceAttributes(v3)", status, DCGM_ST_OK))
        return 0;

    const dcgmDeviceIdentifiers_v1 *ids = &attributes.identifiers;
    if (!terminated_and_filled(ids->deviceName, sizeof ids->deviceName) ||
        !terminated_and_filled(ids->uuid, sizeof ids->uuid) ||
        !terminated_and_filled(ids->pciBusId, sizeof ids->pciBusId)) {
        fprintf(stderr, "FAIL dcgmGetDeviceAttributes(gpu %u): empty or unterminated name/uuid/pciBusId\n",
                gpu_id);
        return 0;
    }
    if (strncmp(ids->uuid, "GPU-", 4) != 0) {
        fprintf(stderr, "FAIL dcgmGetDeviceAttributes(gpu %u): uuid \"%s\" lacks the GPU- prefix\n",
                gpu_id, ids->uuid);
        return 0;
    }
    client->fb_total_mib[index] = attributes.memoryUsage.fbTotal;
    printf("gpu %u: name=\"%s\" uuid=%s pci_bus_id=%s fb_total=%u MiB\n", gpu_id, ids->deviceName,
           ids->uuid, ids->pciBusId, attributes.memoryUsage.fbTotal);
    return 1;
}

static int describe_gpus(struct client *client)
{
    for (int i = 0; i < client->gpu_count; i++)
        if (!describe_gpu(client, i))
            return 0;
    return 1;
}

/* A DEFAULT group holds every GPU, as DCGM_GROUP_ALL_GPUS does. */
static int create_groups(struct client *client)
{
    dcgmReturn_t status = client->api.dcgmGroupCreate(client->handle, DCGM_GROUP_DEFAULT,
                                                      "client_example_gpus", &client->group);
    if (!expect_status(client, "dcgmGroupCreate(DEFAULT)", status, DCGM_ST_OK))
        return 0;
    client->group_created = 1;

    static dcgmGroupInfo_v3 info;   /* 8 KiB: keep it off the stack */
    const dcgmGpuGrp_t groups[] = {client->group, DCGM_GROUP_ALL_GPUS};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        memset(&info, 0, sizeof info);
        info.version = dcgmGroupInfo_version3;
        status = client->api.dcgmGroupGetInfo(client->handle, groups[g], &info);
        if (!expect_status(client, "dcgmGroupGetInfo(v3)", status, DCGM_ST_OK))
            return 0;
        if (info.count != (unsigned int)client->gpu_count) {
            fprintf(stderr, "FAIL dcgmGroupGetInfo(group 0x%lx) lists %u entities, expected %d GPUs\n",
                    (unsigned long)groups[g], info.count, client->gpu_count);
            return 0;
        }
        for (unsigned int e = 0; e < info.count; e++) {
            if (info.entityList[e].entityGroupId != DCGM_FE_GPU) {
                fprintf(stderr, "FAIL dcgmGroupGetInfo(group 0x%lx) entity %u is group %d, not GPU\n",
                        (unsigned long)groups[g], e, (int)info.entityList[e].entityGroupId);
                return 0;
            }
        }
    }

    status = client->api.dcgmFieldGroupCreate(client->handle, FIELD_COUNT, watched_field_ids,
                                              "client_example_fields", &client->field_group);
    if (!expect_status(client, "dcgmFieldGroupCreate", status, DCGM_ST_OK))
        return 0;
    client->field_group_created = 1;
    return 1;
}

static int watch_fields(struct client *client)
{
    client->watch_started_us = wall_clock_us();
    dcgmReturn_t status = client->api.dcgmWatchFields(client->handle, client->group, client->field_group,
                                                      WATCH_INTERVAL_US, WATCH_KEEP_AGE_S, 0);
    if (!expect_status(client, "dcgmWatchFields(100000 us, 60 s, 0)", status, DCGM_ST_OK))
        return 0;
    client->watching = 1;
    status = client->api.dcgmUpdateAllFields(client->handle, 1);
    return expect_status(client, "dcgmUpdateAllFields(wait)", status, DCGM_ST_OK);
}

/* ---- latest values ------------------------------------------------------ */

static double numeric_value(const dcgmFieldValue_v1 *value)
{
    return value->fieldType == DCGM_FT_DOUBLE ? value->value.dbl : (double)value->value.i64;
}

static int is_blank(const dcgmFieldValue_v1 *value)
{
    if (value->fieldType == DCGM_FT_DOUBLE)
        return value->value.dbl >= DCGM_FP64_BLANK;
    return value->value.i64 >= (int64_t)DCGM_INT64_BLANK;
}

static int expected_type(int field)
{
    return field == FIELD_POWER ? DCGM_FT_DOUBLE : DCGM_FT_INT64;
}

static int record_latest(dcgm_field_entity_group_t entity_group, dcgm_field_eid_t entity_id,
                         dcgmFieldValue_v1 *values, int value_count, void *user_data)
{
    struct client *client = user_data;
    if (!values || value_count < 1) {
        if (report_callback_error(client))
            fprintf(stderr, "FAIL latest-values callback got %d records at %p\n", value_count,
                    (void *)values);
        return 0;
    }
    for (int i = 0; i < value_count; i++) {
        const dcgmFieldValue_v1 *value = &values[i];
        struct series *series = series_of(client, entity_group, entity_id, value->fieldId);
        int field = field_index_of(value->fieldId);
        if (!series || value->status != DCGM_ST_OK || value->fieldType != expected_type(field) ||
            value->ts <= 0 || is_blank(value)) {
            if (report_callback_error(client))
                fprintf(stderr,
                        "FAIL latest value entity %d/%u field %u: status %d type '%c' ts %lld\n",
                        (int)entity_group, entity_id, value->fieldId, value->status,
                        value->fieldType, (long long)value->ts);
            continue;
        }
        series->latest_seen++;
        series->latest_value = numeric_value(value);
    }
    return 0;
}

static int plausible(int gpu_index, int field, double value, const struct client *client)
{
    switch (field) {
    case FIELD_TEMP:
        return value >= 20.0 && value <= 100.0;
    case FIELD_POWER:
        return value > 0.0 && value < 5000.0;
    case FIELD_UTIL:
        return value >= 0.0 && value <= 100.0;
    case FIELD_FB_USED:
        return value >= 0.0 && value <= (double)client->fb_total_mib[gpu_index];
    default:
        return 0;
    }
}

static int read_latest(struct client *client)
{
    dcgmReturn_t status = client->api.dcgmGetLatestValues_v2(client->handle, client->group,
                                                             client->field_group, record_latest, client);
    if (!expect_status(client, "dcgmGetLatestValues_v2", status, DCGM_ST_OK))
        return 0;
    if (client->callback_errors)
        return fail("dcgmGetLatestValues_v2 delivered wrong records");

    for (int gpu = 0; gpu < client->gpu_count; gpu++) {
        printf("gpu %u latest:", client->gpu_ids[gpu]);
        for (int field = 0; field < FIELD_COUNT; field++) {
            const struct series *series = &client->series[gpu][field];
            printf(" %s=%g", watched_field_names[field], series->latest_value);
            if (series->latest_seen != 1 || !plausible(gpu, field, series->latest_value, client)) {
                printf("\n");
                fprintf(stderr,
                        "FAIL dcgmGetLatestValues_v2 gpu %u field %u: %d records, value %g implausible\n",
                        client->gpu_ids[gpu], watched_field_ids[field], series->latest_seen,
                        series->latest_value);
                return 0;
            }
        }
        printf("\n");
    }
    return 1;
}

/* ---- values since a cursor ---------------------------------------------- */

static int record_since(dcgm_field_entity_group_t entity_group, dcgm_field_eid_t entity_id,
                        dcgmFieldValue_v1 *values, int value_count, void *user_data)
{
    struct client *client = user_data;
    int64_t now_us = wall_clock_us();
    for (int i = 0; values && i < value_count; i++) {
        const dcgmFieldValue_v1 *value = &values[i];
        struct series *series = series_of(client, entity_group, entity_id, value->fieldId);
        if (!series) {
            if (report_callback_error(client))
                fprintf(stderr, "FAIL values-since record for entity %d/%u field %u not asked for\n",
                        (int)entity_group, entity_id, value->fieldId);
            continue;
        }
        if (value->status == DCGM_ST_NO_DATA)
            continue;   /* an empty window: counted as no samples below */
        /* History begins at the watch; one interval of slack allows a pass
         * stamped just before the watch call returned to the client. */
        int64_t earliest_us = client->watch_started_us - WATCH_INTERVAL_US;
        if (value->status != DCGM_ST_OK || value->ts <= series->last_ts || value->ts < earliest_us ||
            value->ts > now_us + USEC_PER_SEC || is_blank(value)) {
            if (report_callback_error(client))
                fprintf(stderr,
                        "FAIL values-since entity %d/%u field %u: status %d ts %lld after %lld "
                        "(watch began %lld)\n",
                        (int)entity_group, entity_id, value->fieldId, value->status,
                        (long long)value->ts, (long long)series->last_ts,
                        (long long)client->watch_started_us);
            continue;
        }
        series->last_ts = value->ts;
        series->samples_in_read++;
    }
    return 0;
}

static int read_since(struct client *client, long long *cursor, const char *label)
{
    for (int gpu = 0; gpu < client->gpu_count; gpu++)
        for (int field = 0; field < FIELD_COUNT; field++)
            client->series[gpu][field].samples_in_read = 0;

    long long since = *cursor;
    long long next = -1;
    dcgmReturn_t status = client->api.dcgmGetValuesSince_v2(client->handle, client->group,
                                                            client->field_group, since, &next,
                                                            record_since, client);
    if (!expect_status(client, label, status, DCGM_ST_OK))
        return 0;
    if (client->callback_errors)
        return fail("dcgmGetValuesSince_v2 delivered wrong records (see above)");
    if (next <= since || next > wall_clock_us() + USEC_PER_SEC) {
        fprintf(stderr, "FAIL %s: cursor %lld -> %lld does not advance to about now\n", label, since,
                next);
        return 0;
    }
    int total = 0;
    for (int gpu = 0; gpu < client->gpu_count; gpu++) {
        for (int field = 0; field < FIELD_COUNT; field++) {
            const struct series *series = &client->series[gpu][field];
            if (series->samples_in_read < 1 || (series->last_ts >= next)) {
                fprintf(stderr, "FAIL %s gpu %u field %u: %d samples, newest ts %lld, cursor %lld\n",
                        label, client->gpu_ids[gpu], watched_field_ids[field],
                        series->samples_in_read, (long long)series->last_ts, next);
                return 0;
            }
            total += series->samples_in_read;
        }
    }
    printf("%s from %lld: %d samples, next cursor %lld\n", label, since, total, next);
    *cursor = next;
    return 1;
}

static int read_history(struct client *client)
{
    long long cursor = 0;
    if (!read_since(client, &cursor, "dcgmGetValuesSince_v2(first)"))
        return 0;
    sleep_us(WATCH_INTERVAL_US * 5);
    /* strictly increasing ts across both reads also proves nothing repeats */
    return read_since(client, &cursor, "dcgmGetValuesSince_v2(cursor)");
}

static int check_error_string(struct client *client)
{
    const char *not_watched = client->api.errorString(DCGM_ST_NOT_WATCHED);
    const char *ok = client->api.errorString(DCGM_ST_OK);
    if (!not_watched || !not_watched[0] || (ok && strcmp(ok, not_watched) == 0))
        return fail("errorString(DCGM_ST_NOT_WATCHED) gave no distinct text");
    printf("errorString(DCGM_ST_NOT_WATCHED) = \"%s\"\n", not_watched);
    return 1;
}

/* ---- teardown ----------------------------------------------------------- */

/* Undoes whatever was set up, in reverse; 0 if any undo call failed. */
static int tear_down(struct client *client)
{
    int ok = 1;
    if (client->watching)
        ok &= expect_status(client, "dcgmUnwatchFields",
                            client->api.dcgmUnwatchFields(client->handle, client->group, client->field_group),
                            DCGM_ST_OK);
    if (client->field_group_created)
        ok &= expect_status(client, "dcgmFieldGroupDestroy",
                            client->api.dcgmFieldGroupDestroy(client->handle, client->field_group),
                            DCGM_ST_OK);
    if (client->group_created)
        ok &= expect_status(client, "dcgmGroupDestroy",
                            client->api.dcgmGroupDestroy(client->handle, client->group), DCGM_ST_OK);
    if (client->embedded_started)
        ok &= expect_status(client, "dcgmStopEmbedded",
                            client->api.dcgmStopEmbedded(client->handle), DCGM_ST_OK);
    if (client->initialized)
        ok &= expect_status(client, "dcgmShutdown", client->api.dcgmShutdown(), DCGM_ST_OK);
    if (client->library && dlclose(client->library) != 0) {
        fprintf(stderr, "FAIL dlclose: %s\n", dlerror());
        ok = 0;
    }
    return ok;
}

/* ---- main --------------------------------------------------------------- */

/* A GPU count from text, or -1 when the text is not one. */
static int parse_gpu_count(const char *text)
{
    char *end = NULL;
    errno = 0;
    long count = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || count < 1 || count > DCGM_MAX_NUM_DEVICES)
        return -1;
    return (int)count;
}

/* 0 means "any count": the node comes from a scenario file. */
static int expected_gpu_count(int argc, char **argv)
{
    if (argc > 2)
        return parse_gpu_count(argv[2]);
    const char *scenario = getenv("DCGM_SIM_SCENARIO");
    if (!scenario || !scenario[0])
        return 8;
    int count = parse_gpu_count(scenario);
    return count > 0 ? count : 0;
}

static int run_client(struct client *client, const char *directory, int expected_gpus)
{
    if (!load_library(client, directory) || !start_engine(client) ||
        !discover_gpus(client, expected_gpus) || !describe_gpus(client) ||
        !create_groups(client) || !watch_fields(client))
        return 0;
    sleep_us(USEC_PER_SEC);
    return read_latest(client) && read_history(client) && check_error_string(client);
}

int main(int argc, char **argv)
{
    int expected_gpus = argc >= 2 ? expected_gpu_count(argc, argv) : -1;
    if (argc < 2 || argc > 3 || expected_gpus < 0) {
        fprintf(stderr, "usage: %s LIBDIR [EXPECTED_GPUS (1-%d)]\n",
                argc > 0 ? argv[0] : "client_example", DCGM_MAX_NUM_DEVICES);
        return 2;
    }
    static struct client client;
    int ok = run_client(&client, argv[1], expected_gpus);
    ok &= tear_down(&client);
    printf("%s\n", ok ? "client_example: OK" : "client_example: FAILED");
    return ok ? 0 : 1;
}
