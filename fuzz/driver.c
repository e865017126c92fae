/* fuzz/driver.c — replays inputs through LLVMFuzzerTestOneInput with no fuzzing engine.
 *
 * Usage: fuzz_<target>_replay FILE|DIR...   (directories: every regular file in them, sorted,
 * not recursive, the layout libFuzzer and AFL++ keep corpora in). Under ctest this runs the
 * committed corpora on every build, with any compiler, so a regression found by a campaign
 * and committed as a seed stays fixed. A difference or crash aborts, failing the test; a file
 * that cannot be read is an error (exit 1). A differential target compares every variant on
 * every input here (QMM_FUZZ_VARIANTS=all, fuzz/differential.h), not only the one the input
 * picks: a replay is about completeness, not speed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional in a target; weak so the driver links with targets that lack it. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#define QH_REPLAY_MAX_FILE (16u << 20)

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || st.st_size < 0 ||
        (uint64_t)st.st_size > QH_REPLAY_MAX_FILE) {
        fprintf(stderr, "replay: cannot open %s (or larger than %u bytes)\n", path,
                QH_REPLAY_MAX_FILE);
        if (f)
            fclose(f);
        return -1;
    }
    /* Exactly the file's size, so ASan sees reads past the input's end as what they are. */
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    size_t n = buf ? fread(buf, 1, size, f) : 0;
    int bad = !buf || ferror(f) || n != size;
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int run_dir(const char *dir, long *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(names, cap * sizeof *names);
            if (!p) {
                rc = -1;
                break;
            }
            names = p;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if ((names[n] = malloc(len)) == NULL) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    setenv("QMM_FUZZ_VARIANTS", "all", 0); /* an explicit setting wins */
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    long count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0)
                rc = 1;
        } else if (run_file(argv[i]) != 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    printf("replay: %ld input%s ran without a difference or crash\n", count,
           count == 1 ? "" : "s");
    return rc;
}
