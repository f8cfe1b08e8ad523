/*
 * node_sample.h -- what the tests linked with the node's sources share: a
 * scenario loaded or the test stopped, and a field's reading at a time.
 *
 * Include after "../node/node_internal.h" (the functions are static inline,
 * so a test that uses some of them warns about none).
 */
#ifndef DCGM_TESTS_NODE_SAMPLE_H
#define DCGM_TESTS_NODE_SAMPLE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline sim_node *load_or_die(const char *spec)
{
    sim_node *node = NULL;
    char err[512];
    int rc = sim_node_load(spec, &node, err, sizeof err);
    if (rc != DCGM_ST_OK || node == NULL) {
        fprintf(stderr, "FAIL loading %s: rc %d: %s\n", spec ? spec : "(null)", rc, err);
        exit(1);
    }
    return node;
}

/* The reading t_s seconds after the node started; a failed read stops the test. */
static inline sim_value sample(sim_node *node, unsigned int gpu, unsigned short field, double t_s)
{
    sim_value v;
    int64_t t_us = (int64_t)llround(t_s * 1e6);
    int rc = sim_node_sample(node, gpu, field, t_us, &v);
    if (rc != DCGM_ST_OK) {
        fprintf(stderr, "FAIL sample gpu %u field %u t %.3f: rc %d\n", gpu, field, t_s, rc);
        exit(1);
    }
    return v;
}

static inline int64_t sample_i(sim_node *node, unsigned int gpu, unsigned short field, double t_s)
{
    return sample(node, gpu, field, t_s).i64;
}

static inline double sample_d(sim_node *node, unsigned int gpu, unsigned short field, double t_s)
{
    return sample(node, gpu, field, t_s).dbl;
}

#endif /* DCGM_TESTS_NODE_SAMPLE_H */
