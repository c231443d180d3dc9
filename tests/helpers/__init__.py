# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests share, kept apart from the tests themselves (pytest puts
tests/ on sys.path, so a test, tests/vm/ or a bench/ script that adds tests/
writes ``from helpers import fsutil``):

fsutil            images, loop devices, mkfs, mounts, running btrfsx; cleanup
oracle            btrfs-progs' dump-tree and dump-super parsed (the oracle)
item_values       every item value of our dump-tree against progs' text
fslayout          where chunks, extents and copies are in image files
misplaced_oracle  which chunks break the hints, read from progs' dumps
crashutil         crash campaigns through the write path's fault injection
plan_check        seeded random plans checked against the kernel
aging             filesystems with a past, seeded (tests/vm/guest-age.c does
                  their file work); the session fixture ``aged``
usage_fill        real-kernel fills replayed through the allocator model
                  (usage_replay.c, the replayer it compiles)
json_schemas      the JSON Schemas and the recorded contract
tables            aligned text tables read back into cells
bashcomp          the completion script queried the way bash does
base_images       the fuzzing base images, for tests that damage items
fake_sysfs_write.c  an LD_PRELOAD that fakes what the kernel does after a
                  sysfs write (read-policy and hint tests)
"""
