/* tests/test_onnx_io.c — the protobuf reader/writer and ONNX node-test I/O.
 *
 * The real files come from vectors/onnx (the committed copy of onnx's own backend node tests), so the
 * reader is checked against bytes libprotobuf wrote, not only against our own writer. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/io/onnx_io.h"
#include "harness/io/pb.h"
#include "harness/io/pb_walk.h"

/* ---- helpers ------------------------------------------------------------------------- */

static const char *tests_dir(void)
{
    static char path[4096];
    const char *src = getenv("QMM_SOURCE_DIR");
    if (!src)
        cr_skip_test("QMM_SOURCE_DIR is not set (run under ctest)");
    snprintf(path, sizeof path, "%s/vectors/onnx", src);
    return path;
}

static char *test_path(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tests_dir(), rel);
    return path;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *buf;
    qh_error err;
    int rc = qh_read_file(path, (size_t)1 << 24, &buf, len, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    return buf;
}

/* A heap copy of exactly `len` bytes, so ASan catches any read past the end. */
static uint8_t *exact_copy(const uint8_t *src, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    cr_assert(p);
    if (len)
        memcpy(p, src, len);
    return p;
}

static int parse_tensor_bytes(const uint8_t *buf, size_t len, qh_tensor *t, qh_error *err)
{
    uint8_t *copy = exact_copy(buf, len);
    int rc = qh_parse_tensor(copy, len, "x.pb", t, err);
    free(copy);
    return rc;
}

static int parse_model_bytes(const uint8_t *buf, size_t len, qh_model *m, qh_error *err)
{
    uint8_t *copy = exact_copy(buf, len);
    int rc = qh_parse_model(copy, len, "model.onnx", m, err);
    free(copy);
    return rc;
}

static size_t tensor_bytes(const qmm_tensor *t)
{
    return qmm_dtype_bytes(t->dtype, qmm_tensor_numel(t)); /* sub-byte types packed */
}

static void assert_tensor_eq(const qh_tensor *a, const qh_tensor *b)
{
    cr_assert_eq(a->t.dtype, b->t.dtype);
    cr_assert_eq(a->t.rank, b->t.rank);
    for (int i = 0; i < a->t.rank; i++)
        cr_assert_eq(a->t.dims[i], b->t.dims[i]);
    cr_assert_str_eq(a->name, b->name);
    size_t n = tensor_bytes(&a->t);
    if (n)
        cr_assert_eq(memcmp(a->t.data, b->t.data, n), 0);
}

