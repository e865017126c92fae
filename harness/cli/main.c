/* harness/cli/main.c — the qmmcheck command line: the usage text, and the dispatch to each
 * command (harness/cli/commands.h). */
#include <stdio.h>
#include <string.h>

#include "harness/cli/commands.h"
#include "harness/cli/version.h"
#include "harness/report/report.h"
#include "qmm/qmm.h"

static const char usage_text[] =
    "usage: qmmcheck <command> [options]\n"
    "\n"
    "commands:\n"
    "  run     --backend SPEC [--backend SPEC...] --vectors DIR [DIR...]\n"
    "          [--filter REGEX] [--shard I/N] [--xfail FILE [--xfail-strict]]\n"
    "          [--report KIND:FILE...]\n"
    "          [--profile NAME] [--quiet] [--verbose]\n"
    "          [--isolate | --no-isolate] [--timeout S] [--memory-limit BYTES]\n"
    "          [--max-skipped N] [--allow-empty]\n"
    "          [--determinism [--variants 'threads=1;threads=2']]\n"
    "          judge every case under the vector trees against each backend\n"
    "  list    --vectors DIR [DIR...] [--filter REGEX] [--shard I/N]   list the cases\n"
    "  list    --backends                                              list built-in backends\n"
    "  repro   [--backend SPEC] [--data-set N] [--profile NAME] CASE_DIR\n"
    "          one case, in full detail\n"
    "  fingerprint --backend SPEC [--report json:FILE]   which semantics profile it matches\n"
    "  export  --suite NAME|all --out DIR [--seed N] | --list   write the edge-case suites\n"
    "  diff    --backend A --backend B --seed S (--count N | --seconds T) [--out DIR]\n"
    "          [--profile NAME] [--problem I]   seeded random differential of two backends\n"
    "  bench   --backend SPEC --shape MxKxN [...] | --peak   time a backend (qmmcheck bench -h)\n"
    "  help    this text\n"
    "\n"
    "SPEC is a built-in backend (reference) or a plugin path (./libx.so), optionally\n"
    "followed by :OPTIONS, e.g. reference:profile=spec; or exec[,OPTIONS]:COMMAND, a\n"
    "process speaking docs/exec-protocol.md, e.g. 'exec:python3 my_backend.py'.\n"
    "Exit status: 0 when no case FAILED, CRASHED, TIMED OUT or had an ERROR; 1 otherwise;\n"
    "2 for usage errors; 3 when the run judged no case (none found, the filter or shard\n"
    "left none, or every case was SKIPPED) unless --allow-empty is given; 128+N when\n"
    "signal N (SIGINT, SIGTERM) stopped it, after writing the reports of the cases done.\n";

/* A usage error of the dispatcher itself: no command, or one it does not know. */
static int command_error(const char *cmd)
{
    if (cmd)
        fprintf(stderr, "qmmcheck: unknown command '%s'\n", cmd);
    else
        fputs("qmmcheck: no command given\n", stderr);
    fputs("run 'qmmcheck help' for usage\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return command_error(NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0)
        return qh_cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "list") == 0)
        return qh_cmd_list(argc - 2, argv + 2);
    if (strcmp(cmd, "repro") == 0)
        return qh_cmd_repro(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0) return qh_cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "fingerprint") == 0) return qh_cmd_fingerprint(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0) return qh_cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "diff") == 0) return qh_cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_text, stdout);
        char kinds[128];
        qh_report_kind_names(kinds, sizeof kinds);
        printf("KIND (run --report): %s.\n", kinds);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("qmmcheck " QH_VERSION " (qmm ABI %u)\n", QMM_ABI_VERSION);
        return 0;
    }
    return command_error(cmd);
}
