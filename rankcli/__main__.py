import sys

from rankcli.cli import main

sys.exit(main())