/* Error expected; the message must name the file and contain `needle`. */
static void expect_tensor_error(const uint8_t *buf, size_t len, const char *needle)
{
    qh_tensor t;
    qh_error err = {{0}};
    int rc = parse_tensor_bytes(buf, len, &t, &err);
    cr_assert_eq(rc, -1, "expected an error containing '%s'", needle);
    cr_assert_null(t.t.data);
    cr_assert(strstr(err.msg, "x.pb: ") == err.msg, "message lacks the file: %s", err.msg);
    cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

static void expect_tensor_error_buf(qh_pb_buf *b, const char *needle)
{
    cr_assert(!b->failed);
    expect_tensor_error(b->data, b->len, needle);
    qh_pb_buf_free(b);
}

static void expect_model_error(const uint8_t *buf, size_t len, const char *needle)
{
    qh_model m;
    qh_error err = {{0}};
    int rc = parse_model_bytes(buf, len, &m, &err);
    cr_assert_eq(rc, -1, "expected an error containing '%s'", needle);
    cr_assert(strstr(err.msg, "model.onnx: ") == err.msg, "message lacks the file: %s",
              err.msg);
    cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

/* parse -> encode -> parse must reproduce the tensor, and encoding twice the same bytes. */
static void check_tensor_fixed_point(const qh_tensor *t)
{
    uint8_t *e1, *e2;
    size_t l1, l2;
    qh_error err;
    qh_tensor t2;
    cr_assert_eq(qh_encode_tensor(&t->t, t->name, &e1, &l1, &err), 0, "%s", err.msg);
    cr_assert_eq(parse_tensor_bytes(e1, l1, &t2, &err), 0, "%s", err.msg);
    assert_tensor_eq(t, &t2);
    cr_assert_eq(qh_encode_tensor(&t2.t, t2.name, &e2, &l2, &err), 0, "%s", err.msg);
    cr_assert_eq(l1, l2);
    cr_assert_eq(memcmp(e1, e2, l1), 0);
    qh_tensor_free(&t2);
    free(e1);
    free(e2);
}

static void check_model_fixed_point(const qh_model *m)
{
    uint8_t *e1, *e2;
    size_t l1, l2;
    qh_error err;
    qh_model *m2 = malloc(sizeof *m2);
    cr_assert(m2);
    cr_assert_eq(qh_encode_model(m, &e1, &l1, &err), 0, "%s", err.msg);
    cr_assert_eq(parse_model_bytes(e1, l1, m2, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < sizeof *m; i++)
        cr_assert_eq(((const uint8_t *)m)[i], ((const uint8_t *)m2)[i],
                     "model changed in a round trip at byte offset %zu", i);
    cr_assert_eq(qh_encode_model(m2, &e2, &l2, &err), 0, "%s", err.msg);
    cr_assert_eq(l1, l2);
    cr_assert_eq(memcmp(e1, e2, l1), 0);
    free(m2);
    free(e1);
    free(e2);
}

/* Every file of the committed node tests, NULL-terminated. */
typedef struct file_list {
    char **paths;
    size_t n, cap;
} file_list;

static void collect(const char *dir, file_list *fl)
{
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            collect(path, fl);
        } else if (strstr(de->d_name, ".pb") || strstr(de->d_name, ".onnx")) {
            if (fl->n == fl->cap) {
                fl->cap = fl->cap ? 2 * fl->cap : 64;
                fl->paths = realloc(fl->paths, fl->cap * sizeof *fl->paths);
                cr_assert(fl->paths);
            }
            fl->paths[fl->n++] = strdup(path);
        }
    }
    closedir(d);
}

static void file_list_free(file_list *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        free(fl->paths[i]);
    free(fl->paths);
}

static int is_model(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && strcmp(path + n - 5, ".onnx") == 0;
}

/* ---- real files ---------------------------------------------------------------------- */

Test(onnx_real, matmulinteger_input0)
{
    qh_tensor t;
    qh_error err;
    const char *p = test_path("onnx-1.12.0/test_matmulinteger/test_data_set_0/input_0.pb");
    cr_assert_eq(qh_read_tensor_file(p, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_UINT8);
    cr_assert_eq(t.t.rank, 2);
    cr_assert_eq(t.t.dims[0], 4);
    cr_assert_eq(t.t.dims[1], 3);
    cr_assert_str_eq(t.name, "A");
    static const uint8_t want[] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0};
    cr_assert_eq(memcmp(t.t.data, want, sizeof want), 0);
    check_tensor_fixed_point(&t);
    qh_tensor_free(&t);
    qh_tensor_free(&t); /* idempotent */
}

Test(onnx_real, matmulinteger_output0)
{
    qh_tensor t;
    qh_error err;
    const char *p = test_path("onnx-1.12.0/test_matmulinteger/test_data_set_0/output_0.pb");
    cr_assert_eq(qh_read_tensor_file(p, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_INT32);
    cr_assert_eq(t.t.rank, 2);
    cr_assert_eq(t.t.dims[0], 4);
    cr_assert_eq(t.t.dims[1], 2);
    int32_t v[8];
    memcpy(v, t.t.data, sizeof v);
    cr_assert_eq(v[0], -38);
    cr_assert_eq(v[1], -83);
    cr_assert_str_eq(t.name, "Y");
    qh_tensor_free(&t);
}

Test(onnx_real, matmulinteger_model)
{
    qh_model m;
    qh_error err;
    const char *p = test_path("onnx-1.12.0/test_matmulinteger/model.onnx");
    cr_assert_eq(qh_read_model_file(p, &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.op_type, "MatMulInteger");
    cr_assert_str_eq(m.domain, "");
    cr_assert_eq(m.ir_version, 5);
    cr_assert_str_eq(m.producer_name, "backend-test");
    cr_assert_str_eq(m.graph_name, "test_matmulinteger");
    cr_assert_eq(qh_model_opset(&m, ""), 10);
    cr_assert_eq(qh_model_opset(&m, "ai.onnx"), 10);
    cr_assert_eq(qh_model_opset(&m, "com.microsoft"), -1);
    cr_assert_eq(m.n_inputs, 4);
    cr_assert_str_eq(m.inputs[0], "A");
    cr_assert_str_eq(m.inputs[1], "B");
    cr_assert_str_eq(m.inputs[2], "a_zero_point");
    cr_assert_str_eq(m.inputs[3], "b_zero_point");
    cr_assert_eq(m.n_outputs, 1);
    cr_assert_str_eq(m.outputs[0], "Y");
    cr_assert_eq(m.n_attrs, 0);
    cr_assert_eq(m.n_graph_inputs, 4);
    cr_assert_str_eq(m.graph_inputs[0].name, "A");
    cr_assert_eq(m.graph_inputs[0].elem_type, QMM_DTYPE_UINT8);
    cr_assert_eq(m.graph_inputs[0].rank, 2);
    cr_assert_eq(m.graph_inputs[0].dims[0], 4);
    cr_assert_eq(m.graph_inputs[0].dims[1], 3);
    cr_assert_eq(m.graph_inputs[2].rank, 1);
    cr_assert_eq(m.graph_inputs[2].dims[0], 1);
    cr_assert_eq(m.n_graph_outputs, 1);
    cr_assert_eq(m.graph_outputs[0].elem_type, QMM_DTYPE_INT32);
    check_model_fixed_point(&m);
}

Test(onnx_real, qlinearmatmul_float16_scale)
{
    qh_tensor t;
    qh_error err;
    const char *p =
        test_path("onnx-1.21.0/test_qlinearmatmul_2D_int8_float16/test_data_set_0/input_1.pb");
    cr_assert_eq(qh_read_tensor_file(p, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_FLOAT16);
    cr_assert_eq(t.t.rank, 1);
    cr_assert_eq(t.t.dims[0], 1);
    cr_assert_str_eq(t.name, "a_scale");
    const uint8_t *b = t.t.data;
    cr_assert_eq(b[0] | b[1] << 8, 0x1ec2);
    qh_tensor_free(&t);

    qh_model m;
    p = test_path("onnx-1.21.0/test_qlinearmatmul_2D_int8_float16/model.onnx");
    cr_assert_eq(qh_read_model_file(p, &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.op_type, "QLinearMatMul");
    cr_assert_eq(qh_model_opset(&m, ""), 21);
    cr_assert_eq(m.n_inputs, 8);
}

Test(onnx_real, every_file_parses_and_round_trips)
{
    file_list fl = {0};
    collect(tests_dir(), &fl);
    cr_assert_geq(fl.n, 150, "only %zu files found", fl.n);
    size_t models = 0;
    for (size_t i = 0; i < fl.n; i++) {
        qh_error err;
        if (is_model(fl.paths[i])) {
            qh_model m;
            cr_assert_eq(qh_read_model_file(fl.paths[i], &m, &err), 0, "%s", err.msg);
            cr_assert(strcmp(m.op_type, "MatMulInteger") == 0 ||
                      strcmp(m.op_type, "QLinearMatMul") == 0 ||
                      strcmp(m.op_type, "DequantizeLinear") == 0);
            check_model_fixed_point(&m);
            models++;
        } else {
            qh_tensor t;
            cr_assert_eq(qh_read_tensor_file(fl.paths[i], &t, &err), 0, "%s", err.msg);
            check_tensor_fixed_point(&t);
            qh_tensor_free(&t);
        }
    }
    /* onnx 1.12.0 (3), 1.21.0, 1.22.0, 1.23.2 (9 each), 1.23.2's DequantizeLinear (14) */
    cr_assert_eq(models, 44);
    file_list_free(&fl);
}

/* Every proper prefix is either a valid (shorter) message or an error; never a crash. A
 * prefix of a tensor that parses must differ from the whole, since raw_data ends the file. */
Test(onnx_real, every_prefix)
{
    file_list fl = {0};
    collect(tests_dir(), &fl);
    for (size_t i = 0; i < fl.n; i++) {
        size_t len;
        uint8_t *buf = slurp(fl.paths[i], &len);
        for (size_t k = 0; k < len; k++) {
            qh_error err;
            if (is_model(fl.paths[i])) {
                qh_model m;
                if (parse_model_bytes(buf, k, &m, &err) != 0)
                    cr_assert(strstr(err.msg, "model.onnx: "), "%s", err.msg);
            } else {
                qh_tensor t;
                if (parse_tensor_bytes(buf, k, &t, &err) == 0)
                    qh_tensor_free(&t);
                else
                    cr_assert(strstr(err.msg, "x.pb: "), "%s", err.msg);
            }
        }
        free(buf);
    }
    file_list_free(&fl);
}

/* ---- round trips --------------------------------------------------------------------- */

static const int32_t all_dtypes[] = {
    QMM_DTYPE_FLOAT, QMM_DTYPE_UINT8, QMM_DTYPE_INT8, QMM_DTYPE_UINT16, QMM_DTYPE_INT16,
    QMM_DTYPE_INT32, QMM_DTYPE_INT64, QMM_DTYPE_BOOL, QMM_DTYPE_FLOAT16, QMM_DTYPE_DOUBLE,
    QMM_DTYPE_UINT32, QMM_DTYPE_UINT64, QMM_DTYPE_BFLOAT16, QMM_DTYPE_FLOAT8E4M3FN,
    QMM_DTYPE_FLOAT8E4M3FNUZ, QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2FNUZ,
    QMM_DTYPE_UINT4, QMM_DTYPE_INT4, QMM_DTYPE_FLOAT4E2M1, QMM_DTYPE_UINT2, QMM_DTYPE_INT2,
    QMM_DTYPE_FLOAT8E8M0};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

Test(onnx_roundtrip, every_dtype_and_rank)
{
    for (size_t d = 0; d < N_DTYPES; d++) {
        for (int rank = 0; rank <= QMM_MAX_RANK; rank++) {
            for (int empty = 0; empty < 2; empty++) {
                if (empty && rank == 0)
                    continue;
                qmm_tensor t = {.dtype = all_dtypes[d], .rank = rank};
                for (int i = 0; i < rank; i++)
                    t.dims[i] = 1 + (i % 3);
                if (empty)
                    t.dims[rank / 2] = 0;
                size_t n = tensor_bytes(&t);
                cr_assert_lt(n, 4096);
                uint8_t *data = malloc(n ? n : 1);
                for (size_t i = 0; i < n; i++)
                    data[i] = (uint8_t)(i * 37 + d + 1);
                if (all_dtypes[d] == QMM_DTYPE_BOOL)
                    for (size_t i = 0; i < n; i++)
                        data[i] &= 1;
                unsigned bits = qmm_dtype_bits(all_dtypes[d]);
                int64_t pad = bits < 8 && n ? (int64_t)(n * 8 / bits) - qmm_tensor_numel(&t) : 0;
                if (pad) /* the padding past the last element: written as zero (below) */
                    data[n - 1] &= (uint8_t)((1u << (8 - pad * bits)) - 1);
                t.data = n ? data : NULL;

                uint8_t *enc;
                size_t len;
                qh_error err;
                char name[32];
                snprintf(name, sizeof name, "t_%d_%d", all_dtypes[d], rank);
                cr_assert_eq(qh_encode_tensor(&t, name, &enc, &len, &err), 0, "%s", err.msg);
                qh_tensor back;
                cr_assert_eq(parse_tensor_bytes(enc, len, &back, &err), 0, "%s", err.msg);
                qh_tensor want = {.t = t};
                strcpy(want.name, name);
                assert_tensor_eq(&want, &back);
                check_tensor_fixed_point(&back);
                qh_tensor_free(&back);
                free(enc);
                free(data);
            }
        }
    }
}

Test(onnx_roundtrip, encode_rejects_bad_tensors)
{
    uint8_t *enc;
    size_t len;
    qh_error err;
    uint8_t byte = 0;
    qmm_tensor t = {.dtype = QMM_DTYPE_STRING, .rank = 0, .data = &byte};
    cr_assert_eq(qh_encode_tensor(&t, "s", &enc, &len, &err), -1);
    cr_assert(strstr(err.msg, "data_type"), "%s", err.msg);
    t.dtype = QMM_DTYPE_UINT8;
    t.rank = 9;
    cr_assert_eq(qh_encode_tensor(&t, "s", &enc, &len, &err), -1);
    t.rank = 1;
    t.dims[0] = -1;
    cr_assert_eq(qh_encode_tensor(&t, "s", &enc, &len, &err), -1);
    t.dims[0] = 4;
    t.data = NULL;
    cr_assert_eq(qh_encode_tensor(&t, "s", &enc, &len, &err), -1);
    char longname[200];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    t.rank = 0;
    t.data = &byte;
    cr_assert_eq(qh_encode_tensor(&t, longname, &enc, &len, &err), -1);
    /* no name at all is fine */
    cr_assert_eq(qh_encode_tensor(&t, NULL, &enc, &len, &err), 0, "%s", err.msg);
    qh_tensor back;
    cr_assert_eq(parse_tensor_bytes(enc, len, &back, &err), 0, "%s", err.msg);
    cr_assert_str_eq(back.name, "");
    qh_tensor_free(&back);
    free(enc);
}

static void fill_model(qh_model *m)
{
    memset(m, 0, sizeof *m);
    m->ir_version = 10;
    strcpy(m->producer_name, "qmmcheck");
    m->n_opsets = 2;
    strcpy(m->opsets[0].domain, "");
    m->opsets[0].version = 21;
    strcpy(m->opsets[1].domain, "com.microsoft");
    m->opsets[1].version = 1;
    strcpy(m->graph_name, "g");
    strcpy(m->op_type, "QOrderedMatMul");
    strcpy(m->domain, "com.microsoft");
    strcpy(m->node_name, "n0");
    m->n_inputs = 3;
    strcpy(m->inputs[0], "A");
    strcpy(m->inputs[1], ""); /* omitted optional input */
    strcpy(m->inputs[2], "C");
    m->n_outputs = 1;
    strcpy(m->outputs[0], "Y");
    m->n_attrs = 4;
    strcpy(m->attrs[0].name, "order_A");
    m->attrs[0].type = QH_ATTR_INT;
    m->attrs[0].i = -5;
    strcpy(m->attrs[1].name, "alpha");
    m->attrs[1].type = QH_ATTR_FLOAT;
    m->attrs[1].f = 0.375f;
    strcpy(m->attrs[2].name, "mode");
    m->attrs[2].type = QH_ATTR_STRING;
    strcpy(m->attrs[2].s, "row\xff\x01 major");
    strcpy(m->attrs[3].name, "zero");
    m->attrs[3].type = QH_ATTR_INT;
    m->n_graph_inputs = 3;
    strcpy(m->graph_inputs[0].name, "A");
    m->graph_inputs[0].elem_type = QMM_DTYPE_INT8;
    m->graph_inputs[0].rank = 8;
    for (int i = 0; i < 8; i++)
        m->graph_inputs[0].dims[i] = i % 2 ? -1 : i;
    strcpy(m->graph_inputs[1].name, "C");
    m->graph_inputs[1].rank = -1;
    strcpy(m->graph_inputs[2].name, "s");
    m->graph_inputs[2].elem_type = QMM_DTYPE_FLOAT;
    m->graph_inputs[2].rank = 0;
    m->n_graph_outputs = 1;
    strcpy(m->graph_outputs[0].name, "Y");
    m->graph_outputs[0].elem_type = QMM_DTYPE_INT8;
    m->graph_outputs[0].rank = 2;
    m->graph_outputs[0].dims[0] = 3;
    m->graph_outputs[0].dims[1] = 4;
}

Test(onnx_roundtrip, model_every_field)
{
    qh_model *m = malloc(sizeof *m);
    fill_model(m);
    check_model_fixed_point(m);
    cr_assert_eq(qh_model_opset(m, "com.microsoft"), 1);
    cr_assert_eq(qh_model_opset(m, "ai.onnx"), 21);

    /* Limits: full arrays round-trip too. */
    m->n_inputs = m->n_outputs = m->n_graph_inputs = m->n_graph_outputs = QH_MAX_IO;
    for (int i = 0; i < QH_MAX_IO; i++) {
        snprintf(m->inputs[i], QH_NAME_MAX, "in%d", i);
        snprintf(m->outputs[i], QH_NAME_MAX, "out%d", i);
        memset(&m->graph_inputs[i], 0, sizeof m->graph_inputs[i]);
        snprintf(m->graph_inputs[i].name, QH_NAME_MAX, "in%d", i);
        m->graph_inputs[i].rank = -1;
        memset(&m->graph_outputs[i], 0, sizeof m->graph_outputs[i]);
        snprintf(m->graph_outputs[i].name, QH_NAME_MAX, "out%d", i);
        m->graph_outputs[i].rank = i % 9;
    }
    m->n_attrs = QH_MAX_ATTRS;
    for (int i = 0; i < QH_MAX_ATTRS; i++) {
        memset(&m->attrs[i], 0, sizeof m->attrs[i]);
        snprintf(m->attrs[i].name, QH_NAME_MAX, "a%d", i);
        m->attrs[i].type = QH_ATTR_INT;
        m->attrs[i].i = INT64_MIN + i;
    }
    m->n_opsets = QH_MAX_OPSETS;
    for (int i = 0; i < QH_MAX_OPSETS; i++) {
        memset(&m->opsets[i], 0, sizeof m->opsets[i]);
        snprintf(m->opsets[i].domain, QH_NAME_MAX, "d%d", i);
        m->opsets[i].version = i;
    }
    memset(m->node_name, 'x', QH_NAME_MAX - 1);
    check_model_fixed_point(m);
    free(m);
}

Test(onnx_roundtrip, model_encode_rejects_bad_models)
{
    qh_model *m = malloc(sizeof *m);
    uint8_t *enc;
    size_t len;
    qh_error err;
    fill_model(m);
    m->n_inputs = QH_MAX_IO + 1;
    cr_assert_eq(qh_encode_model(m, &enc, &len, &err), -1);
    fill_model(m);
    m->attrs[0].type = 5;
    cr_assert_eq(qh_encode_model(m, &enc, &len, &err), -1);
    fill_model(m);
    memset(m->op_type, 'x', QH_NAME_MAX);
    cr_assert_eq(qh_encode_model(m, &enc, &len, &err), -1);
    cr_assert(strstr(err.msg, "op_type"), "%s", err.msg);
    fill_model(m);
    m->graph_inputs[0].rank = 9;
    cr_assert_eq(qh_encode_model(m, &enc, &len, &err), -1);
    free(m);
}

/* ---- typed repeated fields ----------------------------------------------------------- */

static void put_header(qh_pb_buf *b, int32_t dtype, int64_t n)
{
    qh_pb_put_varint_field(b, 1, (uint64_t)n);
    qh_pb_put_varint_field(b, 2, (uint64_t)dtype);
    qh_pb_put_string_field(b, 8, "t");
}

static qh_tensor parse_ok(qh_pb_buf *b)
{
    qh_tensor t;
    qh_error err;
    cr_assert(!b->failed);
    cr_assert_eq(parse_tensor_bytes(b->data, b->len, &t, &err), 0, "%s", err.msg);
    qh_pb_buf_free(b);
    return t;
}

/* int32_data for u8 written unpacked, packed, and as a mix of both. */
Test(onnx_typed, int32_data_packed_and_unpacked)
{
    static const int64_t vals[] = {0, 1, 127, 255};
    for (int mode = 0; mode < 3; mode++) {
        qh_pb_buf b, p;
        qh_pb_buf_init(&b);
        qh_pb_buf_init(&p);
        put_header(&b, QMM_DTYPE_UINT8, 4);
        for (int i = 0; i < 4; i++) {
            if (mode == 0 || (mode == 2 && i < 2))
                qh_pb_put_varint_field(&b, 5, (uint64_t)vals[i]);
            else
                qh_pb_put_varint(&p, (uint64_t)vals[i]);
        }
        if (mode)
            qh_pb_put_message_field(&b, 5, &p);
        qh_pb_buf_free(&p);
        qh_tensor t = parse_ok(&b);
        const uint8_t *d = t.t.data;
        for (int i = 0; i < 4; i++)
            cr_assert_eq(d[i], vals[i], "mode %d element %d", mode, i);
        check_tensor_fixed_point(&t);
        qh_tensor_free(&t);
    }
}

Test(onnx_typed, negative_int8_and_int16)
{
    /* Negative int32 values are 10-byte sign-extended varints on the wire. */
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT8, 3);
    qh_pb_put_varint_field(&b, 5, (uint64_t)(int64_t)-1);
    qh_pb_put_varint_field(&b, 5, (uint64_t)(int64_t)-128);
    qh_pb_put_varint_field(&b, 5, 127);
    qh_tensor t = parse_ok(&b);
    const int8_t *d = t.t.data;
    cr_assert_eq(d[0], -1);
    cr_assert_eq(d[1], -128);
    cr_assert_eq(d[2], 127);
    qh_tensor_free(&t);

    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT16, 2);
    qh_pb_buf p;
    qh_pb_buf_init(&p);
    qh_pb_put_varint(&p, (uint64_t)(int64_t)-32768);
    qh_pb_put_varint(&p, 32767);
    qh_pb_put_message_field(&b, 5, &p);
    qh_pb_buf_free(&p);
    t = parse_ok(&b);
    int16_t s[2];
    memcpy(s, t.t.data, sizeof s);
    cr_assert_eq(s[0], -32768);
    cr_assert_eq(s[1], 32767);
    qh_tensor_free(&t);
}

/* `n` elements of `dtype` (`size` bytes each) given as unpacked varints v[] of typed field
 * `field` must be stored as those little-endian words. */
static void expect_varint_data(int32_t dtype, uint32_t field, size_t size, size_t n,
                               const uint64_t *v)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, dtype, (int64_t)n);
    for (size_t k = 0; k < n; k++)
        qh_pb_put_varint_field(&b, field, v[k]);
    qh_tensor t = parse_ok(&b);
    const uint8_t *d = t.t.data;
    for (size_t k = 0; k < n; k++) {
        uint64_t got = 0;
        for (size_t i = 0; i < size; i++)
            got |= (uint64_t)d[k * size + i] << (8 * i);
        cr_assert_eq(got, v[k], "dtype %d element %zu", (int)dtype, k);
    }
    qh_tensor_free(&t);
}

Test(onnx_typed, float16_and_bfloat16_bit_patterns)
{
    int32_t types[] = {QMM_DTYPE_FLOAT16, QMM_DTYPE_BFLOAT16, QMM_DTYPE_UINT16};
    for (int k = 0; k < 3; k++)
        expect_varint_data(types[k], 5, 2, 2, (const uint64_t[]){0x3c00, 0xffff});
}

Test(onnx_typed, bool_and_float8)
{
    int32_t types[] = {QMM_DTYPE_BOOL, QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E5M2FNUZ,
                       QMM_DTYPE_FLOAT8E8M0};
    for (int k = 0; k < 4; k++)
        expect_varint_data(types[k], 5, 1, 2, (const uint64_t[]){1, 0});
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_BOOL, 1);
    qh_pb_put_varint_field(&b, 5, 2);
    expect_tensor_error_buf(&b, "TensorProto.int32_data: element 0: value 2 out of range for BOOL");
}

