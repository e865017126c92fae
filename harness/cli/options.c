/* harness/cli/options.c — parsing a command's argv against its option table, and the --help
 * made from the same table (harness/cli/options.h). */
#include "harness/cli/options.h"

#include "harness/base/numparse.h"
#include "harness/invoke/backends.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/invoke/exec.h"
#include "harness/report/report.h"

static int is_mine(const qh_command *cmd, const qh_option *o)
{
    return o->commands == 0 || (o->commands & cmd->mask) != 0;
}

void qh_opt_init(qh_opt_parser *p, const qh_command *cmd, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
}

/* The command's row for "--name" (len bytes of it) or "-c", or NULL. */
static const qh_option *find(const qh_command *cmd, const char *a, size_t len)
{
    for (const qh_option *o = cmd->options; o && o->name; o++) {
        if (!is_mine(cmd, o))
            continue;
        if (a[1] == '-' ? strlen(o->name) == len && strncmp(o->name, a, len) == 0
                        : len == 2 && o->short_name && a[1] == o->short_name)
            return o;
    }
    return NULL;
}

int qh_opt_next(qh_opt_parser *p, const char **value)
{
    *value = NULL;
    if (p->i >= p->argc)
        return QH_OPT_END;
    const char *a = p->argv[p->i++];
    if (p->only_args || a[0] != '-' || a[1] == '\0') { /* "-" alone names stdin, a file */
        *value = a;
        return QH_OPT_ARG;
    }
    if (strcmp(a, "--") == 0) {
        p->only_args = 1;
        return qh_opt_next(p, value);
    }
    /* "--opt=value": only long options; a short one is "-b VALUE" */
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        qh_opt_usage(p->cmd, stdout);
        return QH_OPT_HELP;
    }
    const qh_option *o = find(p->cmd, a, len);
    if (!o) {
        /* the command line is untrusted text too: one clean line (harness/base/clean.h) */
        char shown[200];
        qh_clean_into(shown, sizeof shown, a, len, 0);
        snprintf(p->error, sizeof p->error, "unknown option %s", shown);
        return QH_OPT_BAD;
    }
    p->name = o->name;
    if (!o->value) {
        if (eq) {
            snprintf(p->error, sizeof p->error, "%s takes no value", o->name);
            return QH_OPT_BAD;
        }
        return o->id;
    }
    if (eq) {
        *value = eq + 1;
    } else if (p->i < p->argc) {
        *value = p->argv[p->i++]; /* whatever it looks like: "--seed -1" is refused by --seed */
    } else {
        snprintf(p->error, sizeof p->error, "%s needs a value", o->name);
        return QH_OPT_BAD;
    }
    return o->id;
}

/* "  -b, --backend SPEC" or "      --vectors DIR", into buf. */
static void spelling(const qh_option *o, char *buf, size_t size)
{
    char lead[8] = "    ";
    if (o->short_name)
        snprintf(lead, sizeof lead, "-%c, ", o->short_name);
    snprintf(buf, size, "  %s%s%s%s", lead, o->name, o->value ? " " : "", o->value ? o->value : "");
}

/* One line of the option list. */
static void usage_line(const qh_option *o, FILE *f)
{
    char left[96];
    spelling(o, left, sizeof left);
    size_t n = strlen(left);
    fprintf(f, "%s%*s%s\n", left, n < 30 ? (int)(30 - n) : 2, "", o->help);
}

void qh_opt_usage(const qh_command *cmd, FILE *f)
{
    fprintf(f, "usage: qmmcheck %s%s%s\n%s\n\noptions:\n", cmd->name, cmd->synopsis[0] ? " " : "",
            cmd->synopsis, cmd->summary);
    for (const qh_option *o = cmd->options; o && o->name; o++)
        if (is_mine(cmd, o))
            usage_line(o, f);
    static const qh_option help = {0, "--help", 'h', NULL, 0, "print this help and exit"};
    usage_line(&help, f);
    if (cmd->about)
        fprintf(f, "\n%s", cmd->about);
}

