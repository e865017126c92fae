/* harness/io/discover.c — finding the cases under a directory (case.h): every directory with a
 * model.onnx is a case directory, each of its test_data_set_N a case; what cannot be searched
 * is listed too, as a case that loads as ERROR naming the path and why. */
#define _GNU_SOURCE /* O_PATH: a parent directory that may be searched, not read */
#include "harness/io/case.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/array.h"

static int list_push(qh_case_list *l, const char *dir, const char *name, int data_set,
                     int problem, int problem_errno)
{
    if (qh_array_reserve(&l->items, &l->cap, l->count, sizeof *l->items) != 0)
        return -1;
    qh_case_ref *r = &l->items[l->count];
    memset(r, 0, sizeof *r);
    r->dir = strdup(dir);
    r->name = strdup(name);
    r->data_set = data_set;
    r->problem = problem;
    r->problem_errno = problem_errno;
    if (!r->dir || !r->name) {
        free(r->dir);
        free(r->name);
        return -1;
    }
    l->count++;
    return 0;
}

static const char set_prefix[] = "test_data_set_";

/* N of test_data_set_N in its one spelling: decimal digits, no leading zero, at most 6 of
 * them; -1 for any other name (test_data_set_00 is not a second spelling of _0). */
static int data_set_number(const char *entry)
{
    const char *p = entry + sizeof set_prefix - 1;
    if (*p == '\0' || strlen(p) > 6 || (p[0] == '0' && p[1] != '\0'))
        return -1;
    int n = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* One discovery: the list it appends to, and every directory it has entered (by device and
 * inode), so that a symlink back up the tree is not a second copy of its cases. */
typedef struct seen_dir {
    dev_t dev;
    ino_t ino;
    int used;
} seen_dir;

typedef struct walker {
    qh_case_list *l;
    qh_error *err;
    const volatile sig_atomic_t *stop;
    seen_dir *seen; /* open addressing, a power of two slots, at most half used */
    size_t n_seen, cap_seen;
    seen_dir *up; /* the directories above the root, to "/" (however deep the root lies) */
    size_t n_up, cap_up;
    int up_short; /* they could not all be examined: no symlinked directory is followed */
} walker;

static size_t dir_hash(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15u ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fu;
    return (size_t)(h ^ h >> 29);
}

static void seen_put(seen_dir *t, size_t cap, dev_t dev, ino_t ino)
{
    size_t i = dir_hash(dev, ino) & (cap - 1);
    while (t[i].used)
        i = (i + 1) & (cap - 1);
    t[i] = (seen_dir){dev, ino, 1};
}

/* 1: entered before; 0: first visit, now recorded; -1: out of memory. (A list scanned whole
 * made 40,000 directories cost 1.3 s.) */
static int seen_before(walker *w, const struct stat *st)
{
    for (size_t i = w->cap_seen ? dir_hash(st->st_dev, st->st_ino) & (w->cap_seen - 1) : 0;
         w->cap_seen && w->seen[i].used; i = (i + 1) & (w->cap_seen - 1))
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return 1;
    if (2 * (w->n_seen + 1) > w->cap_seen) {
        size_t cap = w->cap_seen ? w->cap_seen * 2 : 64;
        seen_dir *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < w->cap_seen; i++)
            if (w->seen[i].used)
                seen_put(t, cap, w->seen[i].dev, w->seen[i].ino);
        free(w->seen);
        w->seen = t;
        w->cap_seen = cap;
    }
    seen_put(w->seen, w->cap_seen, st->st_dev, st->st_ino);
    w->n_seen++;
    return 0;
}

/* Records the directories that hold the root, from its parent up to "/" (as far as they can
 * be opened), however many: a root 130 directories deep kept only its nearest 128, and a link
 * to "/" below it searched the whole file system. Each parent is opened from the one below
 * ("..", openat), so no path grows with the depth. 0, or -1 out of memory. */
