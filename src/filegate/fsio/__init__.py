"""File I/O with hard bounds: line windows of huge files, atomic byte-faithful writes."""
