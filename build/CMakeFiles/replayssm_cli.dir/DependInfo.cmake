
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/tools/bench.c" "CMakeFiles/replayssm_cli.dir/tools/bench.c.o" "gcc" "CMakeFiles/replayssm_cli.dir/tools/bench.c.o.d"
  "/work/main/tools/check.c" "CMakeFiles/replayssm_cli.dir/tools/check.c.o" "gcc" "CMakeFiles/replayssm_cli.dir/tools/check.c.o.d"
  "/work/main/tools/main.c" "CMakeFiles/replayssm_cli.dir/tools/main.c.o" "gcc" "CMakeFiles/replayssm_cli.dir/tools/main.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/CMakeFiles/replayssm.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
