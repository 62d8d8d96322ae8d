"""The ``monster`` source: MONSTER on the Hugging Face Hub (``source.py``: its `Source`)."""
