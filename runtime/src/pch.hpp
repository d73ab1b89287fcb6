// Precompiled header of libddp (torch + c10d); test and trainer targets reuse it with
// target_precompile_headers(<target> REUSE_FROM ddp).
#pragma once
#include "torch_compat.hpp"
