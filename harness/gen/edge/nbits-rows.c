/* harness/gen/edge/nbits-rows.c — the `nbits-rows` edge suite (docs/edge-suites.md):
 * MatMulNBits at the row counts where kernels switch paths: M = 1, 2, 127, 128, 129, 257. */
#include <stdio.h>

#include "harness/gen/edge_build.h"

static void rows_case(qh_edge_builder *x, const qh_edge_nbits *s, const char *name)
{
    char form[160];
    qh_edge_case *c = qh_edge_nbits_case(x, s, "%s", name);
    if (!c)
        return;
    qh_edge_nbits_form(s, form, sizeof form);
    qh_edge_describe(c,
                     "%s, A of rank %d: every row its own random values, so a row left out, "
                     "written twice or computed by another path (onnxruntime's M = 1 kernel "
                     "also runs the last row of M = 129 and 257; 26507: M = 1 and M > 1 differ "
                     "on AVX-512 VNNI) shows",
                     form, s->a_rank ? s->a_rank : 2);
}

static void suite_nbits_rows(qh_edge_builder *x)
{
    static const int64_t ms[6] = {1, 2, 127, 128, 129, 257};
    char name[64];
    for (int i = 0; i < 6; i++)
        for (int level = 0; level <= 4; level += 4) {
            /* asymmetric 4-bit (onnxruntime 29853), K = 21 over blocks of 16 */
            qh_edge_nbits s = {.m = ms[i], .k = 21, .n = 3, .bits = 4, .block_size = 16,
                               .level = level, .zp = QH_NBITS_ZP_PACKED, .bias = i % 2};
            snprintf(name, sizeof name, "m%lld-level%d", (long long)ms[i], level);
            rows_case(x, &s, name);
        }
    static const int bitss[2] = {2, 8};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 6; i += 4) { /* M = 1 and 129 */
            qh_edge_nbits s = {.m = ms[i], .k = 37, .n = 2, .bits = bitss[b], .block_size = 32,
                               .level = 4, .zp = QH_NBITS_ZP_ABSENT, .bias = 1};
            snprintf(name, sizeof name, "m%lld-bits%d-level4", (long long)ms[i], bitss[b]);
            rows_case(x, &s, name);
        }
    qh_edge_nbits batched = {.m = 129, .k = 21, .n = 2, .bits = 4, .block_size = 16,
                             .level = 4, .zp = QH_NBITS_ZP_PACKED, .a_rank = 3};
    rows_case(x, &batched, "batch2-m129-level4");
    qh_edge_nbits one_d = {.m = 1, .k = 37, .n = 3, .bits = 4, .block_size = 16, .level = 4,
                           .zp = QH_NBITS_ZP_ABSENT, .bias = 1, .a_rank = 1};
    rows_case(x, &one_d, "a-1d-level4");
}

const qh_edge_suite qh_edge_suite_nbits_rows = {
    "nbits-rows", 17, suite_nbits_rows,
    "MatMulNBits at M = 1, 2, 127, 128, 129, 257 (levels 0 and 4), batched and 1-D A"};
