/* ops/operator.c — the operator table (ops/operator.h) and the accessors that read a call
 * through it. */
#include "ops/operator.h"

#include <string.h>

#include "ops/qmm_ops.h"

#define BIT(t) (1u << (t))
#define INT8S (BIT(QMM_DTYPE_UINT8) | BIT(QMM_DTYPE_INT8))
#define FLOAT8S                                                                              \
    (BIT(QMM_DTYPE_FLOAT8E4M3FN) | BIT(QMM_DTYPE_FLOAT8E4M3FNUZ) |                           \
     BIT(QMM_DTYPE_FLOAT8E5M2) | BIT(QMM_DTYPE_FLOAT8E5M2FNUZ))
#define SCALES21 (BIT(QMM_DTYPE_FLOAT) | BIT(QMM_DTYPE_FLOAT16) | BIT(QMM_DTYPE_BFLOAT16))

#define AT(member) offsetof(qmm_call, u.member)
#define IN(member, nm) {(nm), AT(member), 0}
#define OPT(member, nm) {(nm), AT(member), 1}

/* ---- type rules (docs/semantics.md §2.1, §3, §4) ----------------------------------------- */

/* QLinearMatMul: opset 10 takes uint8/int8 and float scales; 21 adds the float8 types and
 * float16/bfloat16 scales. Inputs 1, 4, 6 are the scales. */
static uint32_t qlm_types(int32_t opset, int32_t i)
{
    int scale = i == 1 || i == 4 || i == 6;
    if (opset >= 21)
        return scale ? SCALES21 : INT8S | FLOAT8S;
    return scale ? BIT(QMM_DTYPE_FLOAT) : INT8S;
}

static uint32_t mmi_types(int32_t opset, int32_t i)
{
    (void)opset;
    (void)i;
    return INT8S;
}

/* QOrderedMatMul: A, B, C int8 (inputs 0, 2, 6); the scales and the bias float. */
static uint32_t qom_types(int32_t opset, int32_t i)
{
    (void)opset;
    return i == 0 || i == 2 || i == 6 ? BIT(QMM_DTYPE_INT8) : BIT(QMM_DTYPE_FLOAT);
}

/* MatMulNBits: A, scales, bias of T1 (float, float16, bfloat16); B uint8; zero_points uint8
 * (packed) or T1; g_idx int32. */
static uint32_t mnb_types(int32_t opset, int32_t i)
{
    (void)opset;
    switch (i) {
    case 1: return BIT(QMM_DTYPE_UINT8);
    case 3: return BIT(QMM_DTYPE_UINT8) | SCALES21;
    case 4: return BIT(QMM_DTYPE_INT32);
    default: return SCALES21;
    }
}

/* DequantizeLinear (opset 21 on): x of the integer and float8 types this checker models, the
 * scale float/float16/bfloat16, the zero point x's type. */
static uint32_t dql_types(int32_t opset, int32_t i)
{
    (void)opset;
    uint32_t x = INT8S | FLOAT8S | BIT(QMM_DTYPE_INT16) | BIT(QMM_DTYPE_UINT16) |
                 BIT(QMM_DTYPE_INT32);
    return i == 1 ? SCALES21 : x;
}

/* DynamicQuantizeMatMul: A float, B and b_zero_point int8/uint8, b_scale and bias float. */
static uint32_t dqm_types(int32_t opset, int32_t i)
{
    (void)opset;
    return i == 1 || i == 3 ? INT8S : BIT(QMM_DTYPE_FLOAT);
}

/* MatMulIntegerToFloat: A, B and their zero points int8/uint8, scales and bias T3 (float,
 * float16). */
static uint32_t mif_types(int32_t opset, int32_t i)
{
    (void)opset;
    return i == 0 || i == 1 || i == 4 || i == 5 ? INT8S
                                                : BIT(QMM_DTYPE_FLOAT) | BIT(QMM_DTYPE_FLOAT16);
}

/* ---- y's shape and validation: adapters onto one signature --------------------------------- */

static qmm_status_code matmul_y_shape(const qmm_tensor *a, const qmm_tensor *b, int32_t *rank,
                                      int64_t *dims, qmm_status *st)
{
    qmm_geometry g;
    qmm_status_code rc = qmm_matmul_geometry(a, b, &g, st);
    if (rc == QMM_OK) {
        *rank = g.y_rank;
        memcpy(dims, g.y_dims, sizeof g.y_dims);
    }
    return rc;
}

