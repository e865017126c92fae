/* tests/test_options.c — the option tables of harness/cli/options.h: "--opt value" and
 * "--opt=value" alike, short forms, "--", a lone "-", the errors (unknown, missing value, a
 * value for a flag), a shared table's rows per command, and the --help made from the table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/options.h"

enum { A = 1, B = 2 };
enum { O_NAME, O_FLAG, O_ONLY_B };
static const qh_option table[] = {
    {O_NAME, "--name", 'n', "NAME", 0, "a name"},
    {O_FLAG, "--flag", 0, NULL, A, "a flag of A"},
    {O_ONLY_B, "--only-b", 0, "X", B, "an option of B"},
    {0, NULL, 0, NULL, 0, NULL},
};
static const qh_command cmd_a = {"a", "[options]", "command a", "notes of a\n", table, A};
static const qh_command cmd_b = {"b", "[options]", "command b", NULL, table, B};

/* Parses `args` (space-separated) with `cmd`: each result as "id=value" or "ARG=value" or
 * "BAD:error", joined by '|', into out. */
static void parse(const qh_command *cmd, const char *args, char *out, size_t size)
{
    char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", args);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 32;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    qh_opt_parser p;
    qh_opt_init(&p, cmd, argc, argv);
    out[0] = '\0';
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        size_t n = strlen(out);
        if (id == QH_OPT_BAD) {
            snprintf(out + n, size - n, "%sBAD:%s", n ? "|" : "", p.error);
            return;
        }
        if (id == QH_OPT_ARG)
            snprintf(out + n, size - n, "%sARG=%s", n ? "|" : "", val);
        else
            snprintf(out + n, size - n, "%s%d=%s", n ? "|" : "", id, val ? val : "(none)");
    }
}

#define EXPECT_PARSE(cmd, args, want)                                                        \
    do {                                                                                     \
        char got[512];                                                                       \
        parse((cmd), (args), got, sizeof got);                                               \
        cr_expect_str_eq(got, (want), "%s", (args));                                         \
    } while (0)

Test(options, value_forms_are_the_same)
{
    EXPECT_PARSE(&cmd_a, "--name x", "0=x");
    EXPECT_PARSE(&cmd_a, "--name=x", "0=x");
    EXPECT_PARSE(&cmd_a, "-n x", "0=x");
    EXPECT_PARSE(&cmd_a, "--name=a=b:c", "0=a=b:c"); /* only the first '=' splits */
    EXPECT_PARSE(&cmd_a, "--name=", "0=");           /* empty: the command judges it */
    EXPECT_PARSE(&cmd_a, "--name --flag", "0=--flag"); /* a value is whatever follows */
}

Test(options, positional_arguments_dash_and_double_dash)
{
    EXPECT_PARSE(&cmd_a, "dir --flag - other", "ARG=dir|1=(none)|ARG=-|ARG=other");
    EXPECT_PARSE(&cmd_a, "--flag -- --name -x", "1=(none)|ARG=--name|ARG=-x");
}

Test(options, errors_name_the_option)
{
    EXPECT_PARSE(&cmd_a, "--nope", "BAD:unknown option --nope");
    EXPECT_PARSE(&cmd_a, "--nope=secret", "BAD:unknown option --nope");
    EXPECT_PARSE(&cmd_a, "-z", "BAD:unknown option -z");
    EXPECT_PARSE(&cmd_a, "-n=x", "BAD:unknown option -n=x"); /* short options take no '=' */
    EXPECT_PARSE(&cmd_a, "--flag=1", "BAD:--flag takes no value");
    EXPECT_PARSE(&cmd_a, "--\033[2J", "BAD:unknown option --\\x1b[2J"); /* cleaned */
    EXPECT_PARSE(&cmd_a, "x --name", "ARG=x|BAD:--name needs a value");
}

Test(options, a_shared_tables_rows_belong_to_their_commands)
{
    EXPECT_PARSE(&cmd_a, "--only-b 1", "BAD:unknown option --only-b");
    EXPECT_PARSE(&cmd_b, "--flag", "BAD:unknown option --flag");
    EXPECT_PARSE(&cmd_b, "--only-b=1 --name 2", "2=1|0=2");
}

Test(options, help_lists_the_commands_rows_and_only_those)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    qh_opt_usage(&cmd_a, f);
    fclose(f);
    cr_expect(strncmp(text, "usage: qmmcheck a [options]\ncommand a\n", 38) == 0, "%s", text);
    cr_expect(strstr(text, "  -n, --name NAME") != NULL, "%s", text);
    cr_expect(strstr(text, "      --flag ") != NULL, "%s", text);
    cr_expect(strstr(text, "  -h, --help ") != NULL, "%s", text);
    cr_expect(strstr(text, "--only-b") == NULL, "%s", text);
    cr_expect(strstr(text, "\nnotes of a\n") != NULL, "%s", text);
    free(text);
}
