/* SPDX-License-Identifier: MIT */
/*
 * The mlx5 direct verbs of rdma-core 44 that gnic-emu does not model. They
 * all need firmware objects behind them (DevX events, EQs and asynchronous
 * commands, steering tables, mkeys, DEKs, scheduling elements, VFIO), which
 * the emulator has none of.
 *
 * Each exists at its rdma-core 44 version (libmlx5.map) so that a program
 * linked against them loads, BIND_NOW included, and fails as rdma-core's
 * libmlx5 fails on a device without the feature: EOPNOTSUPP, in the call's
 * own convention (NULL + errno for objects; the errno value for int calls;
 * -1 + errno for mlx5dv_devx_get_event and mlx5dv_vfio_get_events_fd;
 * -errno for mlx5dv_qp_cancel_posted_send_wrs). A destroy or free call can
 * only be given an object no call here ever made; the void ones do nothing.
 */
#include <errno.h>
#include <stdio.h>

#include <infiniband/mlx5dv.h>

/* A stub's parameters document the call; none of them is used. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static void *unsupported_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int unsupported(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ---- context and port ------------------------------------------------------- */

int mlx5dv_set_context_attr(struct ibv_context *context, enum mlx5dv_set_ctx_attr_type type,
                            void *attr)
{
	return unsupported();
}

/* No free-running device clock is exposed. */
int mlx5dv_get_clock_info(struct ibv_context *context, struct mlx5dv_clock_info *clock_info)
{
	return unsupported();
}

/* vport and e-switch information (mlx5dv_query_port). */
int _mlx5dv_query_port(struct ibv_context *context, uint32_t port_num, struct mlx5dv_port *info,
                       size_t info_len)
{
	return unsupported();
}

/* ---- DevX: asynchronous queries, EQs, MSI vectors (the commands, umem and UARs are
 * devx.c's) ---- */

int mlx5dv_devx_obj_query_async(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
                                size_t outlen, uint64_t wr_id,
                                struct mlx5dv_devx_cmd_comp *cmd_comp)
{
	return unsupported();
}

struct mlx5dv_devx_msi_vector *mlx5dv_devx_alloc_msi_vector(struct ibv_context *ibctx)
{
	return unsupported_ptr();
}

int mlx5dv_devx_free_msi_vector(struct mlx5dv_devx_msi_vector *msi)
{
	return unsupported();
}

struct mlx5dv_devx_eq *mlx5dv_devx_create_eq(struct ibv_context *ibctx, const void *in,
                                             size_t inlen, void *out, size_t outlen)
{
	return unsupported_ptr();
}

int mlx5dv_devx_destroy_eq(struct mlx5dv_devx_eq *eq)
{
	return unsupported();
}

/* DevX commands on verbs objects */

int mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_cq_query(struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_cq_modify(struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_srq_query(struct ibv_srq *srq, const void *in, size_t inlen, void *out,
                          size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_srq_modify(struct ibv_srq *srq, const void *in, size_t inlen, void *out,
                           size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_wq_query(struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_wq_modify(struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_ind_tbl_query(struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen,
                              void *out, size_t outlen)
{
	return unsupported();
}

int mlx5dv_devx_ind_tbl_modify(struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen,
                               void *out, size_t outlen)
{
	return unsupported();
}

/* DevX asynchronous commands and events */

struct mlx5dv_devx_cmd_comp *mlx5dv_devx_create_cmd_comp(struct ibv_context *context)
{
	return unsupported_ptr();
}

void mlx5dv_devx_destroy_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp) {}

int mlx5dv_devx_get_async_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp,
                                   struct mlx5dv_devx_async_cmd_hdr *cmd_resp, size_t cmd_resp_len)
{
	return unsupported();
}

struct mlx5dv_devx_event_channel *
mlx5dv_devx_create_event_channel(struct ibv_context *context,
                                 enum mlx5dv_devx_create_event_channel_flags flags)
{
	return unsupported_ptr();
}

void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *event_channel) {}

int mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *event_channel,
                                     struct mlx5dv_devx_obj *obj, uint16_t events_sz,
                                     uint16_t events_num[], uint64_t cookie)
{
	return unsupported();
}

int mlx5dv_devx_subscribe_devx_event_fd(struct mlx5dv_devx_event_channel *event_channel, int fd,
                                        struct mlx5dv_devx_obj *obj, uint16_t event_num)
{
	return unsupported();
}

/* The number of bytes read, or -1 and errno. */
ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel,
                              struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* ---- verbs-level flow steering -------------------------------------------------- */

struct mlx5dv_flow_matcher *
mlx5dv_create_flow_matcher(struct ibv_context *context,
                           struct mlx5dv_flow_matcher_attr *matcher_attr)
{
	return unsupported_ptr();
}

int mlx5dv_destroy_flow_matcher(struct mlx5dv_flow_matcher *matcher)
{
	return unsupported();
}

struct ibv_flow *mlx5dv_create_flow(struct mlx5dv_flow_matcher *matcher,
                                    struct mlx5dv_flow_match_parameters *match_value,
                                    size_t num_actions,
                                    struct mlx5dv_flow_action_attr actions_attr[])
{
	return unsupported_ptr();
}

struct ibv_flow_action *mlx5dv_create_flow_action_esp(struct ibv_context *ctx,
                                                      struct ibv_flow_action_esp_attr *esp,
                                                      struct mlx5dv_flow_action_esp *mlx5_attr)
{
	return unsupported_ptr();
}

struct ibv_flow_action *mlx5dv_create_flow_action_modify_header(struct ibv_context *ctx,
                                                                size_t actions_sz,
                                                                uint64_t actions[],
                                                                enum mlx5dv_flow_table_type ft_type)
{
	return unsupported_ptr();
}

struct ibv_flow_action *mlx5dv_create_flow_action_packet_reformat(
    struct ibv_context *ctx, size_t data_sz, void *data,
    enum mlx5dv_flow_action_packet_reformat_type reformat_type, enum mlx5dv_flow_table_type ft_type)
{
	return unsupported_ptr();
}

struct mlx5dv_steering_anchor *
mlx5dv_create_steering_anchor(struct ibv_context *context, struct mlx5dv_steering_anchor_attr *attr)
{
	return unsupported_ptr();
}

int mlx5dv_destroy_steering_anchor(struct mlx5dv_steering_anchor *sa)
{
	return unsupported();
}

/* ---- direct rule (software steering): domains, tables, matchers, rules ------------- */

struct mlx5dv_dr_domain *mlx5dv_dr_domain_create(struct ibv_context *ctx,
                                                 enum mlx5dv_dr_domain_type type)
{
	return unsupported_ptr();
}

int mlx5dv_dr_domain_sync(struct mlx5dv_dr_domain *domain, uint32_t flags)
{
	return unsupported();
}

int mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain *domain)
{
	return unsupported();
}

void mlx5dv_dr_domain_set_reclaim_device_memory(struct mlx5dv_dr_domain *dmn, bool enable) {}

void mlx5dv_dr_domain_allow_duplicate_rules(struct mlx5dv_dr_domain *domain, bool allow) {}

struct mlx5dv_dr_table *mlx5dv_dr_table_create(struct mlx5dv_dr_domain *domain, uint32_t level)
{
	return unsupported_ptr();
}

int mlx5dv_dr_table_destroy(struct mlx5dv_dr_table *table)
{
	return unsupported();
}

struct mlx5dv_dr_matcher *mlx5dv_dr_matcher_create(struct mlx5dv_dr_table *table, uint16_t priority,
                                                   uint8_t match_criteria_enable,
                                                   struct mlx5dv_flow_match_parameters *mask)
{
	return unsupported_ptr();
}

int mlx5dv_dr_matcher_set_layout(struct mlx5dv_dr_matcher *matcher,
                                 struct mlx5dv_dr_matcher_layout *layout)
{
	return unsupported();
}

int mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher *matcher)
{
	return unsupported();
}

struct mlx5dv_dr_rule *mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher *matcher,
                                             struct mlx5dv_flow_match_parameters *value,
                                             size_t num_actions, struct mlx5dv_dr_action *actions[])
{
	return unsupported_ptr();
}

int mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule *rule)
{
	return unsupported();
}

