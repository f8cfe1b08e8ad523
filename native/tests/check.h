/*
 * check.h -- what the native test programs share: the CHECK macros and their
 * counters, clocks, and (with CHECK_DLOPEN_DCGM) loading libdcgm.so.4 the
 * way a third-party client does.  Header-only, because the Makefile builds
 * each tests/ source as one program that links no other project code.
 *
 * Before including it, a test may define:
 *   CHECK_FROM_THREADS  counters are atomic (checks run on several threads)
 *                       and only the first CHECK_MAX_REPORTED failures are
 *                       printed, so a broken race test cannot flood the log
 *   CHECK_SCRATCH_FILES tmpdir and write_file(): files (scenarios) a test writes
 *                       into a scratch folder made with make_scratch()
 *   CHECK_DLOPEN_DCGM   declares p_<name> for every DCGM entry point,
 *                       load_library() to fill them, run_tests(), check_main()
 *                       (a whole main()), and the recs collector for value
 *                       callbacks
 * client_example.c must not include it: it shows a client that has only
 * DCGM's own headers.
 */
#ifndef DCGM_TESTS_CHECK_H
#define DCGM_TESTS_CHECK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../dcgm_abi.h"

#ifdef CHECK_FROM_THREADS
#include <stdatomic.h>
#define CHECK_MAX_REPORTED 200
static atomic_int failures, checks;
#define CHECK_COUNT_FAILURE_()                                               \
    if (++failures > CHECK_MAX_REPORTED)                                     \
        break
#else
static int failures, checks;
#define CHECK_COUNT_FAILURE_() failures++
#endif

/* Counts a check; a failed one is printed with its place and a printf-style
 * explanation, and the test carries on so that one run reports them all. */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            CHECK_COUNT_FAILURE_();                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

#define CHECK_RC(expr, want)                                                 \
    do {                                                                     \
        int got_ = (int)(expr);                                              \
        CHECK(got_ == (int)(want), "%s returned %d, want %d", #expr, got_,   \
              (int)(want));                                                  \
    } while (0)

#define EMB ((dcgmHandle_t)DCGM_EMBEDDED_HANDLE)

static inline int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The whole interval even when a signal handler (test_remote's children
 * have one) interrupts the sleep. */
static inline void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A value to inject (dcgmInjectFieldValue_t) for field, stamped ts microseconds: an INT64 or
 * a DOUBLE.  Zeroed first, so that no stray byte travels to a hostengine. */
static inline void injected_i64(dcgmInjectFieldValue_t *v, unsigned short field, int64_t ts,
                                long long value)
{
    memset(v, 0, sizeof *v);
    v->version = dcgmInjectFieldValue_version1;
    v->fieldId = field;
    v->fieldType = DCGM_FT_INT64;
    v->ts = ts;
    v->value.i64 = value;
}

static inline void injected_dbl(dcgmInjectFieldValue_t *v, unsigned short field, int64_t ts,
                                double value)
{
    injected_i64(v, field, ts, 0);
    v->fieldType = DCGM_FT_DOUBLE;
    v->value.dbl = value;
}

/* Writes a scenario to /tmp/<program>_<pid>_<tag>.toml; the path stays valid until the next call. */
static inline char *write_scenario_as(const char *program, const char *tag, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/%s_%d_%s.toml", program, (int)getpid(), tag);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    return path;
}

/* The simulated libnvidia-ml.so.1 of a build folder, as an absolute path: the engine
 * and the test then dlopen the very same instance (one simulated clock). */
static inline void nvml_library_in(const char *build_dir, char *out, size_t len)
{
    char *dir = realpath(build_dir, NULL);
    snprintf(out, len, "%s/libnvidia-ml.so.1", dir ? dir : build_dir);
    free(dir);
}

#ifdef CHECK_SCRATCH_FILES
#include <dirent.h>

static char tmpdir[256];

/* Makes tmpdir, $TMPDIR/<name>.XXXXXX (TMPDIR defaulting to /tmp); 0 if it cannot. */
static inline int make_scratch(const char *name)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             name);
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 0;
    }
    return 1;
}

/* Removes tmpdir with the files written into it: scenarios, stand-in tools, logs. */
static inline void remove_scratch(void)
{
    DIR *d = opendir(tmpdir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(tmpdir);
}

/* Writes text to tmpdir/name; the path stays valid until the next call. */
static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    return path;
}
#endif /* CHECK_SCRATCH_FILES */

#ifdef CHECK_DLOPEN_DCGM
#include <dlfcn.h>

#define DECLARE_POINTER(ret, name, params, args, missing) static ret(*p_##name) params;
DCGM_FUNCTION_LIST(DECLARE_POINTER)
#undef DECLARE_POINTER

/* dlopen()s DIR/libdcgm.so.4 and resolves every entry point; a library that
 * cannot be loaded or lacks one ends the program with status 2. */
static void *load_library(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/libdcgm.so.4", dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        exit(2);
    }