static int note_above(walker *w, const char *root)
{
    /* O_PATH: a parent that may be searched but not read (0711, as /home/USER often is)
       still opens; a walk that stops short of "/" all the same makes every symlinked
       directory refused (w->up_short): the rule fails closed */
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), rc = 0;
    w->up_short = 1;
    struct stat here;
    if (fd < 0 || fstat(fd, &here) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    for (;;) {
        int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (up < 0 || fstat(up, &st) != 0) {
            if (up >= 0)
                close(up);
            break;
        }
        close(fd);
        fd = up;
        if (st.st_dev == here.st_dev && st.st_ino == here.st_ino) {
            w->up_short = 0; /* "/..": "/" itself, reached */
            break;
        }
        if (w->n_up == w->cap_up) {
            size_t cap = w->cap_up ? 2 * w->cap_up : 32;
            seen_dir *t = realloc(w->up, cap * sizeof *t);
            if (!t) {
                rc = -1;
                break;
            }
            w->up = t;
            w->cap_up = cap;
        }
        w->up[w->n_up++] = (seen_dir){st.st_dev, st.st_ino, 1};
        here = st;
    }
    close(fd);
    return rc;
}

static int is_above(const walker *w, const struct stat *st)
{
    for (size_t i = 0; i < w->n_up; i++)
        if (w->up[i].dev == st->st_dev && w->up[i].ino == st->st_ino)
            return 1;
    return 0;
}

static int oom(walker *w, const char *dir)
{
    snprintf(w->err->msg, sizeof w->err->msg, "%s: out of memory", dir);
    return -1;
}

/* A path discovery could not turn into a case: it joins the list as a case that loads as
 * ERROR with the reason, so it is counted and reported instead of ending the run or
 * vanishing. */
static int push_problem(walker *w, const char *path, const char *name, int problem, int e)
{
    if (list_push(w->l, path, name, -1, problem, e) != 0)
        return oom(w, path);
    return 0;
}

/* The same for an entry of case directory `dir` (named `name`): its path and name are DIR/ENTRY
 * and NAME/ENTRY; data_set: the N the problem's message names (-1: none). */
static int push_problem_at(walker *w, const char *dir, const char *name, const char *entry,
                           int problem, int data_set)
{
    char *path = qh_path_join(dir, entry);
    char *sub = name[0] ? qh_path_join(name, entry) : strdup(entry);
    int rc = path && sub && list_push(w->l, path, sub, data_set, problem, 0) == 0 ? 0
                                                                                  : oom(w, dir);
    free(path);
    free(sub);
    return rc;
}

/* The last name of `path` (trailing '/' ignored): its length, *start its offset. */
static size_t last_name(const char *path, size_t *start)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t s = len;
    while (s > 0 && path[s - 1] != '/')
        s--;
    *start = s;
    return len - s;
}

