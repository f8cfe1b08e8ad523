/*
 * test_remote.c -- remote handles against the simulated hostengine, through
 * the exported ABI only: the same calls on an embedded and a remote handle
 * give the same answers; records read remotely equal the model; the
 * connection fails the way DCGM's does (server killed mid-request, stalled,
 * never there); the server shrugs off garbage; and thousands of
 * connect/disconnect cycles leak no descriptors or threads.
 *
 * usage: test_remote BUILD_DIR   (loads BUILD_DIR/libdcgm.so.4)
 *        REMOTE_CYCLES=N         connect/disconnect cycles (default 2000)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK_DLOPEN_DCGM
#include "check.h"
#include "hostengine.h"
#include "../engine/remote/remote.h" /* the wire format, for the garbage tests */

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static dcgmHandle_t connect_to(const char *address, unsigned int timeout_ms, int persist)
{
    dcgmConnectV3Params_t params = { dcgmConnectV3Params_version1, (unsigned)persist,
                                     timeout_ms };
    dcgmHandle_t h = 0;
    CHECK_RC(p_dcgmConnect_v3(address, &params, &h), DCGM_ST_OK);
    return h;
}

/* ---- record collection ------------------------------------------------------ */

#define MAX_RECS 20000

static int collect(dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                   dcgmFieldValue_v1 *values, int n, void *user)
{
    recs *r = user;
    recs_append(r, group, entity, values, n);
    if (r->reenter) {
        DcgmEntityStatus_t st;
        CHECK_RC(p_dcgmGetGpuStatus(r->reenter, 0, &st), DCGM_ST_OK);
    }
    return recs_should_stop(r);
}

static int collect_gpu(unsigned int gpu, dcgmFieldValue_v1 *values, int n, void *user)
{
    return collect(DCGM_FE_GPU, gpu, values, n, user);
}

/* ---- the same calls on both kinds of handle ---------------------------------- */

static const unsigned short watched[] = { 150, 155, 203, 252, 54, 230 };
#define N_WATCHED ((int)(sizeof watched / sizeof watched[0]))

/* Runs one script of calls on h and checks the outcomes that do not depend
 * on time; returns the number of records values-since delivered. */
