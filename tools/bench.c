/* placeholder: replaced by the benchmark */
#include "cli.h"
int rssm_cli_bench(int argc, char **argv) { return 2; }