int qh_name_like_a_data_set(const char *dir)
{
    size_t start, len = last_name(dir, &start);
    const char *e = dir + start + len, *p = e;
    while (p > dir + start && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return p < e && p > dir + start && p[-1] == '@';
}

/* One data set directory of a case: its N, the directory it is (followed), and -1 or the N of
 * the data set of its case that is the same directory and is judged in its place. */
typedef struct set_dir {
    int n;
    int is_link;
    dev_t dev;
    ino_t ino;
    int same_as;
} set_dir;

static int cmp_set(const void *a, const void *b)
{
    return cmp_int(&((const set_dir *)a)->n, &((const set_dir *)b)->n);
}

/* Of the data sets sets[0..nsets) (sorted by N) that are one directory, the lowest N that is not
 * a symbolic link is judged (else the lowest N); each other one's same_as is set to it. */
static void mark_same_sets(set_dir *sets, int nsets)
{
    for (int i = 0; i < nsets; i++) {
        if (sets[i].same_as >= 0)
            continue;
        int keep = i;
        for (int j = i + 1; j < nsets; j++)
            if (sets[j].dev == sets[i].dev && sets[j].ino == sets[i].ino && sets[keep].is_link &&
                !sets[j].is_link)
                keep = j;
        for (int j = i; j < nsets; j++)
            if (j != keep && sets[j].dev == sets[i].dev && sets[j].ino == sets[i].ino)
                sets[j].same_as = sets[keep].n;
    }
}

static int add_case_dir(walker *w, const char *dir, const char *name)
{
    if (qh_name_like_a_data_set(dir))
        return push_problem(w, dir, name, QH_REF_NAME_AT, 0);
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0)
        return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
    set_dir *sets = malloc(sizeof *sets * (size_t)(n > 0 ? n : 1));
    int nsets = 0, rc = sets ? 0 : oom(w, dir);
    for (int i = 0; i < n && rc == 0; i++) {
        const char *e = ents[i]->d_name;
        if (strncmp(e, set_prefix, sizeof set_prefix - 1) == 0) {
            char *p = qh_path_join(dir, e);
            int ds = data_set_number(e);
            struct stat st, lst;
            if (!p)
                rc = oom(w, dir);
            else if (ds >= 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
                sets[nsets++] = (set_dir){ds, lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode),
                                          st.st_dev, st.st_ino, -1};
            free(p);
        }
    }
    if (rc == 0) {
        qsort(sets, (size_t)nsets, sizeof *sets, cmp_set);
        mark_same_sets(sets, nsets);
        int judged = 0;
        for (int i = 0; i < nsets; i++)
            judged += sets[i].same_as < 0;
        if (judged == 0)
            rc = list_push(w->l, dir, name, -1, QH_REF_OK, 0); /* loads as ERROR: no data set */
        for (int i = 0; i < nsets && rc == 0; i++) {
            char nm[4096];
            if (sets[i].same_as >= 0)
                continue;
            if (judged == 1 && sets[i].n == 0)
                snprintf(nm, sizeof nm, "%s", name);
            else
                snprintf(nm, sizeof nm, "%s@%d", name, sets[i].n);
            rc = list_push(w->l, dir, nm, sets[i].n, QH_REF_OK, 0);
        }
        /* each data set that is another's directory: a row that loads as ERROR naming both */
        for (int i = 0; i < nsets && rc == 0; i++) {
            if (sets[i].same_as < 0)
                continue;
            char entry[64];
            snprintf(entry, sizeof entry, "%s%d", set_prefix, sets[i].n);
            rc = push_problem_at(w, dir, name, entry, QH_REF_SET_SAME, sets[i].same_as);
        }
        if (rc != 0)
            rc = oom(w, dir);
    }
    /* After the data sets: the test_data_set_* entries that are none. */
    for (int i = 0; i < n && rc == 0; i++) {
        const char *e = ents[i]->d_name;
        if (strncmp(e, set_prefix, sizeof set_prefix - 1) != 0)
            continue;
        char *p = qh_path_join(dir, e);
        if (!p)
            rc = oom(w, dir);
        else if (data_set_number(e) < 0)
            rc = push_problem_at(w, dir, name, e, QH_REF_SET_NAME, -1);
        else if (!qh_path_is_dir(p))
            rc = push_problem_at(w, dir, name, e, QH_REF_SET_NOT_DIR, -1);
        free(p);
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    free(sets);
    return rc;
}

static int walk(walker *w, const char *dir, const char *name, int depth);

static int is_symlink_in(const char *dir, const char *e)
{
    char *p = qh_path_join(dir, e);
    struct stat st;
    int link = p && lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
    free(p);
    return link;
}

/* Visits one entry of a directory being walked: a subdirectory is walked, an entry that
 * cannot be examined (other than a dangling symlink) is reported, anything else is not part
 * of the tree. */
static int visit(walker *w, const char *dir, const char *name, const char *e, int depth)
{
    char *sub = qh_path_join(dir, e);
    char *subname = name[0] ? qh_path_join(name, e) : strdup(e);
    int rc = 0;
    struct stat st;
    if (!sub || !subname)
        rc = oom(w, dir);
    else if (stat(sub, &st) != 0)
        rc = errno == ENOENT ? 0 : push_problem(w, sub, subname, QH_REF_UNREADABLE, errno);
    else if (S_ISDIR(st.st_mode) && (is_above(w, &st) || (w->up_short && is_symlink_in(dir, e))))
        rc = push_problem(w, sub, subname, QH_REF_LINK_UP, 0);
    else if (S_ISDIR(st.st_mode))
        rc = walk(w, sub, subname, depth + 1);
    free(sub);
    free(subname);
    return rc;
}


static int walk(walker *w, const char *dir, const char *name, int depth)
{
    struct stat st;
    if (w->stop && *w->stop)
        return 0; /* interrupted: the caller says so */
    if (stat(dir, &st) != 0)
        return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
    int seen = seen_before(w, &st);
    if (seen != 0)
        return seen < 0 ? oom(w, dir) : 0; /* reached again through a symlink: once is enough */

    char *model = qh_path_join(dir, "model.onnx");
    if (!model)
        return oom(w, dir);
    /* Any model.onnx makes a case, even a dangling symlink or a directory: loading it then
     * says what is wrong, where skipping it would lose the case without a word. A directory
     * whose entries cannot be examined (no search permission) is one row, not one an entry. */
    struct stat ms;
    int is_case = lstat(model, &ms) == 0, why = errno;
    free(model);
    if (!is_case && why != ENOENT)
        return depth > 0 ? push_problem(w, dir, name, QH_REF_UNREADABLE, why)
                         : qh_fail(w->err, "%s: cannot search directory: %s", dir, strerror(why));
    if (is_case)
        return add_case_dir(w, dir, name);
    if (depth >= QH_MAX_DEPTH)
        return push_problem(w, dir, name, QH_REF_TOO_DEEP, 0);

    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) {
        if (depth > 0)
            return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
        snprintf(w->err->msg, sizeof w->err->msg, "%s: cannot read directory: %s", dir,
                 strerror(errno));
        return -1;
    }
    /* Real subdirectories before symlinks, so that a case reachable both ways keeps the name
     * of where it really is. */
    int rc = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n && rc == 0; i++) {
            const char *e = ents[i]->d_name;
            if (e[0] != '.' && is_symlink_in(dir, e) == pass)
                rc = visit(w, dir, name, e, depth);
        }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return rc;
}

