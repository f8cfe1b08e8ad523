/*
 * errorString(), DCGM's exported text for a dcgmReturn_t.
 *
 * The real library has no dcgmErrorString; clients look this name up.  It
 * returns NULL for a code it does not know (there is no -2, nor any positive
 * code), and callers rely on that to print the number instead.
 */
#include <stddef.h>

#include "../../dcgm_abi.h"
#include "../../dcgm_functions.h"

const char *errorString(dcgmReturn_t result)
{
    switch (result) {
    case DCGM_ST_OK: return "Success";
    case DCGM_ST_BADPARAM: return "Bad parameter passed to function";
    case DCGM_ST_GENERIC_ERROR: return "Generic unspecified error";
    case DCGM_ST_MEMORY: return "Out of memory";
    case DCGM_ST_NOT_CONFIGURED: return "Setting or object is not configured";
    case DCGM_ST_NOT_SUPPORTED: return "Feature not supported";
    case DCGM_ST_INIT_ERROR: return "DCGM initialization failed";
    case DCGM_ST_NVML_ERROR: return "NVML returned an error";
    case DCGM_ST_PENDING: return "Object is in a pending state";
    case DCGM_ST_UNINITIALIZED: return "DCGM is not initialized";
    case DCGM_ST_TIMEOUT: return "Timed out waiting for the operation";
    case DCGM_ST_VER_MISMATCH: return "Structure version does not match the library";
    case DCGM_ST_UNKNOWN_FIELD: return "Field id is not known";
    case DCGM_ST_NO_DATA: return "No data is available";
    case DCGM_ST_STALE_DATA: return "Data is older than expected";
    case DCGM_ST_NOT_WATCHED: return "Field is not being watched";
    case DCGM_ST_NO_PERMISSION: return "Permission denied";
    case DCGM_ST_GPU_IS_LOST: return "GPU has fallen off the bus or is otherwise inaccessible";
    case DCGM_ST_RESET_REQUIRED: return "GPU needs a reset";
    case DCGM_ST_FUNCTION_NOT_FOUND: return "Function is not present in the loaded library";
    case DCGM_ST_CONNECTION_NOT_VALID: return "Connection to the host engine is invalid or was lost";
    case DCGM_ST_GPU_NOT_SUPPORTED: return "GPU is not supported by DCGM";
    case DCGM_ST_GROUP_INCOMPATIBLE: return "GPUs of the group are not of one kind";
    case DCGM_ST_MAX_LIMIT: return "Limit on the number of objects reached";
    case DCGM_ST_LIBRARY_NOT_FOUND: return "A required library could not be loaded";
    case DCGM_ST_DUPLICATE_KEY: return "An object with that key already exists";
    case DCGM_ST_GPU_IN_SYNC_BOOST_GROUP: return "GPU already belongs to a sync boost group";
    case DCGM_ST_GPU_NOT_IN_SYNC_BOOST_GROUP: return "GPU does not belong to a sync boost group";
    case DCGM_ST_REQUIRES_ROOT: return "Operation requires root privileges";
    case DCGM_ST_NVVS_ERROR: return "Validation suite reported an error";
    case DCGM_ST_INSUFFICIENT_SIZE: return "Buffer is too small for the result";
    case DCGM_ST_FIELD_UNSUPPORTED_BY_API: return "Field cannot be used with this call";
    case DCGM_ST_MODULE_NOT_LOADED: return "DCGM module could not be loaded";
    case DCGM_ST_IN_USE: return "Resource is in use";
    case DCGM_ST_GROUP_IS_EMPTY: return "Group has no entities";
    case DCGM_ST_PROFILING_NOT_SUPPORTED: return "Profiling is not supported on this system";
    case DCGM_ST_PROFILING_LIBRARY_ERROR: return "Profiling library reported an error";
    case DCGM_ST_PROFILING_MULTI_PASS: return "Requested metrics would need several profiling passes";
    case DCGM_ST_DIAG_ALREADY_RUNNING: return "A diagnostic is already running";
    case DCGM_ST_DIAG_BAD_JSON: return "Diagnostic produced malformed JSON";
    case DCGM_ST_DIAG_BAD_LAUNCH: return "Diagnostic could not be started";
    case DCGM_ST_DIAG_UNUSED: return "Unused diagnostic status";
    case DCGM_ST_DIAG_THRESHOLD_EXCEEDED: return "A diagnostic threshold was exceeded";
    case DCGM_ST_INSUFFICIENT_DRIVER_VERSION: return "Driver is too old for this operation";
    case DCGM_ST_INSTANCE_NOT_FOUND: return "GPU instance does not exist";
    case DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND: return "Compute instance does not exist";
    case DCGM_ST_CHILD_NOT_KILLED: return "Child process could not be stopped";
    case DCGM_ST_3RD_PARTY_LIBRARY_ERROR: return "Third-party library reported an error";
    case DCGM_ST_INSUFFICIENT_RESOURCES: return "Not enough resources for the operation";
    case DCGM_ST_PLUGIN_EXCEPTION: return "Diagnostic plugin raised an exception";
    case DCGM_ST_NVVS_ISOLATE_ERROR: return "Validation suite found an error that needs the GPU isolated";
    case DCGM_ST_NVVS_BINARY_NOT_FOUND: return "Validation suite binary was not found";
    case DCGM_ST_NVVS_KILLED: return "Validation suite was killed";
    case DCGM_ST_PAUSED: return "Operation is paused";
    case DCGM_ST_ALREADY_INITIALIZED: return "Already initialized";
    case DCGM_ST_NVML_NOT_LOADED: return "NVML is not loaded";
    case DCGM_ST_NVML_DRIVER_TIMEOUT: return "NVML timed out talking to the driver";
    case DCGM_ST_NVVS_NO_AVAILABLE_TEST: return "No validation test is available";
    case DCGM_ST_MNDIAG_CONNECTION_NOT_AVAILABLE: return "Multi-node diagnostic connection is not available";
    case DCGM_ST_MNDIAG_CONNECTION_UNAUTHORIZED: return "Multi-node diagnostic connection was refused";
    case DCGM_ST_REMOTE_SSH_CONNECTION_FAILED: return "SSH connection to a remote node failed";
    case DCGM_ST_CHILD_SPAWN_FAILED: return "Child process could not be started";
    case DCGM_ST_FILE_IO_ERROR: return "File input/output error";
    case DCGM_ST_CHILD_SIGNAL_RECEIVED: return "Child process was ended by a signal";
    case DCGM_ST_CALLER_ALREADY_STOPPED: return "Caller has already stopped";
    case DCGM_ST_DIAG_STOPPED: return "Diagnostic was stopped";
    case DCGM_ST_GPUS_DETACHED: return "GPUs are detached";
    }
    return NULL;
}
