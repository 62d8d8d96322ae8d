"""The ``uea`` source: the UEA multivariate archive (``source.py``: its `Source`)."""
