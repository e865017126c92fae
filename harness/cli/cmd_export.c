/* harness/cli/cmd_export.c — `qmmcheck export`: writes the edge-case suites as ONNX node-test
 * directories (docs/architecture.md §2, docs/formats.md). */
#include <stdio.h>
#include <string.h>

#include "harness/cli/commands.h"
#include "harness/gen/edge.h"
#include "harness/io/numparse.h"

static const char export_usage[] =
    "usage: qmmcheck export --suite NAME|all --out DIR [--seed N]\n"
    "       qmmcheck export --list\n"
    "writes each case as DIR/<operator>/<suite>/<case>/ (model.onnx, test_data_set_0/,\n"
    "qmm.meta); --seed replaces the suite's own seed (the committed vectors use the default)\n";

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "qmmcheck export: ");
    fprintf(stderr, msg, arg);
    fprintf(stderr, "\n%s", export_usage);
    return 2;
}

/* Every tag of a suite's cases, in order of first appearance. */
static void print_tags(const qh_edge_cases *cs)
{
    char seen[64][64];
    int n = 0;
    printf("    tags:");
    for (size_t i = 0; i < cs->count; i++) {
        const qh_meta *m = &cs->items[i].meta;
        for (int32_t t = 0; t < m->n_tags; t++) {
            int dup = 0;
            for (int k = 0; k < n && !dup; k++)
                dup = strcmp(seen[k], m->tags[t]) == 0;
            if (dup || n == 64)
                continue;
            snprintf(seen[n], sizeof seen[n], "%s", m->tags[t]);
            printf("%s %s", n ? "," : "", seen[n]);
            n++;
        }
    }
    printf("\n");
}

int qh_cmd_export(int argc, char **argv)
{
    const char *suite = NULL, *out = NULL;
    int list = 0, have_seed = 0;
    unsigned long long seed = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--suite") == 0 || strcmp(a, "--out") == 0 || strcmp(a, "--seed") == 0) {
            if (!val)
                return usage("%s needs a value", a);
            i++;
            if (a[2] == 's' && a[3] == 'u') {
                suite = val;
            } else if (a[2] == 'o') {
                out = val;
            } else {
                uint64_t u;
                if (qh_parse_u64(val, UINT64_MAX, &u))
                    return usage("--seed %s: expected a number >= 0", val);
                seed = u;
                have_seed = 1;
            }
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(export_usage, stdout);
            return 0;
        } else {
            return usage("unknown argument %s", a);
        }
    }
    if (!list && (!suite || !out))
        return usage("%s", "give --suite NAME|all and --out DIR, or --list");
    if (suite && strcmp(suite, "all") != 0 && !qh_edge_suite_find(suite)) {
        fprintf(stderr, "qmmcheck export: unknown suite '%s'; known:", suite);
        for (size_t i = 0; i < qh_edge_suite_count(); i++)
            fprintf(stderr, " %s", qh_edge_suite_at(i)->name);
        fprintf(stderr, "\n");
        return 2;
    }

    size_t total = 0;
    for (size_t i = 0; i < qh_edge_suite_count(); i++) {
        const qh_edge_suite *s = qh_edge_suite_at(i);
        if (!list && strcmp(suite, "all") != 0 && strcmp(suite, s->name) != 0)
            continue;
        uint64_t sd = have_seed ? (uint64_t)seed : s->seed;
        qh_edge_cases cs = {0};
        qh_error err;
        if (qh_edge_build(s, sd, &cs, &err) != 0) {
            fprintf(stderr, "qmmcheck export: %s\n", err.msg);
            qh_edge_cases_free(&cs);
            return 1;
        }
        if (list) {
            printf("%-12s %4zu cases  seed %llu  %s\n", s->name, cs.count,
                   (unsigned long long)sd, s->summary);
            print_tags(&cs);
        } else {
            for (size_t k = 0; k < cs.count; k++) {
                if (qh_edge_write(out, &cs.items[k], &err) != 0) {
                    fprintf(stderr, "qmmcheck export: %s\n", err.msg);
                    qh_edge_cases_free(&cs);
                    return 1;
                }
            }
            printf("%s: %zu cases (seed %llu) written under %s\n", s->name, cs.count,
                   (unsigned long long)sd, out);
        }
        total += cs.count;
        qh_edge_cases_free(&cs);
    }
    printf("%zu cases\n", total);
    return 0;
}
