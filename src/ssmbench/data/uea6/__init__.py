"""The ``uea6`` source: UEA datasets under the Log-NCDE protocol (``source.py``: its
`Source`)."""
