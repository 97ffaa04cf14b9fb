"""Subcommands of the `epa-chain` console script."""
