"""`python -m dlbench ...` is the same as the `dlbench` console script."""

from dlbench.cli.app import main

if __name__ == "__main__":
    main()