Test(onnx_typed, float_data)
{
    const float vals[] = {1.5f, -0.0f, 3.25e-5f};
    for (int packed = 0; packed < 2; packed++) {
        qh_pb_buf b, p;
        qh_pb_buf_init(&b);
        qh_pb_buf_init(&p);
        put_header(&b, QMM_DTYPE_FLOAT, 3);
        for (int i = 0; i < 3; i++) {
            uint32_t bits;
            memcpy(&bits, &vals[i], 4);
            if (packed) {
                uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
                                 (uint8_t)(bits >> 24)};
                qh_pb_put_raw(&p, le, 4);
            } else {
                qh_pb_put_fixed32_field(&b, 4, bits);
            }
        }
        if (packed)
            qh_pb_put_message_field(&b, 4, &p);
        qh_pb_buf_free(&p);
        qh_tensor t = parse_ok(&b);
        cr_assert_eq(memcmp(t.t.data, vals, sizeof vals), 0);
        qh_tensor_free(&t);
    }
}

Test(onnx_typed, int64_double_uint64)
{
    qh_pb_buf b, p;
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT64, 2);
    qh_pb_put_varint_field(&b, 7, (uint64_t)INT64_MIN);
    qh_pb_put_varint_field(&b, 7, 42);
    qh_tensor t = parse_ok(&b);
    int64_t i64[2];
    memcpy(i64, t.t.data, sizeof i64);
    cr_assert_eq(i64[0], INT64_MIN);
    cr_assert_eq(i64[1], 42);
    qh_tensor_free(&t);

    double dv[2] = {-2.5, 1e300};
    qh_pb_buf_init(&b);
    qh_pb_buf_init(&p);
    put_header(&b, QMM_DTYPE_DOUBLE, 2);
    uint64_t bits;
    memcpy(&bits, &dv[0], 8);
    qh_pb_put_fixed64_field(&b, 10, bits);
    memcpy(&bits, &dv[1], 8);
    for (int i = 0; i < 8; i++) {
        uint8_t byte = (uint8_t)(bits >> (8 * i));
        qh_pb_put_raw(&p, &byte, 1);
    }
    qh_pb_put_message_field(&b, 10, &p);
    qh_pb_buf_free(&p);
    t = parse_ok(&b);
    cr_assert_eq(memcmp(t.t.data, dv, sizeof dv), 0);
    qh_tensor_free(&t);

    expect_varint_data(QMM_DTYPE_UINT64, 11, 8, 1, (const uint64_t[]){UINT64_MAX});
    expect_varint_data(QMM_DTYPE_UINT32, 11, 4, 1, (const uint64_t[]){UINT32_MAX});

    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT32, 1);
    qh_pb_put_varint_field(&b, 11, (uint64_t)UINT32_MAX + 1);
    expect_tensor_error_buf(&b, "TensorProto.uint64_data: element 0");
}

