/* harness/commands.h — the qmmcheck subcommands that live in their own files. Each takes the
 * arguments after the command name and returns the process exit status (0, 1, or 2 for usage
 * errors). */
#ifndef QMM_HARNESS_COMMANDS_H
#define QMM_HARNESS_COMMANDS_H

int qh_cmd_bench(int argc, char **argv);       /* harness/cmd_bench.c */
int qh_cmd_diff(int argc, char **argv);        /* harness/cmd_diff.c */
int qh_cmd_fingerprint(int argc, char **argv); /* harness/cmd_fingerprint.c */
int qh_cmd_export(int argc, char **argv);      /* harness/cmd_export.c */

#endif /* QMM_HARNESS_COMMANDS_H */