static void same_script(dcgmHandle_t h, const char *tag)
{
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_OK);
    CHECK(count == 4 && ids[3] == 3, "%s: %d GPUs", tag, count);
    CHECK_RC(p_dcgmGetAllDevices(h, NULL, &count), DCGM_ST_BADPARAM);
    DcgmEntityStatus_t status;
    CHECK_RC(p_dcgmGetGpuStatus(h, 1, &status), DCGM_ST_OK);
    CHECK(status == DcgmEntityStatusOk, "%s: status %d", tag, status);
    CHECK_RC(p_dcgmGetGpuStatus(h, 99, &status), DCGM_ST_BADPARAM);
    dcgm_field_eid_t ents[2];
    int n = 2;
    CHECK_RC(p_dcgmGetEntityGroupEntities(h, DCGM_FE_GPU, ents, &n, 0),
             DCGM_ST_INSUFFICIENT_SIZE);
    CHECK(n == 4 && ents[1] == 1, "%s: entities %d", tag, n);

    dcgmDeviceAttributes_t *attr = calloc(1, sizeof *attr);
    attr->version = dcgmDeviceAttributes_version3;
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 2, attr), DCGM_ST_OK);
    CHECK(strncmp(attr->identifiers.uuid, "GPU-", 4) == 0, "%s: uuid %s", tag,
          attr->identifiers.uuid);
    attr->version = 1;
    CHECK_RC(p_dcgmGetDeviceAttributes(h, 2, attr), DCGM_ST_VER_MISMATCH);
    free(attr);

    dcgmGpuGrp_t group = 0;
    CHECK_RC(p_dcgmGroupCreate(h, DCGM_GROUP_EMPTY, "remote-test", &group), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, group, DCGM_FE_GPU, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, group, DCGM_FE_GPU, 2), DCGM_ST_OK);
    CHECK_RC(p_dcgmGroupAddEntity(h, group, DCGM_FE_GPU, 77), DCGM_ST_BADPARAM);
    dcgmGroupInfo_t *info = calloc(1, sizeof *info);
    info->version = dcgmGroupInfo_version3;
    CHECK_RC(p_dcgmGroupGetInfo(h, group, info), DCGM_ST_OK);
    CHECK(info->count == 2 && strcmp(info->groupName, "remote-test") == 0, "%s: group %u %s",
          tag, info->count, info->groupName);
    free(info);
    dcgmGpuGrp_t group_ids[DCGM_MAX_NUM_GROUPS];
    unsigned int n_ids = 0;
    CHECK_RC(p_dcgmGroupGetAllIds(h, group_ids, &n_ids), DCGM_ST_OK);
    CHECK(n_ids >= 3 && group_ids[0] == 0 && group_ids[1] == 1 && group_ids[n_ids - 1] == group,
          "%s: %u group ids", tag, n_ids);

    dcgmFieldGrp_t fg = 0, dup = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(h, N_WATCHED, watched, "remote-fields", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupCreate(h, N_WATCHED, watched, "remote-fields", &dup),
             DCGM_ST_DUPLICATE_KEY);
    dcgmFieldGroupInfo_t fg_info;
    memset(&fg_info, 0, sizeof fg_info);
    fg_info.version = dcgmFieldGroupInfo_version1;
    fg_info.fieldGroupId = fg;
    CHECK_RC(p_dcgmFieldGroupGetInfo(h, &fg_info), DCGM_ST_OK);
    CHECK(fg_info.numFieldIds == (unsigned)N_WATCHED, "%s: fg fields %u", tag,
          fg_info.numFieldIds);

    /* never watched: values-since aborts, latest values say so per record */
    long long next = 0;
    recs *r = recs_new(MAX_RECS);
    CHECK_RC(p_dcgmGetValuesSince_v2(h, group, fg, 0, &next, collect, r), DCGM_ST_NOT_WATCHED);
    CHECK(next == 0, "%s: cursor moved to %lld", tag, next);
    r->count = 0;
    CHECK_RC(p_dcgmGetLatestValues_v2(h, group, fg, collect, r), DCGM_ST_OK);
    CHECK(r->count == 2 * N_WATCHED && r->items[0].v.status == DCGM_ST_NOT_WATCHED,
          "%s: latest %d status %d", tag, r->count, r->items[0].v.status);

    CHECK_RC(p_dcgmWatchFields(h, group, fg, 100000, 10.0, 0), DCGM_ST_OK);
    CHECK_RC(p_dcgmUpdateAllFields(h, 1), DCGM_ST_OK);
    r->count = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(h, group, fg, 0, &next, collect, r), DCGM_ST_OK);
    CHECK(next > 0, "%s: cursor %lld", tag, next);
    int no_data = 0, ok = 0;
    for (int i = 0; i < r->count; i++) {
        no_data += r->items[i].v.status == DCGM_ST_NO_DATA;
        ok += r->items[i].v.status == DCGM_ST_OK;
    }
    /* the XID field has no event yet: exactly one NO_DATA record per GPU */
    CHECK(no_data == 2 && ok >= 2 * (N_WATCHED - 1), "%s: %d NO_DATA %d OK of %d", tag, no_data,
          ok, r->count);
    /* a callback that stops the enumeration leaves the cursor alone */
    r->count = 0;
    r->stop_after = 3;
    long long stopped_next = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(h, group, fg, 5, &stopped_next, collect, r), DCGM_ST_OK);
    CHECK(r->count == 3 && stopped_next == 5, "%s: stop %d cursor %lld", tag, r->count,
          stopped_next);
    /* a callback may call back in on the same handle */
    r->count = 0;
    r->stop_after = 0;
    r->reenter = h;
    CHECK_RC(p_dcgmGetValuesSince(h, group, fg, next, &next, collect_gpu, r), DCGM_ST_OK);
    r->reenter = 0;

    unsigned short fields[3] = { 150, 155, 1002 };
    dcgmFieldValue_v1 v1[3];
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, 0, fields, 3, v1), DCGM_ST_OK);
    CHECK(v1[0].status == DCGM_ST_OK && v1[0].fieldId == 150 && v1[0].fieldType == 'i' &&
          v1[2].status == DCGM_ST_NOT_WATCHED, "%s: entity latest %d %d", tag, v1[0].status,
          v1[2].status);
    CHECK_RC(p_dcgmGetLatestValuesForFields(h, 0, fields, 0, v1), DCGM_ST_BADPARAM);
    dcgmGroupEntityPair_t pairs[2] = { { DCGM_FE_GPU, 1 }, { DCGM_FE_GPU, 3 } };
    dcgmFieldValue_v2 v2[6];
    CHECK_RC(p_dcgmEntitiesGetLatestValues(h, pairs, 2, fields, 3, DCGM_FV_FLAG_LIVE_DATA, v2),
             DCGM_ST_OK);
    CHECK(v2[3].entityId == 3 && v2[3].fieldId == 150 && v2[3].status == DCGM_ST_OK &&
          v2[4].value.dbl > 0, "%s: entities latest %u %d", tag, v2[3].entityId, v2[3].status);
    dcgmFieldValue_v1 *many = calloc(50, sizeof *many);
    int n_many = 50;
    CHECK_RC(p_dcgmGetMultipleValuesForField(h, 0, 150, &n_many, 0, 0, DCGM_ORDER_ASCENDING,
                                             many), DCGM_ST_OK);
    CHECK(n_many >= 1 && many[0].fieldId == 150, "%s: multiple %d", tag, n_many);
    free(many);

    dcgmHealthSystems_t systems = 0;
    CHECK_RC(p_dcgmHealthSet(h, group, DCGM_HEALTH_WATCH_THERMAL | DCGM_HEALTH_WATCH_MEM),
             DCGM_ST_OK);
    CHECK_RC(p_dcgmHealthGet(h, group, &systems), DCGM_ST_OK);
    CHECK(systems == (DCGM_HEALTH_WATCH_THERMAL | DCGM_HEALTH_WATCH_MEM), "%s: health %x", tag,
          (unsigned)systems);
    dcgmHealthResponse_t *health = calloc(1, sizeof *health);
    health->version = dcgmHealthResponse_version5;
    CHECK_RC(p_dcgmHealthCheck(h, group, health), DCGM_ST_OK);
    CHECK(health->overallHealth == DCGM_HEALTH_RESULT_PASS, "%s: overall %d", tag,
          (int)health->overallHealth);
    free(health);
    dcgmProfGetMetricGroups_t *prof = calloc(1, sizeof *prof);
    prof->version = dcgmProfGetMetricGroups_version3;
    CHECK_RC(p_dcgmProfGetSupportedMetricGroups(h, prof), DCGM_ST_OK);
    CHECK(prof->numMetricGroups >= 1, "%s: metric groups %u", tag, prof->numMetricGroups);
    free(prof);
    dcgmVersionInfo_t version = { .version = dcgmVersionInfo_version2 };
    CHECK_RC(p_dcgmHostengineVersionInfo(h, &version), DCGM_ST_OK);
    CHECK(strstr(version.rawBuildInfoString, "simulated:yes") != NULL, "%s: version", tag);
    dcgmHostengineHealth_t he_health = { .version = dcgmHostengineHealth_version1 };
    CHECK_RC(p_dcgmHostengineIsHealthy(h, &he_health), DCGM_ST_OK);

    dcgmInjectFieldValue_t inject;
    memset(&inject, 0, sizeof inject);
    inject.version = dcgmInjectFieldValue_version1;
    inject.fieldId = 230;
    inject.fieldType = DCGM_FT_INT64;
    inject.ts = next + 10;
    inject.value.i64 = 79;
    CHECK_RC(p_dcgmInjectEntityFieldValue(h, DCGM_FE_GPU, 2, &inject), DCGM_ST_OK);
    unsigned short xid = 230;
    CHECK_RC(p_dcgmEntityGetLatestValues(h, DCGM_FE_GPU, 2, &xid, 1, v1), DCGM_ST_OK);
    CHECK(v1[0].status == DCGM_ST_OK && v1[0].value.i64 == 79, "%s: injected %d %lld", tag,
          v1[0].status, (long long)v1[0].value.i64);

    CHECK_RC(p_dcgmUnwatchFields(h, group, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_NO_DATA);
    CHECK_RC(p_dcgmGroupDestroy(h, group), DCGM_ST_OK);
    recs_free(r);
}

