/*
 * drain.h -- the sampling hot path: DCGM samples straight into ring buffers.
 *
 * A drain is one dcgmGetValuesSince_v2 call whose records go into a ring
 * (ring.h) without a Python object per value; the rows it makes are
 * committed with the ring's publication protocol, so readers of the ring
 * need no lock while a drain runs.
 *
 * The CDEF region is also read by dcgm_collector/ext/_build.py as cffi
 * declarations: keep it to plain typedefs, structs and prototypes.
 */
#ifndef DCGM_COLLECTOR_DRAIN_H
#define DCGM_COLLECTOR_DRAIN_H

#include <stdint.h>

#include "../dcgm_abi.h"
#include "ring.h"

/* CDEF-BEGIN */

/*
 * One dcgmGetValuesSince_v2(handle, group, fieldGroup, since) call: every
 * numeric record becomes a cell of the row of its timestamp; rows are
 * committed in ascending ts when DCGM returns OK, and nothing is committed
 * otherwise (DCGM then leaves the cursor where it was, so the next drain
 * reads the same samples again).  Returns the DCGM status, DCGM_ST_MEMORY
 * when staging could not grow, DCGM_ST_IN_USE when another thread is writing
 * this ring, DCGM_ST_BADPARAM for NULL arguments.
 */
int dcgmc_drain(dcgmc_ring *ring, dcgmHandle_t handle, dcgmGpuGrp_t group,
                dcgmFieldGrp_t fieldGroup, long long since, dcgmc_drain_stats *stats);

/*
 * Like dcgmc_drain for event fields (XID, ...): each OK, non-blank integer
 * record becomes one entry with its own timestamp; entries are committed in
 * ascending ts (then entity, field) when DCGM returns OK.
 */
int dcgmc_drain_events(dcgmc_events *events, dcgmHandle_t handle, dcgmGpuGrp_t group,
                       dcgmFieldGrp_t fieldGroup, long long since, dcgmc_drain_stats *stats);

#define DCGMC_DRAIN_MAX_RINGS 8

/*
 * One dcgmGetValuesSince_v2 call for a field group whose fields are those of
 * several rings and of the event ring (the fields of event_fields), which are
 * watched on the same entities at the same interval: each record goes to the
 * ring (or event ring) holding its field, as dcgmc_drain and
 * dcgmc_drain_events would store it, and the rings are committed together
 * when DCGM answers OK (nothing is, otherwise).  One round trip to a
 * hostengine per tick instead of one per ring.  stats holds n_rings + 1
 * entries: the rings', then the event ring's (its counts stay 0 without
 * one); records of no ring are counted unmapped on the first entry.  events
 * may be NULL; at most DCGMC_DRAIN_MAX_RINGS rings, each given once.
 */
int dcgmc_drain_many(dcgmc_ring *const *rings, int n_rings, dcgmc_events *events,
                     const unsigned short *event_fields, int n_event_fields, dcgmHandle_t handle,
                     dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup, long long since,
                     dcgmc_drain_stats *stats);

/*
 * One dcgmGetValuesSince_v2 call whose callback only counts the records:
 * what the library itself costs per record, which benchmarks subtract to
 * see what a drain adds.  *records gets the count.
 */
int dcgmc_count_since(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fieldGroup,
                      long long since, long long *next, int64_t *records);

/* CDEF-END */

#endif /* DCGM_COLLECTOR_DRAIN_H */
