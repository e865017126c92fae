/* harness/base/numparse.c — strict numbers (harness/base/numparse.h). */
#include "harness/base/numparse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

int qh_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !all_digits(s))
        return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

int qh_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s)
        return -1;
    int neg = s[0] == '-';
    uint64_t mag;
    if (neg && min >= 0)
        return -1;
    if (qh_parse_u64(s + neg, (uint64_t)INT64_MAX + (uint64_t)neg, &mag) != 0)
        return -1;
    int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int qh_parse_int(const char *s, int min, int max, int *out)
{
    int64_t v;
    if (qh_parse_i64(s, min, max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

int qh_parse_double(const char *s, double min, double max, double *out)
{
    if (!s)
        return -1;
    const char *p = s;
    if (*p == '-') {
        if (!(min < 0))
            return -1;
        p++;
    }
    int digits = 0, dot = 0;
    for (const char *q = p; *q; q++) {
        if (*q >= '0' && *q <= '9')
            digits++;
        else if (*q == '.' && !dot)
            dot = 1;
        else
            return -1;
    }
    if (!digits)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

int qh_parse_bytes(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    size_t n = strlen(s);
    unsigned shift = 0;
    switch (s[n - 1]) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    char buf[32];
    size_t digits = shift ? n - 1 : n;
    if (digits == 0 || digits >= sizeof buf)
        return -1;
    memcpy(buf, s, digits);
    buf[digits] = '\0';
    uint64_t v;
    if (qh_parse_u64(buf, UINT64_MAX >> shift, &v) != 0)
        return -1;
    *out = v << shift;
    return 0;
}

int qh_parse_shape(const char *s, int64_t max, int64_t out[3])
{
    char buf[64];
    int64_t v[3];
    if (strlen(s) >= sizeof buf)
        return -1;
    memcpy(buf, s, strlen(s) + 1);
    char *part = buf;
    for (int d = 0; d < 3; d++) {
        char *x = strchr(part, 'x');
        if ((d < 2) != (x != NULL))
            return -1;
        if (x)
            *x = '\0';
        if (qh_parse_i64(part, 0, max, &v[d]))
            return -1;
        part = x ? x + 1 : NULL;
    }
    memcpy(out, v, sizeof v);
    return 0;
}
