"""One seed for every random generator a measurement touches (Python, NumPy, torch on every device).

Exercise it with `PYTHONPATH=src python -c "from dlbench.measurement.seeding import seed_everything; seed_everything(0)"`.
"""

from __future__ import annotations

import random


def seed_everything(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and torch (which also seeds every CUDA device)."""
    import torch

    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    torch.manual_seed(seed)
