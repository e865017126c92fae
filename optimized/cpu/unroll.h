/* optimized/cpu/unroll.h — QMM_UNROLL: the next loop, whose trip count is a constant after
 * inlining (a tile's rows, columns or k pairs), unrolled whole, so that the accumulator arrays
 * it indexes stay in registers. Without it, at -O2 GCC 12 kept such loops rolled and the
 * accumulators in memory, a load and a store around every multiply-add (1.6-3.9x slower:
 * docs/optimized.md); clang accepts GCC's pragma but ignores it there, and needs its own.
 * tests/kernel_unrolled.sh checks the result in the library's disassembly. */
#ifndef QMM_OPT_UNROLL_H
#define QMM_OPT_UNROLL_H

#if defined(__clang__)
#define QMM_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define QMM_UNROLL _Pragma("GCC unroll 16")
#else
#define QMM_UNROLL
#endif

#endif
