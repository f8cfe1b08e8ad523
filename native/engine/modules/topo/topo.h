/*
 * topo.h -- chips and how they connect (engine_topo.c): architectures,
 * device and group topologies, GPU selection by topology, NvLink P2P.
 */
#ifndef DCGM_SIM_MODULE_TOPO_H
#define DCGM_SIM_MODULE_TOPO_H

#include "../../core/core.h"

/* Topologies are always the v2
 * records; the API converts for v1 callers. */
int engine_gpu_chip_arch(sim_engine *engine, unsigned int gpu, unsigned int *arch);
int engine_device_topology(sim_engine *engine, unsigned int gpu, dcgmDeviceTopology_v2 *out);
int engine_group_topology(sim_engine *engine, dcgmGpuGrp_t group, dcgmGroupTopology_v2 *out);
int engine_select_gpus_by_topology(sim_engine *engine, uint64_t input, unsigned int num_gpus,
                                   uint64_t hints, uint64_t *output);
int engine_nvlink_p2p_status(sim_engine *engine, dcgmNvLinkP2PStatus_v1 *status);

#endif /* DCGM_SIM_MODULE_TOPO_H */
