/* harness/cli/main.c — the qmmcheck command line: the list of commands, `help` and `version`,
 * and the dispatch to each command (harness/cli/commands.h). Every command's usage comes from
 * its own option table (harness/cli/options.h), so `help` lists what the commands accept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/commands.h"
#include "harness/invoke/backends.h"
#include "harness/invoke/strays.h"
#include "harness/base/version.h"
#include "harness/base/clean.h"
#include "harness/report/report.h"
#include "qmm/qmm.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const qh_option no_options[] = {{0, NULL, 0, NULL, 0, NULL}};
static const qh_command help_command = {
    "help", "[COMMAND]",
    "list the commands, or show one's usage ('help COMMAND' is 'COMMAND --help')", NULL,
    no_options, 0};
static const qh_command version_command = {
    "version", "", "print the version (also qmmcheck --version, -V)", NULL, no_options, 0};

/* Every command, in the order `help` lists them. */
static const struct {
    const qh_command *cmd;
    int (*main)(int argc, char **argv);
} commands[] = {
    {&qh_run_usage, qh_cmd_run},
    {&qh_list_usage, qh_cmd_list},
    {&qh_repro_usage, qh_cmd_repro},
    {&qh_fingerprint_usage, qh_cmd_fingerprint},
    {&qh_export_usage, qh_cmd_export},
    {&qh_diff_usage, qh_cmd_diff},
    {&qh_bench_usage, qh_cmd_bench},
    {&qh_reduce_usage, qh_cmd_reduce},
    {&help_command, cmd_help},
    {&version_command, cmd_version},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const char notes[] =
    "\n"
    "'qmmcheck COMMAND --help' lists the command's options; --opt=value is --opt value.\n"
    "SPEC is a built-in backend (reference, optimized, and cuda where built; 'qmmcheck list\n"
    "--backends') or a plugin (a path to a shared library: ./libx.so, libx.so, dir/libx.so;\n"
    "a built-in name wins over a file of that name), optionally followed by :OPTIONS, e.g.\n"
    "reference:profile=spec; or exec[,OPTIONS]:COMMAND, a process speaking\n"
    "docs/exec-protocol.md, e.g. 'exec:python3 my_backend.py'.\n"
    "Exit status: 0 when no case FAILED, CRASHED, TIMED OUT or had an ERROR; 1 otherwise;\n"
    "2 for usage errors; 3 when the run judged no case (none found, the filter or shard\n"
    "left none, or every case was SKIPPED) unless --allow-empty is given; 128+N when\n"
    "signal N (SIGINT, SIGTERM) stopped it, after writing the reports of the cases done.\n";

/* A usage error of the dispatcher itself: no command, or one it does not know. */
static int command_error(const char *cmd)
{
    if (cmd)
    {
        char *shown = qh_clean_dup(cmd, strlen(cmd), 0); /* the command line is untrusted */
        fprintf(stderr, "qmmcheck: unknown command '%s'\n", shown ? shown : "?");
        free(shown);
    }
    else
        fputs("qmmcheck: no command given\n", stderr);
    fputs("run 'qmmcheck help' for usage\n", stderr);
    return 2;
}

static int find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].cmd->name, name) == 0)
            return (int)i;
    return -1;
}

/* Runs a command that takes nothing but --help; 0, or 2 for anything else. */
static int no_arguments(const qh_command *cmd, int argc, char **argv, int *done)
{
    qh_opt_parser p;
    qh_opt_init(&p, cmd, argc, argv);
    const char *val;
    int id = qh_opt_next(&p, &val);
    *done = id == QH_OPT_HELP;
    if (id == QH_OPT_END || id == QH_OPT_HELP)
        return 0;
    if (id == QH_OPT_BAD)
        return qh_opt_error(cmd, QH_ERR_HINT, "%s", p.error);
    return qh_opt_error(cmd, QH_ERR_HINT, "unexpected argument %s", val);
}

static int cmd_version(int argc, char **argv)
{
    int done;
    int rc = no_arguments(&version_command, argc, argv, &done);
    if (rc || done)
        return rc;
    printf("qmmcheck " QH_VERSION " (qmm ABI %u)\n", QMM_ABI_VERSION);
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    if (argc >= 1 && argv[0][0] != '-') { /* help COMMAND: exactly COMMAND --help */
        int k = find_command(argv[0]);
        if (k < 0)
            return command_error(argv[0]);
        if (argc > 1) {
            fputs("qmmcheck help: give at most one COMMAND\n", stderr);
            return 2;
        }
        char help[] = "--help";
        char *args[] = {help, NULL};
        return commands[k].main(1, args);
    }
    int done;
    int rc = no_arguments(&help_command, argc, argv, &done);
    if (rc || done)
        return rc;
    fputs("usage: qmmcheck COMMAND [options]\n       qmmcheck --version | -V\n\ncommands:\n",
          stdout);
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %s%s%s\n      %s\n", commands[i].cmd->name,
               commands[i].cmd->synopsis[0] ? " " : "", commands[i].cmd->synopsis,
               commands[i].cmd->summary);
    fputs(notes, stdout);
    char kinds[128];
    qh_report_kind_names(kinds, sizeof kinds);
    printf("KIND (run --report): %s.\n", kinds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return command_error(NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return cmd_help(argc - 2, argv + 2);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        return cmd_version(argc - 2, argv + 2);
    int k = find_command(cmd);
    if (k < 0)
        return command_error(cmd);
    qh_backend_watch_exit();
    qh_strays_watch();
    return commands[k].main(argc - 2, argv + 2);
}
