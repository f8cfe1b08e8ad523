/*
 * Compile-time checks that every version stamp in dcgm_abi.h encodes the
 * size of its struct, the way DCGM builds its stamps.  Member offsets are
 * checked against reference/dcgm/abi-layout.tsv by tests/unit/dcgm/test_abi_layout.py.
 */
#include "../../dcgm_abi.h"

#define STAMP(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24)))
#define CHECK_STAMP(type, ver, macro) \
    _Static_assert(STAMP(type, ver) == (macro), #macro " does not match sizeof(" #type ")")

CHECK_STAMP(dcgmFieldValue_v1, 1, dcgmFieldValue_version1);
CHECK_STAMP(dcgmFieldValue_v2, 2, dcgmFieldValue_version2);
CHECK_STAMP(dcgmInjectFieldValue_v1, 1, dcgmInjectFieldValue_version1);
CHECK_STAMP(dcgmDeviceAttributes_v3, 3, dcgmDeviceAttributes_version3);
CHECK_STAMP(dcgmDeviceIdentifiers_v1, 1, dcgmDeviceIdentifiers_version1);
CHECK_STAMP(dcgmDeviceSupportedClockSets_v1, 1, dcgmDeviceSupportedClockSets_version1);
CHECK_STAMP(dcgmClockSet_v1, 1, dcgmClockSet_version1);
CHECK_STAMP(dcgmDeviceThermals_v1, 1, dcgmDeviceThermals_version1);
CHECK_STAMP(dcgmDevicePowerLimits_v1, 1, dcgmDevicePowerLimits_version1);
CHECK_STAMP(dcgmDeviceMemoryUsage_v1, 1, dcgmDeviceMemoryUsage_version1);
CHECK_STAMP(dcgmDeviceSettings_v2, 2, dcgmDeviceSettings_version2);
CHECK_STAMP(dcgmConnectV2Params_v1, 1, dcgmConnectV2Params_version1);
CHECK_STAMP(dcgmConnectV2Params_v2, 2, dcgmConnectV2Params_version2);
CHECK_STAMP(dcgmConnectV3Params_v1, 1, dcgmConnectV3Params_version1);
CHECK_STAMP(dcgmStartEmbeddedV2Params_v1, 1, dcgmStartEmbeddedV2Params_version1);
CHECK_STAMP(dcgmStartEmbeddedV2Params_v2, 2, dcgmStartEmbeddedV2Params_version2);
CHECK_STAMP(dcgmStartEmbeddedV2Params_v3, 3, dcgmStartEmbeddedV2Params_version3);
CHECK_STAMP(dcgmGroupInfo_v3, 3, dcgmGroupInfo_version3);
CHECK_STAMP(dcgmFieldGroupInfo_v1, 1, dcgmFieldGroupInfo_version1);
CHECK_STAMP(dcgmAllFieldGroup_v1, 1, dcgmAllFieldGroup_version1);
CHECK_STAMP(dcgmHealthResponse_v5, 5, dcgmHealthResponse_version5);
CHECK_STAMP(dcgmHealthSetParams_v2, 2, dcgmHealthSetParams_version2);
CHECK_STAMP(dcgmMigHierarchy_v2, 2, dcgmMigHierarchy_version2);
CHECK_STAMP(dcgmCpuHierarchyOwnedCores_v1, 1, dcgmCpuHierarchyOwnedCores_version1);
CHECK_STAMP(dcgmCpuHierarchy_v1, 1, dcgmCpuHierarchy_version1);
CHECK_STAMP(dcgmCpuHierarchy_v2, 2, dcgmCpuHierarchy_version2);
CHECK_STAMP(dcgmProfGetMetricGroups_v3, 3, dcgmProfGetMetricGroups_version3);
CHECK_STAMP(dcgmVersionInfo_v2, 2, dcgmVersionInfo_version2);
CHECK_STAMP(dcgmHostengineHealth_v1, 1, dcgmHostengineHealth_version1);
CHECK_STAMP(dcgmCreateFakeEntities_v2, 2, dcgmCreateFakeEntities_version2);
CHECK_STAMP(dcgmFieldSummaryRequest_v1, 1, dcgmFieldSummaryRequest_version1);
CHECK_STAMP(dcgmEnvVarInfo_v1, 1, dcgmEnvVarInfo_version1);
CHECK_STAMP(dcgmConfig_v2, 2, dcgmConfig_version2);
CHECK_STAMP(dcgmPolicy_v1, 1, dcgmPolicy_version1);
CHECK_STAMP(dcgmPolicyCallbackResponse_v2, 2, dcgmPolicyCallbackResponse_version2);
_Static_assert(sizeof(dcgm_field_meta_t) == 72, "dcgm_field_meta_t is 72 bytes");
CHECK_STAMP(dcgmDeviceTopology_v1, 1, dcgmDeviceTopology_version1);
CHECK_STAMP(dcgmDeviceTopology_v2, 2, dcgmDeviceTopology_version2);
CHECK_STAMP(dcgmGroupTopology_v1, 1, dcgmGroupTopology_version1);
CHECK_STAMP(dcgmGroupTopology_v2, 2, dcgmGroupTopology_version2);
CHECK_STAMP(dcgmNvLinkP2PStatus_v1, 1, dcgmNvLinkP2PStatus_version1);
