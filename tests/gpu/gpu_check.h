/* SPDX-License-Identifier: MIT */
/*
 * The GPU tests' checks: a libgnic status (CK) or a CUDA runtime error (CKC)
 * other than success prints where and what, and exits 1.
 */
#ifndef GNIC_TEST_GPU_CHECK_H
#define GNIC_TEST_GPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CK(expr)                                                                                   \
	do {                                                                                       \
		gnic_status_t s_ = (expr);                                                         \
		if (s_ != GNIC_OK) {                                                               \
			fprintf(stderr, "%s:%d: %s = %s: %s\n", __FILE__, __LINE__, #expr,         \
			        gnic_strerror(s_), gnic_last_error());                             \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CKC(expr)                                                                                  \
	do {                                                                                       \
		cudaError_t e_ = (expr);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s = %s\n", __FILE__, __LINE__, #expr,             \
			        cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#endif
