/* fuzz/input_pages.c — see input_pages.h. */
#define _GNU_SOURCE 1 /* memfd_create */
#include "fuzz/input_pages.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness/invoke/guard.h" /* QH_GUARD_ZONE */

typedef struct view {
    unsigned char *ro; /* what the implementations read: body bytes, zones around them */
    unsigned char *rw; /* the same pages, writable, for the copy */
    size_t body;
} view;

static size_t page_size(void)
{
    static size_t ps;
    if (!ps) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (size_t)v : 4096;
    }
    return ps;
}

static int make_view(view *v, size_t body)
{
    int fd = memfd_create("qmm-fuzz-input", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    unsigned char *reserve = MAP_FAILED, *rw = MAP_FAILED;
    size_t total = QH_GUARD_ZONE + body + QH_GUARD_ZONE;
    if (ftruncate(fd, (off_t)body) == 0)
        reserve = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserve != MAP_FAILED)
        rw = mmap(NULL, body, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    /* the read-only view replaces the middle of the reserved range, leaving the zones */
    if (rw == MAP_FAILED ||
        mmap(reserve + QH_GUARD_ZONE, body, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
        if (rw != MAP_FAILED)
            munmap(rw, body);
        if (reserve != MAP_FAILED)
            munmap(reserve, total);
        close(fd);
        return -1;
    }
    close(fd); /* the mappings keep the pages */
    v->ro = reserve + QH_GUARD_ZONE;
    v->rw = rw;
    v->body = body;
    return 0;
}

const void *qh_fz_input_pages(int slot, const void *src, size_t len)
{
    static view views[QH_FZ_INPUT_SLOTS][QH_FZ_INPUT_PAGES_MAX / 4096];
    size_t ps = page_size();
    size_t pages = (len + ps - 1) / ps;
    if (slot < 0 || slot >= QH_FZ_INPUT_SLOTS || len == 0 || len > QH_FZ_INPUT_PAGES_MAX ||
        pages > sizeof views[0] / sizeof views[0][0])
        return NULL;
    view *v = &views[slot][pages - 1];
    if (!v->ro && make_view(v, pages * ps) != 0)
        return NULL;
    memcpy(v->rw + v->body - len, src, len);
    return v->ro + v->body - len;
}