#define LOAD_POINTER(ret, name, params, args, missing)                       \
    *(void **)(&p_##name) = dlsym(lib, #name);                               \
    if (!p_##name) {                                                         \
        fprintf(stderr, "missing symbol %s\n", #name);                       \
        exit(2);                                                             \
    }
    DCGM_FUNCTION_LIST(LOAD_POINTER)
#undef LOAD_POINTER
    return lib;
}

typedef struct check_test {
    const char *name;
    void (*run)(void);
} check_test;

/* Runs each test (only the one named ONLY when that is not NULL) and prints
 * one line per test. */
static void run_tests(const check_test *tests, size_t n_tests, const char *only)
{
    for (size_t i = 0; i < n_tests; i++) {
        if (only && strcmp(only, tests[i].name) != 0)
            continue;
        int before = failures;
        tests[i].run();
        printf("%-16s %s\n", tests[i].name, failures == before ? "ok" : "FAILED");
        fflush(stdout);
    }
}

#ifdef CHECK_SCRATCH_FILES
static char scenario[512]; /* the path of the scenario check_main() wrote */
#endif

/* What sets one test program apart from the others; check_main() does the rest. */
typedef struct check_program {
    const char *only_env;      /* the environment variable that names the one test to run */
    const char *scenario_text; /* non-NULL: written to node.toml in a fresh tmpdir named after
                                * the program, its path in scenario (CHECK_SCRATCH_FILES) */
    void (*prepare)(const char *build_dir); /* then, before the library loads; may be NULL */
} check_program;

/* The main() of a test program run as PROGRAM BUILD_DIR: prepares, loads
 * and initialises BUILD_DIR's library, runs the tests, shuts it down, removes
 * tmpdir and prints the "N checks, M failures" line that .ci/run reads.
 * Returns the exit status: 0 all passed, 1 a check failed, 2 no run. */
static inline int check_main(int argc, char **argv, const check_program *program,
                             const check_test *tests, size_t n_tests)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
        return 2;
    }
#ifdef CHECK_SCRATCH_FILES
    if (program->scenario_text) {
        const char *slash = strrchr(argv[0], '/');
        if (!make_scratch(slash ? slash + 1 : argv[0]))
            return 2;
        snprintf(scenario, sizeof scenario, "%s", write_file("node.toml", program->scenario_text));
    }
#endif
    if (program->prepare)
        program->prepare(argv[1]);
    void *lib = load_library(argv[1]);
    if (p_dcgmInit() != DCGM_ST_OK)
        return 2;
    run_tests(tests, n_tests, getenv(program->only_env));
    CHECK_RC(p_dcgmShutdown(), DCGM_ST_OK);
    dlclose(lib);
#ifdef CHECK_SCRATCH_FILES
    if (program->scenario_text)
        remove_scratch();
#endif
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

/* A named step of a script that runs on one handle. */
typedef struct script_step {
    const char *name;
    void (*run)(dcgmHandle_t h);
} script_step;

/* Runs each step on h; a step with failures is named after them, with tag
 * (where the script ran). */
static inline void run_steps(const script_step *steps, size_t n_steps, dcgmHandle_t h,
                             const char *tag)
{
    for (size_t i = 0; i < n_steps; i++) {
        int before = failures;
        steps[i].run(h);
        if (failures != before)
            fprintf(stderr, "  (%s: %s)\n", tag, steps[i].name);
    }
}

/* The records a test reads through DCGM's per-entity value callbacks, in
 * the order they arrive; each test's callback adds its own re-entry policy. */
typedef struct rec {
    dcgm_field_entity_group_t group;
    dcgm_field_eid_t entity;
    dcgmFieldValue_v1 v;
} rec;

typedef struct recs {
    rec *items;
    int count;
    int capacity;        /* records past it are dropped, so count stops there */
    int stop_after;      /* the callback returns non-zero after this many, 0 = never */
    dcgmHandle_t reenter; /* the callback calls back into this handle, 0 = never */
} recs;

static inline recs *recs_new(int capacity)
{
    recs *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->items = calloc((size_t)capacity, sizeof *r->items);
    r->capacity = r->items ? capacity : 0;
    return r;
}

static inline void recs_free(recs *r)
{
    if (!r)
        return;
    free(r->items);
    free(r);
}

static inline void recs_append(recs *r, dcgm_field_entity_group_t group, dcgm_field_eid_t entity,
                        const dcgmFieldValue_v1 *values, int n)
{
    for (int i = 0; i < n && r->count < r->capacity; i++) {
        r->items[r->count].group = group;
        r->items[r->count].entity = entity;
        r->items[r->count].v = values[i];
        r->count++;
    }
}

static inline int recs_should_stop(const recs *r)
{
    return r->stop_after && r->count >= r->stop_after;
}
/* One fake entity of group (dcgmCreateFakeEntities) on handle h, under the
 * parent entity a GPU or compute instance needs (DCGM_FE_NONE, 0: none); its id. */
static inline unsigned int new_fake_entity(dcgmHandle_t h, dcgm_field_entity_group_t group,
                                           dcgm_field_entity_group_t parent_group,
                                           unsigned int parent)
{
    dcgmCreateFakeEntities_t *fake = calloc(1, sizeof *fake);
    fake->version = dcgmCreateFakeEntities_version2;
    fake->numToCreate = 1;
    fake->entityList[0].entity.entityGroupId = group;
    fake->entityList[0].parent.entityGroupId = parent_group;
    fake->entityList[0].parent.entityId = parent;
    CHECK_RC(p_dcgmCreateFakeEntities(h, fake), DCGM_ST_OK);
    unsigned int id = fake->entityList[0].entity.entityId;
    free(fake);
    return id;
}

/* One fake GPU on handle h; its id. */
static inline unsigned int new_fake_gpu(dcgmHandle_t h)
{
    return new_fake_entity(h, DCGM_FE_GPU, DCGM_FE_NONE, 0);
}
#endif /* CHECK_DLOPEN_DCGM */

#endif /* DCGM_TESTS_CHECK_H */
