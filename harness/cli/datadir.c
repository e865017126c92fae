/* harness/cli/datadir.c — the default vector tree of `qmmcheck run` (harness/cli/datadir.h).
 *
 * The suites are installed in <prefix>/share/qmm/vectors (cmake/install.cmake). An installed
 * prefix can be moved or be a staging folder (`cmake --install --prefix`), so the executable's
 * own location comes first; the prefix compiled in is only the last resort. The paths come from
 * CMake as compile definitions (harness/CMakeLists.txt). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "harness/cli/datadir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/base/fileio.h"

#define MAX_SUITES 32

/* 1 when `path` is a directory. */
static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The directory of the running executable, malloc'd and canonical, or NULL. */
static char *exe_dir(void)
{
    char buf[4096];
    if (qh_self_exe(buf, sizeof buf) <= 0)
        return NULL;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return realpath(buf[0] ? buf : "/", NULL);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Prints the tree chosen and the suites (its subdirectories) in it, names cleaned. */
static void announce(const char *what, const char *dir)
{
    char *names[MAX_SUITES];
    int n = 0, more = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
            !is_dir(path))
            continue;
        if (n == MAX_SUITES) {
            more++;
            continue;
        }
        char *name = qh_clean_dup(e->d_name, strlen(e->d_name), 64);
        if (name)
            names[n++] = name;
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    char *shown = qh_clean_dup(dir, strlen(dir), 0);
    fprintf(stderr, "qmmcheck: no --vectors given: running %s in %s (", what,
            shown ? shown : "?");
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    if (more)
        fprintf(stderr, " and %d more", more);
    fputs(")\n", stderr);
    free(shown);
}

const char *qh_default_vectors(void)
{
    static char *chosen;
    char *dir = exe_dir();
    char installed[4096] = "", looked[3 * 4096 + 64] = "";
    const char *what = "the installed suites";
    if (dir && snprintf(installed, sizeof installed, "%s/%s", dir, QMM_BIN_TO_VECTORS) <
                   (int)sizeof installed && is_dir(installed)) {
        chosen = realpath(installed, NULL);
    } else {
        char *build = realpath(QMM_BUILD_BIN_DIR, NULL);
        if (dir && build && strcmp(dir, build) == 0 && is_dir(QMM_SOURCE_VECTORS)) {
            chosen = realpath(QMM_SOURCE_VECTORS, NULL);
            what = "the source tree's suites (qmmcheck from its build tree)";
        } else if (is_dir(QMM_INSTALL_VECTORS)) {
            chosen = realpath(QMM_INSTALL_VECTORS, NULL);
        }
        free(build);
    }
    if (!chosen) {
        snprintf(looked, sizeof looked, "%s%s%s", installed, installed[0] ? ", " : "",
                 QMM_INSTALL_VECTORS);
        char *shown = qh_clean_dup(looked, strlen(looked), 0);
        fprintf(stderr,
                "qmmcheck: run: no --vectors given and no installed suites found (looked in "
                "%s); give --vectors DIR\n",
                shown ? shown : "?");
        free(shown);
    } else {
        announce(what, chosen);
    }
    free(dir);
    return chosen;
}
