/*
 * engine_log.h -- DCGM's debug log: one file per process, lines filtered by
 * a severity, configured the way dcgmStartEmbedded_v2 and nv-hostengine
 * configure DCGM's logger (DCGM: dcgmlib/src/DcgmApi.cpp, StartEmbeddedV2;
 * common/DcgmLogging.cpp, helperGetLogSettingFromArgAndEnv):
 *   - the file: the caller's name if it gives one, else $__DCGM_DBG_FILE,
 *     else /var/log/nv-hostengine.log; "-" is standard output;
 *   - the severity: the caller's unless DcgmLoggingSeverityUnspecified,
 *     else $__DCGM_DBG_LVL (NONE FATAL ERROR WARN INFO DEBUG VERB, any
 *     case), else ERROR; a name that is none of these is ERROR.
 * The first configuration of a process picks the file; later ones only
 * change the severity, as DCGM's logger is initialised once.  The file is
 * opened when the first line passes the filter.
 */
#ifndef DCGM_SIM_ENGINE_LOG_H
#define DCGM_SIM_ENGINE_LOG_H

#include "../../dcgm_abi.h"

#define ENGINE_LOG_FILE_ENV "__DCGM_DBG_FILE"
#define ENGINE_LOG_LEVEL_ENV "__DCGM_DBG_LVL"
#define ENGINE_LOG_DEFAULT_FILE "/var/log/nv-hostengine.log"

void engine_log_configure(const char *file, DcgmLoggingSeverity_t severity);
/* The severity a name means, DcgmLoggingSeverityUnspecified for no such name. */
DcgmLoggingSeverity_t engine_log_severity_from_name(const char *name);
/* Changes the severity only (dcgmHostengineSetLoggingSeverity). */
void engine_log_set_severity(DcgmLoggingSeverity_t severity);
/* The name DCGM prints for a severity ("VERB" for verbose), "Unknown" out of range. */
const char *engine_log_severity_name(DcgmLoggingSeverity_t severity);
/* Whether a line of this severity would be written now. */
int engine_log_enabled(DcgmLoggingSeverity_t severity);
/* Writes "YYYY-mm-dd HH:MM:SS.mmm SEV [pid:tid] message [file:line] [function]". */
void engine_log_write(DcgmLoggingSeverity_t severity, const char *src, int line, const char *func,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define ENGINE_LOG(severity, ...) engine_log_write((severity), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define ENGINE_LOG_ERROR(...) ENGINE_LOG(DcgmLoggingSeverityError, __VA_ARGS__)
#define ENGINE_LOG_WARNING(...) ENGINE_LOG(DcgmLoggingSeverityWarning, __VA_ARGS__)
#define ENGINE_LOG_INFO(...) ENGINE_LOG(DcgmLoggingSeverityInfo, __VA_ARGS__)
#define ENGINE_LOG_DEBUG(...) ENGINE_LOG(DcgmLoggingSeverityDebug, __VA_ARGS__)
#define ENGINE_LOG_VERBOSE(...) ENGINE_LOG(DcgmLoggingSeverityVerbose, __VA_ARGS__)

#endif /* DCGM_SIM_ENGINE_LOG_H */
