"""rankcli: a command-line learning-to-rank toolkit built around XE-NDCG (Bruch, WWW 2021)."""

__version__ = "0.1.0"
