"""What Glob and Grep share: the ignore files (read safely, matched, rewritten as rg's rules;
the client rule files' reader too), and Glob's summary and paging."""
