"""What Glob and Grep stand on beside their front doors: the ignore files (read safely,
matched, rewritten as rg's rules; the client rule files' reader too), and Glob's patterns and
its summary."""
