/* harness/base/error.h — the harness's error: one message, naming what failed (a file, a field, a
 * limit), filled by the function that failed and returned -1.
 */
#ifndef QMM_HARNESS_ERROR_H
#define QMM_HARNESS_ERROR_H

#include <stdarg.h>

/* Room for two paths of PATH_MAX and what is said about them: a message names the file and
 * the field after the path, and a long path must not push them out (a case directory of 420
 * characters left "input_0.pb: TensorProto.raw_data: ..." out of a 512-byte message). */
#define QH_ERROR_MAX 9216

typedef struct qh_error {
    char msg[QH_ERROR_MAX];
} qh_error;

/* Sets err->msg from the format (nothing when err is NULL); returns -1, for `return
 * qh_fail(err, ...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int qh_fail(qh_error *err, const char *fmt, ...);

/* Sets err->msg to "<prefix>: <the format's text>" (nothing when err is NULL); -1. A message
 * longer than QH_ERROR_MAX keeps its beginning. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 0)))
#endif
int qh_vfail_prefixed(qh_error *err, const char *prefix, const char *fmt, va_list ap);

#endif /* QMM_HARNESS_ERROR_H */
