"""The analyses (layer 4), each reading the engines: ``check`` (your implementation against the exact
trajectory), ``stability`` (is a stuck manifold attracting), ``explore`` (other tasks with an uninformative
token average), ``sweep`` (grids on Dask), ``repro`` (the paper's figures), ``zoo`` (the field's other
models and claims) and ``proofs`` (executable certificates). Importing this package loads none of them.
"""

__all__: list[str] = []
