// SPDX-License-Identifier: MIT
/* eth_echo.c with its device code in a CUDA kernel (exit 77 without a GPU). */
#include "eth_echo.c"