static qmm_status_code qlm_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    return matmul_y_shape(&c->u.qlinearmatmul.a, &c->u.qlinearmatmul.b, rank, dims, st);
}

static qmm_status_code mmi_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    return matmul_y_shape(&c->u.matmulinteger.a, &c->u.matmulinteger.b, rank, dims, st);
}

static qmm_status_code qom_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    return qmm_qordered_y_shape(&c->u.qorderedmatmul.a, &c->u.qorderedmatmul.b, rank, dims, st);
}

static qmm_status_code mnb_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    const qmm_matmulnbits *m = &c->u.matmulnbits;
    QMM_TRY(qmm_check_tensor(&m->a, "A", st));
    if (m->a.rank < 1)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "A: rank 0 is invalid");
    /* y's last dimension is the attribute N: only where B's rows say so too (validation says
     * the rest), so that an N of 2^29 beside a B of 3 rows does not size a y of 4 GiB for a
     * call the reference rejects, nor a negative one a y that cannot be made */
    if (m->n < 1 || m->b.rank < 1 || m->b.dims[0] != m->n)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "N: not B's first dimension");
    *rank = m->a.rank;
    memcpy(dims, m->a.dims, sizeof m->a.dims);
    dims[m->a.rank - 1] = m->n;
    return QMM_OK;
}

static qmm_status_code dql_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    const qmm_dequantizelinear *d = &c->u.dequantizelinear;
    QMM_TRY(qmm_check_tensor(&d->x, "x", st));
    *rank = d->x.rank;
    memcpy(dims, d->x.dims, sizeof d->x.dims);
    return QMM_OK;
}

static int32_t dql_y_dtype(const qmm_call *c)
{
    const qmm_dequantizelinear *d = &c->u.dequantizelinear;
    return d->output_dtype ? d->output_dtype : d->x_scale.dtype;
}

static qmm_status_code dqm_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    return matmul_y_shape(&c->u.dynamicquantizematmul.a, &c->u.dynamicquantizematmul.b, rank,
                          dims, st);
}

static qmm_status_code mif_y_shape(const qmm_call *c, int32_t *rank, int64_t *dims,
                                   qmm_status *st)
{
    return matmul_y_shape(&c->u.matmul_integer_to_float.a, &c->u.matmul_integer_to_float.b,
                          rank, dims, st);
}

/* The table's validators answer accept or reject; a backend that wants the plan the validation
 * built calls the operator's own validator (ops/qmm_ops.h), which returns it. */
static qmm_status_code qlm_validate(const qmm_call *c, qmm_status *st)
{
    qmm_plan plan;
    return qmm_validate_qlinearmatmul(&c->u.qlinearmatmul, &plan, st);
}

static qmm_status_code mmi_validate(const qmm_call *c, qmm_status *st)
{
    qmm_plan plan;
    return qmm_validate_matmulinteger(&c->u.matmulinteger, &plan, st);
}

static qmm_status_code qom_validate(const qmm_call *c, qmm_status *st)
{
    qmm_qordered_plan plan;
    return qmm_validate_qorderedmatmul(&c->u.qorderedmatmul, &plan, st);
}

static qmm_status_code mnb_validate(const qmm_call *c, qmm_status *st)
{
    qmm_nbits_plan plan;
    return qmm_validate_matmulnbits(&c->u.matmulnbits, &plan, st);
}

static qmm_status_code dql_validate(const qmm_call *c, qmm_status *st)
{
    qmm_dql_plan plan;
    return qmm_validate_dequantizelinear(&c->u.dequantizelinear, &plan, st);
}

static qmm_status_code dqm_validate(const qmm_call *c, qmm_status *st)
{
    qmm_i2f_plan plan;
    return qmm_validate_dynamicquantizematmul(&c->u.dynamicquantizematmul, &plan, st);
}

static qmm_status_code mif_validate(const qmm_call *c, qmm_status *st)
{
    qmm_i2f_plan plan;
    return qmm_validate_matmul_integer_to_float(&c->u.matmul_integer_to_float, &plan, st);
}

/* ---- the table ------------------------------------------------------------------------------ */

