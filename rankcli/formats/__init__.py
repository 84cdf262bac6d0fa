"""File formats: SVMlight/LETOR text, Parquet datasets and runs, TREC runs and qrels. pyarrow lives here."""
