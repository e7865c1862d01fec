"""The cluster seam: the Docker engine, the offline builds, the kind provider and command running."""
