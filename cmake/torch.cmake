# Which LibTorch libddp, the trainers and their tests build against, and which Python runs the
# interop tests. Default: the torch 2.x that scripts/install-deps.sh puts in a virtual
# environment (its version is written once, in scripts/lib.sh; DDP_TORCH_VENV moves it).
#   -DDDP_TORCH_PYTHON=/path/to/python    the LibTorch inside that Python's torch (the GPU machine's)
#   -DDDP_TORCH_PYTHON=/usr/bin/python3   Debian's torch 1.13 (libtorch-dev; the legacy leg)
#   -DDDP_TORCH_PYTHON= -DCMAKE_PREFIX_PATH=/path/to/libtorch   a LibTorch download
# Sets DDP_TEST_PYTHON's default (that Python, else /usr/bin/python3) and DDP_TORCH_CXX_STANDARD
# (20 for torch 2.x: its newest headers refuse anything older; 17 for 1.13).
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/lib.sh _ddp_torch_version_line REGEX "^torch_version=")
string(REGEX REPLACE "^torch_version=" "" DDP_PINNED_TORCH_VERSION "${_ddp_torch_version_line}")
if(DEFINED ENV{DDP_TORCH_VENV})
  set(_ddp_venv $ENV{DDP_TORCH_VENV})
else()
  set(_ddp_venv /opt/ddp-launch/torch-${DDP_PINNED_TORCH_VERSION})
endif()
set(_ddp_default_python "")
if(EXISTS ${_ddp_venv}/bin/python)
  set(_ddp_default_python ${_ddp_venv}/bin/python)
endif()
set(DDP_TORCH_PYTHON "${_ddp_default_python}" CACHE FILEPATH
    "A Python whose torch provides the LibTorch to build against (empty: CMAKE_PREFIX_PATH or the system's)")

set(_ddp_python_torch_version "")
if(DDP_TORCH_PYTHON)
  execute_process(
    COMMAND ${DDP_TORCH_PYTHON} -c "import torch; print(torch.__version__.split('+')[0]); print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _ddp_torch_out ERROR_VARIABLE _ddp_torch_err RESULT_VARIABLE _ddp_torch_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _ddp_torch_rc EQUAL 0)
    message(FATAL_ERROR "DDP_TORCH_PYTHON=${DDP_TORCH_PYTHON} cannot import torch: ${_ddp_torch_err}"
                        "Run scripts/install-deps.sh, or point DDP_TORCH_PYTHON at a Python with torch "
                        "(empty: use CMAKE_PREFIX_PATH or the system's LibTorch).")
  endif()
  string(REPLACE "\n" ";" _ddp_torch_out "${_ddp_torch_out}")
  list(GET _ddp_torch_out 0 _ddp_python_torch_version)
  list(GET _ddp_torch_out 1 _ddp_prefix)
  # Debian's python3-torch ships no CMake files beside it: its LibTorch (libtorch-dev) is the system's.
  # The torch folder itself too, so that TorchConfig's find_library(torch) takes its lib/ before
  # a system LibTorch (Debian's libtorch.so in /usr/lib would otherwise win).
  if(EXISTS ${_ddp_prefix}/Torch/TorchConfig.cmake)
    get_filename_component(_ddp_torch_root ${_ddp_prefix}/../.. ABSOLUTE)
    list(PREPEND CMAKE_PREFIX_PATH ${_ddp_prefix} ${_ddp_torch_root})
  endif()
  set(_ddp_test_python_default ${DDP_TORCH_PYTHON})
else()
  set(_ddp_test_python_default /usr/bin/python3)
endif()
set(DDP_TEST_PYTHON ${_ddp_test_python_default} CACHE FILEPATH "Python with torch, for the interop tests")

if(NOT DDP_BUILD_RUNTIME)
  return()
endif()
# A CUDA LibTorch (PyPI's default wheel) needs a CUDA toolkit to configure; Debian 12 has none.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(Torch REQUIRED)
message(STATUS "libddp: torch library ${TORCH_LIBRARY}")
# A wheel's CUDA LibTorch needs the CUDA libraries and NCCL of the wheel's nvidia-* packages
# (site-packages/nvidia/*/lib), found through libtorch_cuda's own RUNPATH. The toolkit's older
# NCCL (in the system's library path) must not stand in for them, at link time or at run time:
# runtime/CMakeLists.txt puts these folders first for every program that links libddp.
set(DDP_TORCH_NVIDIA_LIB_DIRS "")
if(_ddp_torch_root)
  file(GLOB DDP_TORCH_NVIDIA_LIB_DIRS LIST_DIRECTORIES true ${_ddp_torch_root}/../nvidia/*/lib)
endif()
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _ddp_lib_minor "${Torch_VERSION}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _ddp_python_minor "${_ddp_python_torch_version}")
if(_ddp_python_torch_version AND NOT _ddp_lib_minor VERSION_EQUAL _ddp_python_minor)
  message(WARNING "LibTorch ${Torch_VERSION} found, but ${DDP_TORCH_PYTHON} has torch ${_ddp_python_torch_version}: "
                  "the interop tests compare different versions")
endif()
if(Torch_VERSION VERSION_GREATER_EQUAL 2)
  set(DDP_TORCH_CXX_STANDARD 20)
else()
  set(DDP_TORCH_CXX_STANDARD 17)
endif()
message(STATUS "libddp: LibTorch ${Torch_VERSION} (C++${DDP_TORCH_CXX_STANDARD}); interop tests with ${DDP_TEST_PYTHON}")