#define ORDER(member, nm)                                                                    \
    {(nm), AT(qorderedmatmul.member), 1, 0, QMM_ORDER_COL, QMM_ORDER_COL32_2R_4R4,           \
     "a cublasLt order 0..4"}

static const qmm_op_desc table[] = {
    {
        .kind = QMM_OP_QLINEARMATMUL,
        .domain = "",
        .op_type = "QLinearMatMul",
        .slug = "qlinearmatmul",
        .opset_min = 10,
        .opset_max = 21,
        .opset_offset = (ptrdiff_t)AT(qlinearmatmul.opset),
        .n_inputs = 8,
        .inputs = {IN(qlinearmatmul.a, "a"), IN(qlinearmatmul.a_scale, "a_scale"),
                   IN(qlinearmatmul.a_zero_point, "a_zero_point"), IN(qlinearmatmul.b, "b"),
                   IN(qlinearmatmul.b_scale, "b_scale"),
                   IN(qlinearmatmul.b_zero_point, "b_zero_point"),
                   IN(qlinearmatmul.y_scale, "y_scale"),
                   IN(qlinearmatmul.y_zero_point, "y_zero_point")},
        .a_input = 0,
        .b_input = 3,
        .output_name = "y",
        .output_offset = AT(qlinearmatmul.y),
        .output_dtype = QMM_DTYPE_UNDEFINED,
        .output_dtype_input = 7,
        .input_types = qlm_types,
        .y_shape = qlm_y_shape,
        .validate = qlm_validate,
        .compare = QMM_COMPARE_EXACT,
    },
    {
        .kind = QMM_OP_MATMULINTEGER,
        .domain = "",
        .op_type = "MatMulInteger",
        .slug = "matmulinteger",
        .opset_min = 10,
        .opset_max = 10,
        .opset_offset = -1,
        .n_inputs = 4,
        .inputs = {IN(matmulinteger.a, "A"), IN(matmulinteger.b, "B"),
                   OPT(matmulinteger.a_zero_point, "a_zero_point"),
                   OPT(matmulinteger.b_zero_point, "b_zero_point")},
        .a_input = 0,
        .b_input = 1,
        .output_name = "Y",
        .output_offset = AT(matmulinteger.y),
        .output_dtype = QMM_DTYPE_INT32,
        .output_dtype_input = -1,
        .input_types = mmi_types,
        .y_shape = mmi_y_shape,
        .validate = mmi_validate,
        .compare = QMM_COMPARE_EXACT,
    },
    {
        .kind = QMM_OP_QORDEREDMATMUL,
        .domain = "com.microsoft",
        .op_type = "QOrderedMatMul",
        .slug = "qorderedmatmul",
        .opset_min = 1,
        .opset_max = 1,
        .import_required = 1,
        .opset_offset = -1,
        .n_inputs = 8,
        .inputs = {IN(qorderedmatmul.a, "A"), IN(qorderedmatmul.scale_a, "scale_A"),
                   IN(qorderedmatmul.b, "B"), IN(qorderedmatmul.scale_b, "scale_B"),
                   IN(qorderedmatmul.scale_y, "scale_Y"), OPT(qorderedmatmul.bias, "bias"),
                   OPT(qorderedmatmul.c, "C"), OPT(qorderedmatmul.scale_c, "scale_C")},
        .a_input = 0,
        .b_input = 2,
        .output_name = "Y",
        .output_offset = AT(qorderedmatmul.y),
        .output_dtype = QMM_DTYPE_INT8,
        .output_dtype_input = -1,
        .n_attrs = 3,
        .attrs = {ORDER(order_a, "order_A"), ORDER(order_b, "order_B"),
                  ORDER(order_y, "order_Y")},
        .input_types = qom_types,
        .y_shape = qom_y_shape,
        .validate = qom_validate,
        .compare = QMM_COMPARE_EXACT,
    },
    {
        .kind = QMM_OP_MATMULNBITS,
        .domain = "com.microsoft",
        .op_type = "MatMulNBits",
        .slug = "matmulnbits",
        .opset_min = 1,
        .opset_max = 1,
        .import_required = 1,
        .opset_offset = -1,
        .n_inputs = 6,
        .inputs = {IN(matmulnbits.a, "A"), IN(matmulnbits.b, "B"),
                   IN(matmulnbits.scales, "scales"), OPT(matmulnbits.zero_points, "zero_points"),
                   OPT(matmulnbits.g_idx, "g_idx"), OPT(matmulnbits.bias, "bias")},
        .a_input = 0,
        .b_input = 1,
        .output_name = "Y",
        .output_offset = AT(matmulnbits.y),
        .output_dtype = QMM_DTYPE_UNDEFINED,
        .output_dtype_input = 0,
        .n_attrs = 5,
        .attrs = {{"K", AT(matmulnbits.k), 1, 0, 1, INT32_MAX, "K >= 1"},
                  {"N", AT(matmulnbits.n), 1, 0, 1, INT32_MAX, "N >= 1"},
                  {"bits", AT(matmulnbits.bits), 0, 4, 2, 8, "bits 2, 4 or 8"},
                  {"block_size", AT(matmulnbits.block_size), 1, 0, 16, 1 << 30,
                   "a power of 2 >= 16"},
                  {"accuracy_level", AT(matmulnbits.accuracy_level), 0, 0, 0, 4,
                   "accuracy level 0..4"}},
        .input_types = mnb_types,
        .y_shape = mnb_y_shape,
        .validate = mnb_validate,
        .compare = QMM_COMPARE_ACCEPT,
    },
    {
        .kind = QMM_OP_DEQUANTIZELINEAR,
        .domain = "",
        .op_type = "DequantizeLinear",
        .slug = "dequantizelinear",
        .opset_min = 21,
        .opset_max = 25,
        .opset_offset = (ptrdiff_t)AT(dequantizelinear.opset),
        .n_inputs = 3,
        .inputs = {IN(dequantizelinear.x, "x"), IN(dequantizelinear.x_scale, "x_scale"),
                   OPT(dequantizelinear.x_zero_point, "x_zero_point")},
        .a_input = 0,
        .b_input = 1, /* no second operand: the scale stands in (edge tags, reduction) */
        .elementwise = 1,
        .output_name = "y",
        .output_offset = AT(dequantizelinear.y),
        .output_dtype = QMM_DTYPE_UNDEFINED,
        .output_dtype_input = 1,
        .output_dtype_of = dql_y_dtype,
        .n_attrs = 3,
        .attrs = {{"axis", AT(dequantizelinear.axis), 0, 1, -QMM_MAX_RANK, QMM_MAX_RANK - 1,
                   "an axis of x"},
                  {"block_size", AT(dequantizelinear.block_size), 0, 0, 0, INT32_MAX,
                   "block_size >= 0 (0: not blocked)"},
                  {"output_dtype", AT(dequantizelinear.output_dtype), 0, 0, 0, 16,
                   "0 or a float type (1, 10, 16), opset 23 on"}},
        .input_types = dql_types,
        .y_shape = dql_y_shape,
        .validate = dql_validate,
        .compare = QMM_COMPARE_ACCEPT,
    },
    {
        .kind = QMM_OP_DYNAMICQUANTIZEMATMUL,
        .domain = "com.microsoft",
        .op_type = "DynamicQuantizeMatMul",
        .slug = "dynamicquantizematmul",
        .opset_min = 1,
        .opset_max = 1,
        .import_required = 1,
        .opset_offset = -1,
        .n_inputs = 5,
        .inputs = {IN(dynamicquantizematmul.a, "A"), IN(dynamicquantizematmul.b, "B"),
                   IN(dynamicquantizematmul.b_scale, "b_scale"),
                   OPT(dynamicquantizematmul.b_zero_point, "b_zero_point"),
                   OPT(dynamicquantizematmul.bias, "bias")},
        .a_input = 0,
        .b_input = 1,
        .output_name = "Y",
        .output_offset = AT(dynamicquantizematmul.y),
        .output_dtype = QMM_DTYPE_FLOAT,
        .output_dtype_input = -1,
        .input_types = dqm_types,
        .y_shape = dqm_y_shape,
        .validate = dqm_validate,
        .compare = QMM_COMPARE_ACCEPT,
    },
    {
        .kind = QMM_OP_MATMUL_INTEGER_TO_FLOAT,
        .domain = "com.microsoft",
        .op_type = "MatMulIntegerToFloat",
        .slug = "matmul_integer_to_float",
        .opset_min = 1,
        .opset_max = 1,
        .import_required = 1,
        .opset_offset = -1,
        .n_inputs = 7,
        .inputs = {IN(matmul_integer_to_float.a, "A"), IN(matmul_integer_to_float.b, "B"),
                   IN(matmul_integer_to_float.a_scale, "a_scale"),
                   IN(matmul_integer_to_float.b_scale, "b_scale"),
                   OPT(matmul_integer_to_float.a_zero_point, "a_zero_point"),
                   OPT(matmul_integer_to_float.b_zero_point, "b_zero_point"),
                   OPT(matmul_integer_to_float.bias, "bias")},
        .a_input = 0,
        .b_input = 1,
        .output_name = "Y",
        .output_offset = AT(matmul_integer_to_float.y),
        .output_dtype = QMM_DTYPE_UNDEFINED,
        .output_dtype_input = 2,
        .input_types = mif_types,
        .y_shape = mif_y_shape,
        .validate = mif_validate,
        .compare = QMM_COMPARE_ACCEPT,
    },
};