Test(onnx_typed, raw_and_typed_together)
{
    /* Agreeing copies are accepted... */
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 2);
    qh_pb_put_varint_field(&b, 5, 7);
    qh_pb_put_varint_field(&b, 5, 9);
    qh_pb_put_bytes_field(&b, 9, "\x07\x09", 2);
    qh_tensor t = parse_ok(&b);
    cr_assert_eq(((uint8_t *)t.t.data)[1], 9);
    qh_tensor_free(&t);
    /* ...conflicting ones are not. */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 2);
    qh_pb_put_varint_field(&b, 5, 7);
    qh_pb_put_varint_field(&b, 5, 9);
    qh_pb_put_bytes_field(&b, 9, "\x07\x08", 2);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: conflicts with int32_data");
}

Test(onnx_typed, mismatches)
{
    qh_pb_buf b;
    /* a typed field that is not the dtype's */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_fixed32_field(&b, 4, 0);
    expect_tensor_error_buf(&b, "TensorProto.float_data: not valid for data_type UINT8");
    /* two typed fields */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT64, 1);
    qh_pb_put_varint_field(&b, 7, 1);
    qh_pb_put_varint_field(&b, 5, 1);
    expect_tensor_error_buf(&b, "TensorProto.int32_data: data also given in int64_data");
    /* ... even when the second one has a wrong wire type too: one data field is checked first */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT64, 1);
    qh_pb_put_varint_field(&b, 7, 1);
    qh_pb_put_varint_field(&b, 4, 1);
    expect_tensor_error_buf(&b, "TensorProto.float_data: data also given in int64_data");
    /* too few / too many elements */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 3);
    qh_pb_put_varint_field(&b, 5, 1);
    expect_tensor_error_buf(&b, "TensorProto.int32_data: 1 elements, dims say 3");
    /* out of range */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_varint_field(&b, 5, 300);
    expect_tensor_error_buf(&b, "value 300 out of range for UINT8");
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT8, 1);
    qh_pb_put_varint_field(&b, 5, (uint64_t)(int64_t)-129);
    expect_tensor_error_buf(&b, "out of range for INT8");
    /* packed fixed32 with a ragged length */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_FLOAT, 1);
    qh_pb_put_bytes_field(&b, 4, "\0\0\0\0\0", 5);
    expect_tensor_error_buf(&b, "TensorProto.float_data: packed length 5 is not a multiple of 4");
    /* packed varint truncated inside */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_bytes_field(&b, 5, "\x80", 1);
    expect_tensor_error_buf(&b, "TensorProto.int32_data: packed element 0: truncated varint");
    /* wrong unpacked wire type for a typed field */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_FLOAT, 1);
    qh_pb_put_varint_field(&b, 4, 1);
    expect_tensor_error_buf(&b, "TensorProto.float_data: wire type 0 (varint)");
}

/* ---- the table walker (harness/io/pb_walk.h) ------------------------------------------ */

/* A message of four rows: a varint, a packed-or-not varint, a field refused in any form and one
 * named only for messages; what the handlers saw is summed up in `walked`. */
typedef struct walked {
    uint64_t sum;
    int n_calls;
} walked;

static int add_value(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    walked *w = dst;
    w->sum += f->wire == QH_PB_LEN ? f->len : f->u;
    w->n_calls++;
    return 0;
}

static int refuse(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_fail(m, m->row->name, "refused");
}

static const qh_pb_row walk_rows[] = {
    {1, "one", QH_PB_VARINT, add_value, 0, 0},
    {2, "two", QH_PB_VARINT | QH_PB_OR_PACKED, add_value, 0, 0},
    {3, "three", QH_PB_ANY_WIRE, refuse, 0, 0},
    {4, "four", QH_PB_ANY_WIRE, NULL, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table walk_table = {"Walked", walk_rows};

static int walk_buf(qh_pb_buf *b, walked *w, qh_error *err)
{
    qh_pb_source src = {"w.pb", err};
    memset(w, 0, sizeof *w);
    int rc = qh_pb_walk(&src, &walk_table, b->data, b->len, w);
    qh_pb_buf_free(b);
    return rc;
}

Test(pb_walk, rows_are_found_by_number_wire_types_checked_once_the_rest_skipped)
{
    qh_pb_buf b;
    walked w;
    qh_error err = {{0}};
    /* every row's handler in order; an unknown field (9) and a named, handler-less one (4)
     * skipped whatever their wire type */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 1, 5);
    qh_pb_put_fixed64_field(&b, 9, 7);
    qh_pb_put_varint_field(&b, 2, 6);
    qh_pb_put_bytes_field(&b, 2, "\x01\x02\x03", 3); /* packed: the handler sees the run */
    qh_pb_put_fixed32_field(&b, 4, 1);
    cr_assert_eq(walk_buf(&b, &w, &err), 0, "%s", err.msg);
    cr_expect_eq(w.n_calls, 3);
    cr_expect_eq(w.sum, 5 + 6 + 3);
    /* a wrong wire type, named by the row */
    qh_pb_buf_init(&b);
    qh_pb_put_fixed32_field(&b, 1, 5);
    cr_assert_eq(walk_buf(&b, &w, &err), -1);
    cr_expect_str_eq(err.msg, "w.pb: Walked.one: wire type 5 (fixed32), expected varint");
    qh_pb_buf_init(&b);
    qh_pb_put_fixed64_field(&b, 2, 5);
    cr_assert_eq(walk_buf(&b, &w, &err), -1);
    cr_expect_str_eq(err.msg,
                     "w.pb: Walked.two: wire type 1 (fixed64), expected varint or packed");
    /* a row whose handler refuses it in any form */
    qh_pb_buf_init(&b);
    qh_pb_put_fixed64_field(&b, 3, 5);
    cr_assert_eq(walk_buf(&b, &w, &err), -1);
    cr_expect_str_eq(err.msg, "w.pb: Walked.three: refused");
    /* framing: named by the row when the tag was read, by number for an unknown field */
    qh_pb_buf_init(&b);
    qh_pb_put_tag(&b, 4, QH_PB_LEN);
    qh_pb_put_varint(&b, 100);
    cr_assert_eq(walk_buf(&b, &w, &err), -1);
    cr_expect_str_eq(err.msg, "w.pb: Walked.four: length 100 runs past the end (0 bytes left)");
    qh_pb_buf_init(&b);
    qh_pb_put_tag(&b, 12, QH_PB_I64);
    cr_assert_eq(walk_buf(&b, &w, &err), -1);
    cr_expect_str_eq(err.msg, "w.pb: Walked.12: fixed64 needs 8 bytes, 0 left");
    /* no error text without a qh_error */
    qh_pb_source quiet = {NULL, NULL};
    const uint8_t bad[] = {0x08};
    cr_expect_eq(qh_pb_walk(&quiet, &walk_table, bad, sizeof bad, &w), -1);
}

/* ---- malformed tensors --------------------------------------------------------------- */

Test(onnx_malformed, wrong_wire_types)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_pb_put_fixed32_field(&b, 1, 4);
    qh_pb_put_varint_field(&b, 2, 2);
    expect_tensor_error_buf(&b, "x.pb: TensorProto.dims: wire type 5 (fixed32)");

    qh_pb_buf_init(&b);
    qh_pb_put_bytes_field(&b, 2, "\x02", 1);
    expect_tensor_error_buf(&b, "TensorProto.data_type: wire type 2");

    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 2, 2);
    qh_pb_put_varint_field(&b, 9, 1);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: wire type 0");

    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 8, 1);
    expect_tensor_error_buf(&b, "TensorProto.name: wire type 0");

    qh_pb_buf_init(&b);
    qh_pb_put_fixed64_field(&b, 14, 1);
    expect_tensor_error_buf(&b, "TensorProto.data_location: wire type 1");
}

