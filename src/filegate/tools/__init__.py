"""The tools, MCP-free: validated params + a ToolEnv in, an Outcome out.

Each tool's front door is a module (or, for Grep, a package) at this level, declaring itself
once as its ``SPEC``, with its description in the ``.md`` beside it; ``outcome`` and
``describe`` are the boundary every tool shares. Their helpers live in subpackages named for
what they do: ``edit`` (the write route, the matching ladder, diffs), ``readguard`` (what a
session read), ``documents`` (notebook and PDF views, media fitting), ``search`` (ignore
files, Glob's patterns and summary), ``patch`` (ApplyPatch's set parsed into a plan and run)
and ``review`` (the history read back as changes, for Changes and a rewind)."""
