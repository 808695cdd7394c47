/*
 * options.h — the command line's option parser: each subcommand describes its options in a
 * table (cli_opt, built with the constructors below) and cli_parse reads argv against it and
 * against the tuning switches every subcommand takes (rssm_context_params).
 *
 * Rules (strict: nothing is guessed, the first error stops the parse):
 *  - Options are `--name VALUE` or `--name=VALUE`; flags take no value. A word that is no
 *    option of the table (a positional argument, a misspelt name) is an error.
 *  - Integers: the whole value is a decimal integer (no sign for unsigned kinds) in the
 *    option's range [lo, hi]; some integer options also take words (`--small-batch auto`).
 *  - Numbers: the whole value is a finite decimal number, > 0 and at most the option's bound.
 *  - Choices: the value is exactly one of the option's names.
 *  - Lists: comma-separated integers, each in range, one to `max` of them, no empty item.
 *  - An option given twice keeps its last value.
 *  - `--help` or `-h` prints the subcommand's usage on stdout.
 * Every error prints one line on stderr, "replayssm CMD: " and what was wrong, naming the
 * option and the value ("--batch: '10x' is not an integer in [1, 4096]", "--vectors needs a
 * value", "unknown option '--bach'"), and the subcommand exits with status 2.
 */
#ifndef RSSM_CLI_OPTIONS_H
#define RSSM_CLI_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "replayssm.h"

/* Exit statuses of the subcommands: 0 ok, 1 a run failed, 2 a bad command line, 77 nothing ran
 * because the device is absent (ctest's SKIP_RETURN_CODE). */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_SKIP = 77 };

/* A name and the value it stands for. Tables of choices end with {NULL, 0}. */
typedef struct cli_choice {
    const char *name;
    int value;
} cli_choice;

typedef enum cli_kind {
    CLI_FLAG,   /* int = 1 */
    CLI_INT,    /* int in [lo, hi], or the value of one of `choices` */
    CLI_U64,    /* uint64_t, any */
    CLI_NUM,    /* double in (0, hi] */
    CLI_CHOICE, /* int = the value of one of `choices` */
    CLI_STR,    /* const char *, any non-empty string */
    CLI_LIST,   /* int[max], *count of them, each in [lo, hi] */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* "--batch"; NULL ends a table */
    cli_kind kind;
    void *dst;
    long long lo, hi;
    double num_hi;
    const cli_choice *choices;
    int max, *count; /* CLI_LIST */
} cli_opt;

cli_opt cli_flag(const char *name, int *dst);
cli_opt cli_int(const char *name, int *dst, long long lo, long long hi);
/* an integer in [lo, hi] or one of the words of `words` (`--small-batch auto|N`) */
cli_opt cli_int_or(const char *name, int *dst, long long lo, long long hi, const cli_choice *words);
cli_opt cli_u64(const char *name, uint64_t *dst);
cli_opt cli_num(const char *name, double *dst, double hi);
cli_opt cli_choice_of(const char *name, int *dst, const cli_choice *choices);
cli_opt cli_str(const char *name, const char **dst);
cli_opt cli_list(const char *name, int *dst, int max, int *count, long long lo, long long hi);
#define CLI_END                                                                                                        \
    (cli_opt) { NULL }

/* A subcommand: its name after `replayssm` and its usage text. */
typedef struct cli_command {
    const char *name; /* "check", "bench", ... */
    void (*usage)(FILE *f);
} cli_command;

enum { CLI_CONTINUE = -1 };
/* Reads argv[1 .. argc) (argv[0] is the subcommand's name) against opts and the tuning
 * switches (into *params). CLI_CONTINUE when the options are read; otherwise the exit status
 * (0 after --help, 2 after an error, its message printed). */
int cli_parse(const cli_command *cmd, int argc, char **argv, const cli_opt *opts, rssm_context_params *params);

/* Prints "replayssm CMD: " and the message on stderr; returns CLI_EXIT_USAGE. */
int cli_error(const cli_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The usage lines of the tuning switches (for `replayssm help`). */
void cli_switches_usage(FILE *f);

/* Choices every subcommand uses. */
extern const cli_choice cli_devices[];     /* cpu, cuda, reference (ref) */
extern const cli_choice cli_run_devices[]; /* cpu, cuda */
extern const cli_choice cli_dtypes[];      /* f32, bf16 */
/* A table of names (NULL-terminated, e.g. a library's presets) as choices whose values are
 * their indexes; out has room for max entries and the end. */
void cli_choices_from_names(const char *const *names, cli_choice *out, int max);

#endif /* RSSM_CLI_OPTIONS_H */
