/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The register of kernel behaviour (kernel.h): one entry per trait. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "model/allocator.h"
#include "model/kernel/kernel.h"

static const struct bx_kernel_trait_info traits[BX_KT_COUNT] = {
	/* ---- the allocator ---- */
	[BX_KT_SORT_TIES_PRE_6_9] = {
		.name = "sort_ties_pre_6_9",
		.first = BX_KV(5, 2),
		.last = BX_KV(6, 8),
		.function = "lib/sort.c sort(), as fs/btrfs/volumes.c gather_device_info() calls it",
		.model = "model/allocator.c",
		.summary = "devices that tie on largest hole and free space come out of the "
			   "heapsort in the order of 5.2 .. 6.8 (one pop a round, the left child "
			   "on ties), not of 6.9 on (two pops, the right child)",
		.evidence = "lib/sort.c before and after its 6.9 change, worked through on five "
			    "equal devices; the fills of the 6.1 guests (tests/vm/"
			    "test_vm_space.py) and of the host (tests/test_allocator_kernel.py) "
			    "are followed with the order of their release",
		.test = "tests/unit/test_allocator.c:test_ties",
	},
	[BX_KT_HINT_DATA_ONLY_LAST] = {
		.name = "hint_data_only_last",
		.first = BX_KV(6, 2),
		.function = "the hint patches' priority map in gather_device_info() "
			    "(fs/btrfs/volumes.c), built with -funsigned-char",
		.model = "model/allocator.c",
		.summary = "a hint kernel sorts data_only devices last for data chunks: their "
			   "priority -1 is 255 in an unsigned char (Linux builds with "
			   "-funsigned-char from 6.2 on); metadata keeps its order",
		.evidence = "the ports of the V12 and kakra series to 6.12 in the guests place "
			    "every chunk so (tests/vm/test_vm_space.py, "
			    "tests/vm/test_vm_allocator.py)",
		.test = "tests/unit/test_allocator.c:test_hints_data_only_last",
	},
	[BX_KT_HINT_SECOND_SORT] = {
		.name = "hint_second_sort",
		.function = "the hint patches' gather_device_info() (fs/btrfs/volumes.c)",
		.model = "model/allocator.c",
		.summary = "a kernel with a hint patch sorts the devices it took a second time, "
			   "by free space alone, even with no hint set and for mixed block "
			   "groups: devices with equal free space end up in another order",
		.evidence = "both patched kernels re-sort, chunk by chunk in "
			    "tests/vm/test_vm_allocator.py",
		.test = "tests/unit/test_allocator.c:test_hints_c",
		.unversioned = "a property of the hint patch sets (V12, kakra's), not of a "
			       "release: the model follows it where a mounted filesystem's kernel "
			       "honours hints, as sysfs shows",
	},
	/* ---- space reservations ---- */
	[BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK] = {
		.name = "overcommit_keeps_data_chunk",
		.first = BX_KV(6, 7),
		.function = "fs/btrfs/space-info.c calc_available_free_space()",
		.model = "model/kernel/space-info.c",
		.summary = "metadata and system reservations are overcommitted only on the "
			   "unallocated space beyond the room of one data chunk (10 % of the "
			   "writable bytes, at most 1 GiB)",
		.evidence = "on 6.18 many aged changes fail in the kernel: a metadata or system "
			    "block group cannot go read-only while the devices' unallocated space "
			    "per copy is less than a data chunk "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel); the aged "
			    "plans of the 6.1 guests, without it, and of the 6.12 ones, with it, "
			    "agree with the kernel (tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_kernel_traits.c:test_overcommit_keeps_data_chunk",
	},
	[BX_KT_DELAYED_REFS_RESERVED_TWICE] = {
		.name = "delayed_refs_reserved_twice",
		.first = BX_KV(6, 7),
		.function = "fs/btrfs/transaction.c start_transaction(), "
			    "fs/btrfs/delayed-ref.c btrfs_delayed_refs_rsv_refill()",
		.model = "model/kernel/space-info.c",
		.summary = "a file's creation reserves its items (inode, dir item, dir index, "
			   "parent inode, security label) and twice as much again for the "
			   "delayed refs it makes with the free space tree; before, as much "
			   "again once",
		.evidence = "seen on 6.18: 3.75 MiB per file with 16 KiB nodes, the metadata "
			    "chunk a data fill forces comes that much earlier (free_estimated "
			    "against a fill to ENOSPC in "
			    "tests/test_plan.py::test_aged_plans_against_the_kernel); the line "
			    "is drawn with overcommit_keeps_data_chunk, whose change it came with "
			    "(no kernel between 6.1 and 6.18 was traced)",
		.test = "tests/unit/test_kernel_traits.c:test_delayed_refs_reserved_twice",
	},
	[BX_KT_FLUSH_OVERCOMMITS_64TH] = {
		.name = "flush_overcommits_64th",
		.first = BX_KV(7, 2),
		.function = "fs/btrfs/space-info.c calc_available_free_space()",
		.model = "model/kernel/space-info.c",
		.summary = "a reservation that may flush is allowed a 64th of the overcommit room, "
			   "not an eighth, so a data fill makes the flusher force its metadata "
			   "chunk while more space is unallocated",
		.evidence = "on Debian's stock 7.3 the aged raid0/single filesystem of seed 2 "
			    "filled with data got its forced metadata chunk at 128 MiB where 6.18 "
			    "made 92 (free_estimated +4.2 % before, +0.03 % with it; the stock-7.3 "
			    "fills of tests/vm/test_vm_space.py); traced: a 2.25 MiB ticket during "
			    "a balance of that filesystem was granted by 6.18 after flushing "
			    "delayed items, while 7.2.12 and 7.3.4 ran the whole flush sequence "
			    "and allocated a metadata chunk at ALLOC_CHUNK. 7.2 is the first "
			    "version seen: 6.19 to 7.1 were not tried (trixie-backports serves no "
			    "btrfs module of theirs)",
		.test = "tests/unit/test_usage.c:test_metadata_grows_during_a_data_fill",
	},
	[BX_KT_METADATA_FILL_GROWS] = {
		.name = "metadata_fill_grows",
		.function = "fs/btrfs/space-info.c btrfs_reserve_metadata_bytes(), "
			    "flush_space() (ALLOC_CHUNK_FORCE)",
		.model = "model/kernel/space-info.c",
		.summary = "while data fills a filesystem whose metadata block groups are nearly "
			   "full beside the global reserve, a file's metadata reservation that "
			   "cannot be overcommitted makes the flusher force a metadata chunk, "
			   "and data gets that much less",
		.evidence = "seen on 6.18: raid0s whose only 8 MiB of metadata left 1.1 MiB "
			    "beside the reserve got a 48 and a 204 MiB metadata chunk while data "
			    "filled them (free_estimated +18.5 % before the model had it; "
			    "tests/test_plan.py::test_aged_plans_against_the_kernel)",
		.test = "tests/unit/test_usage.c:test_metadata_grows_during_a_data_fill",
		.unversioned = "the flusher's forced chunk is older than every kernel the "
			       "register knows; how much it reserves is "
			       "delayed_refs_reserved_twice",
	},
	[BX_KT_TIGHT_HEADROOM] = {
		.name = "tight_headroom",
		.function = "fs/btrfs/space-info.c calc_available_free_space(), as "
			    "btrfs_inc_block_group_ro() asks it",
		.model = "model/kernel/space-info.c",
		.summary = "a metadata or system block group that must move while the devices "
			   "have less than 64 MiB unallocated per copy (halved, as the "
			   "overcommit is) is called tight: the kernel's reservations while it "
			   "moves may allocate another chunk or fail",
		.evidence = "reservations seen failing below it on aged filesystems on 6.18 "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel: a change "
			    "it fails was called tight)",
		.test = "tests/unit/test_kernel_traits.c:test_tight_headroom",
		.unversioned = "a threshold the model draws below which the outcome is not in "
			       "the on-disk state, not a rule of a release",
	},
	/* ---- block groups ---- */
	[BX_KT_CLEANS_NEW_BLOCK_GROUPS] = {
		.name = "cleans_new_block_groups",
		.first = BX_KV(6, 8),
		.function = "fs/btrfs/block-group.c btrfs_make_block_group(), "
			    "btrfs_delete_unused_bgs()",
		.model = "model/kernel/block-group.c",
		.summary = "a new block group goes on the cleaner's list: one nothing was "
			   "allocated in is deleted as one that became empty; before, one never "
			   "used stays until the next mount",
		.evidence = "the 6.18 host deletes the new system chunk of a replace that was "
			    "never used (13 of 14 aged replaces, "
			    "tests/test_plan.py::test_aged_plans_against_the_kernel); the aged "
			    "plans of the 6.1 guests, without it, and of the 6.12 ones, with it, "
			    "agree with the kernel (tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_kernel_traits.c:test_cleans_new_block_groups",
	},
	[BX_KT_CLEANER_KEEPS_NEEDED] = {
		.name = "cleaner_keeps_needed",
		.function = "fs/btrfs/block-group.c btrfs_delete_unused_bgs()",
		.model = "model/kernel/block-group.c",
		.summary = "the cleaner deletes the empty block groups on its list a few "
			   "seconds after a change, but the last one of its profile and one whose "
			   "space info's other block groups could not hold what it has in use "
			   "and reserves (for metadata the global reserve too)",
		.evidence = "every aged change on the host and in the guests is measured at rest "
			    "(guest-age settle) and its allocated bytes match "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel, "
			    "tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_kernel_traits.c:test_cleaner_keeps_needed",
		.unversioned = "both rules hold on 6.1, 6.12 and 6.18; when they came was not "
			       "looked up, and no kernel the register knows lacks them",
	},
	[BX_KT_RO_NEEDS_OVERCOMMIT] = {
		.name = "ro_needs_overcommit",
		.function = "fs/btrfs/block-group.c btrfs_inc_block_group_ro(), "
			    "inc_block_group_ro()",
		.model = "model/kernel/block-group.c",
		.summary = "a metadata or system block group goes read-only only if its free "
			   "bytes can be overcommitted on the unallocated space per copy of the "
			   "profile new chunks of its kind get (a convert's target); refused, the "
			   "kernel forces a metadata chunk and tries again, never a system chunk "
			   "(btrfs_chunk_alloc() refuses), so a replace can stop with ENOSPC on "
			   "its first, small, system block group",
		.evidence = "aged replaces on 6.18 that stop with ENOSPC on a system block group "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel: called "
			    "impossible with the reason); per copy of the convert's target "
			    "(btrfs_get_alloc_profile() gives it): a single system block group "
			    "refused while metadata went to raid1c3 on 6.12, 6.18 and 7.3 "
			    "(tests/unit/test_plan.c:test_convert_metadata_single_system)",
		.test = "tests/unit/test_kernel_traits.c:test_ro_needs_overcommit",
		.unversioned = "the check is older than every kernel the register knows; what it "
			       "overcommits on changed in 6.7 (overcommit_keeps_data_chunk)",
	},
	[BX_KT_DEV_EXTENTS_FREE_AT_COMMIT] = {
		.name = "dev_extents_free_at_commit",
		.function = "fs/btrfs/volumes.c find_free_dev_extent() (the device tree's "
			    "commit root)",
		.model = "model/kernel/block-group.c",
		.summary = "the device extents of a chunk that went are free for new chunks "
			   "only once the transaction commits (the search reads the commit "
			   "root); the devices' used bytes go down at once",
		.evidence = "tests/test_allocator_kernel.py::"
			    "test_replay_frees_a_removed_chunk_the_kernel_reused; relocations "
			    "commit before the first chunk (prepare_to_relocate()), which the "
			    "aged plans follow",
		.test = "tests/unit/test_kernel_traits.c:test_dev_extents_free_at_commit",
		.unversioned = "the commit root search is older than every kernel the register "
			       "knows",
	},
	/* ---- data extents ---- */
	[BX_KT_SIZE_CLASSES] = {
		.name = "size_classes",
		.first = BX_KV(6, 3),
		.function = "fs/btrfs/extent-tree.c find_free_extent(), fs/btrfs/block-group.c "
			    "btrfs_calc_block_group_size_class()",
		.model = "model/kernel/extent-tree.c",
		.summary = "the data allocator keeps size classes (below 128 KiB, below 8 MiB, "
			   "larger): a block group takes the class of its first allocation, or "
			   "of the smallest of five sampled extents when it is read in; an "
			   "extent tries its class, then a group without one, then a new chunk, "
			   "and only then a group of another class",
		.evidence = "a filesystem of many small files takes new chunks for its large "
			    "extents on 6.18 (tests/test_plan.py::"
			    "test_issue_30_remove_on_a_refilled_raid1, the aged plans); the aged "
			    "plans of the 6.1 guests, without it, and of the 6.12 ones, with it, "
			    "agree with the kernel (tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_plan.c:test_size_classes",
	},
	[BX_KT_RAID56_FULL_STRIPE] = {
		.name = "raid56_full_stripe",
		.function = "fs/btrfs/free-space-cache.c btrfs_find_space_for_alloc() (the "
			    "block group's full stripe)",
		.model = "model/kernel/extent-tree.c",
		.summary = "in a raid5 or raid6 block group an extent of a full stripe or more "
			   "starts on a full stripe from the block group's start, so its free "
			   "space holds less than its free bytes say",
		.evidence = "a remove of one of four raid5 devices on 6.1 took a new chunk for "
			    "7 MiB the unaligned free space would have held (tests/vm/"
			    "test_vm_plan.py, aged)",
		.test = "tests/unit/test_plan.c:test_raid5_full_stripe_alignment",
		.unversioned = "seen on 6.1 and 6.18; the alignment is older than every kernel "
			       "the register knows",
	},
	[BX_KT_SINGLE_DATA_ANY_PROFILE] = {
		.name = "single_data_any_profile",
		.function = "fs/btrfs/extent-tree.c find_free_extent(), block_group_bits()",
		.model = "model/kernel/extent-tree.c",
		.summary = "single data has no profile bit, so it goes into data block groups "
			   "of every profile (after the single ones, by profile bit), and its "
			   "reservation counts their free space: a convert to single first fills "
			   "the old profile's block groups still to move",
		.evidence = "raid5 to single on 6.1: a 128 MiB chunk where the plan had made two "
			    "of 64 MiB (tests/vm/test_vm_plan.py, aged)",
		.test = "tests/unit/test_plan.c:test_convert_to_single_fills_the_old_profile",
		.unversioned = "block_group_bits() is older than every kernel the register "
			       "knows",
	},
	/* ---- relocation ---- */
	[BX_KT_RELOCATES_EXTENT_BY_EXTENT] = {
		.name = "relocates_extent_by_extent",
		.function = "fs/btrfs/relocation.c relocate_file_extent_cluster(), "
			    "prealloc_file_extent_cluster(); fs/btrfs/delalloc-space.c "
			    "btrfs_alloc_data_chunk_ondemand()",
		.model = "model/kernel/relocation.c",
		.summary = "a data chunk moves extent by extent, in address order, in clusters "
			   "of up to 128 adjacent extents whose bytes are reserved first "
			   "(allocating data chunks while the data space is short); each extent "
			   "is preallocated whole, in one free range of its size",
		.evidence = "issue 30's refilled raid1: the kernel allocated 495 MiB of data "
			    "chunks that a byte count did not foresee "
			    "(tests/test_plan.py::test_issue_30_remove_on_a_refilled_raid1)",
		.test = "tests/unit/test_plan.c:test_relocation_needs_contiguous_room",
		.unversioned = "the relocation's preallocation is older than every kernel the "
			       "register knows",
	},
	[BX_KT_RO_NEW_PROFILE_CHUNK] = {
		.name = "ro_new_profile_chunk",
		.function = "fs/btrfs/block-group.c btrfs_inc_block_group_ro() (do_chunk_alloc)",
		.model = "model/kernel/relocation.c",
		.summary = "before a block group whose profile is not the one new chunks get "
			   "goes read-only, the kernel allocates one chunk of the new profile "
			   "(never a system chunk); ENOSPC there is fine",
		.evidence = "converts on the host and in the guests "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel, "
			    "tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_kernel_traits.c:test_ro_new_profile_chunk",
		.unversioned = "older than every kernel the register knows",
	},
	[BX_KT_MAY_ALLOC_DATA_CHUNK] = {
		.name = "may_alloc_data_chunk",
		.function = "fs/btrfs/volumes.c btrfs_may_alloc_data_chunk()",
		.model = "model/kernel/relocation.c",
		.summary = "relocating a data chunk while no data is in use allocates an empty "
			   "data chunk first, so the profile is kept",
		.evidence = "the kernel's source: __btrfs_balance() and btrfs_shrink_device() "
			    "call it before each data chunk; pinned by the unit test, not traced "
			    "on its own",
		.test = "tests/unit/test_plan.c:test_empty_data_chunk_kept",
		.unversioned = "btrfs_may_alloc_data_chunk() is older than every kernel the "
			       "register knows",
	},
	[BX_KT_CONVERT_PAIRS_SYSTEM_CHUNK] = {
		.name = "convert_pairs_system_chunk",
		.function = "fs/btrfs/block-group.c reserve_chunk_space(), "
			    "check_system_chunk()",
		.model = "model/kernel/relocation.c",
		.summary = "converting metadata, the first chunk of the new profile of one kind "
			   "(metadata or system) brings one of the other kind with it",
		.evidence = "seen on 6.1: a system chunk with the first metadata chunk, and a "
			    "metadata chunk with the system chunk made when the system block "
			    "group moved first (the plan had made a second system chunk: "
			    "metadata room -9.3 %; tests/vm/test_vm_plan.py, aged)",
		.test = "tests/unit/test_plan.c:test_convert_metadata_system_first",
		.unversioned = "seen on 6.1 only, and the host's converts agree with it; what "
			       "makes the first of the pair was not found, so no version can be "
			       "drawn",
	},
	[BX_KT_CHUNK_TREE_IN_SINGLE_SYSTEM] = {
		.name = "chunk_tree_in_single_system",
		.function = "fs/btrfs/extent-tree.c btrfs_reserve_extent() (the chunk tree's "
			    "copy-on-write), fs/btrfs/block-group.c check_system_chunk()",
		.model = "model/kernel/relocation.c",
		.summary = "converting metadata, the chunk tree's new blocks for the first chunk "
			   "of the new profile go into a single system block group with room, "
			   "so no system chunk of the new profile comes with it; that one comes "
			   "when the single system block group moves, if it may go read-only",
		.evidence = "converting metadata to raid1c3 on the aged raid0/single filesystem "
			    "of seed 2 (stock series): 6.12, 6.18 and 7.3 failed with ENOSPC where "
			    "the plan said possible, 6.1 made it; traced on 6.18 with mkfs -m "
			    "single, dup and raid1 (a system chunk came beside dup and raid1 only); "
			    "checked in guests on stock-6.1, 6.12 and 7.3, v12-6.1 and kakra-6.1, "
			    "aged seeds 2 and 7 (tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_plan.c:test_convert_metadata_single_system",
		.unversioned = "the same on every kernel traced (6.1, 6.12, 6.18, 7.3): whether "
			       "the convert then fails is ro_needs_overcommit's, through "
			       "overcommit_keeps_data_chunk",
	},
	[BX_KT_COMMIT_MAY_ABORT] = {
		.name = "commit_may_abort",
		.function = "fs/btrfs/relocation.c prepare_to_relocate(), "
			    "btrfs_commit_transaction()",
		.model = "model/kernel/relocation.c",
		.summary = "a metadata block group that moves while no other has room for the "
			   "few dozen tree blocks (64) the commit before it writes, with the "
			   "devices' room only free once that commit is done, may make the "
			   "kernel abort the transaction with ENOSPC: the change is called tight",
		.evidence = "seen on 6.18 removing a device whose only metadata block group had "
			    "to move last, and as often not (issue 30: "
			    "tests/test_plan.py::test_issue_30_remove_on_a_refilled_raid1)",
		.test = "tests/unit/test_plan.c:test_metadata_move_aborts",
		.unversioned = "whether the commit needs a new tree block is not in the on-disk "
			       "state; the model warns on every kernel",
	},
	[BX_KT_SHRINK_SECOND_TRY] = {
		.name = "shrink_second_try",
		.function = "fs/btrfs/volumes.c btrfs_shrink_device() (retried)",
		.model = "model/kernel/relocation.c",
		.summary = "a remove or shrink tries the chunks that failed once more after the "
			   "others moved; the space the first try took may still be held then, "
			   "so a change that needs the second try is called tight",
		.evidence = "an aged raid1c3 add-and-remove on 6.18 (aged seed 29): the second "
			    "try failed with ENOSPC, and 146 MiB came back at the next commit "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel)",
		.test = "tests/unit/test_kernel_traits.c:test_shrink_second_try",
		.unversioned = "the retry is older than every kernel the register knows",
	},
	[BX_KT_BALANCE_USAGE_ON_ARRIVAL] = {
		.name = "balance_usage_on_arrival",
		.function = "fs/btrfs/volumes.c __btrfs_balance(), "
			    "chunk_usage_range_filter()",
		.model = "model/kernel/relocation.c",
		.summary = "a usage-filtered balance walks the chunks from the last one down and "
			   "reads each one's usage when it reaches it: the extents it moved "
			   "earlier may have filled a chunk past the filter by then",
		.evidence = "seeded and aged balances on 6.18 "
			    "(tests/test_plan_balance.py::test_aged_balances_against_the_kernel: "
			    "the block groups relocated, from the kernel's log)",
		.test = "tests/unit/test_plan.c:test_balance_usage",
		.unversioned = "__btrfs_balance() reads the block group item as it goes on "
			       "every kernel the register knows",
	},
	[BX_KT_PAUSED_BALANCE_TARGET] = {
		.name = "paused_balance_target",
		.function = "fs/btrfs/volumes.c get_restripe_target()",
		.model = "model/snapshot.c",
		.summary = "while a balance that converts is running, paused or interrupted, "
			   "the kernel gives every new chunk of a kind it converts the target "
			   "profile, whatever the profiles in use",
		.evidence = "raid1 to single/dup paused on 6.18: new data is single "
			    "(tests/test_transition.py::"
			    "test_a_paused_conversion_gives_new_chunks_its_target)",
		.test = "tests/unit/test_usage.c:test_balance_targets",
		.unversioned = "get_restripe_target() is older than every kernel the register "
			       "knows",
	},
	[BX_KT_RESUME_SOFT_FILTER] = {
		.name = "resume_soft_filter",
		.function = "fs/btrfs/volumes.c btrfs_resume_balance_async(), "
			    "update_balance_args()",
		.model = "plan/plan-apply.c",
		.summary = "a resumed conversion turns on the soft filter of every kind it "
			   "converts: the chunks already in the target profile stay",
		.evidence = "a paused raid1 to single/dup resumed on 6.18 "
			    "(tests/test_plan_balance.py::test_resume_a_paused_conversion)",
		.test = "tests/unit/test_plan.c:test_resume",
		.unversioned = "update_balance_args() is older than every kernel the register "
			       "knows",
	},
	/* ---- a replace ---- */
	[BX_KT_REPLACE_COPIES_READ_ONLY] = {
		.name = "replace_copies_read_only",
		.function = "fs/btrfs/scrub.c scrub_enumerate_chunks(), as "
			    "fs/btrfs/dev-replace.c btrfs_dev_replace_start() runs it",
		.model = "model/kernel/dev-replace.c",
		.summary = "a replace copies the device block group by block group, up the "
			   "device, each read-only meanwhile (so each needs the read-only "
			   "switch's room, and another system chunk when the only one with room "
			   "is the one copied); an empty one goes on the cleaner's list after",
		.evidence = "aged replaces on 6.18 and in the 6.1 guests "
			    "(tests/test_plan.py::test_aged_plans_against_the_kernel, "
			    "tests/vm/test_vm_plan.py)",
		.test = "tests/unit/test_plan.c:test_replace",
		.unversioned = "scrub_enumerate_chunks() makes block groups read-only on every "
			       "kernel the register knows",
	},
	[BX_KT_REPLACE_KEEPS_CHUNK_TREE] = {
		.name = "replace_keeps_chunk_tree",
		.first = BX_KV(6, 8),
		.function = "fs/btrfs/scrub.c scrub_enumerate_chunks(), "
			    "fs/btrfs/volumes.c btrfs_chunk_alloc_add_chunk_item()",
		.model = "model/kernel/dev-replace.c",
		.summary = "the system chunk a replace had to make while the only one with room "
			   "was read-only stays unused and the chunk tree stays where it was; "
			   "before, the chunk tree moved into the new one and the old one, "
			   "copied empty, went at rest",
		.evidence = "6.1: the tree moved in every such replace seen (2, tests/vm/"
			    "test_vm_plan.py); 6.18: it stayed in 13 of 14 aged replaces, once "
			    "it moved as on 6.1 (8 MiB off on each device; "
			    "tests/test_plan.py::test_aged_plans_against_the_kernel, "
			    "BTRFSX_AGED_SEED=30 BTRFSX_AGED=60). Which happens is not on the "
			    "disk; no kernel in between was tried, and the line is drawn with "
			    "cleans_new_block_groups",
		.test = "tests/unit/test_kernel_traits.c:test_replace_keeps_chunk_tree",
	},
};

