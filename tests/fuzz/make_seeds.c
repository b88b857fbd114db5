// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpora of the "wqe" and "blob" fuzz targets:
 *
 *   build/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus
 *
 * creates corpus/wqe/<name> and corpus/blob/<name> (existing files of the same
 * name are replaced; others are left alone). The output is committed; run it
 * again only when the input formats change.
 *
 * wqe seeds (format: fuzz_wqe.h) aim at each branch of the emulator's
 * decoder: every opcode it executes, multi-SGE and inline WQEs, chains with
 * fences, each doorbell style, WQEs straddling the SQ's end, and the error
 * cases (bad keys, bounds, access rights, alignment, lengths, opcodes).
 * blob seeds are libgnic's own encodings plus truncated, resealed and
 * corrupted variants.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_wqe.h"
#include "gnic/gnic_mlx5.h"
#include "gnic_int.h"

#define BB GNIC_MLX5_SEND_WQE_BB

static const char *out_dir;
static int written;

static void write_file(const char *sub, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, sub);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	written++;
}

/* ---- wqe seeds ------------------------------------------------------------ */

struct seed {
	uint8_t ctl;
	uint8_t wqe[WQE_IN_MAX_BB * BB];
	uint32_t pos;  /* bytes used */
	uint32_t ctrl; /* offset of the current WQE's ctrl */
};

static void *seg(struct seed *s, uint32_t len)
{
	void *p = s->wqe + s->pos;

	s->pos += (len + 15) & ~15u;
	if (s->pos > sizeof(s->wqe)) {
		fprintf(stderr, "seed larger than %d basic blocks\n", WQE_IN_MAX_BB);
		exit(1);
	}
	return p;
}

static void seed_init(struct seed *s, uint8_t ctl)
{
	memset(s, 0, sizeof(*s));
	s->ctl = ctl;
}

/* Start a WQE at the next basic block; index and QPN are left 0 (the
 * harness patches them with WQE_CTL_PATCH). */
static void wqe_begin(struct seed *s, uint8_t opcode, uint8_t opmod, uint8_t fm_ce_se,
                      uint32_t imm_be)
{
	struct gnic_mlx5_ctrl_seg *c;

	s->pos = (s->pos + BB - 1) & ~(uint32_t)(BB - 1);
	s->ctrl = s->pos;
	c = seg(s, sizeof(*c));
	c->opmod_idx_opcode = gnic_be32(gnic_mlx5_ctrl_word0(opmod, 0, opcode));
	c->fm_ce_se = fm_ce_se;
	c->imm = imm_be;
}

/* ds = what the WQE has used so far, or `ds` when non-zero (a lie). */
static void wqe_end(struct seed *s, uint32_t ds)
{
	struct gnic_mlx5_ctrl_seg *c = (void *)(s->wqe + s->ctrl);

	c->qpn_ds = gnic_be32(gnic_mlx5_ctrl_word1(0, ds ? ds : (s->pos - s->ctrl) / 16));
}

static void raddr(struct seed *s, unsigned region, int32_t off, unsigned key_region)
{
	struct gnic_mlx5_raddr_seg *r = seg(s, sizeof(*r));

	r->raddr = gnic_be64(wqe_tok_addr(region, off));
	r->rkey = gnic_be32(wqe_tok_key(key_region));
}

static void data(struct seed *s, unsigned region, int32_t off, uint32_t len, unsigned key_region)
{
	struct gnic_mlx5_data_seg *d = seg(s, sizeof(*d));

	d->byte_count = gnic_be32(len);
	d->lkey = gnic_be32(wqe_tok_key(key_region));
	d->addr = gnic_be64(wqe_tok_addr(region, off));
}

static void atomic_seg(struct seed *s, uint64_t swap_add, uint64_t compare)
{
	struct gnic_mlx5_atomic_seg *a = seg(s, sizeof(*a));

	a->swap_add = gnic_be64(swap_add);
	a->compare = gnic_be64(compare);
}

static void inline_data(struct seed *s, uint32_t len, uint8_t fill)
{
	uint8_t *p = seg(s, 4 + len);
	uint32_t bc = gnic_be32(len | GNIC_MLX5_INLINE_SEG);

	memcpy(p, &bc, 4);
	memset(p + 4, fill, len);
}

static void save(struct seed *s, const char *name)
{
	uint8_t buf[1 + sizeof(s->wqe)];
	uint32_t nbb = (s->pos + BB - 1) / BB;

	if (nbb == 0)
		nbb = 1;
	buf[0] = (uint8_t)((s->ctl & ~WQE_CTL_NBB) | (nbb - 1));
	memcpy(buf + 1, s->wqe, nbb * BB);
	write_file("wqe", name, buf, 1 + nbb * BB);
}

