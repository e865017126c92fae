/* fuzz/roundtrip.h — how a parser target (fuzz_meta, fuzz_onnx_model, fuzz_onnx_tensor) reports
 * that what its reader accepted did not survive write-then-read: the signature line the engines
 * and fuzz/smoke.sh look for, then abort(). Header only: those targets link the readers alone. */
#ifndef QMM_FUZZ_ROUNDTRIP_H
#define QMM_FUZZ_ROUNDTRIP_H

#include <stdio.h>
#include <stdlib.h>

/* Prints "==qmm-fuzz== DIFFERENCE: <signature>: <what>[: <detail>]" and aborts. */
__attribute__((noreturn)) static inline void qh_fz_roundtrip_difference(const char *signature,
                                                                        const char *what,
                                                                        const char *detail)
{
    fprintf(stderr, "==qmm-fuzz== DIFFERENCE: %s: %s%s%s\n", signature, what,
            detail ? ": " : "", detail ? detail : "");
    fflush(stderr);
    abort();
}

#endif /* QMM_FUZZ_ROUNDTRIP_H */