Test(onnx_malformed, huge_length)
{
    /* dims [2], UINT8, raw_data claiming 0xFFFFFFFF bytes */
    static const uint8_t buf[] = {0x08, 0x02, 0x10, 0x02, 0x4a, 0xff, 0xff, 0xff, 0xff, 0x0f,
                                  0x01, 0x02};
    qh_tensor t;
    qh_error err;
    cr_assert_eq(qh_parse_tensor(buf, sizeof buf, "input_0.pb", &t, &err), -1);
    cr_assert_str_eq(err.msg, "input_0.pb: TensorProto.raw_data: length 4294967295 runs past "
                              "the end (2 bytes left)");
    /* and a length that does not fit in 32 bits */
    static const uint8_t buf2[] = {0x4a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_tensor_error(buf2, sizeof buf2, "TensorProto.raw_data: length 9223372036854775807");
}

Test(onnx_malformed, long_varints)
{
    /* 11-byte varint as a data_type value */
    static const uint8_t v11[] = {0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                  0x80, 0x00};
    expect_tensor_error(v11, sizeof v11, "TensorProto.data_type: varint longer than 10 bytes");
    /* a 10th byte with more than bit 63 */
    static const uint8_t v10[] = {0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                  0x02};
    expect_tensor_error(v10, sizeof v10, "overflows 64 bits");
    /* a tag that never ends */
    static const uint8_t tag[] = {0x80, 0x80, 0x80};
    expect_tensor_error(tag, sizeof tag, "TensorProto: bad tag: truncated varint");
    /* a value that ends early */
    static const uint8_t val[] = {0x08, 0x80};
    expect_tensor_error(val, sizeof val, "TensorProto.dims: truncated varint");
    /* field number 0 */
    static const uint8_t zero[] = {0x00, 0x01};
    expect_tensor_error(zero, sizeof zero, "field number 0");
}

Test(onnx_malformed, groups_and_reserved_wire_types)
{
    for (uint8_t w = 3; w <= 7; w++) {
        if (w == 5)
            continue;
        uint8_t buf[] = {(uint8_t)(0x78 | w), 0x00}; /* field 15 */
        expect_tensor_error(buf, sizeof buf, "unsupported wire type");
    }
    /* truncated fixed values */
    static const uint8_t f32[] = {0x25, 0x00, 0x00};
    expect_tensor_error(f32, sizeof f32, "TensorProto.float_data: fixed32 needs 4 bytes, 2 left");
    static const uint8_t f64[] = {0x51, 0x00};
    expect_tensor_error(f64, sizeof f64, "TensorProto.double_data: fixed64 needs 8 bytes");
}

Test(onnx_malformed, dims)
{
    qh_pb_buf b;
    /* product overflows int64 */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 1, (uint64_t)1 << 40);
    qh_pb_put_varint_field(&b, 1, (uint64_t)1 << 40);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    expect_tensor_error_buf(&b, "TensorProto.dims: element count overflows int64");
    /* fits int64 but exceeds the payload limit: rejected before any allocation */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 1, (uint64_t)1 << 31);
    qh_pb_put_varint_field(&b, 1, 4);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_FLOAT);
    expect_tensor_error_buf(&b, "exceed the 4294967296-byte limit");
    /* negative, unpacked and packed */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 1, (uint64_t)(int64_t)-1);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    expect_tensor_error_buf(&b, "TensorProto.dims: dimension 0 is negative (-1)");
    qh_pb_buf p;
    qh_pb_buf_init(&b);
    qh_pb_buf_init(&p);
    qh_pb_put_varint(&p, 2);
    qh_pb_put_varint(&p, (uint64_t)(int64_t)-3);
    qh_pb_put_message_field(&b, 1, &p);
    qh_pb_buf_free(&p);
    expect_tensor_error_buf(&b, "TensorProto.dims: dimension 1 is negative (-3)");
    /* rank 9 */
    qh_pb_buf_init(&b);
    for (int i = 0; i < 9; i++)
        qh_pb_put_varint_field(&b, 1, 1);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    qh_pb_put_bytes_field(&b, 9, "\x01", 1);
    expect_tensor_error_buf(&b, "TensorProto.dims: rank exceeds 8");
    /* packed dims work */
    qh_pb_buf_init(&b);
    qh_pb_buf_init(&p);
    qh_pb_put_varint(&p, 2);
    qh_pb_put_varint(&p, 3);
    qh_pb_put_message_field(&b, 1, &p);
    qh_pb_buf_free(&p);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_INT8);
    qh_pb_put_bytes_field(&b, 9, "abcdef", 6);
    qh_tensor t = parse_ok(&b);
    cr_assert_eq(t.t.rank, 2);
    cr_assert_eq(t.t.dims[1], 3);
    qh_tensor_free(&t);
}

Test(onnx_malformed, raw_data_size_and_presence)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT32, 2);
    qh_pb_put_bytes_field(&b, 9, "1234567", 7);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: length 7, expected 8");
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT32, 2);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: missing");
    /* an empty tensor needs no data */
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_INT32, 0);
    qh_tensor t = parse_ok(&b);
    cr_assert_eq(t.t.rank, 1);
    cr_assert_eq(t.t.dims[0], 0);
    qh_tensor_free(&t);
    /* a scalar */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_INT16);
    qh_pb_put_bytes_field(&b, 9, "\x01\x80", 2);
    t = parse_ok(&b);
    cr_assert_eq(t.t.rank, 0);
    cr_assert_eq(((uint8_t *)t.t.data)[1], 0x80);
    qh_tensor_free(&t);
}

Test(onnx_malformed, data_types_and_unsupported_features)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_pb_put_bytes_field(&b, 9, "", 0);
    expect_tensor_error_buf(&b, "TensorProto.data_type: missing");
    int64_t bad[] = {0, 8, 14, 15, 27, 28, 999, -1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qh_pb_buf_init(&b);
        qh_pb_put_varint_field(&b, 2, (uint64_t)bad[i]);
        expect_tensor_error_buf(&b, "TensorProto.data_type: unsupported data type");
    }
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_bytes_field(&b, 3, "\x08\x00", 2);
    expect_tensor_error_buf(&b, "TensorProto.segment: segmented tensors are not supported");
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_bytes_field(&b, 6, "a", 1);
    expect_tensor_error_buf(&b, "TensorProto.string_data");
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_varint_field(&b, 14, 1);
    expect_tensor_error_buf(&b, "TensorProto.data_location: external data is not supported");
    qh_pb_buf_init(&b);
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_bytes_field(&b, 13, "\x0a\x01x", 3);
    expect_tensor_error_buf(&b, "TensorProto.external_data: external data is not supported");
}

/* ---- packed sub-byte tensors (int4, uint4, float4e2m1, int2, uint2) -------------------- */

Test(onnx_packed, byte_counts)
{
    /* two 4-bit elements to a byte, four 2-bit ones; an odd count takes a padded last byte */
    static const size_t four[] = {0, 1, 1, 2, 2, 3}, two[] = {0, 1, 1, 1, 1, 2};
    for (int64_t n = 0; n < 6; n++) {
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_INT4, n), four[n], "int4 x %lld", (long long)n);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_UINT4, n), four[n]);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_FLOAT4E2M1, n), four[n]);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_INT2, n), two[n], "int2 x %lld", (long long)n);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_UINT2, n), two[n]);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_UINT8, n), (size_t)n);
        cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_FLOAT, n), (size_t)n * 4);
    }
    cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_INT4, INT64_MAX), (size_t)(INT64_MAX / 2 + 1));
    cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_INT64, INT64_MAX), SIZE_MAX); /* does not fit */
    cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_INT4, -1), 0);
    cr_expect_eq(qmm_dtype_bytes(27, 4), 0); /* no such type */
    cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_FLOAT8E8M0, 4), 4); /* one byte each */
    cr_expect_eq(qmm_dtype_bytes(QMM_DTYPE_STRING, 4), 0);
    /* a whole-byte size stays 0 for them: code built against an older header rejects them */
    cr_expect_eq(qmm_dtype_size(QMM_DTYPE_INT4), 0);
    cr_expect_eq(qmm_dtype_bits(QMM_DTYPE_INT4), 4);
    cr_expect_eq(qmm_dtype_bits(QMM_DTYPE_UINT2), 2);
    cr_expect_eq(qmm_dtype_bits(QMM_DTYPE_BFLOAT16), 16);
    cr_expect_str_eq(qmm_dtype_name(QMM_DTYPE_INT4), "int4");
    cr_expect_str_eq(qmm_dtype_name(QMM_DTYPE_FLOAT4E2M1), "float4e2m1");
    /* element 0 in the low bits */
    const uint8_t d[2] = {0xc7, 0x1e};
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT4, 0), 7);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT4, 1), 12);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT4, 3), 1);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT2, 0), 3);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT2, 3), 3);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT2, 5), 3);
    cr_expect_eq(qmm_packed_code(d, QMM_DTYPE_INT2, 7), 0);
}

/* An int4 tensor of 5 elements (dims [5], data_type 22: the code is spelled out so that the same
 * bytes are refused by a reader without int4) in each of onnx's two forms, then hostile ones:
 * every refusal names the file and the field, and nothing reads past the buffer (ASan). */