const struct bx_kernel_trait_info *bx_kernel_trait_info(enum bx_kernel_trait trait)
{
	return (unsigned int)trait < BX_KT_COUNT ? &traits[trait] : NULL;
}

bool bx_kernel_version_has(unsigned int version, enum bx_kernel_trait trait)
{
	const struct bx_kernel_trait_info *t = bx_kernel_trait_info(trait);

	if (!t)
		return false;
	/* Unknown: the newest behaviour, as a kernel too new to be in the register. */
	if (!version)
		return !t->last;
	return version >= t->first && (!t->last || version <= t->last);
}

int bx_kernel_parse_version(const char *release, unsigned int *version)
{
	unsigned int major, minor;
	int end = 0;

	if (!release || sscanf(release, "%u.%u%n", &major, &minor, &end) != 2 || !end ||
	    major > 999 || minor > 999 || (release[end] && release[end] != '.' &&
					   release[end] != '-' && release[end] != '+'))
		return -EINVAL;
	*version = BX_KV(major, minor);
	return 0;
}

void bx_kernel_common(struct bx_kernel *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->release, sizeof(k->release), "common");
	k->chosen = true;
	for (int t = 0; t < BX_KT_COUNT; t++)
		if (!traits[t].first)
			k->traits |= 1ULL << t;
}

