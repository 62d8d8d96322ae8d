"""A researcher's own models, benchmarked by ssmbench without being part of it."""