Test(onnx_packed, int4_forms_and_hostile_tensors)
{
    static const int64_t want[5] = {0, 1, 7, -4, -8};
    for (int form = 0; form < 2; form++) {
        qh_pb_buf b;
        qh_pb_buf_init(&b);
        put_header(&b, 22, 5);
        if (form == 0) {
            qh_pb_put_bytes_field(&b, 9, "\x10\xc7\x08", 3);
        } else { /* int32_data: one packed byte a value, as onnx.helper.make_tensor writes */
            qh_pb_put_varint_field(&b, 5, 0x10);
            qh_pb_put_varint_field(&b, 5, 0xc7);
            qh_pb_put_varint_field(&b, 5, 0x08);
        }
        qh_tensor t = parse_ok(&b);
        cr_assert_eq(t.t.dtype, 22);
        for (int64_t i = 0; i < 5; i++)
            cr_expect_eq(qh_tensor_int(&t.t, i), want[i], "form %d element %lld", form,
                         (long long)i);
        check_tensor_fixed_point(&t); /* written back as raw_data, 3 bytes */
        qh_tensor_free(&t);
    }
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    put_header(&b, 22, 5);
    qh_pb_put_bytes_field(&b, 9, "\x10\xc7", 2);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: length 2, expected 3 (5 elements of INT4)");
    qh_pb_buf_init(&b);
    put_header(&b, 22, 5);
    qh_pb_put_bytes_field(&b, 9, "\x10\xc7\x08\x00", 4);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: length 4, expected 3");
    qh_pb_buf_init(&b); /* one value an element: not how onnx packs int4 */
    put_header(&b, 22, 5);
    for (int i = 0; i < 5; i++)
        qh_pb_put_varint_field(&b, 5, 1);
    expect_tensor_error_buf(&b, "TensorProto.int32_data: 5 values, expected 3 (5 elements of "
                                "INT4, 2 to a value)");
    /* a value is a packed byte, 0..255: not an element's value */
    static const struct { int32_t dtype; int64_t v; const char *msg; } out_of_range[] = {
        {21, 256, "TensorProto.int32_data: element 1: value 256 out of range for UINT4"},
        {22, -8, "TensorProto.int32_data: element 1: value -8 out of range for INT4"},
    };
    for (int i = 0; i < 2; i++) {
        qh_pb_buf_init(&b);
        put_header(&b, out_of_range[i].dtype, 5);
        qh_pb_put_varint_field(&b, 5, 0x10);
        qh_pb_put_varint_field(&b, 5, (uint64_t)out_of_range[i].v);
        qh_pb_put_varint_field(&b, 5, 0x08);
        expect_tensor_error_buf(&b, out_of_range[i].msg);
    }
    qh_pb_buf_init(&b); /* the high nibble of the last byte is padding */
    put_header(&b, 22, 5);
    qh_pb_put_bytes_field(&b, 9, "\x10\xc7\x18", 3);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: the last byte 0x18 sets padding bits past "
                                "element 4 of INT4");
    /* padding set in memory is written as zero, so what is written reads back */
    uint8_t mem[3] = {0x10, 0xc7, 0xf8};
    qmm_tensor odd = {.dtype = 22, .rank = 1, .dims = {5}, .data = mem};
    uint8_t *enc;
    size_t len;
    qh_error err;
    cr_assert_eq(qh_encode_tensor(&odd, "x", &enc, &len, &err), 0, "%s", err.msg);
    qh_tensor back;
    cr_assert_eq(parse_tensor_bytes(enc, len, &back, &err), 0, "%s", err.msg);
    cr_expect_eq(((const uint8_t *)back.t.data)[2], 0x08);
    qh_tensor_free(&back);
    free(enc);
    qh_pb_buf_init(&b); /* int2: 5 elements, two bytes, six padding bits */
    put_header(&b, 26, 5);
    qh_pb_put_bytes_field(&b, 9, "\xff\x07", 2);
    expect_tensor_error_buf(&b, "TensorProto.raw_data: the last byte 0x07 sets padding bits");
    qh_pb_buf_init(&b); /* int32_data is the field for int4: float_data is not */
    put_header(&b, 22, 2);
    qh_pb_put_fixed32_field(&b, 4, 0);
    expect_tensor_error_buf(&b, "TensorProto.float_data: not valid for data_type INT4");
    qh_pb_buf_init(&b); /* the byte limit counts packed bytes */
    put_header(&b, 22, (int64_t)1 << 34);
    expect_tensor_error_buf(&b, "elements of INT4 exceed the 4294967296-byte limit");
}

/* The committed onnx node test: test_dequantizelinear_int4's x as libprotobuf wrote it. */
Test(onnx_packed, onnx_int4_node_test_file)
{
    qh_tensor t;
    qh_error err;
    cr_assert_eq(qh_read_tensor_file(test_path("onnx-1.23.2/test_dequantizelinear_int4/"
                                               "test_data_set_0/input_0.pb"),
                                     &t, &err),
                 0, "%s", err.msg);
    static const int64_t want[5] = {0, 1, 7, -4, -8};
    cr_assert_eq(t.t.dtype, 22);
    for (int64_t i = 0; i < 5; i++)
        cr_expect_eq(qh_tensor_int(&t.t, i), want[i]);
    qh_tensor_free(&t);
}

Test(onnx_malformed, names)
{
    char name[QH_NAME_MAX + 1];
    memset(name, 'n', sizeof name);
    name[QH_NAME_MAX - 1] = '\0';
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    qh_pb_put_bytes_field(&b, 9, "\x01", 1);
    qh_pb_put_string_field(&b, 8, name); /* 127 bytes: fits */
    qh_tensor t = parse_ok(&b);
    cr_assert_eq(strlen(t.name), QH_NAME_MAX - 1);
    check_tensor_fixed_point(&t);
    qh_tensor_free(&t);

    name[QH_NAME_MAX - 1] = 'n';
    name[QH_NAME_MAX] = '\0';
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    qh_pb_put_bytes_field(&b, 9, "\x01", 1);
    qh_pb_put_string_field(&b, 8, name);
    expect_tensor_error_buf(&b, "TensorProto.name: string of 128 bytes exceeds the limit");

    qh_pb_buf_init(&b);
    qh_pb_put_bytes_field(&b, 8, "a\0b", 3);
    expect_tensor_error_buf(&b, "TensorProto.name: string contains a NUL byte");

    /* any other byte is kept */
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 2, QMM_DTYPE_UINT8);
    qh_pb_put_bytes_field(&b, 9, "\x01", 1);
    qh_pb_put_bytes_field(&b, 8, "\xff\n\x01", 3);
    t = parse_ok(&b);
    cr_assert_str_eq(t.name, "\xff\n\x01");
    qh_tensor_free(&t);
}

Test(onnx_malformed, unknown_fields_are_skipped)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_pb_put_varint_field(&b, 99, 5);
    qh_pb_put_fixed32_field(&b, 100, 5);
    qh_pb_put_fixed64_field(&b, 101, 5);
    qh_pb_put_bytes_field(&b, QH_PB_MAX_FIELD, "zz", 2);
    qh_pb_put_bytes_field(&b, 12, "a doc string", 12);
    qh_pb_put_varint_field(&b, 14, 0); /* DEFAULT location */
    put_header(&b, QMM_DTYPE_UINT8, 1);
    qh_pb_put_bytes_field(&b, 9, "\x05", 1);
    qh_tensor t = parse_ok(&b);
    cr_assert_eq(((uint8_t *)t.t.data)[0], 5);
    qh_tensor_free(&t);
}

/* ---- malformed models ---------------------------------------------------------------- */

static uint8_t *model_bytes(const qh_model *m, size_t *len)
{
    uint8_t *enc;
    qh_error err;
    cr_assert_eq(qh_encode_model(m, &enc, len, &err), 0, "%s", err.msg);
    return enc;
}

/* Wraps node bytes (or any graph fields) into a ModelProto. */
static void model_from_graph(qh_pb_buf *graph, qh_pb_buf *model)
{
    qh_pb_buf_init(model);
    qh_pb_put_varint_field(model, 1, 8);
    qh_pb_put_message_field(model, 7, graph);
    qh_pb_buf_free(graph);
}

Test(onnx_model, node_count)
{
    qh_pb_buf g, m, n;
    qh_pb_buf_init(&n);
    qh_pb_put_string_field(&n, 4, "MatMulInteger");
    for (int count = 0; count <= 3; count++) {
        if (count == 1)
            continue;
        qh_pb_buf_init(&g);
        for (int i = 0; i < count; i++)
            qh_pb_put_message_field(&g, 1, &n);
        model_from_graph(&g, &m);
        char want[128];
        snprintf(want, sizeof want,
                 "model.onnx: GraphProto.node: expected exactly one node, found %d", count);
        qh_model out;
        qh_error err;
        cr_assert_eq(parse_model_bytes(m.data, m.len, &out, &err), -1);
        cr_assert_str_eq(err.msg, want);
        qh_pb_buf_free(&m);
    }
    qh_pb_buf_free(&n);

    static const uint8_t no_graph[] = {0x08, 0x05};
    expect_model_error(no_graph, sizeof no_graph, "ModelProto.graph: missing");
    expect_model_error(NULL, 0, "ModelProto.graph: missing");
}

