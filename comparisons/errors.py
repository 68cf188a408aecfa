"""Errors the `dualgrad` command prints as one line."""


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


class UsageError(CliError):
    """A mistake on the command line (exit status 2, as argparse's)."""
