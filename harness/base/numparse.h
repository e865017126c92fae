/* harness/base/numparse.h — strict numbers for command-line options and text files.
 *
 * Unlike strtol/strtod these accept exactly one form: decimal digits, an optional leading
 * '-' only where negative values are allowed, no spaces, no '+', no trailing characters, no
 * overflow. So `--shard 1/0002x`, `--seed " -1"` and `--count 1e3` are errors, not 1/2,
 * 2^64 - 1 and 1. Each returns 0, or -1 leaving *out unchanged.
 */
#ifndef QMM_HARNESS_NUMPARSE_H
#define QMM_HARNESS_NUMPARSE_H

#include <stdint.h>

int qh_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int qh_parse_u64(const char *s, uint64_t max, uint64_t *out);
int qh_parse_int(const char *s, int min, int max, int *out);
/* A plain decimal number: digits with an optional fraction ("30", "0.5", ".25"), a leading
 * '-' only when min < 0; no exponent, hex, inf or nan; min <= value <= max. */
int qh_parse_double(const char *s, double min, double max, double *out);
/* A byte count with an optional suffix K, M, G or T (powers of 1024): "512M", "4G", "0". */
int qh_parse_bytes(const char *s, uint64_t *out);
/* A matrix-multiply shape "MxKxN": three of qh_parse_i64's numbers, each in 0 .. max, joined
 * by 'x' ("16x4096x4096"); out[0..2] = M, K, N. */
int qh_parse_shape(const char *s, int64_t max, int64_t out[3]);

#endif /* QMM_HARNESS_NUMPARSE_H */
