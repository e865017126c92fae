/* harness/cli/cmd_export.c — `qmmcheck export`: writes the edge-case suites as ONNX node-test
 * directories (docs/architecture.md §2, docs/formats.md). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/gen/edge.h"
#include "harness/base/numparse.h"
#include "harness/base/clean.h"

enum { O_SUITE, O_OUT, O_SEED, O_LIST };
static const qh_option export_options[] = {
    {O_SUITE, "--suite", 0, "NAME", 0, "the suite to write, or all"},
    {O_OUT, "--out", 0, "DIR", 0, "where to write it"},
    {O_SEED, "--seed", 0, "N", 0,
     "replace the suite's own seed (the committed vectors use the default)"},
    {O_LIST, "--list", 0, NULL, 0, "list the suites, their case counts and tags"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_export_usage = {
    "export", "--suite NAME|all --out DIR [--seed N] | --list", "write the edge-case suites",
    "Writes each case as DIR/<operator>/<suite>/<case>/ (model.onnx, test_data_set_0/,\n"
    "qmm.meta).\n",
    export_options, 0};

#define usage(...) qh_opt_error(&qh_export_usage, QH_ERR_USAGE, __VA_ARGS__)

/* The case directories beside the suite's cases that this export did not write (an earlier
 * export's, with another seed or version): they would be judged with the new ones. Prints
 * the first and the count; 1 when there are any. */
static int stale_beside(const char *out, const qh_edge_cases *cs)
{
    size_t stale = 0;
    char first[4096] = "", done[64][192];
    size_t n_done = 0;
    for (size_t k = 0; k < cs->count; k++) {
        const char *name = cs->items[k].name, *slash = strrchr(name, '/');
        if (!slash || (size_t)(slash - name) >= sizeof done[0])
            continue;
        char parent[192];
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - name), name);
        size_t d = 0;
        while (d < n_done && strcmp(done[d], parent) != 0)
            d++;
        if (d < n_done || n_done == sizeof done / sizeof done[0])
            continue;
        snprintf(done[n_done++], sizeof done[0], "%s", parent);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", out, parent);
        DIR *dp = opendir(dir);
        for (struct dirent *e; dp && (e = readdir(dp)) != NULL;) {
            if (e->d_name[0] == '.')
                continue;
            size_t m = 0, plen = strlen(parent);
            while (m < cs->count && !(strncmp(cs->items[m].name, parent, plen) == 0 &&
                                      cs->items[m].name[plen] == '/' &&
                                      strcmp(cs->items[m].name + plen + 1, e->d_name) == 0))
                m++;
            if (m == cs->count && stale++ == 0)
                snprintf(first, sizeof first, "%s/%s/%s", out, parent, e->d_name);
        }
        if (dp)
            closedir(dp);
    }
    if (stale == 0)
        return 0;
    char shown[700];
    qh_clean_into(shown, sizeof shown, first, strlen(first), 0);
    fprintf(stderr, "qmmcheck export: %zu entr%s beside the cases written were not written by "
            "this export (an earlier export's, another seed or version), e.g. %s: they would be "
            "judged with these; remove them, or export into an empty directory\n", stale,
            stale == 1 ? "y" : "ies", shown);
    return 1;
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
    qh_opt_parser p;
    qh_opt_init(&p, &qh_export_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        uint64_t u;
        switch (id) {
        case QH_OPT_HELP: return 0;
        case QH_OPT_BAD: return usage("%s", p.error);
        case QH_OPT_ARG: return usage("unknown argument %s", val);
        case O_SUITE: suite = val; break;
        case O_OUT:
            if (!*val)
                return usage("%s", QH_EMPTY_OUT);
            out = val;
            break;
        case O_LIST: list = 1; break;
        case O_SEED:
            if (qh_parse_u64(val, UINT64_MAX, &u))
                return usage("--seed %s: expected a number >= 0", val);
            seed = u;
            have_seed = 1;
            break;
        }
    }
    if (!list && (!suite || !out))
        return usage("%s", "give --suite NAME|all and --out DIR, or --list");
    if (suite && strcmp(suite, "all") != 0 && !qh_edge_suite_find(suite)) {
        char *shown = qh_clean_dup(suite, strlen(suite), 0);
        fprintf(stderr, "qmmcheck export: unknown suite '%s'; known:", shown ? shown : "?");
        free(shown);
        for (size_t i = 0; i < qh_edge_suite_count(); i++)
            fprintf(stderr, " %s", qh_edge_suite_at(i)->name);
        fprintf(stderr, "\n");
        return 2;
    }

    size_t total = 0;
    int stale = 0;
    for (size_t i = 0; i < qh_edge_suite_count(); i++) {
        const qh_edge_suite *s = qh_edge_suite_at(i);
        if (!list && strcmp(suite, "all") != 0 && strcmp(suite, s->name) != 0)
            continue;
        uint64_t sd = have_seed ? (uint64_t)seed : s->seed;
        qh_edge_cases cs = {0};
        qh_error err;
        if (qh_edge_build(s, sd, &cs, &err) != 0) {
            qh_eprint_clean("qmmcheck export: ", err.msg);
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
                    qh_eprint_clean("qmmcheck export: ", err.msg);
                    qh_edge_cases_free(&cs);
                    return 1;
                }
            }
            printf("%s: %zu cases (seed %llu) written under %s\n", s->name, cs.count,
                   (unsigned long long)sd, out);
            stale |= stale_beside(out, &cs);
        }
        total += cs.count;
        qh_edge_cases_free(&cs);
    }
    printf("%zu cases\n", total);
    return stale;
}
