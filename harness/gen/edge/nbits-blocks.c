/* harness/gen/edge/nbits-blocks.c — the `nbits-blocks` edge suite (docs/edge-suites.md):
 * MatMulNBits at every block size 16..1024 and bits 2/4/8, K not a multiple of the block. */
#include "harness/gen/edge_build.h"

static void suite_nbits_blocks(qh_edge_builder *x)
{
    static const int bitss[3] = {2, 4, 8};
    char form[160];
    for (int b = 0; b < 3; b++)
        for (int bs = 16; bs <= 1024; bs *= 2)
            for (int level = 0; level <= 4; level += 4) {
                /* two blocks, the second 7 codes long: the row stride is ceil(K/block) blobs */
                qh_edge_nbits s = {.m = bs >= 256 ? 1 : 2, .k = bs + 7, .n = 2, .bits = bitss[b],
                                   .block_size = bs, .level = level,
                                   .zp = level ? QH_NBITS_ZP_PACKED : QH_NBITS_ZP_ABSENT,
                                   .bias = bs % 64 == 0};
                qh_edge_case *c = qh_edge_nbits_case(x, &s, "bits%d-block%d-level%d", bitss[b],
                                                     bs, level);
                if (!c)
                    return;
                qh_edge_nbits_form(&s, form, sizeof form);
                qh_edge_describe(c,
                                 "%s: K = block_size + 7, so the second block holds 7 codes and "
                                 "its %d unused tail codes hold random bits (to be ignored); "
                                 "every block has its own scale, so a wrong block stride or a "
                                 "block read from the wrong place changes the answer%s",
                                 form, bs - 7,
                                 bs == 512 ? " (block 512: onnxruntime 28551 returned zeros)"
                                 : bs > 256 && b == 0
                                     ? " (2-bit blocks above 256: valid, which onnxruntime "
                                       "refuses)"
                                     : "");
            }
    /* one short block: K < block_size */
    for (int bs = 16; bs <= 1024; bs *= 2) {
        qh_edge_nbits s = {.m = 1, .k = bs - 5, .n = 3, .bits = 4, .block_size = bs,
                           .level = 4, .zp = QH_NBITS_ZP_PACKED, .bias = 1};
        qh_edge_case *c = qh_edge_nbits_case(x, &s, "one-short-block%d", bs);
        if (!c)
            return;
        qh_edge_nbits_form(&s, form, sizeof form);
        qh_edge_describe(c, "%s: K = block_size - 5, one block whose last 5 codes are unused",
                         form);
    }
}

const qh_edge_suite qh_edge_suite_nbits_blocks = {
    "nbits-blocks", 16, suite_nbits_blocks,
    "MatMulNBits: block sizes 16..1024 x bits 2/4/8 x accuracy levels 0 and 4, K not a "
    "multiple of the block"};
