/* harness/io/case_tags.c — selecting and counting cases by their qmm.meta tags (case_tags.h). */
#include "harness/io/case_tags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/base/array.h"

/* The next tag of a comma-separated list at *p: [*b, *e) trimmed of blanks; *p moves past its
 * comma. 0 when the list is done. */
static int next_tag(const char **p, const char **b, const char **e)
{
    if (!*p)
        return 0;
    const char *comma = strchr(*p, ',');
    const char *tb = *p, *te = comma ? comma : *p + strlen(*p);
    *p = comma ? comma + 1 : NULL;
    while (tb < te && (*tb == ' ' || *tb == '\t'))
        tb++;
    while (te > tb && (te[-1] == ' ' || te[-1] == '\t'))
        te--;
    *b = tb;
    *e = te;
    return 1;
}

int qh_tag_group_check(const char *group, qh_error *err)
{
    const qh_meta *m = NULL;
    const size_t room = sizeof m->tags[0] - 1;
    const char *p = group, *b, *e;
    while (next_tag(&p, &b, &e)) {
        char shown[128];
        if (b == e) {
            qh_clean_into(shown, sizeof shown, group, strlen(group), 64);
            snprintf(err->msg, sizeof err->msg,
                     "--tag %s: an empty tag (give TAG or TAG,TAG,...)", shown);
            return -1;
        }
        if ((size_t)(e - b) > room) {
            qh_clean_into(shown, sizeof shown, b, (size_t)(e - b), 64);
            snprintf(err->msg, sizeof err->msg,
                     "--tag %s: longer than %zu bytes, so no case carries it", shown, room);
            return -1;
        }
    }
    return 0;
}

int qh_case_tags(const qh_case_ref *ref, qh_meta *m, qh_error *err)
{
    qh_meta_init(m);
    if (ref->problem != QH_REF_OK) {
        snprintf(err->msg, sizeof err->msg, "not a case");
        return -1;
    }
    char *path = qh_path_join(ref->dir, "qmm.meta");
    if (!path) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    int rc = qh_meta_read_file(path, m, err);
    free(path);
    return rc;
}

int qh_tags_select(const qh_meta *m, const char *const *groups, int n)
{
    for (int g = 0; g < n; g++) {
        int any = 0;
        const char *p = groups[g], *b, *e;
        while (!any && next_tag(&p, &b, &e))
            for (int32_t i = 0; i < m->n_tags && i < QH_META_MAX_TAGS && !any; i++)
                any = strlen(m->tags[i]) == (size_t)(e - b) &&
                      memcmp(m->tags[i], b, (size_t)(e - b)) == 0;
        if (!any)
            return 0;
    }
    return 1;
}

int qh_case_tag_selected(const qh_case_ref *ref, const char *const *groups, int n)
{
    if (n == 0)
        return 1;
    qh_meta m;
    qh_error err;
    if (qh_case_tags(ref, &m, &err) != 0)
        return 1; /* its ERROR is reported when it runs */
    return qh_tags_select(&m, groups, n);
}

int qh_tag_counts_add(qh_tag_counts *tc, const qh_case_ref *ref)
{
    qh_meta m;
    qh_error err;
    if (qh_case_tags(ref, &m, &err) != 0) {
        tc->unreadable++;
        return 0;
    }
    if (m.n_tags == 0)
        tc->untagged++;
    for (int32_t i = 0; i < m.n_tags && i < QH_META_MAX_TAGS; i++) {
        /* a tag given twice in one qmm.meta counts the case once */
        int dup = 0;
        for (int32_t j = 0; j < i && !dup; j++)
            dup = strcmp(m.tags[i], m.tags[j]) == 0;
        if (dup)
            continue;
        size_t k = 0;
        while (k < tc->count && strcmp(tc->items[k].tag, m.tags[i]) != 0)
            k++;
        if (k == tc->count) {
            if (qh_array_reserve(&tc->items, &tc->cap, tc->count, sizeof *tc->items) != 0)
                return -1;
            snprintf(tc->items[k].tag, sizeof tc->items[k].tag, "%s", m.tags[i]);
            tc->items[k].cases = 0;
            tc->count++;
        }
        tc->items[k].cases++;
    }
    return 0;
}

static int by_tag(const void *a, const void *b)
{
    return strcmp(((const qh_tag_count *)a)->tag, ((const qh_tag_count *)b)->tag);
}

void qh_tag_counts_sort(qh_tag_counts *tc)
{
    if (tc->count > 1)
        qsort(tc->items, tc->count, sizeof *tc->items, by_tag);
}

void qh_tag_counts_free(qh_tag_counts *tc)
{
    free(tc->items);
    memset(tc, 0, sizeof *tc);
}
