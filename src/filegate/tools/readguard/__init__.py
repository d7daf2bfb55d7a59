"""Read before you change it (SPEC §4, §8.3): what a session read and in what state (ledger),
and which lines changed since that read (changed_lines)."""
