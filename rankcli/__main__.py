import sys

from rankcli.cli import main

# Guarded so that multiprocessing's "spawn" workers (which re-import the main module as __mp_main__) do not run the CLI.
if __name__ == "__main__":
    sys.exit(main())
