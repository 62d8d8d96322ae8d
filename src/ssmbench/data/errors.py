"""The one exception the data layer raises.

Every message names the file or field concerned, says what is wrong and what to do, so
that a failed Snakemake job's log is enough to fix the problem.
"""


class DataError(Exception):
    """A dataset could not be fetched, read, prepared or opened."""
