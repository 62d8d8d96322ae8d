"""The ``synthetic`` source: the TIDES Fading Flash task, generated (``source.py``: its
`Source`)."""
