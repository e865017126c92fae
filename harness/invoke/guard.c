/* harness/invoke/guard.c — guarded buffers, sealing and retiring them, and the fault handler that
 * names what was touched. */
#define _GNU_SOURCE 1 /* REG_ERR in ucontext: tells a write fault from a read fault */
#include "harness/invoke/guard.h"
#include "harness/invoke/wire.h" /* qh_page_size */

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ---- what the handler knows ------------------------------------------------------------
 * A copy of every region of the current call and of the previous call's retired regions. The
 * worker's main thread changes it; the handler, in any thread, only reads it. An entry's
 * state is written last when it is filled and first when it is emptied, so the handler never
 * reads a half-made entry as live. */

enum { H_FREE = 0, H_CURRENT, H_SEALED, H_RETIRED };

typedef struct h_region {
    qh_guarded g;
    int index; /* among the call's tensors (QH_GUARD_CAUSE) */
    volatile sig_atomic_t state;
} h_region;

static h_region h_tab[2 * QH_GUARD_MAX_REGIONS];
static int h_fd = -1;
static qh_fault_reporter h_report;

static h_region *h_find(const unsigned char *map)
{
    for (size_t i = 0; map && i < sizeof h_tab / sizeof h_tab[0]; i++)
        if (h_tab[i].state != H_FREE && h_tab[i].g.map == map)
            return &h_tab[i];
    return NULL;
}

/* Records g with `state`, in its existing entry or a free one (none free: not recorded, and a
 * fault there is reported as a crash). */
static void h_put(const qh_guarded *g, int index, int state)
{
    h_region *e = h_find(g->map);
    if (e) {
        e->state = state;
        return;
    }
    for (size_t i = 0; i < sizeof h_tab / sizeof h_tab[0]; i++)
        if (h_tab[i].state == H_FREE) {
            h_tab[i].g = *g;
            h_tab[i].index = index;
            h_tab[i].state = state;
            return;
        }
}

static void h_forget(const unsigned char *map)
{
    h_region *e = h_find(map);
    if (e)
        e->state = H_FREE;
}

/* ---- placing tensors ------------------------------------------------------------------ */

/* Reserves zone + pages for `len` bytes (+ `front` bytes) + zone, all inaccessible, opens the
 * pages between the zones for reading and writing, and returns where `len` bytes must start
 * to end exactly at the rear zone. */
static int map_between_zones(qh_guarded *g, size_t len, size_t front)
{
    size_t ps = qh_page_size();
    size_t body = (len + front + ps - 1) / ps * ps;
    if (body == 0)
        body = ps;
    if (len > (size_t)-1 / 2 - 2 * QH_GUARD_ZONE)
        return -1;
    g->map_len = QH_GUARD_ZONE + body + QH_GUARD_ZONE;
    void *m = mmap(NULL, g->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        g->map = NULL;
        return -1;
    }
    g->map = m;
    if (mprotect(g->map + QH_GUARD_ZONE, body, PROT_READ | PROT_WRITE) != 0) {
        munmap(g->map, g->map_len);
        g->map = NULL;
        return -1;
    }
    g->data = g->map + QH_GUARD_ZONE + body - len;
    g->len = len;
    return 0;
}

/* The pages between the zones. */
static unsigned char *body_start(const qh_guarded *g)
{
    return g->map + QH_GUARD_ZONE;
}