#define N_OPS ((int32_t)(sizeof table / sizeof table[0]))

int32_t qmm_op_count(void) { return N_OPS; }

const qmm_op_desc *qmm_op_at(int32_t i) { return i >= 0 && i < N_OPS ? &table[i] : NULL; }

const qmm_op_desc *qmm_op_desc_of(qmm_op_kind kind)
{
    for (int32_t i = 0; i < N_OPS; i++)
        if (table[i].kind == kind)
            return &table[i];
    return NULL;
}

static int onnx_domain(const char *d) { return d[0] == '\0' || strcmp(d, "ai.onnx") == 0; }

const qmm_op_desc *qmm_op_lookup(const char *domain, const char *op_type)
{
    for (int32_t i = 0; i < N_OPS; i++) {
        const qmm_op_desc *d = &table[i];
        int same_domain = onnx_domain(d->domain) ? onnx_domain(domain)
                                                 : strcmp(domain, d->domain) == 0;
        if (same_domain && strcmp(op_type, d->op_type) == 0)
            return d;
    }
    return NULL;
}

/* ---- a call read through its descriptor ------------------------------------------------------ */

const qmm_op_desc *qmm_call_desc(const qmm_call *c) { return qmm_op_desc_of(c->op); }

static void *field(const qmm_call *c, size_t offset) { return (char *)c + offset; }

