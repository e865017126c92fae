/* harness/cli/commands.h — the qmmcheck subcommands, each in its own file. Each takes the
 * arguments after the command name and returns the process exit status (0, 1, or 2 for usage
 * errors; `run` also 3 for a run that judged no case (`diff` for one that compared no problem),
 * 128+N when signal N stopped it; `reduce` 4 when inconclusive). Each
 * also declares its options once (harness/cli/options.h), for its parser, its --help and
 * `qmmcheck help`. */
#ifndef QMM_HARNESS_COMMANDS_H
#define QMM_HARNESS_COMMANDS_H

#include "harness/cli/options.h"

int qh_cmd_run(int argc, char **argv);         /* harness/cli/cmd_run.c */
int qh_cmd_list(int argc, char **argv);        /* harness/cli/cmd_run.c */
int qh_cmd_repro(int argc, char **argv);       /* harness/cli/cmd_run.c */
int qh_cmd_bench(int argc, char **argv);       /* harness/cli/cmd_bench.c */
int qh_cmd_diff(int argc, char **argv);        /* harness/cli/cmd_diff.c */
int qh_cmd_fingerprint(int argc, char **argv); /* harness/cli/cmd_fingerprint.c */
int qh_cmd_export(int argc, char **argv);      /* harness/cli/cmd_export.c */
int qh_cmd_reduce(int argc, char **argv);      /* harness/cli/cmd_reduce.c */

extern const qh_command qh_run_usage, qh_list_usage, qh_repro_usage;
extern const qh_command qh_bench_usage, qh_diff_usage, qh_fingerprint_usage;
extern const qh_command qh_export_usage, qh_reduce_usage;

#endif /* QMM_HARNESS_COMMANDS_H */
