"""Training workloads: one file per model family, each registered in `registry.WORKLOADS`."""
