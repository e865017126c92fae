/* fuzz/afl_main.c — AFL++ persistent-mode main for the LLVMFuzzerTestOneInput targets.
 *
 * Built with afl-clang-fast / afl-clang-lto (which define __AFL_FUZZ_TESTCASE_LEN and
 * friends). Deferred initialisation: LLVMFuzzerInitialize (environment, plugin dlopen) runs
 * once before __AFL_INIT, so the fork server forks after it; anything that starts threads
 * (the optimized backend's pool) is opened lazily on the first input, after the fork, since
 * threads do not survive fork. Persistent mode then runs up to 10000 inputs per child.
 *
 * With file arguments (and no AFL++ around) it replays them once each, so a crash AFL++ saved
 * under OUT/<instance>/crashes/ reproduces with `fuzz_<target>_afl FILE`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <signal.h>
#include <sys/prctl.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#ifndef __AFL_FUZZ_TESTCASE_LEN
/* Plain compiler (a build check without AFL++): read one input from stdin. */
static unsigned char qh_afl_buf[1 << 20];
static ssize_t qh_afl_len;
#define __AFL_FUZZ_INIT() extern int qh_afl_no_afl
#define __AFL_FUZZ_TESTCASE_BUF qh_afl_buf
#define __AFL_FUZZ_TESTCASE_LEN qh_afl_len
#define __AFL_INIT() ((void)0)
static int qh_afl_once = 1;
#define __AFL_LOOP(n)                                                                      \
    (qh_afl_once-- > 0 && (qh_afl_len = read(0, qh_afl_buf, sizeof qh_afl_buf)) >= 0)
#endif

__AFL_FUZZ_INIT();

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *copy = malloc(n ? n : 1);
    if (!copy)
        return 1;
    memcpy(copy, buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1 && !getenv("__AFL_SHM_ID")) {
        int rc = 0;
        for (int i = 1; i < argc; i++)
            rc |= replay(argv[i]);
        return rc;
    }
    __AFL_INIT();
#ifdef __linux__
    /* From here on this is the fork server's child. Should the fork server die while this
     * child sits stopped between persistent iterations (AFL++ 4.04 leaves its CMPLOG fork
     * server's child behind that way), the kernel ends it instead of leaving an orphan. */
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
#endif
    /* The buffer must be read after __AFL_INIT: in shared-memory mode it is mapped there. */
    unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
    while (__AFL_LOOP(10000)) {
        size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
        /* A fresh exact-size copy lets ASan see overreads of the input. */
        unsigned char *copy = malloc(len ? len : 1);
        if (!copy)
            continue;
        memcpy(copy, buf, len);
        LLVMFuzzerTestOneInput(copy, len);
        free(copy);
    }
    return 0;
}
