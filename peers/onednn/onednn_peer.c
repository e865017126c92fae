/* peers/onednn/onednn_peer.c — qmmcheck plugin over oneDNN's C API (dnnl_matmul).
 *
 * QLinearMatMul becomes an int8 matmul whose output scale is sa·sb/sy (per tensor, or per column
 * with mask 1 << (ndims-1)) and whose zero points are oneDNN zero-point attributes; MatMulInteger
 * becomes the same matmul with an s32 destination and no scale. Scales and zero points are
 * runtime arguments (DNNL_RUNTIME_*_VAL), so the capability query builds the very primitive
 * descriptor the call executes, and oneDNN itself says which forms it implements. What oneDNN
 * computes is passed through untouched: see README.md for how 2.6 rounds and saturates.
 */
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "../common/peer_call.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct onednn_peer {
    qmm_backend table;
    dnnl_engine_t engine;
    char description[160];
} onednn_peer;

/* The primitive a call maps to, and what it holds; NULL handles are not yet made. */
typedef struct plan {
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t pd;
    int ndims, scale_mask, zp_mask[3]; /* zp_mask: -1 when that zero point is not set */
    int64_t scale_count, zp_count[3];
} plan;

static const int zp_arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};

/* What one call is, once the ONNX names are gone. */
typedef struct request {
    const qmm_tensor *a, *b, *y, *zp[3];
    const qmm_tensor *scale[3]; /* QLinearMatMul only; NULL for MatMulInteger */
    int32_t y_dtype;
} request;

static void plan_free(plan *p)
{
    if (p->pd)
        dnnl_primitive_desc_destroy(p->pd);
    if (p->attr)
        dnnl_primitive_attr_destroy(p->attr);
}

static dnnl_data_type_t dnnl_type(int32_t t)
{
    return t == QMM_DTYPE_UINT8 ? dnnl_u8 : t == QMM_DTYPE_INT8 ? dnnl_s8 : dnnl_s32;
}

static dnnl_status_t row_major(dnnl_memory_desc_t *md, int nd, const int64_t *dims, int32_t t)
{
    dnnl_dims_t d, s;
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
        d[i] = dims[i];
        s[i] = stride;
        stride *= dims[i] > 0 ? dims[i] : 1;
    }
    return dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_type(t), s);
}

static const char *dnnl_why(dnnl_status_t s)
{
    switch (s) {
    case dnnl_unimplemented: return "no implementation (dnnl_unimplemented)";
    case dnnl_invalid_arguments: return "invalid arguments (dnnl_invalid_arguments)";
    case dnnl_out_of_memory: return "out of memory";
    default: return "error";
    }
}

/* The forms this mapping can hand to oneDNN at all; oneDNN then decides on the rest. */
static qmm_status_code check_forms(const request *r, const peer_geom *g, peer_form *zf,
                                   qmm_status *st)
{
    const int32_t types[3] = {r->a->dtype, r->b->dtype, r->y_dtype};
    for (int i = 0; i < 3; i++)
        if (types[i] != QMM_DTYPE_UINT8 && types[i] != QMM_DTYPE_INT8 &&
            !(i == 2 && types[i] == QMM_DTYPE_INT32))
            return qmm_status_set(st, QMM_UNSUPPORTED, "onednn: %s type %s is not an int8 type",
                                  i == 0 ? "a" : i == 1 ? "b" : "y", qmm_dtype_name(types[i]));
    const char *zname[3] = {"a_zero_point", "b_zero_point", "y_zero_point"};
    for (int i = 0; i < 3; i++) {
        zf[i] = r->zp[i] ? peer_form_of(r->zp[i], g->n) : PEER_ABSENT;
        if (zf[i] == PEER_OTHER || (i == 0 && zf[i] == PEER_COLUMN && g->n != 1))
            return qmm_status_set(st, QMM_UNSUPPORTED,
                                  "onednn: %s: only per-tensor%s zero points map onto oneDNN's "
                                  "zero-point masks", zname[i], i ? " or per-column" : "");
    }
    if (!r->scale[0])
        return QMM_OK;
    if (peer_form_of(r->scale[0], g->n) != PEER_TENSOR)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "onednn: a_scale: per-row scales have no output-scale mask in "
                              "oneDNN 2.6 (only common or per-N)");
    for (int i = 1; i < 3; i++)
        if (peer_form_of(r->scale[i], g->n) == PEER_OTHER)
            return qmm_status_set(st, QMM_UNSUPPORTED,
                                  "onednn: %s: only per-tensor or per-column scales map onto an "
                                  "output-scale mask", i == 1 ? "b_scale" : "y_scale");
    return QMM_OK;
}

