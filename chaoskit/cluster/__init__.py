"""The machinery that builds, starts and installs into a kind cluster: the Docker engine, Go builds, debootstrap,
images, the node image, the kind provider, the build cache, `chaoskit install`, and Prometheus beside it."""
