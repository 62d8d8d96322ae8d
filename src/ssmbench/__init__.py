"""ssmbench: a reproducible benchmark pipeline for state-space models on time series."""

__version__ = "0.1.0"