/* direct rule actions */

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_ibv_qp(struct ibv_qp *ibqp)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_table(struct mlx5dv_dr_table *table)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_root_table(struct mlx5dv_dr_table *table,
                                                                 uint16_t priority)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_vport(struct mlx5dv_dr_domain *domain,
                                                            uint32_t vport)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_ib_port(struct mlx5dv_dr_domain *domain,
                                                              uint32_t ib_port)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj *devx_obj)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_array(struct mlx5dv_dr_domain *domain, size_t num_dest,
                                   struct mlx5dv_dr_action_dest_attr *dests[])
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_drop(void)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_default_miss(void)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_tag(uint32_t tag_value)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_flow_counter(struct mlx5dv_devx_obj *devx_obj,
                                                              uint32_t offset)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_packet_reformat(struct mlx5dv_dr_domain *domain, uint32_t flags,
                                        enum mlx5dv_flow_action_packet_reformat_type reformat_type,
                                        size_t data_sz, void *data)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_modify_header(struct mlx5dv_dr_domain *domain,
                                                               uint32_t flags, size_t actions_sz,
                                                               __be64 actions[])
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_flow_meter(struct mlx5dv_dr_flow_meter_attr *attr)
{
	return unsupported_ptr();
}

int mlx5dv_dr_action_modify_flow_meter(struct mlx5dv_dr_action *action,
                                       struct mlx5dv_dr_flow_meter_attr *attr,
                                       __be64 modify_field_select)
{
	return unsupported();
}

struct mlx5dv_dr_action *
mlx5dv_dr_action_create_flow_sampler(struct mlx5dv_dr_flow_sampler_attr *attr)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_pop_vlan(void)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_push_vlan(struct mlx5dv_dr_domain *domain,
                                                           __be32 vlan_hdr)
{
	return unsupported_ptr();
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_aso(struct mlx5dv_dr_domain *domain,
                                                     struct mlx5dv_devx_obj *devx_obj,
                                                     uint32_t offset, uint32_t flags,
                                                     uint8_t return_reg_c)
{
	return unsupported_ptr();
}

int mlx5dv_dr_action_modify_aso(struct mlx5dv_dr_action *action, uint32_t offset, uint32_t flags,
                                uint8_t return_reg_c)
{
	return unsupported();
}

int mlx5dv_dr_action_destroy(struct mlx5dv_dr_action *action)
{
	return unsupported();
}

int mlx5dv_dr_aso_other_domain_link(struct mlx5dv_devx_obj *devx_obj,
                                    struct mlx5dv_dr_domain *peer_dmn, struct mlx5dv_dr_domain *dmn,
                                    uint32_t flags, uint8_t return_reg_c)
{
	return unsupported();
}

int mlx5dv_dr_aso_other_domain_unlink(struct mlx5dv_devx_obj *devx_obj,
                                      struct mlx5dv_dr_domain *dmn)
{
	return unsupported();
}

/* direct rule debug dumps (mlx5dv_dump(3): 0 or an errno value) */

int mlx5dv_dump_dr_domain(FILE *fout, struct mlx5dv_dr_domain *domain)
{
	return unsupported();
}

int mlx5dv_dump_dr_table(FILE *fout, struct mlx5dv_dr_table *table)
{
	return unsupported();
}

int mlx5dv_dump_dr_matcher(FILE *fout, struct mlx5dv_dr_matcher *matcher)
{
	return unsupported();
}

int mlx5dv_dump_dr_rule(FILE *fout, struct mlx5dv_dr_rule *rule)
{
	return unsupported();
}

/* ---- mkeys and signature / crypto offload ------------------------------------------- */

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	return unsupported_ptr();
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
	return unsupported();
}

/* mlx5dv_mkey_check */
int _mlx5dv_mkey_check(struct mlx5dv_mkey *mkey, struct mlx5dv_mkey_err *err_info,
                       size_t err_info_size)
{
	return unsupported();
}

int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
	return unsupported();
}

int mlx5dv_crypto_login_query_state(struct ibv_context *context,
                                    enum mlx5dv_crypto_login_state *state)
{
	return unsupported();
}

int mlx5dv_crypto_logout(struct ibv_context *context)
{
	return unsupported();
}

struct mlx5dv_crypto_login_obj *
mlx5dv_crypto_login_create(struct ibv_context *context,
                           struct mlx5dv_crypto_login_attr_ex *login_attr)
{
	return unsupported_ptr();
}

int mlx5dv_crypto_login_query(struct mlx5dv_crypto_login_obj *crypto_login,
                              struct mlx5dv_crypto_login_query_attr *query_attr)
{
	return unsupported();
}

int mlx5dv_crypto_login_destroy(struct mlx5dv_crypto_login_obj *crypto_login)
{
	return unsupported();
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context,
                                     struct mlx5dv_dek_init_attr *init_attr)
{
	return unsupported_ptr();
}

