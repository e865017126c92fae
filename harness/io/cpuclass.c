/* harness/io/cpuclass.c — the CPU classes (see cpuclass.h). */
#include "harness/io/cpuclass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"

/* Natively detected first (most capable first, as cpu_class() tests them), then emulated. */
static const char *const classes[] = {"amx", "avx512-vnni", "avx-vnni", "avx2", "baseline",
                                      "x86-64-v2", "x86-64-v3"};
#define N_CLASSES (sizeof classes / sizeof classes[0])

/* The /proc/cpuinfo flag that puts a CPU in classes[i], for the native ones. */
static const char *const flag_of_class[] = {"amx_int8", "avx512_vnni", "avx_vnni", "avx2"};
#define N_DETECTED (sizeof flag_of_class / sizeof flag_of_class[0])

int qh_cpu_class_known(const char *name, size_t len)
{
    for (size_t i = 0; name && i < N_CLASSES; i++)
        if (strlen(classes[i]) == len && memcmp(classes[i], name, len) == 0)
            return 1;
    return 0;
}

const char *qh_cpu_class_names(void)
{
    return "amx, avx512-vnni, avx-vnni, avx2, baseline, x86-64-v2, x86-64-v3";
}

/* Whether the white-space separated words of `flags` hold `word`. */
static int has_word(const char *flags, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = flags; (p = strstr(p, word)) != NULL; p += n) {
        int starts = p == flags || p[-1] == ' ' || p[-1] == '\t';
        int ends = p[n] == '\0' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n';
        if (starts && ends)
            return 1;
    }
    return 0;
}

const char *qh_cpu_class_of_flags(const char *flags)
{
    for (size_t i = 0; flags && i < N_DETECTED; i++)
        if (has_word(flags, flag_of_class[i]))
            return classes[i];
    return "baseline";
}

int qh_cpu_class(const char **cls, char *why, size_t size)
{
    const char *forced = getenv(QH_CPU_CLASS_ENV);
    if (forced) {
        for (size_t i = 0; i < N_CLASSES; i++)
            if (strcmp(forced, classes[i]) == 0) {
                *cls = classes[i];
                return 0;
            }
        char shown[80];
        qh_clean_into(shown, sizeof shown, forced, strlen(forced), 64);
        snprintf(why, size, "%s='%s': not a CPU class (%s)", QH_CPU_CLASS_ENV, shown,
                 qh_cpu_class_names());
        return -1;
    }
    FILE *f = fopen("/proc/cpuinfo", "r");
    char *line = NULL;
    size_t cap = 0;
    const char *found = NULL;
    while (f && !found && getline(&line, &cap, f) > 0)
        if (strncmp(line, "flags", 5) == 0 && strchr(line, ':'))
            found = qh_cpu_class_of_flags(strchr(line, ':') + 1);
    free(line);
    if (f)
        fclose(f);
    *cls = found ? found : "baseline";
    return 0;
}
