"""dlbench: deep-learning GPU training benchmark and purchase advisor.

Run `dlbench --help`. Importing this package does nothing else: no torch, no device probing.
"""

__version__ = "0.1.0"
