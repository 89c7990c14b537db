"""The `rw` command line: a thin layer over the library packages."""