void qh_eprint_clean(const char *prefix, const char *msg)
{
    char shown[1024];
    qh_clean_into(shown, sizeof shown, msg, strlen(msg), 0);
    fprintf(stderr, "%s%s\n", prefix, shown);
}

int qh_opt_error(const qh_command *cmd, int how, const char *fmt, const char *arg)
{
    char shown[512];
    qh_clean_into(shown, sizeof shown, arg, strlen(arg), 0);
    fprintf(stderr, "qmmcheck %s: ", cmd->name);
    fprintf(stderr, fmt, shown);
    fputc('\n', stderr);
    if (how == QH_ERR_HINT)
        fprintf(stderr, "run 'qmmcheck %s --help' for usage\n", cmd->name);
    else
        qh_opt_usage(cmd, stderr);
    return 2;
}

int qh_exit_empty(const char *who, const char *what, const char *why)
{
    printf("EMPTY: %s: %s\n", what, why);
    fprintf(stderr, "%s: %s: %s (exit %d; --allow-empty accepts that)\n", who, what, why,
            QH_EXIT_EMPTY);
    return QH_EXIT_EMPTY;
}

int qh_opt_bad_value(const qh_command *cmd, int how, const char *option, const char *value,
                     const char *want)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s %s: expected %s", option, value, want);
    return qh_opt_error(cmd, how, "%s", msg);
}

int qh_opt_start_timeout(const char *val, double *start_s)
{
    double v;
    if (qh_parse_double(val, 0, QH_TIMEOUT_S_MAX, &v))
        return -1;
    *start_s = v > 0 ? v : -1;
    return 0;
}

/* The files a command reads besides its trees, which no report may name (a report's FILE
 * is removed or replaced): the --xfail list, each plugin (as given, and as the loader would
 * find a bare name along LD_LIBRARY_PATH), each word of an exec: command that names a file
 * (its program, its script), and qmmcheck itself. Into out (strdup'd); their count. */
#define INPUTS_MAX 256
static int input_files(const char *const *backends, int n_backends, const char *xfail,
                       char **out)
{
    int n = 0;
    char buf[4096];
#define ADD(path)                                                                           \
    do {                                                                                     \
        if (n < INPUTS_MAX && (out[n] = strdup(path)) != NULL)                               \
            n++;                                                                             \
    } while (0)
    if (xfail)
        ADD(xfail);
    if (qh_self_exe(buf, sizeof buf) > 0) /* qmmcheck itself */
        ADD(buf);
    const char *ld = getenv("LD_LIBRARY_PATH");
    for (int j = 0; j < n_backends; j++) {
        const char *spec = backends[j];
        if (qh_exec_is_spec(spec)) { /* exec[,OPTIONS]:COMMAND: its words that are files */
            for (const char *w = strchr(spec, ':') + 1; *w;) {
                size_t len = strcspn(w, " \t");
                snprintf(buf, sizeof buf, "%.*s", (int)len, w);
                struct stat st;
                if (len && stat(buf, &st) == 0 && S_ISREG(st.st_mode))
                    ADD(buf);
                w += len;
                w += strspn(w, " \t");
            }
            continue;
        }
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(spec, ":"), spec);
        if (!qh_spec_is_plugin(buf))
            continue;
        ADD(buf);
        for (const char *d = ld; d && *d && !strchr(buf, '/');) {
            size_t len = strcspn(d, ":");
            char in_dir[4600];
            snprintf(in_dir, sizeof in_dir, "%.*s/%s", (int)len, d, buf);
            ADD(in_dir);
            d += len + (d[len] == ':');
        }
    }
#undef ADD
    return n;
}

int qh_opt_report_not_input(const char *spec, const char *const *backends, int n_backends,
                            const char *xfail, const char *const *trees, int n_trees,
                            qh_error *err)
{
    char *inputs[INPUTS_MAX];
    int n = input_files(backends, n_backends, xfail, inputs);
    int rc = qh_report_check_not_input(spec, (const char *const *)inputs, n, trees, n_trees, err);
    for (int i = 0; i < n; i++)
        free(inputs[i]);
    return rc;
}