/* The matmul primitive descriptor with runtime scales and zero points. */
static qmm_status_code make_plan(const onednn_peer *pe, const request *r, const peer_geom *g,
                                 plan *p, qmm_status *st)
{
    memset(p, 0, sizeof *p);
    peer_form zf[3];
    qmm_status_code rc = check_forms(r, g, zf, st);
    if (rc != QMM_OK)
        return rc;
    p->ndims = g->rank;
    int col_mask = 1 << (g->rank - 1);
    dnnl_memory_desc_t src, wei, dst;
    dnnl_matmul_desc_t md;
    dnnl_status_t s = row_major(&src, g->rank, g->a, r->a->dtype);
    if (s == dnnl_success)
        s = row_major(&wei, g->rank, g->b, r->b->dtype);
    if (s == dnnl_success)
        s = row_major(&dst, g->rank, g->y, r->y_dtype);
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&md, &src, &wei, NULL, &dst);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&p->attr);
    if (s == dnnl_success && r->scale[0]) {
        int percol = peer_form_of(r->scale[1], g->n) == PEER_COLUMN ||
                     peer_form_of(r->scale[2], g->n) == PEER_COLUMN;
        p->scale_mask = percol ? col_mask : 0;
        p->scale_count = percol ? g->n : 1;
        float rt = DNNL_RUNTIME_F32_VAL;
        s = dnnl_primitive_attr_set_output_scales(p->attr, 1, p->scale_mask, &rt);
    }
    for (int i = 0; i < 3 && s == dnnl_success; i++) {
        p->zp_mask[i] = -1;
        if (zf[i] == PEER_ABSENT)
            continue;
        p->zp_mask[i] = zf[i] == PEER_COLUMN ? col_mask : 0;
        p->zp_count[i] = zf[i] == PEER_COLUMN ? g->n : 1;
        int32_t rt = DNNL_RUNTIME_S32_VAL;
        s = dnnl_primitive_attr_set_zero_points(p->attr, zp_arg[i], 1, p->zp_mask[i], &rt);
    }
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(&p->pd, &md, p->attr, pe->engine, NULL);
    if (s != dnnl_success) {
        plan_free(p);
        memset(p, 0, sizeof *p);
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "onednn: oneDNN %d.%d.%d matmul %s x %s -> %s (%dD, scale mask %d, "
                              "per-column zero points a/b/y %d/%d/%d): %s",
                              DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH,
                              qmm_dtype_name(r->a->dtype), qmm_dtype_name(r->b->dtype),
                              qmm_dtype_name(r->y_dtype), g->rank, p->scale_mask,
                              zf[0] == PEER_COLUMN, zf[1] == PEER_COLUMN, zf[2] == PEER_COLUMN,
                              dnnl_why(s));
    }
    return QMM_OK;
}

/* One runtime-argument memory of `count` elements. */
static dnnl_status_t small_memory(dnnl_memory_t *m, dnnl_engine_t e, dnnl_data_type_t t,
                                  int64_t count, void *data)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {count};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&md, 1, d, t, dnnl_a);
    return s == dnnl_success ? dnnl_memory_create(m, &md, e, data) : s;
}