Test(onnx_model, initializers_and_unsupported_attributes)
{
    qh_pb_buf g, m, n, a;
    qh_pb_buf_init(&n);
    qh_pb_put_string_field(&n, 4, "X");
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_put_bytes_field(&g, 5, "", 0);
    model_from_graph(&g, &m);
    expect_model_error(m.data, m.len,
                       "GraphProto.initializer: initializers are not supported in node tests");
    qh_pb_buf_free(&m);

    /* a GRAPH attribute, the name after the value */
    qh_pb_buf_init(&a);
    qh_pb_put_bytes_field(&a, 6, "", 0);
    qh_pb_put_varint_field(&a, 20, 5);
    qh_pb_put_string_field(&a, 1, "then_branch");
    qh_pb_put_message_field(&n, 5, &a);
    qh_pb_buf_free(&a);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &m);
    expect_model_error(m.data, m.len,
                       "model.onnx: AttributeProto.type: attribute 'then_branch' has type GRAPH");
    qh_pb_buf_free(&m);
    qh_pb_buf_free(&n);

    /* INTS without a type field (pre-IR-3 style) */
    qh_pb_buf_init(&n);
    qh_pb_buf_init(&a);
    qh_pb_put_string_field(&a, 1, "perm");
    qh_pb_put_varint_field(&a, 8, 1);
    qh_pb_put_message_field(&n, 5, &a);
    qh_pb_buf_free(&a);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &m);
    expect_model_error(m.data, m.len, "AttributeProto.ints: attribute 'perm'");
    qh_pb_buf_free(&m);
    qh_pb_buf_free(&n);

    /* an untyped INT attribute is inferred */
    qh_pb_buf_init(&n);
    qh_pb_buf_init(&a);
    qh_pb_put_string_field(&a, 1, "axis");
    qh_pb_put_varint_field(&a, 3, 2);
    qh_pb_put_message_field(&n, 5, &a);
    qh_pb_buf_free(&a);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &m);
    qh_model out;
    qh_error err;
    cr_assert_eq(parse_model_bytes(m.data, m.len, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(out.n_attrs, 1);
    cr_assert_eq(out.attrs[0].type, QH_ATTR_INT);
    cr_assert_eq(out.attrs[0].i, 2);
    qh_pb_buf_free(&m);
    qh_pb_buf_free(&n);
}

Test(onnx_model, array_limits)
{
    qh_model *m = malloc(sizeof *m);
    qh_pb_buf g, mb, n, a;
    /* 17 node inputs */
    qh_pb_buf_init(&n);
    for (int i = 0; i <= QH_MAX_IO; i++)
        qh_pb_put_string_field(&n, 1, "x");
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_buf_free(&n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "NodeProto.input: more than 16 inputs");
    qh_pb_buf_free(&mb);
    /* a 17th node input that is no string either: every field's wire type is checked first,
     * before what its handler checks (the reader used to count node inputs first) */
    qh_pb_buf_init(&n);
    for (int i = 0; i < QH_MAX_IO; i++)
        qh_pb_put_string_field(&n, 1, "x");
    qh_pb_put_varint_field(&n, 1, 5);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_buf_free(&n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len,
                       "NodeProto.input: wire type 0 (varint), expected length-delimited");
    qh_pb_buf_free(&mb);
    /* 17 attributes */
    qh_pb_buf_init(&n);
    for (int i = 0; i <= QH_MAX_ATTRS; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "a%d", i);
        qh_pb_buf_init(&a);
        qh_pb_put_string_field(&a, 1, nm);
        qh_pb_put_varint_field(&a, 3, 1);
        qh_pb_put_varint_field(&a, 20, 2);
        qh_pb_put_message_field(&n, 5, &a);
        qh_pb_buf_free(&a);
    }
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_buf_free(&n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "NodeProto.attribute: more than 16 attributes");
    qh_pb_buf_free(&mb);
    /* 9 opsets, 17 graph inputs, a rank-9 shape */
    fill_model(m);
    size_t len;
    uint8_t *enc = model_bytes(m, &len);
    qh_pb_buf extra;
    qh_pb_buf_init(&extra);
    qh_pb_put_raw(&extra, enc, len);
    free(enc);
    for (int i = 0; i < QH_MAX_OPSETS - 1; i++) { /* domains "a", "b", ...: each once */
        const char imp[5] = {0x0a, 0x01, (char)('a' + i), 0x10, 0x01};
        qh_pb_put_bytes_field(&extra, 8, imp, 5);
    }
    expect_model_error(extra.data, extra.len, "ModelProto.opset_import: more than 8");
    qh_pb_buf_free(&extra);

    fill_model(m);
    m->n_graph_inputs = QH_MAX_IO;
    for (int i = 0; i < QH_MAX_IO; i++)
        m->graph_inputs[i].rank = -1;
    enc = model_bytes(m, &len);
    /* append a 17th input to the graph: a second GraphProto occurrence merges */
    qh_pb_buf_init(&extra);
    qh_pb_put_raw(&extra, enc, len);
    free(enc);
    qh_pb_buf_init(&g);
    qh_pb_put_bytes_field(&g, 11, "\x0a\x01z", 3);
    qh_pb_put_message_field(&extra, 7, &g);
    qh_pb_buf_free(&g);
    expect_model_error(extra.data, extra.len, "GraphProto.input: more than 16 inputs");
    qh_pb_buf_free(&extra);

    /* rank 9 value info */
    qh_pb_buf vi, tp, tt, sh;
    qh_pb_buf_init(&sh);
    for (int i = 0; i < 9; i++)
        qh_pb_put_bytes_field(&sh, 1, "\x08\x01", 2);
    qh_pb_buf_init(&tt);
    qh_pb_put_varint_field(&tt, 1, 1);
    qh_pb_put_message_field(&tt, 2, &sh);
    qh_pb_buf_init(&tp);
    qh_pb_put_message_field(&tp, 1, &tt);
    qh_pb_buf_init(&vi);
    qh_pb_put_string_field(&vi, 1, "v");
    qh_pb_put_message_field(&vi, 2, &tp);
    qh_pb_buf_init(&n);
    qh_pb_put_string_field(&n, 4, "X");
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_put_message_field(&g, 11, &vi);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "TensorShapeProto.dim: rank exceeds 8");
    qh_pb_buf_free(&mb);
    qh_pb_buf_free(&n);
    qh_pb_buf_free(&vi);
    qh_pb_buf_free(&tp);
    qh_pb_buf_free(&tt);
    qh_pb_buf_free(&sh);
    free(m);
}

Test(onnx_model, symbolic_dims_and_names)
{
    /* dim_param becomes -1; a too-long op_type is an error */
    qh_pb_buf vi, tp, tt, sh, d, n, g, mb;
    qh_pb_buf_init(&d);
    qh_pb_put_string_field(&d, 2, "batch");
    qh_pb_buf_init(&sh);
    qh_pb_put_message_field(&sh, 1, &d);
    qh_pb_put_bytes_field(&sh, 1, "\x08\x07", 2);
    qh_pb_buf_init(&tt);
    qh_pb_put_message_field(&tt, 2, &sh);
    qh_pb_put_varint_field(&tt, 1, 3);
    qh_pb_buf_init(&tp);
    qh_pb_put_message_field(&tp, 1, &tt);
    qh_pb_buf_init(&vi);
    qh_pb_put_message_field(&vi, 2, &tp);
    qh_pb_put_string_field(&vi, 1, "v");
    qh_pb_buf_init(&n);
    qh_pb_put_string_field(&n, 4, "X");
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    qh_pb_put_message_field(&g, 12, &vi);
    model_from_graph(&g, &mb);
    qh_model *m = malloc(sizeof *m);
    qh_error err;
    cr_assert_eq(parse_model_bytes(mb.data, mb.len, m, &err), 0, "%s", err.msg);
    cr_assert_eq(m->n_graph_outputs, 1);
    cr_assert_str_eq(m->graph_outputs[0].name, "v");
    cr_assert_eq(m->graph_outputs[0].elem_type, 3);
    cr_assert_eq(m->graph_outputs[0].rank, 2);
    cr_assert_eq(m->graph_outputs[0].dims[0], -1);
    cr_assert_eq(m->graph_outputs[0].dims[1], 7);
    check_model_fixed_point(m);
    qh_pb_buf_free(&mb);

    char longname[QH_NAME_MAX + 1];
    memset(longname, 'o', QH_NAME_MAX);
    longname[QH_NAME_MAX] = '\0';
    qh_pb_put_string_field(&n, 4, longname);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "NodeProto.op_type: string of 128 bytes");
    qh_pb_buf_free(&mb);
    qh_pb_buf_free(&n);

    qh_pb_buf_init(&n);
    qh_pb_put_bytes_field(&n, 3, "a\0", 2);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "NodeProto.name: string contains a NUL byte");
    qh_pb_buf_free(&mb);
    qh_pb_buf_free(&n);
    qh_pb_buf_free(&vi);
    qh_pb_buf_free(&tp);
    qh_pb_buf_free(&tt);
    qh_pb_buf_free(&sh);
    qh_pb_buf_free(&d);
    free(m);
}

Test(onnx_model, wrong_wire_types)
{
    static const uint8_t ir[] = {0x0d, 0, 0, 0, 0}; /* ir_version as fixed32 */
    expect_model_error(ir, sizeof ir, "model.onnx: ModelProto.ir_version: wire type 5");
    qh_pb_buf n, g, mb, a;
    qh_pb_buf_init(&a);
    qh_pb_put_string_field(&a, 1, "alpha");
    qh_pb_put_varint_field(&a, 2, 1); /* f must be fixed32 */
    qh_pb_buf_init(&n);
    qh_pb_put_message_field(&n, 5, &a);
    qh_pb_buf_init(&g);
    qh_pb_put_message_field(&g, 1, &n);
    model_from_graph(&g, &mb);
    expect_model_error(mb.data, mb.len, "model.onnx: AttributeProto.f: wire type 0");
    qh_pb_buf_free(&mb);
    qh_pb_buf_free(&n);
    qh_pb_buf_free(&a);
}

