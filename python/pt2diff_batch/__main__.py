"""python -m pt2diff_batch --pt2diff BINARY SOURCE... --out DIR: what `pt2diff batch` runs."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