/* Builds the argument list, executes and waits. */
static qmm_status_code execute(const onednn_peer *pe, const request *r, const peer_geom *g,
                               const plan *p, qmm_status *st)
{
    float *scales = calloc((size_t)(p->scale_count > 0 ? p->scale_count : 1), sizeof(float));
    int32_t *zps[3] = {NULL, NULL, NULL};
    dnnl_memory_t mem[7] = {NULL};
    dnnl_exec_arg_t args[7];
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    int nargs = 0;
    dnnl_status_t s = scales ? dnnl_success : dnnl_out_of_memory;
    const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(p->pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wei = dnnl_primitive_desc_query_md(p->pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(p->pd, dnnl_query_dst_md, 0);
    const struct { int arg; const dnnl_memory_desc_t *md; void *data; } io[3] = {
        {DNNL_ARG_SRC, src, r->a->data}, {DNNL_ARG_WEIGHTS, wei, r->b->data},
        {DNNL_ARG_DST, dst, r->y->data}};
    for (int i = 0; i < 3 && s == dnnl_success; i++) {
        s = dnnl_memory_create(&mem[nargs], io[i].md, pe->engine, io[i].data);
        args[nargs].arg = io[i].arg;
        args[nargs].memory = mem[nargs];
        nargs += s == dnnl_success;
    }
    if (s == dnnl_success && r->scale[0]) {
        /* The requantization multiplier, each in double and rounded once to float. */
        float sa = peer_scale(r->scale[0], 0);
        peer_form fb = peer_form_of(r->scale[1], g->n), fy = peer_form_of(r->scale[2], g->n);
        for (int64_t j = 0; j < p->scale_count; j++)
            scales[j] = (float)((double)sa * peer_scale(r->scale[1], peer_param_index(fb, j)) /
                                peer_scale(r->scale[2], peer_param_index(fy, j)));
        s = small_memory(&mem[nargs], pe->engine, dnnl_f32, p->scale_count, scales);
        args[nargs].arg = DNNL_ARG_ATTR_OUTPUT_SCALES;
        args[nargs].memory = mem[nargs];
        nargs += s == dnnl_success;
    }
    for (int i = 0; i < 3 && s == dnnl_success; i++) {
        if (p->zp_mask[i] < 0)
            continue;
        zps[i] = malloc(sizeof(int32_t) * (size_t)p->zp_count[i]);
        if (!zps[i]) {
            s = dnnl_out_of_memory;
            break;
        }
        for (int64_t j = 0; j < p->zp_count[i]; j++)
            zps[i][j] = peer_q8(r->zp[i], j);
        s = small_memory(&mem[nargs], pe->engine, dnnl_s32, p->zp_count[i], zps[i]);
        args[nargs].arg = DNNL_ARG_ATTR_ZERO_POINTS | zp_arg[i];
        args[nargs].memory = mem[nargs];
        nargs += s == dnnl_success;
    }
    if (s == dnnl_success)
        s = dnnl_primitive_create(&prim, p->pd);
    if (s == dnnl_success)
        s = dnnl_stream_create(&stream, pe->engine, dnnl_stream_default_flags);
    if (s == dnnl_success)
        s = dnnl_primitive_execute(prim, stream, nargs, args);
    if (s == dnnl_success)
        s = dnnl_stream_wait(stream);
    if (stream)
        dnnl_stream_destroy(stream);
    if (prim)
        dnnl_primitive_destroy(prim);
    for (int i = 0; i < nargs; i++)
        dnnl_memory_destroy(mem[i]);
    for (int i = 0; i < 3; i++)
        free(zps[i]);
    free(scales);
    if (s != dnnl_success)
        return qmm_status_set(st, QMM_INTERNAL, "onednn: execution failed: %s", dnnl_why(s));
    return qmm_status_ok(st);
}

static void request_of(const qmm_call *call, request *r)
{
    memset(r, 0, sizeof *r);
    if (call->op == QMM_OP_QLINEARMATMUL) {
        const qmm_qlinearmatmul *q = &call->u.qlinearmatmul;
        *r = (request){&q->a, &q->b, &q->y, {&q->a_zero_point, &q->b_zero_point, &q->y_zero_point},
                       {&q->a_scale, &q->b_scale, &q->y_scale}, q->y_zero_point.dtype};
    } else {
        const qmm_matmulinteger *m = &call->u.matmulinteger;
        *r = (request){&m->a, &m->b, &m->y, {&m->a_zero_point, &m->b_zero_point, NULL},
                       {NULL, NULL, NULL}, QMM_DTYPE_INT32};
    }
}

static qmm_status_code onednn_query(const qmm_backend *self, const qmm_call *call,
                                    qmm_status *st)
{
    if (call->op != QMM_OP_QLINEARMATMUL && call->op != QMM_OP_MATMULINTEGER)
        return qmm_status_set(st, QMM_UNSUPPORTED, "onednn: %s has no oneDNN mapping",
                              qmm_op_name(call->op));
    request r;
    request_of(call, &r);
    peer_geom g;
    qmm_status ignored;
    if (peer_geometry(r.a, r.b, r.y, r.y_dtype, &g, &ignored) != QMM_OK)
        return qmm_status_ok(st); /* invalid: the operator function says so */
    plan p;
    qmm_status_code rc = make_plan((const onednn_peer *)self, &r, &g, &p, st);
    plan_free(&p);
    return rc == QMM_OK ? qmm_status_ok(st) : rc;
}

/* Validate as the ONNX front end does, then map and run. */
static qmm_status_code run(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    request r;
    request_of(call, &r);
    qmm_status_code rc = call->op == QMM_OP_QLINEARMATMUL
                             ? peer_check_qlinear(&call->u.qlinearmatmul, st)
                             : peer_check_integer(&call->u.matmulinteger, st);
    peer_geom g;
    if (rc == QMM_OK)
        rc = peer_geometry(r.a, r.b, r.y, r.y_dtype, &g, st);
    if (rc != QMM_OK)
        return rc;
    plan p;
    rc = make_plan((const onednn_peer *)self, &r, &g, &p, st);
    if (rc == QMM_OK)
        rc = execute((const onednn_peer *)self, &r, &g, &p, st);
    plan_free(&p);
    return rc;
}

static qmm_status_code onednn_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                            qmm_status *st)
{
    return run(self, &(qmm_call){.op = QMM_OP_QLINEARMATMUL, .u.qlinearmatmul = *c}, st);
}

static qmm_status_code onednn_matmulinteger(const qmm_backend *self, const qmm_matmulinteger *c,
                                            qmm_status *st)
{
    return run(self, &(qmm_call){.op = QMM_OP_MATMULINTEGER, .u.matmulinteger = *c}, st);
}

static void onednn_close(qmm_backend *self)
{
    onednn_peer *pe = (onednn_peer *)self;
    dnnl_engine_destroy(pe->engine);
    free(pe);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!peer_open_check("onednn", harness_abi, options, st))
        return NULL;
    onednn_peer *pe = calloc(1, sizeof *pe);
    if (!pe) {
        qmm_status_oom(st, "onednn", NULL);
        return NULL;
    }
    if (dnnl_engine_create(&pe->engine, dnnl_cpu, 0) != dnnl_success) {
        free(pe);
        qmm_status_set(st, QMM_INTERNAL, "onednn: no CPU engine");
        return NULL;
    }
    const dnnl_version_t *v = dnnl_version();
    snprintf(pe->description, sizeof pe->description,
             "oneDNN %d.%d.%d (%s, built against %d.%d.%d) int8 matmul", v->major, v->minor,
             v->patch, v->hash, DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH);
    qmm_backend_init(&pe->table, "onednn", pe->description, NULL);
    pe->table.query = onednn_query;
    pe->table.matmulinteger = onednn_matmulinteger;
    pe->table.qlinearmatmul = onednn_qlinearmatmul;
    pe->table.close = onednn_close;
    qmm_status_ok(st);
    return &pe->table;
}