int qh_discover(const char *root, qh_case_list *list, const volatile sig_atomic_t *stop,
                qh_error *err)
{
    if (!qh_path_is_dir(root)) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", root,
                 errno == ENOENT ? "no such directory" : "not a directory");
        return -1;
    }
    char *model = qh_path_join(root, "model.onnx");
    if (!model)
        return -1;
    int is_case = qh_path_exists(model);
    free(model);
    /* A case directory given directly is named by its last path component. */
    char name[4096] = "";
    size_t start, len = last_name(root, &start);
    if (is_case)
        snprintf(name, sizeof name, "%.*s", (int)len, root + start);
    /* a data set directory given as the tree: one ERROR row naming its case, as repro says,
     * where the search found nothing in it ("no case was found") */
    int set_n = -1;
    if (!is_case && qh_classify_path(root, &set_n) == QH_REF_SET_DIR) {
        snprintf(name, sizeof name, "%.*s", (int)len, root + start);
        if (list_push(list, root, name, set_n, QH_REF_SET_DIR, 0) != 0) {
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", root);
            return -1;
        }
        return 0;
    }
    walker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", root);
        return -1;
    }
    *w = (walker){.l = list, .err = err, .stop = stop};
    if (note_above(w, root) != 0) {
        free(w->up);
        free(w);
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", root);
        return -1;
    }
    int rc = walk(w, root, name, 0);
    free(w->seen);
    free(w->up);
    free(w);
    return rc;
}

static int classify(const char *path, int *data_set);

int qh_classify_path(const char *path, int *data_set)
{
    /* a case directory named like a data set's row: by the name it is given, as run finds it
     * (a link by the link's name), or where that name is . or .. by the real one (x@1/. is
     * x@1) */
    char *model = qh_path_join(path, "model.onnx");
    char *real = realpath(path, NULL);
    struct stat st;
    size_t start, len = last_name(path, &start);
    int dots = (len == 1 && path[start] == '.') ||
               (len == 2 && path[start] == '.' && path[start + 1] == '.');
    int named_at = model && lstat(model, &st) == 0 &&
                   (dots ? real && qh_name_like_a_data_set(real) : qh_name_like_a_data_set(path));
    free(model);
    if (named_at) {
        free(real);
        return QH_REF_NAME_AT;
    }
    /* as it really is: CASE/test_data_set_0/., a symlink to a data set under another name */
    int k = classify(real ? real : path, data_set);
    free(real);
    return k;
}

static int classify(const char *path, int *data_set)
{
    size_t base, nlen = last_name(path, &base);
    if (nlen >= 4096 || strncmp(path + base, set_prefix, sizeof set_prefix - 1) != 0)
        return QH_REF_OK;
    char entry[4096];
    memcpy(entry, path + base, nlen);
    entry[nlen] = '\0';
    /* the parent, as discovery sees it: a case directory has a model.onnx entry */
    char *parent = base == 0 ? strdup(".") : strndup(path, base);
    char *model = parent ? qh_path_join(parent, "model.onnx") : NULL;
    struct stat st;
    int in_case = model && lstat(model, &st) == 0;
    free(parent);
    free(model);
    if (!in_case)
        return QH_REF_OK;
    int n = data_set_number(entry);
    if (n < 0)
        return QH_REF_SET_NAME;
    if (!qh_path_is_dir(path))
        return QH_REF_SET_NOT_DIR;
    *data_set = n;
    return QH_REF_SET_DIR;
}

void qh_case_list_free(qh_case_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].dir);
        free(list->items[i].name);
    }
    free(list->items);
    memset(list, 0, sizeof *list);
}
