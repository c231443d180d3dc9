/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx read-policy recommend: registered in the read-policy group (cmds/read-policy.c). */
#ifndef BTRFSX_READ_POLICY_RECOMMEND_H
#define BTRFSX_READ_POLICY_RECOMMEND_H

#include "cmds/commands.h"

extern const char *const bx_read_policy_recommend_usage[];
int bx_cmd_read_policy_recommend(struct bx_ctx *ctx, int argc, char **argv);

#endif