static size_t body_len(const qh_guarded *g)
{
    return g->map_len - 2 * QH_GUARD_ZONE;
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
    if (map_between_zones(g, len, 0) != 0)
        return -1;
    if (len)
        memcpy(g->data, src, len);
    if (mprotect(body_start(g), body_len(g), PROT_READ) != 0) {
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
    if (map_between_zones(g, len, 64) != 0)
        return -1;
    g->canary_len = (size_t)(g->data - body_start(g));
    memset(body_start(g), QH_CANARY_BYTE, g->canary_len);
    memset(g->data, fill, len);
    return 0;
}

size_t qh_guard_canaries_hit(const qh_guarded *g)
{
    size_t hit = 0;
    for (size_t i = 0; i < g->canary_len; i++)
        hit += body_start(g)[i] != QH_CANARY_BYTE;
    return hit;
}

void qh_guard_free(qh_guarded *g)
{
    if (g->map) {
        h_forget(g->map);
        munmap(g->map, g->map_len);
    }
    memset(g, 0, sizeof *g);
}

/* ---- sealing and retiring ------------------------------------------------------------- */

/* The state letter of /proc/self/task/TID/stat ('R' running or runnable, 'S' sleeping...),
 * or 0 when it cannot be read. */
static char task_state(const char *tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* the command name may hold spaces and parentheses: the state follows its last ')' */
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* 1 when a thread other than the caller is running or waiting for a CPU: one that could be
 * about to write into a sealed output. Sleeping threads (an idle pool) do not count. */
static int other_thread_runnable(void)
{
    char self[24];
    snprintf(self, sizeof self, "%ld", (long)syscall(SYS_gettid));
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        found = e->d_name[0] != '.' && strcmp(e->d_name, self) != 0 &&
                task_state(e->d_name) == 'R';
    closedir(d);
    return found;
}

void qh_guard_seal(qh_guarded *g, int n)
{
    for (int i = 0; i < n; i++) {
        if (!g[i].map || !g[i].writable)
            continue;
        h_put(&g[i], i, H_SEALED); /* first: a write that faults from now on is "after return" */
        mprotect(body_start(&g[i]), body_len(&g[i]), PROT_READ);
    }
    /* The grace period: while another thread runs, it may be a thread the backend left
     * writing; give it up to QH_GUARD_GRACE_NS to fault here, inside the call that made it.
     * A single-threaded process, or one whose other threads sleep, pays one look at /proc. */
    const long step = 200000;
    for (long waited = 0; waited < QH_GUARD_GRACE_NS && other_thread_runnable(); waited += step) {
        struct timespec ts = {0, step};
        nanosleep(&ts, NULL);
    }
}

void qh_guard_retire(qh_guarded *g, int n)
{
    /* the call before the previous one: its regions go now */
    for (size_t i = 0; i < sizeof h_tab / sizeof h_tab[0]; i++) {
        if (h_tab[i].state != H_RETIRED)
            continue;
        h_tab[i].state = H_FREE;
        munmap(h_tab[i].g.map, h_tab[i].g.map_len);
    }
    for (int i = 0; i < n; i++) {
        if (!g[i].map)
            continue;
        h_put(&g[i], i, H_RETIRED);
        mprotect(g[i].map, g[i].map_len, PROT_NONE);
        memset(&g[i], 0, sizeof g[i]);
    }
}

/* ---- the fault handler: async-signal-safe formatting only ----------------------------- */

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

/* "input a" or "y". */
static void put_label(sbuf *b, const qh_guarded *g)
{
    put(b, g->writable ? "" : "input ");
    put(b, g->name);
}

/* "wrote 12288 bytes past the end of y", "read 8 bytes before the start of input a". */
static void put_distance(sbuf *b, const char *verb, size_t d, const char *where,
                         const qh_guarded *g)
{
    put(b, verb);
    put(b, " ");
    put_u(b, d);
    put(b, d == 1 ? " byte " : " bytes ");
    put(b, where);
    put_label(b, g);
}

/* The sentence for a fault at addr inside region e, and its QH_GUARD_CAUSE; 0 when the fault
 * is not one a guard explains (a fault inside the output while the call runs). */
static int32_t explain(sbuf *b, const h_region *e, const unsigned char *addr, int write)
{
    const qh_guarded *g = &e->g;
    const char *verb = write == 0 ? "read" : write == 1 ? "wrote" : "accessed";
    const unsigned char *end = g->data + g->len;
    int in_body = addr >= body_start(g) && addr < body_start(g) + body_len(g);
    int kind;
    if (e->state == H_RETIRED) {
        kind = QH_GUARD_PREVIOUS_THREAD;
        put(b, "a thread of the previous call ");
        put(b, write == 1 ? "wrote into" : verb);
        put(b, " its ");
        put_label(b, g);
        put(b, " after the call returned");
    } else if (e->state == H_SEALED && in_body) {
        kind = QH_GUARD_AFTER_RETURN;
        put(b, write == 1 ? "wrote into " : verb);
        put(b, write == 1 ? "" : " ");
        put_label(b, g);
        put(b, " after the call returned");
    } else if (addr >= end) {
        kind = QH_GUARD_PAST_END;
        put_distance(b, verb, (size_t)(addr - end) + 1, "past the end of ", g);
    } else if (addr < g->data) {
        kind = QH_GUARD_BEFORE_START;
        put_distance(b, verb, (size_t)(g->data - addr), "before the start of ", g);
    } else if (!g->writable) {
        kind = QH_GUARD_READ_ONLY;
        put(b, write == 0 ? "read inside " : "wrote into ");
        put_label(b, g);
    } else {
        return 0;
    }
    return QH_GUARD_CAUSE(kind, write, e->index);
}

static volatile sig_atomic_t h_busy;

static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    const unsigned char *addr = si->si_addr;
    sbuf b = {.n = 0};
    for (size_t i = 0; i < sizeof h_tab / sizeof h_tab[0]; i++) {
        const h_region *e = &h_tab[i];
        if (e->state == H_FREE || addr < e->g.map || addr >= e->g.map + e->g.map_len)
            continue;
        int32_t cause = explain(&b, e, addr, fault_was_write(uctx));
        if (!cause)
            break;
        /* one report per worker: a second thread faulting meanwhile waits for the _exit */
        if (__atomic_exchange_n(&h_busy, 1, __ATOMIC_SEQ_CST))
            for (;;)
                pause();
        h_report(h_fd, cause, b.s);
        _exit(0);
    }
    /* Not a guard: a real crash. Let it happen with the default action. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void qh_guard_install_handler(const qh_guarded *regions, int n, int fd, qh_fault_reporter report)
{
    /* regions of an earlier call that was neither retired nor freed are forgotten */
    for (size_t i = 0; i < sizeof h_tab / sizeof h_tab[0]; i++)
        if (h_tab[i].state == H_CURRENT || h_tab[i].state == H_SEALED)
            h_tab[i].state = H_FREE;
    for (int i = 0; i < n; i++)
        if (regions[i].map)
            h_put(&regions[i], i, H_CURRENT);
    h_fd = fd;
    h_report = report;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}