#define STD   (WQE_CTL_PATCH | WQE_CTL_RELOC)
#define SIG   GNIC_MLX5_CTRL_CQ_UPDATE
#define FENCE GNIC_MLX5_FM_SMALL_AND_FENCE

/* One RDMA WRITE: data from (sreg, soff, skey) to (dreg, doff, dkey). */
static void one_write(const char *name, uint8_t ctl, uint8_t opcode, unsigned sreg, int32_t soff,
                      unsigned skey, unsigned dreg, int32_t doff, unsigned dkey, uint32_t len)
{
	struct seed s;

	seed_init(&s, ctl);
	wqe_begin(&s, opcode, 0, SIG, gnic_be32(0x12345678));
	raddr(&s, dreg, doff, dkey);
	data(&s, sreg, soff, len, skey);
	wqe_end(&s, 0);
	save(&s, name);
}

static void one_send(const char *name, uint8_t ctl, uint8_t opcode, uint8_t flags, uint32_t len)
{
	struct seed s;

	seed_init(&s, ctl);
	wqe_begin(&s, opcode, 0, flags, gnic_be32(0xabcdef01));
	data(&s, WQE_R_SRC, 512, len, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, name);
}

static void one_read(const char *name, unsigned from, int32_t off, unsigned into, uint32_t len)
{
	struct seed s;

	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_READ, 0, SIG, 0);
	raddr(&s, from, off, from);
	data(&s, into, 1024, len, into);
	wqe_end(&s, 0);
	save(&s, name);
}

static void one_atomic(const char *name, uint8_t opcode, unsigned region, int32_t off, uint32_t len)
{
	struct seed s;

	seed_init(&s, STD);
	wqe_begin(&s, opcode, 0, SIG, 0);
	raddr(&s, region, off, region);
	atomic_seg(&s, 5, 0);
	data(&s, WQE_R_SRC, 64, len, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, name);
}

static void one_inline(const char *name, uint8_t ctl, uint32_t len)
{
	struct seed s;

	seed_init(&s, ctl);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 2048, WQE_R_DST);
	inline_data(&s, len, 0x5c);
	wqe_end(&s, 0);
	save(&s, name);
}

static void write_sgl(const char *name, uint8_t ctl, int nsge)
{
	struct seed s;

	seed_init(&s, ctl);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 100, WQE_R_DST);
	for (int i = 0; i < nsge; i++)
		data(&s, WQE_R_SRC, 300 * i, 100 + 7 * (uint32_t)i, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, name);
}

static void chains(void)
{
	struct seed s;

	/* READ, then a fenced WRITE of what was read */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_READ, 0, 0, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	data(&s, WQE_R_SRC, 2048, 512, WQE_R_SRC);
	wqe_end(&s, 0);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG | FENCE, 0);
	raddr(&s, WQE_R_DST, 4096, WQE_R_DST);
	data(&s, WQE_R_SRC, 2048, 512, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, "chain_read_fence_write");

	/* unsignaled NOP, WRITE, fetch-add, strong-ordered WRITE_IMM */
	seed_init(&s, STD | WQE_CTL_RECV);
	wqe_begin(&s, GNIC_MLX5_OPCODE_NOP, 0, 0, 0);
	wqe_end(&s, 0);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, 0, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	data(&s, WQE_R_SRC, 0, 64, WQE_R_SRC);
	wqe_end(&s, 0);
	wqe_begin(&s, GNIC_MLX5_OPCODE_ATOMIC_FA, 0, 0, 0);
	raddr(&s, WQE_R_DST, 64, WQE_R_DST);
	atomic_seg(&s, 1, 0);
	data(&s, WQE_R_SRC, 64, 8, WQE_R_SRC);
	wqe_end(&s, 0);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, 0, SIG | GNIC_MLX5_FM_STRONG, 7);
	raddr(&s, WQE_R_DST, 128, WQE_R_DST);
	data(&s, WQE_R_SRC, 128, 64, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, "chain_nop_write_fa_writeimm");

	/* a WRITE that claims 63 ds (16 blocks) but has only 3 */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	data(&s, WQE_R_SRC, 0, 64, WQE_R_SRC);
	wqe_end(&s, 63);
	save(&s, "ds_beyond_input");

	/* inline data in a READ */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_READ, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	inline_data(&s, 8, 1);
	wqe_end(&s, 0);
	save(&s, "read_inline");

	/* inline segment after a data segment */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	data(&s, WQE_R_SRC, 0, 64, WQE_R_SRC);
	inline_data(&s, 12, 2);
	wqe_end(&s, 0);
	save(&s, "write_data_then_inline");

	/* zero-length WRITE: no data segment */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	wqe_end(&s, 0);
	save(&s, "write_zero_length");

	/* byte_count 0 means 2 GiB */
	one_write("write_2gib", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_DST, 0, WQE_R_DST, 0);

	/* opmod set, unknown and unsupported opcodes */
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_RDMA_WRITE, 1, SIG, 0);
	raddr(&s, WQE_R_DST, 0, WQE_R_DST);
	data(&s, WQE_R_SRC, 0, 64, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, "write_opmod");
	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_ATOMIC_MASKED_CS, 0, SIG, 0);
	raddr(&s, WQE_R_DST, 64, WQE_R_DST);
	atomic_seg(&s, 1, 2);
	data(&s, WQE_R_SRC, 64, 8, WQE_R_SRC);
	wqe_end(&s, 0);
	save(&s, "masked_cs");
	seed_init(&s, STD);
	wqe_begin(&s, 0x1f, 0, SIG, 0);
	wqe_end(&s, 0);
	save(&s, "opcode_unknown");
}

