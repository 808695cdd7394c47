
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/api.c" "CMakeFiles/replayssm.dir/src/core/api.c.o" "gcc" "CMakeFiles/replayssm.dir/src/core/api.c.o.d"
  "/work/main/src/core/device.c" "CMakeFiles/replayssm.dir/src/core/device.c.o" "gcc" "CMakeFiles/replayssm.dir/src/core/device.c.o.d"
  "/work/main/src/cpu/cpu_backend.c" "CMakeFiles/replayssm.dir/src/cpu/cpu_backend.c.o" "gcc" "CMakeFiles/replayssm.dir/src/cpu/cpu_backend.c.o.d"
  "/work/main/src/cuda/cuda_absent.c" "CMakeFiles/replayssm.dir/src/cuda/cuda_absent.c.o" "gcc" "CMakeFiles/replayssm.dir/src/cuda/cuda_absent.c.o.d"
  "/work/main/src/ref/ref.c" "CMakeFiles/replayssm.dir/src/ref/ref.c.o" "gcc" "CMakeFiles/replayssm.dir/src/ref/ref.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
