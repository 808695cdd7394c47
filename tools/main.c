#include <stdio.h>
#include "replayssm.h"
int main(void) { printf("replayssm %s\n", rssm_version_string()); return 0; }
