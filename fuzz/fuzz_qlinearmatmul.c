/* fuzz/fuzz_qlinearmatmul.c — differential fuzz target: QLinearMatMul, the reference against
 * every other implementation (fuzz/differential.h); inputs decode as in fuzz/decode.h. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/differential.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qh_fz_diff_setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qh_fz_diff_one("fuzz_qlinearmatmul", qh_fz_decode_qlinearmatmul, data, size);
    return 0;
}
