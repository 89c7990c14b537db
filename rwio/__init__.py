"""Atomic file output shared by every package: readers never see a half-written file.

Each writer puts the content in a temporary file in the target's folder and then ``os.replace``s
it onto the target (atomic on POSIX), creating the folder if needed.
"""

from rwio._atomic import save_figure_atomic, write_bytes_atomic, write_json_atomic, write_text_atomic

__all__ = ["save_figure_atomic", "write_bytes_atomic", "write_json_atomic", "write_text_atomic"]
