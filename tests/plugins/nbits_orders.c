/* tests/plugins/nbits_orders.c — a MatMulNBits plugin (float32 A, no g_idx) that forms
 * b̂ = RN32((q − zp)·s) as docs/semantics.md §8.2 says and sums each dot product in the order
 * its option names: order=sequential, reversed, pairwise or fma (a chain of fmaf) — the orders
 * a correct kernel may take, which the accept rule must pass — or order=doubled: the sequential
 * sum with its error doubled (2·ŷ − Σ in double), a kernel twice as wrong as a legitimate
 * one, which it must fail. tests/test_judge.c drives it through `qmmcheck run`.
 *
 * `order=NAME,bug=BUG` adds one bug a real kernel has had, which the edge suites must catch
 * (tests/test_edge.c): floor-blocks (k_blocks = K / block_size, the row stride of B and of the
 * scales when K is not a multiple of the block: hip-ep 588/720), zp-default-zero (absent zero
 * points read as 0, not 2^(bits-1)), zp-unpacked (packed zero points read one a byte),
 * drop-last-row (the last row of M = 129, 257, ... left 0: a 128-row tile loop that leaves the
 * remainder row to an M = 1 path that never runs), block512-zeros (every output 0 at
 * block_size 512: onnxruntime 28551). Built from the public headers only; compiled without
 * contraction, so each step rounds as written. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmm/qmm.h"
#include "../plugin_support.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

enum order { SEQUENTIAL, REVERSED, PAIRWISE, FMA, DOUBLED };
static const char *const order_names[] = {"sequential", "reversed", "pairwise", "fma",
                                          "doubled"};

enum bug { NO_BUG, FLOOR_BLOCKS, ZP_DEFAULT_ZERO, ZP_UNPACKED, DROP_LAST_ROW, BLOCK512_ZEROS };
static const char *const bug_names[] = {"none", "floor-blocks", "zp-default-zero", "zp-unpacked",
                                        "drop-last-row", "block512-zeros"};

typedef struct orders {
    enum order order;
    enum bug bug;
} orders;

static float f32_at(const qmm_tensor *t, int64_t i)
{
    float v;
    memcpy(&v, (const unsigned char *)t->data + 4 * i, 4);
    return v;
}

static qmm_status_code o_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    (void)self;
    const qmm_matmulnbits *c = &call->u.matmulnbits;
    if (call->op != QMM_OP_MATMULNBITS || c->a.dtype != QMM_DTYPE_FLOAT ||
        qmm_tensor_present(&c->g_idx))
        return qmm_status_set(st, QMM_UNSUPPORTED, "nbits_orders: float32 MatMulNBits only");
    if (qmm_tensor_present(&c->zero_points) && qmm_tensor_numel(&c->zero_points) == 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "zero_points: present but empty");
    return QMM_OK;
}

static float pairwise(const float *p, int64_t n)
{
    if (n == 1)
        return p[0];
    int64_t h = n / 2;
    float l = pairwise(p, h), r = pairwise(p + h, n - h);
    return l + r;
}

static qmm_status_code o_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    qmm_status_code code = o_query(self, call, st);
    if (code != QMM_OK)
        return code;
    enum order order = ((const orders *)self->impl)->order;
    enum bug bug = ((const orders *)self->impl)->bug;
    qmm_matmulnbits *c = &call->u.matmulnbits;
    int64_t k_total = c->k, n_cols = c->n, bs = c->block_size, bits = c->bits;
    int64_t kb = bug == FLOOR_BLOCKS ? k_total / bs : (k_total + bs - 1) / bs;
    int64_t blob = bs * bits / 8;
    int64_t rows = k_total ? qmm_tensor_numel(&c->a) / k_total : 0;
    int64_t zp_row = (kb * bits + 7) / 8;
    float *w = malloc((size_t)(k_total ? k_total : 1) * sizeof *w);
    float *p = malloc((size_t)(k_total ? k_total : 1) * sizeof *p);
    if (!w || !p) {
        free(w);
        free(p);
        return qmm_status_set(st, QMM_OUT_OF_MEMORY, "nbits_orders: no memory");
    }
    const uint8_t *b = c->b.data;
    for (int64_t n = 0; n < n_cols; n++) {
        for (int64_t k = 0; k < k_total; k++) { /* b̂ of column n */
            int64_t blk = k / bs, pos = k % bs;
            int q = (b[(n * kb + blk) * blob + pos * bits / 8] >> (pos * bits % 8)) &
                    ((1 << bits) - 1);
            float s = f32_at(&c->scales, n * kb + blk);
            if (!qmm_tensor_present(&c->zero_points)) {
                w[k] = (float)(q - (bug == ZP_DEFAULT_ZERO ? 0 : 1 << (bits - 1))) * s;
            } else if (c->zero_points.dtype == QMM_DTYPE_UINT8) {
                const uint8_t *z = c->zero_points.data;
                int zp = (z[n * zp_row + blk * bits / 8] >> (blk * bits % 8)) & ((1 << bits) - 1);
                if (bug == ZP_UNPACKED)
                    zp = z[n * zp_row + blk % zp_row];
                w[k] = (float)(q - zp) * s;
            } else {
                w[k] = ((float)q - f32_at(&c->zero_points, n * kb + blk)) * s;
            }
        }
        for (int64_t r = 0; r < rows; r++) {
            float acc = 0.0f;
            double exact = 0.0;
            for (int64_t k = 0; k < k_total; k++) {
                p[k] = f32_at(&c->a, r * k_total + k) * w[k];
                exact += (double)f32_at(&c->a, r * k_total + k) * (double)w[k];
            }
            switch (order) {
            case REVERSED:
                for (int64_t k = k_total - 1; k >= 0; k--)
                    acc = acc + p[k];
                break;
            case PAIRWISE:
                acc = k_total ? pairwise(p, k_total) : 0.0f;
                break;
            case FMA:
                for (int64_t k = 0; k < k_total; k++)
                    acc = fmaf(f32_at(&c->a, r * k_total + k), w[k], acc);
                break;
            default:
                for (int64_t k = 0; k < k_total; k++)
                    acc = acc + p[k];
                break;
            }
            if (qmm_tensor_present(&c->bias)) {
                acc = acc + f32_at(&c->bias, n);
                exact += f32_at(&c->bias, n);
            }
            if (order == DOUBLED) /* R + 2·(ŷ − R), R about the double sum */
                acc = (float)(2.0 * (double)acc - exact);
            if ((bug == DROP_LAST_ROW && rows > 128 && rows % 128 == 1 && r == rows - 1) ||
                (bug == BLOCK512_ZEROS && bs == 512))
                acc = 0.0f;
            memcpy((unsigned char *)c->y.data + 4 * (r * n_cols + n), &acc, 4);
        }
    }
    free(w);
    free(p);
    return QMM_OK;
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("nbits_orders", harness_abi, st))
        return NULL;
    int order = -1, bug = 0;
    const char *comma = strchr(options, ',');
    size_t len = comma ? (size_t)(comma - options) : strlen(options);
    for (int i = 0; i < (int)(sizeof order_names / sizeof order_names[0]); i++)
        if (strncmp(options, "order=", 6) == 0 && len == 6 + strlen(order_names[i]) &&
            strncmp(options + 6, order_names[i], len - 6) == 0)
            order = i;
    if (comma) {
        bug = -1;
        for (int i = 1; i < (int)(sizeof bug_names / sizeof bug_names[0]); i++)
            if (strncmp(comma + 1, "bug=", 4) == 0 && strcmp(comma + 5, bug_names[i]) == 0)
                bug = i;
    }
    if (order < 0 || bug < 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "nbits_orders: options must be order=NAME "
                       "(sequential, reversed, pairwise, fma, doubled), then optionally "
                       ",bug=BUG (floor-blocks, zp-default-zero, zp-unpacked, drop-last-row, "
                       "block512-zeros)");
        return NULL;
    }
    qmm_backend *be = plugin_table("nbits_orders", "MatMulNBits summed in a chosen order",
                                   sizeof(orders), st);
    if (!be)
        return NULL;
    ((orders *)be->impl)->order = (enum order)order;
    ((orders *)be->impl)->bug = (enum bug)bug;
    be->query = o_query;
    be->call = o_call;
    return be;
}
