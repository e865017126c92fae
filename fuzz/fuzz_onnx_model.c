/* fuzz/fuzz_onnx_model.c — the ModelProto reader (harness/io/onnx_io.h).
 *
 * Property: reading never crashes or leaks; what it accepts survives write-then-read exactly:
 * parse(x) = m1, encode(m1) = e1, parse(e1) = m2 must give m2 == m1 (every field the reader
 * keeps) and encode(m2) == e1. A violation aborts with the signature
 * onnx-model-roundtrip-difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/roundtrip.h"
#include "harness/io/onnx_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static void fail(const char *what, const char *detail)
{
    qh_fz_roundtrip_difference("onnx-model-roundtrip-difference", what, detail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* qh_model is large (tens of KiB): heap, not stack */
    qh_model *m1 = malloc(sizeof *m1), *m2 = malloc(sizeof *m2);
    if (!m1 || !m2) {
        free(m1);
        free(m2);
        return 0;
    }
    qh_error err;
    uint8_t *e1 = NULL, *e2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (qh_parse_model(data, size, "<fuzz>", m1, &err) == 0) {
        if (qh_encode_model(m1, &e1, &n1, &err) != 0)
            fail("a model the reader accepted cannot be written", err.msg);
        if (qh_parse_model(e1, n1, "<re-encoded>", m2, &err) != 0)
            fail("the writer's output does not read back", err.msg);
        /* the reader zero-fills before parsing, so unused bytes compare equal too */
        if (memcmp(m1, m2, sizeof *m1) != 0)
            fail("the model read back differs from the one written", NULL);
        if (qh_encode_model(m2, &e2, &n2, &err) != 0)
            fail("the re-read model cannot be written", err.msg);
        if (n1 != n2 || memcmp(e1, e2, n1) != 0)
            fail("writing is not a fixed point", NULL);
    }
    free(e1);
    free(e2);
    free(m1);
    free(m2);
    return 0;
}
