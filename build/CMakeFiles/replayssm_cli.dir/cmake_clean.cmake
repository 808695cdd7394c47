file(REMOVE_RECURSE
  "CMakeFiles/replayssm_cli.dir/tools/bench.c.o"
  "CMakeFiles/replayssm_cli.dir/tools/bench.c.o.d"
  "CMakeFiles/replayssm_cli.dir/tools/check.c.o"
  "CMakeFiles/replayssm_cli.dir/tools/check.c.o.d"
  "CMakeFiles/replayssm_cli.dir/tools/main.c.o"
  "CMakeFiles/replayssm_cli.dir/tools/main.c.o.d"
  "replayssm"
  "replayssm.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/replayssm_cli.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
