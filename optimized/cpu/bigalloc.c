/* optimized/cpu/bigalloc.c — the large blocks of the CPU backend (a prepacked B, a call's
 * scratch) on transparent huge pages where the kernel has them.
 *
 * From BIG_MIN bytes up a block is a mapping of its own, 2 MiB aligned, marked MADV_HUGEPAGE
 * before anything touches it, so that its page faults map 2 MiB pages (Linux with THP set to
 * `madvise` or `always`); a heap block may reuse pages already faulted in small, which the
 * advice does not change. A 16 MB prepacked B in 4 KiB pages is 4096 TLB entries, streamed
 * once per M = 1 call. The mapping is rounded up to whole 2 MiB pages: up to 2 MiB more
 * resident memory a block (a 4.26 MB packed B takes 6 MiB). Smaller blocks, every block where
 * QMM_NO_HUGE is set (read once) or in an AddressSanitizer build (which sees no overflow or
 * leak of a mapping of its own), and every block off Linux are 64-byte aligned heap blocks.
 * Where the kernel refuses the advice, the pages stay small: nothing else changes. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE: the build's _POSIX_C_SOURCE alone hides it */

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "optimized/cpu/opt_internal.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define QMM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QMM_ASAN 1
#endif
#endif

/* huge-page blocks: Linux with MADV_HUGEPAGE, not under AddressSanitizer */
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(QMM_ASAN)
#define HAVE_HUGE 1
#define HUGE_PAGE ((size_t)2 << 20)
#define BIG_MIN (2 * HUGE_PAGE)

static int big_block(size_t bytes)
{
    static _Atomic int off = -1; /* QMM_NO_HUGE, read once: alloc and free must agree */
    int o = off;
    if (o < 0)
        off = o = getenv("QMM_NO_HUGE") != NULL;
    /* a size whose 2 MiB rounding would wrap stays with the heap (which refuses it) */
    return !o && bytes >= BIG_MIN && bytes <= SIZE_MAX - 2 * HUGE_PAGE;
}

static size_t mapped_size(size_t bytes)
{
    return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

static void *map_huge(size_t bytes)
{
    size_t n = mapped_size(bytes);
    char *m = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (m == MAP_FAILED)
        return NULL;
    /* keep the 2 MiB aligned n bytes inside, give back the rest */
    char *p = (char *)(((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + n < m + n + HUGE_PAGE)
        munmap(p + n, (size_t)(m + n + HUGE_PAGE - (p + n)));
    (void)madvise(p, n, MADV_HUGEPAGE); /* advice: where refused, the pages stay small */
    return p;
}
#else
static int big_block(size_t bytes)
{
    (void)bytes;
    return 0;
}
#endif

int qmm_opt_big_mapped(size_t bytes)
{
    return big_block(bytes);
}

void *qmm_opt_big_alloc(size_t bytes)
{
#ifdef HAVE_HUGE
    if (big_block(bytes))
        return map_huge(bytes);
#endif
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

void qmm_opt_big_free(void *p, size_t bytes)
{
    if (!p)
        return;
#ifdef HAVE_HUGE
    if (big_block(bytes)) {
        munmap(p, mapped_size(bytes));
        return;
    }
#endif
    free(p);
}
