/*
 * Field metadata lookups: the simulator's internal sim_field_meta*() and the
 * exported DcgmField* functions of DCGM's C ABI.
 *
 * The metadata itself is static (field_table.c, generated), so nothing is
 * built or freed.  DcgmFieldsInit / DcgmFieldsTerm only flip a flag, because
 * real DCGM hands out NULL from DcgmFieldGetById until DcgmFieldsInit has
 * run, and clients that forget the call must see that here too.  The
 * simulator itself never depends on the flag.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "../dcgm_functions.h"

/* Defined in the generated field_table.c; these declarations must match it. */
#define SIM_INTERNAL __attribute__((visibility("hidden")))
SIM_INTERNAL extern const unsigned int sim_field_count;
SIM_INTERNAL extern const dcgm_field_meta_t sim_field_table[];
SIM_INTERNAL extern const dcgm_field_meta_t *const sim_field_by_id[DCGM_FI_MAX_FIELDS];
SIM_INTERNAL extern const unsigned short sim_field_tag_order[];

static atomic_bool fields_initialized;

const dcgm_field_meta_t *sim_field_meta(unsigned short fieldId)
{
    if (fieldId >= DCGM_FI_MAX_FIELDS)
        return NULL;
    return sim_field_by_id[fieldId];
}

static int compare_tag_to_entry(const void *tag, const void *entry)
{
    const unsigned short index = *(const unsigned short *)entry;
    return strcmp((const char *)tag, sim_field_table[index].tag);
}

const dcgm_field_meta_t *sim_field_meta_by_tag(const char *tag)
{
    if (tag == NULL)
        return NULL;
    const unsigned short *found = bsearch(tag, sim_field_tag_order, sim_field_count,
                                          sizeof sim_field_tag_order[0], compare_tag_to_entry);
    return found == NULL ? NULL : &sim_field_table[*found];
}

int DcgmFieldsInit(void)
{
    atomic_store_explicit(&fields_initialized, true, memory_order_release);
    return 0;
}

int DcgmFieldsTerm(void)
{
    atomic_store_explicit(&fields_initialized, false, memory_order_release);
    return 0;
}

static bool fields_ready(void)
{
    return atomic_load_explicit(&fields_initialized, memory_order_acquire);
}

dcgm_field_meta_p DcgmFieldGetById(unsigned short fieldId)
{
    return fields_ready() ? sim_field_meta(fieldId) : NULL;
}

dcgm_field_meta_p DcgmFieldGetByTag(const char *tag)
{
    return fields_ready() ? sim_field_meta_by_tag(tag) : NULL;
}

const char *DcgmFieldsGetEntityGroupString(dcgm_field_entity_group_t entityGroupId)
{
    switch (entityGroupId) {
    case DCGM_FE_GPU:
        return "GPU";
    case DCGM_FE_VGPU:
        return "vGPU";
    case DCGM_FE_SWITCH:
        return "Switch";
    case DCGM_FE_GPU_I:
        return "GPU_I";
    case DCGM_FE_GPU_CI:
        return "GPU_CI";
    case DCGM_FE_LINK:
        return "LINK";
    case DCGM_FE_CPU:
        return "CPU";
    case DCGM_FE_CPU_CORE:
        return "CPU_CORE";
    case DCGM_FE_CONNECTX:
        return "ConnectX";
    default:
        return "None";
    }
}