/* ---- files --------------------------------------------------------------------------- */

/* A file written atomically goes through a new temporary file that nothing planted can take:
 * a symlink at the old predictable name (PATH.tmp.PID) made the write truncate its target. */
Test(onnx_files, an_atomic_write_never_follows_a_planted_temporary_name)
{
    char dir[] = "/tmp/qmm_onnx_io_XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256], victim[256], planted[300];
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(planted, sizeof planted, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(victim, "w");
    cr_assert(f);
    fputs("keep", f);
    fclose(f);
    cr_assert_eq(symlink(victim, planted), 0);
    qh_error err;
    cr_expect_eq(qh_write_file_atomic(path, "new", 3, &err), 0, "%s", err.msg);
    char got[16] = {0};
    f = fopen(victim, "r");
    cr_assert(f);
    cr_expect_eq(fread(got, 1, sizeof got - 1, f), 4);
    fclose(f);
    cr_expect_str_eq(got, "keep");
    struct stat st;
    cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", path);
    unlink(planted);
    unlink(victim);
    unlink(path);
    rmdir(dir);
}

Test(onnx_files, write_read_and_errors)
{
    char dir[] = "/tmp/qmm_onnx_io_XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256], mpath[256];
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    snprintf(mpath, sizeof mpath, "%s/model.onnx", dir);

    int16_t vals[6] = {1, -2, 3, -4, 5, -32768};
    qmm_tensor t = {.dtype = QMM_DTYPE_INT16, .rank = 2, .dims = {2, 3}, .data = vals};
    qh_error err;
    cr_assert_eq(qh_write_tensor_file(path, &t, "A", &err), 0, "%s", err.msg);
    qh_tensor back;
    cr_assert_eq(qh_read_tensor_file(path, &back, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(back.t.data, vals, sizeof vals), 0);
    qh_tensor_free(&back);

    qh_model *m = malloc(sizeof *m), *m2 = malloc(sizeof *m2);
    fill_model(m);
    cr_assert_eq(qh_write_model_file(mpath, m, &err), 0, "%s", err.msg);
    cr_assert_eq(qh_read_model_file(mpath, m2, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(m, m2, sizeof *m), 0);

    /* no temporary files are left behind */
    DIR *d = opendir(dir);
    struct dirent *de;
    int count = 0;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            cr_assert_null(strstr(de->d_name, ".tmp"), "left over: %s", de->d_name);
            count++;
        }
    closedir(d);
    cr_assert_eq(count, 2);

    /* over the size limit */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(qh_read_file(path, 4, &buf, &len, &err), -1);
    cr_assert(strstr(err.msg, path) == err.msg, "%s", err.msg);
    cr_assert_eq(qh_read_file(path, 1000, &buf, &len, &err), 0, "%s", err.msg);
    free(buf);

    /* a malformed file: error names the path */
    static const uint8_t junk[] = {0x4a, 0x7f};
    cr_assert_eq(qh_write_file_atomic(path, junk, sizeof junk, &err), 0, "%s", err.msg);
    cr_assert_eq(qh_read_tensor_file(path, &back, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s: TensorProto.raw_data: length 127 runs past the end", path);
    cr_assert(strstr(err.msg, want) == err.msg, "%s", err.msg);
    cr_assert_null(back.t.data);

    /* missing files and unwritable paths */
    unlink(path);
    cr_assert_eq(qh_read_tensor_file(path, &back, &err), -1);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.pb", dir);
    cr_assert_eq(qh_write_tensor_file(bad, &t, "A", &err), -1);
    cr_assert(strstr(err.msg, bad), "%s", err.msg);
    /* rename onto a directory fails and removes the temporary */
    cr_assert_eq(qh_write_file_atomic(dir, junk, sizeof junk, &err), -1);
    char tmp[300];
    glob_t g;
    snprintf(tmp, sizeof tmp, "%s.tmp*", dir);
    cr_assert_eq(glob(tmp, 0, NULL, &g), GLOB_NOMATCH, "left over: %s", tmp);
    cr_assert_eq(qh_read_file(dir, 100, &buf, &len, &err), -1);

    unlink(mpath);
    cr_assert_eq(rmdir(dir), 0);
    free(m);
    free(m2);
}

/* ---- deterministic mini-fuzz --------------------------------------------------------- */

/* An opset version is an int to every operator: a larger one (or a negative one) would wrap to
 * a small, valid-looking version, so it is an error naming the field. */
Test(onnx_model, opset_version_beyond_int)
{
    static const int64_t bad[] = {(int64_t)INT32_MAX + 1, ((int64_t)1 << 32) + 10, -1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qh_model m;
        fill_model(&m);
        m.opsets[0].version = bad[i];
        size_t len;
        uint8_t *enc = model_bytes(&m, &len);
        char want[128];
        snprintf(want, sizeof want, "OperatorSetIdProto.version: %lld is outside 0..2147483647",
                 (long long)bad[i]);
        expect_model_error(enc, len, want);
        free(enc);
    }
    qh_model m;
    fill_model(&m);
    m.opsets[0].version = INT32_MAX;
    size_t len;
    uint8_t *enc = model_bytes(&m, &len);
    qh_model back;
    qh_error err;
    cr_assert_eq(parse_model_bytes(enc, len, &back, &err), 0, "%s", err.msg);
    cr_assert_eq(back.opsets[0].version, INT32_MAX);
    free(enc);
}

/* qh_read_file refuses what is not a regular file, naming its kind, and does not block on a
 * FIFO that has no writer. */
Test(onnx_files, not_regular_files, .timeout = 10)
{
    char dir[] = "/tmp/qmm_onnx_XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256], want[300];
    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    uint8_t *buf;
    size_t len;
    qh_error err;
    cr_assert_eq(qh_read_file(path, 100, &buf, &len, &err), -1);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", path);
    cr_assert_str_eq(err.msg, want);
    unlink(path);
    cr_assert_eq(qh_read_file(dir, 100, &buf, &len, &err), -1);
    snprintf(want, sizeof want, "%s: not a regular file (a directory)", dir);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(qh_read_file("/dev/null", 100, &buf, &len, &err), -1);
    cr_assert_str_eq(err.msg, "/dev/null: not a regular file (a character device)");
    /* a regular file whose size says 0 and whose reads go on: a case's input_0.pb linked to
     * /proc/self/pagemap read 8.5 GB in 22 s, whatever QH_CASE_MEMORY said, before reads
     * stopped at the size */
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    cr_assert_eq(symlink("/proc/self/pagemap", path), 0);
    cr_assert_eq(qh_read_file(path, (size_t)1 << 40, &buf, &len, &err), -1);
    snprintf(want, sizeof want, "%s: its size says 0 bytes but it reads more", path);
    cr_assert(strstr(err.msg, want) == err.msg, "%s", err.msg);
    qh_tensor t;
    cr_assert_eq(qh_read_tensor_file(path, &t, &err), -1);
    cr_assert(strstr(err.msg, want) == err.msg, "%s", err.msg);
    unlink(path);
    cr_assert_eq(rmdir(dir), 0);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

Test(onnx_fuzz, mutations_never_crash, .timeout = 600)
{
    file_list fl = {0};
    collect(tests_dir(), &fl);
    size_t *lens = calloc(fl.n, sizeof *lens);
    uint8_t **bufs = calloc(fl.n, sizeof *bufs);
    for (size_t i = 0; i < fl.n; i++)
        bufs[i] = slurp(fl.paths[i], &lens[i]);

    static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x4a,
                                          0x08, 0x10, 0x3a, 0x42};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t parsed_ok = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t fi = rng_next(&seed) % fl.n;
        size_t len = lens[fi];
        uint8_t *buf = malloc(len + 16);
        memcpy(buf, bufs[fi], len);
        int nmut = 1 + (int)(rng_next(&seed) % 4);
        for (int k = 0; k < nmut && len; k++) {
            size_t pos = rng_next(&seed) % len;
            switch (rng_next(&seed) % 5) {
            case 0:
                buf[pos] ^= (uint8_t)(1u << (rng_next(&seed) % 8));
                break;
            case 1:
                buf[pos] = interesting[rng_next(&seed) % sizeof interesting];
                break;
            case 2:
                len = pos; /* truncate */
                break;
            case 3:
                buf[pos] = (uint8_t)rng_next(&seed);
                break;
            default: /* insert a byte */
                if (len < lens[fi] + 16) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = (uint8_t)rng_next(&seed);
                    len++;
                }
                break;
            }
        }
        /* an exact-size copy so ASan sees any overread */
        uint8_t *exact = exact_copy(buf, len);
        free(buf);
        qh_error err;
        if (is_model(fl.paths[fi])) {
            qh_model *m = malloc(sizeof *m);
            if (qh_parse_model(exact, len, "model.onnx", m, &err) == 0) {
                parsed_ok++;
                check_model_fixed_point(m);
            }
            free(m);
        } else {
            qh_tensor t;
            if (qh_parse_tensor(exact, len, "x.pb", &t, &err) == 0) {
                parsed_ok++;
                check_tensor_fixed_point(&t);
                qh_tensor_free(&t);
            }
        }
        free(exact);
    }
    /* The mutations must not all be trivially rejected, or the loop tests nothing. */
    cr_assert_gt(parsed_ok, 500, "only %zu mutants parsed", parsed_ok);
    for (size_t i = 0; i < fl.n; i++)
        free(bufs[i]);
    free(bufs);
    free(lens);
    file_list_free(&fl);
}
