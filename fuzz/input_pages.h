/* fuzz/input_pages.h — read-only copies of a call's inputs, ending at an inaccessible zone,
 * without a system call per input.
 *
 * The differential targets hand every implementation copies of the inputs that a write into,
 * or a read past the end of, faults on (fuzz/differential.h). harness/invoke/guard.h makes such a
 * copy with a fresh mapping per tensor (mmap, two mprotect, munmap, page faults): right for one
 * call in a worker, but in a fuzz target it was the largest cost of an input once only one
 * variant ran per input (fuzz/README.md, "Throughput"). Here each (input slot, size in pages)
 * gets one mapping, made on first use and kept: a memfd mapped twice, read-only between two
 * PROT_NONE zones of QH_GUARD_ZONE bytes for the implementations, and writable elsewhere for
 * the copy. An input then costs one memcpy. As with guard.h, the bytes end exactly at the rear
 * zone; in front of them, within their first page, are the previous input's bytes (guard.h:
 * zeros), and reads further before the start fault in the front zone only when the tensor
 * fills its pages.
 *
 * Process-wide state, like the rest of the fuzz target (differential.c says why): not for
 * threads, and made after a fork server forks (on the first input).
 */
#ifndef QMM_FUZZ_INPUT_PAGES_H
#define QMM_FUZZ_INPUT_PAGES_H

#include <stddef.h>

#define QH_FZ_INPUT_SLOTS 8
/* Inputs up to this many bytes are placed here (the decoder's bound, QH_FZ_MAX_OPERAND
 * elements of at most 4 bytes, fits); larger ones get NULL. */
#define QH_FZ_INPUT_PAGES_MAX ((size_t)1 << 18)

/* Copies `len` (> 0) bytes from src into the read-only view kept for (slot, pages of len) and
 * returns where they start there; NULL when slot or len is out of range or the mapping cannot
 * be made (the caller then uses harness/invoke/guard.h). */
const void *qh_fz_input_pages(int slot, const void *src, size_t len);

#endif /* QMM_FUZZ_INPUT_PAGES_H */