static void wqe_seeds(void)
{
	struct seed s;

	seed_init(&s, STD);
	wqe_begin(&s, GNIC_MLX5_OPCODE_NOP, 0, SIG, 0);
	wqe_end(&s, 0);
	save(&s, "nop");

	one_write("write", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC, WQE_R_DST, 0,
	          WQE_R_DST, 256);
	one_write("write_ring_ctrl", STD | WQE_RING_CTRL << WQE_CTL_RING_SHIFT,
	          GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 8, WQE_R_SRC, WQE_R_DST, 8, WQE_R_DST,
	          4000);
	one_write("write_ring_record", STD | WQE_RING_RECORD << WQE_CTL_RING_SHIFT,
	          GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC, WQE_R_DST, 0, WQE_R_DST, 1);
	one_write("write_ring_register", STD | WQE_RING_REGISTER << WQE_CTL_RING_SHIFT,
	          GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC, WQE_R_DST, 16000, WQE_R_DST,
	          384);
	one_write("write_unpatched", WQE_CTL_RELOC, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0,
	          WQE_R_SRC, WQE_R_DST, 0, WQE_R_DST, 64);
	one_write("write_whole_dst", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_DST, 0, WQE_R_DST, 8192);
	one_write("write_past_end", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_DST, 16384 - 100, WQE_R_DST, 200);
	one_write("write_before_start", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_DST, -8, WQE_R_DST, 64);
	one_write("write_src_past_end", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 8000,
	          WQE_R_SRC, WQE_R_DST, 0, WQE_R_DST, 300);
	one_write("write_dead_rkey", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_DST, 0, WQE_R_RAW, 64);
	one_write("write_dead_lkey", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_RAW,
	          WQE_R_DST, 0, WQE_R_DST, 64);
	one_write("write_to_ro", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_RO, 0, WQE_R_RO, 64);
	one_write("write_to_raw_dst_key", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_SRC, 0, WQE_R_SRC,
	          WQE_R_RAW, 0, WQE_R_DST, 64);
	one_write("write_from_ro", STD, GNIC_MLX5_OPCODE_RDMA_WRITE, WQE_R_RO, 0, WQE_R_RO,
	          WQE_R_DST, 0, WQE_R_DST, 64);
	one_write("write_imm", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, WQE_R_SRC, 0,
	          WQE_R_SRC, WQE_R_DST, 0, WQE_R_DST, 128);
	one_write("write_imm_no_recv", STD, GNIC_MLX5_OPCODE_RDMA_WRITE_IMM, WQE_R_SRC, 0,
	          WQE_R_SRC, WQE_R_DST, 0, WQE_R_DST, 128);
	one_write("write_imm_bad_rkey", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_RDMA_WRITE_IMM,
	          WQE_R_SRC, 0, WQE_R_SRC, WQE_R_DST, 0, WQE_R_RO, 128);

	one_send("send", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_SEND, SIG, 300);
	one_send("send_imm_solicited", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_SEND_IMM,
	         SIG | GNIC_MLX5_CTRL_SOLICITED, 17);
	one_send("send_too_long", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_SEND, SIG, 5000);
	one_send("send_no_recv", STD, GNIC_MLX5_OPCODE_SEND, SIG, 64);
	one_send("send_unsignaled", STD | WQE_CTL_RECV, GNIC_MLX5_OPCODE_SEND, 0, 64);

	one_read("read", WQE_R_DST, 0, WQE_R_SRC, 3000);
	one_read("read_from_ro", WQE_R_RO, 100, WQE_R_SRC, 1000);
	one_read("read_into_ro", WQE_R_DST, 0, WQE_R_RO, 100);
	one_read("read_past_end", WQE_R_DST, 16000, WQE_R_SRC, 1000);
	one_read("read_from_raw", WQE_R_RAW, 0, WQE_R_SRC, 64);

	one_atomic("atomic_cs", GNIC_MLX5_OPCODE_ATOMIC_CS, WQE_R_DST, 64, 8);
	one_atomic("atomic_fa", GNIC_MLX5_OPCODE_ATOMIC_FA, WQE_R_DST, 128, 8);
	one_atomic("atomic_fa_misaligned", GNIC_MLX5_OPCODE_ATOMIC_FA, WQE_R_DST, 130, 8);
	one_atomic("atomic_fa_ro", GNIC_MLX5_OPCODE_ATOMIC_FA, WQE_R_RO, 0, 8);
	one_atomic("atomic_fa_len4", GNIC_MLX5_OPCODE_ATOMIC_FA, WQE_R_DST, 0, 4);
	one_atomic("atomic_cs_last_word", GNIC_MLX5_OPCODE_ATOMIC_CS, WQE_R_DST, 16384 - 8, 8);

	one_inline("inline_write", STD, 100);
	one_inline("inline_write_large", STD, 200);
	one_inline("inline_write_straddle", STD | WQE_CTL_STRADDLE, 200);
	write_sgl("write_sgl4", STD, 4);
	write_sgl("write_sgl14", STD, 14);
	write_sgl("write_sgl14_straddle", STD | WQE_CTL_STRADDLE, 14);
	chains();
}