qmm_tensor *qmm_call_input(qmm_call *c, int32_t i)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    return d && i >= 0 && i < d->n_inputs ? field(c, d->inputs[i].offset) : NULL;
}

const qmm_tensor *qmm_call_input_c(const qmm_call *c, int32_t i)
{
    return qmm_call_input((qmm_call *)c, i);
}

qmm_tensor *qmm_call_output(qmm_call *c)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    return d ? field(c, d->output_offset) : NULL;
}

const qmm_tensor *qmm_call_output_c(const qmm_call *c)
{
    return qmm_call_output((qmm_call *)c);
}

int32_t *qmm_call_attr(qmm_call *c, int32_t i)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    return d && i >= 0 && i < d->n_attrs ? field(c, d->attrs[i].offset) : NULL;
}

int32_t qmm_call_attr_value(const qmm_call *c, int32_t i)
{
    const int32_t *v = qmm_call_attr((qmm_call *)c, i);
    return v ? *v : 0;
}

int32_t qmm_call_opset(const qmm_call *c)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    if (!d)
        return 0;
    return d->opset_offset >= 0 ? *(const int32_t *)field(c, (size_t)d->opset_offset)
                                : d->opset_min;
}

void qmm_call_init(qmm_call *c, qmm_op_kind kind, int32_t opset)
{
    memset(c, 0, sizeof *c);
    c->op = kind;
    const qmm_op_desc *d = qmm_call_desc(c);
    if (!d)
        return;
    if (d->opset_offset >= 0)
        *(int32_t *)field(c, (size_t)d->opset_offset) = opset;
    for (int32_t i = 0; i < d->n_attrs; i++)
        *qmm_call_attr(c, i) = d->attrs[i].def;
}

int32_t qmm_call_output_dtype(const qmm_call *c)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    if (!d)
        return QMM_DTYPE_UNDEFINED;
    if (d->output_dtype_of)
        return d->output_dtype_of(c);
    return d->output_dtype_input >= 0 ? qmm_call_input_c(c, d->output_dtype_input)->dtype
                                      : d->output_dtype;
}
