/*
 * core_internal.h -- what the files of the cache core (native/engine/core/)
 * share beyond core.h.  Nothing outside the folder includes it.
 *
 * Every function named *_locked expects the caller to hold engine->lock.
 */
#ifndef DCGM_SIM_CORE_INTERNAL_H
#define DCGM_SIM_CORE_INTERNAL_H

#include "core.h"

/* engine_core.c */
unsigned int engine_id32(uintptr_t id);

/* engine_modules.c: the module table at creation (before the engine is shared) */
void engine_admin_init_locked(sim_engine *e);
/* A GPU, GPU instance or compute instance: what a detached driver hides. */
int engine_admin_hidden_locked(const sim_engine *e, dcgm_field_entity_group_t group);
/* Whether nothing of an entity of this group is sampled now: its GPU is
 * detached, or paused with the rest of telemetry. */
int engine_admin_idle_locked(const sim_engine *e, dcgm_field_entity_group_t group);

/* engine_modules.c: each hook of the engine's modules (core.h), in the
 * table's order.  init and add_entities stop at the first failure; the
 * sampling hooks at the first module that answers, their result (-1 or 0
 * when none does). */
int engine_modules_init(sim_engine *e);
int engine_modules_add_entities(sim_engine *e);
void engine_modules_free(sim_engine *e);
void engine_modules_release_owner_locked(sim_engine *e, engine_owner owner);
int engine_modules_sample_series_locked(sim_engine *e, const engine_entity *ent,
                                        unsigned short field_id, int64_t now_us, sim_value *out);
int engine_modules_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                 int64_t t_rel, sim_value *out);
void engine_modules_overlay_locked(const sim_engine *e, unsigned int gpu, unsigned short field_id,
                                   sim_value *out);
void engine_modules_storing_locked(sim_engine *e, const engine_series *s, const engine_sample *value);
void engine_modules_stored_locked(sim_engine *e, const engine_series *s, int64_t ts);

/* MIG instances (engine_mig.c): the profile, its name, and what an instance reads where it
 * differs from its GPU (1 when *out is filled, 0 to read the GPU's value) */
const sim_mig_profile *engine_instance_mig_profile(const sim_engine *e, const engine_entity *ent);
const char *engine_instance_profile(const sim_engine *e, const engine_entity *ent);
int engine_instance_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                  int64_t t_rel, sim_value *out);

/* engine_levels.c: the scenario's NvSwitches (and their ports) and Grace CPUs */
int engine_levels_init(sim_engine *e, unsigned int gpus);
/* 1 with *out filled when ent is one of the scenario's switches, switch ports or CPUs, else 0 */
int engine_levels_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                                int64_t t_rel, sim_value *out);

/* engine_groups.c */
int engine_groups_init(sim_engine *e);
void engine_groups_free(sim_engine *e);
const engine_field_group *engine_field_group_locked(const sim_engine *e, dcgmFieldGrp_t id);
void engine_groups_release_owner_locked(sim_engine *e, engine_owner owner);

/* engine_store.c */
void engine_series_remove_locked(sim_engine *e, engine_series *s);
void engine_series_free_all_locked(sim_engine *e);
void engine_ring_clear(engine_ring *r);
void engine_blank_sample(char type, int64_t code_offset, engine_sample *out, char *strbuf,
                         size_t strlen);

/* engine_link.c: DCGM_FE_LINK entities, found (and kept) by their packed id;
 * NULL for a link whose owner or index does not exist */
const engine_entity *engine_link_entity_locked(const sim_engine *e, dcgm_field_eid_t raw);
void engine_links_free(sim_engine *e);
/* A link's own reading of field_id into out: 1 when ent is a link (out filled), else 0 */
int engine_link_sample_locked(sim_engine *e, const engine_entity *ent, unsigned short field_id,
                              int64_t t_rel, sim_value *out);

/* engine_watch.c */
int64_t engine_next_due_locked(const sim_engine *e);

/* engine_read.c */
int engine_records_push(engine_record_buf *buf, const engine_record *rec);
void engine_records_free(engine_record_buf *buf);
void engine_record_to_v1(const engine_record *rec, dcgmFieldValue_v1 *out);
void engine_record_blank(engine_record *rec, int status);
void engine_record_from_sample(engine_record *rec, const engine_sample *s);
void engine_latest_record_locked(sim_engine *e, dcgm_field_entity_group_t group,
                                 dcgm_field_eid_t entity, unsigned short field_id,
                                 engine_record *rec);

#endif /* DCGM_SIM_CORE_INTERNAL_H */
