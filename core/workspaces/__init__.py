"""Workspaces: where each context's agent works, and what it changed there.

`workspace.mode` picks one of three: `shared` (every context in workingDirectory, one turn at
a time across contexts), `worktree` (a git worktree per context on branch `a2a/<context>`),
`copy` (a private copy per context, diffed through a git directory of its own beside it).
`manager.py` makes, diffs, patches and removes them (git as real subprocesses, never a
shell); `patches.py` reads a caller's patch; `hooks.py` is the engine's `TurnHooks` that
puts a turn in its context's workspace and reports its changes as the `changes` artifact.
The records live in the session store (core/sessions), so a workspace survives restarts.
"""
