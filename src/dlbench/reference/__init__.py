"""Published results from others, as data with sources: training throughput (`published.csv`, built by
tools/build_reference.py) and inference / LLM-generation figures (`inference.csv`, see `reference.inference`).

Exercise it with `dlbench reference list` (training) and `dlbench reference list --scenario generate`.
Importing the package reads nothing.

    from dlbench.reference import median_for
    median_for("NVIDIA H100 80GB HBM3", "resnet50", "amp-fp16")   # images/s, median over Lambda's fleet
"""

from dlbench.reference.inference import InferenceReference, comparable_rows, inference_for, load_inference
from dlbench.reference.published import (
    PublishedResult,
    load_published,
    median_for,
    medians_by_gpu,
    published_for,
)

__all__ = ["InferenceReference", "PublishedResult", "comparable_rows", "inference_for", "load_inference",
           "load_published", "median_for", "medians_by_gpu", "published_for"]
