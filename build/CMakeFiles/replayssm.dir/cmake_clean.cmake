file(REMOVE_RECURSE
  "CMakeFiles/replayssm.dir/src/core/api.c.o"
  "CMakeFiles/replayssm.dir/src/core/api.c.o.d"
  "CMakeFiles/replayssm.dir/src/core/device.c.o"
  "CMakeFiles/replayssm.dir/src/core/device.c.o.d"
  "CMakeFiles/replayssm.dir/src/cpu/cpu_backend.c.o"
  "CMakeFiles/replayssm.dir/src/cpu/cpu_backend.c.o.d"
  "CMakeFiles/replayssm.dir/src/cuda/cuda_absent.c.o"
  "CMakeFiles/replayssm.dir/src/cuda/cuda_absent.c.o.d"
  "CMakeFiles/replayssm.dir/src/ref/ref.c.o"
  "CMakeFiles/replayssm.dir/src/ref/ref.c.o.d"
  "libreplayssm.pdb"
  "libreplayssm.so"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/replayssm.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
