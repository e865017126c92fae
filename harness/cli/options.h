/* harness/cli/options.h — a command's options as one table, from which both the parser and the
 * command's --help are made, so an option cannot be accepted without being documented (and
 * tests/cli_conventions.sh checks the man page against the same --help). Adding an option is
 * one row in the command's table and one case where the command reads it. */
#ifndef QMM_HARNESS_OPTIONS_H
#define QMM_HARNESS_OPTIONS_H

#include <stdio.h>

#include "harness/base/error.h"

/* One option: how it is spelled, whether it takes a value, and its one line of help. */
typedef struct qh_option {
    int id;              /* the command's own code for it, what qh_opt_next returns */
    const char *name;    /* "--backend" */
    char short_name;     /* 'b' for -b, or 0 */
    const char *value;   /* the value's placeholder ("SPEC"); NULL for a flag */
    unsigned commands;   /* in a table several commands share, a bit per command; 0: all */
    const char *help;    /* one line */
} qh_option;

/* One command: its usage and its table (ended by a row whose name is NULL). */
typedef struct qh_command {
    const char *name;     /* "run" */
    const char *synopsis; /* after "usage: qmmcheck NAME "; lines after the first indented */
    const char *summary;  /* one line, for `qmmcheck help` */
    const char *about;    /* text printed after the options, or NULL */
    const qh_option *options;
    unsigned mask;        /* the rows that are this command's (qh_option.commands) */
} qh_command;

/* What qh_opt_next returns besides an option's id. */
enum {
    QH_OPT_END = -1,  /* argv is used up */
    QH_OPT_ARG = -2,  /* a positional argument, in *value */
    QH_OPT_HELP = -3, /* --help or -h: the usage was printed to stdout; exit 0 */
    QH_OPT_BAD = -4   /* unknown option, missing or unwanted value: why is in error */
};

/* The parser's place in argv (the arguments after the command's name). */
typedef struct qh_opt_parser {
    const qh_command *cmd;
    int argc;
    char **argv;
    int i;
    int only_args; /* after "--" every argument is positional */
    const char *name; /* the last option's long name, for messages ("--seed") */
    char error[256];
} qh_opt_parser;

void qh_opt_init(qh_opt_parser *p, const qh_command *cmd, int argc, char **argv);

/* The next option's id (its value, if it takes one, in *value: "--opt value" and
 * "--opt=value" alike), or one of the QH_OPT_ codes. */
int qh_opt_next(qh_opt_parser *p, const char **value);

/* The command's usage, options and notes, as --help prints them. */
void qh_opt_usage(const qh_command *cmd, FILE *f);

/* How qh_opt_error ends: the command's whole usage, or one line saying where it is. */
enum { QH_ERR_USAGE, QH_ERR_HINT };

/* A usage error on stderr: "qmmcheck NAME: ", fmt (one %s) with arg, cleaned into one line
 * (the command line is untrusted text, harness/base/clean.h), then the usage or, with
 * QH_ERR_HINT, "run 'qmmcheck NAME --help' for usage". Returns 2, a usage error's status. */
int qh_opt_error(const qh_command *cmd, int how, const char *fmt, const char *arg);

/* An error on stderr: prefix (the harness's own text), then msg cleaned into one line (it quotes
 * an argument, a path or a file's text: harness/base/clean.h), then a newline. */
void qh_eprint_clean(const char *prefix, const char *msg);

/* --start-timeout S, which run, diff, reduce and fingerprint take alike: its help line, and
 * its value as qh_isolation.start_s (harness/invoke/backends.h): S seconds, or -1 for S = 0
 * (none). Returns 0, or -1 when S is not a number of seconds >= 0. */
/* --out "" (an unset variable in a script) named the working directory's root for export:
 * export --out "" wrote its suites under /. */
#define QH_EMPTY_OUT "--out: an empty path; give the directory to write into"

#define QH_START_TIMEOUT_HELP \
    "seconds a worker's start may take (default --timeout's, at least 10; 0: none)"
int qh_opt_start_timeout(const char *val, double *start_s);

/* A report spec (KIND:FILE) that is one of the command's inputs is refused before it is
 * removed or written (qh_report_check_not_input): the --xfail list (NULL: none), the files of
 * the n_backends specs (plugins, exec: programs and scripts), qmmcheck itself, a case's file
 * under the n_trees --vectors roots. 0, or -1 with err. */
int qh_opt_report_not_input(const char *spec, const char *const *backends, int n_backends,
                            const char *xfail, const char *const *trees, int n_trees,
                            qh_error *err);

/* qh_opt_error's "OPTION VALUE: expected WANT". */
int qh_opt_bad_value(const qh_command *cmd, int how, const char *option, const char *value,
                     const char *want);

/* The exit status of a command that checked nothing: run judged no case, diff compared no
 * problem (docs/formats.md "Exit status"); --allow-empty makes it 0. */
#define QH_EXIT_EMPTY 3

/* Says that `who` ("qmmcheck", "qmmcheck diff") checked nothing: "EMPTY: WHAT: WHY" on stdout
 * (the log) and "WHO: WHAT: WHY (exit 3; --allow-empty accepts that)" on stderr. Returns
 * QH_EXIT_EMPTY. */
int qh_exit_empty(const char *who, const char *what, const char *why);

#endif /* QMM_HARNESS_OPTIONS_H */
