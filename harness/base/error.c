/* harness/base/error.c — filling a qh_error (error.h). */
#include "harness/base/error.h"

#include <stdio.h>

int qh_fail(qh_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int qh_vfail_prefixed(qh_error *err, const char *prefix, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    char problem[QH_ERROR_MAX];
    vsnprintf(problem, sizeof problem, fmt, ap);
    snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, problem);
    return -1;
}
