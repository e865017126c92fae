/* fuzz/fuzz_onnx_tensor.c — the TensorProto reader (harness/io/onnx_io.h).
 *
 * Property: reading never crashes or leaks, whatever the bytes; and what it accepts is a
 * fixed point of write-then-read: parse(x) = t1, encode(t1) = e1, parse(e1) = t2 must give
 * t2 == t1 and encode(t2) == e1 byte for byte. A violation aborts with the signature
 * onnx-tensor-roundtrip-difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/roundtrip.h"
#include "harness/io/onnx_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static void fail(const char *what, const char *detail)
{
    qh_fz_roundtrip_difference("onnx-tensor-roundtrip-difference", what, detail);
}

static size_t payload(const qmm_tensor *t)
{
    return qmm_dtype_bytes(t->dtype, qmm_tensor_numel(t)); /* sub-byte types packed */
}

static int same(const qh_tensor *x, const qh_tensor *y)
{
    if (x->t.dtype != y->t.dtype || x->t.rank != y->t.rank || strcmp(x->name, y->name) != 0)
        return 0;
    for (int32_t i = 0; i < x->t.rank; i++)
        if (x->t.dims[i] != y->t.dims[i])
            return 0;
    size_t n = payload(&x->t);
    return n == 0 || (x->t.data && y->t.data && memcmp(x->t.data, y->t.data, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qh_tensor t1, t2;
    qh_error err;
    if (qh_parse_tensor(data, size, "<fuzz>", &t1, &err) != 0)
        return 0;
    uint8_t *e1 = NULL, *e2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (qh_encode_tensor(&t1.t, t1.name, &e1, &n1, &err) != 0)
        fail("a tensor the reader accepted cannot be written", err.msg);
    if (qh_parse_tensor(e1, n1, "<re-encoded>", &t2, &err) != 0)
        fail("the writer's output does not read back", err.msg);
    if (!same(&t1, &t2))
        fail("the tensor read back differs from the one written", NULL);
    if (qh_encode_tensor(&t2.t, t2.name, &e2, &n2, &err) != 0)
        fail("the re-read tensor cannot be written", err.msg);
    if (n1 != n2 || memcmp(e1, e2, n1) != 0)
        fail("writing is not a fixed point", NULL);
    free(e1);
    free(e2);
    qh_tensor_free(&t1);
    qh_tensor_free(&t2);
    return 0;
}