/* Records read remotely carry the model's values at their timestamps. */
static void check_model_values(dcgmHandle_t h, long long start_us)
{
    dcgmGpuGrp_t group = DCGM_GROUP_ALL_GPUS;
    unsigned short fields[3] = { 150, 155, 203 };
    dcgmFieldGrp_t fg = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(h, 3, fields, "model-check", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmWatchFields(h, group, fg, 100000, 10.0, 0), DCGM_ST_OK);
    sleep_ms(350);
    recs *r = recs_new(MAX_RECS);
    long long next = 0;
    CHECK_RC(p_dcgmGetValuesSince_v2(h, group, fg, 0, &next, collect, r), DCGM_ST_OK);
    CHECK(r->count >= 4 * 3 * 2, "model records %d", r->count);
    int mismatches = 0;
    for (int i = 0; i < r->count; i++) {
        const dcgmFieldValue_v1 *v = &r->items[i].v;
        dcgmFieldValue_v1 want;
        memset(&want, 0, sizeof want);
        int rc = p_dcgmSimGetValueAt(r->items[i].entity, v->fieldId, v->ts - start_us, &want);
        if (rc != DCGM_ST_OK || want.value.i64 != v->value.i64)
            mismatches++;
    }
    CHECK(mismatches == 0, "%d of %d remote records differ from the model", mismatches,
          r->count);
    recs_free(r);
    CHECK_RC(p_dcgmFieldGroupDestroy(h, fg), DCGM_ST_OK);
}

