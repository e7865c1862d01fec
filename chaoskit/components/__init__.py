"""What chaoskit knows about each Kubernetes component, one module per component (named after it): where it runs and
answers (process, ports, health and metrics endpoints), where its files are (static-pod manifest, certificates,
configuration), and how to read its state in a node. The faults, diagnosers and measurements of a component take these
facts from its module here, so that each is written once.
table.py lists them all, in report order, with their causal rank, leader lease and ports.

This package sits just above chaoskit.seams and chaoskit.model, below chaoskit.cluster and everything else.
"""
