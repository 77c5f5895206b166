"""``group-coordinator analyze``: rebalance analytics over journals, on Spark (PySpark).

PySpark is an optional extra (``pip install .[analytics]``) and is imported only when the
command runs, so the daemon never needs it.
"""