static void test_equivalence(void)
{
    hostengine he;
    if (!hostengine_start(&he, "4", NULL))
        return;
    dcgmHandle_t h = connect_to(he.address, 2000, 0);
    long long remote_start = 0;
    /* with no embedded engine, the start time is the hostengine's */
    CHECK_RC(p_dcgmSimGetStartTime(&remote_start), DCGM_ST_OK);
    same_script(h, "remote");
    setenv("DCGM_SIM_SCENARIO", "4", 1);
    dcgmHandle_t emb = 0;
    CHECK_RC(p_dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &emb), DCGM_ST_OK);
    same_script(emb, "embedded");
    long long local_start = 0;
    CHECK_RC(p_dcgmSimGetStartTime(&local_start), DCGM_ST_OK);
    CHECK(local_start != remote_start, "the two engines started at %lld", local_start);
    /* one scenario, one model: the embedded engine answers for the remote one */
    check_model_values(h, remote_start);
    CHECK_RC(p_dcgmStopEmbedded(emb), DCGM_ST_OK);
    unsetenv("DCGM_SIM_SCENARIO");
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_CONNECTION_NOT_VALID);
    hostengine_stop(&he);
}

/* ---- ownership --------------------------------------------------------------- */

static void test_ownership(void)
{
    hostengine he;
    if (!hostengine_start(&he, "2", "/tmp/test_remote_owner.sock"))
        return;
    unsigned short temp = 150;
    dcgmFieldGrp_t fg = 0;
    dcgmHandle_t a = connect_to(he.address, 2000, 0);
    dcgmHandle_t b = connect_to(he.address, 2000, 0);
    CHECK_RC(p_dcgmFieldGroupCreate(a, 1, &temp, "owned", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupCreate(b, 1, &temp, "owned", &fg), DCGM_ST_DUPLICATE_KEY);
    CHECK_RC(p_dcgmDisconnect(a), DCGM_ST_OK);
    /* the server notices the disconnect asynchronously */
    int rc = DCGM_ST_DUPLICATE_KEY;
    for (int i = 0; i < 100 && rc == DCGM_ST_DUPLICATE_KEY; i++) {
        rc = p_dcgmFieldGroupCreate(b, 1, &temp, "owned", &fg);
        if (rc == DCGM_ST_DUPLICATE_KEY)
            sleep_ms(10);
    }
    CHECK_RC(rc, DCGM_ST_OK);
    CHECK_RC(p_dcgmFieldGroupDestroy(b, fg), DCGM_ST_OK);

    dcgmHandle_t keep = connect_to(he.address, 2000, 1);
    CHECK_RC(p_dcgmFieldGroupCreate(keep, 1, &temp, "kept", &fg), DCGM_ST_OK);
    CHECK_RC(p_dcgmDisconnect(keep), DCGM_ST_OK);
    sleep_ms(100);
    dcgmFieldGrp_t again = 0;
    CHECK_RC(p_dcgmFieldGroupCreate(b, 1, &temp, "kept", &again), DCGM_ST_DUPLICATE_KEY);
    CHECK_RC(p_dcgmDisconnect(b), DCGM_ST_OK);
    hostengine_stop(&he);
    CHECK(access("/tmp/test_remote_owner.sock", F_OK) != 0, "socket file left behind");
}

/* ---- cycles and many connections ----------------------------------------------- */

static void test_cycles(void)
{
    hostengine he;
    if (!hostengine_start(&he, "2", NULL))
        return;
    const char *env = getenv("REMOTE_CYCLES");
    int cycles = env ? atoi(env) : 2000;
    /* settle: the first connection starts lazily allocated state */
    CHECK_RC(p_dcgmDisconnect(connect_to(he.address, 2000, 0)), DCGM_ST_OK);
    sleep_ms(50);
    int fds = open_fds(), threads = thread_count();
    for (int i = 0; i < cycles; i++) {
        dcgmHandle_t h = connect_to(he.address, 2000, 0);
        unsigned int ids[DCGM_MAX_NUM_DEVICES];
        int count = 0;
        if (i % 10 == 0)
            CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_OK);
        CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
        if (failures > 20)
            break;
    }
    /* server threads end when they see EOF and are reaped a little later */
    for (int i = 0; i < 150 && (thread_count() > threads || open_fds() > fds); i++)
        sleep_ms(20);
    CHECK(open_fds() <= fds, "fds %d -> %d after %d cycles", fds, open_fds(), cycles);
    CHECK(thread_count() <= threads, "threads %d -> %d", threads, thread_count());

    /* more connections than the server serves: the extra ones are refused */
    enum { MANY = 70 };
    dcgmHandle_t handles[MANY];
    int connected = 0;
    for (int i = 0; i < MANY; i++) {
        dcgmConnectV3Params_t params = { dcgmConnectV3Params_version1, 0, 300 };
        handles[i] = 0;
        if (p_dcgmConnect_v3(he.address, &params, &handles[i]) == DCGM_ST_OK)
            connected++;
    }
    CHECK(connected == 64, "%d of %d connections accepted", connected, MANY);
    for (int i = 0; i < MANY; i++)
        if (handles[i])
            p_dcgmDisconnect(handles[i]);
    sleep_ms(300);
    CHECK_RC(p_dcgmDisconnect(connect_to(he.address, 2000, 0)), DCGM_ST_OK);
    hostengine_stop(&he);
    CHECK(open_fds() <= fds, "fds %d -> %d after stopping", fds, open_fds());
}

