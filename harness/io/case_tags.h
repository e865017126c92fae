/* harness/io/case_tags.h — the tags a case carries (its qmm.meta's `tags`, docs/formats.md):
 * selecting cases by them (`run --tag`, `list --tag`) and counting them (`list --tags`).
 *
 * A selection is a list of groups, one per --tag option, each a comma-separated list of tags:
 * a case is selected when, for every group, it carries at least one of the group's tags
 * (`--tag u8s8u8,s8s8s8 --tag simple-form`: either type combination, and in the simplest
 * form). Tags compare exactly (case-sensitive, surrounding blanks trimmed, as in qmm.meta).
 * A case whose tags cannot be read (a tree entry that is not a case, a qmm.meta that does not
 * parse) is selected, so that its ERROR is reported rather than lost.
 */
#ifndef QMM_HARNESS_CASE_TAGS_H
#define QMM_HARNESS_CASE_TAGS_H

#include <stddef.h>

#include "harness/io/case.h"
#include "harness/base/error.h"
#include "harness/io/meta.h"

/* Checks one --tag value: comma-separated tags, none empty, none longer than a qmm.meta tag
 * may be (63 bytes). 0, or -1 with err saying what is wrong. */
int qh_tag_group_check(const char *group, qh_error *err);

/* The case's qmm.meta (no tags when it has none). 0, or -1 with err when the case is a tree
 * entry that is not a case or its qmm.meta cannot be read or parsed. */
int qh_case_tags(const qh_case_ref *ref, qh_meta *m, qh_error *err);

/* Whether m carries, for each of the n groups, one of its tags. */
int qh_tags_select(const qh_meta *m, const char *const *groups, int n);

/* Whether the selection (n groups) keeps the case: a case whose tags cannot be read is kept. */
int qh_case_tag_selected(const qh_case_ref *ref, const char *const *groups, int n);

/* How many cases carry each tag (list --tags). */
typedef struct qh_tag_count {
    char tag[64];
    size_t cases;
} qh_tag_count;

typedef struct qh_tag_counts {
    qh_tag_count *items;
    size_t count, cap;
    size_t untagged;   /* cases with no tag */
    size_t unreadable; /* cases whose tags could not be read */
} qh_tag_counts;

/* Counts the case's tags. 0, or -1 when memory ran out. */
int qh_tag_counts_add(qh_tag_counts *tc, const qh_case_ref *ref);
/* Sorts the counts by tag (byte order). */
void qh_tag_counts_sort(qh_tag_counts *tc);
void qh_tag_counts_free(qh_tag_counts *tc);

#endif /* QMM_HARNESS_CASE_TAGS_H */