int mlx5dv_dek_query(struct mlx5dv_dek *dek, struct mlx5dv_dek_attr *attr)
{
	return unsupported();
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
	return unsupported();
}

/* ---- QP extras ----------------------------------------------------------------------- */

/* The number of work requests cancelled, or -errno. */
int mlx5dv_qp_cancel_posted_send_wrs(struct mlx5dv_qp_ex *mqp, uint64_t wr_id)
{
	return -EOPNOTSUPP;
}

int mlx5dv_query_qp_lag_port(struct ibv_qp *qp, uint8_t *port_num, uint8_t *active_port_num)
{
	return unsupported();
}

int mlx5dv_modify_qp_lag_port(struct ibv_qp *qp, uint8_t port_num)
{
	return unsupported();
}

int mlx5dv_modify_qp_udp_sport(struct ibv_qp *qp, uint16_t udp_sport)
{
	return unsupported();
}

int mlx5dv_dci_stream_id_reset(struct ibv_qp *qp, uint16_t stream_id)
{
	return unsupported();
}

int mlx5dv_map_ah_to_qp(struct ibv_ah *ah, uint32_t qp_num)
{
	return unsupported();
}

int mlx5dv_reserved_qpn_alloc(struct ibv_context *ctx, uint32_t *qpn)
{
	return unsupported();
}

int mlx5dv_reserved_qpn_dealloc(struct ibv_context *ctx, uint32_t qpn)
{
	return unsupported();
}

/* ---- transmit scheduling --------------------------------------------------------------- */

struct mlx5dv_sched_node *mlx5dv_sched_node_create(struct ibv_context *context,
                                                   const struct mlx5dv_sched_attr *sched_attr)
{
	return unsupported_ptr();
}

int mlx5dv_sched_node_modify(struct mlx5dv_sched_node *node,
                             const struct mlx5dv_sched_attr *sched_attr)
{
	return unsupported();
}

int mlx5dv_sched_node_destroy(struct mlx5dv_sched_node *node)
{
	return unsupported();
}

struct mlx5dv_sched_leaf *mlx5dv_sched_leaf_create(struct ibv_context *context,
                                                   const struct mlx5dv_sched_attr *sched_attr)
{
	return unsupported_ptr();
}

int mlx5dv_sched_leaf_modify(struct mlx5dv_sched_leaf *leaf,
                             const struct mlx5dv_sched_attr *sched_attr)
{
	return unsupported();
}

int mlx5dv_sched_leaf_destroy(struct mlx5dv_sched_leaf *leaf)
{
	return unsupported();
}

int mlx5dv_modify_qp_sched_elem(struct ibv_qp *qp, const struct mlx5dv_sched_leaf *requestor,
                                const struct mlx5dv_sched_leaf *responder)
{
	return unsupported();
}

/* ---- device memory, VAR and packet pacing ---------------------------------------------- */

struct ibv_dm *mlx5dv_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *dm_attr,
                               struct mlx5dv_alloc_dm_attr *mlx5_dm_attr)
{
	return unsupported_ptr();
}

void *mlx5dv_dm_map_op_addr(struct ibv_dm *dm, uint8_t op)
{
	return unsupported_ptr();
}

struct mlx5dv_var *mlx5dv_alloc_var(struct ibv_context *context, uint32_t flags)
{
	return unsupported_ptr();
}

void mlx5dv_free_var(struct mlx5dv_var *dv_var) {}

struct mlx5dv_pp *mlx5dv_pp_alloc(struct ibv_context *context, size_t pp_context_sz,
                                  const void *pp_context, uint32_t flags)
{
	return unsupported_ptr();
}

void mlx5dv_pp_free(struct mlx5dv_pp *pp) {}

/* ---- VFIO (user-space driver) devices ---------------------------------------------------- */

struct ibv_device **mlx5dv_get_vfio_device_list(struct mlx5dv_vfio_context_attr *attr)
{
	return unsupported_ptr();
}

/* A file descriptor, or -1 and errno: there is no VFIO context to have one. */
int mlx5dv_vfio_get_events_fd(struct ibv_context *ibctx)
{
	errno = EOPNOTSUPP;
	return -1;
}

int mlx5dv_vfio_process_events(struct ibv_context *context)
{
	return unsupported();
}