/* ---- garbage --------------------------------------------------------------------- */

static int raw_connect(const char *address)
{
    const char *colon = strrchr(address, ':');
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_bytes(int fd, const void *buf, size_t len)
{
    CHECK(send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len, "raw send");
}

/* Waits for the server to close fd; 1 if it did within 2 s. */
static int closed_by_server(int fd)
{
    char buf[4096];
    int64_t deadline = mono_ms() + 2000;
    while (mono_ms() < deadline) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) > 0 && recv(fd, buf, sizeof buf, 0) <= 0)
            return 1;
    }
    return 0;
}

static void test_garbage(void)
{
    hostengine he;
    if (!hostengine_start(&he, "2", NULL))
        return;
    const char hello[] = "DCGM-SIM-HOSTENGINE HELLO 1\n";
    char echo[sizeof hello];

    int fd = raw_connect(he.address);
    send_bytes(fd, "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxx", 40);
    CHECK(closed_by_server(fd), "garbage hello kept open");
    close(fd);

    wire_request req;
    memset(&req, 0xff, sizeof req);
    fd = raw_connect(he.address);
    send_bytes(fd, hello, strlen(hello));
    CHECK(recv(fd, echo, strlen(hello), MSG_WAITALL) == (ssize_t)strlen(hello), "echo");
    send_bytes(fd, &req, sizeof req);
    CHECK(closed_by_server(fd), "bad magic kept open");
    close(fd);

    /* a valid magic with a huge tail length */
    memset(&req, 0, sizeof req);
    req.magic = WIRE_REQUEST_MAGIC;
    req.op = WIRE_OP_GPU_IDS;
    req.tail_len = 0xfffffff0u;
    fd = raw_connect(he.address);
    send_bytes(fd, hello, strlen(hello));
    CHECK(recv(fd, echo, strlen(hello), MSG_WAITALL) == (ssize_t)strlen(hello), "echo");
    send_bytes(fd, &req, sizeof req);
    CHECK(closed_by_server(fd), "huge tail kept open");
    close(fd);

    /* half a request, then gone */
    req.tail_len = 0;
    fd = raw_connect(he.address);
    send_bytes(fd, hello, strlen(hello));
    send_bytes(fd, &req, sizeof req / 2);
    close(fd);
    /* an unknown op and a wrong-sized struct get answers, and the line still works */
    req.op = 999;
    fd = raw_connect(he.address);
    send_bytes(fd, hello, strlen(hello));
    CHECK(recv(fd, echo, strlen(hello), MSG_WAITALL) == (ssize_t)strlen(hello), "echo");
    send_bytes(fd, &req, sizeof req);
    wire_reply reply;
    CHECK(recv(fd, &reply, sizeof reply, MSG_WAITALL) == (ssize_t)sizeof reply, "reply");
    CHECK(reply.magic == WIRE_REPLY_MAGIC && reply.kind == WIRE_FINAL &&
          reply.status == DCGM_ST_FUNCTION_NOT_FOUND, "unknown op status %d", reply.status);
    char big[8192];
    memset(big, 0, sizeof big);
    req.op = WIRE_OP_VERSION_INFO;
    req.tail_len = sizeof big;
    send_bytes(fd, &req, sizeof req);
    send_bytes(fd, big, sizeof big);
    CHECK(recv(fd, &reply, sizeof reply, MSG_WAITALL) == (ssize_t)sizeof reply, "reply");
    CHECK(reply.status == DCGM_ST_BADPARAM && reply.tail_len == 0, "oversized struct %d",
          reply.status);
    req.op = WIRE_OP_GPU_IDS;
    req.tail_len = 0;
    send_bytes(fd, &req, sizeof req);
    CHECK(recv(fd, &reply, sizeof reply, MSG_WAITALL) == (ssize_t)sizeof reply, "reply");
    CHECK(reply.status == DCGM_ST_OK && reply.u[0] == 2, "gpu ids %d %u", reply.status,
          reply.u[0]);
    close(fd);

    dcgmHandle_t h = connect_to(he.address, 2000, 0);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_OK);
    CHECK(count == 2, "%d GPUs after garbage", count);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    hostengine_stop(&he);
}