void bx_kernel_init(struct bx_kernel *k, const char *release, bool chosen)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->release, sizeof(k->release), "%s", release ? release : "");
	k->chosen = chosen;
	if (bx_kernel_parse_version(release, &k->version))
		k->version = 0;
	for (int t = 0; t < BX_KT_COUNT; t++)
		if (bx_kernel_version_has(k->version, (enum bx_kernel_trait)t))
			k->traits |= 1ULL << t;
}

int bx_kernel_choose(const char *version, const char *what, struct bx_kernel *k)
{
	unsigned int v;

	if (bx_kernel_parse_version(version, &v))
		return bx_error(-EINVAL, "%s: '%s' is not a kernel version (MAJOR.MINOR, "
				"e.g. 6.1)", what, version ? version : "");
	if (v < BX_KV_OLDEST || v > BX_KV_NEWEST ||
	    (BX_KV_MAJOR(v) == 6 && v > BX_KV_LAST_OF_6))
		return bx_error(-EINVAL, "%s: %s is not a kernel the model knows (%u.%u "
				"to %u.%u)", what, version, BX_KV_MAJOR(BX_KV_OLDEST),
				BX_KV_MINOR(BX_KV_OLDEST), BX_KV_MAJOR(BX_KV_NEWEST),
				BX_KV_MINOR(BX_KV_NEWEST));
	bx_kernel_init(k, version, true);
	return 0;
}

void bx_kernel_version_text(const struct bx_kernel *k, char *buf, size_t len)
{
	if (k->version)
		snprintf(buf, len, "%u.%u", BX_KV_MAJOR(k->version), BX_KV_MINOR(k->version));
	else
		snprintf(buf, len, "unknown");
}

uint32_t bx_kernel_alloc_flags(const struct bx_kernel *k)
{
	uint32_t flags = 0;

	if (bx_kernel_has(k, BX_KT_SORT_TIES_PRE_6_9))
		flags |= BX_ALLOC_SORT_PRE_6_9;
	if (bx_kernel_has(k, BX_KT_HINT_DATA_ONLY_LAST))
		flags |= BX_ALLOC_DATA_ONLY_LAST;
	return flags;
}