/* ---- blob seeds ----------------------------------------------------------- */

static void blob_save(const char *name, const struct gnic_blob *b, size_t len)
{
	write_file("blob", name, b->bytes, len);
}

static void reseal(struct gnic_blob *b)
{
	gnic_put_le32(b->bytes + 44, gnic_crc32(b->bytes, 44));
}

static void blob_seeds(void)
{
	struct gnic_blob_info info = {.qpn = 0x000123,
	                              .psn = 0xabcdef,
	                              .mtu = IBV_MTU_4096,
	                              .link_layer = IBV_LINK_LAYER_ETHERNET};
	struct gnic_blob b, v;
	char name[64];

	for (int i = 0; i < 16; i++)
		info.gid[i] = (uint8_t)(i == 10 || i == 11 ? 0xff : i * 17);
	for (int mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; mtu++) {
		info.mtu = (uint8_t)mtu;
		info.qpn = 0x1000u * (uint32_t)mtu + 7;
		gnic_blob_encode(&info, &b);
		snprintf(name, sizeof(name), "valid_mtu%d", mtu);
		blob_save(name, &b, sizeof(b));
	}
	info.qpn = 0xffffff;
	info.psn = 0;
	gnic_blob_encode(&info, &v);
	blob_save("valid_max_qpn", &v, sizeof(v));
	blob_save("truncated_10", &v, 10);
	blob_save("truncated_44", &v, 44);
	blob_save("truncated_48", &v, 48);
	blob_save("empty", &v, 0);

	b = v;
	b.bytes[4] = 3;
	reseal(&b);
	blob_save("version3", &b, sizeof(b));
	info.version = 1; /* an older libgnic's: no LID, no link layer */
	gnic_blob_encode(&info, &b);
	blob_save("valid_version1", &b, sizeof(b));
	info.version = 0;
	info.link_layer = IBV_LINK_LAYER_INFINIBAND;
	info.lid = 0x0102;
	gnic_blob_encode(&info, &b);
	blob_save("valid_ib_lid", &b, sizeof(b));
	info.lid = 0xc000; /* multicast */
	gnic_blob_encode(&info, &b);
	blob_save("ib_lid_multicast", &b, sizeof(b));
	info.lid = 0;
	info.link_layer = IBV_LINK_LAYER_ETHERNET;
	b = v;
	b.bytes[6] = 64;
	reseal(&b);
	blob_save("size64", &b, sizeof(b));
	b = v;
	b.bytes[0] = 'X';
	blob_save("bad_magic", &b, sizeof(b));
	b = v;
	b.bytes[34] = 1;
	reseal(&b);
	blob_save("flags1", &b, sizeof(b));
	b = v;
	b.bytes[32] = 0;
	reseal(&b);
	blob_save("mtu0", &b, sizeof(b));
	b = v;
	b.bytes[27] = 1; /* qpn bit 24 */
	reseal(&b);
	blob_save("qpn25bits", &b, sizeof(b));
	b = v;
	b.bytes[44] ^= 1;
	blob_save("bad_crc", &b, sizeof(b));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <tests/fuzz/corpus>\n", argv[0]);
		return 1;
	}
	out_dir = argv[1];
	wqe_seeds();
	blob_seeds();
	printf("%d seed files written under %s\n", written, out_dir);
	return 0;
}
