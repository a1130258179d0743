#!/bin/sh
# The revision recorded with every run (sim.Build, through -ldflags): the
# full commit hash, with +dirty when any tracked file differs from it or any
# untracked file is there that git does not ignore (a new source file
# changes the build as much as an edit). Prints nothing outside a git tree.
rev=$(git rev-parse HEAD 2>/dev/null) || exit 0
if [ -n "$(git status --porcelain --untracked-files=all 2>/dev/null)" ]; then
	rev="$rev+dirty"
fi
echo "$rev"
