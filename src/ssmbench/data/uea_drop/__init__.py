"""The ``uea_drop`` source: datasets with time steps dropped at random (``source.py``: its
`Source`)."""
