/*
 * dcgm_functions.h -- the DCGM entry points this project declares, as one list.
 *
 * Each row is DCGM_FN(return type, name, (parameters), (argument names), value
 * returned when the loaded library lacks the symbol).  The list is expanded
 * three ways:
 *   - here, into ordinary prototypes (the simulator defines these functions,
 *     so the compiler checks every definition against its row);
 *   - in native/ext/loader.c, into a table of dlsym'd pointers and forwarding
 *     wrappers that answer DCGM_ST_FUNCTION_NOT_FOUND for a missing symbol;
 *   - in dcgm_collector/ext/_build.py, which reads the rows as text to
 *     emit cffi declarations.
 * Keep one row per line, and the same spacing, so that reader stays simple.
 *
 * The dcgmSim* rows are extensions only the simulated library exports; on a
 * real libdcgm they answer DCGM_ST_FUNCTION_NOT_FOUND.
 */
#ifndef DCGM_COLLECTOR_DCGM_FUNCTIONS_H
#define DCGM_COLLECTOR_DCGM_FUNCTIONS_H

#define DCGM_FUNCTION_LIST(DCGM_FN) \
DCGM_FN(dcgmReturn_t, dcgmInit, (void), (), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmShutdown, (void), (), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStartEmbedded, (dcgmOperationMode_t opMode, dcgmHandle_t *pDcgmHandle), (opMode, pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStartEmbedded_v2, (dcgmStartEmbeddedV2Params_v1 *params), (params), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStopEmbedded, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmConnect, (const char *ipAddress, dcgmHandle_t *pDcgmHandle), (ipAddress, pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmConnect_v2, (const char *ipAddress, dcgmConnectV2Params_t *connectParams, dcgmHandle_t *pDcgmHandle), (ipAddress, connectParams, pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmConnect_v3, (const char *connectionString, dcgmConnectV3Params_t *connectParams, dcgmHandle_t *pDcgmHandle), (connectionString, connectParams, pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmDisconnect, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetAllDevices, (dcgmHandle_t pDcgmHandle, unsigned int *gpuIdList, int *count), (pDcgmHandle, gpuIdList, count), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetAllSupportedDevices, (dcgmHandle_t pDcgmHandle, unsigned int *gpuIdList, int *count), (pDcgmHandle, gpuIdList, count), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetDeviceAttributes, (dcgmHandle_t pDcgmHandle, unsigned int gpuId, dcgmDeviceAttributes_t *pDcgmAttr), (pDcgmHandle, gpuId, pDcgmAttr), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetGpuStatus, (dcgmHandle_t pDcgmHandle, unsigned int gpuId, DcgmEntityStatus_t *status), (pDcgmHandle, gpuId, status), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetEntityGroupEntities, (dcgmHandle_t dcgmHandle, dcgm_field_entity_group_t entityGroup, dcgm_field_eid_t *entities, int *numEntities, unsigned int flags), (dcgmHandle, entityGroup, entities, numEntities, flags), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupCreate, (dcgmHandle_t pDcgmHandle, dcgmGroupType_t type, const char *groupName, dcgmGpuGrp_t *pDcgmGrpId), (pDcgmHandle, type, groupName, pDcgmGrpId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupAddEntity, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId), (pDcgmHandle, groupId, entityGroupId, entityId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupAddDevice, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, unsigned int gpuId), (pDcgmHandle, groupId, gpuId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStatusCreate, (dcgmStatus_t *statusHandle), (statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStatusDestroy, (dcgmStatus_t statusHandle), (statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStatusGetCount, (dcgmStatus_t statusHandle, unsigned int *count), (statusHandle, count), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStatusPopError, (dcgmStatus_t statusHandle, dcgmErrorInfo_t *pDcgmErrorInfo), (statusHandle, pDcgmErrorInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmStatusClear, (dcgmStatus_t statusHandle), (statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupRemoveDevice, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, unsigned int gpuId), (pDcgmHandle, groupId, gpuId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupGetAllIds, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupIdList[], unsigned int *count), (pDcgmHandle, groupIdList, count), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupRemoveEntity, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId), (pDcgmHandle, groupId, entityGroupId, entityId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupDestroy, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId), (pDcgmHandle, groupId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGroupGetInfo, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmGroupInfo_t *pDcgmGroupInfo), (pDcgmHandle, groupId, pDcgmGroupInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmFieldGroupCreate, (dcgmHandle_t dcgmHandle, int numFieldIds, const unsigned short *fieldIds, const char *fieldGroupName, dcgmFieldGrp_t *dcgmFieldGroupId), (dcgmHandle, numFieldIds, fieldIds, fieldGroupName, dcgmFieldGroupId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmFieldGroupDestroy, (dcgmHandle_t dcgmHandle, dcgmFieldGrp_t dcgmFieldGroupId), (dcgmHandle, dcgmFieldGroupId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmFieldGroupGetInfo, (dcgmHandle_t dcgmHandle, dcgmFieldGroupInfo_t *fieldGroupInfo), (dcgmHandle, fieldGroupInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmFieldGroupGetAll, (dcgmHandle_t dcgmHandle, dcgmAllFieldGroup_t *allGroupInfo), (dcgmHandle, allGroupInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmWatchFields, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, long long updateFreq, double maxKeepAge, int maxKeepSamples), (pDcgmHandle, groupId, fieldGroupId, updateFreq, maxKeepAge, maxKeepSamples), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmUnwatchFields, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId), (pDcgmHandle, groupId, fieldGroupId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmWatchFieldValue, (dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fieldId, long long updateFreq, double maxKeepAge, int maxKeepSamples), (pDcgmHandle, gpuId, fieldId, updateFreq, maxKeepAge, maxKeepSamples), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmUnwatchFieldValue, (dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fieldId, int clearCache), (pDcgmHandle, gpuId, fieldId, clearCache), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmUpdateAllFields, (dcgmHandle_t pDcgmHandle, int waitForUpdate), (pDcgmHandle, waitForUpdate), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetLatestValues_v2, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, dcgmFieldValueEntityEnumeration_f enumCB, void *userData), (pDcgmHandle, groupId, fieldGroupId, enumCB, userData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetLatestValues, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, dcgmFieldValueEnumeration_f enumCB, void *userData), (pDcgmHandle, groupId, fieldGroupId, enumCB, userData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmEntityGetLatestValues, (dcgmHandle_t pDcgmHandle, dcgm_field_entity_group_t entityGroup, int entityId, unsigned short *fields, unsigned int count, dcgmFieldValue_v1 *values), (pDcgmHandle, entityGroup, entityId, fields, count, values), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmEntitiesGetLatestValues, (dcgmHandle_t pDcgmHandle, dcgmGroupEntityPair_t *entities, unsigned int entityCount, unsigned short *fields, unsigned int fieldCount, unsigned int flags, dcgmFieldValue_v2 *values), (pDcgmHandle, entities, entityCount, fields, fieldCount, flags, values), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetLatestValuesForFields, (dcgmHandle_t pDcgmHandle, int gpuId, unsigned short *fields, unsigned int count, dcgmFieldValue_v1 *values), (pDcgmHandle, gpuId, fields, count, values), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetValuesSince_v2, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, long long sinceTimestamp, long long *nextSinceTimestamp, dcgmFieldValueEntityEnumeration_f enumCB, void *userData), (pDcgmHandle, groupId, fieldGroupId, sinceTimestamp, nextSinceTimestamp, enumCB, userData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetValuesSince, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, long long sinceTimestamp, long long *nextSinceTimestamp, dcgmFieldValueEnumeration_f enumCB, void *userData), (pDcgmHandle, groupId, fieldGroupId, sinceTimestamp, nextSinceTimestamp, enumCB, userData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetMultipleValuesForField, (dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fieldId, int *count, long long startTs, long long endTs, dcgmOrder_t order, dcgmFieldValue_v1 *values), (pDcgmHandle, gpuId, fieldId, count, startTs, endTs, order, values), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(const char *, errorString, (dcgmReturn_t result), (result), NULL) \
DCGM_FN(dcgmReturn_t, dcgmHealthSet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthSystems_t systems), (pDcgmHandle, groupId, systems), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHealthSet_v2, (dcgmHandle_t pDcgmHandle, dcgmHealthSetParams_v2 *params), (pDcgmHandle, params), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHealthGet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthSystems_t *systems), (pDcgmHandle, groupId, systems), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHealthCheck, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthResponse_t *results), (pDcgmHandle, groupId, results), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetNvLinkLinkStatus, (dcgmHandle_t dcgmHandle, dcgmNvLinkStatus_v5 *linkStatus), (dcgmHandle, linkStatus), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetCacheManagerFieldInfo, (dcgmHandle_t pDcgmHandle, dcgmCacheManagerFieldInfo_v4_t *fieldInfo), (pDcgmHandle, fieldInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSetEntityNvLinkLinkState, (dcgmHandle_t dcgmHandle, dcgmSetNvLinkLinkState_v1 *linkState), (dcgmHandle, linkState), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetGpuChipArchitecture, (dcgmHandle_t dcgmHandle, unsigned int gpuId, dcgmChipArchitecture_t *chipArchitecture), (dcgmHandle, gpuId, chipArchitecture), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetDeviceTopology, (dcgmHandle_t pDcgmHandle, unsigned int gpuId, dcgmDeviceTopology_t *pDcgmDeviceTopology), (pDcgmHandle, gpuId, pDcgmDeviceTopology), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetGroupTopology, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmGroupTopology_t *pDcgmGroupTopology), (pDcgmHandle, groupId, pDcgmGroupTopology), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSelectGpusByTopology, (dcgmHandle_t pDcgmHandle, uint64_t inputGpuIds, uint32_t numGpus, uint64_t *outputGpuIds, uint64_t hintFlags), (pDcgmHandle, inputGpuIds, numGpus, outputGpuIds, hintFlags), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetNvLinkP2PStatus, (dcgmHandle_t dcgmHandle, dcgmNvLinkP2PStatus_v1 *linkStatus), (dcgmHandle, linkStatus), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetGpuInstanceHierarchy, (dcgmHandle_t dcgmHandle, dcgmMigHierarchy_v2 *hierarchy), (dcgmHandle, hierarchy), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetCpuHierarchy, (dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v1 *cpuHierarchy), (dcgmHandle, cpuHierarchy), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetCpuHierarchy_v2, (dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v2 *cpuHierarchy), (dcgmHandle, cpuHierarchy), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(unsigned int, dcgmCpuHierarchyCpuOwnsCore, (unsigned int coreId, const dcgmCpuHierarchyOwnedCores_v1 *ownedCores), (coreId, ownedCores), 0) \
DCGM_FN(dcgmReturn_t, dcgmProfGetSupportedMetricGroups, (dcgmHandle_t pDcgmHandle, dcgmProfGetMetricGroups_t *metricGroups), (pDcgmHandle, metricGroups), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmVersionInfo, (dcgmVersionInfo_t *pVersionInfo), (pVersionInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHostengineVersionInfo, (dcgmHandle_t pDcgmHandle, dcgmVersionInfo_t *pVersionInfo), (pDcgmHandle, pVersionInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHostengineIsHealthy, (dcgmHandle_t pDcgmHandle, dcgmHostengineHealth_t *heHealth), (pDcgmHandle, heHealth), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmCreateFakeEntities, (dcgmHandle_t pDcgmHandle, dcgmCreateFakeEntities_t *createFakeEntities), (pDcgmHandle, createFakeEntities), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmInjectFieldValue, (dcgmHandle_t pDcgmHandle, unsigned int gpuId, dcgmInjectFieldValue_t *dcgmInjectFieldValue), (pDcgmHandle, gpuId, dcgmInjectFieldValue), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmInjectEntityFieldValue, (dcgmHandle_t pDcgmHandle, dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId, dcgmInjectFieldValue_t *pDcgmInjectFieldValue), (pDcgmHandle, entityGroupId, entityId, pDcgmInjectFieldValue), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmEmptyCache, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(int, DcgmFieldsInit, (void), (), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(int, DcgmFieldsTerm, (void), (), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgm_field_meta_p, DcgmFieldGetById, (unsigned short fieldId), (fieldId), NULL) \
DCGM_FN(dcgm_field_meta_p, DcgmFieldGetByTag, (const char *tag), (tag), NULL) \
DCGM_FN(const char *, DcgmFieldsGetEntityGroupString, (dcgm_field_entity_group_t entityGroupId), (entityGroupId), NULL) \
DCGM_FN(dcgmReturn_t, dcgmConfigSet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pDeviceConfig, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, pDeviceConfig, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmConfigGet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int type, int count, void *deviceConfigList, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, type, count, deviceConfigList, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmConfigEnforce, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmWatchPidFields, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, long long updateFreq, double maxKeepAge, int maxKeepSamples), (pDcgmHandle, groupId, updateFreq, maxKeepAge, maxKeepSamples), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmWatchJobFields, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, long long updateFreq, double maxKeepAge, int maxKeepSamples), (pDcgmHandle, groupId, updateFreq, maxKeepAge, maxKeepSamples), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmVgpuConfigSet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pDeviceConfig, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, pDeviceConfig, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmVgpuConfigGet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int type, int count, void *deviceConfigList, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, type, count, deviceConfigList, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPolicySet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmPolicy_t *policy, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, policy, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPolicyGet, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int count, dcgmPolicy_t *policy, dcgmStatus_t statusHandle), (pDcgmHandle, groupId, count, policy, statusHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPolicyTrigger, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPolicyRegister_v2, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmPolicyCondition_t condition, fpRecvUpdates callback, uint64_t userData), (pDcgmHandle, groupId, condition, callback, userData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPolicyUnregister, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmPolicyCondition_t condition), (pDcgmHandle, groupId, condition), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmActionValidate_v2, (dcgmHandle_t pDcgmHandle, void *drd, void *response), (pDcgmHandle, drd, response), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmRunDiagnostic, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, int diagLevel, void *diagResponse), (pDcgmHandle, groupId, diagLevel, diagResponse), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetPidInfo, (dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, void *pidInfo), (pDcgmHandle, groupId, pidInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmJobGetStats, (dcgmHandle_t pDcgmHandle, char jobId[64], void *pJobInfo), (pDcgmHandle, jobId, pJobInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmIntrospectGetHostengineMemoryUsage, (dcgmHandle_t pDcgmHandle, void *memoryInfo, int waitIfNoData), (pDcgmHandle, memoryInfo, waitIfNoData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmIntrospectGetHostengineCpuUtilization, (dcgmHandle_t pDcgmHandle, void *cpuUtil, int waitIfNoData), (pDcgmHandle, cpuUtil, waitIfNoData), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmModuleGetStatuses, (dcgmHandle_t pDcgmHandle, void *moduleStatuses), (pDcgmHandle, moduleStatuses), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmModuleDenylist, (dcgmHandle_t pDcgmHandle, unsigned int moduleId), (pDcgmHandle, moduleId), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPauseTelemetryForDiag, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmResumeTelemetryForDiag, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmAttachDriver, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmDetachDriver, (dcgmHandle_t pDcgmHandle), (pDcgmHandle), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHostengineSetLoggingSeverity, (dcgmHandle_t pDcgmHandle, void *logging), (pDcgmHandle, logging), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetVgpuDeviceAttributes, (dcgmHandle_t pDcgmHandle, unsigned int gpuId, void *pDcgmVgpuDeviceAttr), (pDcgmHandle, gpuId, pDcgmVgpuDeviceAttr), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmHostengineEnvironmentVariableInfo, (dcgmHandle_t pDcgmHandle, dcgmEnvVarInfo_t *pEnvVarInfo), (pDcgmHandle, pEnvVarInfo), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetFieldSummary, (dcgmHandle_t pDcgmHandle, dcgmFieldSummaryRequest_t *request), (pDcgmHandle, request), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmGetVgpuInstanceAttributes, (dcgmHandle_t pDcgmHandle, unsigned int vgpuId, void *pDcgmVgpuInstanceAttr), (pDcgmHandle, vgpuId, pDcgmVgpuInstanceAttr), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(int, dcgmErrorGetPriorityByCode, (unsigned int code), (code), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(int, dcgmErrorGetCategoryByCode, (unsigned int code), (code), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmPowerProfileIdToName, (unsigned int id, const char **name), (id, name), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimGetStartTime, (long long *startUs), (startUs), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimGetValueAt, (unsigned int gpuId, unsigned short fieldId, long long tRelUs, dcgmFieldValue_v1 *value), (gpuId, fieldId, tRelUs, value), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimCheckScenario, (const char *spec, char *errorText, int errorTextLen), (spec, errorText, errorTextLen), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimSourceName, (char *name, int nameLen), (name, nameLen), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimFieldStats, (dcgmSimFieldStats_t *stats, int capacity, int *count), (stats, capacity, count), DCGM_ST_FUNCTION_NOT_FOUND) \
DCGM_FN(dcgmReturn_t, dcgmSimServe, (const char *address, unsigned int port, int isUnixSocket, const char *scenario, int readyFd, int stopFd, char *errorText, int errorTextLen), (address, port, isUnixSocket, scenario, readyFd, stopFd, errorText, errorTextLen), DCGM_ST_FUNCTION_NOT_FOUND)

#define DCGM_DECLARE_PROTOTYPE(ret, name, params, args, missing) ret name params;
DCGM_FUNCTION_LIST(DCGM_DECLARE_PROTOTYPE)
#undef DCGM_DECLARE_PROTOTYPE

#endif /* DCGM_COLLECTOR_DCGM_FUNCTIONS_H */
