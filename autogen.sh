#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generates ./configure from configure.ac and the Makefile.in files.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
