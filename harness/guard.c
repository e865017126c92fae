/* harness/guard.c — guarded buffers and the fault handler that names what was touched. */
#define _GNU_SOURCE 1 /* REG_ERR in ucontext: tells a write fault from a read fault */
#include "harness/guard.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Maps enough pages for `len` bytes (+ `front` bytes) plus one trailing PROT_NONE page, and
 * returns where `len` bytes must start to end exactly at that page. */
static int map_ending_at_guard(qh_guarded *g, size_t len, size_t front)
{
    size_t ps = page_size();
    size_t body = (len + front + ps - 1) / ps * ps;
    if (body == 0)
        body = ps;
    g->map_len = body + ps;
    void *m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        g->map = NULL;
        return -1;
    }
    g->map = m;
    if (mprotect(g->map + body, ps, PROT_NONE) != 0) {
        munmap(g->map, g->map_len);
        g->map = NULL;
        return -1;
    }
    g->data = g->map + body - len;
    g->len = len;
    return 0;
}

static void set_name(qh_guarded *g, const char *name)
{
    size_t n = strlen(name);
    if (n >= sizeof g->name)
        n = sizeof g->name - 1;
    memcpy(g->name, name, n);
    g->name[n] = '\0';
}

int qh_guard_input(qh_guarded *g, const char *name, const void *src, size_t len)
{
    memset(g, 0, sizeof *g);
    set_name(g, name);
    if (map_ending_at_guard(g, len, 0) != 0)
        return -1;
    if (len)
        memcpy(g->data, src, len);
    size_t body = g->map_len - page_size();
    if (mprotect(g->map, body, PROT_READ) != 0) {
        qh_guard_free(g);
        return -1;
    }
    return 0;
}

int qh_guard_output(qh_guarded *g, const char *name, size_t len, unsigned char fill)
{
    memset(g, 0, sizeof *g);
    set_name(g, name);
    g->writable = 1;
    /* at least 64 canary bytes, the width of the widest vector store */
    if (map_ending_at_guard(g, len, 64) != 0)
        return -1;
    g->canary_len = (size_t)(g->data - g->map);
    memset(g->map, QH_CANARY_BYTE, g->canary_len);
    memset(g->data, fill, len);
    return 0;
}

size_t qh_guard_canaries_hit(const qh_guarded *g)
{
    size_t hit = 0;
    for (size_t i = 0; i < g->canary_len; i++)
        hit += g->map[i] != QH_CANARY_BYTE;
    return hit;
}

void qh_guard_free(qh_guarded *g)
{
    if (g->map)
        munmap(g->map, g->map_len);
    memset(g, 0, sizeof *g);
}

/* ---- the fault handler: async-signal-safe formatting only ----------------------------- */

static const qh_guarded *h_regions;
static int h_count;
static int h_fd = -1;
static qh_fault_reporter h_report;

typedef struct sbuf {
    char s[256];
    size_t n;
} sbuf;

static void put(sbuf *b, const char *s)
{
    while (*s && b->n + 1 < sizeof b->s)
        b->s[b->n++] = *s++;
    b->s[b->n] = '\0';
}

static void put_u(sbuf *b, size_t v)
{
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i < (int)sizeof tmp);
    while (i > 0 && b->n + 1 < sizeof b->s)
        b->s[b->n++] = tmp[--i];
    b->s[b->n] = '\0';
}

static int fault_was_write(void *uctx)
{
#if defined(__x86_64__) && defined(REG_ERR)
    const ucontext_t *uc = uctx;
    return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)uctx;
    return -1; /* unknown */
#endif
}

static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    const unsigned char *addr = si->si_addr;
    int write = fault_was_write(uctx);
    sbuf b = {.n = 0};
    for (int i = 0; i < h_count; i++) {
        const qh_guarded *g = &h_regions[i];
        if (!g->map || addr < g->map || addr >= g->map + g->map_len)
            continue;
        const unsigned char *end = g->data + g->len;
        if (addr >= end) {
            size_t past = (size_t)(addr - end) + 1;
            put(&b, write == 0 ? "read " : write == 1 ? "wrote " : "accessed ");
            put_u(&b, past);
            put(&b, past == 1 ? " byte past " : " bytes past ");
            put(&b, g->writable ? "" : "the end of input ");
            put(&b, g->name);
        } else if (!g->writable) {
            put(&b, write == 0 ? "read inside input " : "wrote into input ");
            put(&b, g->name);
        } else {
            continue; /* a fault inside the writable output: not ours to explain */
        }
        h_report(h_fd, b.s);
        _exit(0);
    }
    /* Not a guard: a real crash. Let it happen with the default action. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void qh_guard_install_handler(const qh_guarded *regions, int n, int fd, qh_fault_reporter report)
{
    h_regions = regions;
    h_count = n;
    h_fd = fd;
    h_report = report;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}