/* ---- a server in another process: killed, stalled, never there ------------------- */

static int child_stop[2] = { -1, -1 };

static void on_child_term(int sig)
{
    (void)sig;
    (void)!write(child_stop[1], "x", 1);
}

static pid_t fork_hostengine(char *address, size_t len)
{
    int ready[2];
    if (pipe(ready) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        /* SIGTERM stops the server through its stop descriptor, as the
         * Python entry point arranges it, so it exits cleanly */
        if (pipe(child_stop) != 0)
            _exit(2);
        signal(SIGTERM, on_child_term);
        int rc = p_dcgmSimServe(NULL, 0, 0, "2", ready[1], child_stop[0], NULL, 0);
        _exit(rc == DCGM_ST_OK ? 0 : 1);
    }
    close(ready[1]);
    char line[256];
    int ok = read_ready_line(ready[0], line, sizeof line);
    close(ready[0]);
    CHECK(ok, "forked hostengine did not start");
    snprintf(address, len, "%s", ok ? line + strlen("listening on ") : "");
    return pid;
}

/* SIGSTOP is asynchronous: wait until the child really is stopped. */
static void stop_process(pid_t pid)
{
    int status = 0;
    kill(pid, SIGSTOP);
    CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status), "child not stopped");
}

typedef struct inflight {
    dcgmHandle_t h;
    int rc;
    int64_t took_ms;
} inflight;

