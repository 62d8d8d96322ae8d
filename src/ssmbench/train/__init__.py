"""The training protocol (protocol.py) and run records (records.py)."""
