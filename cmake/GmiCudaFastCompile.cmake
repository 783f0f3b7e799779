# gmi_gpu_visible(<var>): TRUE where nvidia-smi -L lists a GPU at configure time (GPU test binaries, fast compile).
function(gmi_gpu_visible out)
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _smi_rc OUTPUT_QUIET ERROR_QUIET)
  if(_smi_rc STREQUAL "0")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# GMI_CUDA_FAST_COMPILE: this project's device code compiled for build speed, not run speed (nvcc -Ofc=max; host
# code unchanged), for builds whose device code never runs. AUTO (the cpu preset) turns it on where no GPU is visible
# at configure time: CI, where cicc and ptxas took most of each .cu file's time; ON always, OFF (default) never.
# Every stage of nvcc still runs, so device code that does not compile still fails the build. Not exported.
set(GMI_CUDA_FAST_COMPILE OFF CACHE STRING "Device code for build speed (nvcc -Ofc=max): AUTO (where no GPU is visible), ON or OFF")
set_property(CACHE GMI_CUDA_FAST_COMPILE PROPERTY STRINGS AUTO ON OFF)
if(GMI_CUDA_FAST_COMPILE STREQUAL "AUTO")
  gmi_gpu_visible(_gmi_gpu_visible)
  if(_gmi_gpu_visible)
    set(_gmi_fast_compile OFF)
  else()
    set(_gmi_fast_compile ON)
  endif()
elseif(GMI_CUDA_FAST_COMPILE MATCHES "^(ON|OFF)$")
  set(_gmi_fast_compile ${GMI_CUDA_FAST_COMPILE})
else()
  message(FATAL_ERROR "GMI_CUDA_FAST_COMPILE: got '${GMI_CUDA_FAST_COMPILE}', need AUTO, ON or OFF")
endif()
if(_gmi_fast_compile)
  message(STATUS "gmi: device code compiled for build speed (nvcc -Ofc=max; GMI_CUDA_FAST_COMPILE=${GMI_CUDA_FAST_COMPILE}): "
                 "it runs slower on a GPU; OFF for the GPU's own builds")
  add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-Ofc=max>)
endif()
