/* SPDX-License-Identifier: MIT */
/*
 * The copy queue's kernel (PTX, loaded by cuda.c with cuModuleLoadData): one
 * launch does a whole engine pass's small GPU copies. The driver spends
 * microseconds on every copy call, batched or not (2.5 us per 64-byte copy
 * measured on an H200 through cuMemcpyBatchAsync), while a NIC's DMA engine
 * moves a 64-byte write in well under one; a launch costs about as much as
 * one copy call, whatever it carries.
 *
 * The parameter block: a u32 count (then 4 bytes of padding) and up to
 * EMU_CUDA_KCOPY_MAX copies of {u64 dst, u64 src, u64 n}, 4040 bytes in all
 * (kernel parameters may take 4096). Bit 63 of n asks for the last byte
 * after the rest, as a NIC's in-order DMA writes a message: the CTA copies
 * the body, every thread fences at system scope, the CTA meets at a
 * barrier, and thread 0 writes the last byte. Each CTA takes copies
 * blockIdx.x, blockIdx.x + gridDim.x, ...; its threads split a copy's bytes.
 * Addresses are generic: device memory, or pinned host memory mapped into
 * the device (the queue's bounce ring).
 *
 * Written in PTX rather than CUDA C so that gnic-emu builds without the CUDA
 * toolkit; the driver compiles it for the GPU at load. PTX ISA 7.0 (CUDA
 * 11.0 drivers and later), sm_75 and newer.
 */
#include "emu.h"

const char emu_copy_kernel_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry gnic_emu_copy(.param .align 8 .b8 p_arg[4040])\n"
    "{\n"
    "	.reg .pred %p<4>;\n"
    "	.reg .b16 %rs<2>;\n"
    "	.reg .b32 %r<8>;\n"
    "	.reg .b64 %rd<16>;\n"
    "\n"
    "	mov.b64 %rd1, p_arg;\n"
    "	ld.param.u32 %r1, [p_arg];\n" /* count */
    "	mov.u32 %r2, %ctaid.x;\n"     /* copy index */
    "	mov.u32 %r3, %nctaid.x;\n"
    "	mov.u32 %r4, %tid.x;\n"
    "	mov.u32 %r5, %ntid.x;\n"
    "	cvt.u64.u32 %rd2, %r4;\n"
    "	cvt.u64.u32 %rd3, %r5;\n"
    "NEXT_COPY:\n"
    "	setp.ge.u32 %p1, %r2, %r1;\n"
    "	@%p1 bra DONE;\n"
    "	mul.wide.u32 %rd4, %r2, 24;\n"
    "	add.s64 %rd4, %rd1, %rd4;\n"
    "	ld.param.u64 %rd5, [%rd4+8];\n"  /* dst */
    "	ld.param.u64 %rd6, [%rd4+16];\n" /* src */
    "	ld.param.u64 %rd7, [%rd4+24];\n" /* n, bit 63: last byte last */
    "	shr.u64 %rd8, %rd7, 63;\n"
    "	and.b64 %rd7, %rd7, 0x7fffffffffffffff;\n"
    "	sub.s64 %rd9, %rd7, %rd8;\n" /* the body's bytes */
    "	mov.u64 %rd10, %rd2;\n"
    "BODY:\n"
    "	setp.ge.u64 %p2, %rd10, %rd9;\n"
    "	@%p2 bra BODY_DONE;\n"
    "	add.s64 %rd11, %rd6, %rd10;\n"
    "	ld.u8 %rs1, [%rd11];\n"
    "	add.s64 %rd12, %rd5, %rd10;\n"
    "	st.u8 [%rd12], %rs1;\n"
    "	add.s64 %rd10, %rd10, %rd3;\n"
    "	bra BODY;\n"
    "BODY_DONE:\n"
    "	setp.eq.u64 %p3, %rd8, 0;\n"
    "	@%p3 bra COPY_DONE;\n"
    "	membar.sys;\n"
    "	bar.sync 0;\n"
    "	setp.ne.u32 %p2, %r4, 0;\n"
    "	@%p2 bra COPY_DONE;\n"
    "	add.s64 %rd11, %rd6, %rd9;\n"
    "	ld.u8 %rs1, [%rd11];\n"
    "	add.s64 %rd12, %rd5, %rd9;\n"
    "	st.u8 [%rd12], %rs1;\n"
    "COPY_DONE:\n"
    "	bar.sync 0;\n"
    "	add.u32 %r2, %r2, %r3;\n"
    "	bra NEXT_COPY;\n"
    "DONE:\n"
    "	ret;\n"
    "}\n";
