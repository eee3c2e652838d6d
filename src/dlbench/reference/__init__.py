"""Published results from others, as data with sources (`published.csv`, built by tools/build_reference.py).

Exercise it with `dlbench reference list`. Importing the package reads nothing.

    from dlbench.reference import median_for
    median_for("NVIDIA H100 80GB HBM3", "resnet50", "amp-fp16")   # images/s, median over Lambda's fleet
"""

from dlbench.reference.published import (
    PublishedResult,
    load_published,
    median_for,
    medians_by_gpu,
    published_for,
)

__all__ = ["PublishedResult", "load_published", "median_for", "medians_by_gpu", "published_for"]