static void *request_thread(void *arg)
{
    inflight *f = arg;
    int64_t begin = mono_ms();
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    f->rc = p_dcgmGetAllDevices(f->h, ids, &count);
    f->took_ms = mono_ms() - begin;
    return NULL;
}

static void test_server_death(void)
{
    char address[256];
    pid_t pid = fork_hostengine(address, sizeof address);
    if (pid <= 0)
        return;
    dcgmHandle_t h = connect_to(address, 2000, 0);
    /* stop it, start a request, kill it: the request fails at once */
    stop_process(pid);
    inflight f = { h, 0, 0 };
    pthread_t t;
    pthread_create(&t, NULL, request_thread, &f);
    sleep_ms(200);
    kill(pid, SIGKILL);
    int64_t killed = mono_ms();
    pthread_join(t, NULL);
    waitpid(pid, NULL, 0);
    CHECK_RC(f.rc, DCGM_ST_CONNECTION_NOT_VALID);
    CHECK(mono_ms() - killed < 1000, "in-flight request took %lld ms after the kill",
          (long long)(mono_ms() - killed));
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_CONNECTION_NOT_VALID);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    /* nothing listens now: retries for the whole timeout, then gives up */
    dcgmConnectV3Params_t params = { dcgmConnectV3Params_version1, 0, 300 };
    int64_t begin = mono_ms();
    CHECK_RC(p_dcgmConnect_v3(address, &params, &h), DCGM_ST_CONNECTION_NOT_VALID);
    CHECK(mono_ms() - begin >= 250, "gave up after %lld ms", (long long)(mono_ms() - begin));

    /* a stalled server: the request times out, then the handle is dead */
    pid = fork_hostengine(address, sizeof address);
    if (pid <= 0)
        return;
    setenv("DCGM_SIM_REQUEST_TIMEOUT_MS", "300", 1);
    h = connect_to(address, 2000, 0);
    unsetenv("DCGM_SIM_REQUEST_TIMEOUT_MS");
    stop_process(pid);
    begin = mono_ms();
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_TIMEOUT);
    int64_t took = mono_ms() - begin;
    CHECK(took >= 250 && took < 2000, "timeout after %lld ms", (long long)took);
    kill(pid, SIGCONT);
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_CONNECTION_NOT_VALID);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    /* the server itself is fine: a new connection works */
    h = connect_to(address, 2000, 0);
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_OK);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    kill(pid, SIGTERM);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hostengine exit status %d", status);
}

/* A connect started before the server listens succeeds once it does. */
static void *late_server(void *arg)
{
    hostengine *he = arg;
    sleep_ms(300);
    hostengine_start(he, "1", "/tmp/test_remote_late.sock");
    return NULL;
}

static void test_late_server(void)
{
    hostengine he;
    pthread_t t;
    unlink("/tmp/test_remote_late.sock");
    pthread_create(&t, NULL, late_server, &he);
    dcgmHandle_t h = connect_to("unix:///tmp/test_remote_late.sock", 3000, 0);
    pthread_join(t, NULL);
    unsigned int ids[DCGM_MAX_NUM_DEVICES];
    int count = 0;
    CHECK_RC(p_dcgmGetAllDevices(h, ids, &count), DCGM_ST_OK);
    CHECK(count == 1, "late server GPUs %d", count);
    CHECK_RC(p_dcgmDisconnect(h), DCGM_ST_OK);
    hostengine_stop(&he);
}

int main(int argc, char **argv)
{
    const check_test tests[] = {
        /* first, while this process has no other threads to fork with */
        { "server_death", test_server_death },
        { "equivalence", test_equivalence }, { "ownership", test_ownership },
        { "garbage", test_garbage },         { "late_server", test_late_server },
        { "cycles", test_cycles },
    };
    const check_program program = { .only_env = "TEST_REMOTE_ONLY" };
    return check_main(argc, argv, &program, tests, sizeof tests / sizeof tests[0]);
}
