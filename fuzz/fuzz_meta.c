/* fuzz/fuzz_meta.c — the qmm.meta reader (harness/io/meta.h).
 *
 * Property: reading never crashes; what it accepts is a fixed point of format-then-read:
 * parse(x) = m1, format(m1) = f1, parse(f1) = m2 must give m2 == m1 (unknown keys aside:
 * they are counted, not kept, so formatting drops them) and format(m2) == f1. A violation
 * aborts with the signature meta-roundtrip-difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/roundtrip.h"
#include "harness/io/meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static void fail(const char *what, const char *detail)
{
    qh_fz_roundtrip_difference("meta-roundtrip-difference", what, detail);
}

/* The formatted text, malloc'd; NULL when it does not fit the sizes qh_meta allows. */
static char *format(const qh_meta *m, size_t *len)
{
    int n = qh_meta_format(m, NULL, 0);
    if (n < 0)
        fail("qh_meta_format failed", NULL);
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return NULL;
    if (qh_meta_format(m, buf, (size_t)n + 1) != n)
        fail("qh_meta_format gave two lengths", NULL);
    *len = (size_t)n;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qh_meta m1, m2;
    qh_error err;
    if (qh_meta_parse((const char *)data, size, "<fuzz>", &m1, &err) != 0)
        return 0;
    size_t n1 = 0, n2 = 0;
    char *f1 = format(&m1, &n1);
    if (!f1)
        return 0;
    if (qh_meta_parse(f1, n1, "<formatted>", &m2, &err) != 0)
        fail("the formatted text does not read back", err.msg);
    m1.n_unknown = m2.n_unknown = 0;
    memset(m1.first_unknown, 0, sizeof m1.first_unknown);
    memset(m2.first_unknown, 0, sizeof m2.first_unknown);
    if (memcmp(&m1, &m2, sizeof m1) != 0)
        fail("the metadata read back differs from the one formatted", f1);
    char *f2 = format(&m2, &n2);
    if (f2 && (n1 != n2 || memcmp(f1, f2, n1) != 0))
        fail("formatting is not a fixed point", f1);
    free(f1);
    free(f2);
    return 0;
}
